"""The gRPC daemon: start-up to SERVING with 15/7-8 and 24/6-6-6-6, per-query overhead
over an in-process solve on Korf's 100, throughput with 1 and 2 clients, a burst of 500
concurrent requests, and memory.

Builds the artifacts into artifacts/ when missing; runs `pdbd serve` on a free loopback
port. Rewrites the `daemon` section of BENCHMARKS.md. Usage: scripts/bench daemon
"""

from __future__ import annotations

import concurrent.futures as cf
import os
import statistics
import subprocess
import tempfile
import time
from collections import Counter
from pathlib import Path

import grpc

from benchlib import PY, ensure_artifact, free_port, instances, machine, rss_kib, run, table
from pdbd.client import SolverClient
from pdbd.v1 import solver_pb2 as pb, solver_pb2_grpc as pb_grpc
from pdbtool.pdb_heuristic import load_heuristic
from pdbtool.search import Solver

SECTION = "daemon"
SERVED = ("15/7-8", "24/6-6-6-6")


def link_artifacts(directory: str) -> None:
    """Serve exactly the SERVED artifacts (links, so nothing is copied), stamps included."""
    for part in SERVED:
        src = ensure_artifact(part)
        for suffix in ("", ".verified"):
            if Path(str(src) + suffix).exists():
                os.symlink(str(src) + suffix, Path(directory) / (src.name + suffix))


def overhead(client: SolverClient, korf) -> tuple[list[int], list[float], list[float]]:
    """Korf's 100 over gRPC against the same solves in this process: (wrong ids, median
    remote times, median local times) per instance."""
    local = Solver(load_heuristic(ensure_artifact("15/7-8")))
    for _, _, b in korf:  # warm both sides: page cache, kernels
        local.solve(b, "blank-first")
        client.solve(b, "blank-first")
    # Whole passes, alternating, so neither side finds the other's table lines still hot
    # in the shared cache; per instance the median of 3 passes.
    wrong = set()
    remote = {k: [] for k, _, _ in korf}
    here = {k: [] for k, _, _ in korf}
    for _ in range(3):
        for k, opt, b in korf:
            t = time.perf_counter()
            r = client.solve(b, "blank-first")
            remote[k].append(time.perf_counter() - t)
            if r.length != opt:
                wrong.add(k)
        for k, _, b in korf:
            t = time.perf_counter()
            local.solve(b, "blank-first")
            here[k].append(time.perf_counter() - t)
    return (sorted(wrong), [statistics.median(v) for v in remote.values()],
            [statistics.median(v) for v in here.values()])


def throughput(addr: str, korf, n: int) -> float:
    """Queries per second of n concurrent clients over Korf's 100 twice."""
    clients = [SolverClient(addr) for _ in range(n)]
    jobs = [b for _, _, b in korf] * 2
    t = time.perf_counter()
    with cf.ThreadPoolExecutor(n) as pool:
        list(pool.map(lambda i: clients[i % n].solve(jobs[i], "blank-first"), range(len(jobs))))
    dt = time.perf_counter() - t
    for c in clients:
        c.close()
    return len(jobs) / dt


def burst(addr: str, korf, count: int = 500) -> tuple[Counter, float]:
    """``count`` concurrent requests on one channel: how each ended, and the seconds taken."""
    outcomes = Counter()
    with grpc.insecure_channel(addr) as channel:
        stub = pb_grpc.SolverStub(channel)
        t = time.perf_counter()
        calls = [(korf[i % 100][1], stub.Solve.future(
            pb.SolveRequest(tiles=korf[i % 100][2], goal="blank-first"), timeout=120))
            for i in range(count)]
        for opt, call in calls:
            try:
                ok = call.result().length == opt
                outcomes["answered, optimal" if ok else "answered, WRONG"] += 1
            except grpc.RpcError as e:
                outcomes[e.code().name] += 1
        return outcomes, time.perf_counter() - t


def measure() -> str:
    korf = instances("korf100.txt")
    with tempfile.TemporaryDirectory() as tmp:
        link_artifacts(tmp)
        addr = f"127.0.0.1:{free_port()}"
        t0 = time.perf_counter()
        proc = subprocess.Popen([PY, "-m", "pdbd.cli", "serve", "--artifacts", tmp, "--listen", addr,
                                 "--threads", "2", "--max-queue", "64", "--max-per-client", "0",
                                 "--no-prefault"], stderr=subprocess.DEVNULL)
        try:
            with SolverClient(addr) as client:
                client.wait_serving(60)
                startup = time.perf_counter() - t0
                rss_start = rss_kib(proc.pid)
                wrong, remote_t, local_t = overhead(client, korf)
                one = statistics.median(throughput(addr, korf, 1) for _ in range(3))
                two = statistics.median(throughput(addr, korf, 2) for _ in range(3))
                rss_before = rss_kib(proc.pid)
                outcomes, burst_s = burst(addr, korf)
                rss_after = rss_kib(proc.pid)
                healthy = client.health()
        finally:
            proc.terminate()
            code = proc.wait(30)
    soak = soak_test()
    extra = [r - l for r, l in zip(remote_t, local_t)]
    return "\n".join([f"## The gRPC daemon\n\nMachine: {machine()}\n", table(("figure", "this machine", "bar"), [
        ("start-up to SERVING, 15/7-8 + 24/6-6-6-6 (831 MB mapped)", f"**{startup:.2f} s**", "<= 2 s"),
        ("server RSS after start-up", f"{rss_start / 1024:.0f} MiB", "tables mapped, not read"),
        ("Korf's 100 over gRPC: optimal answers", f"{100 - len(wrong)}/100" + (f" wrong {wrong}" if wrong else ""), "100/100"),
        ("per-query overhead over in-process, median", f"**{statistics.median(extra) * 1e3:.2f} ms**", "<= 1 ms"),
        ("median query: gRPC / in-process", f"{statistics.median(remote_t) * 1e3:.2f} / {statistics.median(local_t) * 1e3:.2f} ms", ""),
        ("throughput, 1 client (Korf's 100 twice)", f"{one:.0f} queries/s", ""),
        ("throughput, 2 concurrent clients", f"{two:.0f} queries/s: **{two / one:.2f}x**", ">= 1.6x"),
        ("burst of 500 concurrent requests", ", ".join(f"{v} {k}" for k, v in sorted(outcomes.items())) + f" in {burst_s:.1f} s", "answered or RESOURCE_EXHAUSTED"),
        ("server RSS before / after the burst", f"{rss_before / 1024:.0f} / {rss_after / 1024:.0f} MiB", "flat"),
        ("health after the burst; exit code on SIGTERM", f"{healthy}; {code}", "SERVING; 0"),
        ("soak: 60 s of mixed valid, invalid, undecodable, abandoned, cancelled and long "
         "calls (tests/test_soak.py)", soak, "passed"),
    ])])


def soak_test() -> str:
    """The slow soak test (marked slow: not in the default test run)."""
    p = subprocess.run([PY, "-m", "pytest", "-q", "-m", "slow", "tests/test_soak.py"],
                       capture_output=True, text=True)
    return "passed" if p.returncode == 0 else "FAILED: " + p.stdout.strip().splitlines()[-1]


if __name__ == "__main__":
    run(SECTION, measure, __doc__)
