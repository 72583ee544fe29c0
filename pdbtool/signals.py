"""Ctrl-C and SIGTERM held back over a step that must finish (``held``): a search's last
save when it is stopped, the start of a build's worker processes. A signal that comes
meanwhile is raised as it would have been, once the step is done; processes started
within never see one (they inherit the signals blocked). Both ignored once a command's
outcome is out (``ignore_stops``). And a child process's first step,
``die_with_parent``: the build's workers, the kernels' precompile child."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import threading

STOPS = (signal.SIGINT, signal.SIGTERM)  # what the terminal's Ctrl-C and a service stop send
PR_SET_PDEATHSIG = 1  # prctl(2): the signal a process gets when its parent ends


@contextlib.contextmanager
def held(signals=STOPS):
    """Hold ``signals`` for the block: blocked on this thread (a mask that processes
    started within inherit, through exec too), and on the main thread their handlers
    replaced by a note, so that a signal another thread takes waits as well; each one
    noted is raised again at the end, to the handler it would have met."""
    noted: list[int] = []
    here = threading.current_thread() is threading.main_thread()  # (handlers: main only)
    previous = {sig: signal.signal(sig, lambda number, _: noted.append(number))
                for sig in signals} if here else {}
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, signals)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        for sig in dict.fromkeys(noted):
            signal.raise_signal(sig)


def ignore_stops() -> None:
    """Ignore Ctrl-C and SIGTERM from here to the process's end: for a command whose
    outcome is out (its result or its error line) and whose exit status is decided, as
    the interpreter ends (threads joined, exit handlers, modules freed: 0.3 s with numba
    loaded). Python drops its own handlers early in that teardown, and a signal then
    ended the process by the signal's default action (killed, -15 or -2), so a caller took
    a finished command for a failed one. SIG_IGN, which the teardown keeps, rather than
    os._exit: the teardown still runs whole (threads joined, buffers and logs flushed,
    the exit handlers of multiprocessing and Ray). Main thread only (where handlers are
    set)."""
    if threading.current_thread() is threading.main_thread():
        for sig in STOPS:
            signal.signal(sig, signal.SIG_IGN)


def die_with_parent(parent: int) -> None:
    """A child process's first step: end when its parent (pid ``parent``) ends, even by
    SIGKILL or SIGHUP (Linux's parent-death signal; a killed build left its workers
    running, gigabytes each). Where the call does not exist the child is left as before."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent ended before the signal was asked for
        os._exit(1)
