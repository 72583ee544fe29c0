"""Ctrl-C and SIGTERM held back over a step that must finish (``held``): a search's last
save when it is stopped, the start of a build's worker processes. A signal that comes
meanwhile is raised as it would have been, once the step is done; processes started
within never see one (they inherit the signals blocked). Both ignored once a command's
outcome is out: over its cleanup (``outcome_out``) and the process's end
(``ignore_stops``). And a child process's first step, ``die_with_parent``: the build's
workers, the kernels' precompile child."""

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


_set_aside: dict = {}  # the stop handlers outcome_out replaced, until command_returned
_process_ends = False  # the process ends with its command (ending_with_command)


def outcome_out() -> None:
    """A command's outcome is out (its result, or a batch's last line): Ctrl-C and SIGTERM
    are ignored from here until it returns (``command_returned``), over what it still does
    then, such as closing Ray (a second or more). A stop then made a finished command an
    interrupted one: "interrupted" after its answer, and 130 or 143. The search itself
    stops at once as before, since this comes after its outcome. SIG_IGN, as
    ``ignore_stops``, not ``held``: a stop held would be raised at the end, which is what
    is not wanted; and the cleanup still runs whole (Ray's local processes shut down). A
    cleanup that hangs is then ended by SIGKILL only. Main thread only (where handlers are
    set)."""
    if threading.current_thread() is threading.main_thread() and not _set_aside:
        for sig in STOPS:
            _set_aside[sig] = signal.signal(sig, signal.SIG_IGN)


def command_returned() -> None:
    """The command that may have called ``outcome_out`` has returned (console.run): the
    stop handlers it set aside are put back, for a command run within another program's
    process (a test's). In a process that ends with the command (``ending_with_command``)
    they stay ignored instead, so that no moment is left between the cleanup and the
    process's end (``ignore_stops``) in which a stop would count."""
    handlers = dict(_set_aside)
    _set_aside.clear()
    if not _process_ends:
        for sig, handler in handlers.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)


def ending_with_command() -> None:
    """This process ends when its command returns (pdbtool.cli.end_with): stops ignored
    once its outcome is out stay ignored (``command_returned``)."""
    global _process_ends
    _process_ends = True


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
