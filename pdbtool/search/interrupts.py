"""Ctrl-C and SIGTERM during a search on the main thread.

A kernel holds no GIL and does not return to the interpreter until it is done, so Python's
own signal handlers (KeyboardInterrupt, console.Terminated) wait for it. Handing every
search to another thread would let the main thread take the signal, but that hand-off cost
about 0.3 ms a search here, more than an easy search itself. Instead the C-level handler
writes the signal's number to a socket (``signal.set_wakeup_fd``) and one watcher thread
halts the main thread's search: the kernel returns within about a millisecond, and the
Python handler then raises as usual. Should that exception be lost on the way (code the
search calls, a cluster client, may catch it), the search still ends, halted, and the
signal is raised again once it has: Ctrl-C always ends the command as Ctrl-C does.
"""

from __future__ import annotations

import contextlib
import signal
import socket
import threading

HALTING = frozenset({signal.SIGINT, signal.SIGTERM})


class MainThreadSearches:
    """The searches running on the main thread, halted when a HALTING signal arrives."""

    def __init__(self):
        self._lock = threading.Lock()
        self._active: dict[int, object] = {}  # id -> SearchControl
        self._caught: dict[int, int] = {}  # id -> the HALTING signal that halted it
        self._writer: socket.socket | None = None  # the wakeup socket's end the handler writes

    @contextlib.contextmanager
    def halting(self, control):
        """Around a search on the main thread: a HALTING signal halts ``control`` (reason
        "cancelled"). Elsewhere, or while the program has its own wakeup fd (an asyncio
        loop's), it does nothing: the signal then waits for the search to end."""
        if threading.current_thread() is not threading.main_thread() or not self._wake_us():
            yield
            return
        with self._lock:
            self._active[id(control)] = control
        try:
            yield
        except Exception:  # the search ended halted (LimitReached) or failed
            with self._lock:
                signum = self._caught.get(id(control))
            if signum is not None:  # its exception was lost: raise it (the handler runs now)
                signal.raise_signal(signum)
            raise
        finally:
            with self._lock:
                self._active.pop(id(control), None)
                self._caught.pop(id(control), None)

    def _wake_us(self) -> bool:
        """Make the wakeup fd ours (on the main thread), unless another one is set."""
        if self._writer is None:
            reader, self._writer = socket.socketpair()
            self._writer.setblocking(False)
            threading.Thread(target=self._watch, args=(reader,), name="pdbtool-interrupts",
                             daemon=True).start()
        ours = self._writer.fileno()
        try:
            previous = signal.set_wakeup_fd(ours, warn_on_full_buffer=False)
        except ValueError:  # not the main thread of the main interpreter
            return False
        if previous in (-1, ours):
            return True
        signal.set_wakeup_fd(previous)  # someone else's: leave it to them
        return False

    def _watch(self, reader: socket.socket) -> None:
        while data := reader.recv(64):
            signums = HALTING.intersection(data)
            if signums:
                with self._lock:
                    controls = list(self._active.values())
                    for key in self._active:
                        self._caught.setdefault(key, min(signums))
                for control in controls:
                    control.halt("cancelled")


MAIN_THREAD_SEARCHES = MainThreadSearches()


class Deferred:
    """A HALTING signal that arrived while the main thread waited for a search's threads
    (``deferring``): ``signum`` (None if none) and ``raise_now``, which hands it to the
    handler it would have met (KeyboardInterrupt, console.Terminated) once the caller has
    done what must come first (a checkpoint's save)."""

    def __init__(self):
        self.signum: int | None = None

    def raise_now(self) -> None:
        if self.signum is not None:
            signal.raise_signal(self.signum)


@contextlib.contextmanager
def deferring(control):
    """Around the main thread's wait for a search's threads: a HALTING signal halts
    ``control`` (the threads stop at their next poll) and is kept in the Deferred this
    yields instead of raising where the wait happens to be: an exception raised inside
    concurrent.futures' locking could leave a future's lock held and the wait for the
    halted threads hanging. Off the main thread it does nothing (signals go to the main
    thread only)."""
    deferred = Deferred()
    if threading.current_thread() is not threading.main_thread():
        yield deferred
        return

    def keep(signum, frame):  # no locks in a handler: the flag the kernels poll, the signal
        control.stop[0] = 1
        if deferred.signum is None:
            deferred.signum = signum

    previous = {s: signal.signal(s, keep) for s in sorted(HALTING)}
    try:
        yield deferred
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        if deferred.signum is not None:
            control.halt("cancelled")  # the reason, now that no handler runs
