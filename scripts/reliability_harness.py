"""What the reliability cases share: the case type, the processes they start (`pdbd serve`,
`pdbtool`) and what they read of them (/proc), each bounded. scripts/reliability.py runs the
cases of reliability_daemon.py and reliability_tools.py."""

from __future__ import annotations

import contextlib
import os
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "scripts"))
BIN = Path(sys.executable).parent
TABLE = "15-6-6-3.h5"
CASE_SECONDS = 240  # a case still running after this is reported as a failure


class Case(NamedTuple):
    name: str
    finding: str  # "1".."7", "7-msg" (the unclear messages of item 7), "bar", or "3rd" (the
    # third probe: a fresh user's audit, 2026-11-26)
    expected: str
    run: Callable[[], tuple[str, bool]]  # -> (observed, passed)
    seconds: float = CASE_SECONDS


def in_dir(tmp: Path, name: str, finding: str, expected: str, fn, seconds=CASE_SECONDS) -> Case:
    """A case whose function ``fn(directory)`` gets a fresh directory below ``tmp``."""
    def run():
        d = tmp / name
        d.mkdir()
        return fn(d)
    return Case(name, finding, expected, run, seconds)


# -- processes ----------------------------------------------------------------------------

STARTED: list[subprocess.Popen] = []  # killed at exit if a case left them


def table_source() -> Path:
    """The 15/6-6-3 artifact (artifacts/ of this checkout, or of the main checkout)."""
    for d in (ROOT / "artifacts", Path("/work/main/artifacts")):
        if (d / TABLE).exists():
            return d / TABLE
    sys.exit(f"reliability: no {TABLE}: build it with `pdbtool build 15/6-6-3`")


def served_dir(tmp: Path) -> Path:
    """A directory serving a copy of the 15/6-6-3 table (12 MB, a case may change it), with
    a valid stamp. Never a hard link: that changes the shared file's ctime, which its stamp
    holds, so every later load of it would re-run every check."""
    from pdbtool.tables import artifact, trust

    d = tmp / "served"
    d.mkdir(exist_ok=True)
    shutil.copy(table_source(), d / TABLE)
    trust.record(artifact.read_meta(d / TABLE))
    return d


def spawn(*argv, preexec_fn=None, env=None) -> subprocess.Popen:
    proc = subprocess.Popen([str(a) for a in argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=preexec_fn, env=env)  # noqa: PLW1509
    STARTED.append(proc)
    return proc


class Log:
    """A process's stderr read as it comes (a full pipe would block the process)."""

    def __init__(self, proc: subprocess.Popen):
        self.lines: list[str] = []
        self.thread = threading.Thread(target=self.lines.extend, args=(proc.stderr,),
                                       daemon=True)
        self.thread.start()

    def text(self) -> str:
        return "".join(self.lines)

    def wait_for(self, needle: str, timeout: float, start: int = 0) -> bool:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if any(needle in line for line in self.lines[start:]):
                return True
            time.sleep(0.05)
        return False


class Daemon(NamedTuple):
    proc: subprocess.Popen
    address: str
    log: Log
    directory: Path

    @property
    def pid(self) -> int:
        return self.proc.pid


@contextlib.contextmanager
def pdbd(directory: Path, *options, preexec_fn=None, wait: float = 120):
    """`pdbd serve` on a free loopback port, serving ``directory``, until the block ends."""
    from reference import free_port

    from pdbd.client import SolverClient

    address = f"127.0.0.1:{free_port()}"
    proc = spawn(BIN / "pdbd", "serve", "--artifacts", directory, "--listen", address,
                 *options, preexec_fn=preexec_fn)
    log = Log(proc)
    try:
        with SolverClient(address) as client:
            client.wait_serving(wait)
        yield Daemon(proc, address, log, directory)
    finally:
        stop(proc)


def stop(proc: subprocess.Popen, timeout: float = 30) -> int | None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


def pdbtool(*args, prefix=(), preexec_fn=None, env=None, stdout=subprocess.PIPE,
            timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([*prefix, str(BIN / "pdbtool"), *map(str, args)], stdout=stdout,
                          stderr=subprocess.PIPE, text=True, preexec_fn=preexec_fn, env=env,
                          timeout=timeout, check=False)


def fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def table_mappings(pid: int) -> int:
    with open(f"/proc/{pid}/maps") as f:
        return sum(".h5" in line for line in f)


def rss_mib(pid: int) -> float:
    from serving import rss_kib

    return rss_kib(pid) / 1024


def descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        found = subprocess.run(["pgrep", "-P", str(todo.pop())], capture_output=True,
                               text=True, check=False).stdout.split()
        out += map(int, found)
        todo += map(int, found)
    return out


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(") ", 1)[-1][0] != "Z"
    except FileNotFoundError:
        return False


def within(predicate, timeout: float, step: float = 0.05) -> float | None:
    """Seconds until ``predicate()`` held, or None if it did not within ``timeout``."""
    start = time.monotonic()
    while True:
        if predicate():
            return time.monotonic() - start
        if time.monotonic() - start > timeout:
            return None
        time.sleep(step)


def unprivileged() -> list[str] | None:
    """A command prefix under which file modes apply (root goes through them): none for
    another user, setpriv without the DAC capabilities for root; None if there is none."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        return None
    drop = "-dac_override,-dac_read_search"
    return ["setpriv", "--bounding-set", drop, "--inh-caps", drop, "--"]


def fd_limit(n: int):
    def preexec():
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        resource.setrlimit(resource.RLIMIT_NOFILE, (n, hard))
    return preexec
