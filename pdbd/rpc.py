"""How pdbd takes a call in: admission, receiving the request in time, parsing it ourselves.

Every service the daemon serves (pdbd.v1.Solver, grpc.health.v1.Health, server reflection)
is registered through ``service_handler``, never with gRPC's own deserializer:

* **Parsing in the handler.** gRPC Python keeps about 20 KB for good of every message its
  deserializer fails on, so the handlers take the raw bytes and parse them here; bytes
  that do not decode end the call with INVALID_ARGUMENT and one log line (rate-limited).
* **Admission per class of call.** Each method belongs to a class (solve, info, health,
  watch, reflection) with its own cap on calls in progress; a call beyond its class's cap
  is refused at once with RESOURCE_EXHAUSTED (trailing metadata ``pdbd-limit: busy``). The
  handler pool holds every cap plus spare threads, so solves, never-sending clients or
  idle streams cannot take the threads health checks need.
* **The request must arrive in time.** Every method is registered as request-streaming
  (the same on the wire as a unary request), so the handler runs as soon as the call
  opens and waits for the request itself: a request (or, on a stream, the next message)
  that does not arrive within ``request_timeout`` seconds cancels the call.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time

import grpc
from google.protobuf import message_factory
from google.protobuf.message import DecodeError

from pdbtool.search import alarms

log = logging.getLogger("pdbd")

LIMIT_KEY = "pdbd-limit"  # trailing metadata telling the RESOURCE_EXHAUSTED cases apart
REFUSED_KEY = "pdbd-refused"  # trailing metadata: an UNAVAILABLE of pdbd's own, not the channel's
CLIENT_KEY = "pdbd-client"  # metadata: the client a trusted proxy calls for (pdbd.peers)


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


class Admission:
    """Caps on calls in progress, one per class of call."""

    def __init__(self, caps: dict[str, int], on_busy=None):
        self.caps = dict(caps)
        self.on_busy = on_busy  # told of each call refused (metrics)
        self._slots = {name: threading.BoundedSemaphore(cap) for name, cap in caps.items()}

    @property
    def total(self) -> int:
        return sum(self.caps.values())

    @contextlib.contextmanager
    def enter(self, name: str, context):
        slots = self._slots[name]
        if not slots.acquire(blocking=False):
            if self.on_busy:
                self.on_busy("busy")
            context.set_trailing_metadata(((LIMIT_KEY, "busy"),))
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED,
                          f"too many {name} calls in progress ({self.caps[name]}); retry later")
        try:
            yield
        finally:
            slots.release()


class Receiver:
    """Reads request messages off a call within a time limit and parses them."""

    def __init__(self, timeout: float, notes: RateLimitedLog, on_bad=None):
        self.timeout = timeout
        self.notes = notes
        self.on_bad = on_bad  # called once per undecodable request (counters)

    def next(self, requests, context, cls, method: str):
        """The next message of the call, parsed; None when the client closed its side.
        Cancels the call if nothing arrives within the timeout; aborts the call with
        INVALID_ARGUMENT if the bytes do not decode."""
        alarm = alarms.after(self.timeout, self._drop, context, method)
        try:
            data = next(requests, None)
        finally:
            alarm.cancel()
        if data is None:
            return None
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

    def first(self, requests, context, cls, method: str):
        message = self.next(requests, context, cls, method)
        if message is None:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "no request message was sent")
        return message

    def stream(self, requests, context, cls, method: str):
        """Every message of a request stream, each within the timeout."""
        while (message := self.next(requests, context, cls, method)) is not None:
            yield message

    def _drop(self, context, method: str) -> None:
        self.notes.warning("slow-request", "%s from %s: no request within %.3g s; call dropped",
                           method, context.peer(), self.timeout)
        context.cancel()


def service_handler(service, implementation, classes: dict[str, str], admission: Admission,
                    receiver: Receiver, observe=None) -> grpc.GenericRpcHandler:
    """A generic handler for ``service`` (a protobuf ServiceDescriptor) whose methods call
    ``implementation.<Method>(request or request iterator, context)`` on parsed messages.
    ``classes`` names each method's admission class ("*" for all of them); ``observe(method,
    code)`` is told how every call ended (its status code's name)."""
    handlers = {}
    for method in service.methods:
        cls = message_factory.GetMessageClass(method.input_type)
        fn = getattr(implementation, method.name)
        name = f"{service.full_name}/{method.name}"
        admit = classes.get(method.name) or classes["*"]
        handlers[method.name] = _method(fn, cls, name, admit, method, admission, receiver,
                                        observe or _ignore)
    return grpc.method_handlers_generic_handler(service.full_name, handlers)


def _serialize(message) -> bytes:
    return message.SerializeToString()


def _ignore(method: str, code: str) -> None:
    pass


def status_of(context, error: BaseException | None) -> str:
    """The name of the status a call ended with: the one set (by abort or set_code), OK if
    none was and the handler returned, CANCELLED if the call is over (the client left or
    the request did not arrive), UNKNOWN for an error of the handler's own."""
    code = context.code()
    if code is not None:
        return code.name
    if error is None:
        return "OK"
    return "UNKNOWN" if context.is_active() else "CANCELLED"


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


def _method(fn, cls, name, admit, method, admission, receiver, observe):
    if method.client_streaming:
        def behaviour(requests, context):
            with observed(observe, name, context), admission.enter(admit, context):
                yield from fn(receiver.stream(requests, context, cls, name), context)
        return grpc.stream_stream_rpc_method_handler(behaviour, response_serializer=_serialize)
    if method.server_streaming:
        def behaviour(requests, context):
            with observed(observe, name, context), admission.enter(admit, context):
                replies = fn(receiver.first(requests, context, cls, name), context)
                yield from replies or ()
        return grpc.stream_stream_rpc_method_handler(behaviour, response_serializer=_serialize)

    def behaviour(requests, context):
        with observed(observe, name, context), admission.enter(admit, context):
            return fn(receiver.first(requests, context, cls, name), context)
    return grpc.stream_unary_rpc_method_handler(behaviour, response_serializer=_serialize)
