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

Only a signal whose Python handler raises to end what runs (``RAISING``: Python's
KeyboardInterrupt, pdbtool's SIGTERM handlers, ``raising``) halts the search: an app's own
handler decides for itself, runs once, when the kernel returns (as with an asyncio loop's
wakeup fd), and its signal is never raised again.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import threading

HALTING = frozenset({signal.SIGINT, signal.SIGTERM})
RAISING = {signal.default_int_handler}  # handlers whose signal halts the search first


def raising(handler):
    """Add ``handler`` (a signal handler that raises, ending what runs) to RAISING: its
    signal halts a search on the main thread. Returns it."""
    RAISING.add(handler)
    return handler


class MainThreadSearches:
    """The searches running on the main thread, halted when a HALTING signal arrives."""

    def __init__(self):
        self._lock = threading.Lock()
        self._active: dict[int, object] = {}  # id -> SearchControl
        self._caught: dict[int, int] = {}  # id -> the HALTING signal that halted it
        self._writer: socket.socket | None = None  # the wakeup socket's end the handler writes
        self._reader: socket.socket | None = None  # the watcher's end
        os.register_at_fork(after_in_child=self._forked)

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
            self._reader, self._writer = socket.socketpair()
            self._writer.setblocking(False)
            threading.Thread(target=self._watch, args=(self._reader,),
                             name="pdbtool-interrupts", daemon=True).start()
        ours = self._writer.fileno()
        try:
            previous = signal.set_wakeup_fd(ours, warn_on_full_buffer=False)
        except ValueError:  # not the main thread of the main interpreter
            return False
        if previous in (-1, ours):
            return True
        signal.set_wakeup_fd(previous)  # someone else's: leave it to them
        return False

    def _forked(self) -> None:
        """In a forked child: none of the parent's threads, and not its socket (the child's
        Ctrl-C went to the parent's watcher, halting the parent's search and not its own):
        the next search makes its own."""
        self._lock = threading.Lock()
        self._active.clear()
        self._caught.clear()
        if self._writer is not None:
            with contextlib.suppress(ValueError):  # (forked off the main thread: not ours)
                previous = signal.set_wakeup_fd(-1)
                if previous != self._writer.fileno():
                    signal.set_wakeup_fd(previous)  # another's: left to it
            self._writer.close()
            self._reader.close()
            self._writer = self._reader = None

    def _watch(self, reader: socket.socket) -> None:
        while data := reader.recv(64):
            signums = {s for s in HALTING.intersection(data)
                       if signal.getsignal(s) in RAISING}  # an app's own handler decides
            if signums:
                with self._lock:
                    controls = list(self._active.values())
                    for key in self._active:
                        self._caught.setdefault(key, min(signums))
                for control in controls:
                    control.halt("cancelled")


MAIN_THREAD_SEARCHES = MainThreadSearches()
