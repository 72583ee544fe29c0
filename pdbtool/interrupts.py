"""Ctrl-C and SIGTERM during a search on the main thread.

A kernel holds no GIL and does not return to the interpreter until it is done, so Python's
own signal handlers (KeyboardInterrupt, console.Terminated) wait for it. Handing every
search to another thread would let the main thread take the signal, but that hand-off cost
about 0.3 ms a search here, more than an easy search itself. Instead the C-level handler
writes the signal's number to a socket (``signal.set_wakeup_fd``) and one watcher thread
halts the main thread's search: the kernel returns within about a millisecond, and the
Python handler then raises as usual.
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
        self._installed: bool | None = None  # None: not tried yet

    @contextlib.contextmanager
    def halting(self, control):
        """Around a search on the main thread: a HALTING signal halts ``control`` (reason
        "cancelled"). Elsewhere, or where the program set its own wakeup fd (an asyncio
        loop), it does nothing: the signal then waits for the search to end."""
        if threading.current_thread() is not threading.main_thread() or not self._install():
            yield
            return
        with self._lock:
            self._active[id(control)] = control
        try:
            yield
        finally:
            with self._lock:
                self._active.pop(id(control), None)

    def _install(self) -> bool:
        """Once, on the main thread: the wakeup socket and its watcher."""
        if self._installed is None:
            reader, writer = socket.socketpair()
            writer.setblocking(False)
            try:
                previous = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
            except ValueError:  # not the main thread of the main interpreter
                previous = None
            if previous != -1:  # someone else's (restored) or none possible
                if previous is not None:
                    signal.set_wakeup_fd(previous)
                reader.close()
                writer.close()
                self._installed = False
            else:
                self._sockets = (reader, writer)  # kept open for the process's life
                threading.Thread(target=self._watch, args=(reader,), name="pdbtool-interrupts",
                                 daemon=True).start()
                self._installed = True
        return self._installed

    def _watch(self, reader: socket.socket) -> None:
        while data := reader.recv(64):
            if HALTING.intersection(data):
                with self._lock:
                    controls = list(self._active.values())
                for control in controls:
                    control.halt("cancelled")


MAIN_THREAD_SEARCHES = MainThreadSearches()
