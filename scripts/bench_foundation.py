"""Foundation: IDA* node rates with the table-free heuristics, start-up of a whole
`pdbtool solve`, node counts on the 8-puzzle and on the 10 shortest of Korf's 100.

Rewrites the `foundation` section of BENCHMARKS.md. Usage: scripts/bench foundation
"""

from __future__ import annotations

import random
import statistics
import subprocess
import time

from benchlib import PY, data_rows, instances, machine, record_bar, run, table
from pdbtool import puzzle
from pdbtool.heuristics.table_free import TABLE_FREE, table_free
from pdbtool.search.solver import Solver

SECTION = "foundation"


def node_rates(korf) -> list[str]:
    """Incremental Manhattan: median of 5 runs of one long search, with only the move back
    pruned and with the default automaton."""
    out, medians = [], []
    board = korf[0][2]  # #1, 57 moves
    for prune, label in ((False, "parent pruning only"), (True, "move-sequence automaton (default)")):
        md = Solver(table_free("manhattan", 4), prune=prune)
        md.solve((1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 0, 15))  # compile
        runs = [md.solve(board, "blank-first") for _ in range(5)]
        rates = [r.nodes_generated / r.seconds for r in runs]
        r = runs[0]
        medians.append(statistics.median(rates))
        out.append(f"**Incremental Manhattan, one core, {label}:** Korf #1 ({r.length} moves, "
                   f"{r.nodes_generated:,} nodes generated, median {statistics.median(x.seconds for x in runs):.2f} s), "
                   f"5 runs: median **{statistics.median(rates) / 1e6:.1f} M nodes/s** "
                   f"(min {min(rates) / 1e6:.1f}, max {max(rates) / 1e6:.1f}). Bar: 60 M.\n")
    record_bar(SECTION, "Manhattan IDA*, one core: >= 60 M nodes/s",
               f"{medians[0] / 1e6:.1f} M (parent pruning), {medians[1] / 1e6:.1f} M (automaton): "
               "medians of 5 on Korf #1", min(medians) >= 60e6)
    return out


def start_up() -> str:
    """Whole-process time of a trivial solve, second start on (kernels cached)."""
    times = []
    for _ in range(4):
        t0 = time.perf_counter()
        subprocess.run([PY, "-m", "pdbtool", "solve", "--heuristic", "manhattan",
                        "1 2 3 4 5 6 7 8 9 10 11 12 13 14 0 15"], check=True, capture_output=True)
        times.append(time.perf_counter() - t0)
    record_bar(SECTION, "trivial `pdbtool solve`, whole process: < 1.5 s",
               f"{statistics.median(times[1:]):.2f} s (median of 3; first start {times[0]:.2f} s)",
               statistics.median(times[1:]) < 1.5)
    return (f"**Trivial `pdbtool solve` as a whole process** (cache warm): median "
            f"**{statistics.median(times[1:]):.2f} s** of 3 (first start {times[0]:.2f} s). Bar: 1.5 s.\n")


def eight_puzzle() -> list[str]:
    """Node counts per heuristic on 200 fixed random boards."""
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
    return ["### 8-puzzle, 200 random boards (seed 2026)\n",
            table(("heuristic", "mean h0", "mean length", "mean nodes", "median nodes"), rows)]


def korf_shortest_ten(korf) -> list[str]:
    """Korf's 10 shortest with Manhattan, linear conflict and walking distance."""
    shortest = sorted(korf, key=lambda r: (r[1], r[0]))[:10]
    published = {row[0]: row[3] for row in data_rows("korf100_md_nodes_1985.txt")}
    rows = []
    totals = {}
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
    ok = sum(row[3] == "yes" for row in rows)
    record_bar(SECTION, "lengths = published optima (10 shortest of Korf's 100, 3 heuristics)",
               f"{ok}/{len(rows)}", ok == len(rows))
    return ["\n### 15-puzzle: the 10 shortest of Korf's 100 (blank-first)\n",
            table(("instance", "heuristic", "optimal", "length ok", "nodes generated",
                   "Korf 1985 MD nodes", "seconds", "M nodes/s"), rows),
            "\n" + table(("heuristic", "total nodes", "total seconds", "M nodes/s"),
                         [(n, f"{t[0]:,}", f"{t[1]:.2f}", f"{t[0] / t[1] / 1e6:.1f}")
                          for n, t in totals.items()])]


def measure() -> str:
    korf = instances("korf100.txt")
    out = [f"## Foundation: table-free heuristics, IDA* kernel\n\nMachine: {machine()}\n"]
    out += node_rates(korf)
    out.append(start_up())
    out += eight_puzzle()
    out += korf_shortest_ten(korf)
    return "\n".join(out)


if __name__ == "__main__":
    run(SECTION, measure, __doc__)
