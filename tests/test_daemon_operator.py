"""pdbd as an operator runs it, as processes: the pid file, `pdbd web` and SIGHUP, and the
whole (unix socket, metrics, JSON logs, pid file, reload)."""

import json
import os
import signal
import subprocess
import time

import pytest

from reference import free_port
from serving import Drained, pdbd_process, wait_for

pytestmark = pytest.mark.process


def test_a_pid_file_of_a_running_process_is_refused_before_the_tables(tmp_path):
    pid_file = tmp_path / "pdbd.pid"
    pid_file.write_text(f"{os.getpid()}\n")  # this test's process: alive
    proc = pdbd_process("serve", "--artifacts", str(tmp_path), "--listen",
                        f"127.0.0.1:{free_port()}", "--pid-file", str(pid_file))
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 1, err
    assert f"names process {os.getpid()}, which is running" in err and "no artifacts" not in err
    assert pid_file.read_text() == f"{os.getpid()}\n"  # left alone


def test_pdbd_web_ignores_sighup(tmp_path):
    """`kill -HUP` meant for pdbd serve (pidof -x pdbd finds both) leaves pdbd web running."""
    pytest.importorskip("starlette")
    proc = pdbd_process("web", "--server", f"127.0.0.1:{free_port()}", "--listen",
                        f"127.0.0.1:{free_port()}")
    err = Drained(proc)
    try:
        assert wait_for(lambda: "pdbd web on" in "".join(err.lines) or proc.poll() is not None, 30)
        proc.send_signal(signal.SIGHUP)
        time.sleep(0.3)  # a process killed by SIGHUP is gone well within this
        assert proc.poll() is None, err.text()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "shutting down" in err.text()
