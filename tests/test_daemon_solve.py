"""pdbd's answers, through real stubs on an in-process server on a loopback port.

``served`` loads built 8/full and 15/5-5-5 artifacts: answers are checked against a BFS over
every 8-puzzle state and Korf's published lengths. Malformed boards are refused with
INVALID_ARGUMENT naming the problem, and a board is validated exactly once per RPC.
"""

import random
import threading

import grpc
import pytest

from pdbd.client import ServerUnavailable, SolverClient
from pdbd.v1 import solver_pb2 as pb
from pdbtool import puzzle
from pdbtool.errors import BadInput, Unsolvable
from pdbtool.heuristics.table_free import table_free
from pdbtool.result import SolveResult
from pdbtool.search.solver import Solver
from reference import assert_replays, free_port, korf100, korf_shortest
from serving import EASY8, LOYD, info

pytestmark = pytest.mark.process


@pytest.mark.parametrize("goal", puzzle.GOALS)
def test_8_puzzle_answers_are_optimal_and_replay(served, oracle, goal):
    dist = oracle[goal]
    rng = random.Random(5)
    boards = rng.sample(sorted(dist), 40) + [b for b, d in dist.items() if d == 31]
    served_artifact = info(served)["sizes"][0]["artifact"]
    with SolverClient(served.address) as client:
        for board in boards:
            r = client.solve(board, goal)
            assert r.length == dist[board], board
            assert_replays(r.to_dict(), board, goal)
            assert r.artifact == served_artifact


def test_korf_instances_match_published_lengths(served):
    with SolverClient(served.address) as client:
        for _, optimum, board in korf_shortest(6):
            r = client.solve(board, "blank-first")
            assert r.length == optimum
            assert_replays(r.to_dict(), board, "blank-first")
            assert r.heuristic.startswith("pdb 15/5-5-5")


def test_result_has_the_fields_of_pdbtool_solve_json(served):
    local = Solver(table_free("manhattan", 3)).solve(EASY8).to_dict()
    with SolverClient(served.address) as client:
        remote = client.solve(" ".join(map(str, EASY8)))  # text boards work too
    assert isinstance(remote, SolveResult)
    assert list(remote.to_dict()) == list(local)
    assert remote.moves == [7, 8] and remote.blank_moves == "RR"
    assert remote.iterations and remote.nodes_generated >= 2


def test_stream_sends_progress_then_the_result(slow, monkeypatch):
    """Korf's #4 with Manhattan distance (22.8 M nodes closest first) streams progress while
    it searches, its counts growing, and then its optimal result. However fast the search,
    the events are certain: each iteration the worker searches waits (Solver.search_tasks)
    until an event with the nodes counted so far has reached the client, so the client sees
    at least one count a worker's iteration (it was a race of a third of a second of search
    against the 10 ms between events)."""
    from pdbtool.kernels.ida import GENERATED

    _, optimal, board = korf100()[3]
    received, stalled = [], []  # the progress events' counts; iterations that waited in vain
    arrived = threading.Condition()
    search_tasks = Solver.search_tasks

    def after_an_event(self, root, blank, tasks, bound, budget, stop, counters, *rest):
        if threading.current_thread().name.startswith("pdbd-search") and not stalled:
            counted = int(counters[GENERATED])  # one thread: the job's live counters
            with arrived:
                if not arrived.wait_for(lambda: received and received[-1] >= counted, 20):
                    stalled.append(bound)
        return search_tasks(self, root, blank, tasks, bound, budget, stop, counters, *rest)

    monkeypatch.setattr(Solver, "search_tasks", after_an_event)
    events = []
    with SolverClient(slow.address) as client:
        for event in client.solve_stream(board, "blank-first", progress_ms=10):
            events.append(event)
            if isinstance(event, dict) and not event["queued"]:
                with arrived:
                    received.append(event["nodes_generated"])
                    arrived.notify_all()
    *progress, result = events
    assert all(p["event"] == "progress" for p in progress)
    assert isinstance(result, SolveResult) and result.length == optimal
    assert_replays(result.to_dict(), board, "blank-first")
    assert not stalled, f"no progress reached the client before the iterations at {stalled}"
    nodes = [p["nodes_generated"] for p in progress if not p["queued"]]
    assert len(set(nodes)) >= 3 and nodes[-1] > 0, nodes
    assert nodes == sorted(nodes)


def test_a_stream_handed_on_to_a_busy_pool_says_it_is_queued(slow):
    """A search that outruns the fast lane goes on in the pool; with the pool's one worker
    busy it waits in the queue, and its progress says so (it said queued=False, the time
    searched growing, while nothing ran)."""
    from pdbtool.errors import LimitReached
    from serving import HARD, HARDEST, channel_stub, wait_for

    with SolverClient(slow.address) as client, channel_stub(slow.address) as stub:
        busy = stub.Solve.future(pb.SolveRequest(tiles=HARD, goal="blank-first"), timeout=120)
        events = []
        try:
            assert wait_for(lambda: slow.pool.running == 1, 30)  # past its lane: the worker's
            with pytest.raises(LimitReached, match="deadline"):
                for event in client.solve_stream(HARDEST, deadline=1.5, progress_ms=50):
                    events.append(event)
        finally:
            busy.cancel()
    assert events and all(e["event"] == "progress" for e in events)
    last = events[-1]  # a second on: long past the lane, waiting for the worker
    queued = [e for e in events if e["queued"]]
    assert last["queued"] and len({e["elapsed_seconds"] for e in queued}) == 1, queued
    # ... and the bound of the iteration it resumes in, beside those nodes (it said 0)
    assert queued[0]["nodes_generated"] > 0 and all(e["bound"] >= 40 for e in queued), queued
    # (the seconds it searched in the lane, which its nodes are: not growing while it waits)


def test_concurrent_clients_all_get_correct_answers(served, oracle):
    dist = oracle["blank-last"]
    boards = random.Random(9).sample(sorted(dist), 48)
    instances = korf_shortest(4)
    errors = []

    def client_thread(k):
        try:
            with SolverClient(served.address) as client:
                for board in boards[k::8]:
                    r = client.solve(board)
                    assert r.length == dist[board]
                    assert_replays(r.to_dict(), board, "blank-last")
                _, optimum, board = instances[k % len(instances)]
                assert client.solve(board, "blank-first").length == optimum
        except Exception as e:  # collected: an assert in a thread would be lost
            errors.append(e)

    threads = [threading.Thread(target=client_thread, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


# -- validation ----------------------------------------------------------------------------

BAD = {
    "wrong count": ([1, 2, 3, 4, 5], "not a square board"),
    "duplicates": ([1, 2, 3, 4, 5, 6, 7, 7, 0], "duplicate tile(s) [7]"),
    "out of range": ([1, 2, 3, 4, 5, 6, 7, 9, 0], "out of range"),
    "size not served": (list(range(25)), "no loaded table serves 5x5"),
    "empty": ([], "empty board"),
    "too many tiles": (list(range(10_000)), "not supported"),
    "huge message": (list(range(448 * 448)), "not supported"),  # a 448x448 board, ~600 KB
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_is_invalid_argument(stub, case):
    tiles, words = BAD[case]
    with pytest.raises(grpc.RpcError) as e:
        stub.Solve(pb.SolveRequest(tiles=tiles))
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert words in e.value.details()
    assert len(e.value.details()) <= 400


def test_unknown_goal_is_invalid_argument(stub):
    with pytest.raises(grpc.RpcError) as e:
        stub.Solve(pb.SolveRequest(tiles=EASY8, goal="blank-middle" * 1000))
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "unknown goal" in e.value.details()


def test_server_stays_healthy_after_a_thousand_malformed_requests(served, stub):
    before = info(served)["counters"]
    cases = [tiles for tiles, _ in BAD.values() if len(tiles) < 100] + [[0] * 9, [99] * 16]
    for k in range(1000):
        with pytest.raises(grpc.RpcError) as e:
            stub.Solve(pb.SolveRequest(tiles=cases[k % len(cases)]))
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    with SolverClient(served.address) as client:
        assert client.health() == "SERVING"
        assert client.solve(EASY8).length == 2
    after = info(served)["counters"]
    assert after["failed"] - before["failed"] == 1000
    assert after["in_flight"] == 0


ONCE = {  # tiles, goal, the status the RPC ends with
    "8-puzzle": (EASY8, "blank-last", grpc.StatusCode.OK),
    "15-puzzle": (korf_shortest(1)[0][2], "blank-first", grpc.StatusCode.OK),
    "duplicates": (BAD["duplicates"][0], "blank-last", grpc.StatusCode.INVALID_ARGUMENT),
    "size not served": (BAD["size not served"][0], "blank-last", grpc.StatusCode.INVALID_ARGUMENT),
    "unsolvable": (LOYD, "blank-last", grpc.StatusCode.FAILED_PRECONDITION),
}


@pytest.mark.parametrize("rpc", ["Solve", "SolveStream"])
@pytest.mark.parametrize("case", sorted(ONCE))
def test_one_rpc_validates_the_board_once(stub, monkeypatch, rpc, case):
    tiles, goal, status = ONCE[case]
    calls = []
    validate = puzzle.validate

    def counted(board, shape=None):
        calls.append(tuple(board))
        return validate(board, shape)

    monkeypatch.setattr(puzzle, "validate", counted)
    request = pb.SolveRequest(tiles=tiles, goal=goal)
    try:
        if rpc == "Solve":
            assert stub.Solve(request, timeout=30).length > 0
        else:
            *_, last = stub.SolveStream(request, timeout=30)
            assert last.result.length > 0
        code = grpc.StatusCode.OK
    except grpc.RpcError as e:
        code = e.code()
    assert code == status
    assert calls == [tuple(tiles)], f"{rpc} validated the board {len(calls)} times"


# -- the client ----------------------------------------------------------------------------

def test_client_raises_pdbtool_errors(served):
    with SolverClient(served.address) as client:
        with pytest.raises(BadInput, match="duplicate"):
            client.solve([1, 1, 2, 3, 4, 5, 6, 7, 0])
        with pytest.raises(BadInput, match="not an integer"):
            client.solve("1 2 x")
        with pytest.raises(BadInput, match="500,000 tiles: a board has at most 400"):
            client.solve(list(range(500_000)))  # refused here, not by the 1 MiB transport limit
        with pytest.raises(Unsolvable, match="parity|parities"):
            client.solve([1, 2, 3, 4, 5, 6, 8, 7, 0])
    with SolverClient(f"127.0.0.1:{free_port()}") as client:
        with pytest.raises(ServerUnavailable, match="cannot reach pdbd"):
            client.solve(EASY8, deadline=2)


def test_a_port_held_by_a_server_not_answering_yet_is_said_to_be_starting(monkeypatch):
    """What a client meets while a pdbd compiles its kernels (its port bound, no answer):
    the connection times out, and the error says the daemon may still be starting. The
    channel's connect timeout is cut from gRPC's 20 s to half a second for the test."""
    import socket

    from pdbd import client as client_module

    monkeypatch.setattr(client_module, "RECONNECT", client_module.RECONNECT + [
        ("grpc.min_reconnect_backoff_ms", 500)])
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # connections are accepted by the kernel, and never answered
        with SolverClient(f"127.0.0.1:{silent.getsockname()[1]}") as client:
            with pytest.raises(ServerUnavailable, match="has not answered yet: a pdbd compiling"):
                client.solve(EASY8, deadline=30)


def test_a_table_found_wrong_in_a_search_is_unavailable_and_not_blamed_on_a_cluster(
        stub, monkeypatch, caplog):
    """A table damaged behind valid checksums, found wrong by the search (Solver._damaged):
    UNAVAILABLE naming it, and the log line says the solve failed, not that a cluster did
    (the daemon searched here; the review found 'failed on the cluster' on this path)."""
    def damaged(self, board_bf, depth=None):
        raise self._damaged("its entries at the start and at a neighbour of it are more "
                            "than a move apart")

    monkeypatch.setattr(Solver, "root", damaged)
    with caplog.at_level("ERROR", logger="pdbd"), pytest.raises(grpc.RpcError) as e:
        stub.Solve(pb.SolveRequest(tiles=EASY8), timeout=30)
    assert e.value.code() == grpc.StatusCode.UNAVAILABLE
    assert "the table is damaged, run pdbtool verify" in e.value.details()
    lines = [r.getMessage() for r in caplog.records if r.name == "pdbd"]
    assert any("failed: heuristic" in line for line in lines), lines
    assert not any("cluster" in line for line in lines), lines
