"""The 24-puzzle within one hour: Korf & Felner's 50, easiest first (by their published
node count), solved with 6-6-6-6 + reflection on 2 threads until the time is spent; the
instance running when time is up is stopped and counted unsolved.

Builds 24/6-6-6-6 into artifacts/ when missing. Rewrites the `24` section of
BENCHMARKS.md. Usage: scripts/bench 24   (or this program with --budget-seconds)
"""

from __future__ import annotations

import time

from benchlib import WARM_24, ensure_artifact, korf24, machine, run, table
from pdbtool.errors import LimitReached
from pdbtool.pdb_heuristic import load_heuristic
from pdbtool.search import SearchControl, Solver

SECTION = "24"


def measure(budget_seconds: float = 3600.0, threads: int = 2) -> str:
    k24, published = korf24()
    solver = Solver(load_heuristic(ensure_artifact("24/6-6-6-6")))
    solver.solve(WARM_24, "blank-first", threads=threads)
    rows, solved, t_start = [], 0, time.perf_counter()
    for k in sorted(published, key=published.get):
        left = budget_seconds - (time.perf_counter() - t_start)
        if left <= 0:
            break
        opt, b = k24[k]
        try:
            r = solver.solve(b, "blank-first", threads=threads, control=SearchControl(timeout=left))
        except LimitReached:
            rows.append((f"#{k}", opt, "stopped at the hour", "", f"{published[k]:,}", "", ""))
            break
        solved += r.length == opt
        rows.append((f"#{k}", opt, r.length, f"{r.nodes_generated:,}", f"{published[k]:,}",
                     f"{r.nodes_generated / published[k]:.2f}", f"{r.seconds:.1f}"))
        print(rows[-1], flush=True)
    total = time.perf_counter() - t_start
    out = [f"## 24-puzzle: Korf & Felner's 50 within one hour\n\nMachine: {machine()}\n",
           f"6-6-6-6 + reflection, parallel IDA* on {threads} threads, easiest first (by the published node "
           f"count). **{solved} solved optimally in {total / 60:.1f} min** (budget {budget_seconds / 60:.0f} min).\n",
           table(("instance", "optimal", "length", "nodes generated", "K&F nodes", "ratio", "seconds"), rows)]
    return "\n".join(out)


def options(p) -> None:
    p.add_argument("--budget-seconds", type=float, default=3600.0, help="wall time (default 3600)")
    p.add_argument("--threads", type=int, default=2, help="search threads (default 2)")


if __name__ == "__main__":
    run(SECTION, measure, __doc__, options)
