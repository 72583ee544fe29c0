"""Faults and cancellation for real, each in a process of its own with a Ray of its own
(on loopback; the session's Ray is not used):

* Ctrl-C: SIGINT to `pdbtool solve --cluster local` while its node searches; it exits
  with 130 and every process its Ray started (the node's actor among them) is gone.
* A node that disappears: two raylets on this machine (one CPU each), the second killed
  mid-search (tests/cluster_two_nodes.py); the driver reports the lost node, its work goes
  to the other node, and the answer is still optimal. (A killed worker process that Ray
  restarts is tested in test_cluster.py.)
"""

import json
import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reference import interruptible
from serving import HARD

pytestmark = [pytest.mark.cluster, pytest.mark.process]

pytest.importorskip("ray", reason="the cluster extra is not installed: pip install -e '.[cluster]' in the checkout")

HERE = Path(__file__).resolve().parent
BUSY = re.compile(rb"[1-9]\d*/\d+ workers busy")


def parents() -> dict[int, int]:
    """pid -> parent pid of every process now."""
    out = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            out[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    return out


def descendants(root: int) -> set[int]:
    tree = parents()
    found, todo = set(), [root]
    while todo:
        pid = todo.pop()
        kids = [p for p, parent in tree.items() if parent == pid]
        found.update(kids)
        todo += kids
    return found


def running(pid: int) -> bool:
    """Alive and not a zombie (an orphan's zombie may wait for a reaper here)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def read_until(fd: int, pattern, seconds: float) -> bytes:
    """What a terminal shows until ``pattern`` appears (or the time is up)."""
    seen, end = b"", time.monotonic() + seconds
    while time.monotonic() < end and not pattern.search(seen):
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            try:
                seen += os.read(fd, 4096)
            except OSError:  # the other end closed
                break
    return seen


def test_ctrl_c_cancels_the_whole_job(tmp_path):
    """The progress line goes to a terminal (a pty), so it shows the busy workers; once
    the node searches, SIGINT goes to the command (as `kill -INT` would: the command, not
    Ray, must end the job)."""
    terminal, stderr = pty.openpty()
    proc = subprocess.Popen(
        interruptible("pdbtool", "solve", "--heuristic", "manhattan", "--goal", "blank-first",
                      "--cluster", "local", "--cluster-cache", str(tmp_path),
                      " ".join(map(str, HARD))),
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr)
    os.close(stderr)
    try:
        shown = read_until(terminal, BUSY, 120)
        assert BUSY.search(shown), shown.decode(errors="replace")[-2000:]
        ray_processes = descendants(proc.pid)
        assert any("NodeWorker" in command(p) for p in ray_processes)
        interrupted = time.monotonic()
        proc.send_signal(signal.SIGINT)
        assert proc.wait(60) == 130
        assert time.monotonic() - interrupted < 30
        end = time.monotonic() + 30
        while any(running(p) for p in ray_processes) and time.monotonic() < end:
            time.sleep(0.2)
        left = [command(p) for p in ray_processes if running(p)]
        assert not left, left
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(terminal)


def test_a_node_that_disappears_is_reported_and_its_work_redone(tmp_path):
    out = subprocess.run([sys.executable, str(HERE / "cluster_two_nodes.py"), str(tmp_path)],
                         capture_output=True, text=True, timeout=400)
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    assert out.returncode == 0 and lines, out.stderr[-3000:]
    r = json.loads(lines[-1])
    assert r["both_busy"], r
    assert r["finished"] and r["error"] is None, r
    assert r["length"] == r["optimal"]
    assert len(r["heard"]) == 1 and "lost" in r["heard"][0], r
