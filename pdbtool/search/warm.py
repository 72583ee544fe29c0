"""Compiling the search kernels before a search needs them, on two cores where it can.

numba compiles a kernel on its first call and keeps the machine code in its cache
(kernels/cache.py), so only the first solve on a machine waits: for a table, about 10 s of
compiling on one core (BENCHMARKS.md, first run). Every heuristic whose arrays are of one
class (a kind, and for tables whether the search looks ahead: kernels.heuristic.
ARRAYS_CLASSES) has the same numba types (placeholders of the slots' own types), so what
its IDA* needs can be compiled without its tables: ``python -m pdbtool.search.precompile
CLASS`` does it in a child process (``aside``), from a root whose h is 0 (the search
returns at once and reads no table), while the solver compiles the rest here (the
heuristic at the root, the root's check, the answer's check). Then the search's kernels
load from the cache.

``ready``/``mark_ready`` keep a mark per class in the cache directory once a solver has
compiled (or loaded) a part, so that a warm machine starts no child and the command lines
can say beforehand that a compile is coming (``pending``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from pdbtool.kernels import CACHE_DIR
from pdbtool.kernels import heuristic as hk

PARTS = ("serial", "shared")  # Solver.kernel_parts: IDA* on one thread; the shared iterations
# Seconds of compiling on one core of the machines in BENCHMARKS.md, for the announcements.
ESTIMATE = {"serial": {hk.PDB: 9.0}, "shared": {hk.PDB: 2.5}}
DEFAULT_ESTIMATE = {"serial": 5.0, "shared": 2.0}


def _mark(cls: type, part: str) -> Path:
    return CACHE_DIR / "ready" / f"{cls.__name__}-{part}"


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
    a promise."""
    cores = max(1, min(2, os.cpu_count() or 1))
    seconds = 0.0
    for part in parts:
        if not ready(cls, part):
            seconds += ESTIMATE[part].get(cls.KIND, DEFAULT_ESTIMATE[part])
    return seconds / (1.6 if cores > 1 else 1.0)


def aside(cls: type) -> subprocess.Popen | None:
    """Start compiling IDA*'s search kernels for heuristics of class ``cls`` in a child
    process (None if they are compiled already or this machine has one core): the caller
    compiles the rest meanwhile, then waits (``wait``). The child's output is discarded: if
    it fails, the caller compiles the kernels itself, as it would without it
    (tests/test_kernel_cache.py checks that it does not fail)."""
    if ready(cls, "serial") or (os.cpu_count() or 1) < 2:
        return None
    try:
        return subprocess.Popen([sys.executable, "-m", "pdbtool.search.precompile", cls.__name__],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
    except OSError:
        return None


def wait(child: subprocess.Popen | None) -> None:
    """Wait for ``aside``'s child; if this process is interrupted, the child stops too."""
    if child is None:
        return
    try:
        child.wait()
    except BaseException:
        child.kill()
        child.wait()
        raise
