"""Admission that idle calls cannot exhaust, and fair service (issue 40): calls that never
send their request, Watch streams, idle connections and hard searches from other clients
leave health checks and easy queries answered. Servers are started here on 127.0.0.1;
every loop is bounded."""

import contextlib
import json
import os
import random
import re
import signal
import socket
import statistics
import threading
import time
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from reference import free_port
from serving import (
    EASY15,
    HARD,
    HARDEST,
    Drained,
    channel_stub,
    info,
    pdbd_process,
    pool_submissions,
    running_daemon,
    wait_for,
)

from pdbd.client import ClientTls, SolverClient
from pdbd.jobs import Lane
from pdbd.peers import TrustedProxies, client_of
from pdbd.wire import CLIENT_KEY
from pdbd.server import Connections
from pdbd.servicer import Limits
from pdbd.v1 import solver_pb2 as pb
from pdbtool import puzzle
from pdbtool.geometry import Shape
from pdbtool.heuristics.table_free import table_free
from pdbtool.selection import TableSet, load_directory

pytestmark = pytest.mark.process


def manhattan(**options):
    return running_daemon(TableSet({4: table_free("manhattan", 4)}), **options)


class Renewed:
    """``n`` calls of ``path`` that never send their request, each opened again as soon as
    the server ends it (until ``stop()``), on one channel of their own."""

    def __init__(self, address: str, path: str, n: int):
        self.channel = grpc.insecure_channel(address)
        self.path, self.n = path, n
        self.ended = 0
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._hold, daemon=True) for _ in range(n)]
        for t in self._threads:
            t.start()

    def _hold(self) -> None:
        call = self.channel.stream_unary(self.path)
        while not self._stop.is_set():
            try:
                call(iter(self._stop.wait, True), timeout=30)  # sends nothing until stopped
            except grpc.RpcError:
                pass
            self.ended += 1

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(10)
        self.channel.close()


def check(stub, timeout: float = 5.0) -> tuple[str, float]:
    start = time.perf_counter()
    reply = stub.Check(health_pb2.HealthCheckRequest(), timeout=timeout)
    return (health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status),
            time.perf_counter() - start)


def test_never_sending_health_calls_leave_health_checks_serving():
    """8 health calls that never send their request leave another client's checks SERVING,
    both while the server holds them and while it drops them and they are renewed. Held:
    the server's request timeout (60 s) is far beyond each check's deadline (5 s), so a
    check that had to wait for one of them to be dropped fails, whatever the machine's
    load. (How fast checks are answered is measured, not tested: scripts/bench daemon,
    '50 never-sending calls: health SERVING within 100 ms'.)"""
    daemon = manhattan(threads=1, connections=Connections(request_timeout=60))
    idle = Renewed(daemon.address, "/grpc.health.v1.Health/Check", 8)
    try:
        assert wait_for(lambda: len(daemon.reading._all) >= 8, 30)  # held by the server
        with grpc.insecure_channel(daemon.address) as ch:
            stub = health_pb2_grpc.HealthStub(ch)
            statuses = [check(stub)[0] for _ in range(100)]
        assert statuses == ["SERVING"] * 100
        assert idle.ended == 0  # all 8 held throughout the checks
    finally:
        idle.stop()
        daemon.stop(grace=1)
    daemon = manhattan(threads=1, connections=Connections(request_timeout=0.5))
    idle = Renewed(daemon.address, "/grpc.health.v1.Health/Check", 8)
    try:
        with grpc.insecure_channel(daemon.address) as ch:
            stub = health_pb2_grpc.HealthStub(ch)
            check(stub)  # connected
            assert wait_for(lambda: idle.ended >= 8, 30)  # the server drops them, they renew
            results = []
            end = time.monotonic() + 60  # a backstop: renewed twice each takes about 1.5 s
            while (len(results) < 300 or idle.ended < 24) and time.monotonic() < end:
                results.append(check(stub)[0])
        assert results == ["SERVING"] * len(results)
        assert idle.ended >= 24  # renewed meanwhile, twice each
    finally:
        idle.stop()
        daemon.stop(grace=1)


def test_never_sending_solve_calls_leave_easy_solves_answered(art_dir):
    """The bar: 42 Solve calls that never send their request (the old cap of solve calls),
    renewed, leave easy solves answered (with a table: the 15/5-5-5 one built for the tests)."""
    daemon = running_daemon(load_directory(art_dir, require=True), threads=2,
                            connections=Connections(request_timeout=2))
    idle = Renewed(daemon.address, "/pdbd.v1.Solver/Solve", 42)
    try:
        # Dropped after the request timeout, or cancelled by newer calls once a second old.
        assert wait_for(lambda: idle.ended >= 42, 15)
        with channel_stub(daemon.address) as stub:
            rng = random.Random(40)
            for _ in range(30):
                board = puzzle.random_walk(4, 12, rng=rng)
                assert stub.Solve(pb.SolveRequest(tiles=board), timeout=10).length <= 12
    finally:
        idle.stop()
        daemon.stop(grace=1)


def test_watch_streams_are_bounded_per_client_and_expire():
    daemon = manhattan(threads=1, connections=Connections(stream_seconds=1.0))
    try:
        with grpc.insecure_channel(daemon.address) as ch:
            stub = health_pb2_grpc.HealthStub(ch)
            watches = [stub.Watch(health_pb2.HealthCheckRequest(), timeout=20) for _ in range(4)]
            for w in watches:
                assert next(w).status == health_pb2.HealthCheckResponse.SERVING
            with pytest.raises(grpc.RpcError) as e:  # a fifth one of this client
                next(stub.Watch(health_pb2.HealthCheckRequest(), timeout=20))
            assert e.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert ("pdbd-limit", "busy") in e.value.trailing_metadata()
            assert check(stub)[0] == "SERVING"  # health checks are never refused
            start = time.monotonic()
            for w in watches:  # each ends after its second, freeing its place
                with pytest.raises(grpc.RpcError):
                    next(w)
            assert time.monotonic() - start < 10
            w = stub.Watch(health_pb2.HealthCheckRequest(), timeout=20)
            assert next(w).status == health_pb2.HealthCheckResponse.SERVING
            w.cancel()
    finally:
        daemon.stop(grace=1)


def test_connections_that_never_handshake_are_closed():
    """A TCP connection that sends nothing is closed after the request timeout (gRPC's
    handshake timeout), not kept for good."""
    daemon = manhattan(threads=1, connections=Connections(request_timeout=0.5))
    host, port = daemon.address.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=10) as s:
            start = time.monotonic()
            while True:  # bounded: the socket's timeout raises after 10 s of silence
                if not s.recv(4096):
                    break
            assert time.monotonic() - start < 10
    finally:
        daemon.stop(grace=1)


def own_channel(address: str) -> grpc.Channel:
    """A channel with a connection of its own (channels of one process share them)."""
    return grpc.insecure_channel(address, options=[("grpc.use_local_subchannel_pool", 1)])


def test_connections_beyond_the_budget_are_closed_and_logged_once(caplog):
    """gRPC closes them without a word; pdbd says so once (with the peer holding them)."""
    daemon = manhattan(threads=1, connections=Connections(max_connections=2, watch_every=0.05))
    try:
        channels = [own_channel(daemon.address) for _ in range(2)]
        for ch in channels:
            assert check(health_pb2_grpc.HealthStub(ch))[0] == "SERVING"
        with own_channel(daemon.address) as third:
            with pytest.raises(grpc.RpcError) as e:
                check(health_pb2_grpc.HealthStub(third), timeout=2)
            assert e.value.code() in (grpc.StatusCode.UNAVAILABLE,
                                      grpc.StatusCode.DEADLINE_EXCEEDED)
        assert wait_for(lambda: daemon.watch.warnings == 1, 10)
        lines = [r.getMessage() for r in caplog.records if "at the budget of 2" in r.getMessage()]
        assert len(lines) == 1 and "most from: 127.0.0.1 2" in lines[0], lines
        channels.pop().close()
        with own_channel(daemon.address) as again:
            assert wait_for(lambda: _serving(again), 10)
        for ch in channels:
            ch.close()
    finally:
        daemon.stop(grace=1)


def _serving(channel) -> bool:
    try:
        return check(health_pb2_grpc.HealthStub(channel), timeout=1)[0] == "SERVING"
    except grpc.RpcError:
        return False


def test_an_easy_query_is_answered_behind_hard_searches_of_other_clients():
    """Fair service: four other clients (named through a trusted proxy) fill both search
    threads and the queue with searches that take an hour or more; one client's easy queries are
    still answered while every one of those searches runs on (without the fast lane they
    would wait for those searches, beyond each query's 30 s deadline). How long they take
    is measured, not tested: scripts/bench daemon, 'two no-deadline 80-move boards: every
    easy query answered' and its latency row."""
    daemon = manhattan(threads=2, max_queue=8, proxies=TrustedProxies(["127.0.0.1"]),
                       limits=Limits(per_client=2), lane=Lane(slots=2, per_client=1))
    try:
        with channel_stub(daemon.address) as stub:
            hard = pb.SolveRequest(tiles=HARD, goal="blank-first")
            others = [stub.Solve.future(hard, timeout=120, metadata=((CLIENT_KEY, f"other{k}"),))
                      for k in range(4) for _ in range(2)]
            assert wait_for(lambda: info(daemon)["counters"]["in_flight"] == 8, 10)
            assert info(daemon)["counters"]["running"] == 2
            rng = random.Random(37)
            waits = []
            for _ in range(20):
                board = puzzle.random_walk(4, 20, rng=rng)
                start = time.perf_counter()
                r = stub.Solve(pb.SolveRequest(tiles=board), timeout=30,
                               metadata=((CLIENT_KEY, "easy"),))
                waits.append(time.perf_counter() - start)
                assert r.length <= 20
            assert all(not f.done() for f in others)  # still searching: nothing was freed
            for f in others:
                f.cancel()
        print(f"easy queries behind 8 hard ones: median {statistics.median(waits) * 1000:.1f} "
              f"ms, max {max(waits) * 1000:.1f} ms")
    finally:
        daemon.stop(grace=1)


def test_a_clients_second_search_goes_to_the_pool_not_behind_its_first(monkeypatch):
    """A client whose lane share is taken (a long search in the lane) gets its next search
    in the pool at once: answered while the first still searches, not after the lane's
    wait for a slot (a minute here, beyond the second call's deadline)."""
    daemon = manhattan(threads=2, lane=Lane(slots=2, per_client=1, nodes=10**12, wait=60))
    pooled = pool_submissions(daemon, monkeypatch)
    try:
        with channel_stub(daemon.address) as stub:
            long = stub.Solve.future(pb.SolveRequest(tiles=HARDEST), timeout=120)  # 80 moves:
            # hours on Manhattan, in the lane (its nodes are unlimited here)
            assert wait_for(lambda: daemon.servicer.fast.in_flight == 1, 10)  # in the lane
            r = stub.Solve(pb.SolveRequest(tiles=puzzle.random_walk(4, 10, rng=random.Random(3))),
                           timeout=30)
            assert r.length <= 10 and pooled == [Shape(4, 4)]  # by the pool
            assert not long.done()
            long.cancel()
    finally:
        daemon.stop(grace=1)


def test_a_search_not_done_in_the_fast_lane_goes_on_in_the_pool(monkeypatch):
    """A search beyond the lane's nodes goes on in the pool and is answered optimally; its
    client's budget counts there (not the lane's)."""
    daemon = manhattan(threads=1, lane=Lane(slots=1, per_client=1, nodes=1000))
    pooled = pool_submissions(daemon, monkeypatch)
    try:
        with channel_stub(daemon.address) as stub:
            board = puzzle.random_walk(4, 40, rng=random.Random(3))
            r = stub.Solve(pb.SolveRequest(tiles=board), timeout=60)
            assert r.nodes_generated > 1000 and len(pooled) == 1
            assert stub.Solve(pb.SolveRequest(tiles=EASY15), timeout=5).length == 2
            assert len(pooled) == 1  # answered in the lane
            with pytest.raises(grpc.RpcError) as e:  # the client's budget, beyond the lane's
                stub.Solve(pb.SolveRequest(tiles=HARD, goal="blank-first", node_budget=50_000),
                           timeout=60)
            assert ("pdbd-limit", "node-budget") in e.value.trailing_metadata()
        assert len(pooled) == 2  # the others went on to the pool
    finally:
        daemon.stop(grace=1)


def test_the_pool_resumes_a_search_where_the_fast_lane_stopped(monkeypatch):
    """A search past the lane's nodes is not searched again from the start: the pool goes
    on from the iteration and the tasks the lane had done (pdbtool.search.checkpoint.Held),
    so its first iterations run once (the lane's only), and the answer and its counts are
    those of one search that never stopped."""
    from pdbtool.search.solver import Solver

    board = puzzle.random_walk(4, 60, rng=random.Random(1))
    alone = Solver(table_free("manhattan", 4)).solve(board)
    assert alone.nodes_generated > 20_000 and len(alone.iterations) > 5
    first_iterations = []  # each search's first, serial iterations (Solver.iterate)
    iterate = Solver.iterate

    def counted(self, *args, **kw):
        first_iterations.append(1)
        return iterate(self, *args, **kw)

    daemon = manhattan(threads=1, lane=Lane(slots=1, per_client=1, nodes=5_000))
    pooled = pool_submissions(daemon, monkeypatch)
    monkeypatch.setattr(Solver, "iterate", counted)
    try:
        with channel_stub(daemon.address) as stub:
            r = stub.Solve(pb.SolveRequest(tiles=board), timeout=60)
        assert pooled == [Shape(4, 4)]  # the pool's answer
    finally:
        daemon.stop(grace=1)
    assert len(first_iterations) == 1  # searched from the start again: 2
    assert (r.length, r.moves, r.nodes_generated, r.nodes_expanded) == (
        alone.length, alone.moves, alone.nodes_generated, alone.nodes_expanded)
    assert [(i.bound, i.nodes) for i in r.iterations] == [
        (i["bound"], i["nodes"]) for i in alone.iterations]


@contextlib.contextmanager
def tls_daemon(art_dir, pki, *options):
    """A TLS `pdbd serve` process on loopback: its port, a client of it (serving), and its
    stderr as it comes; stopped with SIGTERM after the block (killed if it hangs)."""
    port = free_port()
    proc = pdbd_process("serve", "--artifacts", str(art_dir), "--listen", f"127.0.0.1:{port}",
                        "--threads", "1", "--tls-cert", str(pki / "server.pem"),
                        "--tls-key", str(pki / "server.key"), *options)
    err = Drained(proc)
    try:
        with SolverClient(f"127.0.0.1:{port}", tls=ClientTls(str(pki / "ca.pem"))) as client:
            client.wait_serving(60)
            yield proc, port, client, err
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()


def plaintext(port: int) -> None:
    """One connection speaking HTTP/1.1 to the TLS port: a failed handshake."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        with contextlib.suppress(OSError):
            s.recv(100)


def test_failed_tls_handshakes_are_logged_per_peer_without_flooding(art_dir, pki):
    """Issue 40: failed TLS handshakes were logged for each one (250 KB/s from one client),
    then not at all. Here 50 of them (plaintext HTTP to the TLS port) give one line naming
    the peer and, when the daemon stops, one with the count held back; a TLS client is
    answered meanwhile, and the trace's reader process ends with the daemon."""
    with tls_daemon(art_dir, pki, "--log-format", "json") as (_, port, client, err):
        for _ in range(50):
            plaintext(port)
        assert client.solve(EASY15, "blank-last").length == 2
    text = err.text()
    assert err.closed, "the reader of the handshaker trace outlived the daemon"
    lines = [json.loads(line) for line in text.splitlines()]  # every line the daemon's JSON
    tls = [line["message"] for line in lines if line["logger"] == "pdbd.tls"]
    assert len(tls) == 2, text[-3000:]
    assert tls[0].startswith("TLS handshake from 127.0.0.1 failed: ") and "HTTP_REQUEST" in tls[0]
    # the 49 others counted (fewer only if the core's lines overran the pipe, which a slow
    # machine may make it do: a line lost, never the daemon's call)
    held = re.match(r"TLS handshakes from 127\.0\.0\.1: (\d+) more failed in the last ", tls[1])
    assert held and 1 <= int(held.group(1)) <= 49, tls[1]
    assert all(line["level"] == "WARNING" for line in lines if line["logger"] == "pdbd.tls")
    assert sum("andshake" in line for line in text.splitlines()) == 2


def test_a_reader_of_the_handshake_trace_that_dies_is_replaced(art_dir, pki):
    """The reader process killed: the daemon says so and starts another, which logs the
    next failed handshake (pdbd/handshakes.py, Capture)."""
    with tls_daemon(art_dir, pki) as (proc, port, client, err):

        def readers() -> list[int]:
            children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
            return [int(c) for c in children
                    if b"pdbd.handshakes" in Path(f"/proc/{c}/cmdline").read_bytes()]

        def logged(text: str) -> int:
            return sum(text in line for line in err.lines)

        plaintext(port)
        assert wait_for(lambda: logged("TLS handshake from 127.0.0.1 failed"), 10)
        first = readers()
        assert len(first) == 1
        os.kill(first[0], signal.SIGKILL)
        assert wait_for(lambda: logged("handshake trace ended (exit -9): starting another"), 10)
        assert wait_for(lambda: readers() and readers() != first, 10)
        plaintext(port)
        assert wait_for(lambda: logged("TLS handshake from 127.0.0.1 failed") == 2, 10), \
            err.lines[-5:]
        assert client.solve(EASY15, "blank-last").length == 2
    err.text()
    assert err.closed


def test_a_client_is_named_as_its_address_is_written():
    """gRPC escapes an IPv6 peer's brackets; the client's name (logs, per-client counts)
    is the address without its port, as an operator writes it."""
    assert client_of("ipv4:10.0.0.7:53211") == "ipv4:10.0.0.7"
    assert client_of("ipv6:%5B::1%5D:5") == "ipv6:[::1]"
    assert client_of("unix:/run/pdbd/pdbd.sock") == "unix:/run/pdbd/pdbd.sock"


def test_patience_waits_while_busy_and_counts_from_the_last_answer():
    """rpc.Patience (a SolveBatch's next request's timeout): it never rings while the call
    has boards in flight (idle_since() None), nor within its seconds of the call's last
    answer (it counted from the read: an answer just before the ring left the client 32 ms
    of a 1 s timeout). An alarm cannot ring early, so 'not yet' is certain."""
    from pdbd.rpc import Patience

    rung, rang_at = threading.Event(), []

    def ring():
        rang_at.append(time.monotonic())
        rung.set()

    state = {"since": None}  # busy at first
    start = time.monotonic()
    alarm = Patience(0.2, lambda: state["since"], ring)
    try:
        assert not rung.wait(0.5)  # busy all along: past its seconds twice over
        state["since"] = time.monotonic()  # the last answer, now
        assert rung.wait(30)
        # not within 0.2 s of the answer (its time taken as it rang: a test thread that
        # stalls cannot make it look early)
        assert rang_at[0] - state["since"] >= 0.2 and rang_at[0] - start >= 0.7
    finally:
        alarm.cancel()
    cancelled = threading.Event()
    Patience(0.1, lambda: None, cancelled.set).cancel()
    assert not cancelled.wait(0.3)
