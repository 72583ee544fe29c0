"""Fewer nodes, lever by lever, each beside the code before in the same minutes.

Korf's 100 with 15/7-8 + reflection on one thread: the search as it is now against every
bound in one kernel call in depth-first order (the code before closest first from the
start: ``serial_below`` = threads.NEVER), per instance in turn (the order alternating), 5
rounds after a warm one; the search time each result reports (``seconds``), summed over
the 100, median of the rounds; nodes generated per instance. Then the search on 2 threads.
The 17 positions that need 80 moves (tests/data/hardest80.txt) on 2 threads: each length
checked and each answer replayed, seconds summed over the 17, median of 3 rounds. The
10 easiest of Korf & Felner's 50 (by their published count) with 24/small on 2 threads:
expanded nodes against Korf & Felner's, the geometric mean against the figure before the
levers (EASY10_BEFORE, the one-hour run of 085508a); the bar is half of it.

Builds 15/7-8 and 24/small into artifacts/ when missing. Rewrites the `levers` section of
BENCHMARKS.md. Usage: scripts/bench levers
"""

from __future__ import annotations

import statistics

from benchlib import (WARM_24, data_rows, ensure_artifact, geometric_mean, instances, korf24,
                      machine, record_bar, run, table)
from pdbtool import puzzle
from pdbtool.loading import load_heuristic
from pdbtool.search.control import SearchControl
from pdbtool.search.solver import Solver
from pdbtool.search.threads import NEVER, search_parallel

SECTION = "levers"
ROUNDS = 5
NODES_BAR, SECONDS_BAR = 12_000, 0.12
HARDEST_BAR = 2.0  # seconds for the 17 positions at 80 moves on 2 threads
EASY10_BEFORE = 0.0291  # expanded / Korf & Felner's, geometric mean over their 10 easiest
# (by their count), 24/small on 2 threads, before the levers (085508a's one-hour run)


def hardest80(solver) -> list[str]:
    """The 17 positions at 80 moves on 2 threads: a warm round, then 3 timed ones."""
    boards = instances("hardest80.txt")
    goal = puzzle.goal_board(4, "blank-last")
    rounds = []
    for rnd in range(4):
        results = [solver.solve(b, "blank-last", threads=2) for _, _, b in boards]
        for (k, opt, b), r in zip(boards, results):
            assert r.length == opt and puzzle.apply_tile_moves(b, r.moves) == goal, k
        if rnd:
            rounds.append(results)
    totals = [sum(r.seconds for r in res) for res in rounds]
    median = statistics.median(totals)
    res = rounds[totals.index(median)]
    rows = [(f"#{k}", r.length, f"{r.nodes_generated:,}", f"{r.seconds:.3f}")
            for (k, _, _), r in zip(boards, res)]
    nodes = sum(r.nodes_generated for r in res)
    rows.append(("all 17", "", f"{nodes:,}", f"**{median:.3f}**"))
    record_bar(SECTION, f"the 17 positions at 80 moves, 2 threads, 15/7-8: <= {HARDEST_BAR:g} s",
               f"{median:.2f} s ({nodes / 17 / 1e6:.1f} M nodes generated a position; "
               f"rounds {' / '.join(f'{t:.2f}' for t in totals)})", median <= HARDEST_BAR)
    return ["", "The 17 positions that need 80 moves (Brüngger et al. 1999; tests/data/hardest80.txt), "
            "blank-last goal, 15/7-8 + reflection on 2 threads: every length 80 and every answer "
            "replayed; the median of 3 rounds by total (its per-position figures), after a warm "
            f"round; rounds: {' / '.join(f'{t:.3f}' for t in totals)} s.", "",
            table(("position", "length", "generated", "seconds"), rows)]


def easiest24() -> list[str]:
    """Korf & Felner's 10 easiest 24-puzzles with 24/small on 2 threads: expanded nodes
    against theirs (the bar: the geometric mean at most half of EASY10_BEFORE)."""
    boards, _ = korf24()
    published = {row[0]: row[2] for row in data_rows("korf24_50_clausecker.txt")}
    solver = Solver(load_heuristic(ensure_artifact("24/small")))
    solver.solve(WARM_24, "blank-first", threads=2)
    rows, ratios = [], []
    for k in sorted(published, key=published.get)[:10]:
        opt, board = boards[k]
        r = solver.solve(board, "blank-first", threads=2)
        assert r.length == opt, k
        ratios.append(r.nodes_expanded / published[k])
        rows.append((f"#{k}", r.length, f"{r.nodes_expanded:,}", f"{published[k]:,}",
                     f"{ratios[-1]:.4f}", f"{r.seconds:.2f}"))
    mean = geometric_mean(ratios)
    record_bar(SECTION, "24-puzzle, Korf & Felner's 10 easiest: expanded / theirs, geometric mean "
               f"<= half of {EASY10_BEFORE} (before the levers)",
               f"{mean:.4f} ({mean / EASY10_BEFORE:.2f}x; 24/small, 2 threads)",
               mean <= EASY10_BEFORE / 2)
    return ["", "Korf & Felner's 10 easiest 24-puzzles (by their published count), 24/small + "
            "reflection on 2 threads, each length the published one: geometric mean of expanded / "
            f"Korf & Felner's **{mean:.4f}**, {mean / EASY10_BEFORE:.2f}x the {EASY10_BEFORE} of "
            "the one-hour run before the levers (085508a); the bar is half of it.", "",
            table(("instance", "length", "expanded", "K&F expanded", "ratio", "seconds"), rows)]


def measure() -> str:
    korf = instances("korf100.txt")
    solver = Solver(load_heuristic(ensure_artifact("15/7-8")))
    prepared = [solver.prepare(b, "blank-first") for _, _, b in korf]
    rows, now_one = [], None
    for threads in (1, 2):
        ways = {"now": lambda p: solver.search(p, SearchControl(), threads=threads)}
        if threads == 1:
            ways["before"] = lambda p: search_parallel(solver, p, SearchControl(), threads=1,
                                                       serial_below=NEVER)
        for way in ways.values():  # compiled, pages touched
            for p in prepared:
                way(p)
        seconds = {name: [] for name in ways}
        nodes = {}
        for rnd in range(ROUNDS):
            total = dict.fromkeys(ways, 0.0)
            for k, ((_, opt, _), p) in enumerate(zip(korf, prepared)):
                for name in sorted(ways, reverse=(k + rnd) % 2 == 1):
                    r = ways[name](p)
                    assert r.length == opt, (name, k)
                    total[name] += r.seconds
                    if rnd == 0:
                        nodes[name] = nodes.get(name, 0) + r.nodes_generated
            for name in ways:
                seconds[name].append(total[name])
        med = {name: statistics.median(s) for name, s in seconds.items()}
        for name in ways:
            rows.append((threads, name, f"{nodes[name] / 100:,.0f}", f"**{med[name]:.3f}**",
                         " / ".join(f"{s:.3f}" for s in seconds[name])))
        if threads == 1:
            rows.append((threads, "now / before", f"{nodes['now'] / nodes['before']:.3f}",
                         f"{med['now'] / med['before']:.3f}", ""))
            now_one = (nodes["now"] / 100, med["now"], med["now"] / med["before"])
    per, secs, ratio = now_one
    record_bar(SECTION, f"Korf's 100, one thread, 15/7-8: <= {NODES_BAR:,} nodes generated an "
               f"instance and <= {SECONDS_BAR:g} s of search in all",
               f"{per:,.0f} nodes, {secs:.3f} s ({ratio:.2f}x the code before in the same run)",
               True if per <= NODES_BAR and secs <= SECONDS_BAR else
               "partly" if per <= NODES_BAR else False)
    return "\n".join([
        "## Fewer nodes: the levers, each beside the code before", "",
        f"Machine: {machine()}", "",
        "Korf's 100 (blank-first) with 15/7-8 + reflection. `now`: the search as it is; "
        "`before`: on one thread every bound in one kernel call, depth first (the code "
        "before closest first from the start); two threads for reference (the code before "
        "ordered their tasks closest first only after an iteration of a million nodes: "
        "16,704 nodes an instance on the day). Per instance in turn, the order alternating; search seconds summed "
        f"over the 100, median of {ROUNDS} rounds (the rounds listed).", "",
        table(("threads", "search", "generated an instance", "seconds (median)", "rounds"), rows),
        *hardest80(solver), *easiest24()])


if __name__ == "__main__":
    run(SECTION, measure, __doc__)
