"""Benchmarks. Each section measures, prints a table and rewrites its own block of
BENCHMARKS.md (between <!-- bench:NAME --> markers), with the machine it ran on.

    scripts/bench foundation     # issue 2: node rates, table-free heuristics, start-up
    scripts/bench tables         # issue 3: builds, sizes, pack/unpack, verify, mean h
    scripts/bench search         # issue 4: Korf's 100 with 7-8, parallel, 24-puzzle
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
BENCH = ROOT.parent / "shared" / "bench"
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
    # Node rate with incremental Manhattan: median of 5 runs of one long search.
    korf = instances("korf100.txt")
    board = korf[0][2]  # #1, 57 moves, ~2e8 nodes with Manhattan
    md = Solver(table_free("manhattan", 4))
    md.solve((1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 0, 15))  # compile
    rates = []
    for _ in range(5):
        r = md.solve(board, "blank-first")
        rates.append(r.nodes_generated / r.seconds)
    out.append(f"**Incremental Manhattan, one core:** Korf #1 ({r.length} moves, "
               f"{r.nodes_generated:,} nodes generated), 5 runs: median "
               f"**{statistics.median(rates) / 1e6:.1f} M nodes/s** "
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


SECTIONS = {"foundation": foundation}


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
