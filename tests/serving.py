"""Helpers of the pdbd tests: boards, in-process servers, polling a server's counters,
and `pdbd` as a command (in-process or as a process)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

# One of the 17 positions 80 moves from the blank-last goal, the most any 15-puzzle needs
# (Brüngger, Marzetta, Fukuda & Nievergelt 1999): with the 15/5-5-5 tables its search runs
# for minutes, so a test that changes the table under it (or signals the process) does so
# while it is searching, whatever the machine's speed.
HARDEST = (0, 12, 9, 13, 15, 11, 10, 14, 3, 7, 2, 5, 4, 8, 6, 1)
# HARDEST's image towards the blank-first goal (puzzle.rotate_relabel): 80 moves from it.
# With Manhattan distance IDA* generated 1.8 billion nodes in 40 s on two threads here and
# had reached bound 74 of 80, each bound about five times the one before: an hour or more
# on any machine, so a test that stops it (a deadline, a cancel, a budget, a drain) always
# stops a running search. (Korf's #88, HARD before, is solved in about 20 s on two threads
# since the iterations go closest first; it ran for minutes before that lever: a test that
# stopped it after a few seconds was one more lever away from an answer.)
HARD = (15, 10, 8, 12, 11, 14, 9, 13, 2, 6, 5, 1, 3, 7, 4, 0)
EASY8 = (1, 2, 3, 4, 5, 6, 0, 7, 8)  # two moves from the blank-last goal
EASY15 = tuple(range(1, 14)) + (0, 14, 15)  # two moves from the blank-last goal
LOYD = tuple(range(1, 14)) + (15, 14, 0)  # 14 and 15 swapped: unsolvable
UNDECODABLE = (b"\xff", b"\x0a\xff", b"\x07", b"\x1a\x05ab")  # corrupt wire format


def running_daemon(tables, **options):
    """A started in-process pdbd on a free loopback port; stop() it when done."""
    from pdbd.server import Daemon

    daemon = Daemon(tables, "127.0.0.1:0", **options)
    daemon.start()
    return daemon


@contextlib.contextmanager
def daemon_serving(tables, **options):
    """running_daemon for a ``with`` block: stopped at its end. The block does not hold the
    tables given: only the daemon does, so that a reload can release them."""
    daemon = running_daemon(tables, **options)
    del tables
    try:
        yield daemon
    finally:
        daemon.stop(grace=1)


@contextlib.contextmanager
def channel_stub(address: str):
    """A raw pdbd.v1.Solver stub on its own channel, closed afterwards."""
    import grpc

    from pdbd.v1 import solver_pb2_grpc

    with grpc.insecure_channel(address) as channel:
        yield solver_pb2_grpc.SolverStub(channel)


def info(daemon) -> dict:
    from pdbd.client import SolverClient

    with SolverClient(daemon.address) as c:
        return c.info()


def wait_for(predicate, timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.005)
    return predicate()


def change_under(path, how: str, other) -> None:
    """Change a table file in use as an operator might by accident: ``truncate`` it to
    nothing, or ``copy over`` it the file ``other`` (opened with O_TRUNC, then written). On a
    thread: under a read lease the writer waits until the holder lets go (45 s if stuck)."""
    def change():
        if how == "truncate":
            os.truncate(path, 0)
        else:
            shutil.copyfile(other, path)
    writer = threading.Thread(target=change)
    writer.start()
    # Waited for in short sleeps, not join(): the lease's signal may go to any thread, and
    # its handler runs on the main thread only once that thread runs Python again (blocked
    # in a join, it waited out the 20 s, now and then, in the full suite)
    assert wait_for(lambda: not writer.is_alive(), 20), \
        "the change waited for the lease's whole break time"


@contextlib.contextmanager
def held_for_writing(path, timeout: float = 20):
    """``path`` held open for writing by another process for the block, as by a ``touch``
    that lasts: the block begins once the open has returned (a read lease this process
    holds was broken: its handler runs on the main thread, which waits here in short
    sleeps, never in a blocking call that another thread's signal would not interrupt)."""
    opened = Path(f"{path}.opened-{os.getpid()}")
    go = Path(f"{path}.close-{os.getpid()}")
    writer = subprocess.Popen([sys.executable, "-c", (
        "import os, sys, time\n"
        "f = open(sys.argv[1], 'r+b')\n"
        "open(sys.argv[2], 'w').close()\n"
        "while not os.path.exists(sys.argv[3]):\n"
        "    time.sleep(0.005)\n"
        "f.close()\n"), str(path), str(opened), str(go)])
    try:
        assert wait_for(lambda: opened.exists() or writer.poll() is not None, timeout), \
            "the writer's open waited for the lease's whole break time"
        assert writer.poll() is None, "the writer failed"
        yield writer
    finally:
        go.touch()
        assert wait_for(lambda: writer.poll() is not None, timeout)
        opened.unlink(missing_ok=True)
        go.unlink(missing_ok=True)


def never_sending(channel, path, release: threading.Event, timeout: float = 30):
    """Open a call of ``path`` that never sends its request (until ``release``)."""
    def requests():
        release.wait()
        return
        yield
    return channel.stream_unary(path).future(requests(), timeout=timeout)


def rss_kib(pid: int) -> int:
    """A process's resident memory (VmRSS), KiB."""
    with open(f"/proc/{pid}/status") as f:
        return next((int(line.split()[1]) for line in f if line.startswith("VmRSS:")), 0)


def table_mappings(directory) -> int:
    """Lines of /proc/self/maps backed by a file of ``directory``."""
    prefix = str(directory) + os.sep
    with open("/proc/self/maps") as f:
        return sum(1 for line in f if prefix in line)


def table_fds(directory) -> int:
    """This process's open files in ``directory``."""
    prefix = str(directory) + os.sep
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            n += os.readlink(f"/proc/self/fd/{fd}").startswith(prefix)
        except OSError:
            pass
    return n


def pool_submissions(daemon, monkeypatch) -> list:
    """The searches the daemon's worker pool takes from now on (one answered in the fast
    lane never reaches it), as a list that grows: each one's board shape."""
    taken = []
    submit = daemon.pool.submit

    def counted(job):
        future = submit(job)
        taken.append(job.solver.shape)
        return future

    monkeypatch.setattr(daemon.pool, "submit", counted)
    return taken


def worker_free_within(daemon, seconds: float) -> tuple[bool, float]:
    start = time.monotonic()
    ok = wait_for(lambda: info(daemon)["counters"]["running"] == 0, seconds)
    return ok, time.monotonic() - start


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    """`pdbd ARGV` in this process: exit code, stdout, stderr."""
    from pdbd import cli

    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def pdbd_process(*args, env: dict | None = None) -> subprocess.Popen:
    """`pdbd ARGS` as a process (the console script beside this interpreter)."""
    exe = Path(sys.executable).with_name("pdbd")
    return subprocess.Popen([str(exe), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)


def sigterm_after_a_solve(art_dir, *options, wait: float = 30) -> tuple[int, str]:
    """`pdbd serve` with ``options``: one solve, then SIGTERM; its exit code and stderr."""
    from pdbd.client import SolverClient
    from reference import free_port

    port = free_port()
    proc = pdbd_process("serve", "--artifacts", str(art_dir), "--listen", f"127.0.0.1:{port}",
                        "--threads", "1", *options)
    try:
        with SolverClient(f"127.0.0.1:{port}") as client:
            client.wait_serving(wait)
            assert client.solve(EASY8).length == 2
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=wait)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, err


class Drained:
    """A process's stderr read on a thread as it comes: a pipe nobody reads fills (64 KiB)
    and then blocks the process's next write, so a chatty log would hang the server."""

    def __init__(self, proc: subprocess.Popen):
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self.lines.extend, args=(proc.stderr,), daemon=True)
        self._reader.start()

    @property
    def closed(self) -> bool:
        """Every holder of the process's stderr has closed it (its children too)."""
        return not self._reader.is_alive()

    def text(self, timeout: float = 30) -> str:
        """All of it, once the process has closed its stderr (after it exited)."""
        self._reader.join(timeout)
        return "".join(self.lines)


@contextlib.contextmanager
def running_web(server_address: str):
    """`pdbd web` in this process on a free loopback port, solving through pdbd at
    ``server_address``; yields the page's base URL."""
    from pdbd.web import WebServer

    server = WebServer("127.0.0.1:0", server_address).start()
    try:
        yield server.url
    finally:
        server.stop()


def scrape(port: int, host: str = "127.0.0.1") -> dict:
    """The metrics at http://HOST:PORT/metrics: {(sample name, ((label, value), ...)): value}."""
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def sample(metrics: dict, name: str, **labels) -> float:
    """One sample's value (0 if absent: a counter not yet incremented)."""
    return metrics.get((name, tuple(sorted(labels.items()))), 0.0)
