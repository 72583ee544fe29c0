"""Read leases on table files: hear of a writer before it can change a mapped file.

A table is memory-mapped. Truncating its file (``truncate``, ``cp`` over it, a build writing
in place) makes the next read of a page past the new end fault with SIGBUS, which kills the
process from inside a numba kernel, where nothing can catch it. A Linux read lease
(``fcntl F_SETLEASE F_RDLCK``) on the open file makes the kernel tell us first: a process
that opens the file for writing, or truncates it, blocks (or fails at once if it opened with
O_NONBLOCK, as ``truncate`` does) while the lease holder gets a signal, until the holder
gives the lease up or /proc/sys/fs/lease-break-time (45 s by default) runs out.

``hold(fd, urgent, later)`` takes the lease. When it is broken, the signal handler (on the
main thread) runs ``urgent()`` (it must take no lock: e.g. replace the mapping with zero
pages, mark the table changed), gives the lease up so the writer goes on, and hands
``later()`` (halting searches, logging) to a watcher thread. Both are bound methods, held
weakly: a lease never keeps their object (trust.Pinned) alive, so a table the app dropped is
closed and unmapped by its finalizer, its lease given up with it.

Limits: Linux only; the file must be owned by this user (or the process needs CAP_LEASE),
on a local file system, not open for writing anywhere; the first lease is taken on the main
thread (that is where Python runs signal handlers), which must run Python code within the
lease-break time (pdbd's and pdbtool's main threads wait in short steps); SIGIO must be free.
``hold`` returns why not when it cannot take one, and the caller warns.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import signal
import threading
import weakref
from typing import Callable, NamedTuple

log = logging.getLogger("pdbtool")

SIGNAL = signal.SIGIO
F_SETLEASE = getattr(fcntl, "F_SETLEASE", None)  # Linux only
_RDLCK, _UNLCK = getattr(fcntl, "F_RDLCK", 0), getattr(fcntl, "F_UNLCK", 2)


class _Held(NamedTuple):
    urgent: weakref.WeakMethod  # of Callable[[], None]
    later: weakref.WeakMethod


_held: dict[int, _Held] = {}  # fd -> what to do when its lease is broken
_pending: list[weakref.WeakMethod] = []  # later() calls for the watcher thread
_wake = threading.Event()
_installed = False


def hold(fd: int, urgent: Callable[[], None], later: Callable[[], None]) -> str | None:
    """Take a read lease on ``fd`` (opened read-only). None when held; else why not.
    ``urgent`` and ``later`` are bound methods, held weakly (their object releases the
    lease when it closes ``fd``: ``release``)."""
    if F_SETLEASE is None:
        return "file leases are a Linux feature"
    problem = _install()
    if problem:
        return problem
    try:
        fcntl.fcntl(fd, fcntl.F_SETSIG, SIGNAL)
        # the lease's signal goes to the thread that took it, which may be gone by its
        # break (trust.Pinned takes it again on a short-lived thread after a touch): to the
        # process, where the handler runs, whatever thread took it
        fcntl.fcntl(fd, fcntl.F_SETOWN, os.getpid())
        fcntl.fcntl(fd, F_SETLEASE, _RDLCK)
    except OSError as e:
        return {  # the likely reasons, said plainly
            "EACCES": "the file belongs to another user (a lease needs its owner or CAP_LEASE)",
            "EAGAIN": "the file is open for writing somewhere",
            "EINVAL": "its file system does not support leases",
        }.get(_errname(e), os.strerror(e.errno or 0))
    _held[fd] = _Held(weakref.WeakMethod(urgent), weakref.WeakMethod(later))
    # A break that began before the line above found no entry in the handler (lost: the
    # writer waited out the lease-break time, the mapping kept): look now.
    if _lease_of(fd) != _RDLCK and _break(fd):
        _wake.set()
    return None


def _lease_of(fd: int) -> int:
    try:
        return fcntl.fcntl(fd, fcntl.F_GETLEASE)
    except OSError:
        return _UNLCK


def _break(fd: int) -> bool:
    """The lease of ``fd`` is being broken: urgent(), the lease given up (the writer goes
    on), later() queued for the watcher; False if another caller did it first (the entry
    is taken once: the handler and ``hold``'s own look)."""
    held = _held.pop(fd, None)
    if held is None:
        return False
    try:
        if (urgent := held.urgent()) is not None:  # (else its object is gone, closing fd)
            urgent()
    finally:
        with contextlib.suppress(OSError):
            fcntl.fcntl(fd, F_SETLEASE, _UNLCK)
        _pending.append(held.later)
    return True


def release(fd: int) -> None:
    """Give up the lease on ``fd`` (before closing it)."""
    if _held.pop(fd, None) is not None:
        with contextlib.suppress(OSError):
            fcntl.fcntl(fd, F_SETLEASE, _UNLCK)


def _errname(e: OSError) -> str:
    return errno.errorcode.get(e.errno or 0, "")


def _install() -> str | None:
    """The signal handler and the watcher thread, once; why not, if they cannot be."""
    global _installed
    if _installed:
        return None
    if threading.current_thread() is not threading.main_thread():
        return "the first lease must be taken on the main thread (its signal handler)"
    current = signal.getsignal(SIGNAL)
    if current not in (signal.SIG_DFL, signal.SIG_IGN, None):
        return f"{signal.Signals(SIGNAL).name} is handled by other code"
    signal.signal(SIGNAL, _on_signal)
    threading.Thread(target=_watch, name="pdbtool-lease", daemon=True).start()
    _installed = True
    return None


def _on_signal(signum, frame) -> None:
    """A lease is being broken: for each fd whose lease is no longer a plain read lease,
    run urgent(), give the lease up, and queue later(). Takes no lock the main thread could
    hold (it runs on the main thread, between any two of its bytecodes)."""
    for fd in list(_held):
        if _lease_of(fd) != _RDLCK:  # (a plain read lease: not this one)
            _break(fd)
    _wake.set()


def _watch() -> None:
    while True:
        _wake.wait()
        _wake.clear()
        while _pending:
            try:
                if (later := _pending.pop(0)()) is not None:
                    later()
            except Exception:  # a listener's bug must not end the watching
                log.exception("after a table file's lease was broken")
