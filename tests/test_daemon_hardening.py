"""pdbd under attack and accident (issue 13): undecodable requests cost nothing, no
lockout, no starvation. Servers are started here on 127.0.0.1 with the limits each test needs.
"""

import random
import signal
import threading
import time

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from pdbd.client import SolverClient
from pdbd.server import READING_TOTAL, Connections
from pdbd.servicer import Limits
from pdbd.v1 import solver_pb2 as pb
from pdbtool import puzzle
from pdbtool.heuristics.table_free import table_free
from pdbtool.selection import TableSet
from reference import free_port
from serving import (EASY8, EASY15, HARD, UNDECODABLE, channel_stub, info, never_sending,
                     pdbd_process, rss_kib, running_daemon, wait_for)

METHODS = {  # path -> (request streaming?, response streaming?)
    "/pdbd.v1.Solver/Solve": (False, False),
    "/pdbd.v1.Solver/SolveStream": (False, True),
    "/pdbd.v1.Solver/Info": (False, False),
    "/grpc.health.v1.Health/Check": (False, False),
    "/grpc.health.v1.Health/Watch": (False, True),
}


def manhattan(**options):
    return running_daemon(TableSet({4: table_free("manhattan", 4)}), **options)


def raw_call(channel, path, data: bytes, timeout=5.0):
    """Send raw bytes as the request of ``path``; the status code it ends with."""
    streaming = METHODS[path][1]
    try:
        if streaming:
            for _ in channel.unary_stream(path)(data, timeout=timeout):
                pass
        else:
            channel.unary_unary(path)(data, timeout=timeout)
    except grpc.RpcError as e:
        return e.code(), e.details()
    return grpc.StatusCode.OK, ""


def health_status(address, service="", timeout=2.0):
    with grpc.insecure_channel(address) as ch:
        reply = health_pb2_grpc.HealthStub(ch).Check(
            health_pb2.HealthCheckRequest(service=service), timeout=timeout)
    return health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)


# -- 1. undecodable requests ----------------------------------------------------------------

@pytest.mark.process
@pytest.mark.parametrize("path", sorted(METHODS))
def test_undecodable_bytes_are_invalid_argument_on_every_method(served, path):
    before = info(served)["counters"]
    with grpc.insecure_channel(served.address) as ch:
        for data in UNDECODABLE:
            code, details = raw_call(ch, path, data)
            assert code == grpc.StatusCode.INVALID_ARGUMENT, (data, code, details)
            assert "does not decode" in details
    after = info(served)["counters"]
    assert after["undecodable"] - before["undecodable"] == len(UNDECODABLE)
    # requests counts the searches asked for (Solve, SolveStream, a batch's boards) only
    searches = path.rsplit("/", 1)[-1] in ("Solve", "SolveStream", "SolveBatch")
    assert after["requests"] - before["requests"] == (len(UNDECODABLE) if searches else 0)


@pytest.mark.process
@pytest.mark.parametrize("budget", [1 << 63, (1 << 64) - 1])
def test_out_of_range_node_budget_is_invalid_argument(stub, budget):
    with pytest.raises(grpc.RpcError) as e:
        stub.Solve(pb.SolveRequest(tiles=EASY8, node_budget=budget))
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "node_budget" in e.value.details() and "2^63" in e.value.details()
    assert "0: no limit" in e.value.details()  # (it said "from 1", where 0 is no limit)
    assert stub.Solve(pb.SolveRequest(tiles=EASY8, node_budget=(1 << 63) - 1)).length == 2


def send_undecodable(channel, n: int, batch: int = 32) -> None:
    call = channel.unary_unary("/pdbd.v1.Solver/Solve")
    for start in range(0, n, batch):
        futures = [call.future(UNDECODABLE[k % 4], timeout=10) for k in range(batch)]
        for f in futures:
            assert f.code() == grpc.StatusCode.INVALID_ARGUMENT


@pytest.mark.process
def test_undecodable_requests_leave_no_memory_behind(art_dir):
    """gRPC's own deserializer failure path keeps ~20 KB per message: 10,000 of them would
    grow the server by ~200 MB. Parsed by pdbd, they cost nothing that stays."""
    port = free_port()
    proc = pdbd_process("serve", "--artifacts", str(art_dir), "--listen", f"127.0.0.1:{port}",
                        "--threads", "1", "--no-prefault")
    try:
        address = f"127.0.0.1:{port}"
        with SolverClient(address) as client:
            client.wait_serving(60)
        with grpc.insecure_channel(address) as ch:
            send_undecodable(ch, 32 * 40)  # warm: allocator pools, handler threads
            before = rss_kib(proc.pid)
            send_undecodable(ch, 32 * 320)  # 10,240
            grown = rss_kib(proc.pid) - before
        with SolverClient(address) as client:
            assert client.health() == "SERVING" and client.solve(EASY8).length == 2
            assert client.info()["counters"]["undecodable"] == 32 * 360
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert grown < 4 * 1024, f"RSS grew by {grown} KiB over 10,240 undecodable requests"
    # One line per 10 s, not one per message, and never a traceback.
    assert 1 <= err.count("does not decode") <= 5 and "Traceback" not in err


# -- 2. no lockout --------------------------------------------------------------------------

@pytest.mark.process
def test_health_answers_while_calls_never_send_their_request():
    """Health checks are answered SERVING while 70 calls never send their request (64 held:
    the server's total of reading calls). The
    server holds those up to its request timeout (10 s), beyond each check's deadline (5 s):
    a check starved behind them would fail, however loaded the machine. (How fast checks
    are answered is measured, not tested: scripts/bench daemon, '50 never-sending calls:
    health SERVING within 100 ms'.)"""
    daemon = manhattan(threads=2, max_queue=8,
                       connections=Connections(request_timeout=10))
    release = threading.Event()
    try:
        with grpc.insecure_channel(daemon.address) as ch:
            held = [never_sending(ch, "/pdbd.v1.Solver/Solve", release) for _ in range(50)]
            held += [never_sending(ch, "/pdbd.v1.Solver/Info", release) for _ in range(10)]
            refl = reflection_pb2_grpc.ServerReflectionStub(ch)
            idle = [refl.ServerReflectionInfo(iter(release.wait, True), timeout=60)
                    for _ in range(10)]  # (the timeout: a backstop, told apart below)
            # held, but for the oldest beyond the server's total of reading calls (64)
            assert wait_for(lambda: len(daemon.reading._all) >= READING_TOTAL, 10)
            for _ in range(20):
                assert health_status(daemon.address, timeout=5) == "SERVING"
            # made while held: checks from this client cancel its calls waiting over a
            # second beyond its 16 reading ones (pdbd.rpc.Reading), the request timeout
            # (10 s) the rest
            assert len(daemon.reading._all) >= 15
            # Requests that never arrive are dropped after the request timeout.
            codes = {f.code() for f in held}
            assert codes <= {grpc.StatusCode.CANCELLED, grpc.StatusCode.RESOURCE_EXHAUSTED}
            assert grpc.StatusCode.CANCELLED in codes
            for stream in idle:
                with pytest.raises(grpc.RpcError) as e:
                    next(stream)
                assert e.value.code() == grpc.StatusCode.CANCELLED  # the request timeout's
            with channel_stub(daemon.address) as stub:
                assert stub.Solve(pb.SolveRequest(tiles=EASY15), timeout=5).length == 2
    finally:
        release.set()
        daemon.stop(grace=1)


@pytest.mark.process
def test_health_answers_while_calls_open_faster_than_a_second_never_send():
    """Calls that never send their request, opened faster than the per-client grace (a
    second): beyond the server's reading total the longest waiting is cancelled however
    young, so they never hold more threads than that total and health checks are answered
    (they filled gRPC's call limit before: 'Concurrent RPC limit exceeded!' for a
    liveness probe). The calls are all opened before the first check, so every check
    meets at least the total of them waiting."""
    daemon = manhattan(threads=1, max_queue=1, connections=Connections(request_timeout=60))
    release = threading.Event()
    try:
        with grpc.insecure_channel(daemon.address) as ch:
            calls = daemon.admission.total + READING_TOTAL + 60  # more than its threads
            held = [never_sending(ch, "/pdbd.v1.Solver/Solve", release) for _ in range(calls)]
            assert wait_for(lambda: sum(f.done() for f in held) >= calls - READING_TOTAL, 30)
            for _ in range(10):
                assert health_status(daemon.address, timeout=5) == "SERVING"
            assert len(daemon.reading._all) <= READING_TOTAL
            codes = {f.code() for f in held if f.done()}
            assert codes == {grpc.StatusCode.CANCELLED}, codes  # evicted, not refused by gRPC
    finally:
        release.set()
        daemon.stop(grace=1)


@pytest.mark.process
def test_idle_connections_are_closed():
    daemon = manhattan(threads=1, connections=Connections(idle=0.3))
    try:
        with grpc.insecure_channel(daemon.address) as ch:
            states = []
            ch.subscribe(states.append, try_to_connect=True)
            grpc.channel_ready_future(ch).result(timeout=5)
            assert health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest())
            assert wait_for(lambda: states[-1] == grpc.ChannelConnectivity.IDLE, 5), states
    finally:
        daemon.stop(grace=1)


@pytest.mark.process
def test_reflection_can_be_switched_off():
    daemon = manhattan(threads=1, reflection_on=False)
    try:
        with grpc.insecure_channel(daemon.address) as ch:
            refl = reflection_pb2_grpc.ServerReflectionStub(ch)
            request = reflection_pb2.ServerReflectionRequest(list_services="")
            with pytest.raises(grpc.RpcError) as e:
                list(refl.ServerReflectionInfo(iter([request]), timeout=5))
            assert e.value.code() == grpc.StatusCode.UNIMPLEMENTED
        assert health_status(daemon.address) == "SERVING"
    finally:
        daemon.stop(grace=1)


# -- 3. no starvation -----------------------------------------------------------------------

@pytest.mark.process
def test_no_deadline_searches_cannot_starve_easy_queries():
    """Two hard boards without a deadline on both threads; the server's time limit stops
    them and every easy query is answered."""
    daemon = manhattan(threads=2, max_queue=8, limits=Limits(max_search_seconds=1.0))
    try:
        with channel_stub(daemon.address) as stub:
            hard = [stub.Solve.future(pb.SolveRequest(tiles=HARD, goal="blank-first"))
                    for _ in range(2)]
            assert wait_for(lambda: info(daemon)["counters"]["running"] == 2, 5)
            easy = [stub.Solve.future(pb.SolveRequest(tiles=puzzle.random_walk(4, 10, rng=random.Random(k))),
                                      timeout=20) for k in range(6)]
            assert all(f.result().length <= 10 for f in easy)
            for f in hard:  # (waited for 60 s at most: the server's limit is 1 s)
                assert f.exception(timeout=60) is not None
                assert f.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
                assert ("pdbd-limit", "max-search-seconds") in f.trailing_metadata()
                assert "--max-search-seconds" in f.details()
    finally:
        daemon.stop(grace=1)


@pytest.mark.process
def test_server_limits_apply_as_default_and_as_ceiling():
    """The node limits first, with a time limit no stall of a loaded machine reaches before
    200,000 nodes (it was 0.5 s: a race with the search); then the time limit alone."""
    daemon = manhattan(threads=1, limits=Limits(max_search_seconds=600, max_nodes=200_000))
    try:
        with channel_stub(daemon.address) as stub:
            for budget, limit in ((0, "max-nodes"), (10**12, "max-nodes"),
                                  (50_000, "node-budget")):
                with pytest.raises(grpc.RpcError) as e:
                    stub.Solve(pb.SolveRequest(tiles=HARD, goal="blank-first", node_budget=budget))
                assert e.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
                assert ("pdbd-limit", limit) in e.value.trailing_metadata(), budget
        d = info(daemon)
        assert d["limits"] == {"max_search_seconds": 600, "max_nodes": 200_000, "per_client": None,
                               "max_search_memory": 1 << 30}
    finally:
        daemon.stop(grace=1)
    daemon = manhattan(threads=1, limits=Limits(max_search_seconds=0.5, max_nodes=None))
    try:
        with channel_stub(daemon.address) as stub:
            with pytest.raises(grpc.RpcError) as e:  # the client's deadline is longer:
                stub.Solve(pb.SolveRequest(tiles=HARD, goal="blank-first"), timeout=60)
            # the server's limit ended it (its 0.5 s, not the client's 60 s; HARD: hours)
            assert e.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert ("pdbd-limit", "max-search-seconds") in e.value.trailing_metadata()
    finally:
        daemon.stop(grace=1)


@pytest.mark.process
def test_server_memory_limit_caps_what_a_request_may_allocate():
    """A client cannot make one search allocate more than --max-search-memory: A*'s
    max_memory (and its 1 GiB default) is lowered to it, the ida-tt table likewise."""
    daemon = manhattan(threads=1, limits=Limits(max_search_seconds=10, max_search_memory=1 << 20))
    try:
        with channel_stub(daemon.address) as stub:
            for asked, limit in ((0, "max-search-memory"), (1 << 40, "max-search-memory"),
                                 (1 << 19, "memory")):
                with pytest.raises(grpc.RpcError) as e:
                    stub.Solve(pb.SolveRequest(tiles=HARD, goal="blank-first", algorithm="astar",
                                               max_memory=asked))
                assert e.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
                assert ("pdbd-limit", limit) in e.value.trailing_metadata(), asked
                assert "states" in e.value.details()
                assert ("--max-search-memory" in e.value.details()) == (limit != "memory")
                if limit != "memory":
                    assert "the server's memory limit of 1 MiB per search" in e.value.details()
            r = stub.Solve(pb.SolveRequest(tiles=EASY15, algorithm="ida-tt", tt_size=(1 << 64) - 1))
            assert r.length == 2 and "32,768 entries" in r.note  # 1 MiB / 24 bytes, a power of 2
            with pytest.raises(grpc.RpcError) as e:
                stub.Solve(pb.SolveRequest(tiles=EASY15, algorithm="rbfs", max_memory=1 << 20))
            assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert "a memory limit applies to the algorithms astar" in e.value.details()
            assert "--" not in e.value.details()  # a wire field is no command-line flag
            with pytest.raises(grpc.RpcError) as e:
                stub.Solve(pb.SolveRequest(tiles=EASY15, algorithm="ida", weight=2.0))
            assert e.value.details() == "a weight applies to the wida algorithm only"
        assert info(daemon)["limits"]["max_search_memory"] == 1 << 20
    finally:
        daemon.stop(grace=1)


@pytest.mark.process
def test_one_client_cannot_take_every_search_slot():
    daemon = manhattan(threads=2, max_queue=4, limits=Limits(per_client=2))
    try:
        with channel_stub(daemon.address) as stub:
            request = pb.SolveRequest(tiles=HARD, goal="blank-first")
            mine = [stub.Solve.future(request, timeout=20) for _ in range(2)]
            assert wait_for(lambda: info(daemon)["counters"]["in_flight"] == 2, 5)
            with pytest.raises(grpc.RpcError) as e:
                stub.Solve(request, timeout=20)
            assert e.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert ("pdbd-limit", "per-client") in e.value.trailing_metadata()
            assert e.value.details().startswith("the client address ipv4:127.0.0.1 has 2 "
                                                "searches in flight")  # whose, as counted
            for f in mine:
                f.cancel()
            assert wait_for(lambda: info(daemon)["counters"]["in_flight"] == 0
                            and daemon.servicer.peers.count == 0, 5)  # both left: callbacks
            assert stub.Solve(pb.SolveRequest(tiles=EASY15), timeout=5).length == 2
    finally:
        daemon.stop(grace=1)


@pytest.mark.process
def test_a_client_answered_may_ask_again_at_once(monkeypatch):
    """A client at its limit of searches in flight that has its answer can ask again at
    once: its place was given back after the result was, by the future's callbacks (which
    run after the waiting handler wakes), and its next search could be refused. Here the
    callbacks are made late, as a busy machine may make them."""
    import concurrent.futures

    invoke = concurrent.futures.Future._invoke_callbacks

    def late(self):
        time.sleep(0.3)
        invoke(self)

    monkeypatch.setattr(concurrent.futures.Future, "_invoke_callbacks", late)
    daemon = manhattan(threads=1, max_queue=2, limits=Limits(per_client=1))
    try:
        with channel_stub(daemon.address) as stub:
            request = pb.SolveRequest(tiles=EASY15, algorithm="astar")  # to the pool
            for _ in range(3):
                assert stub.Solve(request, timeout=60).length == 2
    finally:
        daemon.stop(grace=1)


@pytest.mark.process
def test_health_reports_overload():
    daemon = manhattan(threads=1, max_queue=1)
    try:
        assert health_status(daemon.address, "pdbd.v1.Solver") == "SERVING"
        with channel_stub(daemon.address) as stub:
            request = pb.SolveRequest(tiles=HARD, goal="blank-first")
            calls = [stub.Solve.future(request, timeout=20) for _ in range(2)]
            assert wait_for(lambda: info(daemon)["counters"]["in_flight"] == 2, 5)
            assert health_status(daemon.address, "pdbd.v1.Solver") == "NOT_SERVING"
            assert health_status(daemon.address) == "SERVING"  # alive: do not restart it
            assert info(daemon)["overloaded"]
            for f in calls:
                f.cancel()
            assert wait_for(lambda: health_status(daemon.address, "pdbd.v1.Solver") == "SERVING", 2)
    finally:
        daemon.stop(grace=1)


def test_health_is_not_left_not_serving_by_two_changes_at_once():
    """Two changes of the pool's load at once (a search admitted, then one finished on
    another thread): the status the second saw (free) is the one left. Read outside the
    lock, the first's read (full) was published after the second had found nothing to
    change: NOT_SERVING for good on an idle daemon."""
    import threading

    daemon = manhattan(threads=1, max_queue=1)
    reading, go = threading.Event(), threading.Event()

    class Pool:  # the pool as _update_health reads it: full once (held), then free
        reads = 0

        @property
        def full(self):
            Pool.reads += 1
            if Pool.reads == 1:
                reading.set()
                go.wait(10)
                return True
            return False

    real = daemon.pool
    try:
        daemon.pool = Pool()
        first = threading.Thread(target=daemon._update_health)
        first.start()
        assert reading.wait(10)
        second = threading.Thread(target=daemon._update_health)
        second.start()
        second.join(0.5)  # (the code before: it returns, having found nothing to change)
        go.set()
        first.join(10)
        second.join(10)
        assert health_status(daemon.address, "pdbd.v1.Solver") == "SERVING"
    finally:
        go.set()
        daemon.pool = real
        daemon.stop(grace=1)


def test_listen_address_is_checked(capsys):
    from pdbd import cli

    for listen in ("127.0.0.1:99999", "127.0.0.1", "::1:50051"):
        assert cli.main(["serve", "--artifacts", "/nonexistent", "--listen", listen]) == 2
        err = capsys.readouterr().err
        assert "--listen" in err and "Traceback" not in err, err


def test_memory_limits_are_shown_in_the_unit_that_reads():
    """--max-search-memory 64K was shown as "0 MiB per search" (and no limit as "no MiB")."""
    from pdbtool.progress import fmt_bytes

    assert [fmt_bytes(n) for n in (500, 64 << 10, 1 << 20, 3 << 29, 300 << 20, 5 << 30)] == [
        "500 bytes", "64 KiB", "1 MiB", "1.5 GiB", "300 MiB", "5 GiB"]
