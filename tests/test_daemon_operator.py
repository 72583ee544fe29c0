"""pdbd as an operator runs it, as processes: the pid file, `pdbd web` and SIGHUP, and the
whole (unix socket, metrics, JSON logs, pid file, reload)."""

import contextlib
import json
import os
import re
import signal
import subprocess
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from pdbtool.errors import PdbError

from reference import free_port
from serving import Drained, pdbd_process, wait_for

pytestmark = pytest.mark.process


def test_a_pid_file_of_a_running_pdbd_is_refused_before_the_tables(tmp_path):
    import sys

    pid_file = tmp_path / "pdbd.pid"  # a live process whose command line is a pdbd's
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", "pdbd"])
    try:
        pid_file.write_text(f"{other.pid}\n")
        proc = pdbd_process("serve", "--artifacts", str(tmp_path), "--listen",
                            f"127.0.0.1:{free_port()}", "--pid-file", str(pid_file))
        _, err = proc.communicate(timeout=30)
    finally:
        other.kill()
        other.wait()
    assert proc.returncode == 1, err
    assert f"names process {other.pid}, which is running" in err and "no artifacts" not in err
    assert pid_file.read_text() == f"{other.pid}\n"  # left alone


def test_a_pid_file_of_another_program_or_a_fifo(tmp_path, caplog):
    """A pid file naming a live process that is no pdbd (its number taken again after an
    OOM kill or a reboot) blocked every restart: it is replaced, with a warning saying
    what ran there. A FIFO as the pid file hung the start, silent: refused by name."""
    from pdbd.pidfile import PidFile, PidFileError

    path = tmp_path / "pdbd.pid"
    sleeper = subprocess.Popen(["sleep", "120"])
    try:
        assert wait_for(lambda: Path(f"/proc/{sleeper.pid}/cmdline").read_bytes(), 10)  # exec'd
        path.write_text(f"{sleeper.pid}\n")
        with caplog.at_level("WARNING", logger="pdbd"):
            pid_file = PidFile(path)
            pid_file.write()
        assert path.read_text() == f"{os.getpid()}\n"
        assert [r.getMessage() for r in caplog.records] == [
            f"replaced the pid file {path}: process {sleeper.pid} is not a pdbd (sleep 120)"]
        pid_file.remove()
    finally:
        sleeper.kill()
        sleeper.wait()
    fifo = tmp_path / "fifo.pid"
    os.mkfifo(fifo)
    with pytest.raises(PidFileError, match="fifo.pid: it is not a regular file"):
        PidFile(fifo).check()


def test_a_stale_pid_file_is_replaced_and_said(tmp_path, caplog):
    """A file naming no live process (a crash's, or not a process id) is replaced, with a
    log line saying what it held; a live one is never touched."""
    from pdbd.pidfile import PidFile

    gone = subprocess.Popen(["true"])
    gone.wait()
    for content, said in ((f"{gone.pid}\n", f"process {gone.pid} is gone"),
                          ("garbage\n", "it held no process id ('garbage')"), (None, None)):
        path = tmp_path / "pdbd.pid"
        path.unlink(missing_ok=True)
        if content is not None:
            path.write_text(content)
        caplog.clear()
        with caplog.at_level("WARNING", logger="pdbd"):
            pid_file = PidFile(path)
            pid_file.write()
        assert path.read_text() == f"{os.getpid()}\n"
        lines = [r.getMessage() for r in caplog.records]
        assert lines == ([f"replaced the pid file {path}: {said}"] if said else []), lines
        pid_file.remove()
        assert not path.exists()


def test_a_start_up_failure_with_json_logs_is_a_json_line(tmp_path):
    """--log-format json: the line saying why the daemon did not start is a log record too
    (it was the CLI's plain `pdbd: ...`, the one line of stderr a log shipper could not parse)."""
    for command in (("serve", "--artifacts", str(tmp_path), "--listen", f"127.0.0.1:{free_port()}"),
                    ("web", "--listen", "192.0.2.7:0", "--server", "127.0.0.1:1")):  # TEST-NET
        proc = pdbd_process(*command, "--log-format", "json")
        try:
            _, err = proc.communicate(timeout=60)
        finally:
            proc.kill()
        assert proc.returncode == 1, err
        lines = [json.loads(line) for line in err.splitlines()]
        last = lines[-1]
        assert last["level"] == "ERROR" and last["time"] and last["exit_code"] == 1, last
        assert ("no artifacts" in last["message"] if command[0] == "serve"
                else "refusing to listen on 192.0.2.7:0" in last["message"]), last


def test_a_usage_error_with_json_logs_is_a_json_line(tmp_path):
    """A command line argparse refuses, with --log-format json (either spelling): its error is
    one JSON log record (it was argparse's usage text); without it, one line of text."""
    for fmt in (("--log-format", "json"), ("--log-format=json",)):
        proc = pdbd_process("serve", "--artifacts", str(tmp_path), "--threads", "x", *fmt)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 2, err
        [line] = [json.loads(line) for line in err.splitlines()]
        assert line["level"] == "ERROR" and line["exit_code"] == 2, line
        assert "argument --threads" in line["message"], line
    proc = pdbd_process("serve", "--artifacts", str(tmp_path), "--threads", "x")
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2 and err == ("pdbd serve: error: argument --threads: threads "
                                            "must be a whole number, not 'x' (see pdbd serve "
                                            "--help)\n"), err


def test_pdbd_web_ignores_sighup(tmp_path):
    """`kill -HUP` meant for pdbd serve (pidof -x pdbd finds both) leaves pdbd web running."""
    import urllib.request

    pytest.importorskip("starlette")
    listen = f"127.0.0.1:{free_port()}"
    proc = pdbd_process("web", "--server", f"127.0.0.1:{free_port()}", "--listen", listen)
    err = Drained(proc)
    try:
        assert wait_for(lambda: "pdbd web on" in "".join(err.lines) or proc.poll() is not None, 30)
        proc.send_signal(signal.SIGHUP)
        time.sleep(0.3)  # a process killed by SIGHUP is gone well within this
        assert proc.poll() is None, err.text()
        # and not stopping either (a graceful stop on SIGHUP would also end with exit 0)
        with urllib.request.urlopen(f"http://{listen}/", timeout=10) as page:
            assert page.status == 200
        assert "shutting down" not in "".join(err.lines), err.lines
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "shutting down" in err.text()


def manhattan_daemon():
    from pdbd.server import Daemon
    from pdbtool.heuristics.table_free import table_free
    from pdbtool.selection import TableSet

    daemon = Daemon(TableSet({4: table_free("manhattan", 4)}), "127.0.0.1:0", threads=1,
                    max_queue=1)
    daemon.start()
    return daemon


def test_drain_lets_a_running_search_finish_and_refuses_new_ones(monkeypatch):
    """A search running when the drain begins finishes during it with its own answer (its
    node budget); a new call meanwhile is refused. The search cannot end before the drain
    begins, whatever the machine's speed: the worker's iterations wait (Solver.search_tasks)
    until the test has seen the drain (it was a race: a budget of 10^8 nodes, a second or
    two here, against the moment between the search's start and the stop)."""
    import threading

    import grpc

    from pdbd.v1 import solver_pb2 as pb
    from pdbtool.search.solver import Solver
    from serving import HARD, channel_stub, info

    drained = threading.Event()
    search_tasks = Solver.search_tasks

    def after_the_drain_began(self, *args):
        if threading.current_thread().name.startswith("pdbd-search"):  # the pool's worker
            drained.wait(60)
        return search_tasks(self, *args)

    monkeypatch.setattr(Solver, "search_tasks", after_the_drain_began)
    daemon = manhattan_daemon()
    try:
        with channel_stub(daemon.address) as stub:
            budgeted = stub.Solve.future(pb.SolveRequest(tiles=HARD, goal="blank-first",
                                                         node_budget=1_000_000), timeout=120)
            assert wait_for(lambda: info(daemon)["counters"]["running"] == 1, 5)
            stopper = threading.Thread(target=daemon.stop, kwargs={"grace": 1, "drain": 120})
            stopper.start()
            assert wait_for(lambda: daemon.servicer.closing, 5)
            with pytest.raises(grpc.RpcError) as refused:
                stub.Solve(pb.SolveRequest(tiles=HARD, goal="blank-first"), timeout=10)
            assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
            assert ("pdbd-refused", "unavailable") in refused.value.trailing_metadata()
            assert "shutting down" in refused.value.details()
            assert info(daemon)["counters"]["running"] == 1  # Info answers while it drains
            assert not budgeted.done()
            drained.set()  # the search goes on, to its budget
            with pytest.raises(grpc.RpcError) as e:
                budgeted.result()
            assert e.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED  # its own end
            assert ("pdbd-limit", "node-budget") in e.value.trailing_metadata()
            stopper.join(30)
            assert not stopper.is_alive()
    finally:
        drained.set()


def test_drain_time_over_stops_the_searches_left():
    import grpc

    from pdbd.v1 import solver_pb2 as pb
    from serving import HARD, channel_stub, info

    daemon = manhattan_daemon()
    with channel_stub(daemon.address) as stub:
        running = stub.Solve.future(pb.SolveRequest(tiles=HARD, goal="blank-first"), timeout=120)
        assert wait_for(lambda: info(daemon)["counters"]["running"] == 1, 5)
        start = time.monotonic()
        daemon.stop(grace=60, drain=0.5)
        took = time.monotonic() - start
        with pytest.raises(grpc.RpcError) as e:
            running.result()
    assert e.value.code() == grpc.StatusCode.UNAVAILABLE and "shutting down" in e.value.details()
    # waited the drain (HARD runs for an hour or more), not the grace (60 s)
    assert 0.5 <= took < 30, took


def test_a_second_sigterm_ends_the_drain_at_once(art_dir, tmp_path):
    """An operator who has waited enough (Ctrl-C again) stops the searches left at once,
    instead of waiting out --drain or killing the daemon (which leaves its pid file)."""
    import grpc

    from pdbd.v1 import solver_pb2 as pb
    from serving import HARDEST, channel_stub

    pid_file = tmp_path / "pdbd.pid"
    address = f"127.0.0.1:{free_port()}"
    proc = pdbd_process("serve", "--artifacts", str(art_dir), "--listen", address, "--threads",
                        "1", "--drain", "600", "--grace", "1", "--pid-file", str(pid_file))
    err = Drained(proc)
    try:
        assert wait_for(lambda: pid_file.exists() or proc.poll() is not None, 120), err.lines
        with channel_stub(address) as stub:
            long = stub.Solve.future(pb.SolveRequest(tiles=HARDEST), timeout=600)  # 80 moves:
            assert wait_for(lambda: stub.Info(pb.InfoRequest()).counters.running == 1, 30)
            proc.send_signal(signal.SIGTERM)  # minutes on the 5-5-5 tables: it is draining
            assert wait_for(lambda: any("draining: 1 search in flight" in line for line in err.lines)
                            or proc.poll() is not None, 30), err.lines
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(30) == 0
            with pytest.raises(grpc.RpcError) as e:
                long.result(timeout=30)
            assert e.value.code() == grpc.StatusCode.UNAVAILABLE
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "drain cut short" in err.text()
    assert not pid_file.exists()


def test_systemd_is_told_ready_reloading_and_stopping(art_dir, tmp_path):
    """Type=notify (sd_notify over NOTIFY_SOCKET): READY=1 once the daemon serves (its
    health SERVING, not when the process began), RELOADING=1 and READY=1 around a SIGHUP
    reload, STOPPING=1 at SIGTERM."""
    import socket

    from pdbd.client import SolverClient

    address = f"127.0.0.1:{free_port()}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as manager:
        manager.bind(str(tmp_path / "notify"))
        manager.settimeout(120)  # the daemon's start compiles the kernels on a fresh cache

        def told() -> list[str]:
            return manager.recv(4096).decode().split("\n")

        proc = pdbd_process("serve", "--artifacts", str(art_dir), "--listen", address,
                            "--threads", "1",
                            env=dict(os.environ, NOTIFY_SOCKET=str(tmp_path / "notify")))
        err = Drained(proc)
        try:
            assert told()[0] == "READY=1", err.lines
            with SolverClient(address) as client:
                assert client.health() == "SERVING"
            proc.send_signal(signal.SIGHUP)
            reloading = told()
            assert reloading[0] == "RELOADING=1" and reloading[1].startswith("MONOTONIC_USEC=")
            assert told()[0] == "READY=1"
            assert wait_for(lambda: any("reloaded: serving" in line for line in err.lines), 30)
            proc.send_signal(signal.SIGTERM)
            assert told()[0] == "STOPPING=1"
            assert proc.wait(30) == 0, err.text()
        finally:
            if proc.poll() is None:
                proc.kill()


def test_the_systemd_unit_verifies(tmp_path):
    """docs/pdbd.service, with ExecStart pointed at this venv's pdbd (verify checks that
    the command exists); any warning (an unknown key) fails too."""
    import shutil
    import sys
    from pathlib import Path

    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed")
    unit = (Path(__file__).parents[1] / "docs" / "pdbd.service").read_text()
    assert "/opt/pdbd/venv/bin/pdbd serve" in unit
    here = tmp_path / "pdbd.service"
    here.write_text(unit.replace("/opt/pdbd/venv/bin/pdbd", str(Path(sys.executable).with_name("pdbd"))))
    done = subprocess.run(["systemd-analyze", "verify", str(here)], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0 and not done.stdout.strip() and not done.stderr.strip(), done


def test_an_operator_run_over_a_unix_socket(art_dir, oracle8_last, tmp_path):
    """The bar: `pdbd serve --listen unix:PATH --metrics 127.0.0.1:PORT --log-format json
    --pid-file F`: optimal answers over the socket, counted in /metrics; every log line
    JSON with time, level and message; SIGHUP to the pid in F reloads, and it answers on."""
    import random
    import stat

    from pdbd.client import SolverClient
    from serving import EASY15, sample, scrape

    sock, pid_file, metrics = tmp_path / "pdbd.sock", tmp_path / "pdbd.pid", free_port()
    proc = pdbd_process("serve", "--artifacts", str(art_dir), "--listen", f"unix:{sock}",
                        "--metrics", f"127.0.0.1:{metrics}", "--log-format", "json",
                        "--pid-file", str(pid_file), "--threads", "1")
    err = Drained(proc)
    boards = random.Random(37).sample(sorted(oracle8_last), 20)
    try:
        assert wait_for(lambda: pid_file.exists() or proc.poll() is not None, 60), err.lines
        assert proc.poll() is None, err.text()
        assert pid_file.read_text() == f"{proc.pid}\n"
        assert stat.S_IMODE(sock.stat().st_mode) == 0o600
        with SolverClient(f"unix:{sock}") as c:
            c.wait_serving(30)
            for b in boards:
                assert c.solve(b).length == oracle8_last[b], b
            assert c.solve(EASY15).length == 2
            m = scrape(metrics)
            assert sample(m, "pdbd_requests_total", method="pdbd.v1.Solver/Solve",
                          code="OK") == len(boards) + 1
            assert sample(m, "pdbd_search_duration_seconds_count", size="3x3") == len(boards)
            assert sample(m, "pdbd_search_duration_seconds_count", size="4x4") == 1
            assert sample(m, "pdbd_nodes_generated_total", size="3x3") >= sum(
                oracle8_last[b] for b in boards)  # at least one node a move
            assert {dict(k[1])["partition"] for k in m if k[0] == "pdbd_table_info"} == {
                "8/full", "15/5-5-5"}
            os.kill(int(pid_file.read_text()), signal.SIGHUP)
            assert wait_for(lambda: any('"reloaded: serving' in line for line in err.lines)
                            or proc.poll() is not None, 60), err.lines
            assert c.solve(boards[0]).length == oracle8_last[boards[0]]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    lines = [json.loads(line) for line in err.text().splitlines()]
    assert all(line["time"] and line["level"] and line["message"] for line in lines)
    messages = [line["message"] for line in lines]
    assert any(m.startswith("SIGHUP: reloading") for m in messages), messages
    solves = [line for line in lines if line["message"].startswith("solve ")]
    assert len(solves) == len(boards) + 2
    assert all(s["code"] == "OK" and s["method"] == "pdbd.v1.Solver/Solve" and s["nodes"] > 0
               and s["seconds"] >= 0 and s["peer"] for s in solves)
    assert not pid_file.exists() and not sock.exists()


@pytest.mark.parametrize("where", ["a directory", "under a file", "in /proc"])
def test_a_pid_file_that_cannot_be_written_is_refused_before_the_tables(tmp_path, where):
    """Said at start-up, by its cause; they were said only once the daemon served (its
    directory looked writable) or named the wrong cause ("no such directory")."""
    from pdbd.pidfile import PidFile, PidFileError

    (tmp_path / "d").mkdir()
    (tmp_path / "f").write_text("")
    path, said = {"a directory": (tmp_path / "d", "it is a directory"),
                  "under a file": (tmp_path / "f" / "p.pid", f"{tmp_path / 'f'} is not a directory"),
                  "in /proc": (Path("/proc/pdbd-test.pid"), "a file cannot be made in /proc")}[where]
    with pytest.raises(PidFileError, match=re.escape(said)):
        PidFile(path).check()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d", "f"]  # no probe left


def test_a_sigterm_while_it_starts_stops_it_before_serving(art_dir, tmp_path, monkeypatch,
                                                           caplog):
    """A SIGTERM while the daemon warms its kernels (bound already): the sizes not yet warm
    are skipped, it never serves, says so, and leaves no socket or pid file (it returned
    without stopping the server: no log line, the socket left behind)."""
    from pdbd import cli, server

    sock, pid_file = tmp_path / "pdbd.sock", tmp_path / "pdbd.pid"
    warmed, started = [], []
    real = server.warm_up

    def signalled_first(solvers, stopping=None):
        os.kill(os.getpid(), signal.SIGTERM)  # the handler sets stopping
        assert stopping is not None and stopping.is_set()
        real(solvers, stopping)
        warmed.append(len(solvers))

    monkeypatch.setattr(server, "warm_up", signalled_first)
    monkeypatch.setattr(server.Daemon, "start", lambda self: started.append(self))
    monkeypatch.setattr("pdbtool.search.warm.pending", lambda *a: pytest.fail("warmed a size"))
    # --mlock read every table in (gigabytes) for a daemon that would never serve
    monkeypatch.setattr(server, "lock_tables", lambda tables: pytest.fail("locked the tables"))
    handlers = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
    try:
        with caplog.at_level("INFO", logger="pdbd"):
            code = cli.main(["serve", "--artifacts", str(art_dir), "--listen", f"unix:{sock}",
                             "--pid-file", str(pid_file), "--no-prefault", "--mlock"])
    finally:
        for s, h in handlers.items():
            signal.signal(s, h)
    assert code == 0 and warmed == [2] and not started
    lines = [r.getMessage() for r in caplog.records]
    assert any("stopping before serving" in line for line in lines), lines
    assert not any(line.startswith("serving on") for line in lines), lines
    assert not sock.exists() and not pid_file.exists()


def test_a_sigterm_while_the_tables_are_checked_stops_at_once(art_dir, tmp_path, monkeypatch,
                                                              caplog):
    """A SIGTERM while the tables are checked (minutes for a large table without a stamp)
    stopped nothing until every table was checked; and a SIGHUP in the daemon's first
    second killed it (exit 129). Now the check stops at once, exit 0, said; a SIGHUP asks
    for a reload from the first moment."""
    from pdbd import cli, server

    pid_file = tmp_path / "pdbd.pid"
    checked = []

    def checking(directory, **options):
        os.kill(os.getpid(), signal.SIGHUP)  # (a reload asked for: nothing else)
        os.kill(os.getpid(), signal.SIGTERM)  # raised here, in the middle of the checks
        checked.append(directory)  # never reached
        return real(directory, **options)

    real = server.load_directory
    monkeypatch.setattr(server, "load_directory", checking)
    handlers = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
    try:
        with caplog.at_level("INFO", logger="pdbd"):
            code = cli.main(["serve", "--artifacts", str(art_dir), "--listen", "127.0.0.1:0",
                             "--pid-file", str(pid_file)])
    finally:
        for s, h in handlers.items():
            signal.signal(s, h)
    assert code == 0 and checked == []
    lines = [r.getMessage() for r in caplog.records]
    assert "stopping before serving: a SIGTERM or SIGINT came while it started" in lines, lines
    assert not pid_file.exists()


class _CompilingSolver:
    """A solver whose warm-up solve is a compile that ends only when told (``go``)."""

    def __init__(self, error: Exception | None = None):
        self.heuristic = SimpleNamespace(H=object(), name="fake")
        self.solving, self.go, self.error = threading.Event(), threading.Event(), error

    def kernel_parts(self, threads):
        return ("serial",)

    def solve(self, board, goal):
        self.solving.set()
        assert self.go.wait(30)
        if self.error:
            raise self.error


def test_a_sigterm_during_the_start_up_compile_does_not_wait_for_it(monkeypatch, caplog):
    """The compile under way (10-20 s on a fresh machine) held the stop until it ended:
    warm_up returns once ``stopping`` is set, the compile left to end with the process."""
    from pdbd import warming

    monkeypatch.setattr("pdbtool.search.warm.pending", lambda *a: 10.0)
    solver, stopping, returned = _CompilingSolver(), threading.Event(), threading.Event()
    thread = threading.Thread(target=lambda: (warming.warm_up({(4, 4): solver}, stopping),
                                              returned.set()))
    with caplog.at_level("INFO", logger="pdbd"):
        thread.start()
        try:
            assert solver.solving.wait(30)
            stopping.set()
            assert returned.wait(30) and not solver.go.is_set()  # the compile still "runs"
        finally:
            solver.go.set()
            thread.join(30)
    assert any("compile for (4, 4) left unfinished" in r.getMessage() for r in caplog.records)


def test_a_start_up_compile_that_fails_is_raised_with_stopping_given(monkeypatch):
    from pdbd import warming

    monkeypatch.setattr("pdbtool.search.warm.pending", lambda *a: 0.0)
    solver = _CompilingSolver(PdbError("the table changed"))
    solver.go.set()
    with pytest.raises(PdbError, match="the table changed"):
        warming.warm_up({(4, 4): solver}, threading.Event())


def test_metrics_on_the_listen_address_are_refused_before_the_tables(tmp_path, capsys):
    """They took the port first, and gRPC's bind then failed after the tables loaded, in
    gRPC's words (and a line of its own that was not JSON)."""
    from pdbd import cli

    port = free_port()
    code = cli.main(["serve", "--artifacts", str(tmp_path), "--listen", f"127.0.0.1:{port}",
                     "--metrics", f"127.0.0.1:{port}"])
    err = capsys.readouterr().err
    assert code == 1 and "is --listen's address: give the metrics a port of their own" in err
    assert "no artifacts" not in err


def test_a_reload_closes_the_files_of_the_tables_loaded_at_start(served_dir):
    """The rollout the README gives (a new file renamed over the old, then SIGHUP): the
    tables replaced were said released, but `pdbd serve` itself still held the tables it
    loaded at start (their mappings' files open, deleted: the disk space held until a
    restart). A reload's replaced tables were released; now the start's are too."""
    import shutil

    listen = f"127.0.0.1:{free_port()}"
    proc = pdbd_process("serve", "--artifacts", str(served_dir), "--listen", listen)
    err = Drained(proc)
    try:
        assert wait_for(lambda: "serving on" in "".join(err.lines) or proc.poll() is not None, 60)
        for path in served_dir.glob("*.h5"):
            shutil.copy(path, path.with_suffix(".new"))
            os.replace(path.with_suffix(".new"), path)
        proc.send_signal(signal.SIGHUP)
        assert wait_for(lambda: "released the tables replaced by a reload" in "".join(err.lines), 60)

        def deleted() -> list[str]:
            held = []
            for fd in os.listdir(f"/proc/{proc.pid}/fd"):
                with contextlib.suppress(OSError):
                    target = os.readlink(f"/proc/{proc.pid}/fd/{fd}")
                    if target.startswith(str(served_dir)) and target.endswith("(deleted)"):
                        held.append(target)
            return held

        assert wait_for(lambda: not deleted(), 10), deleted()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()


def test_the_command_lines_defaults_are_the_configurations():
    """`pdbd serve --artifacts DIR` runs the ServeConfig that Python gets with only DIR
    given: the library's defaults and the command's never drift apart."""
    from pdbd import cli
    from pdbd.server import ServeConfig
    from pdbtool.errors import BadInput

    args = cli.parser().parse_args(["serve", "--artifacts", "tables"])
    assert cli.serve_config(args) == ServeConfig(artifacts="tables")
    # --cluster-above without --cluster was taken in silence (--cluster-shared was refused)
    lone = cli.parser().parse_args(["serve", "--artifacts", "t", "--cluster-above", "5"])
    with pytest.raises(BadInput, match="--cluster-above needs --cluster"):
        cli.serve_config(lone)


def test_every_serve_option_reaches_the_configuration(tmp_path):
    from pdbd import cli
    from pdbd.server import ServeConfig

    args = cli.parser().parse_args([
        "serve", "--artifacts", "t", "--listen", "unix:/s", "--metrics", "127.0.0.1:9",
        "--pid-file", "p", "--threads", "3", "--max-queue", "4", "--max-search-seconds", "0",
        "--max-nodes", "5", "--max-search-memory", "1M", "--max-per-client", "0",
        "--trusted-proxy", "10.0.0.0/8", "--trusted-proxy", "unix", "--request-timeout", "6",
        "--idle-timeout", "7", "--max-connection-age", "8", "--no-reflection",
        "--tls-cert", "c", "--tls-key", "k", "--client-ca", "ca", "--insecure", "--mlock",
        "--no-prefault", "--grace", "0", "--drain", "9", "--cluster", "local",
        "--cluster-above", "10", "--cluster-shared", "sh", "--cluster-cache", "cc",
        "--log-format", "json", "--log-level", "warning", "--verbose"])
    assert cli.serve_config(args) == ServeConfig(
        artifacts="t", listen="unix:/s", metrics="127.0.0.1:9", pid_file="p", threads=3,
        max_queue=4, max_search_seconds=None, max_nodes=5, max_search_memory=1 << 20,
        max_per_client=0, trusted_proxies=("10.0.0.0/8", "unix"), request_timeout=6.0,
        idle_timeout=7.0, max_connection_age=8.0, reflection=False, tls_cert="c",
        tls_key="k", client_ca="ca", insecure=True, mlock=True, prefault=False, grace=0.0,
        drain=9.0, cluster="local", cluster_above=10, cluster_shared="sh",
        cluster_cache="cc", log_format="json", log_level="debug")  # (--verbose wins)


def test_serve_runs_from_python_with_a_configuration(art_dir, tmp_path, caplog):
    """The library's entry point without a command line: serve(ServeConfig(...)) answers
    until SIGTERM, then returns 0 and leaves no socket or pid file."""
    import threading

    from pdbd.client import SolverClient
    from pdbd.server import ServeConfig, serve
    from serving import EASY8

    sock, pid_file = tmp_path / "pdbd.sock", tmp_path / "pdbd.pid"
    answered, returned = [], threading.Event()

    def query_then_stop():
        if not wait_for(lambda: pid_file.exists() or returned.is_set(), 120):
            return
        if returned.is_set():  # (serve failed: no SIGTERM for the test's own process)
            return
        try:
            with SolverClient(f"unix:{sock}") as c:
                answered.append(c.solve(EASY8).length)
        finally:
            os.kill(os.getpid(), signal.SIGTERM)  # serve's handler stops it

    handlers = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
    client = threading.Thread(target=query_then_stop)
    try:
        with caplog.at_level("INFO", logger="pdbd"):
            client.start()
            code = serve(ServeConfig(artifacts=str(art_dir), listen=f"unix:{sock}",
                                     pid_file=str(pid_file), prefault=False, grace=1.0))
    finally:
        returned.set()
        client.join()
        for s, h in handlers.items():
            signal.signal(s, h)
    assert code == 0 and answered == [2]
    lines = [r.getMessage() for r in caplog.records]
    assert any(line.startswith(f"serving on unix:{sock}") for line in lines), lines
    assert not sock.exists() and not pid_file.exists()


def test_a_configuration_with_half_of_tls_is_refused_before_the_tables(tmp_path):
    from pdbd.server import ServeConfig, serve
    from pdbtool.errors import BadInput

    with pytest.raises(BadInput, match="give --tls-cert and --tls-key together"):
        serve(ServeConfig(artifacts=str(tmp_path), tls_cert="cert.pem"))


def test_a_pid_file_of_a_daemon_started_from_python_is_refused(tmp_path):
    """serve(ServeConfig(pid_file=...)) from a program whose command line names no pdbd:
    its file was taken for another program's and replaced, and the second daemon then
    removed it at its exit while the first still ran. The writer holds the file's lock."""
    import sys

    from pdbd.pidfile import PidFile

    path = tmp_path / "pdbd.pid"
    first = PidFile(path)  # this test's process: its command line is pytest's
    first.write()
    try:
        probe = subprocess.run(
            [sys.executable, "-c", "import sys\nfrom pdbd.pidfile import PidFile, PidFileError\n"
             "try:\n    PidFile(sys.argv[1]).check()\nexcept PidFileError as e:\n"
             "    print(e)\n", str(path)], capture_output=True, text=True, timeout=60)
        assert f"names process {os.getpid()}, which is running" in probe.stdout, probe
    finally:
        first.remove()
    assert not path.exists()


def test_of_two_daemons_writing_one_pid_file_at_once_the_second_is_refused(tmp_path,
                                                                          monkeypatch):
    """Each checked, then renamed its own file into place: two starts within moments of
    each other both wrote it, and both served. The check and the rename are one step."""
    from pdbd import pidfile
    from pdbd.pidfile import PidFile, PidFileError

    path = tmp_path / "pdbd.pid"
    first, second = PidFile(path), PidFile(path)
    monkeypatch.setattr(second, "_temporary", lambda: tmp_path / ".second.tmp")  # one pid
    outcome, real_replace, started = [], os.replace, []

    def write_second():
        try:
            second.write()
            outcome.append("written")
        except PidFileError as e:
            outcome.append(str(e))

    def replace(src, dst):
        if not started and Path(dst) == path:  # the first, between check and rename
            started.append(threading.Thread(target=write_second))
            started[0].start()
            started[0].join(2)  # it waits for the first to finish (it wrote over it before)
        real_replace(src, dst)

    monkeypatch.setattr(pidfile.os, "replace", replace)
    try:
        first.write()
        started[0].join(30)
        assert len(outcome) == 1 and "which is running: another pdbd?" in outcome[0], outcome
        assert path.read_text() == f"{os.getpid()}\n" and not (tmp_path / ".second.tmp").exists()
    finally:
        second.remove()
        first.remove()
    assert not path.exists()
