"""SolveBatch: many boards on one bidirectional stream, each admitted, searched and answered
as Solve answers it, with the request id the client chose.

A reader thread takes requests off the stream only while the batch has room (``window``
searches in flight, and fewer than ``window`` + UNSENT results not yet sent), so gRPC's
flow control holds a faster sender back, and a client that does not read its results
holds its boards back (their results piled up on the server before); each board goes
through the servicer's own admission and outcome (``admit``, ``outcome``) with an
``ItemContext``: the call's context for the peer, the deadline and cancellation, but an
abort ends only that item (a BatchError), not the call; and with what the call settled
once for all its boards (``Settled``: its client, its last choice, the table files checked
for the message, its method). Admission searches the board in
the fast lane on the reader's thread, as a unary Solve is searched on its handler's (the
same budget, slots and share per client, but only while a slot is free and no other call
waits for one: a batch never holds the lane against unary calls); a board past the lane's
nodes, or with the lane busy, goes to the worker pool. Results are sent as searches
finish, in any order. A client that sends several boards a message (``items``) gets several
results a message: those finished by the time one is sent, and those that finish within
``LINGER`` of the first while more boards of the call are in flight, but never into the
last LINGER before the call's deadline (a message costs the two ends about 0.1 ms of CPU
each in gRPC Python, more than the rest of a board's handling).
"""

from __future__ import annotations

import logging
import math
import queue
import threading
import time
from typing import NamedTuple

import grpc

from .choices import Choices
from .jobs import POOL_WAIT_SECONDS
from .rpc import time_left
from .v1 import solver_pb2 as pb
from .wire import LIMIT_KEY, REFUSED_KEY

log = logging.getLogger("pdbd")

METHOD = "pdbd.v1.Solver/SolveBatch"
END = object()
SHUTDOWN = object()  # an entry the servicer puts in every call's answers (refuse_new)
PER_MESSAGE = 256  # results at most in one BatchResult (about 100 KB of 15-puzzles)
UNSENT = 2 * PER_MESSAGE  # results a call may hold unsent beyond its window (a reply's
# worth lingering for others, and one being sent)
REPLY_BYTES = 1 << 20  # and about this many bytes at most: a client's gRPC takes 4 MiB a
# message by default (results of long solutions, 20x20's greedy 115 KB each, once made a
# reply of 9 MB that a client refused, losing the call)
LEFT_WAIT = 1.0  # seconds a call that ended waits for its boards in flight (account_left)
LINGER = 0.1  # seconds a packed result waits for others to share its message (0.02, then
# 0.05 before: about 13, then 20 results a reply on one search thread at 3 ms a board; a reply
# costs the two ends about 0.5 ms of CPU together, and more on a loaded machine, where 0.1
# took 20-40 us a board off the batch's CPU: docs/bench-history/2026-11-26-solve-batch-overhead-2.md).
# Never into the last LINGER before a call's deadline (hold_until).


class ItemAborted(Exception):
    """An item's abort: its status, message and trailing metadata."""

    def __init__(self, code: grpc.StatusCode, details: str, metadata: dict):
        super().__init__(details)
        self.code, self.details, self.metadata = code, details, metadata

    def message(self) -> pb.BatchError:
        return pb.BatchError(code=self.code.name, message=self.details,
                             limit=self.metadata.get(LIMIT_KEY, ""),
                             refused=REFUSED_KEY in self.metadata)


class Window:
    """Room for ``size`` boards of a batch in flight. Only the reader takes room; a board
    answered on the reader's own thread (the fast lane, or refused) gives it back there
    (``give_here``: a plain count), one answered on another thread through a queue
    (``give``). A Semaphore took its Condition, in Python, twice a board (about 2 us)."""

    def __init__(self, size: int):
        self._free = size  # the reader's own count
        self._back: queue.SimpleQueue = queue.SimpleQueue()  # room given back by others

    def take(self, wait: float = 0.0) -> bool:
        """Room for one more board, waiting up to ``wait`` seconds (0: not at all) for a
        board answered elsewhere to give its room back; False if none did."""
        if not self._free:
            try:
                self._back.get(timeout=wait) if wait > 0 else self._back.get_nowait()
            except queue.Empty:
                return False
            self._free += 1
        self._free -= 1
        return True

    def give_here(self) -> None:
        """A board answered on the reader's thread: its room back (that thread only)."""
        self._free += 1

    def give(self) -> None:
        """A board answered on another thread: its room back, for the reader to take."""
        self._back.put(None)


class Callbacks:
    """The call's end, told to the items in flight: one callback on the call for the whole
    batch (not one per board, which the call would hold until it ends).

    Without a lock (two a board, add and discard): each step is one dict operation or one
    attribute, atomic under the GIL, and ``add`` looks at ``ended`` again after adding. A
    callback added as the call ends is then either in the list ``_end`` takes (and
    called), or ``add`` sees the end and says False (its caller halts the search itself,
    as for a call that ended before), or both: a halt twice is a halt."""

    def __init__(self, context):
        self._live: dict[int, object] = {}
        self.ended = not context.add_callback(self._end)

    def add(self, key: int, callback) -> bool:
        if self.ended:
            return False
        self._live[key] = callback
        if self.ended:  # ended meanwhile: perhaps before _end took the list
            self._live.pop(key, None)
            return False
        return True

    def discard(self, key: int) -> None:
        self._live.pop(key, None)

    def _end(self) -> None:
        self.ended = True  # before the list is taken: an add from now on sees it
        live, self._live = self._live, {}
        for callback in list(live.values()):
            callback()


class Settled(NamedTuple):
    """What a SolveBatch call settled once for all its boards, which SolverServicer.admit
    and outcome take beside each board's ItemContext (a unary call gives none): the
    ``client`` its searches count against (found once a call), its last ``choices``
    (pdbd.choices: the solver, goal and algorithm of the boards before), the table files
    ``checked`` for the request message being read (admission checks each once a message;
    the reader empties the set at each message), and the ``method`` its log lines name."""

    client: str
    choices: Choices
    checked: set
    method: str = METHOD


class ItemContext:
    """The call's context as one item of the batch sees it: its abort and trailing
    metadata the item's own, its callback one of the call's (Callbacks), its peer the one
    the call began with; the rest (invocation_metadata, time_remaining, is_active) the
    call's."""

    def __init__(self, context, callbacks: Callbacks, key: int, peer: str = "", waiting=None):
        self._context, self._callbacks, self.key = context, callbacks, key
        self._peer = peer
        self._waiting = waiting
        self._metadata: dict[str, str] = {}

    def waiting_for_pool(self) -> None:
        """The board waits for a slot of the pool (SolverServicer._to_pool): the answers
        held on the reader's thread go to the sender first (never held while waiting)."""
        if self._waiting is not None:
            self._waiting()

    def peer(self) -> str:
        """The call's peer, as the call began (found once a call)."""
        return self._peer

    def abort(self, code, details):
        raise ItemAborted(code, details, self._metadata)

    def set_trailing_metadata(self, metadata):
        self._metadata.update(metadata)

    def add_callback(self, callback) -> bool:
        return self._callbacks.add(self.key, callback)

    def __getattr__(self, name):  # invocation_metadata, time_remaining, is_active
        return getattr(self._context, name)


def boards_of(message: pb.BatchRequest) -> list[tuple[int, pb.SolveRequest]]:
    """The boards of one request message, (id, request) each: its items, after the board of
    its own fields if it has one (a message with neither is one board, an empty one)."""
    items = [(item.id, item.request) for item in message.items]
    if message.HasField("request") or not items:
        items.insert(0, (message.id, message.request))
    return items


def result_bytes(fields: dict) -> int:
    """At least the bytes that one board's entry adds to a BatchResult, from its fields
    (BatchResult fields: an id and a result's fields, or an error), without encoding it:
    up to 5 bytes a move (the tile, the blank's letter, the path's h), 2 a cell of the
    board, 16 an iteration, the note, and 512 for the rest."""
    r = fields.get("result")
    if r is None:
        return 512 + len(fields["error"].message)
    return (5 * (len(r["blank_moves"]) + 1) + 2 * len(r["board"]) + 16 * len(r["iterations"])
            + len(r["note"]) + 512)


def ready(finished: queue.Queue, pending, linger: float = 0.0, until: float = math.inf) -> list:
    """What has finished: the next entry (a list of results, waited for), then every one
    there already, up to about PER_MESSAGE results; with ``linger`` (seconds), also those
    that finish within that time of the first (and before ``until``, time.monotonic())
    while ``pending(n)`` (more boards in flight beyond the ``n`` taken)."""
    out = list(finished.get())
    end = min(time.monotonic() + linger, until)
    while len(out) < PER_MESSAGE:
        try:
            out.extend(finished.get_nowait())
            continue
        except queue.Empty:
            pass
        left = end - time.monotonic()
        if left <= 0 or not pending(len(out)):
            break
        try:
            out.extend(finished.get(timeout=left))
        except queue.Empty:
            break
    return out


def hold_until(context) -> float:
    """Until when (time.monotonic()) a call's results may wait for others to share their
    message: not into the last LINGER before its deadline, where they would end unsent
    with the call; without a deadline, for good."""
    left = time_left(context)
    return math.inf if left is None else time.monotonic() + left - LINGER


def account_left(finished: queue.Queue, left: int, outcome, wait: float = LEFT_WAIT) -> None:
    """The boards a call left in flight as it ended (halted by its end, Callbacks): each
    taken as an answered one is (``outcome``: said in the log, counted), for up to ``wait``
    seconds (a halted search returns within about a millisecond). They went unsaid."""
    until = time.monotonic() + wait
    while left > 0 and (now := time.monotonic()) < until:
        try:
            entries = finished.get(timeout=until - now)
        except queue.Empty:
            return
        for ident, job, ctx in entries:
            if ident is not END and ident is not SHUTDOWN:
                left -= 1
                try:
                    outcome(ident, job, ctx)
                except Exception:  # a bug: said, and the call's end goes on
                    log.exception("batch item %d's outcome failed after its call ended", ident)


def solve_batch(servicer, requests, context):
    """The results of SolveBatch (a generator of BatchResult) for the stream ``requests``."""
    pool = servicer.pool
    window = servicer.limits.per_client or (pool.threads + pool.max_queue)
    room = Window(window)
    unsent = window + UNSENT  # boards admitted and not yet in a reply, at most
    finished: queue.Queue = queue.Queue()  # lists of (id, job or None, context or error)
    callbacks = Callbacks(context)
    client, peer = servicer.proxies.client(context), context.peer()
    # The reader's: each board that asks as the one before takes its choice; the table
    # files checked for the message being read (emptied at each message).
    settled = Settled(client, Choices(), set())
    stopped: list[str] = []
    packed = threading.Event()  # the client sends items: results go several a message
    counts = [0, 0]  # boards admitted (by the reader), answered (sent, or in this message)
    held: list = []  # answered on the reader's thread, not yet handed on
    since = [0.0]  # when the first of them was answered
    until = hold_until(context)

    def hand_on() -> None:
        """The reader's answers to the sending thread, as one entry (one wake-up)."""
        if held:
            finished.put(list(held))
            held.clear()

    def wait_for_room() -> bool:
        """Until the batch, the pool and the client have room for one more board (an
        item waits, rather than being refused); False if the call ends (pool_room)."""
        if not room.take():
            hand_on()  # never hold answers while waiting
            while not room.take(wait=0.1):
                if not context.is_active():
                    return False
        return pool_room()

    def pool_room() -> bool:
        """Until the pool has a slot, the client room for one more, and the call fewer
        than ``unsent`` results not yet sent (a client that reads none holds the call
        back here); False if the call ends (or the server stops: True then, the board
        refused as shutting down)."""
        while pool.full or not servicer.peers.has_room(client) or counts[0] - counts[1] >= unsent:
            hand_on()  # (once: nothing is answered here meanwhile)
            if not context.is_active() or servicer.closing:
                return context.is_active()
            time.sleep(POOL_WAIT_SECONDS)
        # The call's end, as its callback saw it (a flag, where context.is_active() takes
        # the call's Condition, about 1 us a board): a board admitted as the call ends
        # meanwhile is halted by that callback (Callbacks) like any other in flight.
        return not callbacks.ended

    def done(entry) -> None:
        """A board is answered on another thread (its result to send): room for the next."""
        room.give()
        finished.put([entry])

    def answered_here(entry) -> None:
        """A board answered on the reader's thread (the fast lane, or refused): held up to
        LINGER with the next ones when packed, so the sender wakes once for several."""
        room.give_here()
        now = time.monotonic()
        if not held:
            since[0] = now
        held.append(entry)
        if (not packed.is_set() or len(held) >= PER_MESSAGE or now - since[0] >= LINGER
                or now >= until):
            hand_on()

    def admit(key: int, ident: int, request) -> None:
        ctx = ItemContext(context, callbacks, key, peer, hand_on)
        try:  # (deferring: a pool slot taken meanwhile by another call is waited for)
            job = servicer.admit(request, ctx, deferring=True, batch=settled)
        except ItemAborted as e:
            callbacks.discard(key)
            answered_here((ident, None, e))
            return
        except Exception as e:  # a bug: this item fails, the batch goes on (and ends)
            log.exception("batch item %d failed", ident)
            callbacks.discard(key)
            answered_here((ident, None, ItemAborted(grpc.StatusCode.INTERNAL,
                                                    f"internal error: {e}", {})))
            return
        if job.future.done():  # searched in the fast lane, on this thread
            answered_here((ident, job, ctx))
        else:
            job.future.add_done_callback(lambda _: done((ident, job, ctx)))

    def read() -> None:
        n = 0
        try:
            for message in requests:
                if message.items:
                    packed.set()  # before the first admission: every result goes packed
                settled.checked.clear()  # each table file checked again for this message
                for ident, request in boards_of(message):
                    if servicer.closing:
                        stopped.append("shutdown")
                        return
                    if not wait_for_room():
                        return
                    n += 1
                    counts[0] = n
                    admit(n, ident, request)
                hand_on()  # before waiting for the next message
        except BaseException:  # an undecodable request (aborted), a dropped call
            stopped.append("failed")
        finally:
            hand_on()
            finished.put([(END, n, None)])

    def outcome(ident: int, job, ctx) -> dict:
        """A board's BatchResult fields: its id, and its result or its error."""
        if job is None:
            return {"id": ident, "error": ctx.message()}
        callbacks.discard(ctx.key)
        try:
            result = servicer.outcome(job, ctx, fields=True, batch=settled)
            return {"id": ident, "result": result}
        except ItemAborted as e:
            return {"id": ident, "error": e.message()}

    def in_flight(taken: int) -> bool:
        """More boards admitted than answered and the ``taken`` (finished, not yet sent)."""
        return counts[0] - counts[1] - taken > 0

    answered_at = [time.monotonic()]  # when the last result went into a reply
    if hasattr(requests, "idle_since"):  # (rpc.RequestStream) the next request's timeout
        requests.idle_since = lambda: None if counts[0] > counts[1] else answered_at[0]
        # counts from the last answer, and not while boards are in flight
    servicer.batches.add(finished)  # a shutdown puts SHUTDOWN in it (refuse_new)
    try:
        threading.Thread(target=read, name="pdbd-batch", daemon=True).start()
        expected = None
        while expected is None or counts[1] < expected:
            if expected is None and "shutdown" in stopped and counts[0] == counts[1]:
                break  # the reader waits for a message that no board will follow
            entries = (ready(finished, in_flight, LINGER, until) if packed.is_set()
                       else ready(finished, in_flight))
            # packed is decided by the entries (the reader sets it before it admits the
            # first board of a message with items), not by when the wait began: a wait
            # begun before the first message was read sent its results one a message,
            # which the client took for a server that predates items (a whole batch failed)
            pack = packed.is_set()  # each result made in its reply (one copy of its message)
            reply, size = pb.BatchResult(), 0
            for ident, job, ctx in entries:
                if ident is END:
                    expected = job
                    continue
                if ident is SHUTDOWN:
                    stopped.append("shutdown")
                    continue
                counts[1] += 1
                answered_at[0] = time.monotonic()
                fields = outcome(ident, job, ctx)
                if not pack:  # one result a message, as before items
                    yield pb.BatchResult(**fields)
                    continue
                grows = result_bytes(fields)
                full = size + grows > REPLY_BYTES or len(reply.results) == PER_MESSAGE
                if full and reply.results:
                    yield reply
                    reply, size = pb.BatchResult(), 0
                reply.results.add(**fields)
                size += grows
            if reply.results:
                yield reply
    finally:
        servicer.batches.discard(finished)
        if counts[0] > counts[1]:  # the call ended with boards in flight (its deadline, the
            account_left(finished, counts[0] - counts[1], outcome)  # client gone)
    if "failed" in stopped and context.code() is not None:  # the reader's abort
        context.abort(context.code(), context.details() or "")
    if "shutdown" in stopped:
        context.set_trailing_metadata(((REFUSED_KEY, "unavailable"),))
        context.abort(grpc.StatusCode.UNAVAILABLE, "the server is shutting down")
