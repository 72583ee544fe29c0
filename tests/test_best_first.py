"""SMA*, frontier search and bidirectional search (search/best_first.py) beyond the BFS
oracle of test_algorithms.py: SMA* in little memory (dropping states, still optimal; a clear
limit when the path cannot be held), MM against the oracle, the 15-puzzle against
breadth-first search from both ends and Korf's published lengths, the memory each holds,
the command line and the daemon."""

import json
import random
from types import SimpleNamespace

import pytest

from pdbtool import puzzle
from pdbtool.errors import BadInput, LimitReached
from pdbtool.heuristics.table_free import table_free
from pdbtool.loading import load_heuristic
from pdbtool.search import best_first
from pdbtool.search.algorithms import Algorithm
from pdbtool.search.control import SearchControl
from pdbtool.search.solver import Solver
from reference import assert_replays, korf_shortest, meet_in_the_middle

NEW = ("sma", "frontier", "bidir")


def boards8(k, seed):
    rng = random.Random(seed)
    return [puzzle.random_board(3, "blank-first", rng) for _ in range(k)]


def run(solver, board, name, max_memory, control=None):
    """The runner itself, with a memory below the command line's 64K floor."""
    return best_first.search(solver, solver.prepare(board, "blank-first"),
                             SimpleNamespace(name=name, max_memory=max_memory),
                             control or SearchControl(budget=20_000_000))


@pytest.mark.parametrize("memory", (3_000, 1 << 16))
def test_sma_in_little_memory_equals_bfs_and_drops_states(memory, oracle8):
    """64K (885 nodes) and 3,000 bytes (40 nodes: a 39-move path at most) on 300 boards."""
    solver = Solver(table_free("manhattan", 3))
    dropped = reexpanded = 0
    for b in boards8(300, 31):
        r = run(solver, b, "sma", memory)
        assert r.length == oracle8[b] and r.optimal and r.algorithm == "sma"
        assert_replays(r.to_dict(), b, "blank-first")
        assert r.peak_memory_bytes <= memory and r.to_dict()["dropped"] == r.dropped
        dropped += r.dropped
        reexpanded += r.reexpanded
    assert dropped > 1000 and reexpanded > 1000


def test_sma_says_when_the_path_does_not_fit(oracle8):
    solver = Solver(table_free("manhattan", 3))
    far = next(b for b in boards8(400, 32) if oracle8[b] >= 27)
    with pytest.raises(LimitReached, match=r"sma: the optimal path does not fit in the memory limit of 2,000 bytes \(27 nodes") as e:
        run(solver, far, "sma", 2_000)  # 27 nodes: a path of 26 moves at most
    assert e.value.exit_code == 4 and e.value.limit == "memory"
    with pytest.raises(LimitReached, match="budget"):
        Solver(table_free("manhattan", 4)).solve(korf_shortest(1)[0][2], "blank-first",
                                                 control=SearchControl(budget=10_000),
                                                 algorithm=Algorithm("sma", max_memory=1 << 16))


def test_mm_equals_bfs_on_the_8_puzzle(oracle8):
    """MM (the bidirectional search of boards above 3x3) run on 3x3 boards."""
    for name in ("manhattan", "gaschnig"):
        solver = Solver(table_free(name, 3))
        for b in boards8(150, 33):
            r = best_first.mm(solver, solver.prepare(b, "blank-first"),
                              SimpleNamespace(name="bidir", max_memory=1 << 24), SearchControl())
            assert r.length == oracle8[b] and r.algorithm == "bidir" and "MM" in r.note
            assert_replays(r.to_dict(), b, "blank-first")


def test_frontier_holds_less_than_astar_and_says_how_it_rebuilt_the_path(oracle8):
    solver = Solver(table_free("manhattan", 3))
    hard = [b for b in boards8(200, 34) if oracle8[b] >= 24][:10]
    peaks = {name: max(solver.solve(b, "blank-first", algorithm=name).peak_memory_bytes for b in hard)
             for name in ("astar", "frontier")}
    assert peaks["frontier"] < peaks["astar"]
    r = solver.solve(hard[0], "blank-first", algorithm="frontier")
    assert "divide and conquer" in r.note and "frontier runs" in r.note
    lc = Solver(table_free("linear-conflict", 3)).solve(hard[0], "blank-first", algorithm="frontier")
    assert lc.heuristic == "manhattan" and "consistent" in lc.note and lc.length == oracle8[hard[0]]


def test_15_puzzle_walks_against_ida(art_dir):
    """Random walks from the goal (28-35 moves, no move undone: 20 to 32 from it) with
    15/5-5-5: IDA* and every new algorithm (bidir is MM here) give the exact length,
    breadth-first from both ends (reference.meet_in_the_middle, no project code), in both
    goal conventions. (They were compared with IDA*'s length alone, on walks that ended
    5 to 24 moves out, where the table's h at the start was mostly the answer.)"""
    solver = Solver(load_heuristic(art_dir / "15-5-5-5.h5"))
    rng = random.Random(35)
    below = 0  # boards whose h at the start is below their length
    for goal in ("blank-first", "blank-last"):
        target = tuple(range(16)) if goal == "blank-first" else tuple(range(1, 16)) + (0,)
        for _ in range(4):
            b = puzzle.random_walk(4, rng.randrange(28, 36), goal, rng)
            optimal = meet_in_the_middle(b, target, 4)
            r = solver.solve(b, goal)
            assert r.length == optimal, b
            below += r.initial_h < optimal
            for name in NEW:
                r = solver.solve(b, goal, algorithm=Algorithm(name, max_memory=1 << 26))
                assert r.length == optimal, (name, b)
                assert_replays(r.to_dict(), b, goal)
    assert below >= 4


def test_sma_64k_on_korf_shortest_with_a_small_table(art_dir):
    """The bar's run with the quick 15/5-5-5 table (the 6-6-3 one is in the slow test)."""
    solver = Solver(load_heuristic(art_dir / "15-5-5-5.h5"))
    dropped = 0
    for _, optimal, board in korf_shortest(5):
        r = solver.solve(board, "blank-first", algorithm=Algorithm("sma", max_memory=64 << 10))
        assert r.length == optimal and r.peak_memory_bytes <= 64 << 10
        dropped += r.dropped
    assert dropped > 0


@pytest.mark.slow
def test_sma_64k_on_korf_shortest_with_6_6_3(tmp_path):
    """Issue 39's bar: 64K answers Korf's 5 shortest optimally with 15/6-6-3 (A* holds
    1.8 MB on #16), and says how many states it dropped."""
    from pdbtool.tables.builder import build

    build("15/6-6-3", tmp_path, progress=False)
    solver = Solver(load_heuristic(tmp_path / "15-6-6-3.h5"))
    for _, optimal, board in korf_shortest(5):
        r = solver.solve(board, "blank-first", algorithm=Algorithm("sma", max_memory=64 << 10))
        assert r.length == optimal and r.dropped > 0 and "dropped" in r.note


def test_memory_options_and_the_servers_cap():
    for name in NEW:
        a, lowered = Algorithm(name, max_memory=1 << 30).within(1 << 20)
        assert lowered and a.max_memory == 1 << 20
        Algorithm(name).check_shape(5)
        with pytest.raises(BadInput, match=r"up to 25 cells \(5x5, 4x6, 6x4\), not 6x6"):
            Algorithm(name).check_shape(6)


@pytest.mark.process
def test_cli_and_daemon_run_them(stub, oracle8):
    from pdbd.convert import result_from_message, solve_request
    from test_cli import run as cli

    b = boards8(1, 36)[0]
    for name in NEW:
        r = result_from_message(stub.Solve(solve_request(b, "blank-first", algorithm=Algorithm(name))))
        assert r.algorithm == name and r.optimal and r.length == oracle8[b]
    p = cli("solve", "--algorithm", "sma", "--max-memory", "64K", "--heuristic", "manhattan",
            "--goal", "blank-first", "--json", " ".join(map(str, b)))
    out = json.loads(p.stdout)
    assert p.returncode == 0 and out["algorithm"] == "sma" and out["length"] == oracle8[b]
    assert out["dropped"] >= 0 and "re-expansions" in out["note"]
