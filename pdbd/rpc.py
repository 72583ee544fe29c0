"""How pdbd takes a call in: receiving the request in time, admission, parsing it ourselves.

Every service the daemon serves (pdbd.v1.Solver, grpc.health.v1.Health, server reflection)
is registered through ``service_handler``, never with gRPC's own deserializer:

* **Parsing in the handler.** gRPC Python keeps about 20 KB for good of every message its
  deserializer fails on, so the handlers take the raw bytes and parse them here; bytes
  that do not decode end the call with INVALID_ARGUMENT and one log line (rate-limited).
  A request over the server's limit a message (``Receiver.max_bytes``) is refused here
  too, RESOURCE_EXHAUSTED and a log line: gRPC's own limit is set above it, because a
  request gRPC refuses never reaches the handler, which sees only a call that ended.
* **The request must arrive in time, and waiting for it is cheap to refuse.** Every method
  is registered as request-streaming (the same on the wire as a unary request), so the
  handler runs as soon as the call opens and waits for the request itself. Until it
  arrives the call is only *reading* (``Reading``): at most some in all and, of those
  waiting over a second, a few per client, the oldest cancelled when a newer call comes,
  and every one cancelled after ``request_timeout``. Calls that never send their request
  therefore cost a client only its own reading calls: they cannot fill a class of call,
  nor the threads.
* **Admission per class of call, once the request is in.** Each method belongs to a class
  (solve, info, health, watch, reflection) with a ``Cap`` on calls in progress, in all and
  per client (health has none: it answers at once, and a liveness probe must never be
  refused while the process lives); a call beyond its class's cap is refused at once with
  RESOURCE_EXHAUSTED (trailing metadata ``pdbd-limit: busy``). A stream class may expire
  its calls (Watch: a watcher reconnects, it cannot hold a slot for good).
* **The threads.** gRPC runs each call's handler on a thread of its pool: the pool holds
  every cap, the reading calls and spare threads for health checks, and gRPC refuses a
  call beyond that many at once instead of queueing it behind the others.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import logging
import threading
import time
from dataclasses import dataclass

import grpc
from google.protobuf import message_factory
from google.protobuf.message import DecodeError

from pdbtool.search import alarms

from .peers import PeerCounts, client_of
from .wire import LIMIT_KEY

log = logging.getLogger("pdbd")



NO_DEADLINE = 1e8  # time_remaining() of a call without a deadline is huge, not None
DEADLINE_SLACK = 0.1  # seconds: a call that ends this close to its deadline ended by it


def time_left(context) -> float | None:
    """Seconds left before the call's deadline (at least 0); None without a deadline."""
    left = context.time_remaining()
    return None if left is None or left > NO_DEADLINE else max(left, 0.0)


class RateLimitedLog:
    """At most one line per ``every`` seconds per kind; the next line counts those skipped."""

    def __init__(self, every: float = 10.0):
        self.every = every
        self._lock = threading.Lock()
        self._last: dict[str, float] = {}
        self._skipped: dict[str, int] = {}

    def warning(self, kind: str, message: str, *args) -> None:
        now = time.monotonic()
        with self._lock:
            if now - self._last.get(kind, float("-inf")) < self.every:
                self._skipped[kind] = self._skipped.get(kind, 0) + 1
                return
            self._last[kind] = now
            skipped = self._skipped.pop(kind, 0)
        if skipped:
            message += f" (and {skipped} more like it in the last %.0f s)"
            args = (*args, self.every)
        log.warning(message, *args)


@dataclass(frozen=True)
class Cap:
    """A class of call's limit on calls in progress: ``total`` in all, ``per_client`` for one
    client (None: no limit); ``expires``: a call (a stream) is ended after that many seconds."""

    total: int | None = None
    per_client: int | None = None
    expires: float | None = None


class Admission:
    """Caps on calls in progress, one per class of call (a class without one is never
    refused), counted once the call's request has arrived."""

    def __init__(self, caps: dict[str, Cap], on_busy=None, notes: RateLimitedLog | None = None):
        self.caps = dict(caps)
        self.on_busy = on_busy  # told of each call refused (metrics)
        self.notes = notes or RateLimitedLog()
        self._counts = {name: PeerCounts(cap.per_client, cap.total) for name, cap in caps.items()}

    @property
    def total(self) -> int:
        """The most calls the caps let in at once (classes without a total not counted)."""
        return sum(cap.total or 0 for cap in self.caps.values())

    @contextlib.contextmanager
    def enter(self, name: str, context, client: str):
        counts = self._counts.get(name)
        if counts is None:
            yield
            return
        cap = self.caps[name]
        if not counts.enter(client):
            if self.on_busy:
                self.on_busy("busy")
            context.set_trailing_metadata(((LIMIT_KEY, "busy"),))
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED,
                          f"too many {name} calls in progress (at most {cap.total or 'any'} in "
                          f"all, {cap.per_client or 'any'} per client); retry later")
        alarm = alarms.after(cap.expires, self._expire, context, name) if cap.expires else None
        try:
            yield
        finally:
            if alarm is not None:
                alarm.cancel()
            counts.leave(client)

    def _expire(self, context, name: str) -> None:
        self.notes.warning(f"expired:{name}", "%s call from %s ended after %g s (its class's "
                           "limit); the client may open another", name, context.peer(),
                           self.caps[name].expires)
        context.cancel()


class Reading:
    """Calls whose request has not arrived yet: at most ``total`` in all, and at most
    ``per_client`` of one client waiting longer than ``grace`` seconds. A call beyond
    the total cancels the longest waiting call, however young (the server's threads hold
    the total and no more: calls opened faster than ``grace`` would otherwise fill them,
    and gRPC would refuse health checks); a client's call beyond its own cancels its
    oldest that waited over ``grace``. A client that opens calls and sends nothing thus
    cancels its own (or the longest waiting), while a request that arrives at once (every
    honest client's, a burst of them too) is read in microseconds."""

    def __init__(self, per_client: int, total: int, notes: RateLimitedLog, on_evict=None,
                 grace: float = 1.0):
        self.per_client, self.total, self.grace = per_client, total, grace
        self.notes = notes
        self.on_evict = on_evict  # told of each call cancelled so (metrics)
        self._lock = threading.Lock()
        self._all: collections.OrderedDict[int, tuple[str, object, float]] = \
            collections.OrderedDict()
        self._of: dict[str, collections.OrderedDict[int, float]] = {}
        self._keys = itertools.count()

    def enter(self, client: str, context) -> int:
        now = time.monotonic()
        evicted = []
        with self._lock:
            key = next(self._keys)
            self._all[key] = (client, context, now)
            mine = self._of.setdefault(client, collections.OrderedDict())
            mine[key] = now
            while len(mine) > self.per_client and self._old(next(iter(mine.values())), now):
                evicted.append(self._pop(next(iter(mine))))
            while len(self._all) > self.total:
                evicted.append(self._pop(next(iter(self._all))))
        for ctx in evicted:
            self.notes.warning("evicted", "a call from %s waiting for its request was cancelled "
                               "to make room (at most %d such calls per client, %d in all)",
                               ctx.peer(), self.per_client, self.total)
            if self.on_evict:
                self.on_evict("reading")
            ctx.cancel()
        return key

    def _old(self, since: float, now: float) -> bool:
        return now - since > self.grace

    def leave(self, key: int) -> None:
        with self._lock:
            if key in self._all:
                self._pop(key)

    def _pop(self, key: int):
        client, context, _ = self._all.pop(key)
        mine = self._of[client]
        del mine[key]
        if not mine:
            del self._of[client]
        return context


class Receiver:
    """Reads request messages off a call within a time limit and parses them."""

    def __init__(self, timeout: float, notes: RateLimitedLog, on_bad=None,
                 reading: Reading | None = None, max_bytes: int | None = None,
                 on_large=None):
        self.timeout = timeout
        self.notes = notes
        self.on_bad = on_bad  # called once per undecodable request (counters)
        self.reading = reading
        self.max_bytes = max_bytes  # a request message's limit (None: gRPC's alone)
        self.on_large = on_large  # called once per request over it (counters, metrics)

    def opening(self, requests, context, cls, method: str, client: str):
        """The call's first message (None if the client closed its side without one),
        counted as reading (``Reading``) until it arrives."""
        key = self.reading.enter(client, context) if self.reading else None
        try:
            return self.next(requests, context, cls, method)
        finally:
            if key is not None:
                self.reading.leave(key)

    def next(self, requests, context, cls, method: str, idle_since=None):
        """The next message of the call, parsed; None when the client closed its side.
        Cancels the call if nothing arrives within the timeout (with ``idle_since``: within
        the timeout of the call's last answer, and never while it waits on answers of its
        own, Patience); aborts the call with RESOURCE_EXHAUSTED if the request is over
        ``max_bytes``, with INVALID_ARGUMENT if its bytes do not decode."""
        alarm = (alarms.after(self.timeout, self._drop, context, method) if idle_since is None
                 else Patience(self.timeout, idle_since, self._drop, context, method))
        try:
            data = next(requests, None)
        finally:
            alarm.cancel()
        if data is None:
            return None
        if self.max_bytes is not None and len(data) > self.max_bytes:
            self._too_large(context, method, len(data))
        message = cls()
        try:
            message.ParseFromString(data)
        except (DecodeError, RuntimeError, ValueError) as e:
            if self.on_bad:
                self.on_bad(method)
            self.notes.warning("undecodable", "%s from %s: request of %d bytes does not decode "
                               "as %s (%s)", method, context.peer(), len(data),
                               cls.DESCRIPTOR.full_name, e)
            context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                          f"the request does not decode as {cls.DESCRIPTOR.full_name}")
        return message

    def _too_large(self, context, method: str, size: int) -> None:
        """Refuse a request message over ``max_bytes``: RESOURCE_EXHAUSTED, counted and
        logged (rate-limited) as such. gRPC's own limit, set above it, refuses larger ones
        unread, and the handler cannot tell those from a client that went away."""
        if self.on_large:
            self.on_large(method)
        self.notes.warning("too-large", "%s from %s: request of %d bytes refused, larger than "
                           "the limit of %d bytes a message", method, context.peer(), size,
                           self.max_bytes)
        context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED,
                      f"request too large: {size} bytes is larger than max ({self.max_bytes} "
                      "bytes a message, the server's limit)")

    def first(self, requests, context, cls, method: str, client: str):
        message = self.opening(requests, context, cls, method, client)
        if message is None:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "no request message was sent")
        return message

    def stream(self, requests, context, cls, method: str, first=None) -> RequestStream:
        """Every message of a request stream (after ``first``, if given), each within the
        timeout."""
        return RequestStream(self, requests, context, cls, method, first)

    def _drop(self, context, method: str) -> None:
        self.notes.warning("slow-request", "%s from %s: no request within %.3g s; call dropped",
                           method, context.peer(), self.timeout)
        context.cancel()


class RequestStream:
    """A call's request messages, each read within the receiver's timeout; its
    ``idle_since`` (a callable, None at first) is what the method sets to say since when
    (time.monotonic()) the call has waited on nothing of its own, or None while it waits on
    answers (a SolveBatch with boards in flight): the timeout then counts from that time,
    not from the read (a client that sends its next board once a result came lost the
    call to any search longer than the timeout)."""

    def __init__(self, receiver: Receiver, requests, context, cls, method: str, first=None):
        self.receiver, self.requests, self.context = receiver, requests, context
        self.cls, self.method, self.first = cls, method, first
        self.idle_since = None

    def __iter__(self):
        return self

    def __next__(self):
        if self.first is not None:
            first, self.first = self.first, None
            return first
        message = self.receiver.next(self.requests, self.context, self.cls, self.method,
                                     self.idle_since)
        if message is None:
            raise StopIteration
        return message


class Patience:
    """An alarm that calls ``then(*args)`` once ``seconds`` have passed since it was set
    and since ``idle_since()`` (a time.monotonic(), None while there is something to wait
    for): it rings again as long as either is nearer."""

    def __init__(self, seconds: float, idle_since, then, *args):
        self.seconds, self.idle_since, self.then, self.args = seconds, idle_since, then, args
        self._lock = threading.Lock()
        self._off = False
        self._alarm = alarms.after(seconds, self._ring)

    def _ring(self) -> None:
        with self._lock:
            if self._off:
                return
            since = self.idle_since()
            wait = self.seconds if since is None else since + self.seconds - time.monotonic()
            if wait > 0:
                self._alarm = alarms.after(wait, self._ring)
                return
            self._off = True
        self.then(*self.args)

    def cancel(self) -> None:
        with self._lock:
            self._off = True
            self._alarm.cancel()


def service_handler(service, implementation, classes: dict[str, str], admission: Admission,
                    receiver: Receiver, observe=None, identify=None) -> grpc.GenericRpcHandler:
    """A generic handler for ``service`` (a protobuf ServiceDescriptor) whose methods call
    ``implementation.<Method>(request or request iterator, context)`` on parsed messages.
    ``classes`` names each method's admission class ("*" for all of them); ``observe(method,
    code)`` is told how every call ended (its status code's name); ``identify(context)``
    names the client a call counts against (default: its peer's address)."""
    handlers = {}
    calls = Calls(admission, receiver, observe or _ignore,
                  identify or (lambda context: client_of(context.peer())))
    for method in service.methods:
        cls = message_factory.GetMessageClass(method.input_type)
        fn = getattr(implementation, method.name)
        name = f"{service.full_name}/{method.name}"
        admit = classes.get(method.name) or classes["*"]
        handlers[method.name] = calls.handler(fn, cls, name, admit, method)
    return grpc.method_handlers_generic_handler(service.full_name, handlers)


def _serialize(message) -> bytes:
    return message.SerializeToString()


def _ignore(method: str, code: str) -> None:
    pass


def status_of(context, error: BaseException | None) -> str:
    """The name of the status a call ended with: the one set (by abort or set_code), OK if
    none was and the handler returned, DEADLINE_EXCEEDED if the call is over at its
    deadline (a SolveBatch's was counted CANCELLED), CANCELLED if it is over otherwise (the
    client left or the request did not arrive), UNKNOWN for an error of the handler's own."""
    code = context.code()
    if code is not None:
        return code.name
    if error is None:
        return "OK"
    if context.is_active():
        return "UNKNOWN"
    left = time_left(context)
    return "DEADLINE_EXCEEDED" if left is not None and left <= DEADLINE_SLACK else "CANCELLED"


@contextlib.contextmanager
def observed(observe, name: str, context):
    error = None
    try:
        yield
    except BaseException as e:  # GeneratorExit too: a stream closed early
        error = e
        raise
    finally:
        observe(name, status_of(context, error))


@dataclass(frozen=True)
class Calls:
    """What every method's handler goes through: the request read (as a reading call),
    then admission, then the implementation; how the call ended is observed."""

    admission: Admission
    receiver: Receiver
    observe: object
    identify: object

    def handler(self, fn, cls, name: str, admit: str, method):
        admission, receiver, observe, identify = (self.admission, self.receiver, self.observe,
                                                  self.identify)
        if method.client_streaming:
            def behaviour(requests, context):
                with observed(observe, name, context):
                    client = identify(context)
                    first = receiver.opening(requests, context, cls, name, client)
                    if first is None:  # the client closed its side at once: nothing to do
                        return
                    with admission.enter(admit, context, client):
                        yield from fn(receiver.stream(requests, context, cls, name, first),
                                      context)
            return grpc.stream_stream_rpc_method_handler(behaviour, response_serializer=_serialize)
        if method.server_streaming:
            def behaviour(requests, context):
                with observed(observe, name, context):
                    client = identify(context)
                    request = receiver.first(requests, context, cls, name, client)
                    with admission.enter(admit, context, client):
                        yield from fn(request, context) or ()
            return grpc.stream_stream_rpc_method_handler(behaviour, response_serializer=_serialize)

        def behaviour(requests, context):
            with observed(observe, name, context):
                client = identify(context)
                request = receiver.first(requests, context, cls, name, client)
                with admission.enter(admit, context, client):
                    return fn(request, context)
        return grpc.stream_unary_rpc_method_handler(behaviour, response_serializer=_serialize)
