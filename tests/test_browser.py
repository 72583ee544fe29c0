"""The animation page in a real browser (headless Chromium; skipped with a message where it
is not installed): the DOM its script leaves (board after step k, counter, chart points,
nodes per iteration) against the solver's own answer; screenshots kept as artifacts under
pytest's tmp dir (their paths are printed: run with -s to see them)."""

import random
import urllib.parse

import pytest

from browser import dump_dom, screenshot
from pdbd.client import SolverClient
from pdbtool import puzzle
from pdbtool.cli import animate
from pdbtool.heuristics.table_free import table_free
from pdbtool.search.algorithms import Algorithm
from pdbtool.search import trace
from pdbtool.search.solver import Solver
from reference import korf100
from serving import running_web

pytestmark = pytest.mark.browser

TWENTY = (1, 6, 2, 3, 7, 4, 5, 8, 0)  # an 8-puzzle 20 moves from the blank-last goal (5 iterations)


def page_url(path, **query) -> str:
    return path.resolve().as_uri() + ("?" + urllib.parse.urlencode(query) if query else "")


def replayed(board, blank_moves: str, k: int) -> tuple[int, ...]:
    return puzzle.apply_blank_moves(tuple(board), blank_moves[:k])


def assert_shows(dom, result: dict, k: int):
    """The page at move k: the board, the counter, g/h/f, one chart point per iteration."""
    assert dom.board("board") == replayed(result["board"], result["blank_moves"], k)
    assert dom.text["counter"].startswith(f"move {k} / {result['length']}")
    assert dom.by_id("counter")["data-step"] == str(k)
    h = result["path_h"][k]
    assert (dom.text["g"], dom.text["h"], dom.text["f"]) == (str(k), str(h), str(k + h))
    points = dom.inside("chart-iterations", "point")
    assert [(int(p["data-bound"]), int(p["data-nodes"])) for p in points] == \
        [(i["bound"], i["nodes"]) for i in result["iterations"]]
    assert len(dom.inside("chart-path", "point")) == result["length"] + 1


@pytest.mark.parametrize("algorithm, says", [
    ("ida", "20 moves (optimal)"),
    ("greedy", "moves (NOT optimal: a constructive solution)"),
    (Algorithm("wida", weight=2.0), "moves (bounded-suboptimal: at most 2 x the optimal length)")])
def test_the_page_says_whether_the_solution_is_optimal(chromium, tmp_path, algorithm, says):
    solver = Solver(table_free("manhattan", 3))
    t = trace.record(solver, TWENTY, algorithm=algorithm)
    dom = dump_dom(chromium, page_url(animate.write(t, tmp_path / "solve.html")))
    assert says in dom.text["summary"], dom.text["summary"]
    assert dom.text["solution-heading"] == ("The optimal solution, move by move"
                                            if algorithm == "ida" else
                                            "A solution (not optimal), move by move")
    assert dom.text["left-legend"] == ("moves left (exact)" if algorithm == "ida" else
                                       "moves left on this path")  # (said "exact" of any path)


def test_twenty_move_8_puzzle_trace_in_the_page(chromium, tmp_path):
    solver = Solver(table_free("manhattan", 3))
    reported = solver.solve(TWENTY)
    assert reported.length == 20
    t = trace.record(solver, TWENTY)
    page = animate.write(t, tmp_path / "solve.html")
    for k in (0, 7, 20):
        dom = dump_dom(chromium, page_url(page, step=k, event=10))
        assert_shows(dom, t.result, k)
    # The search replayed: the page's own count of nodes per iteration is the solver's.
    rows = dom.inside("iterations-list", tag="tr")
    assert [(int(r["data-bound"]), int(r["data-counted"])) for r in rows] == \
        [(i["bound"], i["nodes"]) for i in reported.iterations]
    assert sum(int(r["data-expanded"]) for r in rows) + len(rows) == reported.nodes_expanded  # + roots
    # Node 10 of the search: its board is the one its events lead to.
    assert dom.by_id("s-counter")["data-event"] == "10"
    assert dom.text["s-outcome"] in trace.OUTCOME_NAMES
    assert dom.text["s-g"] == str(t.events["g"][10]) and dom.text["s-f"] == str(t.events["f"][10])
    screenshot(chromium, page_url(page, step=0), tmp_path / "step-0.png")
    screenshot(chromium, page_url(page, step=20, event=t.recorded - 1), tmp_path / "step-20.png")


@pytest.mark.parametrize("side", [4, 5])
def test_larger_boards_in_the_page(side, chromium, tmp_path):
    solver = Solver(table_free("linear-conflict", side))
    board = puzzle.random_walk(side, 24, "blank-last", random.Random(side))
    t = trace.record(solver, board)
    page = animate.write(t, tmp_path / f"solve-{side}.html")
    n = t.result["length"]
    for k in (0, n):
        assert_shows(dump_dom(chromium, page_url(page, step=k)), t.result, k)
    assert replayed(board, t.result["blank_moves"], n) == puzzle.goal_board(side, "blank-last")
    screenshot(chromium, page_url(page, step=n // 2), tmp_path / f"solve-{side}.png")


@pytest.mark.process
def test_live_page_solves_korf_1_through_pdbd(chromium, served, tmp_path):
    _, optimum, board = korf100()[0]
    with running_web(served.address) as url:
        query = {"board": " ".join(map(str, board)), "goal": "blank-first", "solve": "1", "step": optimum}
        dom = dump_dom(chromium, url + "?" + urllib.parse.urlencode(query), budget_ms=20000)
        assert dom.text["status"].startswith(f"Solved: {optimum} moves"), dom.text["status"]
        assert dom.text["error"] == ""
        with SolverClient(served.address) as c:
            expected = c.solve(board, "blank-first").to_dict()
        assert_shows(dom, expected, optimum)
        assert dom.board("board") == tuple(range(16))
        # the shuffle menu offers what this pdbd serves (8/full, 15/5-5-5), no more
        with SolverClient(served.address) as c:
            served_shapes = [f"{s['rows']}x{s['cols']}" for s in c.info()["sizes"]]
        assert sorted(o["value"] for o in dom.inside("size", tag="option")) == sorted(served_shapes)
        assert dom.by_id("size")["data-served"] == " ".join(served_shapes)
        query["step"] = 0
        screenshot(chromium, url + "?" + urllib.parse.urlencode(query), tmp_path / "live.png",
                   budget_ms=20000)


def test_a_position_in_the_address_that_is_no_whole_number_is_rounded_or_ignored(
        chromium, tmp_path):
    """?step=1.5 left the board empty ("move 0 / 0", a TypeError), ?event=abc showed
    "node NaN" and stopped the search's buttons."""
    solver = Solver(table_free("manhattan", 3))
    t = trace.record(solver, TWENTY)
    page = animate.write(t, tmp_path / "solve.html")
    assert_shows(dump_dom(chromium, page_url(page, step=1.5, event="abc")), t.result, 2)
    dom = dump_dom(chromium, page_url(page, step="x", event=2.4))
    assert_shows(dom, t.result, 0)
    assert dom.by_id("s-counter")["data-event"] == "2"
    assert dom.text["s-counter"].startswith("node 3 / ")


def test_a_goal_board_s_tiles_are_home_on_it(chromium, tmp_path):
    """A goal given as a board: the page marked the tiles home as for blank-last (8 of 8
    home at the start, 6 of 8 at the goal)."""
    goal = (1, 2, 3, 4, 5, 6, 0, 7, 8)
    solver = Solver(table_free("manhattan", 3))
    t = trace.record(solver, (1, 2, 3, 4, 5, 6, 7, 8, 0), goal=goal)
    page = animate.write(t, tmp_path / "solve.html")
    n = t.result["length"]
    assert n == 2
    dom = dump_dom(chromium, page_url(page, step=n))
    assert dom.board("board") == goal
    assert len(dom.inside("board", "home")) == 8
    start = dump_dom(chromium, page_url(page, step=0))
    assert len(start.inside("board", "home")) == 6  # 1 to 6 are home, 7 and 8 not yet


@pytest.mark.process
def test_the_live_page_sends_a_goal_board_from_the_address_as_given(chromium, served):
    """?goal=1,2,3,4,0,5,6,7,8 was put in a menu that lacks it (its value then empty),
    and solved as blank-last: 0 moves."""
    with running_web(served.address) as url:
        query = {"board": "1 2 3 4 5 6 7 8 0", "goal": "1,2,3,4,0,5,6,7,8", "solve": "1"}
        dom = dump_dom(chromium, url + "?" + urllib.parse.urlencode(query), budget_ms=20000)
        with SolverClient(served.address) as c:
            expected = c.solve((1, 2, 3, 4, 5, 6, 7, 8, 0), (1, 2, 3, 4, 0, 5, 6, 7, 8))
        assert expected.length > 0
        assert dom.text["status"].startswith(f"Solved: {expected.length} moves"), dom.text["status"]
        query["goal"] = "blankfirst"  # a misspelt name: the server's error, not blank-last
        dom = dump_dom(chromium, url + "?" + urllib.parse.urlencode(query), budget_ms=20000)
        assert dom.text["status"] == "Failed." and "blankfirst" in dom.text["error"]


def test_the_live_page_says_at_once_that_pdbd_does_not_answer(chromium):
    """With no daemon behind it the page said "Idle." until Solve was pressed."""
    from reference import free_port

    with running_web(f"127.0.0.1:{free_port()}") as url:
        dom = dump_dom(chromium, url + "?board=1+2+3+4+5+6+7+8+0", budget_ms=20000)
    assert dom.text["status"].startswith("pdbd does not answer: "), dom.text["status"]
