"""Rectangular boards (issue 38): the shape, goals and parity, table-free heuristics and IDA*
against exact breadth-first distances, pattern databases on a rectangle and its transpose,
the command line's --shape and pdbd's request.

The oracles are reference.py's: a plain BFS over every state (2x3, 3x2, 2x4, 4x2, 3x3,
2x5), and a breadth-first search from both ends for 2x6 (slow tier)."""

import itertools
import json
import random
import re
import subprocess
import sys

import numpy as np
import pytest
from reference import (
    abstract_distances,
    assert_replays,
    bfs_distances,
    meet_in_the_middle,
    neighbour_cells,
    reference_table,
    walking_distance,
)

from pdbtool import puzzle
from pdbtool.errors import BadInput
from pdbtool.geometry import Shape, blank_moves, neighbours, symmetries, transpose
from pdbtool.heuristics.table_free import (
    TABLE_FREE,
    WALKING_MAX_STATES,
    table_free,
    walking_part,
    walking_size,
    walking_states,
)
from pdbtool.search.algorithms import Algorithm
from pdbtool.search.solver import Solver
from pdbtool.tables import catalogue
from pdbtool.tables.builder import build, distance_table

SMALL = [(2, 3), (3, 2), (2, 4), (4, 2), (3, 3), (2, 5)]


def goal_of(shape, goal):
    """The goal boards, written out here (not puzzle.goal_board)."""
    n = shape[0] * shape[1]
    return tuple(range(n)) if goal == "blank-first" else tuple(range(1, n)) + (0,)


@pytest.fixture(scope="module")
def exact():
    """Exact distances of every state of a small shape to a goal, by plain BFS (cached)."""
    cache = {}

    def get(shape, goal="blank-first"):
        if (shape, goal) not in cache:
            cache[shape, goal] = bfs_distances(goal_of(shape, goal), shape)
        return cache[shape, goal]
    return get


# --- the shape, goals, parity ----------------------------------------------------------------

def test_shape_is_rows_by_cols():
    s = Shape.parse("3x4")
    assert s == (3, 4) and str(s) == "3x4" and s.cells == 12 and not s.square
    assert s.transposed == Shape(4, 3) and Shape.parse(" 5 X 4 ") == (5, 4)
    for bad in ("3", "3x", "x4", "3x4x5", "three by four"):
        with pytest.raises(BadInput, match="not a shape"):
            Shape.parse(bad)
    for bad, words in (("1x5", "2 to 6 rows"), ("7x3", "2 to 6 rows"), ("21x21", "sides 2 to 20")):
        with pytest.raises(BadInput, match=words):
            puzzle.check_shape(Shape.parse(bad))


def test_a_board_has_its_shape():
    board = tuple(range(1, 12)) + (0,)
    assert puzzle.validate(board, Shape(3, 4)) == board == puzzle.validate(board, (4, 3))
    with pytest.raises(BadInput, match="not a square"):
        puzzle.validate(board)
    with pytest.raises(BadInput, match="12 tiles do not fill a 3x5 board"):
        puzzle.validate(board, Shape(3, 5))
    with pytest.raises(BadInput, match=r"out of range: a 2x3 board holds 0..5"):
        puzzle.parse_board("1 2 3 4 5 9", Shape(2, 3))
    assert puzzle.goal_board(Shape(2, 3), "blank-last") == (1, 2, 3, 4, 5, 0)
    assert puzzle.check_goal("1 2 0, 3 4 5", Shape(2, 3)) == "1,2,0,3,4,5"


def test_every_entry_point_takes_a_shape_as_the_library_does(art_dir):
    """A shape as ROWSxCOLS text ("4x4", as --shape and SolverClient take it), a pair (numpy's
    too) or a square's side, wherever the library takes one: load_heuristic(shape="4x4")
    raised a bare ValueError (int("4x4")), Solvers, table_free and parse_board the same,
    and a float or a triple was taken (4.5 as 4, (3, 4, 5) as 3x4). Anything else is
    BadInput naming the forms, load_heuristic's before it opens the file."""
    from pdbtool.loading import load_heuristic
    from pdbtool.selection import Solvers, load_directory

    path = art_dir / "15-5-5-5.h5"
    for shape in ("4x4", " 4X4 ", (4, 4), [4, 4], np.array([4, 4]), 4, np.int64(4), Shape(4, 4)):
        assert load_heuristic(path, shape=shape).shape == Shape(4, 4), shape
    with pytest.raises(BadInput, match="serves 4x4 boards, the board is 3x4"):
        load_heuristic(path, shape="3x4")
    forms = re.escape('(give ROWSxCOLS text such as "3x4", a (rows, cols) pair or a square\'s '
                      "side, in positive whole numbers)")
    for bad in ("4", "four", "0x4", "", 4.5, 4.0, True, 0, -4, (3, 4, 5), (3.0, 4), (True, 4),
                ["3", "4"], np.array([[4, 4]]), {4: 4}):
        with pytest.raises(BadInput, match=r"^not a shape: .*" + forms + "$"):
            load_heuristic(art_dir / "no-such-file.h5", shape=bad)  # (refused before opening)
    solvers = Solvers(heuristic="manhattan")
    board = "7 11 0 8, 5 6 3 10, 4 1 9 2"
    for shape in ("3x4", (3, 4), np.array([3, 4])):
        assert solvers.for_shape(shape).shape == Shape(3, 4)
        assert solvers.for_goal(shape, "blank-first").shape == Shape(3, 4)
        assert table_free("manhattan", shape).shape == Shape(3, 4)
        assert puzzle.parse_board(board, shape) == puzzle.parse_board(board, Shape(3, 4))
        assert len(puzzle.random_board(shape)) == 12
    assert solvers.for_shape(3) is solvers.for_shape("3x3")
    for call in (lambda: solvers.for_shape("3 by 4"), lambda: table_free("manhattan", 3.5),
                 lambda: puzzle.parse_board(board, (3, 4, 1))):
        with pytest.raises(BadInput, match=forms):
            call()
    assert set(load_directory(art_dir, shapes={"3x3"}).heuristics) == {Shape(3, 3)}


def test_a_goal_board_is_taken_as_a_numpy_array_as_a_list():
    """Solver.solve and prepare, Solvers.for_goal, puzzle.check_goal and SolverClient took a
    goal board as a list or a tuple and refused a numpy array ("a goal is one of ...")."""
    from pdbd.client import goal_text
    from pdbtool.selection import Solvers

    goal = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0]
    board = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 0, 11]
    solver = Solver(table_free("manhattan", (3, 4)))
    assert puzzle.check_goal(np.array(goal), (3, 4)) == puzzle.check_goal(goal, (3, 4))
    assert solver.prepare(board, np.array(goal)) == solver.prepare(board, goal)
    r = solver.solve(np.array(board), np.array(goal))
    assert (r.length, r.goal) == (1, "1,2,3,4,5,6,7,8,9,10,11,0")
    odd = [2, 1, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0]
    middle = [1, 2, 3, 4, 0, 5, 6, 7, 8]  # the blank not in a corner: a solver of its own
    solvers = Solvers(heuristic="manhattan")
    assert solvers.for_goal(3, np.array(middle)) is solvers.for_goal(3, middle)
    assert solver.solve(odd, np.array(odd)).length == 0
    assert goal_text(np.array(goal)) == goal_text(goal) == "1 2 3 4 5 6 7 8 9 10 11 0"
    with pytest.raises(BadInput, match="goal board: "):
        puzzle.check_goal(np.array([[1, 2], [3, 0]]))  # tiles, not rows


def test_a_rectangles_solver_takes_its_board_as_text():
    """As a square's does: the tiles are counted, not the text's characters (a 3x4 solver
    refused its own board, "12 tiles is not a square board"), and a goal as text too."""
    solver = Solver(table_free("manhattan", (3, 4)))
    board = [7, 11, 0, 8, 5, 6, 3, 10, 4, 1, 9, 2]
    text = "7 11 0 8, 5 6 3 10, 4 1 9 2"
    prepared = solver.prepare(text, "1 2 3 4 5 6 7 8 9 10 11 0")
    assert prepared.image == solver.prepare(board).image and prepared.board == tuple(board)
    assert solver.solve(text).length == solver.solve(board).length
    with pytest.raises(BadInput, match="3x3 .*serves 3x4"):
        solver.prepare("1 2 3 4 5 6 7 8 0")


@pytest.mark.parametrize("shape", [(2, 3), (3, 4), (4, 5), (2, 6)])
def test_geometry_of_a_rectangle(shape):
    rows, cols = shape
    nbrs = neighbours(Shape(*shape))
    assert nbrs == [neighbour_cells(c, shape) for c in range(rows * cols)]
    moves, nmoves = blank_moves(Shape(*shape))
    assert [sorted(int(m) >> 2 for m in moves[c, :nmoves[c]]) for c in range(rows * cols)] == \
        [sorted(x) for x in nbrs]
    syms = symmetries(Shape(*shape))
    assert len(syms) == 4  # identity, two mirrors, the half turn
    for sigma in syms:
        assert sorted(sigma) == list(range(rows * cols))
        assert all(sorted(sigma[x] for x in nbrs[c]) == sorted(nbrs[sigma[c]])
                   for c in range(rows * cols))
    T = transpose(Shape(*shape))  # onto the cols x rows board
    other = neighbours(Shape(cols, rows))
    assert all(sorted(T[x] for x in nbrs[c]) == sorted(other[T[c]]) for c in range(rows * cols))
    assert len(symmetries(Shape(4, 4))) == 8


@pytest.mark.parametrize("shape", [(2, 3), (3, 2), (2, 4)])
def test_parity_decides_reachability_on_rectangles(shape, exact):
    """Every arrangement, for both goals and a goal with the blank inside: solvable exactly
    when BFS from the goal reaches it."""
    n = shape[0] * shape[1]
    middle = tuple(range(1, n // 2)) + (0,) + tuple(range(n // 2, n))
    for goal in ("blank-first", "blank-last", ",".join(map(str, middle))):
        reach = (exact(shape, goal) if "," not in goal
                 else bfs_distances(middle, shape))
        for perm in itertools.permutations(range(n)):
            ok, why = puzzle.solvability(perm, goal, Shape(*shape))
            assert ok == (perm in reach), (perm, why)
        assert len(reach) == len(list(itertools.permutations(range(n)))) // 2


# --- table-free heuristics and IDA* against BFS ------------------------------------------------

@pytest.mark.parametrize("shape", [(2, 3), (3, 2), (2, 4), (4, 2)])
@pytest.mark.parametrize("name", TABLE_FREE)
def test_table_free_heuristics_are_admissible_on_every_state(shape, name, exact):
    h = table_free(name, Shape(*shape))
    dist = exact(shape)
    nbrs = neighbour_cells
    for board, d in dist.items():
        v = h.value(board)
        assert v <= d, (board, v, d)
        if h.consistent:
            b = board.index(0)
            for c in nbrs(b, shape):
                child = list(board)
                child[b], child[c] = child[c], 0
                assert abs(h.value(child) - v) <= 1, (board, child)


def test_walking_distance_of_a_rectangle_reads_rows_and_columns_apart():
    """3x4: the row part counts 3 lines of 4 cells, the column part 4 lines of 3; solving
    a board and its transpose (as a 4x3 board) gives the same h (the parts swap)."""
    rng = random.Random(7)
    h34, h43 = table_free("walking-distance", Shape(3, 4)), table_free("walking-distance", Shape(4, 3))
    T = transpose(Shape(3, 4))
    for _ in range(200):
        board = puzzle.random_board(Shape(3, 4), "blank-first", rng)
        image = [0] * 12
        for c, t in enumerate(board):
            image[T[c]] = T[t]
        assert h34.value(board) == h43.value(image)


@pytest.mark.parametrize("shape", [(3, 3), (2, 5), (5, 2), (3, 4), (4, 3), (4, 4)])
def test_walking_distance_equals_a_plain_search_of_its_states(shape):
    """Every board's walking distance equals reference.walking_distance's (a plain BFS of
    the count matrices, as the table was built before its states were coded compactly),
    and the table holds exactly the states walking_states counts."""
    rng = random.Random(5)
    h = table_free("walking-distance", Shape(*shape))
    for _ in range(300):
        board = puzzle.random_board(Shape(*shape), "blank-first", rng)
        assert h.value(board) == walking_distance(board, shape), board
    rows, cols = shape
    assert len(walking_part(rows, cols)[0]) == walking_states(rows, cols)
    assert len(walking_part(cols, rows)[0]) == walking_states(cols, rows)
    assert len(h.H.wd_codes) == walking_size(Shape(*shape))


def test_walking_distance_counts_its_states_before_building():
    """walking_states is the size the search finds, on parts of every served kind (up to
    4x5's row part; its 6 M column part in the slow test below), and the budget refuses
    5x5, 3x6 and 4x6 by their counts, naming the limit."""
    for lines, k in [(2, 2), (2, 6), (6, 2), (3, 5), (5, 3), (4, 5), (4, 6), (3, 6)]:
        assert len(walking_part(lines, k)[0]) == walking_states(lines, k), (lines, k)
    assert walking_size(Shape(4, 5)) == walking_size(Shape(5, 4)) == 107_712 + 5_977_015
    for shape in ("5x5", "3x6", "6x3", "4x6", "6x6"):
        with pytest.raises(BadInput, match=f"it serves shapes of up to {WALKING_MAX_STATES:,}"):
            table_free("walking-distance", Shape.parse(shape))


def test_walking_distance_keeps_a_large_part_and_rebuilds_a_broken_one(tmp_path, monkeypatch):
    """A part over WALKING_CACHED states is written whole to its cache file and read back
    from it by a later process (here: after the in-process cache is cleared); a truncated
    file is not trusted: the part is built again and the file rewritten."""
    from pdbtool.heuristics import table_free as tf

    monkeypatch.setattr(tf, "walking_cache", lambda lines, k: tmp_path / f"walking-{lines}x{k}.npz")
    tf.walking_part.cache_clear()
    try:
        built = tf.walking_part(6, 2)
        path = tmp_path / "walking-6x2.npz"
        assert len(built[0]) > tf.WALKING_CACHED and path.exists()
        assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temporary left
        tf.walking_part.cache_clear()
        for a, b in zip(tf.walking_part(6, 2), built):
            assert np.array_equal(a, b)
        path.write_bytes(path.read_bytes()[:1000])
        tf.walking_part.cache_clear()
        for a, b in zip(tf.walking_part(6, 2), built):
            assert np.array_equal(a, b)
        assert path.stat().st_size > 1000
        tf.walking_part(3, 3)  # 105 states: not kept
        assert not (tmp_path / "walking-3x3.npz").exists()
    finally:
        tf.walking_part.cache_clear()


@pytest.mark.slow
def test_walking_distance_of_4x5_is_admissible_and_consistent():
    """4x5 (6.1 M states): h of a board and of its transpose (a 5x4 board) agree, h never
    exceeds the length of a random walk that made the board and has its parity, and h
    changes by one across every move."""
    rng = random.Random(45)
    h45, h54 = table_free("walking-distance", Shape(4, 5)), table_free("walking-distance", Shape(5, 4))
    assert len(walking_part(5, 4)[0]) == walking_states(5, 4)
    T = transpose(Shape(4, 5))
    for steps in (10, 30, 60, 200, 1000):
        for _ in range(20):
            board = puzzle.random_walk(Shape(4, 5), steps, "blank-first", rng)
            v = h45.value(board)
            assert v <= steps and (steps - v) % 2 == 0, (board, v, steps)
            image = [0] * 20
            for c, t in enumerate(board):
                image[T[c]] = T[t]
            assert h54.value(image) == v
            b = board.index(0)
            for c in neighbour_cells(b, (4, 5)):
                child = list(board)
                child[b], child[c] = child[c], 0
                assert abs(h45.value(child) - v) == 1, (board, child)


@pytest.mark.parametrize("shape", SMALL)
def test_ida_equals_bfs_on_random_boards(shape, exact):
    rng = random.Random(38)
    for goal in ("blank-first", "blank-last"):
        dist = exact(shape, goal)
        boards = rng.sample(sorted(dist), 6)
        names = ("manhattan", "linear-conflict", "walking-distance", "gaschnig")
        for name in names[:3] if len(boards[0]) > 9 else names:  # Gaschnig: slow beyond 9 cells
            solver = Solver(table_free(name, Shape(*shape)))
            for board in boards:
                r = solver.solve(board, goal).to_dict()
                assert r["length"] == dist[board], (shape, goal, name, board)
                assert (r["rows"], r["cols"]) == shape
                assert_replays(r, board, goal)


# --- every algorithm on rectangles --------------------------------------------------------------

KEYED = ("ida-tt", "astar", "sma", "frontier", "bidir")


@pytest.mark.parametrize("shape", [(2, 3), (3, 2), (2, 4), (4, 2), (2, 5), (5, 2)])
def test_keyed_searches_equal_bfs_on_rectangles(shape, exact):
    """IDA* with a transposition table, A*, SMA*, frontier search and bidirectional search
    (breadth-first from both ends up to 9 cells, MM above) on random boards of each small
    shape, both goals, the goal itself and a board a move away included: every length is
    BFS's, every answer replays."""
    rng = random.Random(61)
    for goal in ("blank-first", "blank-last"):
        dist = exact(shape, goal)
        near = [b for b, d in dist.items() if d <= 1]
        boards = rng.sample(sorted(dist), 4) + near[:2]
        for name in KEYED:
            for heuristic in ("manhattan", "linear-conflict"):
                solver = Solver(table_free(heuristic, Shape(*shape)))
                for board in boards:
                    r = solver.solve(board, goal, algorithm=Algorithm(name)).to_dict()
                    assert r["length"] == dist[board], (shape, goal, name, heuristic, board)
                    assert r["optimal"] and (r["rows"], r["cols"]) == shape
                    assert_replays(r, board, goal)


def test_frontier_search_answers_the_goal_and_a_board_a_move_away():
    """The frontier search's path needs a middle node strictly inside it: at 0 or 1 moves
    it had none, and the 3x3 goal board read an unset middle key (a write out of bounds:
    a crash at exit) while a board a move away was an internal error."""
    solver = Solver(table_free("manhattan", 3))
    for board, length in (((0, 1, 2, 3, 4, 5, 6, 7, 8), 0), ((1, 0, 2, 3, 4, 5, 6, 7, 8), 1)):
        r = solver.solve(board, "blank-first", algorithm=Algorithm("frontier")).to_dict()
        assert r["length"] == length
        assert_replays(r, board, "blank-first")


@pytest.mark.parametrize("rows", range(2, 7))
def test_greedy_solves_every_shape(rows, exact):
    """The constructive solver on every rows x cols board (2 to 6 each), for both goals
    and a goal with the blank inside: every answer replays; on the small shapes it is no
    shorter than BFS's."""
    rng = random.Random(rows)
    for cols in range(2, 7):
        shape = Shape(rows, cols)
        n = shape.cells
        inside = ",".join(map(str, tuple(range(1, n // 2)) + (0,) + tuple(range(n // 2, n))))
        for goal in ("blank-first", "blank-last", inside):
            solver = Solver(table_free("hamming", shape, puzzle.frame(shape, goal).goal_blank))
            for _ in range(6):
                board = puzzle.random_board(shape, goal, rng)
                r = solver.solve(board, goal, algorithm=Algorithm("greedy")).to_dict()
                assert not r["optimal"] and (r["rows"], r["cols"]) == shape
                assert_replays(r, board, goal)
                if n <= 8 and "," not in goal:
                    assert r["length"] >= exact((rows, cols), goal)[board]


def test_keyed_searches_refuse_boards_beyond_two_words():
    """A state key holds up to 25 cells: 4x6 and 6x4 are served, 5x6 is refused naming
    the limit and the searches that take it."""
    for name in KEYED:
        Algorithm(name).check_shape(Shape(4, 6))
        Algorithm(name).check_shape(Shape(6, 4))
        with pytest.raises(BadInput, match=r"boards of up to 25 cells .*, not 5x6; a 5x6 board "
                           r"takes ida, rbfs, wida \(bounded-suboptimal\), greedy \(not optimal\)$"):
            Algorithm(name).check_shape(Shape(5, 6))
    Algorithm("greedy").check_shape(Shape(6, 5))
    with pytest.raises(BadInput, match=r"bfs holds every reachable state of the board "
                       r"\(1,814,400 for 2x5\): boards of up to 9 cells \(3x3, 2x4, 4x2\); a 2x5 "
                       r"board takes ida, ida-tt, astar, rbfs, sma, frontier, bidir, wida"):
        Algorithm("bfs").check_shape(Shape(2, 5))
    with pytest.raises(BadInput) as e:  # it said "use astar", which refuses a 6x6 board too
        Algorithm("bfs").check_shape(Shape(6, 6))
    assert str(e.value).endswith("(3x3, 2x4, 4x2); a 6x6 board takes ida, rbfs, wida "
                                 "(bounded-suboptimal), greedy (not optimal)")


# --- pattern databases on rectangles ----------------------------------------------------------

CAT_2X4 = "# name: 8/2x4-test\n# shape: 2x4\n1,2,3\n4,5,6,7\n"
CAT_3X4 = "# name: 12/3x4-test\n# shape: 3x4\n# strength: 1\n1,2,3,4,5,6\n7,8,9,10,11\n"


@pytest.fixture(scope="module")
def rect_tables(tmp_path_factory):
    """2x4 (3-4) and 3x4 (6-5) zero-aware artifacts, built in seconds."""
    d = tmp_path_factory.mktemp("rect")
    metas = {}
    for text in (CAT_2X4, CAT_3X4):
        cat = catalogue.parse(text)
        metas[cat.shape] = build(cat, d, progress=False)
    return d, metas


def test_info_json_gives_a_rectangle_table_its_rows_and_cols(rect_tables, capsys):
    """`info --json` of a 3x4 table said "size": 3 and "cols": 4, and no rows: read as the
    3x3 puzzle's."""
    from pdbtool.cli.main import main

    d, metas = rect_tables
    assert main(["info", str(metas[Shape(3, 4)].path), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert (info["rows"], info["cols"]) == (3, 4)


def test_a_catalogue_names_its_shape():
    cat = catalogue.parse(CAT_3X4)
    assert cat.shape == (3, 4) and cat.cells == 12
    with pytest.raises(BadInput, match="does not split tiles 1..11"):
        catalogue.parse("# name: x\n# shape: 3x4\n1,2,3\n")
    shipped = catalogue.catalogues()
    assert shipped["15/7-8"].shape == (4, 4)


@pytest.mark.parametrize("tiles", [(1, 2, 3), (4, 5, 6, 7), (2, 5)])
def test_a_rectangles_table_is_its_abstract_bfs(tiles):
    """Every entry of a 2x4 table equals the 0/1-BFS over (placement, blank) states."""
    table = distance_table(tiles, Shape(2, 4), progress=False)
    assert (table == reference_table(tiles, (2, 4))).all()
    assert len(abstract_distances(tiles, (2, 4))) > 0


def test_rectangle_artifact_verifies_and_says_its_shape(rect_tables):
    from pdbtool.verification import verify

    _, metas = rect_tables
    for shape, meta in metas.items():
        assert meta.shape == shape and meta.cols == shape[1]
        report = verify(meta.path)
        assert report.ok, [c for c in report.checks if not c.ok]


def test_pdb_on_a_rectangle_and_its_transpose_equals_bfs(rect_tables, exact):
    """The 2x4 table serves 2x4 boards and, transposed, 4x2 boards: lengths equal BFS."""
    from pdbtool.selection import load_directory

    d, _ = rect_tables
    tables = load_directory(d)
    assert {(2, 4), (4, 2), (3, 4), (4, 3)} <= set(tables.shapes)
    assert tables.heuristics[4, 2].name.endswith("transposed")
    rng = random.Random(3)
    for shape in ((2, 4), (4, 2)):
        h = tables.heuristics[shape]
        solver = Solver(h)
        dist = exact(shape)
        for board in rng.sample(sorted(dist), 40):
            assert h.value(board) <= dist[board]
            r = solver.solve(board, "blank-first").to_dict()
            assert r["length"] == dist[board]
            assert_replays(r, board, "blank-first")


def test_pdb_on_3x4_and_4x3_equals_an_independent_manhattan_search(rect_tables):
    """Random boards: the tables' search and a Manhattan search agree (the tables with fewer
    nodes). Boards 24 random moves out: both equal a breadth-first search from both ends,
    which uses no project code (reference.meet_in_the_middle)."""
    from pdbtool.selection import load_directory

    tables = load_directory(rect_tables[0])
    rng = random.Random(12)
    for shape in (Shape(3, 4), Shape(4, 3)):
        pdb = Solver(tables.heuristics[shape])
        md = Solver(table_free("manhattan", shape))
        for goal in ("blank-last", "blank-first"):
            board = puzzle.random_board(shape, goal, rng)
            a, b = pdb.solve(board, goal), md.solve(board, goal)
            assert a.length == b.length and a.nodes_generated < b.nodes_generated
            assert_replays(a.to_dict(), board, goal)
            for _ in range(3):
                near = puzzle.random_walk(shape, 24, goal, rng)
                exact_length = meet_in_the_middle(near, goal_of(shape, goal), shape)
                assert pdb.solve(near, goal).length == md.solve(near, goal).length == exact_length


def test_a_table_of_every_tile_saturates_where_4_bits_end(tmp_path, exact):
    """2x4's exact table: 3 placements lie more than Manhattan + 28 from the goal; they are
    stored as Manhattan + 28 (admissible, consistent), every other one exactly; the search
    still answers them optimally, and the artifact verifies, exhaustively too."""
    from reference import manhattan

    from pdbtool.selection import load_directory
    from pdbtool.verification import verify

    meta = build(catalogue.parse("# name: 8/2x4-all\n# shape: 2x4\n1,2,3,4,5,6,7\n"), tmp_path,
                 progress=False)
    assert list(meta.build["saturated_entries"].values()) == [3]
    assert verify(meta.path).ok
    report = verify(meta.path, exhaustive=True)  # every entry and move: no descent asked of 14
    assert report.ok, [c for c in report.checks if not c.ok]
    h = load_directory(tmp_path).heuristics[2, 4]
    deep = []
    for board, d in exact((2, 4)).items():
        md = manhattan(board, (2, 4))
        assert h.value(board) == min(d, md + 28), board
        if d > md + 28:
            deep.append(board)
    assert len(deep) == 3
    solver = Solver(h)
    for board in deep:
        assert solver.solve(board, "blank-first").length == exact((2, 4))[board]


# --- the command line and pdbd ------------------------------------------------------------------

def test_the_page_carries_a_rectangles_shape():
    """The animation's trace holds rows and cols; the page sizes its board by them."""
    from test_animate import inlined

    from pdbtool.cli import animate
    from pdbtool.search import trace

    board = puzzle.random_board(Shape(3, 4), "blank-last", random.Random(4))
    t = trace.record(Solver(table_free("walking-distance", Shape(3, 4))), board)
    r = inlined(animate.page(t))["result"]
    assert (r["rows"], r["cols"], r["size"]) == (3, 4, None) and r["board"] == list(board)
    assert_replays(r, board, "blank-last")
    assert "shapeOf(r)" in animate.page(None, live=True)


@pytest.mark.process
def test_solve_shape_json_file_from_stdin(rect_tables):
    d, _ = rect_tables
    rng = random.Random(5)
    boards = [puzzle.random_board(Shape(3, 4), "blank-last", rng) for _ in range(3)]
    p = subprocess.run([sys.executable, "-m", "pdbtool.cli.main", "solve", "--shape", "3x4",
                        "--artifacts", str(d), "--json", "--quiet", "--file", "-"],
                       input="\n".join(" ".join(map(str, b)) for b in boards), text=True,
                       capture_output=True, timeout=300, check=False)
    assert p.returncode == 0, p.stderr
    md = Solver(table_free("manhattan", Shape(3, 4)))
    assert len(p.stdout.splitlines()) == len(boards), p.stdout
    for board, line in zip(boards, p.stdout.splitlines()):
        r = json.loads(line)
        assert r["heuristic"] == "pdb 12/3x4-test" and (r["rows"], r["cols"]) == (3, 4)
        assert r["length"] == md.solve(board).length
        assert_replays(r, board, "blank-last")
    bad = subprocess.run([sys.executable, "-m", "pdbtool.cli.main", "solve", "--shape", "3x5",
                          "1", "2", "3"], text=True, capture_output=True, timeout=300,
                         check=False)
    assert bad.returncode == 2 and "3 tiles do not fill a 3x5 board" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_a_request_takes_the_shape_as_text_or_a_pair_and_refuses_anything_else():
    """SolverClient's shape= (convert.solve_request): "3x4" crashed the client with
    'too many values to unpack'; a shape of another type is refused naming the forms. A
    pair of numpy integers is taken, as the library takes it (geometry.as_shape)."""
    from pdbd.convert import solve_request

    for shape in ("3x4", " 3X4 ", (3, 4), [3, 4], Shape(3, 4), (np.int64(3), np.int32(4))):
        m = solve_request(range(12), shape=shape)
        assert (m.rows, m.cols) == (3, 4), shape
    m = solve_request(range(9))
    assert (m.rows, m.cols) == (0, 0)  # a square: the server takes its side from the count
    with pytest.raises(BadInput, match="not a shape: '3x4x5'"):
        solve_request(range(12), shape="3x4x5")
    for shape in (12, (3, 4, 5), (3.0, 4), (True, 4), "0x4", (-3, 4)):
        with pytest.raises(BadInput, match=r'shape must be ROWSxCOLS text \(e.g. "3x4"\), a '
                                           r"\(rows, cols\) pair"):
            solve_request(range(12), shape=shape)


def test_pdbd_answers_a_shaped_request(rect_tables):
    from serving import daemon_serving

    from pdbd.client import SolverClient
    from pdbtool.selection import load_directory

    board = puzzle.random_board(Shape(4, 3), "blank-last", random.Random(9))
    expected = Solver(table_free("manhattan", Shape(4, 3))).solve(board).length
    with daemon_serving(load_directory(rect_tables[0])) as daemon, \
            SolverClient(daemon.address) as c:
        r = c.solve(board, shape=(4, 3))
        assert r.length == expected and r.shape == (4, 3)
        # ROWSxCOLS text, as --shape takes it (a bare ValueError: too many values to unpack)
        assert c.solve(board, shape="4x3").length == expected
        [(i, b)] = list(c.solve_batch([board], shape="4x3"))
        assert i == 0 and b.length == expected
        assert r.heuristic.startswith("pdb 12/3x4-test")
        assert_replays(r.to_dict(), board, "blank-last")
        with pytest.raises(BadInput, match="not a square"):
            c.solve(board)
        with pytest.raises(BadInput, match="12 tiles do not fill a 3x5 board"):
            c.solve(board, shape=(3, 5))


@pytest.mark.slow
def test_2x6_ida_equals_breadth_first_search_from_both_ends():
    rng = random.Random(26)
    for name in ("linear-conflict", "walking-distance"):
        solver = Solver(table_free(name, Shape(2, 6)))
        for _ in range(3):
            board = puzzle.random_board(Shape(2, 6), "blank-first", rng)
            assert solver.solve(board, "blank-first").length == \
                meet_in_the_middle(board, goal_of((2, 6), "blank-first"), (2, 6))
