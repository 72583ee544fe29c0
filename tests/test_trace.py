"""Search traces: the tracing kernel is the same search as the plain one (same answer, same
counts), and it generates the nodes a plain recursive IDA* generates, in the same order;
h along the path; caps, threads, the JSON file."""

import json
import random

import numpy as np
import pytest

from pdbtool import puzzle
from pdbtool.errors import BadInput, LimitReached
from pdbtool.heuristics.table_free import TABLE_FREE, table_free
from pdbtool.kernels.ida import EXPANDED_NODE, GOAL_NODE, PRUNED_NODE
from pdbtool.loading import load_heuristic
from pdbtool.search import trace
from pdbtool.search.control import SearchControl
from pdbtool.search.solver import Solver
from pdbtool.search.threads import NEVER, search_parallel
from reference import EXPANDED, GOAL, PRUNED, ida_nodes, korf100, korf_shortest, manhattan

NAMES = {EXPANDED: EXPANDED_NODE, PRUNED: PRUNED_NODE, GOAL: GOAL_NODE}
COLUMNS = ("iteration", "g", "h", "blank", "outcome")


def boards8(k, seed, goal="blank-first"):
    rng = random.Random(seed)
    return [puzzle.random_board(3, goal, rng) for _ in range(k)]


def rows(t: trace.Trace) -> list[tuple]:
    return list(zip(*(t.events[c] for c in COLUMNS)))


def reference_rows(solver, board_bf, h):
    nodes, iterations = ida_nodes(board_bf, h, solver.fsm.tolist())
    return [(i, g, hv, cell, NAMES[o]) for i, g, hv, cell, o in nodes], iterations


def assert_same_search(t: trace.Trace, plain):
    """The traced solve reports what the plain kernel reports, and records every node."""
    r = t.result
    assert r["iterations"] == plain.iterations and r["moves"] == plain.moves
    assert (r["nodes_generated"], r["nodes_expanded"]) == (plain.nodes_generated, plain.nodes_expanded)
    assert t.complete and t.recorded == plain.nodes_generated
    per_iteration = np.bincount(t.events["iteration"], minlength=len(plain.iterations))
    assert per_iteration.tolist() == [i["nodes"] for i in plain.iterations]


def test_outcome_names_follow_the_kernel_codes():
    assert [trace.OUTCOME_NAMES.index(n) for n in (EXPANDED, PRUNED, GOAL)] == \
        [EXPANDED_NODE, PRUNED_NODE, GOAL_NODE]


@pytest.mark.parametrize("name", TABLE_FREE)
def test_traced_search_is_the_plain_search(name):
    solver = Solver(table_free(name, 3))
    for goal in ("blank-first", "blank-last"):
        for b in boards8(15, 3, goal):
            assert_same_search(trace.record(solver, b, goal, cap=10**6), solver.solve(b, goal))


def depth_first(solver, board):
    """The search as the tracing kernel runs it: every bound in one kernel call, depth
    first (not the tasks closest first that a 15-puzzle search on one thread runs)."""
    return search_parallel(solver, solver.prepare(board, "blank-first"), SearchControl(),
                           serial_below=NEVER)


def test_traced_pdb_searches_are_the_plain_searches(art_dir):
    s8 = Solver(load_heuristic(art_dir / "8-full.h5"))
    for b in boards8(20, 4):
        assert_same_search(trace.record(s8, b, "blank-first"), s8.solve(b, "blank-first"))
    s15 = Solver(load_heuristic(art_dir / "15-5-5-5.h5"))
    for _, optimal, b in korf_shortest(2):
        traced = trace.record(s15, b, "blank-first", cap=10**6)
        assert_same_search(traced, depth_first(s15, b))
        assert traced.result["length"] == s15.solve(b, "blank-first").length == optimal


def test_nodes_are_those_of_a_recursive_ida_with_manhattan():
    """Same nodes, same order, same g, h, blank cell and outcome as the plain recursive
    IDA* in reference.py (its own Manhattan distance, the solver's automaton)."""
    solver = Solver(table_free("manhattan", 3))
    for b in boards8(30, 5) + [(8, 6, 7, 2, 5, 4, 3, 0, 1)]:
        t = trace.record(solver, b, "blank-first")
        expected, iterations = reference_rows(solver, b, manhattan)
        assert rows(t) == expected and t.result["iterations"] == iterations
        assert t.events["f"] == [g + h for g, h in zip(t.events["g"], t.events["h"])]


def test_nodes_of_a_lazy_pdb_are_those_of_a_recursive_ida_with_the_full_value(art_dir):
    """A PDB child is pruned at the first sum over the limit, so its recorded h is a lower
    bound; the nodes and outcomes are still those of IDA* evaluating h in full."""
    solver = Solver(load_heuristic(art_dir / "15-5-5-5.h5"))
    for b in [korf_shortest(1)[0][2], (1, 2, 3, 0, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)]:
        t = trace.record(solver, b, "blank-first")
        expected, iterations = reference_rows(solver, b, lambda board: solver.root(tuple(board)).h)
        assert t.result["iterations"] == iterations
        got = rows(t)
        assert [(i, g, c, o) for i, g, _, c, o in got] == [(i, g, c, o) for i, g, _, c, o in expected]
        bounds = [it["bound"] for it in iterations]
        for (i, g, h, _, o), (_, _, full, _, _) in zip(got, expected):
            if o == PRUNED_NODE:
                assert bounds[i] < g + h <= g + full
            else:
                assert h == full


def test_blank_last_cells_are_on_the_board_as_given():
    solver = Solver(table_free("manhattan", 3))
    b = (8, 6, 7, 2, 5, 4, 3, 0, 1)
    t = trace.record(solver, b, "blank-last")
    image = trace.record(solver, puzzle.rotate_relabel(b), "blank-first")
    assert t.events["blank"] == [8 - c for c in image.events["blank"]]
    assert t.events["g"] == image.events["g"] and t.events["outcome"] == image.events["outcome"]


@pytest.mark.parametrize("goal", ("5 3 8 1 7 2 4 6 0", "1 2 3 4 0 5 6 7 8"))
def test_cells_of_any_goal_are_on_the_board_as_given(goal):
    """Towards a corner goal (a symmetry away from blank-first) and one with the blank in
    the middle: each node's blank cell is a neighbour of its parent's on the user's board,
    and the goal node is the goal."""
    from pdbtool.geometry import neighbours
    from pdbtool.selection import Solvers

    solver = Solvers(heuristic="manhattan").for_goal(3, goal)
    target = puzzle.goal_board(3, goal)
    for b in [puzzle.random_board(3, goal, random.Random(7)) for _ in range(3)]:
        t = trace.record(solver, b, goal)
        assert t.complete
        stack = [b]
        for i, g, h, cell, outcome in rows(t):
            parent = stack[g - 1] if g > 1 else b
            assert cell in neighbours(3)[parent.index(0)]
            child = list(parent)
            child[parent.index(0)], child[cell] = parent[cell], 0
            child = tuple(child)
            if outcome == EXPANDED_NODE:
                del stack[g:]
                stack.append(child)
        assert outcome == GOAL_NODE and child == target


def test_other_algorithms_trace_the_answer_only():
    solver = Solver(table_free("manhattan", 3))
    b = (8, 6, 7, 2, 5, 4, 3, 0, 1)
    t = trace.record(solver, b, algorithm="astar")
    assert t.events is None and "IDA*" in t.note
    assert t.result["algorithm"] == "astar" and t.result["length"] == 31
    assert len(t.result["path_h"]) == 32
    with pytest.raises(BadInput, match="IDA"):
        solver.search(solver.prepare(b), events=np.zeros((1, 5), np.int32), algorithm="rbfs")


def test_replaying_the_nodes_gives_boards_of_their_h():
    """Rebuilding each node's board from its parent (the last expanded node one level up)
    gives a board whose Manhattan distance is the recorded h; the goal node is the goal."""
    solver = Solver(table_free("manhattan", 3))
    for b in boards8(5, 6):
        t = trace.record(solver, b, "blank-first")
        stack = [b]
        for i, g, h, cell, outcome in rows(t):
            parent = stack[g - 1] if g > 1 else b
            child = list(parent)
            child[parent.index(0)], child[cell] = parent[cell], 0
            child = tuple(child)
            assert manhattan(child) == h
            if outcome == EXPANDED_NODE:
                del stack[g:]
                stack.append(child)
        assert outcome == GOAL_NODE and child == tuple(range(9))


def test_path_h_is_h_of_each_board_along_the_solution():
    solver = Solver(table_free("linear-conflict", 4))
    _, _, board = korf_shortest(1)[0]
    r = solver.solve(board, "blank-first")
    boards, b = [board], list(board)
    for letter in r.blank_moves:
        b = list(puzzle.apply_blank_moves(tuple(b), letter))
        boards.append(tuple(b))
    assert r.path_h == [solver.root(x).h for x in boards]
    assert r.path_h[0] == r.initial_h and r.path_h[-1] == 0 and len(r.path_h) == r.length + 1
    assert all(h <= r.length - g for g, h in enumerate(r.path_h))


def test_cap_threads_and_limits():
    solver = Solver(table_free("manhattan", 3))
    b = (8, 6, 7, 2, 5, 4, 3, 0, 1)
    t = trace.record(solver, b, cap=100)
    assert t.recorded == 100 and not t.complete and "cap 100" in t.note
    assert t.result["nodes_generated"] == solver.solve(b).nodes_generated
    full = trace.record(solver, b)
    assert rows(t) == rows(full)[:100]
    t = trace.record(solver, b, threads=2)
    assert t.events is None and "2 threads" in t.note and t.result["length"] == 31
    with pytest.raises(LimitReached, match="budget"):
        trace.record(Solver(table_free("manhattan", 4)), korf100()[0][2], "blank-first",
                     control=SearchControl(budget=50_000))
    with pytest.raises(BadInput, match="one thread"):
        solver.search(solver.prepare(b), threads=2, events=np.zeros((1, 5), np.int32))


def test_trace_file_round_trip_and_refusals(tmp_path):
    solver = Solver(table_free("manhattan", 3))
    t = trace.record(solver, (1, 2, 3, 4, 5, 6, 0, 7, 8))
    path = tmp_path / "t.json"
    t.save(path)
    back = trace.load(path)
    assert back.to_dict() == t.to_dict() == json.loads(path.read_text())
    assert back.to_dict()["events_complete"] and back.summary == "all 4 nodes recorded"
    (tmp_path / "x.json").write_text('{"format": "something else"}')
    (tmp_path / "y.json").write_text("{")
    d = t.to_dict()
    d["events"]["g"].pop()
    (tmp_path / "z.json").write_text(json.dumps(d))
    (tmp_path / "b.json").write_bytes(b"\xf8\xff binary")
    edits = {"short.json": ("board", [1, 2, 3]), "negative.json": ("length", -5),
             "moves.json": ("blank_moves", "UU"), "letters.json": ("blank_moves", "xy")}
    for name, (field, value) in edits.items():
        d = json.loads(path.read_text())  # the trace as saved (to_dict shares its events)
        d["result"][field] = value
        (tmp_path / name).write_text(json.dumps(d))
    for name, message in (("x.json", "not a pdbtool trace"), ("y.json", "not JSON"),
                          ("z.json", "equal length"), ("missing.json", "missing.json: no such file"),
                          ("b.json", "not UTF-8"), ("short.json", "result is damaged"),
                          ("negative.json", "do not take its board to its goal"),
                          ("moves.json", "do not take its board to its goal"),
                          ("letters.json", "result is damaged")):
        with pytest.raises(BadInput, match=message):
            trace.load(tmp_path / name)
