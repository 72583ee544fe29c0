"""Compiling the search kernels before a search needs them, on two cores where it can.

numba compiles a kernel on its first call and keeps the machine code in its cache
(kernels/cache.py), so only the first solve on a machine waits: for a table, about 10 s of
compiling on one core (BENCHMARKS.md, first run). Every heuristic whose arrays are of one
class (a kind, and for tables whether the search looks ahead: kernels.heuristic.
ARRAYS_CLASSES) has the same numba types (placeholders of the slots' own types), so what
its IDA* needs can be compiled without its tables: ``python -m pdbtool.search.precompile
CLASS`` does it in a child process (``aside``), from a root whose h is 0 (the search
returns at once and reads no table), while the solver compiles the rest here (the
heuristic at the root and the answer's check). The child compiles ``h_update`` first
(the longest kernel, which the root's check calls too: both processes compiled it
before) and says so on its stdout (ROOT_CHECK_READY); the solver waits for that line
(``wait_root_check``) before its root's check, which then loads it from the cache, as the
search's kernels load once the child ends (``wait``).

``ready``/``mark_ready`` keep a mark per class in the cache directory once a solver has
compiled (or loaded) a part, so that a warm machine starts no child and the command lines
can say beforehand that a compile is coming (``pending``).
"""

from __future__ import annotations

import hashlib
import logging
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, NamedTuple

from pdbtool.kernels import CACHE_DIR
from pdbtool.kernels.cache import PACKAGE
from pdbtool.kernels import heuristic as hk
from pdbtool.progress import fmt_bytes

PARTS = ("serial", "shared")  # Solver.kernel_parts: IDA* on one thread; the shared iterations
# Seconds of compiling on one core of the Intel Xeon of BENCHMARKS.md, for the announcements
# (pending scales them by the load and by this machine's pace).
ESTIMATE = {"serial": {hk.PDB: 9.0}, "shared": {hk.PDB: 2.5}}
DEFAULT_ESTIMATE = {"serial": 5.0, "shared": 2.0}
ALGORITHM_ESTIMATE = 10.0  # another algorithm's kernels (a part named for it: frontier 10 s,
# sma 8 s on the Intel Xeon)
PACE_STEPS = 100_000  # pace()'s loop
PACE_REFERENCE = 0.0022  # seconds of that loop on the machine of ESTIMATE: the AMD EPYC's
# 0.0066 (2026-11-28) over 3.0, the ratio of the two machines' first solve
# (the code before the first-run work, df49235: 117.7 s there, 39.4 s on the Intel Xeon)
_pace: float | None = None
PRECOMPILE = (sys.executable, "-m", "pdbtool.search.precompile")  # + the class's name
ROOT_CHECK_READY = b"root-check\n"  # the child's line once h_update is in the cache

log = logging.getLogger("pdbtool")


COMPILE_ROOM = 256 << 20  # address space a first compile took beyond what the process had
                         # (numba 0.68: cold under `ulimit -v` 635 MiB LLVM aborts, 683 MiB
                         # passes; a warm 3x3 solve runs under 439 MiB)


def tight_for_compiling() -> str | None:
    """A warning where the process's ``ulimit -v`` leaves less than COMPILE_ROOM for a
    compile, which LLVM then aborts ("LLVM ERROR: out of memory": no exception to catch,
    no one-line error); None where it leaves room or there is no limit."""
    import resource

    soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    if soft == resource.RLIM_INFINITY:
        return None
    try:
        with open("/proc/self/statm") as f:
            size = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):  # not Linux
        return None
    if size + COMPILE_ROOM <= soft:
        return None
    return (f"this process may take {fmt_bytes(soft)} (ulimit -v) and has {fmt_bytes(size)}; "
            f"the compile may need about {fmt_bytes(COMPILE_ROOM)} more, and LLVM ends the "
            "process if it runs out ('LLVM ERROR: out of memory'): raise the limit, or run "
            "'pdbtool warm' once without it")


def _mark(cls: type, part: str) -> Path:
    """The file that says ``part`` was compiled for ``cls`` by this install: numba keeps
    each install's kernels apart (under the cache, a directory per source path), so two
    installs of the same kernels sharing a cache (one NUMBA_CACHE_DIR) each compile once,
    and each has its marks (one install's marks made the other's first solve compile
    unannounced)."""
    install = hashlib.blake2b(str(PACKAGE).encode(), digest_size=6).hexdigest()
    return CACHE_DIR / "ready" / install / f"{cls.__name__}-{part}"


def ready(cls: type, part: str) -> bool:
    """Whether a solver on this machine compiled ``part`` for heuristics whose arrays are
    of class ``cls`` (kernels.heuristic.ARRAYS_CLASSES)."""
    return _mark(cls, part).exists()


def mark_ready(cls: type, part: str) -> None:
    mark = _mark(cls, part)
    try:
        mark.parent.mkdir(parents=True, exist_ok=True)
        mark.touch()
    except OSError:  # a read-only cache: the kernels still load, the child just restarts
        pass


def pending(cls: type, parts) -> float:
    """Seconds of compiling still ahead of the first search of a heuristic whose arrays are
    of class ``cls``, with ``parts`` (0 if none): an estimate for a line that says so, never
    a promise. The figures are an idle machine's; on a busy one (a load average above
    its cores) the compile gets its share of them, and the estimate grows as much (the
    operator audit saw "about 6 s" take 20 s at a load of 5 on 2 cores)."""
    cpus = os.cpu_count() or 1
    cores = max(1, min(2, cpus))
    seconds = 0.0
    for part in parts:
        if not ready(cls, part):
            seconds += ESTIMATE.get(part, {}).get(cls.KIND,
                                                  DEFAULT_ESTIMATE.get(part, ALGORITHM_ESTIMATE))
    if not seconds:
        return 0.0
    try:
        busy = max(1.0, (os.getloadavg()[0] + cores) / cpus)  # our compile's processes too
    except OSError:  # no load average here
        busy = 1.0
    return seconds / (1.6 if cores > 1 else 1.0) * busy * pace()


def pace() -> float:
    """How many times longer than the machine of ESTIMATE this one takes to run Python, as
    numba's compiling mostly is: the median of five runs of a loop of PACE_STEPS steps
    (about 7 ms each on the AMD EPYC), against PACE_REFERENCE; measured once a process,
    kept within 0.5 to 4. (The AMD EPYC of BENCHMARKS.md compiles the first solve 3x
    slower than the Intel Xeon whose figures ESTIMATE holds: "about 7 s" took 18 s.)"""
    global _pace
    if _pace is None:
        runs = []
        for _ in range(5):
            start = time.perf_counter()
            x = 0
            for i in range(PACE_STEPS):
                x += i
            runs.append(time.perf_counter() - start)
        _pace = min(4.0, max(0.5, sorted(runs)[2] / PACE_REFERENCE))
    return _pace


class Aside(NamedTuple):
    """``aside``'s child process (its stdout a pipe: ROOT_CHECK_READY) and the file its
    stderr goes to."""

    process: subprocess.Popen
    stderr: IO[bytes]


def aside(cls: type) -> Aside | None:
    """Start compiling IDA*'s search kernels for heuristics of class ``cls`` in a child
    process (None if they are compiled already or this machine has one core): the caller
    compiles the rest meanwhile, then waits (``wait``). If the child fails, the caller
    compiles the kernels itself, as it would without it, and ``wait`` says so in a warning
    with the child's last line of stderr (tests/test_kernel_cache.py checks that it does
    not fail: it once did, silently, and every first solve took 4x as long)."""
    if ready(cls, "serial") or (os.cpu_count() or 1) < 2:
        return None
    try:
        stderr = tempfile.TemporaryFile()  # a file, not a pipe: nothing read until the end
    except OSError:  # no writable temporary directory: the child's last line is lost
        stderr = open(os.devnull, "w+b")  # noqa: SIM115 (closed by ``wait``)
    try:
        process = subprocess.Popen([*PRECOMPILE, cls.__name__, str(os.getpid())],
                                   stdin=subprocess.DEVNULL,
                                   stdout=subprocess.PIPE, stderr=stderr)
    except OSError:
        stderr.close()
        return None
    return Aside(process, stderr)


def wait_root_check(child: Aside | None) -> None:
    """Wait until ``aside``'s child has put h_update, which the root's check calls, in the
    cache (its ROOT_CHECK_READY line), or has ended without (then this process compiles
    it)."""
    if child is not None:
        child.process.stdout.readline()


def wait(child: Aside | None) -> None:
    """Wait for ``aside``'s child (a failure is a warning: this process compiles what it
    did not); if this process is interrupted, the child stops too."""
    if child is None:
        return
    process, stderr = child
    with stderr, process.stdout:
        try:
            process.wait()
        except BaseException:
            process.kill()
            process.wait()
            raise
        if process.returncode in (-signal.SIGINT, -signal.SIGTERM):  # Ctrl-C (the terminal
            return  # sends it to the whole group), a service's stop (systemd signals the
            # group): this process got it too and stops; the child failed in nothing
        if process.returncode != 0:  # (negative: a signal's number)
            stderr.seek(0)
            lines = stderr.read().decode(errors="replace").strip().splitlines()
            log.warning("compiling the search kernels in a child process failed (exit %d%s); "
                        "this process compiles them itself, which takes longer",
                        process.returncode, f": {lines[-1]}" if lines else "")
