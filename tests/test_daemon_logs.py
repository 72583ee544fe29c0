"""pdbd's log lines (pdbd.logs): every one with its time and level, text or JSON, the
request's fields in JSON; one handler for every logger of the process."""

import io
import json
import logging
import re

import pytest

from pdbd import logs

TIME = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"


@pytest.fixture
def captured():
    """The root logger sent to a buffer by logs.setup, restored afterwards."""
    root = logging.getLogger()
    saved = (list(root.handlers), root.level,
             {n: logging.getLogger(n).level for n in ("pdbd", "pdbtool")})
    buffer = io.StringIO()
    yield buffer
    for h in list(root.handlers):
        if h not in saved[0]:
            root.removeHandler(h)
    root.setLevel(saved[1])
    for name, level in saved[2].items():
        logging.getLogger(name).setLevel(level)
    logging.captureWarnings(False)


def test_text_lines_have_time_and_level(captured):
    logs.setup("text", "info", captured, force=True)
    logging.getLogger("pdbd").info("serving on %s", "127.0.0.1:1")
    logging.getLogger("pdbtool.loading").warning("no read lease")
    logging.getLogger("pdbd").debug("not shown at info")
    lines = captured.getvalue().splitlines()
    assert len(lines) == 2, lines
    assert re.fullmatch(TIME + r" INFO pdbd serving on 127\.0\.0\.1:1", lines[0])
    assert re.fullmatch(TIME + r" WARNING pdbtool\.loading no read lease", lines[1])


def test_json_lines_carry_the_request_fields_and_the_traceback(captured):
    logs.setup("json", "debug", captured, force=True)
    log = logging.getLogger("pdbd")
    log.info("solve %dx%d length=%d", 4, 4, 52, extra=logs.request_fields(
        "pdbd.v1.Solver/Solve", "ipv4:127.0.0.1:5000", "OK", 0.0123456789, 1234, size="4x4"))
    try:
        raise ValueError("boom")
    except ValueError:
        log.exception("solve failed")
    import warnings
    warnings.warn("a warning goes through the handler too")
    lines = [json.loads(line) for line in captured.getvalue().splitlines()]
    assert len(lines) == 3
    for line in lines:
        assert re.fullmatch(TIME, line["time"]) and line["level"] and line["message"]
    solve, failed, warned = lines
    assert solve["message"] == "solve 4x4 length=52" and solve["level"] == "INFO"
    assert {k: solve[k] for k in ("method", "peer", "code", "nodes", "size")} == {
        "method": "pdbd.v1.Solver/Solve", "peer": "ipv4:127.0.0.1:5000", "code": "OK",
        "nodes": 1234, "size": "4x4"}
    assert solve["seconds"] == pytest.approx(0.012346)
    assert failed["level"] == "ERROR" and "ValueError: boom" in failed["exception"]
    assert warned["level"] == "WARNING" and "a warning goes" in warned["message"]


def test_unknown_format_is_refused():
    with pytest.raises(ValueError):
        logs.Formatter("xml")


def test_every_call_that_ends_in_an_error_has_a_line(served, caplog):
    """A bad or unsolvable board left no log line at any level (only a counter): the
    operator could not see why clients got errors. And the text line of an answer names
    its peer, as the other lines do."""
    import grpc

    from pdbd.client import SolverClient
    from pdbd.v1 import solver_pb2 as pb
    from pdbtool.errors import BadInput, Unsolvable
    from serving import EASY8, channel_stub

    caplog.set_level("INFO", logger="pdbd")
    with SolverClient(served.address) as c:
        with pytest.raises(BadInput):
            c.solve([1, 2, 3])
        with pytest.raises(Unsolvable):
            c.solve([1, 2, 3, 4, 5, 6, 8, 7, 0])
        assert c.solve(EASY8).length == 2
        assert c.solve(EASY8, algorithm="greedy").length == 2  # table-free: Hamming's check
    with channel_stub(served.address) as stub:
        with pytest.raises(grpc.RpcError):
            list(stub.SolveStream(pb.SolveRequest(tiles=[1, 2, 3])))
    lines = {r.getMessage().split(":")[0]: r for r in caplog.records
             if r.getMessage().startswith("solve")}
    bad = [r for r in caplog.records if r.getMessage().startswith("solve refused (INVALID_ARGUMENT)")]
    assert [r.method for r in bad] == ["pdbd.v1.Solver/Solve", "pdbd.v1.Solver/SolveStream"]
    assert all(r.peer.startswith("ipv4:127.0.0.1:") and r.getMessage().endswith("peer=" + r.peer)
               for r in bad)
    assert "solve refused (FAILED_PRECONDITION)" in lines
    table, free = [r for r in caplog.records if r.getMessage().startswith("solve 3x3 length=2")]
    assert all(r.getMessage().endswith("peer=" + r.peer) for r in (table, free))
    assert " artifact=" in table.getMessage()  # a table-free search's line had 'artifact=None'
    assert "artifact" not in free.getMessage() and free.artifact is None


@pytest.fixture
def ray_lines():
    """Ray's driver module, its printing of the raylets' reports and its loggers restored
    after the test (logs.take_ray_lines changes them)."""
    worker = pytest.importorskip("ray._private.worker",
                                 reason="the cluster extra is not installed")
    ray_logger = logging.getLogger("ray")
    saved = (worker.print_to_stdstream, list(ray_logger.handlers), ray_logger.propagate,
             ray_logger.level)
    yield worker
    worker.print_to_stdstream = saved[0]
    for h in list(ray_logger.handlers):
        ray_logger.removeHandler(h)
    for h in saved[1]:
        ray_logger.addHandler(h)
    ray_logger.propagate = saved[2]
    ray_logger.setLevel(saved[3])


def test_what_ray_prints_for_its_raylets_is_a_log_line(captured, ray_lines):
    """Ray's driver printed its raylets' reports (the head's autoscaler stopped, with its
    traceback) straight on stderr: lines that were not JSON among `--log-format json`."""
    worker = ray_lines
    logs.setup("json", "info", captured, force=True)
    logs.take_ray_lines()
    worker.print_to_stdstream({"lines": ["The autoscaler failed with the following error:\n"
                                         "Traceback (most recent call last):\n  File x\n"],
                               "pid": "raylet", "is_err": False}, ignore_prefix=False)
    lines = captured.getvalue().splitlines()
    assert len(lines) == 1, lines
    record = json.loads(lines[0])
    assert record["level"] == "WARNING" and record["logger"] == "pdbd.ray"
    assert record["message"].startswith("(raylet) The autoscaler failed with the following "
                                        "error:\nTraceback")


def test_ray_s_own_loggers_are_log_lines(captured, ray_lines):
    """Ray's loggers (`ray...`: the head's autoscaler error read as the driver connects,
    its error listener's failures) printed through Ray's own handler, in Ray's format,
    among `--log-format json`. Now the daemon's lines, from WARNING."""
    logs.setup("json", "info", captured, force=True)
    logs.take_ray_lines()
    logging.getLogger("ray._private.worker").warning("The autoscaler failed: x")
    logging.getLogger("ray._private.worker").info("Connecting to existing Ray cluster")
    lines = captured.getvalue().splitlines()
    assert len(lines) == 1, lines
    record = json.loads(lines[0])
    assert record["level"] == "WARNING" and record["logger"] == "ray._private.worker"
    assert record["message"] == "The autoscaler failed: x"


def test_serve_takes_ray_s_lines_before_it_connects(art_dir, ray_lines, caplog, capfd,
                                                    monkeypatch, tmp_path):
    """`pdbd serve --cluster` took Ray's lines only once ray.init had returned: what Ray
    printed while it connected (its error listener starts there, and says first what the
    head's autoscaler reported before) came out raw. A stand-in for the cluster prints as
    ray.init does, then fails."""
    import signal

    from pdbd.server import ServeConfig, serve
    from pdbtool.cluster.messages import ClusterError

    worker = ray_lines

    class Connecting:
        def __init__(self, address, **options):
            worker.print_to_stdstream({"lines": ["a raylet's report"], "pid": "raylet",
                                       "is_err": False}, ignore_prefix=False)
            logging.getLogger("ray._private.worker").warning("the autoscaler failed before")
            raise ClusterError("stopped here by the test")

    monkeypatch.setattr("pdbtool.cluster.driver.Cluster", Connecting)
    monkeypatch.setenv("RAY_gcs_rpc_server_reconnect_timeout_s", "60")  # (serve sets it)
    handlers = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
    try:
        with pytest.raises(ClusterError, match="stopped here by the test"):
            serve(ServeConfig(artifacts=str(art_dir), listen=f"unix:{tmp_path}/pdbd.sock",
                              cluster="10.0.0.5:6379", log_format="json", prefault=False))
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
    said = {(r.name, r.getMessage()) for r in caplog.records}
    assert ("pdbd.ray", "(raylet) a raylet's report") in said, said
    assert ("ray._private.worker", "the autoscaler failed before") in said, said
    out, err = capfd.readouterr()
    assert "raylet's report" not in out + err and "autoscaler failed" not in out + err
