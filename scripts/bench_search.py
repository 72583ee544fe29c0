"""Optimal search with pattern databases: Korf's 100 with 15/7-8 + reflection on one
thread (with and without move-sequence pruning), and the two easiest of Korf & Felner's
24-puzzle instances with 6-6-6-6 on 1 and 2 threads.

Builds 15/7-8 and 24/6-6-6-6 into artifacts/ when missing. Rewrites the `search`
section of BENCHMARKS.md. Usage: scripts/bench search
"""

from __future__ import annotations

import statistics

from benchlib import WARM_24, ensure_artifact, instances, korf24, machine, run, table
from pdbtool.pdb_heuristic import load_heuristic
from pdbtool.search import Solver

SECTION = "search"


def korf100() -> str:
    korf = instances("korf100.txt")
    solver = Solver(load_heuristic(ensure_artifact("15/7-8")))
    solver.solve(korf[0][2], "blank-first")  # compile, touch pages
    runs = [[solver.solve(b, "blank-first") for _, _, b in korf] for _ in range(3)]
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
    return table(("Korf's 100, 15/7-8 + reflection, 1 thread", "this machine", "bar / anchor"), [
        ("lengths equal to published optimum", f"{100 - len(wrong)}/100" + (f" (wrong: {wrong})" if wrong else ""), "100/100"),
        ("total search time (median of 3 runs)", f"**{statistics.median(totals):.3f} s**", "<= 0.5 s; C++ peer 11.4 s"),
        ("median instance", f"**{statistics.median(secs) * 1e3:.2f} ms**", "<= 3 ms; C++ peer 25 ms"),
        ("mean nodes generated per instance", f"{statistics.mean(nodes):,.0f}", "K&F 7-8 without reflection 36,710"),
        ("median nodes per instance", f"{statistics.median(nodes):,.0f}", ""),
        ("without move-sequence pruning: mean nodes, total time", f"{plain_nodes:,.0f}, {plain_time:.3f} s", "only the move back pruned"),
        ("hardest instance", f"#{hardest[2][0]}: {hardest[0]:,} nodes, {hardest[1] * 1e3:.1f} ms", "C++ peer #82: 3.2 s"),
        ("node rate (all nodes / all time)", f"{sum(nodes) / sum(secs) / 1e6:.1f} M nodes/s", "prototype ~11 M"),
    ])


def parallel_24() -> list[str]:
    """The easiest of Korf & Felner's 50, serial and on 2 threads (medians of 3 runs)."""
    k24, published = korf24()
    s24 = Solver(load_heuristic(ensure_artifact("24/6-6-6-6")))
    s24.solve(WARM_24, "blank-first")  # compile both paths before timing them
    s24.solve(WARM_24, "blank-first", threads=2)
    rows = []
    for k in (40, 25):
        opt, b = k24[k]
        ones = [s24.solve(b, "blank-first") for _ in range(3)]
        twos = [s24.solve(b, "blank-first", threads=2) for _ in range(3)]
        t1 = statistics.median(r.seconds for r in ones)
        t2 = statistics.median(r.seconds for r in twos)
        r1 = ones[0]
        rows.append((f"#{k}", opt, r1.length, "/".join(str(r.length) for r in twos), f"{r1.nodes_generated:,}",
                     f"{published[k]:,}", f"{t1:.2f}", f"{t2:.2f}", f"**{t1 / t2:.2f}x**",
                     f"{r1.nodes_generated / t1 / 1e6:.1f}"))
    return ["\n### 24-puzzle, 6-6-6-6 + reflection: 1 thread against 2 (medians of 3 runs each)\n",
            table(("instance", "optimal", "length 1T", "length 2T", "nodes 1T", "K&F nodes",
                   "1T s", "2T s", "speed-up", "M nodes/s 1T"), rows),
            "\nRust peer on this machine (one core): #40 4.9 s, #25 18.4 s. Bar: 2 threads >= 1.6x.\n"]


def measure() -> str:
    out = [f"## Optimal search with pattern databases\n\nMachine: {machine()}\n", korf100()]
    out += parallel_24()
    return "\n".join(out)


if __name__ == "__main__":
    run(SECTION, measure, __doc__)
