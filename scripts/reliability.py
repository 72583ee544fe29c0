"""The reliability section: every case of the second probe's report, re-run.

Findings 1-7 and the issue's bar: idle calls against health, Solve and Watch, idle and
surplus connections; rollouts by rename, metadata changes, a refused reload; reload leaks
and A*'s memory at 256M; `pdbd web`'s door (bind, body limit, cross-origin POST, Host,
frames, per-client cap); fairness; the cluster cache; signals (solve and serve with
--cluster, a killed build), limits, TLS handshake logging, verify's seed and --exhaustive;
and each message of item 7. Each case runs on loopback against processes it starts itself
(`pdbd serve` with the 15/6-6-3 table, `pdbd web`, `pdbtool`), with bounded loops and a
timeout of its own, and prints one row: case, expected, observed, pass or FAIL.

Usage: .venv/bin/python scripts/reliability.py [--json] [--only NAME ...] [--list] [--record]
--record writes the table (with the date, the machine and the commit) into
docs/reliability.md. Exit 0 when every case passes, 1 otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from collections.abc import Callable
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "scripts"))
BIN = Path(sys.executable).parent
TABLE = "15-6-6-3.h5"
CASE_SECONDS = 240  # a case still running after this is reported as a failure


class Row(NamedTuple):
    case: str
    finding: str
    expected: str
    observed: str
    ok: bool
    seconds: float = 0.0


class Case(NamedTuple):
    name: str
    finding: str  # "1".."7", "7-msg" (the unclear messages of item 7) or "bar"
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
    from pdbd.client import SolverClient
    from reference import free_port

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


# -- running ------------------------------------------------------------------------------

def run_case(case: Case) -> Row:
    """One case on a thread, bounded by its timeout; an exception is a failure row."""
    box: list = []

    def body():
        try:
            box.append(case.run())
        except Exception as e:  # noqa: BLE001 (a case that breaks is a row; the others run)
            box.append((f"error: {type(e).__name__}: {e}", False))

    start = time.monotonic()
    t = threading.Thread(target=body, daemon=True)
    t.start()
    t.join(case.seconds)
    seconds = time.monotonic() - start
    if not box:
        observed, ok = f"no result within {case.seconds:.0f} s", False
    else:
        observed, ok = box[0]
    return Row(case.name, case.finding, case.expected, " ".join(observed.split()), ok, seconds)


def all_cases(tmp: Path) -> list[Case]:
    import reliability_daemon
    import reliability_tools

    return reliability_daemon.cases(tmp) + reliability_tools.cases(tmp)


def commit() -> str:
    try:
        return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def markdown(rows: list[Row], machine: str) -> str:
    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    passed = sum(r.ok for r in rows)
    lines = [(f"Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on commit "
              f"{commit()}, {machine}: **{passed} of {len(rows)} cases pass**."), "",
             "| case | finding | expected | observed | result | s |", "|---|---|---|---|---|---|"]
    lines += [f"| {r.case} | {r.finding} | {cell(r.expected)} | {cell(r.observed)} | "
              f"{'pass' if r.ok else '**FAIL**'} | {r.seconds:.0f} |" for r in rows]
    return "\n".join(lines) + "\n"


DOC = ROOT / "docs" / "reliability.md"
BLOCK = ("<!-- reliability:table -->\n", "<!-- /reliability:table -->")


def record(table: str) -> None:
    text = DOC.read_text()
    head, rest = text.split(BLOCK[0], 1)
    DOC.write_text(head + BLOCK[0] + table + rest[rest.index(BLOCK[1]):])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--json", action="store_true", help="one JSON object: the rows")
    p.add_argument("--only", nargs="+", metavar="NAME", help="run only these cases")
    p.add_argument("--list", action="store_true", help="list the cases and exit")
    p.add_argument("--record", action="store_true",
                   help="write the table into docs/reliability.md (a run of every case)")
    args = p.parse_args(argv)
    os.environ.setdefault("NUMBA_CACHE_DIR", str(Path(tempfile.gettempdir()) / "numba-cache"))
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]  # cases open many sockets
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="reliability-") as tmp:
        cases = all_cases(Path(tmp))
        if args.list:
            for c in cases:
                print(f"{c.name:28s} finding {c.finding:6s} {c.expected}")
            return 0
        if args.record and args.only:
            p.error("--record records a run of every case: not with --only")
        unknown = set(args.only or ()) - {c.name for c in cases}
        if unknown:
            p.error(f"unknown case(s): {', '.join(sorted(unknown))} (see --list)")
        for case in cases:
            if args.only and case.name not in args.only:
                continue
            row = run_case(case)
            rows.append(row)
            if not args.json:
                print(f"{'pass' if row.ok else 'FAIL'}  {row.case:28s} {row.seconds:5.0f} s  "
                      f"expected: {row.expected}\n      observed: {row.observed}", flush=True)
        for proc in STARTED:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    from benchlib import machine

    if args.json:
        print(json.dumps({"machine": machine(), "commit": commit(),
                          "rows": [r._asdict() for r in rows]}, indent=1))
    else:
        print(f"{sum(r.ok for r in rows)} of {len(rows)} cases pass")
    if args.record:
        record(markdown(rows, machine().rsplit(", ", 1)[0]))  # the date is in the run line
    return 0 if all(r.ok for r in rows) else 1


if __name__ == "__main__":  # run as the module the case modules import (one STARTED list)
    import reliability

    sys.exit(reliability.main())
