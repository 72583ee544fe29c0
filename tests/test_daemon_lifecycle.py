"""pdbd's life: start-up refusal, what it reports (info, health, reflection), shutdown.

Start-up refusal and SIGTERM run `pdbd serve` as a process; the rest use in-process servers.
"""

import shutil
import socket
import time

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from pdbd.v1 import solver_pb2 as pb
from pdbtool.heuristics.table_free import table_free
from pdbtool.selection import TableSet
from pdbtool.tables import artifact
from reference import flip_byte, free_port
from serving import (HARD, channel_stub, info, pdbd_process, running_daemon, sigterm_after_a_solve,
                     wait_for)

pytestmark = pytest.mark.process


def test_corrupted_artifact_stops_start_up(art_dir, tmp_path):
    src = art_dir / "8-full.h5"
    bad = tmp_path / "8-full.h5"
    shutil.copy(src, bad)
    flip_byte(bad, artifact.read_meta(src).data_offset + 1234)
    proc = pdbd_process("serve", "--artifacts", str(tmp_path), "--listen", f"127.0.0.1:{free_port()}")
    _, err = proc.communicate(timeout=30)
    assert proc.returncode != 0
    assert str(bad) in err and "checksum" in err and "Traceback" not in err


def test_empty_directory_stops_start_up(tmp_path):
    proc = pdbd_process("serve", "--artifacts", str(tmp_path), "--listen", f"127.0.0.1:{free_port()}")
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 1
    assert "no artifacts" in err and "pdbtool build" in err and "Traceback" not in err


def test_artifacts_not_a_directory_stops_start_up(art_dir, tmp_path):
    for path, why in ((art_dir / "8-full.h5", "not a directory"),
                      (tmp_path / "nowhere", "no such directory")):
        proc = pdbd_process("serve", "--artifacts", str(path), "--listen",
                            f"127.0.0.1:{free_port()}")
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 2 and f"{path}: {why}" in err and "Traceback" not in err, err


def test_a_busy_port_or_a_missing_tls_file_stops_start_up_before_the_tables(art_dir, tmp_path):
    """Said at once, in one line, not after loading and checking every table (minutes with
    big ones), and without gRPC's own log lines."""
    with socket.socket() as busy:
        busy.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        listen = f"127.0.0.1:{busy.getsockname()[1]}"
        proc = pdbd_process("serve", "--artifacts", str(art_dir), "--listen", listen)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 1
    assert f"pdbd: cannot listen on {listen}: address already in use" in err
    assert "loaded" not in err and "add_port" not in err and "GRPC_VERBOSITY" not in err, err
    listen = f"127.0.0.1:{free_port()}"
    proc = pdbd_process("serve", "--artifacts", str(art_dir), "--listen", listen,
                        "--tls-cert", str(tmp_path / "server.pem"),
                        "--tls-key", str(tmp_path / "server.key"))
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 2 and "cannot read TLS file" in err and "server." in err  # as web's
    assert "loaded" not in err and "Traceback" not in err, err


def test_info_lists_artifacts_sizes_and_counters(served, art_dir):
    d = info(served)
    metas = {p.name: artifact.read_meta(p) for p in artifact.find_artifacts(art_dir)}
    assert {a["path"] for a in d["artifacts"]} == set(metas)  # names only: no server paths
    for a in d["artifacts"]:
        meta = metas[a["path"]]
        assert a["version"] == meta.version and a["partition"] == meta.partition
        assert [t["sha256"] for t in a["tables"]] == [t.sha256 for t in meta.tables]
    assert [s["size"] for s in d["sizes"]] == [3, 4]
    assert d["threads"] == 2 and d["max_queue"] == 8 and d["version"]
    assert set(d["counters"]) == {"requests", "solved", "failed", "cancelled", "rejected",
                                  "in_flight", "running", "undecodable", "abandoned"}


def test_health_and_reflection(served):
    with grpc.insecure_channel(served.address) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        for service in ("", "pdbd.v1.Solver"):
            reply = health.Check(health_pb2.HealthCheckRequest(service=service))
            assert reply.status == health_pb2.HealthCheckResponse.SERVING
        refl = reflection_pb2_grpc.ServerReflectionStub(channel)
        replies = refl.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")]))
        names = {s.name for r in replies for s in r.list_services_response.service}
    assert {"pdbd.v1.Solver", "grpc.health.v1.Health"} <= names


def test_shutdown_stops_running_searches():
    daemon = running_daemon(TableSet({4: table_free("manhattan", 4)}), threads=1)
    with channel_stub(daemon.address) as stub:
        future = stub.Solve.future(pb.SolveRequest(tiles=HARD, goal="blank-first"))
        assert wait_for(lambda: info(daemon)["counters"]["running"] == 1, 10)
        start = time.monotonic()
        daemon.stop(grace=60)
        assert time.monotonic() - start < 30  # did not wait out the grace period (60 s)
        with pytest.raises(grpc.RpcError) as e:
            future.result()
        assert e.value.code() == grpc.StatusCode.UNAVAILABLE
        assert "shutting down" in e.value.details()


def test_shutdown_stops_a_search_in_the_fast_lane_too():
    """A search still in the fast lane (its nodes made large here, as a big lane would
    keep a search) is a search in flight: the drain waits for it, then the shutdown stops
    it (the drain saw none, and the search ran on, unhalted, to the end of gRPC's grace)."""
    from pdbd.jobs import Lane

    daemon = running_daemon(TableSet({4: table_free("manhattan", 4)}), threads=1,
                            lane=Lane(slots=1, per_client=1, nodes=10**12))
    with channel_stub(daemon.address) as stub:
        future = stub.Solve.future(pb.SolveRequest(tiles=HARD, goal="blank-first"))
        assert wait_for(lambda: daemon.servicer.fast.in_flight == 1, 10)
        assert daemon.pool.in_flight == 0  # in the lane, not in the pool
        start = time.monotonic()
        daemon.stop(grace=60, drain=0.5)
        assert time.monotonic() - start < 30  # the drain, not the grace (60 s)
        with pytest.raises(grpc.RpcError) as e:
            future.result()
        assert e.value.code() == grpc.StatusCode.UNAVAILABLE
        assert "shutting down" in e.value.details()


def test_shutdown_ends_a_batch_call_waiting_for_its_next_message():
    """A SolveBatch call whose boards are all answered, its client yet to send the next:
    a shutdown ends it at once, UNAVAILABLE and marked as the server's refusal (it waited
    out gRPC's grace, its reader blocked on the client)."""
    import threading

    from serving import EASY15

    daemon = running_daemon(TableSet({4: table_free("manhattan", 4)}), threads=1)
    later = threading.Event()

    def requests():
        yield pb.BatchRequest(items=[pb.BatchItem(id=1, request=pb.SolveRequest(tiles=EASY15))])
        later.wait(30)  # the next board, some time later

    try:
        with channel_stub(daemon.address) as stub:
            call = stub.SolveBatch(requests(), timeout=30)
            assert next(call).results[0].id == 1
            start = time.monotonic()
            daemon.stop(grace=60)
            assert time.monotonic() - start < 30  # not the grace (60 s)
            with pytest.raises(grpc.RpcError) as e:
                next(call)
            assert e.value.code() == grpc.StatusCode.UNAVAILABLE
            assert ("pdbd-refused", "unavailable") in tuple(e.value.trailing_metadata() or ())
    finally:
        later.set()


def test_sigterm_shuts_down_cleanly(art_dir):
    code, err = sigterm_after_a_solve(art_dir)
    assert code == 0, err
    assert "solve 3x3 length=2" in err and "stopped" in err


def test_the_start_line_names_each_shape_served():
    from pdbd.server import sizes_text
    from pdbtool.geometry import Shape

    tables = TableSet({4: table_free("manhattan", 4), Shape(3, 4): table_free("manhattan",
                                                                              Shape(3, 4))})
    text = sizes_text(tables)
    assert text.startswith("3x4 (manhattan") and ", 4x4 (manhattan" in text, text



def test_a_started_daemon_moves_what_it_holds_out_of_the_collectors_sight():
    """pdbd serve, once started, freezes what the process holds (settle_heap): a full
    collection then looks only at what the calls made since, not at the modules and
    tables' metadata loaded at startup."""
    import gc

    from pdbd.server import settle_heap

    before = gc.get_freeze_count()
    try:
        settle_heap()
        assert gc.get_freeze_count() > max(before, 10_000)
    finally:
        gc.unfreeze()
