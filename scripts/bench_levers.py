"""Fewer nodes, lever by lever, each beside the code before in the same minutes.

Korf's 100 with 15/7-8 + reflection on one thread: the search as it is now against every
bound in one kernel call in depth-first order (the code before closest first from the
start: ``serial_below`` = threads.NEVER), per instance in turn (the order alternating), 5
rounds after a warm one; the search time each result reports (``seconds``), summed over
the 100, median of the rounds; nodes generated per instance. Then the search on 2 threads.

Builds 15/7-8 into artifacts/ when missing. Rewrites the `levers` section of
BENCHMARKS.md. Usage: scripts/bench levers
"""

from __future__ import annotations

import statistics

from benchlib import ensure_artifact, instances, machine, record_bar, run, table
from pdbtool.loading import load_heuristic
from pdbtool.search.control import SearchControl
from pdbtool.search.solver import Solver
from pdbtool.search.threads import NEVER, search_parallel

SECTION = "levers"
ROUNDS = 5
NODES_BAR, SECONDS_BAR = 12_000, 0.12


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
        table(("threads", "search", "generated an instance", "seconds (median)", "rounds"), rows)])


if __name__ == "__main__":
    run(SECTION, measure, __doc__)
