"""The 24-puzzle within one hour: Korf & Felner's 50, easiest first (by their published
node count), on 2 threads until the time is spent; the instance running when time is up
is stopped and counted unsolved. Expanded nodes per instance against Korf & Felner's
count, next to Clausecker & Reinefeld's `small` catalogue (zero-aware and min over the
blank) on the same instances, and geometric means over the solved ones.

Uses the given catalogue (default 24/small), built into artifacts/ when missing.
Rewrites the `24` section of BENCHMARKS.md. Usage: scripts/bench 24   (or this program
with --budget-seconds, --catalogue, --min-over-blank)
"""

from __future__ import annotations

import time

from benchlib import (WARM_24, data_rows, ensure_artifact, geometric_mean, korf24, machine, record_bar, run,
                      table, write_section)
from pdbtool.errors import LimitReached
from pdbtool.loading import load_heuristic
from pdbtool.search.control import SearchControl
from pdbtool.search.solver import Solver

SECTION = "24"


def measure(budget_seconds: float = 3600.0, threads: int = 2, catalogue: str = "24/small",
            min_over_blank: bool = False) -> str:
    k24, _ = korf24()
    # id -> (Korf & Felner's count, C&R small zero-aware, C&R small min over blank)
    published = {row[0]: tuple(row[2:5]) for row in data_rows("korf24_50_clausecker.txt")}
    solver = Solver(load_heuristic(ensure_artifact(catalogue, zero_aware=not min_over_blank)))
    solver.solve(WARM_24, "blank-first", threads=threads)
    rows, ours, zpdb, apdb = [], [], [], []
    thirtieth = None  # minutes when the 30th was solved
    t_start = time.perf_counter()

    def report(done: bool) -> str:
        total = time.perf_counter() - t_start
        state = "" if done else " (the run goes on: this block is rewritten after each instance)"
        return "\n".join([
            f"## 24-puzzle: Korf & Felner's 50 within one hour\n\nMachine: {machine()}\n",
            f"{solver.heuristic.name}, parallel IDA* on {threads} threads, easiest first (by the "
            f"published node count). **{len(ours)} solved optimally in {total / 60:.1f} min** "
            f"(budget {budget_seconds / 60:.0f} min){state}.\n",
            f"Geometric mean of expanded nodes / Korf & Felner's count over the solved: "
            f"**{geometric_mean(ours):.4f}**. Clausecker & Reinefeld's `small` on the same "
            f"instances: zero-aware {geometric_mean(zpdb):.4f}, min over the blank "
            f"{geometric_mean(apdb):.4f} (over all 50: 0.0665 and 0.102). Bar: at most 0.1.\n",
            table(("instance", "optimal", "length", "expanded", "generated", "K&F", "ratio",
                   "C&R zero-aware", "C&R min-over-blank", "seconds"), rows)])

    for k in sorted(published, key=lambda k: published[k][0]):
        left = budget_seconds - (time.perf_counter() - t_start)
        if left <= 0:
            break
        opt, board = k24[k]
        kf, cz, ca = published[k]
        try:
            r = solver.solve(board, "blank-first", threads=threads, control=SearchControl(timeout=left))
        except LimitReached:
            rows.append((f"#{k}", opt, "stopped by the budget", "", "", f"{kf:,}", "", "", "", ""))
            break
        if r.length == opt:
            ours.append(r.nodes_expanded / kf)
            zpdb.append(cz / kf)
            apdb.append(ca / kf)
            if len(ours) == 30:
                thirtieth = (time.perf_counter() - t_start) / 60
        rows.append((f"#{k}", opt, r.length, f"{r.nodes_expanded:,}", f"{r.nodes_generated:,}",
                     f"{kf:,}", f"{r.nodes_expanded / kf:.4f}", f"{cz / kf:.4f}", f"{ca / kf:.4f}",
                     f"{r.seconds:.1f}"))
        print(rows[-1], flush=True)
        write_section(SECTION, report(done=False))  # a long run that is cut keeps its figures
    if (budget_seconds, threads, catalogue, min_over_blank) == (3600.0, 2, "24/small", False):
        solved = [row for row in rows if isinstance(row[2], int)]
        optimal = sum(row[1] == row[2] for row in solved)
        record_bar(SECTION, "Korf & Felner's 50: >= 30 optimal within one hour, 2 threads",
                   f"{len(ours)}" + (f" (the 30th at {thirtieth:.1f} min)" if thirtieth else ""),
                   len(ours) >= 30)
        record_bar(SECTION, "24-puzzle: expanded / Korf & Felner's, geometric mean <= 0.1",
                   f"{geometric_mean(ours):.4f} over the {len(ours)} (C&R zero-aware: "
                   f"{geometric_mean(zpdb):.4f})", geometric_mean(ours) <= 0.1)
        record_bar(SECTION, "Korf & Felner's 50: >= 38 optimal within one hour, 2 threads",
                   f"{len(ours)}", len(ours) >= 38)
        record_bar(SECTION, "24-puzzle: every length = published optimum", f"{optimal}/{len(solved)}",
                   optimal == len(solved))
    return report(done=True)


def options(p) -> None:
    p.add_argument("--budget-seconds", type=float, default=3600.0, help="wall time (default 3600)")
    p.add_argument("--threads", type=int, default=2, help="search threads (default 2)")
    p.add_argument("--catalogue", default="24/small", help="24-puzzle catalogue (default 24/small)")
    p.add_argument("--min-over-blank", action="store_true", help="its min-over-blank tables")


if __name__ == "__main__":
    run(SECTION, measure, __doc__, options)
