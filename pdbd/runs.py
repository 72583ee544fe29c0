"""The boards of a client's SolveBatch, taken in runs for its calls (pdbd.client).

``Runs`` reads a source on a thread of its own and hands over what has been read when a
call's next message is due; ``Chunks`` takes the runs of a source whose boards are all at
hand; ``CallTurn`` is one call's side of them, so that a call that ended takes no board
that the next call would miss.
"""

from __future__ import annotations

import collections
import itertools
import threading


class Runs:
    """The items of ``source`` read on a thread of their own, at most ``most`` ahead, and
    taken in runs: each run holds what has been read by the time it is asked for (one item
    at least, ``most`` at most). A SolveBatch message carries a run: boards read from a
    file go many a message (a message costs more than a board), while a board typed at
    a terminal goes at once, never held back to fill a message."""

    def __init__(self, source, most: int):
        self.most = most
        self._cond = threading.Condition()
        self._items: collections.deque = collections.deque()
        self._done = self._closed = False
        self._error: BaseException | None = None
        threading.Thread(target=self._fill, args=(iter(source),), name="pdbd-batch-read",
                         daemon=True).start()

    def _fill(self, source) -> None:
        try:
            for item in source:
                with self._cond:
                    while len(self._items) >= self.most and not self._closed:
                        self._cond.wait()
                    if self._closed:
                        return
                    self._items.append(item)
                    self._cond.notify_all()
        except BaseException as e:  # noqa: BLE001 (raised again where the runs are taken)
            self._error = e
        finally:
            with self._cond:
                self._done = True
                self._cond.notify_all()

    def __iter__(self):
        return self.take(None)

    def take(self, live: threading.Event | None):
        """The runs, while ``live`` (None: always) is set: once it is cleared and ``wake``
        called, the iteration ends without taking another run."""
        while True:
            with self._cond:
                while not self._items and not self._done and (live is None or live.is_set()):
                    self._cond.wait()
                if not self._items or live is not None and not live.is_set():
                    break
                run = [self._items.popleft() for _ in range(min(self.most, len(self._items)))]
                self._cond.notify_all()
            yield run
        if live is None:
            self.raise_error()

    @property
    def finished(self) -> bool:
        """Every item read and taken."""
        with self._cond:
            return self._done and not self._items

    def wait_ready(self, timeout: float | None = None) -> bool:
        """Until an item is there to take, or none will come (True), or ``timeout``
        seconds (None: no limit) have passed (False)."""
        with self._cond:
            return bool(self._cond.wait_for(lambda: self._items or self._done, timeout))

    def raise_error(self) -> None:
        """The source's failure, if every item before it was taken."""
        with self._cond:
            if self._error is not None and not self._items:
                error, self._error = self._error, None
                raise error

    def wake(self) -> None:
        """Let a ``take`` whose ``live`` was cleared end now."""
        with self._cond:
            self._cond.notify_all()

    def close(self) -> None:
        """Stop reading (the thread ends at its next item)."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()


class CallTurn:
    """One SolveBatch call's side of the boards: ``live`` until it ends, and the ``turn``
    its request generator holds while it takes a run and marks it pending."""

    def __init__(self):
        self.live = threading.Event()
        self.live.set()
        self.turn = threading.Lock()

    def end(self, runs) -> None:
        """The call is over: its generator, if it is taking a run, finishes that (or, if it
        waits for one, stops waiting) before this returns, and takes none after."""
        self.live.clear()
        runs.wake()
        with self.turn:
            pass


class Chunks:
    """The items of ``source`` in runs of ``most`` (the last may be shorter), taken on the
    caller's thread: for a source whose items are all at hand (a list of boards), where
    ``Runs`` would pass each over from a thread of its own."""

    def __init__(self, source, most: int):
        self._source, self.most = iter(source), most
        self.finished = False

    def __iter__(self):
        return self.take(None)

    def take(self, live: threading.Event | None):
        """The runs, while ``live`` (None: always) is set (Runs.take)."""
        while live is None or live.is_set():
            run = list(itertools.islice(self._source, self.most))
            if not run:
                self.finished = True
                return
            yield run

    def wait_ready(self, timeout: float | None = None) -> bool:
        return True

    def raise_error(self) -> None:
        pass

    def wake(self) -> None:
        pass

    def close(self) -> None:
        pass
