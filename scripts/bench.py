"""Benchmarks. Each section measures, prints a table and rewrites its own block of
BENCHMARKS.md (between <!-- bench:NAME --> markers), with the machine it ran on.

    scripts/bench foundation     # issue 2: node rates, table-free heuristics, start-up
    scripts/bench tables         # issue 3: builds, sizes, pack/unpack, verify, mean h
    scripts/bench search         # issue 4: Korf's 100 with 7-8, parallel, 24-puzzle
    scripts/bench 24             # issue 4: how many of Korf & Felner's 50 fall within one hour
    scripts/bench daemon         # issue 5: start-up, overhead, throughput, burst
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "tests" / "data"  # copies of shared/bench: instances and published counts
ART = ROOT / "artifacts"
PY = sys.executable


def machine() -> str:
    cpu = "unknown cpu"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    import numba
    return (f"{cpu}, {os.cpu_count()} cores, {mem:.0f} GiB, Python {platform.python_version()}, "
            f"numba {numba.__version__}, {time.strftime('%Y-%m-%d')}")


def instances(name):
    rows = []
    for line in (BENCH / name).read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            f = line.split()
            rows.append((int(f[0]), int(f[1]), tuple(int(x) for x in f[2:])))
    return rows


def table(headers, rows) -> str:
    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def write_section(name: str, body: str) -> None:
    path = ROOT / "BENCHMARKS.md"
    text = path.read_text() if path.exists() else "# Benchmarks\n"
    start, end = f"<!-- bench:{name} -->", f"<!-- /bench:{name} -->"
    block = f"{start}\n{body.strip()}\n{end}"
    if start in text:
        text = text[:text.index(start)] + block + text[text.index(end) + len(end):]
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    path.write_text(text)
    print(body)


# --- issue 2 ------------------------------------------------------------------------------

def foundation() -> str:
    from pdbtool import puzzle
    from pdbtool.heuristics import TABLE_FREE, table_free
    from pdbtool.search import Solver

    out = [f"## Foundation: table-free heuristics, IDA* kernel\n\nMachine: {machine()}\n"]
    # Node rate with incremental Manhattan: median of 5 runs of one long search, with the
    # issue's configuration (only the move back pruned) and with the default automaton.
    korf = instances("korf100.txt")
    board = korf[0][2]  # #1, 57 moves
    for prune, label in ((False, "parent pruning only"), (True, "move-sequence automaton (default)")):
        md = Solver(table_free("manhattan", 4), prune=prune)
        md.solve((1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 0, 15))  # compile
        runs = [md.solve(board, "blank-first") for _ in range(5)]
        rates = [r.nodes_generated / r.seconds for r in runs]
        r = runs[0]
        out.append(f"**Incremental Manhattan, one core, {label}:** Korf #1 ({r.length} moves, "
                   f"{r.nodes_generated:,} nodes generated, median {statistics.median(x.seconds for x in runs):.2f} s), "
                   f"5 runs: median **{statistics.median(rates) / 1e6:.1f} M nodes/s** "
                   f"(min {min(rates) / 1e6:.1f}, max {max(rates) / 1e6:.1f}). Bar: 60 M.\n")

    # Whole-process time of a trivial solve, second start (kernels cached).
    times = []
    for _ in range(4):
        t0 = time.perf_counter()
        subprocess.run([PY, "-m", "pdbtool.cli", "solve", "--heuristic", "manhattan",
                        "1 2 3 4 5 6 7 8 9 10 11 12 13 14 0 15"], check=True, capture_output=True)
        times.append(time.perf_counter() - t0)
    out.append(f"**Trivial `pdbtool solve` as a whole process** (cache warm): median "
               f"**{statistics.median(times[1:]):.2f} s** of 3 (first start {times[0]:.2f} s). Bar: 1.5 s.\n")

    # 8-puzzle node counts per heuristic on 200 fixed random boards.
    rng = random.Random(2026)
    boards = [puzzle.random_board(3, "blank-first", rng) for _ in range(200)]
    rows = []
    for name in TABLE_FREE:
        s = Solver(table_free(name, 3))
        res = [s.solve(b, "blank-first") for b in boards]
        rows.append((name, f"{statistics.mean(r.initial_h for r in res):.2f}",
                     f"{statistics.mean(r.length for r in res):.2f}",
                     f"{statistics.mean(r.nodes_generated for r in res):,.0f}",
                     f"{statistics.median(r.nodes_generated for r in res):,.0f}"))
    out.append("### 8-puzzle, 200 random boards (seed 2026)\n")
    out.append(table(("heuristic", "mean h0", "mean length", "mean nodes", "median nodes"), rows))

    # Korf's 10 shortest with Manhattan and linear conflict (and walking distance).
    shortest = sorted(korf, key=lambda r: (r[1], r[0]))[:10]
    rows = []
    totals = {}
    published = {int(f[0]): int(f[3]) for f in (l.split() for l in (BENCH / "korf100_md_nodes_1985.txt").read_text().splitlines() if l and not l.startswith("#"))}
    for name in ("manhattan", "linear-conflict", "walking-distance"):
        s = Solver(table_free(name, 4))
        for kid, opt, b in shortest:
            r = s.solve(b, "blank-first")
            ok = "yes" if r.length == opt else f"NO ({r.length})"
            rows.append((f"#{kid}", name, opt, ok, f"{r.nodes_generated:,}",
                         f"{published[kid]:,}" if name == "manhattan" else "",
                         f"{r.seconds:.3f}", f"{r.nodes_generated / max(r.seconds, 1e-9) / 1e6:.1f}"))
            t = totals.setdefault(name, [0, 0.0])
            t[0] += r.nodes_generated
            t[1] += r.seconds
    out.append("\n### 15-puzzle: the 10 shortest of Korf's 100 (blank-first)\n")
    out.append(table(("instance", "heuristic", "optimal", "length ok", "nodes generated",
                      "Korf 1985 MD nodes", "seconds", "M nodes/s"), rows))
    out.append("\n" + table(("heuristic", "total nodes", "total seconds", "M nodes/s"),
                            [(n, f"{t[0]:,}", f"{t[1]:.2f}", f"{t[0] / t[1] / 1e6:.1f}") for n, t in totals.items()]))
    return "\n".join(out)


# --- issue 3 ------------------------------------------------------------------------------

def ensure_artifact(partition: str) -> Path:
    """The artifact in artifacts/, built (timed by the builder itself) if missing."""
    from pdbtool.artifact import artifact_filename

    path = ART / artifact_filename(partition)
    if not path.exists():
        subprocess.run([PY, "-m", "pdbtool.cli", "build", partition, "--out", str(ART)], check=True)
    return path


def tables() -> str:
    import tempfile

    import numba

    from pdbtool import artifact, puzzle
    from pdbtool.build import build_table
    from pdbtool.pdb import load_heuristic
    from pdbtool.ship import pack, unpack

    out = [f"## Pattern databases: build, verify, ship\n\nMachine: {machine()}\n"]
    rows = []
    for part, bar in (("15/7-8", "10 min, 10 GiB"), ("24/6-6-6-6", "20 min")):
        meta = artifact.read_meta(ensure_artifact(part))
        b = meta.build
        rows.append((part, f"{meta.total_entries:,}", f"{meta.file_size / 2**20:,.0f} MiB", b.get("workers"),
                     f"{b['seconds'] / 60:.1f} min", f"{b['peak_memory_bytes'] / 2**30:.2f} GiB", bar))
    out.append("Build figures as recorded by `pdbtool build` in each artifact (wall time, peak RSS):\n")
    out.append(table(("partition", "entries", "file", "workers", "build time", "peak memory", "bar"), rows))

    # Thread scaling on one real table (the 7-tile group of 15/7-8).
    times = {}
    for w in (1, 2):
        numba.set_num_threads(w)
        build_table((1, 2, 3, 5, 6, 7), 4, progress=False)  # warm
        t0 = time.perf_counter()
        build_table((1, 2, 3, 4, 5, 6, 7), 4, progress=False)
        times[w] = time.perf_counter() - t0
    out.append(f"\n**Workers:** the 7-tile table (57.7M entries) in {times[1]:.1f} s with 1 thread, "
               f"{times[2]:.1f} s with 2: **{times[1] / times[2]:.2f}x** (bar 1.6x).\n")

    # Verify, pack, unpack on 15/7-8.
    path = ensure_artifact("15/7-8")
    t0 = time.perf_counter()
    v = subprocess.run([PY, "-m", "pdbtool.cli", "verify", str(path)], capture_output=True, text=True)
    verify_s = time.perf_counter() - t0
    with tempfile.TemporaryDirectory(dir=ART) as tmp:
        packed = Path(tmp) / "15-7-8.pdbpack"
        st = pack(path, packed)
        t0 = time.perf_counter()
        unpack(packed, Path(tmp) / "15-7-8.h5")
        unpack_s = time.perf_counter() - t0
    raw = st["raw_bytes"]
    out.append(table(("15/7-8", "figure"), [
        ("raw table bytes", f"{raw:,} ({raw / 2**20:.0f} MiB)"),
        ("packed bytes (zstd 10)", f"{st['packed_bytes']:,} ({st['packed_bytes'] / 2**20:.0f} MiB, {raw / st['packed_bytes']:.2f}x)"),
        ("pack", f"{st['seconds']:.1f} s, {raw / st['seconds'] / 2**20:.0f} MiB/s"),
        ("unpack + verify checksums", f"{unpack_s:.1f} s, {raw / unpack_s / 2**20:.0f} MiB/s"),
        ("`pdbtool verify` (whole process)", f"{verify_s:.1f} s, {'passed' if v.returncode == 0 else 'FAILED'}"),
    ]))

    # Mean heuristic value over Korf's 100 starts and random states.
    korf = [b for _, _, b in instances("korf100.txt")]
    rng = random.Random(1)
    rand = [puzzle.random_board(4, "blank-first", rng) for _ in range(10000)]
    rows = []
    for reflect in (False, True):
        h = load_heuristic(path, reflect=reflect)
        rows.append(("7-8" + (" + reflection" if reflect else ""),
                     f"{statistics.mean(h.value(b) for b in korf):.2f}",
                     f"{statistics.mean(h.value(b) for b in rand):.2f}",
                     "45.63" if not reflect else "-"))
    out.append("\n### Mean heuristic value\n")
    out.append(table(("heuristic", "Korf's 100 starts", "10,000 random states", "published (Korf & Felner)"), rows))
    return "\n".join(out)


# --- issue 4 ------------------------------------------------------------------------------

def search() -> str:
    from pdbtool.parallel import solve_parallel
    from pdbtool.pdb import load_heuristic
    from pdbtool.search import Solver

    out = [f"## Optimal search with pattern databases\n\nMachine: {machine()}\n"]
    korf = instances("korf100.txt")
    solver = Solver(load_heuristic(ensure_artifact("15/7-8")))
    solver.solve(korf[0][2], "blank-first")  # compile, touch pages
    runs = []
    for _ in range(3):
        res = [solver.solve(b, "blank-first") for _, _, b in korf]
        runs.append(res)
    wrong = [k for (k, opt, _), r in zip(korf, runs[0]) if r.length != opt]
    totals = [sum(r.seconds for r in res) for res in runs]
    mid = runs[totals.index(statistics.median(totals))]
    nodes = [r.nodes_generated for r in mid]
    secs = [r.seconds for r in mid]
    hardest = max(zip(nodes, secs, korf), key=lambda x: x[0])
    plain = Solver(solver.heuristic, prune=False)
    plain_res = [plain.solve(b, "blank-first") for _, _, b in korf]
    plain_nodes = statistics.mean(r.nodes_generated for r in plain_res)
    plain_time = sum(r.seconds for r in plain_res)
    out.append(table(("Korf's 100, 15/7-8 + reflection, 1 thread", "this machine", "bar / anchor"), [
        ("lengths equal to published optimum", f"{100 - len(wrong)}/100" + (f" (wrong: {wrong})" if wrong else ""), "100/100"),
        ("total search time (median of 3 runs)", f"**{statistics.median(totals):.3f} s**", "<= 0.5 s; C++ peer 11.4 s"),
        ("median instance", f"**{statistics.median(secs) * 1e3:.2f} ms**", "<= 3 ms; C++ peer 25 ms"),
        ("mean nodes generated per instance", f"{statistics.mean(nodes):,.0f}", "K&F 7-8 without reflection 36,710"),
        ("median nodes per instance", f"{statistics.median(nodes):,.0f}", ""),
        ("without move-sequence pruning: mean nodes, total time", f"{plain_nodes:,.0f}, {plain_time:.3f} s", "only the move back pruned"),
        ("hardest instance", f"#{hardest[2][0]}: {hardest[0]:,} nodes, {hardest[1] * 1e3:.1f} ms", "C++ peer #82: 3.2 s"),
        ("node rate (all nodes / all time)", f"{sum(nodes) / sum(secs) / 1e6:.1f} M nodes/s", "prototype ~11 M"),
    ]))

    # 24-puzzle: the easiest of Korf & Felner's 50, serial and on 2 threads.
    k24 = {k: (opt, b) for k, opt, b in instances("korf24_50.txt")}
    pub = {int(f[0]): int(f[2]) for f in (l.split() for l in (BENCH / "korf24_50_nodes.txt").read_text().splitlines() if l and not l.startswith("#"))}
    s24 = Solver(load_heuristic(ensure_artifact("24/6-6-6-6")))
    warm = tuple([1, 0] + list(range(2, 25)))  # compile both paths before timing them
    s24.solve(warm, "blank-first")
    solve_parallel(s24, warm, "blank-first", threads=2)
    rows = []
    for k in (40, 25):
        opt, b = k24[k]
        ones = [s24.solve(b, "blank-first") for _ in range(3)]
        twos = [solve_parallel(s24, b, "blank-first", threads=2) for _ in range(3)]
        t1 = statistics.median(r.seconds for r in ones)
        t2 = statistics.median(r.seconds for r in twos)
        r1 = ones[0]
        rows.append((f"#{k}", opt, r1.length, "/".join(str(r.length) for r in twos), f"{r1.nodes_generated:,}",
                     f"{pub[k]:,}", f"{t1:.2f}", f"{t2:.2f}", f"**{t1 / t2:.2f}x**",
                     f"{r1.nodes_generated / t1 / 1e6:.1f}"))
    out.append("\n### 24-puzzle, 6-6-6-6 + reflection: 1 thread against 2 (medians of 3 runs each)\n")
    out.append(table(("instance", "optimal", "length 1T", "length 2T", "nodes 1T", "K&F nodes",
                      "1T s", "2T s", "speed-up", "M nodes/s 1T"), rows))
    out.append("\nRust peer on this machine (one core): #40 4.9 s, #25 18.4 s. Bar: 2 threads >= 1.6x.\n")
    return "\n".join(out)


def hour24(budget_s: float = 3600.0, threads: int = 2) -> str:
    """Korf & Felner's 50, easiest (by their node count) first, until ``budget_s`` of wall
    time is spent; the instance running when time is up is stopped and counted unsolved."""
    import threading

    import numpy as np

    from pdbtool.errors import LimitReached
    from pdbtool.parallel import solve_parallel
    from pdbtool.pdb import load_heuristic
    from pdbtool.search import Solver

    k24 = {k: (opt, b) for k, opt, b in instances("korf24_50.txt")}
    pub = {int(f[0]): int(f[2]) for f in (l.split() for l in (BENCH / "korf24_50_nodes.txt").read_text().splitlines() if l and not l.startswith("#"))}
    solver = Solver(load_heuristic(ensure_artifact("24/6-6-6-6")))
    solve_parallel(solver, tuple([1, 0] + list(range(2, 25))), "blank-first", threads=threads)  # compile
    rows, solved, t_start = [], 0, time.perf_counter()
    for k in sorted(pub, key=pub.get):
        left = budget_s - (time.perf_counter() - t_start)
        if left <= 0:
            break
        opt, b = k24[k]
        stop = np.zeros(1, np.int64)
        timer = threading.Timer(left, lambda: stop.__setitem__(0, 1))
        timer.start()
        try:
            r = solve_parallel(solver, b, "blank-first", threads=threads, stop=stop)
        except LimitReached:
            rows.append((f"#{k}", opt, "stopped at the hour", "", f"{pub[k]:,}", "", ""))
            break
        finally:
            timer.cancel()
        solved += r.length == opt
        rows.append((f"#{k}", opt, r.length, f"{r.nodes_generated:,}", f"{pub[k]:,}",
                     f"{r.nodes_generated / pub[k]:.2f}", f"{r.seconds:.1f}"))
        print(rows[-1], flush=True)
    total = time.perf_counter() - t_start
    out = [f"## 24-puzzle: Korf & Felner's 50 within one hour\n\nMachine: {machine()}\n",
           f"6-6-6-6 + reflection, parallel IDA* on {threads} threads, easiest first (by the published node "
           f"count). **{solved} solved optimally in {total / 60:.1f} min** (budget {budget_s / 60:.0f} min).\n",
           table(("instance", "optimal", "length", "nodes generated", "K&F nodes", "ratio", "seconds"), rows)]
    return "\n".join(out)


# --- issue 5 ------------------------------------------------------------------------------

def free_port() -> int:
    import socket
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def daemon() -> str:
    import concurrent.futures as cf
    import tempfile
    import threading

    import grpc

    from daemon.client import SolverClient
    from daemon.pdbd.v1 import solver_pb2 as pb, solver_pb2_grpc as pb_grpc
    from pdbtool.pdb import load_heuristic
    from pdbtool.search import Solver

    out = [f"## The gRPC daemon\n\nMachine: {machine()}\n"]
    korf = instances("korf100.txt")
    with tempfile.TemporaryDirectory() as tmp:
        # Serve exactly 15/7-8 and 24/6-6-6-6 (links, so nothing is copied).
        for part in ("15/7-8", "24/6-6-6-6"):
            src = ensure_artifact(part)
            for suffix in ("", ".verified"):
                if Path(str(src) + suffix).exists():
                    os.symlink(str(src) + suffix, Path(tmp) / (src.name + suffix))
        port = free_port()
        addr = f"127.0.0.1:{port}"
        t0 = time.perf_counter()
        proc = subprocess.Popen([PY, "-m", "daemon.cli", "serve", "--artifacts", tmp, "--listen", addr,
                                 "--threads", "2", "--max-queue", "64"], stderr=subprocess.DEVNULL)
        try:
            client = SolverClient(addr)
            client.wait_serving(60)
            startup = time.perf_counter() - t0
            rss_start = rss_kib(proc.pid)

            # Korf's 100 over gRPC against the same solves in this process.
            local = Solver(load_heuristic(ensure_artifact("15/7-8")))
            for _, _, b in korf:  # warm both sides: page cache, kernels
                local.solve(b, "blank-first")
                client.solve(b, "blank-first")
            # Whole passes, alternating, so neither side finds the other's table lines
            # still hot in the shared cache; per instance the median of 3 passes.
            wrong = set()
            remote = {k: [] for k, _, _ in korf}
            here = {k: [] for k, _, _ in korf}
            for _ in range(3):
                for k, opt, b in korf:
                    t = time.perf_counter()
                    r = client.solve(b, "blank-first")
                    remote[k].append(time.perf_counter() - t)
                    if r["length"] != opt:
                        wrong.add(k)
                for k, _, b in korf:
                    t = time.perf_counter()
                    local.solve(b, "blank-first")
                    here[k].append(time.perf_counter() - t)
            remote_t = [statistics.median(v) for v in remote.values()]
            local_t = [statistics.median(v) for v in here.values()]
            overhead = [r - l for r, l in zip(remote_t, local_t)]
            wrong = sorted(wrong)

            def run_clients(n: int) -> float:
                clients = [SolverClient(addr) for _ in range(n)]
                jobs = [b for _, _, b in korf] * 2
                t = time.perf_counter()
                with cf.ThreadPoolExecutor(n) as pool:
                    list(pool.map(lambda i: clients[i % n].solve(jobs[i], "blank-first"), range(len(jobs))))
                dt = time.perf_counter() - t
                for c in clients:
                    c.close()
                return len(jobs) / dt

            one = statistics.median(run_clients(1) for _ in range(3))
            two = statistics.median(run_clients(2) for _ in range(3))

            # A burst of 500 concurrent requests on one channel.
            channel = grpc.insecure_channel(addr)
            stub = pb_grpc.SolverStub(channel)
            rss_before = rss_kib(proc.pid)
            outcomes: dict[str, int] = {}
            lock = threading.Lock()
            calls = []
            t = time.perf_counter()
            for i in range(500):
                _, opt, b = korf[i % 100]
                calls.append((opt, stub.Solve.future(pb.SolveRequest(tiles=b, goal="blank-first"), timeout=120)))
            for opt, call in calls:
                try:
                    ok = call.result().length == opt
                    key = "answered, optimal" if ok else "answered, WRONG"
                except grpc.RpcError as e:
                    key = e.code().name
                with lock:
                    outcomes[key] = outcomes.get(key, 0) + 1
            burst_s = time.perf_counter() - t
            rss_after = rss_kib(proc.pid)
            healthy = client.health()
            channel.close()
            client.close()
        finally:
            proc.terminate()
            code = proc.wait(30)
    out.append(table(("figure", "this machine", "bar"), [
        ("start-up to SERVING, 15/7-8 + 24/6-6-6-6 (831 MB mapped)", f"**{startup:.2f} s**", "<= 2 s"),
        ("server RSS after start-up", f"{rss_start / 1024:.0f} MiB", "tables mapped, not read"),
        ("Korf's 100 over gRPC: optimal answers", f"{100 - len(wrong)}/100" + (f" wrong {wrong}" if wrong else ""), "100/100"),
        ("per-query overhead over in-process, median", f"**{statistics.median(overhead) * 1e3:.2f} ms**", "<= 1 ms"),
        ("median query: gRPC / in-process", f"{statistics.median(remote_t) * 1e3:.2f} / {statistics.median(local_t) * 1e3:.2f} ms", ""),
        ("throughput, 1 client (Korf's 100 twice)", f"{one:.0f} queries/s", ""),
        ("throughput, 2 concurrent clients", f"{two:.0f} queries/s: **{two / one:.2f}x**", ">= 1.6x"),
        ("burst of 500 concurrent requests", ", ".join(f"{v} {k}" for k, v in sorted(outcomes.items())) + f" in {burst_s:.1f} s", "answered or RESOURCE_EXHAUSTED"),
        ("server RSS before / after the burst", f"{rss_before / 1024:.0f} / {rss_after / 1024:.0f} MiB", "flat"),
        ("health after the burst; exit code on SIGTERM", f"{healthy}; {code}", "SERVING; 0"),
    ]))
    return "\n".join(out)


SECTIONS = {"foundation": foundation, "tables": tables, "search": search, "24": hour24, "daemon": daemon}


def main():
    p = argparse.ArgumentParser(description="Run benchmarks and record them in BENCHMARKS.md")
    p.add_argument("sections", nargs="*", default=["foundation"], help=f"any of {', '.join(SECTIONS)}")
    args = p.parse_args()
    for name in args.sections:
        if name not in SECTIONS:
            p.error(f"unknown section {name!r}")
        write_section(name, SECTIONS[name]())


if __name__ == "__main__":
    main()
