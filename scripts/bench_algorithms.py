"""The algorithms compared (the seeds' comparison table, measured): on random 8-puzzles
every algorithm with every heuristic against the exact BFS distances; on the easier
15-puzzles of Korf's 100 the same with a node budget; IDA*+TT against IDA* and A* against
IDA* (peak memory) on Korf's 100 with the 15-puzzle table; Korf-Reid-Edelkamp's node
prediction against the measured iterations; greedy from 3x3 to 20x20.

Builds the tables into artifacts/ when missing. Rewrites the `algorithms` section of
BENCHMARKS.md. Usage: scripts/bench algorithms   (--quick: a small configuration with
15/5-5-5, to check the program; --table to pick the 15-puzzle catalogue)
"""

from __future__ import annotations

import math
import random
import re
import statistics
import time

import numpy as np

from benchlib import ensure_artifact, geometric_mean, instances, machine, record_bar, run, table
from pdbtool import puzzle
from pdbtool.errors import LimitReached
from pdbtool.heuristics.prediction import predict
from pdbtool.heuristics.table_free import TABLE_FREE, table_free
from pdbtool.kernels.bfs import rank
from pdbtool.loading import load_heuristic
from pdbtool.search.algorithms import Algorithm, exact_distances
from pdbtool.search.control import SearchControl
from pdbtool.search.solver import Solver
from pdbtool.tables import artifact

SECTION = "algorithms"
ALGOS = (("ida", {}), ("ida-tt", {}), ("astar", {}), ("rbfs", {}), ("wida", {"weight": 1.5}),
         ("wida", {"weight": 3.0}), ("greedy", {}), ("bfs", {}), ("sma", {"max_memory": 64 << 10}),
         ("frontier", {}), ("bidir", {}))


def label(name, opts):
    if "max_memory" in opts:
        return f"{name} {opts['max_memory'] >> 10}K"
    return f"{name} W={opts['weight']:g}" if "weight" in opts else name


def mib(x):
    return f"{x / 2**20:,.2f}"


def solve_all(solver, boards, goal, algorithm, budget=None):
    """Results (None where a limit stopped it) and the total seconds."""
    out, total = [], 0.0
    for b in boards:
        try:
            r = solver.solve(b, goal, algorithm=algorithm, control=SearchControl(budget=budget))
            out.append(r)
            total += r.seconds
        except LimitReached:
            out.append(None)
    return out, total


def verdict(results, exact, algorithm):
    done = [(r, d) for r, d in zip(results, exact) if r is not None]
    if algorithm.optimal:
        return f"{sum(r.length == d for r, d in done)}/{len(results)} optimal"
    if algorithm.name == "wida":
        return f"{sum(r.length <= algorithm.w * d for r, d in done)}/{len(results)} within bound"
    return f"{len(done)}/{len(results)} replayed"


def comparison(heuristics, boards, goal, exact, budget=None) -> str:
    rows = []
    for hname, h in heuristics.items():
        solver = Solver(h)
        for name, opts in ALGOS:
            if name == "bfs" and (h.side > 3 or hname != next(iter(heuristics))):
                continue  # bfs uses no heuristic: one row, 8-puzzle only
            if name == "bidir" and h.side == 3 and hname != next(iter(heuristics)):
                continue  # breadth-first from both ends on 3x3: no heuristic, one row
            a = Algorithm(name, **opts)
            solver.solve(boards[0], goal, algorithm=a)  # compile
            res, total = solve_all(solver, boards, goal, a, budget)
            done = [r for r in res if r is not None]
            if not done:
                rows.append((label(name, opts), "none" if name == "bfs" else hname, "0 finished", "", "", "", "", ""))
                continue
            none = name in ("bfs", "greedy") or (name == "bidir" and h.side == 3)
            rows.append((label(name, opts), "none" if none else hname,
                         verdict(res, exact, a), f"{statistics.mean(r.length for r in done):.2f}",
                         f"{statistics.mean(r.nodes_generated for r in done):,.0f}",
                         f"{total:.3f}", f"{total / len(done) * 1e3:.3f}",
                         mib(max(r.peak_memory_bytes for r in done))))
    return table(("algorithm", "heuristic", "answers", "mean length", "mean generated", "total s",
                  "mean ms", "peak MiB (largest)"), rows)


def korf_table(solver, korf, tt_size) -> tuple[str, str]:
    """IDA*+TT, A*, SMA* in 64K and frontier search against IDA* on Korf's 100."""
    boards = [b for _, _, b in korf]
    ida, ida_s = solve_all(solver, boards, "blank-first", Algorithm("ida"))
    tt, tt_s = solve_all(solver, boards, "blank-first", Algorithm("ida-tt", tt_size=tt_size))
    ast, ast_s = solve_all(solver, boards, "blank-first", Algorithm("astar", max_memory=4 << 30))
    sma, sma_s = solve_all(solver, boards, "blank-first", Algorithm("sma", max_memory=64 << 10),
                           budget=50_000_000)
    fr, fr_s = solve_all(solver, boards, "blank-first", Algorithm("frontier", max_memory=4 << 30))
    rows = []
    for name, res, total in (("ida", ida, ida_s), ("ida-tt", tt, tt_s), ("astar", ast, ast_s),
                             ("sma 64K", sma, sma_s), ("frontier", fr, fr_s)):
        done = [r for r in res if r is not None] or [None]
        if done == [None]:
            rows.append((name, f"0/{len(korf)}", "", "", "", "", ""))
            continue
        ok = sum(r is not None and r.length == opt for r, (_, opt, _) in zip(res, korf))
        rows.append((name, f"{ok}/{len(korf)}", f"{statistics.mean(r.nodes_generated for r in done):,.0f}",
                     f"{statistics.mean(r.nodes_expanded for r in done):,.0f}", f"{total:.3f}",
                     mib(statistics.mean(r.peak_memory_bytes for r in done)),
                     mib(max(r.peak_memory_bytes for r in done))))
    ratios = [t.nodes_generated / i.nodes_generated for i, t in zip(ida, tt) if i and t]
    text = table(("algorithm", "optimal", "mean generated", "mean expanded", "total s",
                  "mean peak MiB", "largest peak MiB"), rows)
    return text, (f"IDA*+TT ({tt_size:,} entries) generates {geometric_mean(ratios):.3f}x the nodes of "
                  f"IDA* (geometric mean of the per-instance ratios; min {min(ratios):.3f}, max "
                  f"{max(ratios):.3f}).")


def prediction_table(path, korf) -> str:
    """Predicted against measured nodes per iteration (no reflection), over Korf's 100."""
    meta = artifact.read_meta(path)
    solver = Solver(load_heuristic(path, reflect=False))
    per_bound: dict[int, list[tuple[float, float]]] = {}
    ratios = []
    cache = {}
    for _, _, b in korf:
        r = solver.solve(b, "blank-first")
        blank = b.index(0)
        if blank not in cache:
            cache[blank] = predict(meta, 80, blank)
        pred = cache[blank]
        measured = sum(it["nodes"] for it in r.iterations[:-1])
        predicted = sum(pred[it["bound"]]["generated"] for it in r.iterations[:-1])
        if measured > 0:
            ratios.append(predicted / measured)
        for it in r.iterations[:-1]:
            per_bound.setdefault(it["bound"], []).append((pred[it["bound"]]["generated"], it["nodes"]))
    rows = [(b, len(v), f"{statistics.mean(p for p, _ in v):,.0f}", f"{statistics.mean(m for _, m in v):,.0f}",
             f"{statistics.mean(p for p, _ in v) / max(1.0, statistics.mean(m for _, m in v)):.2f}")
            for b, v in sorted(per_bound.items())]
    return "\n".join([
        table(("bound", "iterations", "predicted generated (mean)", "measured generated (mean)",
               "predicted / measured"), rows),
        f"\nOver the complete iterations of {len(ratios)} instances, predicted / measured nodes: "
        f"geometric mean {geometric_mean(ratios):.2f} (min {min(ratios):.2f}, max {max(ratios):.2f}). "
        "The prediction treats the groups as independent and the table's entries as states; the "
        "search starts from one board, not from the equilibrium distribution."])


def greedy_table(rng) -> str:
    rows, slowest = [], 0.0
    for side in (3, 4, 5, 6, 8, 10, 15, 20):
        solver = Solver(table_free("hamming", side))
        b = puzzle.random_board(side, "blank-last", rng)
        solver.solve(b, algorithm="greedy")  # compile
        res = [solver.solve(puzzle.random_board(side, "blank-last", rng), algorithm="greedy") for _ in range(5)]
        rows.append((f"{side}x{side}", f"{statistics.mean(r.length for r in res):,.0f}",
                     f"{max(r.seconds for r in res) * 1e3:.2f}"))
        slowest = max(r.seconds for r in res)  # the 20x20 last
    record_bar(SECTION, "greedy replays 3x3 to 20x20, a 20x20 in < 1 s",
               f"replayed; 20x20 in {slowest * 1e3:.0f} ms at most", slowest < 1.0)
    return table(("board", "mean length (5 boards)", "slowest ms"), rows)


def measure(quick: bool, table15: str | None, boards: int | None) -> str:
    rng = random.Random(2026)
    table15 = table15 or ("15/5-5-5" if quick else "15/7-8")
    n8 = boards or (50 if quick else 1000)
    korf = instances("korf100.txt")
    easy = sorted(korf, key=lambda r: r[1])[:3 if quick else 10]
    korf_run = easy if quick else korf
    dist = exact_distances(3)
    fact = np.array([math.factorial(i) for i in range(10)], np.int64)
    b8 = [puzzle.random_board(3, "blank-first", rng) for _ in range(n8)]
    exact8 = [int(dist[rank(np.array(b, np.int64), 9, fact)]) for b in b8]
    h8 = {name: table_free(name, 3) for name in TABLE_FREE}
    h8["pdb 8/full"] = load_heuristic(ensure_artifact("8/full"))
    path15 = ensure_artifact(table15)
    h15 = {name: table_free(name, 4) for name in ("manhattan", "linear-conflict", "walking-distance")}
    h15[f"pdb {table15}"] = load_heuristic(path15)
    t0 = time.perf_counter()
    out = [f"## The algorithms compared\n\nMachine: {machine()}\n",
           f"### 8-puzzle: {n8} random boards (seed 2026), against the exact BFS distances\n",
           (comparison8 := comparison(h8, b8, "blank-first", exact8)),
           f"\n### 15-puzzle: the {len(easy)} shortest of Korf's 100, node budget 20M per solve\n",
           comparison(h15, [b for _, _, b in easy], "blank-first", [o for _, o, _ in easy], budget=20_000_000),
           f"\n### Korf's {'100' if not quick else str(len(korf_run)) + ' shortest'} with {table15} + reflection: "
           "IDA*, IDA*+TT, A* and frontier search (memory limit 4 GiB), SMA* in 64K (node budget 50M; "
           "bidir's MM is left out: its backward side has only Manhattan distance)\n"]
    solver15 = Solver(load_heuristic(path15))
    text, note = korf_table(solver15, korf_run, 1 << 20)
    if not quick:
        answers = re.findall(r"\| (\d+)/(\d+) (?:optimal|within bound|replayed) \|", comparison8)
        wrong = sum(a != b for a, b in answers)
        record_bar(SECTION, "every optimal algorithm = BFS length, 1,000 8-puzzles",
                   f"{n8}/{n8} for each algorithm and heuristic; wida within its bound" if not wrong
                   else f"{wrong} of {len(answers)} rows short", not wrong)
        astar = re.search(r"^\| astar \| (\d+)/(\d+) \|.* \| ([\d.,]+) \|$", text, re.M)
        record_bar(SECTION, "A* on Korf's 100 (7-8) within the memory limit",
                   f"{astar[1]}/{astar[2]} within 4 GiB, peak {astar[3]} MiB", astar[1] == astar[2])
    out += [text, "\n" + note + " Peak memory is what the search holds (the tables are shared and "
            "not counted): IDA*'s stacks against A*'s states, hash slots and open list.\n",
            f"\n### Node-count prediction (Korf, Reid & Edelkamp) against IDA* on Korf's "
            f"{len(korf_run)} ({table15}, partition 0, no reflection)\n",
            prediction_table(path15, korf_run),
            "\n### Greedy (constructive, not optimal), random blank-last boards\n",
            greedy_table(rng),
            f"\n(The whole section took {time.perf_counter() - t0:.0f} s.)\n"]
    return "\n".join(out)


def options(p):
    p.add_argument("--quick", action="store_true", help="a small configuration (15/5-5-5, few boards)")
    p.add_argument("--table15", metavar="CATALOGUE", help="the 15-puzzle catalogue (default 15/7-8)")
    p.add_argument("--boards", type=int, help="random 8-puzzles (default 1000)")


if __name__ == "__main__":
    run(SECTION, measure, __doc__, options)
