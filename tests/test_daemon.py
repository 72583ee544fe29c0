"""pdbd against real servers on free loopback ports, through real stubs.

Two in-process servers: ``served`` loads built 8/full and 15/5-5-5 artifacts (answers are
checked against a BFS over every 8-puzzle state and Korf's published lengths), and
``slow`` serves the 15-puzzle with Manhattan distance, so a hard board searches for
minutes unless the stop flag works. Start-up refusal and SIGTERM run `pdbd serve` as a
subprocess.
"""

import collections
import json
import random
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from conftest import korf100
from daemon import cli, tables
from daemon.client import ServerUnavailable, SolverClient
from daemon.pdbd.v1 import solver_pb2 as pb, solver_pb2_grpc as pb_grpc
from daemon.server import Daemon
from pdbtool import artifact, puzzle
from pdbtool.errors import BadInput, LimitReached, Unsolvable
from pdbtool.heuristics import table_free

# Korf's instance 60: 66 moves; Manhattan-distance IDA* needs minutes for it.
HARD = (11, 14, 13, 1, 2, 3, 12, 4, 15, 7, 9, 5, 10, 6, 8, 0)
EASY8 = (1, 2, 3, 4, 5, 6, 0, 7, 8)  # two moves from the blank-last goal
LOYD = tuple(range(1, 14)) + (15, 14, 0)  # 14 and 15 swapped: unsolvable


# -- fixtures ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def served(art_dir):
    daemon = Daemon(tables.load(art_dir), "127.0.0.1:0", threads=2, max_queue=8)
    daemon.start()
    yield daemon
    daemon.stop(grace=1)


@pytest.fixture(scope="module")
def slow():
    daemon = Daemon(tables.Tables({4: table_free("manhattan", 4)}), "127.0.0.1:0",
                    threads=1, max_queue=1)
    daemon.start()
    yield daemon
    daemon.stop(grace=1)


@pytest.fixture
def stub(served):
    with grpc.insecure_channel(served.address) as channel:
        yield pb_grpc.SolverStub(channel)


@pytest.fixture
def slow_stub(slow):
    with grpc.insecure_channel(slow.address) as channel:
        yield pb_grpc.SolverStub(channel)


@pytest.fixture(scope="module")
def oracle(oracle8, oracle8_last):
    """Exact 8-puzzle distances (BFS over every state) for each goal."""
    return {"blank-first": oracle8, "blank-last": oracle8_last}


def korf(n):
    """The n shortest of Korf's 100: (id, published optimal length, board)."""
    return sorted(korf100(), key=lambda r: r[1])[:n]


def assert_replays(r, board, goal):
    target = puzzle.goal_board(puzzle.side_of(board), goal)
    assert puzzle.apply_tile_moves(board, r["moves"]) == target
    assert puzzle.apply_blank_moves(board, r["blank_moves"]) == target
    assert len(r["moves"]) == len(r["blank_moves"]) == r["length"]


def info(daemon):
    with SolverClient(daemon.address) as c:
        return c.info()


def wait_for(predicate, timeout):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.005)
    return predicate()


def worker_free_within(daemon, seconds):
    start = time.monotonic()
    ok = wait_for(lambda: info(daemon)["counters"]["running"] == 0, seconds)
    return ok, time.monotonic() - start


# -- answers -------------------------------------------------------------------------------

@pytest.mark.parametrize("goal", puzzle.GOALS)
def test_8_puzzle_answers_are_optimal_and_replay(served, oracle, goal):
    dist = oracle[goal]
    rng = random.Random(5)
    boards = rng.sample(sorted(dist), 40) + [b for b, d in dist.items() if d == 31]
    with SolverClient(served.address) as client:
        for board in boards:
            r = client.solve(board, goal)
            assert r["length"] == dist[board], board
            assert_replays(r, board, goal)
            assert r["artifact"] == info(served)["sizes"][0]["artifact"]


def test_korf_instances_match_published_lengths(served):
    with SolverClient(served.address) as client:
        for _, optimum, board in korf(6):
            r = client.solve(board, "blank-first")
            assert r["length"] == optimum
            assert_replays(r, board, "blank-first")
            assert r["heuristic"].startswith("pdb 15/5-5-5")


def test_result_has_the_fields_of_pdbtool_solve_json(served):
    from pdbtool.search import Solver

    local = Solver(table_free("manhattan", 3)).solve(EASY8).to_dict()
    with SolverClient(served.address) as client:
        remote = client.solve(" ".join(map(str, EASY8)))  # text boards work too
    assert list(remote) == list(local)
    assert remote["moves"] == [7, 8] and remote["blank_moves"] == "RR"
    assert remote["iterations"] and remote["nodes_generated"] >= 2


def test_stream_sends_progress_then_the_result(slow):
    board = puzzle.random_walk(4, 60, "blank-first", random.Random(3))
    with SolverClient(slow.address) as client:
        events = list(client.solve_stream(board, "blank-first", progress_ms=10))
    *progress, result = events
    assert all(p["event"] == "progress" for p in progress)
    assert "event" not in result
    assert_replays(result, board, "blank-first")
    nodes = [p["nodes_generated"] for p in progress if not p["queued"]]
    assert nodes == sorted(nodes)


def test_stream_reports_progress_of_a_long_search(slow):
    with SolverClient(slow.address) as client:
        stream = client.solve_stream(HARD, "blank-first", progress_ms=20)
        progress = [next(stream) for _ in range(8)]
        stream.close()  # stops the search on the server
    assert all(p["event"] == "progress" for p in progress)
    nodes = [p["nodes_generated"] for p in progress]
    assert nodes == sorted(nodes) and nodes[-1] > 0
    assert progress[-1]["bound"] >= 41 and progress[-1]["nodes_per_second"] > 0
    ok, took = worker_free_within(slow, 0.1)
    assert ok, f"worker still busy {took:.3f} s after the stream was closed"


def test_concurrent_clients_all_get_correct_answers(served, oracle):
    dist = oracle["blank-last"]
    boards = random.Random(9).sample(sorted(dist), 48)
    instances = korf(4)
    errors = []

    def client_thread(k):
        try:
            with SolverClient(served.address) as client:
                for board in boards[k::8]:
                    r = client.solve(board)
                    assert r["length"] == dist[board]
                    assert_replays(r, board, "blank-last")
                _, optimum, board = instances[k % len(instances)]
                assert client.solve(board, "blank-first")["length"] == optimum
        except Exception as e:  # collected: an assert in a thread would be lost
            errors.append(e)

    threads = [threading.Thread(target=client_thread, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_burst_is_answered_or_refused(served):
    instances = korf(10)
    with grpc.insecure_channel(served.address) as channel:
        stub = pb_grpc.SolverStub(channel)
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


# -- refusals ------------------------------------------------------------------------------

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


def test_message_over_the_limit_is_refused(stub):
    with pytest.raises(grpc.RpcError) as e:
        stub.Solve(pb.SolveRequest(tiles=list(range(500_000))))  # ~1.5 MB
    assert e.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "larger than max" in e.value.details()


def test_server_stays_healthy_after_a_thousand_malformed_requests(served, stub):
    before = info(served)["counters"]
    cases = [tiles for tiles, _ in BAD.values() if len(tiles) < 100] + [[0] * 9, [99] * 16]
    for k in range(1000):
        with pytest.raises(grpc.RpcError) as e:
            stub.Solve(pb.SolveRequest(tiles=cases[k % len(cases)]))
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    with SolverClient(served.address) as client:
        assert client.health() == "SERVING"
        assert client.solve(EASY8)["length"] == 2
    after = info(served)["counters"]
    assert after["failed"] - before["failed"] == 1000
    assert after["in_flight"] == 0


def test_unsolvable_board_is_answered_without_search(slow, slow_stub):
    before = info(slow)["counters"]
    start = time.monotonic()
    with pytest.raises(grpc.RpcError) as e:
        slow_stub.Solve(pb.SolveRequest(tiles=LOYD))  # IDA* would never end on it
    assert time.monotonic() - start < 0.5
    assert e.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "unsolvable" in e.value.details() and "parit" in e.value.details()
    after = info(slow)["counters"]
    assert after["failed"] == before["failed"] + 1 and after["solved"] == before["solved"]


def test_node_budget_is_resource_exhausted(slow_stub):
    call = slow_stub.Solve.with_call
    with pytest.raises(grpc.RpcError) as e:
        call(pb.SolveRequest(tiles=HARD, goal="blank-first", node_budget=200_000))
    assert e.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "budget" in e.value.details()
    assert ("pdbd-limit", "node-budget") in e.value.trailing_metadata()


# -- stopping ------------------------------------------------------------------------------

def test_deadline_stops_the_search(slow, slow_stub):
    before = info(slow)["counters"]
    start = time.monotonic()
    with pytest.raises(grpc.RpcError) as e:
        slow_stub.Solve(pb.SolveRequest(tiles=HARD, goal="blank-first"), timeout=0.3)
    assert e.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    ok, took = worker_free_within(slow, 0.1)
    assert ok, f"worker still busy {took:.3f} s after the deadline"
    # The single worker takes the next query at once.
    t = time.monotonic()
    slow_stub.Solve(pb.SolveRequest(tiles=puzzle.random_walk(4, 12)), timeout=5)
    assert time.monotonic() - t < 0.1
    assert time.monotonic() - start < 1.0
    assert info(slow)["counters"]["cancelled"] == before["cancelled"] + 1


def test_cancel_stops_the_search(slow, slow_stub):
    future = slow_stub.Solve.future(pb.SolveRequest(tiles=HARD, goal="blank-first"))
    assert wait_for(lambda: info(slow)["counters"]["running"] == 1, 2)
    future.cancel()
    ok, took = worker_free_within(slow, 0.1)
    assert ok, f"worker still busy {took:.3f} s after the cancel"
    with SolverClient(slow.address) as client:
        with pytest.raises(LimitReached, match="deadline"):
            client.solve(HARD, "blank-first", deadline=0.05)


def test_full_queue_is_resource_exhausted(slow, slow_stub):
    request = pb.SolveRequest(tiles=HARD, goal="blank-first")
    running = slow_stub.Solve.future(request, timeout=10)
    queued = slow_stub.Solve.future(request, timeout=10)
    assert wait_for(lambda: info(slow)["counters"]["in_flight"] == 2, 2)
    with pytest.raises(grpc.RpcError) as e:
        slow_stub.Solve.with_call(request, timeout=10)
    assert e.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "queue full" in e.value.details()
    assert ("pdbd-limit", "queue-full") in e.value.trailing_metadata()
    queued.cancel()
    running.cancel()
    assert wait_for(lambda: info(slow)["counters"]["in_flight"] == 0, 0.2)


def test_shutdown_stops_running_searches():
    daemon = Daemon(tables.Tables({4: table_free("manhattan", 4)}), "127.0.0.1:0", threads=1)
    daemon.start()
    with grpc.insecure_channel(daemon.address) as channel:
        stub = pb_grpc.SolverStub(channel)
        future = stub.Solve.future(pb.SolveRequest(tiles=HARD, goal="blank-first"))
        assert wait_for(lambda: info(daemon)["counters"]["running"] == 1, 2)
        start = time.monotonic()
        daemon.stop(grace=5)
        assert time.monotonic() - start < 1.0  # did not wait out the grace period
        with pytest.raises(grpc.RpcError) as e:
            future.result()
        assert e.value.code() == grpc.StatusCode.UNAVAILABLE
        assert "shutting down" in e.value.details()


# -- info, health, reflection, client ------------------------------------------------------

def test_info_lists_artifacts_sizes_and_counters(served, art_dir):
    d = info(served)
    metas = {str(p): artifact.read_meta(p) for p in artifact.find_artifacts(art_dir)}
    assert {a["path"] for a in d["artifacts"]} == set(metas)
    for a in d["artifacts"]:
        meta = metas[a["path"]]
        assert a["version"] == meta.version and a["partition"] == meta.partition
        assert [t["sha256"] for t in a["tables"]] == [t.sha256 for t in meta.tables]
    assert [s["size"] for s in d["sizes"]] == [3, 4]
    assert d["threads"] == 2 and d["max_queue"] == 8 and d["version"]
    assert set(d["counters"]) == {"requests", "solved", "failed", "cancelled", "rejected",
                                  "in_flight", "running"}


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


def test_client_raises_pdbtool_errors(served):
    with SolverClient(served.address) as client:
        with pytest.raises(BadInput, match="duplicate"):
            client.solve([1, 1, 2, 3, 4, 5, 6, 7, 0])
        with pytest.raises(BadInput, match="not an integer"):
            client.solve("1 2 x")
        with pytest.raises(BadInput, match="larger than max"):
            client.solve(list(range(500_000)))  # over the 1 MiB transport limit
        with pytest.raises(Unsolvable, match="parity|parities"):
            client.solve([1, 2, 3, 4, 5, 6, 8, 7, 0])
    with SolverClient(f"127.0.0.1:{free_port()}") as client:
        with pytest.raises(ServerUnavailable, match="cannot reach pdbd"):
            client.solve(EASY8, deadline=2)


# -- the command line ----------------------------------------------------------------------

def run_cli(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_query_exit_codes_and_json(served, slow, capsys):
    server = ["--server", served.address]
    code, out, _ = run_cli(capsys, "query", *server, "--json", *map(str, EASY8))
    assert code == 0 and json.loads(out)["length"] == 2
    code, out, _ = run_cli(capsys, "query", *server, "1,2,3,4,5,6,0,7,8")
    assert code == 0 and "length 2  moves 7 8" in out
    code, out, err = run_cli(capsys, "query", *server, "1", "2", "3")
    assert code == 2 and "not a square board" in err
    code, out, err = run_cli(capsys, "query", *server, "--json", "1", "2", "3")
    assert code == 2 and json.loads(out)["exit_code"] == 2
    code, _, err = run_cli(capsys, "query", *server, *map(str, [1, 2, 3, 4, 5, 6, 8, 7, 0]))
    assert code == 3 and "unsolvable" in err
    code, _, err = run_cli(capsys, "query", "--server", slow.address, "--goal", "blank-first",
                           "--deadline", "0.2", *map(str, HARD))
    assert code == 4 and "deadline" in err
    code, _, err = run_cli(capsys, "query", "--server", slow.address, "--goal", "blank-first",
                           "--budget", "100000", *map(str, HARD))
    assert code == 4 and "budget" in err
    code, _, err = run_cli(capsys, "query", "--server", f"127.0.0.1:{free_port()}", *map(str, EASY8))
    assert code == 1 and "cannot reach pdbd" in err and "Traceback" not in err


def test_query_stream_and_info(served, capsys):
    code, out, err = run_cli(capsys, "query", "--server", served.address, "--stream", "--json",
                             "--goal", "blank-first", *map(str, korf(1)[0][2]))
    assert code == 0 and json.loads(out)["length"] == korf(1)[0][1]
    code, out, _ = run_cli(capsys, "info", "--server", served.address, "--json")
    assert code == 0 and json.loads(out)["sizes"][1]["size"] == 4
    code, out, _ = run_cli(capsys, "info", "--server", served.address)
    assert code == 0 and "serves 4x4" in out and "sha256" in out
    code, out, _ = run_cli(capsys, "health", "--server", served.address)
    assert code == 0 and out.strip() == "SERVING"


# -- pdbd serve as a process ---------------------------------------------------------------

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pdbd(*args):
    exe = Path(sys.executable).with_name("pdbd")
    return subprocess.Popen([str(exe), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def test_corrupted_artifact_stops_start_up(art_dir, tmp_path):
    src = art_dir / "8-full.h5"
    bad = tmp_path / "8-full.h5"
    shutil.copy(src, bad)
    offset = artifact.read_meta(src).data_offset + 1234
    with open(bad, "r+b") as f:
        f.seek(offset)
        byte = f.read(1)
        f.seek(offset)
        f.write(bytes([byte[0] ^ 0xFF]))
    proc = pdbd("serve", "--artifacts", str(tmp_path), "--listen", f"127.0.0.1:{free_port()}")
    _, err = proc.communicate(timeout=30)
    assert proc.returncode != 0
    assert str(bad) in err and "checksum" in err and "Traceback" not in err


def test_sigterm_shuts_down_cleanly(art_dir):
    port = free_port()
    proc = pdbd("serve", "--artifacts", str(art_dir), "--listen", f"127.0.0.1:{port}",
                "--threads", "1")
    try:
        with SolverClient(f"127.0.0.1:{port}") as client:
            client.wait_serving(30)
            assert client.solve(EASY8)["length"] == 2
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "solve 3x3 length=2" in err and "stopped" in err
