"""Heuristic strength: zero-aware 4-bit tables and catalogues against the published counts.

    scripts/bench strength15             # Korf's 100: 7-8 min-over-blank vs zero-aware; 1 vs 2 threads
    scripts/bench strength24 [MINUTES]   # Korf & Felner's 50 with the strongest 24-puzzle
                                         # artifact, 2 threads, easiest first, within MINUTES (60)

Both need the artifacts built in artifacts/ (`pdbtool build 15/7-8`, `pdbtool build 15/7-8
--min-over-blank`, `pdbtool build 24/small`); they say so if one is missing.
"""

from __future__ import annotations

import math
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import ART, BENCH, instances, machine, table, write_section  # noqa: E402


def artifact_path(name: str) -> Path:
    path = ART / name
    if not path.exists():
        sys.exit(f"bench: {path} is missing: build it first (see scripts/bench_strength.py)")
    return path


def korf100_run(solver, threads=1):
    """(lengths ok, per-instance seconds, generated, expanded) over Korf's 100."""
    ok, secs, gen, exp = 0, [], [], []
    for _, opt, board in instances("korf100.txt"):
        t0 = time.perf_counter()
        r = solver.solve(board, "blank-first", threads=threads)
        secs.append(time.perf_counter() - t0)
        ok += r.length == opt
        gen.append(r.nodes_generated)
        exp.append(r.nodes_expanded)
    return ok, secs, gen, exp


def strength15() -> str:
    from pdbtool.pdb_heuristic import load_heuristic
    from pdbtool.search import Solver

    solvers = {"7-8 min over blank + reflection": Solver(load_heuristic(artifact_path("15-7-8-min.h5"))),
               "7-8 zero-aware + reflection": Solver(load_heuristic(artifact_path("15-7-8.h5")))}
    rows = []
    for name, solver in solvers.items():
        for threads in (1, 2):
            korf100_run(solver, threads)  # warm: compile, page in the tables
            runs = [korf100_run(solver, threads) for _ in range(3)]
            ok, _, gen, exp = runs[0]
            total = statistics.median(sum(r[1]) for r in runs)
            median = statistics.median(statistics.median(r[1]) for r in runs)
            rows.append((name, threads, f"{ok}/100", f"{statistics.mean(gen):,.0f}",
                         f"{statistics.mean(exp):,.0f}", f"{total:.3f}", f"{median * 1e3:.2f}",
                         f"{sum(gen) / total / 1e6:.1f}"))
            print(rows[-1], flush=True)
    hard = sorted(instances("korf100.txt"), key=lambda x: -x[1])[:10]
    solver = solvers["7-8 zero-aware + reflection"]
    trows = []
    for k, opt, board in hard:
        t = {}
        for threads in (1, 2):
            t[threads] = statistics.median(_timed(solver, board, threads) for _ in range(3))
        trows.append((f"#{k}", opt, f"{t[1] * 1e3:.1f}", f"{t[2] * 1e3:.1f}", f"{t[1] / t[2]:.2f}x"))
    out = [f"## 15-puzzle: zero-aware tables\n\nMachine: {machine()}\n",
           "Korf's 100, blank-first, one run of each configuration here (medians of 3 runs after a warm one):\n",
           table(("tables", "threads", "optimal", "mean generated", "mean expanded", "total s",
                  "median ms", "M nodes/s"), rows),
           "\nPublished (Korf & Felner, 1,000 random instances, generated): 7-8 + reflection 36,710; "
           "with two more dual lookups 18,601.\n",
           "\nThe ten longest of Korf's 100, zero-aware 7-8, 1 thread against 2 (medians of 3):\n",
           table(("instance", "optimal", "1 thread ms", "2 threads ms", "speed-up"), trows)]
    return "\n".join(out)


def _timed(solver, board, threads):
    t0 = time.perf_counter()
    solver.solve(board, "blank-first", threads=threads)
    return time.perf_counter() - t0


def strength24(minutes: float = 60.0, threads: int = 2) -> str:
    from pdbtool.errors import LimitReached
    from pdbtool.search import SearchControl
    from pdbtool.selection import load_directory

    h = load_directory(ART).heuristics.get(5)
    if h is None:
        sys.exit("bench: no 24-puzzle artifact in artifacts/: pdbtool build 24/small")
    from pdbtool.search import Solver

    solver = Solver(h)
    k24 = {k: (opt, b) for k, opt, b in instances("korf24_50.txt")}
    pub = {}
    for line in (BENCH / "korf24_50_clausecker.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            f = [int(x) for x in line.split()]
            pub[f[0]] = f[2:5]  # Korf & Felner, small zpdb, small apdb
    solver.solve(tuple([1, 0] + list(range(2, 25))), "blank-first", threads=threads)  # compile
    rows, ratios, zr, ar, t_start = [], [], [], [], time.perf_counter()
    for k in sorted(pub, key=lambda k: pub[k][0]):
        left = minutes * 60 - (time.perf_counter() - t_start)
        if left <= 0:
            break
        opt, board = k24[k]
        kf, zpdb, apdb = pub[k]
        try:
            r = solver.solve(board, "blank-first", threads=threads,
                             control=SearchControl(timeout=left))
        except LimitReached:
            rows.append((f"#{k}", opt, f"stopped at {minutes:.0f} min", "", "", f"{kf:,}", "", "", "", ""))
            break
        ok = r.length == opt
        if ok:
            ratios.append(r.nodes_expanded / kf)
            zr.append(zpdb / kf)
            ar.append(apdb / kf)
        rows.append((f"#{k}", opt, r.length, f"{r.nodes_expanded:,}", f"{r.nodes_generated:,}",
                     f"{kf:,}", f"{r.nodes_expanded / kf:.4f}", f"{zpdb / kf:.4f}", f"{apdb / kf:.4f}",
                     f"{r.seconds:.1f}"))
        print(rows[-1], flush=True)
    total = time.perf_counter() - t_start

    def geo(xs):
        return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")

    out = [f"## 24-puzzle: Korf & Felner's 50 with {h.name}\n\nMachine: {machine()}\n",
           f"Parallel IDA* on {threads} threads, easiest first by Korf & Felner's count, within "
           f"{minutes:.0f} min: **{len(ratios)} solved optimally in {total / 60:.1f} min**. Geometric "
           f"mean of expanded nodes / Korf & Felner's count over the solved: **{geo(ratios):.4f}**; "
           f"Clausecker & Reinefeld's `small` on the same instances: zero-aware {geo(zr):.4f}, "
           f"min over blank {geo(ar):.4f} (over all 50: 0.0665 and 0.102).\n",
           table(("instance", "optimal", "length", "expanded", "generated", "K&F", "ratio",
                  "C&R zpdb ratio", "C&R apdb ratio", "seconds"), rows)]
    return "\n".join(out)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in ("strength15", "strength24"):
        sys.exit(__doc__)
    if argv[0] == "strength15":
        write_section("strength15", strength15())
    else:
        write_section("strength24", strength24(float(argv[1]) if len(argv) > 1 else 60.0))


if __name__ == "__main__":
    main()
