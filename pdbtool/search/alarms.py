"""Alarms: call a function after a delay, on one long-lived thread shared by the process.

A search with a time limit and each daemon call waiting for its request need an alarm, and
most are cancelled long before they ring. ``threading.Timer`` starts a thread for each, and
``Thread.start`` waits until the new thread has run: with other threads holding the GIL
that wait alone took milliseconds per query (pdbd, measured). Here setting an alarm is a
heap push, cancelling it a flag; the one alarm thread sleeps until the earliest is due.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import os
import threading
import time

log = logging.getLogger("pdbtool")


class Alarm:
    """A pending call; ``cancel()`` makes sure it does not happen (if it has not yet)."""

    __slots__ = ("when", "fn", "args", "cancelled")

    def __init__(self, when: float, fn, args: tuple):
        self.when, self.fn, self.args = when, fn, args
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True
        # What it would have called, let go now: a cancelled alarm stays in the heap until
        # it comes up or the heap is compacted (up to 64 alarms later), and would keep the
        # search's control (its bound method) alive that long, into the older generations
        # of Python's collector, whose full collections then come more often.
        self.fn, self.args = None, ()


class Alarms:
    """The alarm thread and its heap of pending alarms (started with the first alarm)."""

    def __init__(self, name: str = "pdbtool-alarms"):
        self.name = name
        self._heap: list[tuple[float, int, Alarm]] = []
        self._order = itertools.count()  # equal times ring in the order they were set
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)  # after() takes the lock itself
        self._thread: threading.Thread | None = None
        self._compact_at = 64  # heap size at which the cancelled alarms are dropped

    def after(self, seconds: float, fn, *args) -> Alarm:
        """Call ``fn(*args)`` on the alarm thread in ``seconds`` seconds, unless cancelled."""
        alarm = Alarm(time.monotonic() + seconds, fn, args)
        with self._lock:  # the condition's own lock, without its Python-level wrapper
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
                self._thread.start()
            earliest = not self._heap or alarm.when < self._heap[0][0]
            heapq.heappush(self._heap, (alarm.when, next(self._order), alarm))
            if len(self._heap) >= self._compact_at:  # amortized: at most twice the live ones
                self._heap = [e for e in self._heap if not e[2].cancelled]
                heapq.heapify(self._heap)
                self._compact_at = max(64, 2 * len(self._heap))
            if earliest:
                self._wake.notify()
        return alarm

    def _run(self) -> None:
        while True:
            with self._wake:
                while self._heap and self._heap[0][2].cancelled:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._wake.wait()
                    continue
                delay = self._heap[0][0] - time.monotonic()
                if delay > 0:
                    self._wake.wait(delay)
                    continue
                alarm = heapq.heappop(self._heap)[2]
            fn, args = alarm.fn, alarm.args  # before the flag: cancel() sets it, then clears these
            if not alarm.cancelled:
                try:
                    fn(*args)
                except Exception:  # an alarm's failure must not stop the others
                    log.exception("alarm %r failed", fn)


_ALARMS = Alarms()
os.register_at_fork(after_in_child=lambda: _ALARMS.__init__(_ALARMS.name))  # a fresh one


def after(seconds: float, fn, *args) -> Alarm:
    """Call ``fn(*args)`` in ``seconds`` seconds on the process's alarm thread."""
    return _ALARMS.after(seconds, fn, *args)
