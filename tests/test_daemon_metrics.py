"""pdbd's Prometheus metrics (--metrics): calls by method and code, searches (seconds,
nodes), refusals by reason, the queue, the tables served, the process; each daemon in a
registry of its own."""

import logging

import grpc
import pytest

from pdbd.client import SolverClient
from pdbd.v1 import solver_pb2 as pb
from pdbd.v1 import solver_pb2_grpc as pb_grpc
from pdbtool.errors import BadInput
from reference import free_port
from serving import (EASY8, EASY15, HARD, info, pdbd_process, running_daemon, sample, scrape,
                     wait_for, worker_free_within)

pytestmark = pytest.mark.process

SOLVE = "pdbd.v1.Solver/Solve"


@pytest.fixture(scope="module")
def metrics_port(served):
    port = served.metrics.serve("127.0.0.1", 0)
    yield port
    served.metrics.close()


def test_calls_searches_and_tables_are_counted(served, metrics_port):
    before = scrape(metrics_port)
    with SolverClient(served.address) as c:
        assert c.solve(EASY8).length == 2
        assert c.solve(EASY15).length == 2
        with pytest.raises(BadInput):
            c.solve([1, 2, 3])
        assert c.health() == "SERVING"
    m = scrape(metrics_port)

    def grew(name, **labels):
        return sample(m, name, **labels) - sample(before, name, **labels)

    assert grew("pdbd_requests_total", method=SOLVE, code="OK") == 2
    assert grew("pdbd_requests_total", method=SOLVE, code="INVALID_ARGUMENT") == 1
    assert grew("pdbd_requests_total", method="grpc.health.v1.Health/Check", code="OK") == 1
    for size in ("3x3", "4x4"):
        assert grew("pdbd_search_duration_seconds_count", size=size) == 1
        assert grew("pdbd_search_nodes_count", size=size) == 1
        assert grew("pdbd_nodes_generated_total", size=size) > 0
    assert sample(m, "pdbd_searches_in_flight") == 0 and sample(m, "pdbd_queue_depth") == 0
    assert sample(m, "pdbd_search_threads") == 2 and sample(m, "pdbd_max_queue") == 8
    tables = {dict(labels)["partition"]: dict(labels) for (name, labels) in m
              if name == "pdbd_table_info"}
    served_info = {a["partition"]: a for a in info(served)["artifacts"]}
    assert set(tables) == set(served_info) == {"8/full", "15/5-5-5"}
    for partition, labels in tables.items():
        assert labels["version"] == served_info[partition]["version"]
        assert sample(m, "pdbd_table_bytes", **labels) == served_info[partition]["bytes"]
        assert 0 < sample(m, "pdbd_table_resident_bytes", **labels) <= served_info[partition]["bytes"]
    assert sample(m, "process_resident_memory_bytes") > 0


@pytest.mark.parametrize("algorithm", ["astar", "bfs", "rbfs", "frontier", "ida-tt"])
def test_every_algorithms_nodes_are_counted(served, metrics_port, algorithm):
    """The node counters hold every search's nodes, not only IDA*'s: those of A* and the
    others were once 0 (their kernels publish counts only now and then, bfs never)."""
    before = scrape(metrics_port)
    with SolverClient(served.address) as c:
        r = c.solve((8, 6, 7, 2, 5, 4, 3, 0, 1), algorithm=algorithm)
    assert r.length == 31 and r.nodes_generated > 0
    m = scrape(metrics_port)
    assert (sample(m, "pdbd_nodes_generated_total", size="3x3")
            - sample(before, "pdbd_nodes_generated_total", size="3x3")) == r.nodes_generated


def test_a_stream_read_to_its_result_is_counted_ok(served, metrics_port):
    """pdbd web reads a SolveStream up to its result and stops: the client cancelled the
    call before its status came, and answered solves were counted CANCELLED."""
    stream = "pdbd.v1.Solver/SolveStream"
    before = scrape(metrics_port)
    with SolverClient(served.address) as c:
        for _ in range(5):
            result = next(e for e in c.solve_stream((8, 6, 7, 2, 5, 4, 3, 0, 1))
                          if not isinstance(e, dict))
            assert result.length == 31

    def grew() -> dict:
        m = scrape(metrics_port)
        return {code: sample(m, "pdbd_requests_total", method=stream, code=code)
                - sample(before, "pdbd_requests_total", method=stream, code=code)
                for code in ("OK", "CANCELLED")}

    assert wait_for(lambda: sum(grew().values()) == 5, 5)  # (counted as each call ends)
    assert grew() == {"OK": 5, "CANCELLED": 0}


def test_a_search_the_fast_lane_handed_on_and_that_ended_waiting_is_counted():
    """A search past the fast lane's nodes waits in the queue; its deadline passed there:
    it ran (the lane's part) but was missing from the searches' counts and nodes."""
    from pdbd.jobs import Lane
    from pdbtool.heuristics.table_free import table_free
    from pdbtool.selection import TableSet

    daemon = running_daemon(TableSet({4: table_free("manhattan", 4)}), threads=1, max_queue=2,
                            lane=Lane(slots=1, per_client=2, nodes=1000))
    port = daemon.metrics.serve("127.0.0.1", 0)
    try:
        with grpc.insecure_channel(daemon.address) as channel:
            stub = pb_grpc.SolverStub(channel)
            request = pb.SolveRequest(tiles=HARD, goal="blank-first")
            running = stub.Solve.future(request, timeout=60)  # the pool's one thread
            assert wait_for(lambda: info(daemon)["counters"]["running"] == 1, 5)
            before = scrape(port)
            with pytest.raises(grpc.RpcError) as e:  # 1,000 nodes in the lane, then queued
                stub.Solve(request, timeout=2)
            assert e.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED

            def counted() -> float:
                return (sample(scrape(port), "pdbd_search_nodes_count", size="4x4")
                        - sample(before, "pdbd_search_nodes_count", size="4x4"))

            assert wait_for(lambda: counted() == 1, 5), counted()
            running.cancel()
    finally:
        daemon.metrics.close()
        daemon.stop(grace=1)


def test_the_queue_and_refusals(slow, slow_stub, caplog, monkeypatch):
    """One thread, a queue of one: a hard board runs, a second waits, a third is refused,
    and the log says so (a refusal for load was only counted: no line at any level)."""
    from pdbd.rpc import RateLimitedLog

    monkeypatch.setattr(slow.servicer, "notes", RateLimitedLog())  # no earlier test's line
    caplog.set_level(logging.WARNING, "pdbd")
    port = slow.metrics.serve("127.0.0.1", 0)
    try:
        request = pb.SolveRequest(tiles=HARD, goal="blank-first")
        running = slow_stub.Solve.future(request, timeout=30)
        assert wait_for(lambda: info(slow)["counters"]["running"] == 1, 5)
        queued = slow_stub.Solve.future(request, timeout=30)
        assert wait_for(lambda: sample(scrape(port), "pdbd_queue_depth") == 1, 5)
        with pytest.raises(grpc.RpcError) as e:
            slow_stub.Solve(request, timeout=30)
        assert e.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        refusals = [r.getMessage() for r in caplog.records if "search refused" in r.getMessage()]
        assert len(refusals) == 1 and refusals[0].startswith(
            "search refused (queue-full): queue full: 1 search running and 1 waiting; retry "
            "later; peer=ipv"), refusals
        m = scrape(port)
        assert sample(m, "pdbd_searches_in_flight") == 2
        assert sample(m, "pdbd_overloaded") == 1
        assert sample(m, "pdbd_rejected_total", reason="queue-full") == 1
        assert sample(m, "pdbd_requests_total", method=SOLVE, code="RESOURCE_EXHAUSTED") == 1
        running.cancel(), queued.cancel()
        assert worker_free_within(slow, 2)[0]
        assert wait_for(lambda: sample(scrape(port), "pdbd_requests_total", method=SOLVE,
                                       code="CANCELLED") == 2, 5)
        m = scrape(port)
        assert sample(m, "pdbd_searches_in_flight") == 0 and sample(m, "pdbd_overloaded") == 0
        assert sample(m, "pdbd_search_duration_seconds_count", size="4x4") >= 1
    finally:
        slow.metrics.close()


def test_metrics_beyond_loopback_are_refused_unless_insecure(tmp_path):
    proc = pdbd_process("serve", "--artifacts", str(tmp_path), "--listen",
                        f"127.0.0.1:{free_port()}", "--metrics", f"0.0.0.0:{free_port()}")
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 1 and "refusing to serve metrics on 0.0.0.0" in err, err
    assert "Traceback" not in err


def test_a_clients_deadline_is_counted_as_a_deadline_not_a_cancel(slow, slow_stub):
    """The client ends a call at its own deadline, a little before the server's copy of it:
    the server took that for a cancel (CANCELLED in the log and the metrics, a stream
    'abandoned'); a SolveBatch's call too. The searches run until the deadline (a hard board, Manhattan distance,
    hours), so the deadline is what ends them."""
    port = slow.metrics.serve("127.0.0.1", 0)
    try:
        before = scrape(port)
        abandoned = info(slow)["counters"]["abandoned"]
        request = pb.SolveRequest(tiles=HARD, goal="blank-first")
        with pytest.raises(grpc.RpcError) as e:
            slow_stub.Solve(request, timeout=1.5)
        assert e.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        assert worker_free_within(slow, 5)[0]
        with pytest.raises(grpc.RpcError) as e:
            for _ in slow_stub.SolveStream(request, timeout=1.5):
                pass
        assert e.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        assert worker_free_within(slow, 5)[0]
        batch = pb.BatchRequest(items=[pb.BatchItem(id=1, request=request)])
        with pytest.raises(grpc.RpcError) as e:  # (a SolveBatch's was counted CANCELLED)
            for _ in slow_stub.SolveBatch(iter([batch]), timeout=1.5):
                pass
        assert e.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        assert worker_free_within(slow, 5)[0]

        def grew(method, code):
            return (sample(scrape(port), "pdbd_requests_total", method=method, code=code)
                    - sample(before, "pdbd_requests_total", method=method, code=code))

        assert wait_for(lambda: grew(SOLVE, "DEADLINE_EXCEEDED") == 1, 5)
        assert wait_for(lambda: grew("pdbd.v1.Solver/SolveStream", "DEADLINE_EXCEEDED") == 1, 5)
        assert wait_for(lambda: grew("pdbd.v1.Solver/SolveBatch", "DEADLINE_EXCEEDED") == 1, 5)
        assert grew(SOLVE, "CANCELLED") == grew("pdbd.v1.Solver/SolveStream", "CANCELLED") == 0
        assert grew("pdbd.v1.Solver/SolveBatch", "CANCELLED") == 0
        assert info(slow)["counters"]["abandoned"] == abandoned
    finally:
        slow.metrics.close()


def test_a_table_refused_is_a_gauge_and_takes_the_solver_out_of_rotation(served_dir):
    """A served file changed on disk: its searches are refused until a reload; the metrics
    said nothing but its residency (0), and health stayed SERVING."""
    from pdbd.server import reload_tables
    from pdbd.wire import SERVICE_NAME
    from pdbtool.selection import load_directory
    import subprocess
    import sys

    from serving import daemon_serving

    with daemon_serving(load_directory(served_dir), threads=1) as daemon:
        port = daemon.metrics.serve("127.0.0.1", 0)
        try:
            def refused(partition):
                m = scrape(port)
                [labels] = [dict(k[1]) for k in m if k[0] == "pdbd_table_info"
                            and dict(k[1])["partition"] == partition]
                return sample(m, "pdbd_table_refused", **labels)

            with SolverClient(daemon.address) as c:
                assert refused("8/full") == 0 and c.health(SERVICE_NAME) == "SERVING"
                # Another process truncates it; this one handles the lease's break on its
                # main thread, which must run Python meanwhile (here: wait_for's steps)
                writer = subprocess.Popen([sys.executable, "-c", "import os, sys; "
                                           "os.truncate(sys.argv[1], 1000)",
                                           str(served_dir / "8-full.h5")])
                assert wait_for(lambda: refused("8/full") == 1, 30)
                assert writer.wait(30) == 0
                assert refused("15/5-5-5") == 0
                assert wait_for(lambda: c.health(SERVICE_NAME) == "NOT_SERVING", 10)
                assert c.health() == "SERVING"  # alive: a liveness probe must not restart it
                (served_dir / "8-full.h5").unlink()
                reload_tables(daemon, served_dir)  # serves 4x4 only now: nothing refused
                assert c.health(SERVICE_NAME) == "SERVING"
        finally:
            daemon.metrics.close()


@pytest.mark.parametrize("method", [SOLVE, "grpc.health.v1.Health/Check"])
def test_a_request_over_the_message_limit_is_counted_as_too_large(method, caplog):
    """A request of 3 MiB (over the server's 1 MiB, under gRPC's 4 MiB): refused
    RESOURCE_EXHAUSTED, counted so and as a rejection (request-too-large), and logged.
    gRPC's own limit (1 MiB) refused it before the handler ran, which saw a call that
    ended: counted CANCELLED (or INVALID_ARGUMENT, "no request message was sent")."""
    from pdbd.server import MAX_MESSAGE_BYTES
    from pdbtool.heuristics.table_free import table_free
    from pdbtool.selection import TableSet

    from serving import daemon_serving

    size = 3 << 20  # (over gRPC's own limit, pdbd.server.TRANSPORT_MESSAGE_BYTES: CANCELLED)
    assert size > MAX_MESSAGE_BYTES
    tables = TableSet({4: table_free("manhattan", 4)})
    with daemon_serving(tables, threads=1, max_queue=1, warm=False, prefault=False) as daemon:
        port = daemon.metrics.serve("127.0.0.1", 0)
        try:
            with grpc.insecure_channel(daemon.address) as channel:
                call = channel.unary_unary(f"/{method}")  # bytes in, bytes out
                with pytest.raises(grpc.RpcError) as e:
                    call(bytes(size), timeout=30)
            assert e.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert wait_for(lambda: sample(scrape(port), "pdbd_requests_total", method=method,
                                           code="RESOURCE_EXHAUSTED") == 1, 5)
            m = scrape(port)
            assert sample(m, "pdbd_rejected_total", reason="request-too-large") == 1
            for code in ("CANCELLED", "INVALID_ARGUMENT"):
                assert sample(m, "pdbd_requests_total", method=method, code=code) == 0
            counters = info(daemon)["counters"]  # a search's request that failed
            assert counters["failed"] == counters["requests"] == (method == SOLVE)
            assert counters["rejected"] == 0  # (refusals for load)
            assert "request too large" in e.value.details()
            assert "larger than max" in e.value.details()  # what SolverClient reads
        finally:
            daemon.metrics.close()
    lines = [r.getMessage() for r in caplog.records if "larger than the limit" in r.getMessage()]
    assert len(lines) == 1 and lines[0].startswith(f"{method} from "), lines
    assert f"request of {size} bytes refused" in lines[0]
    assert f"{MAX_MESSAGE_BYTES} bytes a message" in lines[0]
