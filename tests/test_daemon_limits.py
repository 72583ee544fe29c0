"""pdbd's limits: deadlines, cancellation, node budgets, the queue, the message size.

``slow`` serves the 15-puzzle with Manhattan distance on one thread with a queue of one,
so a hard board searches for an hour or more unless the stop flag works: every test that stops a
search also checks that the worker is free again at once.
"""

import collections
import random

import grpc
import pytest

from pdbd.client import SolverClient
from pdbd.v1 import solver_pb2 as pb
from pdbtool import puzzle
from reference import korf_shortest
from serving import HARD, LOYD, info, wait_for, worker_free_within

pytestmark = pytest.mark.process
EASY_WALK = puzzle.random_walk(4, 12, rng=random.Random(7))  # blank-last, 12 moves at most


def test_deadline_stops_the_search(slow, slow_stub, caplog):
    before = info(slow)["counters"]
    caplog.set_level("INFO", logger="pdbd")
    with pytest.raises(grpc.RpcError) as e:
        slow_stub.Solve(pb.SolveRequest(tiles=HARD, goal="blank-first"), timeout=0.3)
    assert e.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    ok, took = worker_free_within(slow, 5)  # (HARD would hold it for an hour or more)
    assert ok, f"worker still busy {took:.3f} s after the deadline"
    # Its log line names the client (gRPC's context.peer() is "" once the deadline passed).
    assert wait_for(lambda: any("stopped: deadline" in r.getMessage() for r in caplog.records), 5)
    line = next(r for r in caplog.records if "stopped: deadline" in r.getMessage())
    assert line.getMessage().endswith("peer=" + line.peer) and line.peer.startswith("ipv4:127.0.0.1:")
    # The single worker takes the next query at once, not after HARD: A* (which the fast
    # lane leaves to the worker) answers an easy board within its deadline.
    # (60 s: A* may compile here first, in a fresh kernel cache)
    r = slow_stub.Solve(pb.SolveRequest(tiles=EASY_WALK, algorithm="astar"), timeout=60)
    assert r.length > 0
    # counted as its line was said (the line is waited for above)
    assert info(slow)["counters"]["cancelled"] == before["cancelled"] + 1


def test_cancel_stops_the_search(slow, slow_stub):
    future = slow_stub.Solve.future(pb.SolveRequest(tiles=HARD, goal="blank-first"))
    assert wait_for(lambda: info(slow)["counters"]["running"] == 1, 30)
    future.cancel()
    ok, took = worker_free_within(slow, 5)
    assert ok, f"worker still busy {took:.3f} s after the cancel"
    with SolverClient(slow.address) as client:  # the worker's, as above: free at once
        assert client.solve(EASY_WALK, deadline=60, algorithm="astar").length > 0


def test_closing_a_stream_stops_the_search(slow):
    with SolverClient(slow.address) as client:
        stream = client.solve_stream(HARD, "blank-first", progress_ms=20)
        progress = [next(stream) for _ in range(8)]
        stream.close()  # stops the search on the server
    assert all(p["event"] == "progress" for p in progress)
    nodes = [p["nodes_generated"] for p in progress]
    assert nodes == sorted(nodes) and nodes[-1] > 0
    assert progress[-1]["bound"] >= 41 and progress[-1]["nodes_per_second"] > 0
    ok, took = worker_free_within(slow, 5)
    assert ok, f"worker still busy {took:.3f} s after the stream was closed"


def test_node_budget_is_resource_exhausted(slow_stub):
    call = slow_stub.Solve.with_call
    with pytest.raises(grpc.RpcError) as e:
        call(pb.SolveRequest(tiles=HARD, goal="blank-first", node_budget=200_000),
             timeout=120)  # a backstop, told apart: DEADLINE_EXCEEDED is not the budget's
    assert e.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "budget" in e.value.details()
    assert ("pdbd-limit", "node-budget") in e.value.trailing_metadata()


def test_unsolvable_board_is_answered_without_search(slow, slow_stub):
    before = info(slow)["counters"]
    with pytest.raises(grpc.RpcError) as e:  # IDA* would never end on it: the deadline's
        slow_stub.Solve(pb.SolveRequest(tiles=LOYD), timeout=10)  # status, not this one
    assert e.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "unsolvable" in e.value.details() and "parit" in e.value.details()
    after = info(slow)["counters"]
    assert after["failed"] == before["failed"] + 1 and after["solved"] == before["solved"]


def test_full_queue_is_resource_exhausted(slow, slow_stub):
    request = pb.SolveRequest(tiles=HARD, goal="blank-first")
    running = slow_stub.Solve.future(request, timeout=60)
    queued = slow_stub.Solve.future(request, timeout=60)
    assert wait_for(lambda: info(slow)["counters"]["in_flight"] == 2, 30)
    with pytest.raises(grpc.RpcError) as e:
        slow_stub.Solve.with_call(request, timeout=10)
    assert e.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "queue full" in e.value.details()
    assert ("pdbd-limit", "queue-full") in e.value.trailing_metadata()
    queued.cancel()
    running.cancel()
    assert wait_for(lambda: info(slow)["counters"]["in_flight"] == 0, 5)


def test_burst_is_answered_or_refused(served, stub):
    instances = korf_shortest(10)
    calls = [(instances[k % 10], stub.Solve.future(
        pb.SolveRequest(tiles=instances[k % 10][2], goal="blank-first"), timeout=60))
        for k in range(300)]
    codes = collections.Counter()
    for (_, optimum, _), call in calls:
        try:
            assert call.result().length == optimum
            codes["OK"] += 1
        except grpc.RpcError as e:
            codes[e.code().name] += 1
    assert set(codes) <= {"OK", "RESOURCE_EXHAUSTED"} and codes["OK"] >= 10, codes
    with SolverClient(served.address) as client:
        assert client.health() == "SERVING"
    assert wait_for(lambda: info(served)["counters"]["in_flight"] == 0, 1)


def test_message_over_the_limit_is_refused(stub):
    with pytest.raises(grpc.RpcError) as e:
        stub.Solve(pb.SolveRequest(tiles=list(range(500_000))))  # ~1.5 MB
    assert e.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "larger than max" in e.value.details()


def test_a_search_that_answers_after_its_deadline_is_counted_as_the_deadline(slow, slow_stub,
                                                                            monkeypatch, caplog):
    """A search that does not look at its stop flag for a while (a first search's compile)
    and answers after the call's deadline: the client saw DEADLINE_EXCEEDED, the server
    logged and counted the call as solved (code OK). Here the search waits until the
    deadline has halted it, then answers, whatever the machine's speed."""
    from pdbtool.search.control import SearchControl
    from pdbtool.search.solver import Solver

    search = Solver.search

    def late(self, prepared, control=None, **kw):
        assert wait_for(lambda: control.reason is not None, 30)  # halted: the deadline
        return search(self, prepared, control=SearchControl(), **kw)  # answers all the same

    monkeypatch.setattr(Solver, "search", late)
    before = info(slow)["counters"]
    caplog.set_level("INFO", logger="pdbd")
    with pytest.raises(grpc.RpcError) as e:  # A*: the fast lane leaves it to the worker
        slow_stub.Solve(pb.SolveRequest(tiles=EASY_WALK, algorithm="astar"), timeout=0.3)
    assert e.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    assert wait_for(lambda: any("stopped: deadline" in r.getMessage() for r in caplog.records), 10)
    after = info(slow)["counters"]
    assert after["solved"] == before["solved"] and after["cancelled"] == before["cancelled"] + 1
