"""The other algorithms against the exact 8-puzzle oracle: every optimal one returns the BFS
length, wida stays within its bound, greedy replays from 3x3 to 20x20; the limits say
what stopped them; the daemon honours the request's algorithm."""

import math
import random
import re
import time
from fractions import Fraction

import numpy as np
import pytest

from pdbtool import limits, puzzle
from pdbtool.errors import BadInput, LimitReached
from pdbtool.heuristics.table_free import table_free
from pdbtool.kernels.bfs import rank
from pdbtool.kernels.ida_tt import TT_ENTRY_BYTES, transposition_table
from pdbtool.limits import size as parse_size
from pdbtool.loading import load_heuristic
from pdbtool.search.algorithms import WIDA_REACH, Algorithm, exact_distances
from pdbtool.search.control import SearchControl
from pdbtool.search.solver import Solver
from pdbtool.search.threads import NEVER, search_parallel
from reference import assert_replays, korf100, korf_shortest

OPTIMAL = ("ida-tt", "astar", "rbfs", "sma", "frontier", "bidir")


def boards8(k, seed, goal="blank-first"):
    rng = random.Random(seed)
    return [puzzle.random_board(3, goal, rng) for _ in range(k)]


@pytest.mark.parametrize("name", OPTIMAL)
@pytest.mark.parametrize("heuristic", ("manhattan", "linear-conflict", "gaschnig"))
def test_optimal_algorithms_equal_bfs(name, heuristic, oracle8):
    solver = Solver(table_free(heuristic, 3))
    for b in boards8(200, 21):
        r = solver.solve(b, "blank-first", algorithm=Algorithm(name, max_memory=1 << 24 if name == "astar" else None))
        assert r.length == oracle8[b] and r.optimal and r.algorithm == name
        assert_replays(r.to_dict(), b, "blank-first")
        assert r.peak_memory_bytes > 0


def test_bfs_equals_the_oracle_and_refuses_larger_boards(oracle8):
    solver = Solver(table_free("manhattan", 3))
    for b in boards8(20, 22):
        r = solver.solve(b, "blank-first", algorithm="bfs")
        assert r.length == oracle8[b] and r.algorithm == "bfs" and r.heuristic == "none"
    with pytest.raises(BadInput, match=r"bfs .* up to 9 cells \(3x3"):
        Solver(table_free("manhattan", 4)).solve(korf100()[0][2], "blank-first", algorithm="bfs")


def test_exact_distances_are_the_oracle(oracle8):
    dist = exact_distances(3)
    fact = np.array([math.factorial(i) for i in range(10)], np.int64)
    assert (dist >= 0).sum() == len(oracle8) == 181440
    for b, d in list(oracle8.items())[::37]:
        assert dist[rank(np.array(b, np.int64), 9, fact)] == d


def test_tables_serve_every_algorithm(art_dir, oracle8, oracle8_last):
    solver = Solver(load_heuristic(art_dir / "8-full.h5"))
    for name in OPTIMAL:
        for b in boards8(30, 23):
            assert solver.solve(b, "blank-first", algorithm=name).length == oracle8[b]
            assert solver.solve(b, "blank-last", algorithm=name).length == oracle8_last[b]


def test_every_algorithm_reports_the_start_s_h(art_dir):
    """initial_h is the heuristic's value of the start, as the answer's check computes it
    (path_h[0]), whatever the algorithm: A*, SMA* and MM reuse the root's rows as they
    search, and reported the last node's h instead."""
    solver = Solver(load_heuristic(art_dir / "15-5-5-5.h5"))
    board = puzzle.random_walk(4, 30, "blank-first", random.Random(4))
    lengths = set()
    for name in ("ida", "ida-tt", "astar", "rbfs", "sma", "frontier", "bidir"):
        r = solver.solve(board, "blank-first", algorithm=name)
        assert r.initial_h == r.path_h[0] > 1, (name, r.initial_h, r.path_h[:3])
        lengths.add(r.length)
    assert len(lengths) == 1
    # the searches no heuristic guides (bfs; bidir on 9 cells, greedy) report the served
    # heuristic's h of the start too, as their path_h (they said 0 beside a path_h of 31)
    solver8 = Solver(table_free("manhattan", 3))
    far = (8, 6, 7, 2, 5, 4, 3, 0, 1)
    md = sum(abs(c // 3 - (t - 1) // 3) + abs(c % 3 - (t - 1) % 3)  # toward blank-last
             for c, t in enumerate(far) if t)
    for name in ("bfs", "bidir", "greedy"):
        r = solver8.solve(far, algorithm=name)
        assert r.heuristic == "none" and r.initial_h == r.path_h[0] == md, (name, r.initial_h)
    # ... and never the note of a fallback they did not search with
    import dataclasses

    fell = Solver(dataclasses.replace(table_free("linear-conflict", 3), note="fell back"))
    assert fell.solve(far).note == "fell back"
    for name in ("bfs", "bidir"):
        assert "fell back" not in fell.solve(far, algorithm=name).note, name


def test_an_algorithm_s_kernels_are_compiled_before_its_clock_starts(art_dir, monkeypatch,
                                                                      tmp_path):
    """Solver.compile_algorithm runs every kernel of the search before its clock starts:
    frontier's halves search with Manhattan distance towards the middle node, kernels of
    their own that solving the goal itself (no middle) never ran, so a first frontier
    search counted 10-20 s of compiling as search time."""
    from pdbtool import puzzle
    from pdbtool.search import best_first, warm

    run, classes = best_first._Frontier.run, []

    def recorded(self, H, *args, **kw):
        classes.append(type(H).__name__)
        return run(self, H, *args, **kw)

    monkeypatch.setattr(best_first._Frontier, "run", recorded)
    monkeypatch.setattr(warm, "CACHE_DIR", tmp_path)  # its marks: none yet
    solver = Solver(load_heuristic(art_dir / "8-full.h5"))
    cls = type(solver.heuristic.H)
    assert warm.pending(cls, ("frontier",)) > 0  # pdbtool solve says a compile is coming
    solver.compile_algorithm(Algorithm("frontier"), puzzle.frame(solver.shape, "blank-last"))
    assert {"PdbArrays", "PerTileArrays"} <= set(classes), classes
    assert warm.pending(cls, ("frontier",)) == 0  # ... the first time on a machine only


def test_ida_tt_on_korf_instances_cuts_nodes(art_dir):
    solver = Solver(load_heuristic(art_dir / "15-5-5-5.h5"))
    for _, optimal, board in korf_shortest(3):
        # against IDA* in depth-first order, as IDA*+TT searches (not closest first)
        plain = search_parallel(solver, solver.prepare(board, "blank-first"), SearchControl(),
                                serial_below=NEVER)
        tt = solver.solve(board, "blank-first", algorithm=Algorithm("ida-tt", tt_size=1 << 16))
        assert tt.length == plain.length == optimal
        assert tt.nodes_generated <= plain.nodes_generated and "cuts" in tt.note
        a = solver.solve(board, "blank-first", algorithm="astar")
        assert a.length == optimal and a.peak_memory_bytes > plain.peak_memory_bytes


def test_transposition_table_slots_sit_within_one_cache_line():
    for slots in (1, 5, 1 << 10):
        tt = transposition_table(slots)
        assert tt.shape == (slots, TT_ENTRY_BYTES // 8) and not tt.any()
        assert tt.ctypes.data % 64 == 0 and 64 % TT_ENTRY_BYTES == 0


@pytest.mark.parametrize("weight", (1.0, 1.5, 3.0, 1.9999, 100.0))
def test_wida_within_its_bound(weight, oracle8):
    """Within the weight, rounded down to thousandths (1.9999: 1.999); at weight 1 optimal
    and said so; a weight whose first bound W x h0 would pass WIDA_REACH lowered to it."""
    solver = Solver(table_free("manhattan", 3))
    for b in boards8(200, 24):
        r = solver.solve(b, "blank-first", algorithm=Algorithm("wida", weight=weight))
        assert_replays(r.to_dict(), b, "blank-first")
        if weight == 1:
            assert r.length == oracle8[b] and r.optimal and r.bound is None
            assert "weight 1: optimal" in r.note
            continue
        w = min(math.floor(weight * 1000) / 1000,
                math.floor(WIDA_REACH / max(r.initial_h, 1) * 1000) / 1000)
        assert oracle8[b] <= r.length <= w * oracle8[b] and r.bound == w, (b, r.bound)
        assert not r.optimal and "bounded-suboptimal" in r.note
        assert ("lowered to" in r.note) == (w < weight and weight == 100), r.note
        # the lower bound said is the better of L / W and h0 (it was L / W alone)
        least = max(math.ceil(r.length / Fraction(str(w))), r.initial_h)
        assert f"(so the optimum is at least {least})" in r.note and least <= oracle8[b], r.note
        # its bounds in moves, on g + W x h: the first W x h0 rounded down, the last
        # within W x the length (they were W's denominator times that: 31,031 for W 1.001)
        bounds = [i["bound"] for i in r.iterations]
        assert bounds[0] == math.floor(w * r.initial_h + 1e-9), (bounds, w, r.initial_h)
        assert bounds == sorted(bounds) and r.length <= bounds[-1] <= w * oracle8[b] + 1


def test_wida_with_a_large_weight_answers_at_once(art_dir):
    """Korf's #1 with 15/5-5-5: a weight of 100 once sent the depth-first search to
    its depth limit for minutes; lowered so that W x h0 <= WIDA_REACH, it answers within a
    budget IDA* itself needs."""
    from pdbtool.loading import load_heuristic
    from pdbtool.search.control import SearchControl

    solver = Solver(load_heuristic(art_dir / "15-5-5-5.h5"))
    board = korf100()[0][2]
    for weight in (30, 100):
        r = solver.solve(board, "blank-first", SearchControl(budget=1_000_000),
                         algorithm=Algorithm("wida", weight=weight))
        assert 57 <= r.length <= r.bound * 57 and r.bound * r.initial_h <= WIDA_REACH
        assert f"weight {weight} lowered to {r.bound:g}" in r.note


def test_greedy_replays_from_3x3_to_20x20():
    rng = random.Random(25)
    for side in range(2, 21):
        for goal in ("blank-last", "blank-first"):
            b = puzzle.random_board(side, goal, rng)
            solver = Solver(table_free("hamming", side))
            r = solver.solve(b, goal, algorithm="greedy")
            assert_replays(r.to_dict(), b, goal)
            assert not r.optimal and r.algorithm == "greedy" and "not optimal" in r.note
    b = puzzle.random_board(20, "blank-last", rng)
    t0 = time.perf_counter()
    Solver(table_free("hamming", 20)).solve(b, algorithm="greedy")
    # a guard against a constructive solve that wanders, not a speed figure (it takes about
    # a millisecond: scripts/bench algorithms)
    assert time.perf_counter() - t0 < 10.0


def test_searches_refuse_what_they_cannot_serve():
    with pytest.raises(BadInput, match="greedy"):
        table_free("manhattan", 7) and Solver(table_free("manhattan", 7)).solve(
            puzzle.random_board(7, rng=random.Random(1)))
    with pytest.raises(BadInput, match="up to 6x6"):
        table_free("linear-conflict", 7)
    with pytest.raises(BadInput, match="weight"):
        Algorithm("ida", weight=2)
    with pytest.raises(BadInput, match="unknown algorithm"):
        Algorithm("dijkstra")
    with pytest.raises(BadInput, match=r"^only ida searches on threads \(2 asked for\); rbfs "
                       "runs on one thread$"):  # the library's words, not a command line's
        Solver(table_free("manhattan", 3)).solve((1, 2, 3, 4, 5, 6, 7, 0, 8), threads=2, algorithm="rbfs")
    assert parse_size("512M") == 512 << 20 and parse_size("2G") == 2 << 30


def test_astar_memory_limit_says_how_many_states():
    hard = korf100()[0][2]
    with pytest.raises(LimitReached, match=r"memory limit .* holding [\d,]+ states") as e:
        Solver(table_free("manhattan", 4)).solve(hard, "blank-first",
                                                 algorithm=Algorithm("astar", max_memory=1 << 20))
    assert e.value.exit_code == 4 and e.value.limit == "memory"


def test_stop_and_budget_reach_every_search():
    """Each search's kernel polls the control's stop flag and counts to its budget: Korf's
    #1 (millions of nodes for each) ends on a budget of 50,000 nodes, and with the flag set
    before the search it ends 'stopped' within a poll (its budget of 5,000,000 would end a
    search deaf to the flag: a failure, not an hour). The stop was not checked before."""
    hard = korf100()[0][2]
    solver = Solver(table_free("manhattan", 4))
    for name in ("ida-tt", "astar", "rbfs", "wida", "sma", "frontier", "bidir"):
        algorithm = Algorithm(name, weight=1.01 if name == "wida" else None)
        with pytest.raises(LimitReached, match="budget"):
            solver.solve(hard, "blank-first", control=SearchControl(budget=50_000),
                         algorithm=algorithm)
        halted = SearchControl(budget=5_000_000)
        halted.halt()
        with pytest.raises(LimitReached, match="stopped"):
            solver.solve(hard, "blank-first", control=halted, algorithm=algorithm)
    # the breadth-first searches of boards of 9 cells (bfs, and bidir's there) too: they
    # answered after 483,838 and 27,439 nodes whatever the budget
    solver8 = Solver(table_free("manhattan", 3))
    far = (8, 6, 7, 2, 5, 4, 3, 0, 1)  # 31 moves from blank-last
    for name in ("bfs", "bidir"):
        with pytest.raises(LimitReached, match="node budget exhausted after"):
            solver8.solve(far, control=SearchControl(budget=1000), algorithm=Algorithm(name))
        assert solver8.solve(far, control=SearchControl(budget=10 ** 6),
                             algorithm=Algorithm(name)).length == 31


def test_a_timeout_says_it_was_the_deadline():
    """A search its timeout (--timeout) stopped said 'search stopped (cancelled or
    deadline)': it says the deadline and the timeout, on every search; a halt its reason."""
    from pdbtool.kernels.ida import STOPPED

    hard = korf100()[0][2]  # 57 moves: none of these answers it in 0.05 s
    solver = Solver(table_free("manhattan", 4))
    for name, threads in [("ida", 1), ("ida", 2), ("ida-tt", 1), ("astar", 1), ("rbfs", 1),
                          ("wida", 1), ("sma", 1), ("frontier", 1), ("bidir", 1)]:
        algorithm = Algorithm(name, weight=1.01 if name == "wida" else None)
        with pytest.raises(LimitReached, match=r"deadline reached \(timeout 0.05 s\) after "
                                               r"[\d,]+ nodes"):
            solver.solve(hard, "blank-first", control=SearchControl(timeout=0.05),
                         threads=threads, algorithm=algorithm)
    control = SearchControl(timeout=60)
    control.halt("table-changed")
    assert control.why_stopped(STOPPED) == "search stopped (table-changed)"


# -- any goal ------------------------------------------------------------------------------

def goals8():
    rng = random.Random(26)
    out = []
    for blank in (0, 2, 8, 1, 4):  # corners, an edge, the centre
        tiles = list(range(1, 9))
        rng.shuffle(tiles)
        out.append(tuple(tiles[:blank] + [0] + tiles[blank:]))
    return out


@pytest.mark.parametrize("goal", goals8())
def test_any_goal_lengths_equal_bfs_from_that_goal(goal):
    from pdbtool.selection import Solvers
    from reference import bfs_distances

    exact = bfs_distances(goal)
    text = " ".join(map(str, goal))
    solvers = Solvers(heuristic="manhattan")
    solver = solvers.for_goal(3, text)
    rng = random.Random(27)
    for _ in range(30):
        b = puzzle.random_board(3, text, rng)
        for name in ("ida", "astar", "bfs"):
            r = solver.solve(b, text, algorithm=name)
            assert r.length == exact[b]
            assert puzzle.apply_tile_moves(b, r.moves) == goal
        assert puzzle.apply_tile_moves(b, solver.solve(b, text, algorithm="greedy").moves) == goal


def test_corner_goals_use_the_tables_others_fall_back(art_dir):
    from pdbtool.selection import Solvers
    from reference import bfs_distances

    solvers = Solvers(directory=art_dir)
    corner = "5 3 8 1 7 2 4 6 0"
    assert solvers.for_goal(3, corner).heuristic.name.startswith("pdb 8/full")
    exact = bfs_distances(puzzle.goal_board(3, corner))
    rng = random.Random(28)
    for _ in range(20):
        b = puzzle.random_board(3, corner, rng)
        assert solvers.for_goal(3, corner).solve(b, corner).length == exact[b]
    edge = solvers.for_goal(3, "1 0 2 3 4 5 6 7 8").heuristic
    assert edge.name == "manhattan" and "not in a corner" in edge.note


def test_solvability_between_any_two_arrangements():
    ok, why = puzzle.solvability((1, 2, 3, 4, 5, 6, 8, 7, 0), "1,2,3,4,5,6,7,8,0")
    assert not ok and "odd permutation" in why
    ok, why = puzzle.solvability((1, 0, 2, 3, 4, 5, 6, 7, 8), "0,1,2,3,4,5,6,7,8")
    assert ok and "agree" in why
    with pytest.raises(BadInput, match="goal"):
        puzzle.goal_board(3, "1 2 3 0")


# -- the daemon ----------------------------------------------------------------------------

@pytest.mark.process
def test_daemon_honours_the_algorithm(stub, oracle8):
    from pdbd.convert import result_from_message, solve_request
    from pdbd.v1 import solver_pb2 as pb

    b = boards8(1, 29)[0]
    for name, optimal in (("astar", True), ("rbfs", True), ("ida-tt", True), ("greedy", False)):
        r = result_from_message(stub.Solve(solve_request(b, "blank-first", algorithm=Algorithm(name))))
        assert r.algorithm == name and r.optimal is optimal
        assert (r.length == oracle8[b]) if optimal else r.length >= oracle8[b]
    r = result_from_message(stub.Solve(pb.SolveRequest(tiles=b, goal="blank-first", algorithm="wida",
                                                       weight=2.0)))
    assert r.bound == 2.0 and not r.optimal and oracle8[b] <= r.length <= 2 * oracle8[b]
    big = puzzle.random_board(8, rng=random.Random(3))
    r = result_from_message(stub.Solve(pb.SolveRequest(tiles=big, algorithm="greedy")))
    assert puzzle.apply_tile_moves(big, r.moves) == puzzle.goal_board(8)


# -- the command line ----------------------------------------------------------------------

@pytest.mark.parametrize("options, words", [
    (dict(name="astar", max_memory=0), "a memory limit of 0 bytes is too small: at least 64K"),
    (dict(name="ida", max_memory=1 << 20),
     "a memory limit applies to the algorithms astar, sma, frontier, bidir only"),
    (dict(name="ida-tt", tt_size=0), "a transposition table of 0 entries: it needs at least 1"),
    (dict(name="ida", tt_size=10), "a transposition table size applies to the ida-tt algorithm only"),
])
def test_an_algorithms_bad_option_is_named(options, words):
    with pytest.raises(BadInput, match=re.escape(words)):
        Algorithm(**options)


def test_a_transposition_table_beyond_the_machine_is_refused_before_the_search():
    """Library callers too: BadInput (a daemon's INVALID_ARGUMENT) naming the need and the
    machine's memory, in the wire's words (no command-line flag)."""
    solver = Solver(table_free("manhattan", 3))
    with pytest.raises(BadInput, match=r"^a transposition table of 1,099,511,627,776 entries "
                                       r"needs 32,768 GiB of memory; this machine has ") as e:
        solver.solve("8 6 7 2 5 4 3 0 1", algorithm=Algorithm("ida-tt", tt_size=1 << 40))
    assert "--" not in str(e.value)


@pytest.mark.parametrize("name", ["astar", "sma", "frontier", "bidir"])
def test_a_memory_limit_beyond_the_machine_is_refused_before_the_search(name):
    """A* given 900 GiB on a machine of 24 took it, and would have grown until the system
    killed it with no word said (sma alone said so, when it failed to allocate)."""
    solver = Solver(table_free("manhattan", 3))
    beyond = limits.memory_caps()[0][1] + (1 << 30)
    with pytest.raises(BadInput, match=r"^a memory limit of [\d,.]+ GiB cannot be reached; "
                                       r"this machine has "):
        solver.solve("8 6 7 2 5 4 3 0 1", algorithm=Algorithm(name, max_memory=beyond))
    within = solver.solve("8 6 7 2 5 4 3 0 1", algorithm=Algorithm(name, max_memory=1 << 24))
    assert within.length == 31


@pytest.mark.process
def test_cli_algorithms_say_what_they_guarantee(art_dir):
    import json

    from test_cli import run

    p = run("solve", "--algorithm", "wida", "--weight", "2", "--heuristic", "manhattan", "8 6 7 2 5 4 3 0 1")
    assert p.returncode == 0 and "bounded-suboptimal: at most 2 x the optimal length" in p.stdout
    p = run("solve", "--algorithm", "greedy", "--json", " ".join(map(str, puzzle.random_board(12, rng=random.Random(4)))))
    out = json.loads(p.stdout)
    assert p.returncode == 0 and out["optimal"] is False and out["algorithm"] == "greedy"
    p = run("solve", "--algorithm", "bfs", "--heuristic", "manhattan", "1 2 3 4 5 6 7 8 9 10 11 12 13 14 0 15")
    assert p.returncode == 2 and "up to 9 cells (3x3" in p.stderr
    p = run("solve", "--algorithm", "astar", "--max-memory", "1M", "--heuristic", "manhattan",
            "--goal", "blank-first", " ".join(map(str, korf100()[0][2])))
    assert p.returncode == 4 and "holding" in p.stderr and "states" in p.stderr
    p = run("solve", "--heuristic", "manhattan", "--goal", "1 0 2 3 4 5 6 7 8", "--json", "1 2 0 3 4 5 6 7 8")
    assert p.returncode == 0 and json.loads(p.stdout)["length"] == 1
    p = run("solve", "--artifacts", str(art_dir), "--goal", "1 0 2 3 4 5 6 7 8", "1 2 0 3 4 5 6 7 8")
    assert p.returncode == 0 and "fell back to manhattan" in p.stdout


@pytest.mark.process
def test_cli_solvable_and_predict(art_dir):
    import json

    from test_cli import run

    p = run("solvable", "1 2 3 4 5 6 8 7 0", "--to", "blank-last")
    assert p.returncode == 3 and "odd permutation" in p.stdout
    p = run("solvable", "--json", "1 0 2 3 4 5 6 7 8", "--to", "0 1 2 3 4 5 6 7 8")
    assert p.returncode == 0 and json.loads(p.stdout)["solvable"] is True
    p = run("predict", str(art_dir / "15-5-5-5.h5"), "--depth", "40", "--json")
    rows = json.loads(p.stdout)["iterations"]
    assert p.returncode == 0 and len(rows) == 41 and rows[-1]["generated"] > rows[20]["generated"] > 0


@pytest.mark.parametrize("name, max_memory", [
    ("astar", 41 * (2**18 + 1)), ("frontier", 64 * (2**18 + 1)), ("bidir", 82 * (2**17 + 1))])
def test_a_search_allocates_no_more_than_its_memory_limit(name, max_memory):
    """Measured as numpy reports its allocations (tracemalloc). The limits are a state past
    a power of two, where the hash table, rounded up to one, had taken 1.09-1.2x."""
    import tracemalloc

    solver = Solver(table_free("manhattan", 4))
    algorithm = Algorithm(name, max_memory=max_memory)
    solver.solve(list(range(16)), "blank-first", algorithm=algorithm)  # compiled outside
    tracemalloc.start()
    try:
        with pytest.raises(LimitReached):  # Korf's #1: beyond a few MB for any of them
            solver.solve(korf100()[0][2], "blank-first", SearchControl(budget=1_000_000),
                         algorithm=algorithm)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak <= max_memory + (64 << 10), f"{peak:,} bytes allocated"


def test_a_search_stopped_at_its_memory_limit_frees_its_arrays_at_once():
    """A* stopped by --max-memory kept its states until Python's cyclic collector happened
    to run (the frame that raised held the error, whose traceback held the frame): the
    daemon grew by the limit with each such request. With the collector off, nothing of
    the search is left once its error is handled."""
    import gc

    solver = Solver(table_free("manhattan", 4))
    board = {n: b for n, _, b in korf100()}[88]  # hard for Manhattan: A* fills 1 MiB at once
    gc.collect()
    gc.disable()
    try:
        with pytest.raises(LimitReached, match="memory limit") as caught:
            solver.solve(board, "blank-first", algorithm=Algorithm("astar", max_memory=1 << 20))
        assert caught.value.limit == "memory"
        del caught
        from pdbtool.search import algorithms
        assert callable(algorithms._astar)  # the frames' name: renamed, this test would pass
        frames = [o for o in gc.get_objects()
                  if type(o).__name__ == "frame" and o.f_code.co_name == "_astar"]
        assert frames == []
    finally:
        gc.enable()


@pytest.mark.parametrize("name", ["astar", "ida-tt", "wida", "rbfs", "bfs", "greedy", "sma",
                                  "frontier", "bidir"])
def test_an_algorithm_is_compiled_near_the_goal_before_the_clock(name, monkeypatch):
    """The first search of an algorithm other than IDA* readies its kernels by solving a
    board four moves from the goal (the least memory, a control of its own) before the caller's search, its clock and
    its timeout start; later searches do not (the audit found seconds of compiling counted as
    search time, and a daemon's --max-search-seconds stopping a first search for them)."""
    from pdbtool.search import solver as solver_module

    calls = []
    real = solver_module.search_with

    def spy(solver, prepared, control, *, algorithm):
        calls.append((prepared.image, control, algorithm))
        return real(solver, prepared, control, algorithm=algorithm)

    monkeypatch.setattr(solver_module, "search_with", spy)
    solver = Solver(table_free("manhattan", 3))
    board = (8, 6, 7, 2, 5, 4, 3, 0, 1)  # 31 moves
    for control in (SearchControl(), SearchControl()):
        assert solver.solve(board, "blank-last", control, algorithm=name).length >= 31
        assert calls[-1][1] is control
    (image, control, least), first, second = calls
    goal = puzzle.frame(solver.shape, "blank-last").image_goal  # four tiles a move each
    assert sum(a != b and a != 0 for a, b in zip(image, goal)) == 4, (image, goal)
    assert control is not first[1] and control is not second[1] and least.name == name
    # the least memory (large arrays freed would change what glibc keeps), bidir's own
    assert least.max_memory == (1 << 16 if name in ("astar", "sma", "frontier") else None)
    assert least.tt_size == (1 if name == "ida-tt" else None)


PEAK_PROBE = """
import resource, sys
from pdbtool.heuristics.table_free import table_free
from pdbtool.search.algorithms import Algorithm
from pdbtool.search.solver import Solver
solver = Solver(table_free("manhattan", 4))
board = tuple(int(t) for t in sys.argv[2].split())
small = solver.solve(board, "blank-first", algorithm=Algorithm(sys.argv[1], max_memory=64 << 20))
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
big = solver.solve(board, "blank-first", algorithm=Algorithm(sys.argv[1], max_memory=16 << 30))
grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
print(big.length == small.length, big.nodes_generated == small.nodes_generated, grown,
      big.peak_memory_bytes)
"""


@pytest.mark.process
@pytest.mark.parametrize("name", ["astar", "bidir"])
def test_a_large_memory_limit_is_a_ceiling_not_a_size(name):
    """A* and MM key their states in a hash table: sized for the whole limit, an easy
    search given 16 GiB touched gigabytes at random (30 GiB: 8.6 GB and 19 s where 64 MiB
    took 0.15 s). They start with little room and take more only when it fills
    (limits.memory_tries): the same search, the same memory, whatever the limit."""
    import subprocess
    import sys

    board = " ".join(map(str, puzzle.random_walk(4, 60, "blank-first", random.Random(16))))
    p = subprocess.run([sys.executable, "-c", PEAK_PROBE, name, board], capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    same_length, same_nodes, grown_kib, reported = p.stdout.split()
    assert same_length == same_nodes == "True"
    assert int(grown_kib) < 100_000, grown_kib  # KiB: not the gigabytes of the limit
    assert int(reported) < 200 << 20  # the arrays of its first try, 64 MiB, and no more


@pytest.mark.parametrize("name", ["astar", "bidir"])
def test_a_try_that_fills_up_starts_again_with_more_room(name, monkeypatch):
    """The first try's room made tiny: the search fills it, starts again with 8x the room
    (limits.memory_tries), and answers as a search with room enough from the start; the
    nodes of the tries that filled up are counted, and the note says so."""
    from pdbtool import limits

    assert limits.memory_tries(1 << 30, 64 << 20) == [64 << 20, 512 << 20, 1 << 30]
    assert limits.memory_tries(1 << 20, 64 << 20) == [1 << 20]
    solver = Solver(table_free("manhattan", 4))
    board = korf_shortest(1)[0][2]
    whole = solver.solve(board, "blank-first", algorithm=name)
    monkeypatch.setattr(limits, "FIRST_TRY_BYTES", 64 << 10)
    monkeypatch.setattr(limits.memory_tries, "__defaults__", (64 << 10,))
    tried = solver.solve(board, "blank-first", algorithm=name)
    assert tried.length == whole.length and tried.optimal
    assert tried.nodes_generated > whole.nodes_generated and "smaller tries" in tried.note
    assert "smaller tries" not in whole.note


def test_a_board_prepared_by_another_solver_is_refused():
    """Solver.search trusts what its own prepare made: a 3x3 image searched by a 4x4
    solver read past the kernels' arrays (a segfault), a 4x4 one by a 3x3 solver said
    'node budget exhausted after 0 nodes', a centre goal's image searched toward a corner
    goal never ended."""
    s3, s4 = Solver(table_free("manhattan", 3)), Solver(table_free("manhattan", 4))
    centre = "1 2 3 4 0 5 6 7 8"
    s3c = Solver(table_free("manhattan", 3, goal_blank=4))  # the centre's image goal
    cases = [(s4, s3.prepare([1, 2, 3, 4, 5, 6, 7, 0, 8])),
             (s3, s4.prepare([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 0, 15])),
             (s3, s3c.prepare([8, 6, 7, 2, 5, 4, 3, 0, 1], centre)),
             # the same cells, another shape: a 3x4 image searched on 4x3 (another
             # parity, so another puzzle: it searched until its budget)
             (Solver(table_free("manhattan", (4, 3))),
              Solver(table_free("manhattan", (3, 4))).prepare([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 0, 11]))]
    for solver, prepared in cases:
        for algorithm in ("ida", "astar"):
            with pytest.raises(BadInput, match="prepared by another solver"):
                solver.search(prepared, algorithm=algorithm)


@pytest.mark.parametrize("call, says", [
    (lambda s: s.solve(None), "a board is a sequence"),
    (lambda s: s.solve(5), "a board is a sequence"),
    (lambda s: s.solve({1: 2}), "a board is a sequence"),
    (lambda s: s.solve((t for t in range(9))), "a board is a sequence"),
    (lambda s: s.solve(EIGHT, None), "a goal is one of"),
    (lambda s: s.solve(EIGHT, 3), "a goal is one of"),
    (lambda s: s.solve(EIGHT, algorithm=5), "algorithm must be an Algorithm"),
    (lambda s: s.solve(EIGHT, "blank-last", {"timeout": 5}), "control must be a SearchControl"),
    (lambda s: Algorithm("wida", weight="2"), "weight must be a number"),
    (lambda s: Algorithm("ida-tt", tt_size=2.5), "tt_size must be a whole number"),
    (lambda s: Algorithm("astar", max_memory=1e6), "max_memory must be a whole number"),
    (lambda s: Algorithm("astar", max_memory="1G"), "max_memory must be a whole number"),
    (lambda s: SearchControl(checkpoint="search.json"), "checkpoint must be a Checkpointing"),
])
def test_the_library_refuses_a_wrong_type_by_name(call, says):
    """The library's entry points refuse an argument of the wrong type with BadInput that
    names it (they raised TypeError, AttributeError or ValueError from deep inside, some
    with a misleading message: a dict board was 'board side 1 is not supported')."""
    solver = Solver(table_free("manhattan", 3))
    with pytest.raises(BadInput, match=re.escape(says)):
        call(solver)
    assert solver.solve(np.array(EIGHT)).length == 2  # a numpy board is a sequence too
    assert Algorithm("ida-tt", tt_size=np.int64(1024)).tt_size == 1024


EIGHT = (1, 2, 3, 4, 5, 6, 0, 7, 8)


@pytest.mark.parametrize("shape", [(2, 2), (4, 4), (3, 5), (7, 7)])
def test_greedy_makes_no_move_that_the_next_undoes(shape):
    """A solved board is 0 moves (it was 14 on 4x4: the walks to the corner and back), one
    a move away at most what the corner walks leave, and no answer holds LR, RL, UD or DU."""
    from pdbtool.geometry import Shape
    from pdbtool.selection import Solvers

    shape = Shape(*shape)
    solver = Solvers(heuristic="manhattan").for_shape(shape)
    for goal in ("blank-first", "blank-last"):
        solved = puzzle.goal_board(shape, goal)
        assert solver.solve(solved, goal, algorithm="greedy").length == 0
        rng = random.Random(shape.cells)
        for _ in range(5):
            board = puzzle.random_board(shape, goal, rng)
            r = solver.solve(board, goal, algorithm="greedy")
            assert_replays(r.to_dict(), board, goal)
            assert not re.search("LR|RL|UD|DU", r.blank_moves), r.blank_moves


def test_every_algorithms_note_joins_its_parts_once(tmp_path):
    """A note is its parts joined by "; ", none empty (frontier's said "no table for 3x4
    boards ...: fell back to walking-distance; ; open list only")."""
    from pdbtool.selection import Solvers

    solver = Solvers(directory=tmp_path).for_shape((3, 4))  # no table there: a fallback's note
    assert "fell back" in solver.heuristic.note
    for name in ("ida", "greedy", "frontier"):
        note = solver.solve((10, 2, 4, 11, 7, 5, 0, 1, 6, 3, 9, 8), algorithm=name).note
        assert all(part.strip() for part in note.split(";")), (name, note)


def test_sma_s_counts_reach_a_client_of_the_daemon(art_dir):
    """SMA*'s dropped and reexpanded were not on the wire: a client's result had None
    where pdbtool solve's had the counts (the README promises the same result)."""
    from pdbd.client import SolverClient
    from pdbtool.selection import Solvers, load_directory
    from serving import running_daemon

    from reference import korf_shortest

    _, _, board = korf_shortest(1)[0]  # Korf's #55: 41 moves, thousands dropped in 64K
    sma = Algorithm("sma", max_memory=1 << 16)
    local = Solvers(directory=art_dir).for_shape(4).solve(board, "blank-first", algorithm=sma)
    assert local.dropped > 0 and local.reexpanded > 0
    daemon = running_daemon(load_directory(art_dir), threads=1)
    try:
        with SolverClient(daemon.address) as client:
            sma = client.solve(board, "blank-first", algorithm=sma)
            ida = client.solve(board, "blank-first")
    finally:
        daemon.stop(grace=1)
    assert (sma.length, sma.dropped, sma.reexpanded) == (local.length, local.dropped,
                                                         local.reexpanded)
    assert ida.dropped is None and ida.reexpanded is None and "dropped" not in ida.to_dict()
