"""SolveBatch: many boards on one bidirectional stream, each admitted, searched and answered
as Solve answers it, with the request id the client chose.

A reader thread takes requests off the stream only while the batch has room (``window``
searches in flight), so gRPC's flow control holds a faster sender back; each board goes
through the servicer's own admission and outcome (``_admit``, ``_outcome``) with an
``ItemContext``: the call's context for the peer, the deadline and cancellation, but an
abort ends only that item (a BatchError), not the call. Results are sent as searches
finish, in any order.
"""

from __future__ import annotations

import logging
import queue
import threading
import time

import grpc

from .rpc import LIMIT_KEY, REFUSED_KEY
from .v1 import solver_pb2 as pb

log = logging.getLogger("pdbd")

METHOD = "pdbd.v1.Solver/SolveBatch"
WAIT_SECONDS = 0.005  # between looks for room while the pool is full
END = object()


class ItemAborted(Exception):
    """An item's abort: its status, message and trailing metadata."""

    def __init__(self, code: grpc.StatusCode, details: str, metadata: dict):
        super().__init__(details)
        self.code, self.details, self.metadata = code, details, metadata

    def message(self) -> pb.BatchError:
        return pb.BatchError(code=self.code.name, message=self.details,
                             limit=self.metadata.get(LIMIT_KEY, ""),
                             refused=REFUSED_KEY in self.metadata)


class Callbacks:
    """The call's end, told to the items in flight: one callback on the call for the whole
    batch (not one per board, which the call would hold until it ends)."""

    def __init__(self, context):
        self._lock = threading.Lock()
        self._live: dict[int, object] = {}
        self.ended = not context.add_callback(self._end)

    def add(self, key: int, callback) -> bool:
        with self._lock:
            if self.ended:
                return False
            self._live[key] = callback
            return True

    def discard(self, key: int) -> None:
        with self._lock:
            self._live.pop(key, None)

    def _end(self) -> None:
        with self._lock:
            self.ended = True
            live, self._live = list(self._live.values()), {}
        for callback in live:
            callback()


class ItemContext:
    """The call's context as one item of the batch sees it."""

    method = METHOD

    def __init__(self, context, callbacks: Callbacks, key: int):
        self._context, self._callbacks, self.key = context, callbacks, key
        self._metadata: dict[str, str] = {}

    def abort(self, code, details):
        raise ItemAborted(code, details, self._metadata)

    def set_trailing_metadata(self, metadata):
        self._metadata.update(metadata)

    def add_callback(self, callback) -> bool:
        return self._callbacks.add(self.key, callback)

    def __getattr__(self, name):  # peer, invocation_metadata, time_remaining, is_active
        return getattr(self._context, name)


def solve_batch(servicer, requests, context):
    """The results of SolveBatch (a generator of BatchResult) for the stream ``requests``."""
    pool = servicer.pool
    window = servicer.limits.per_client or (pool.threads + pool.max_queue)
    room = threading.Semaphore(window)
    finished: queue.Queue = queue.Queue()
    callbacks = Callbacks(context)
    client = servicer.proxies.client(context)
    stopped: list[str] = []

    def wait_for_room() -> bool:
        """Until the pool has a slot and the client room for one more (an item waits,
        rather than being refused); False if the call ends or the server stops."""
        while not room.acquire(timeout=0.1):
            if not context.is_active():
                return False
        while pool.full or not servicer.peers.has_room(client):
            if not context.is_active() or servicer._closing:
                break
            time.sleep(WAIT_SECONDS)
        return context.is_active()

    def admit(key: int, item) -> None:
        ctx = ItemContext(context, callbacks, key)
        try:
            job = servicer._admit(item.request, ctx, try_lane=False)
        except ItemAborted as e:
            finished.put((item.id, None, e))
            return
        except Exception as e:  # a bug: this item fails, the batch goes on (and ends)
            log.exception("batch item %d failed", item.id)
            finished.put((item.id, None, ItemAborted(grpc.StatusCode.INTERNAL,
                                                     f"internal error: {e}", {})))
            return
        job.future.add_done_callback(lambda _: finished.put((item.id, job, ctx)))

    def read() -> None:
        n = 0
        try:
            for item in requests:
                if servicer._closing:
                    stopped.append("shutdown")
                    return
                if not wait_for_room():
                    return
                n += 1
                admit(n, item)
        except BaseException:  # an undecodable request (aborted), a dropped call
            stopped.append("failed")
        finally:
            finished.put((END, n, None))

    threading.Thread(target=read, name="pdbd-batch", daemon=True).start()
    expected, answered = None, 0
    while expected is None or answered < expected:
        ident, job, ctx = finished.get()
        if ident is END:
            expected = job
            continue
        answered += 1
        room.release()
        if job is None:
            yield pb.BatchResult(id=ident, error=ctx.message())
            continue
        callbacks.discard(ctx.key)
        try:
            result = servicer._outcome(job, ctx)
        except ItemAborted as e:
            yield pb.BatchResult(id=ident, error=e.message())
            continue
        yield pb.BatchResult(id=ident, result=result)
    if "failed" in stopped and context.code() is not None:  # the reader's abort
        context.abort(context.code(), context.details() or "")
    if "shutdown" in stopped:
        context.set_trailing_metadata(((REFUSED_KEY, "unavailable"),))
        context.abort(grpc.StatusCode.UNAVAILABLE, "the server is shutting down")
