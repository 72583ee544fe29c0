"""Throughput of pdbd on many boards, and its overhead per board over the in-process search:
1,000 random 15-puzzles (seeded) with the 15/7-8 tables, solved in-process (as `pdbtool
solve --file` does, one thread), over gRPC one Solve at a time, and on one SolveBatch call;
each daemon on one search thread, the client in this process, on loopback.

"Overhead per board" is the wall time beyond the searches' own time (the `seconds` each
result reports); "over in-process" is the wall time a board beyond the in-process solving
of the same chunk, what gRPC and the daemon add, and the CPU time a board (this process's
and the daemon's) beyond in-process: on a loaded machine the wall figures mean little (the
daemon's process gets a share of the CPUs of its own, and gRPC can come out faster than
in-process). The bars take the CPU time beyond the searches' own time, over in-process's
(each way's CPU less the seconds its searches report, the same kernel calls both ways):
the searches' own time of the same boards moves by 10-25% from one run to the next on
this machine, 0.2-0.4 ms a board at 1.7 ms, more than the overhead measured; the raw CPU
difference and the ratio of the searches' own times (daemon / in-process, which would
show a search slowed in the daemon) are printed beside it. With
--old REV the daemon of that commit (its pdbd/ package, over this checkout's pdbtool) runs
beside this one, chunk by chunk: old and new measured in one run.

Builds 15/7-8 into artifacts/ when missing (about 15 minutes, 5 GiB). Rewrites the
`throughput` section of BENCHMARKS.md and records the two bars (unary <= 0.3 ms and
batch <= 0.1 ms a board over in-process).
Usage: scripts/bench throughput   or   .venv/bin/python scripts/bench_throughput.py --old REV
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import os
import random
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

from benchlib import (
    PY,
    ROOT,
    ensure_artifact,
    free_port,
    machine,
    record_bar,
    run,
    table,
)

from pdbd.batch import LINGER
from pdbd.client import PER_MESSAGE, ServerUnavailable, SolverClient
from pdbtool import puzzle
from pdbtool.loading import load_heuristic
from pdbtool.search.solver import Solver

SECTION = "throughput"
SEED = 37
UNARY_BAR, BATCH_BAR = 0.3, 0.1  # ms a board over in-process: the bars
LIBC = ctypes.CDLL(None, use_errno=True)
SERVE = ("import sys; from pdbd.cli import main; sys.exit(main())",)


class Run(NamedTuple):
    """One way of solving the boards: wall seconds, the searches' own seconds, and the CPU
    seconds of this process and the daemon's together."""

    wall: float
    search: float
    cpu: float

    def overhead_ms(self, n: int) -> float:
        return (self.wall - self.search) / n * 1000


def cpu_seconds(pid: int | None = None) -> float:
    """CPU time (user + system) of this process, plus the process ``pid``'s if given: its
    CPU-time clock (clock_getcpuclockid), to the nanosecond, where /proc counts in ticks of
    10 ms (0.1 ms a board on a chunk of 100, as coarse as the bar)."""
    own = time.process_time()
    if pid is None:
        return own
    clock = ctypes.c_int()
    if LIBC.clock_getcpuclockid(pid, ctypes.byref(clock)) == 0:
        return own + time.clock_gettime(clock.value)
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return own + (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed(fn, pid: int | None = None):
    """``fn()``'s result, wall seconds and CPU seconds (this process's and ``pid``'s). Each
    starts with this process's garbage collected: a collection that the run before made
    due is not charged to this one."""
    gc.collect()
    cpu, start = cpu_seconds(pid), time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start, cpu_seconds(pid) - cpu


def boards(n: int) -> list[tuple[int, ...]]:
    rng = random.Random(SEED)
    return [tuple(puzzle.random_board(4, "blank-last", rng)) for _ in range(n)]


def in_process(solver: Solver, todo) -> tuple[Run, list[int]]:
    results, wall, cpu = timed(lambda: [solver.solve(b) for b in todo])
    return Run(wall, sum(r.seconds for r in results), cpu), [r.length for r in results]


def old_package(rev: str, into: Path) -> Path:
    """The pdbd/ package of commit ``rev``, extracted under ``into`` (put first on the path:
    that daemon runs over this checkout's pdbtool)."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "pdbd"], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


@contextlib.contextmanager
def daemon(directory: str, path: Path | None):
    """A client of a running daemon (this checkout's, or the pdbd/ under ``path``), and the
    daemon's pid."""
    address = f"127.0.0.1:{free_port()}"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(path)] * (path is not None) + [str(ROOT)]))
    # -P: not the working directory first on the path (it would put this checkout's pdbd/
    # before the old one; the editable install's finder comes after the path)
    proc = subprocess.Popen([PY, "-P", "-c", *SERVE, "serve", "--artifacts", directory, "--listen",
                             address, "--threads", "1", "--log-level", "warning",
                             "--no-prefault"], env=env)
    try:
        with SolverClient(address) as c:
            c.wait_serving(600)
            yield c, proc.pid
    finally:
        proc.terminate()
        proc.wait(60)


def unary(client: SolverClient, pid: int, todo, lengths) -> Run:
    results, wall, cpu = timed(lambda: [client.solve(b) for b in todo], pid)
    assert [r.length for r in results] == lengths, "a unary answer differs from in-process"
    return Run(wall, sum(r.seconds for r in results), cpu)


def batch(client: SolverClient, pid: int, todo, lengths, per_message: int = PER_MESSAGE) -> Run:
    results, wall, cpu = timed(lambda: dict(client.solve_batch(todo, per_message=per_message)),
                               pid)
    assert [results[i].length for i in range(len(todo))] == lengths, "a batch answer differs"
    return Run(wall, sum(r.seconds for r in results.values()), cpu)


def health_checks(client: SolverClient, pid: int, n: int) -> float:
    """CPU seconds (this process's and the daemon's) of ``n`` health Checks."""
    return timed(lambda: [client.health() for _ in range(n)], pid)[2]


def single(client: SolverClient, pid: int, todo, lengths) -> Run:
    return batch(client, pid, todo, lengths, per_message=1)


# The ways over gRPC: the old daemon (--old) is asked only the first two (it takes one
# board a message).
WAYS = {"unary": ("one Solve at a time", unary),
        "single": ("one SolveBatch call, one board a message", single),
        "packed": (f"one SolveBatch call, up to {PER_MESSAGE} boards a message", batch)}


def measure(n: int, chunk: int, rounds: int, old: str | None, artifact: str | None = None) -> str:
    table_path = Path(artifact) if artifact else ensure_artifact("15/7-8")
    todo = boards(n)
    solver = Solver(load_heuristic(table_path))
    _, lengths = in_process(solver, todo)  # compiled (or loaded), the table's pages read
    load = os.getloadavg()[0]
    chunks = [(todo[i:i + chunk], lengths[i:i + chunk]) for i in range(0, n, chunk)] * rounds
    with tempfile.TemporaryDirectory(prefix="pdbd-throughput-") as tmp, \
            contextlib.ExitStack() as stack:
        served = Path(tmp) / "served"
        served.mkdir()
        for suffix in ("", ".verified"):  # symlinks: a hard link changes the file's ctime,
            # which invalidates its stamp (every later load re-checks the whole table)
            os.symlink(Path(str(table_path) + suffix).resolve(),
                       served / (table_path.name + suffix))
        versions = {"this checkout": None}
        if old:
            versions = {old[:10]: old_package(old, Path(tmp)), **versions}
        clients = {name: stack.enter_context(daemon(str(served), path))
                   for name, path in versions.items()}
        packs = set()  # the daemons that take several boards a message
        for name, (c, _) in clients.items():
            for b in todo[:50]:  # the connection up, the daemon's first queries done
                c.solve(b)
            with contextlib.suppress(ServerUnavailable):  # one that predates them says so
                dict(c.solve_batch(todo[:10]))
                packs.add(name)

        def ways(name: str) -> dict:
            return WAYS if name in packs else {k: WAYS[k] for k in ("unary", "single")}

        runs: dict[tuple, list[Run]] = {}
        empty: list[float] = []  # CPU ms of a health Check (no search): a unary call's floor
        for k, (boards_, lengths_) in enumerate(chunks):  # every way on each chunk in
            # turn: alike load; the daemons in turns first and second (two copies of one
            # daemon still differ by up to 0.05 ms a board, whichever goes first:
            # docs/bench-history/2026-11-26-solve-batch-overhead.md)
            runs.setdefault(("local",), []).append(in_process(solver, boards_)[0])
            empty.append(health_checks(*clients["this checkout"], len(boards_)) / chunk * 1000)
            for name, (c, pid) in list(clients.items())[::-1 if k % 2 else 1]:
                for way, (_, fn) in ways(name).items():
                    runs.setdefault((name, way), []).append(fn(c, pid, boards_, lengths_))

    def per_board(key) -> float:
        return statistics.median(r.overhead_ms(chunk) for r in runs[key])

    def over_local(key) -> float:
        """Wall time a board beyond in-process on the same chunk (median over chunks): what
        gRPC and the daemon add, robust to the searches' own time growing under load."""
        return statistics.median((r.wall - local.wall) / chunk * 1000
                                 for r, local in zip(runs[key], runs[("local",)]))

    def cpu_over_local(key) -> float:
        """CPU time a board (client and daemon) beyond in-process on the same chunk."""
        return statistics.median((r.cpu - local.cpu) / chunk * 1000
                                 for r, local in zip(runs[key], runs[("local",)]))

    def beyond_over_local(key) -> float:
        """CPU time a board beyond the searches' own seconds (client and daemon), less
        in-process's beyond its searches', on the same chunk: the overhead without the
        searches' own run-to-run swing (the figure the bars take)."""
        return statistics.median(((r.cpu - r.search) - (local.cpu - local.search)) / chunk
                                 * 1000 for r, local in zip(runs[key], runs[("local",)]))

    def search_ratio(key) -> float:
        """The searches' own seconds, this way over in-process (median over the chunks)."""
        return statistics.median(r.search / local.search
                                 for r, local in zip(runs[key], runs[("local",)]))

    def rate(key) -> float:
        return n * rounds / sum(r.wall for r in runs[key])

    local_ms = per_board(("local",))
    rows = [("in-process (`pdbtool solve --file`), one thread", "", f"{rate(('local',)):,.0f}",
             f"{local_ms:.3f}", "", "", "", "")]
    figures, beyond = {}, {}
    for name in versions:
        for way, (how, _) in ways(name).items():
            key = (name, way)
            figures[key] = wall, cpu = over_local(key), cpu_over_local(key)
            beyond[key] = beyond_over_local(key)
            rows.append((f"gRPC, {how}", name, f"{rate(key):,.0f}", f"{per_board(key):.3f}",
                         f"{wall:.3f}", f"{cpu:.3f}", f"{beyond[key]:.3f}",
                         f"{search_ratio(key):.3f}"))

    def bar_figure(way: str) -> str:
        key = ("this checkout", way)
        wall, cpu = figures[key]
        return (f"{beyond[key]:.3f} ms CPU beyond the searches' own time (raw CPU {cpu:.3f}, "
                f"wall {wall:.3f}; searches {search_ratio(key):.2f}x in-process's; load "
                f"{load:.0f})")

    # Under load the wall figures mean little (the daemon's process gets a CPU share of its
    # own), and the raw CPU difference is mostly the searches' own swing: the bars take the
    # CPU beyond the searches, and the figure names the others.
    record_bar(SECTION, f"unary Solve overhead <= {UNARY_BAR} ms a board over in-process",
               bar_figure("unary"), beyond["this checkout", "unary"] <= UNARY_BAR)
    record_bar(SECTION, f"SolveBatch overhead <= {BATCH_BAR} ms a board over in-process",
               bar_figure("packed"), beyond["this checkout", "packed"] <= BATCH_BAR)
    note = (f"\n\nThe rows of {old[:10]} are its pdbd/ (over this checkout's pdbtool, asked by "
            "this client), measured chunk by chunk beside this checkout's daemon, in turns "
            "first and second." if old else "")
    note += (f"\n\nAn empty call, a health Check (no search), costs "
             f"{statistics.median(empty):.3f} ms of CPU (client and daemon, median over the "
             "chunks): the floor of a unary Solve's overhead in gRPC Python here. SolveBatch "
             f"sends up to {PER_MESSAGE} boards a request message and several results a reply "
             f"(those finished within {LINGER * 1000:g} ms of one another), so that cost is "
             "shared; what is "
             "left is the daemon's handling of each board (admission, its search in the fast "
             "lane or the worker pool's hand-off, the result message) and the client's "
             "conversion of each result (docs/bench-history/2026-11-26-solve-batch-"
             "overhead.md).")
    ordered = sorted(lengths)
    return ("## pdbd throughput: boards in-process, one Solve at a time, one SolveBatch call\n\n"
            f"{n} random 15-puzzles (seed {SEED}, lengths {ordered[0]}..{ordered[-1]}, median "
            f"{ordered[n // 2]}), 15/7-8 tables; each daemon on one search thread (`--threads 1 "
            f"--no-prefault`), the client in the benchmark's process on loopback. The boards go "
            f"in chunks of {chunk} (a SolveBatch call each), each chunk solved every way in turn "
            f"(so a change in the machine's load falls on each alike), {rounds} rounds of them; "
            f"figures a board are medians over the {len(chunks)} chunks solved, boards/s over all "
            f"of them. Machine: {machine()}; load average {load:.1f} at the "
            f"start (other work on the machine inflates every figure).\n\n"
            + table(("how", "daemon", "boards/s", "overhead per board ms",
                     "over in-process, wall ms", "over in-process, CPU ms",
                     "over in-process, CPU beyond the searches ms",
                     "searches' own time / in-process"), rows) + note)




def options(p) -> None:
    p.add_argument("--n", type=int, default=1000, help="boards (default 1000)")
    p.add_argument("--chunk", type=int, default=1000, help="boards a chunk, one SolveBatch call "
                   "each (default 1000: the issue's batch)")
    p.add_argument("--rounds", type=int, default=5, help="times the chunks are solved, every "
                   "way in turn each time (default 5)")
    p.add_argument("--old", metavar="REV", help="also measure the daemon of commit REV, in turns")
    p.add_argument("--artifact", metavar="H5", help="the 15/7-8 table to use (default: "
                   "artifacts/, built if missing); its .verified stamp beside it")


if __name__ == "__main__":
    run(SECTION, measure, __doc__, options)
