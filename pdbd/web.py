"""`pdbd web`: the animation page served live, solving through a pdbd server (starlette on
uvicorn; loopback by default).

Routes:
  GET  /                   the page (pdbtool/cli/animation.html in live mode): paste or
                           shuffle a board, choose the goal, solve, watch the progress, then
                           the animation
  POST /api/solve          JSON {"board": "1 2 3 ..." or [1, 2, ...], "goal", "deadline",
                           "budget", "shape"} -> the JSON of `pdbtool solve --json` (with
                           path_h)
  GET  /api/solve/stream   the same as query parameters -> server-sent events from SolveStream:
                           ``progress`` (every ``progress_ms``, default 200), then ``result``,
                           or ``failure`` ({"error", "exit_code", "status"}: an EventSource
                           cannot read an error response, so a refusal is an event too)
  GET  /api/info           the server's Info as JSON (`pdbd info --json`)

The door (class Door, in front of every route): a Host header must name this page (an IP
address, a loopback name, this machine's name or an --allow-host name: no DNS rebinding);
a POST must be same-origin (its Origin, when sent, the Host it was sent to; no cross-site
Sec-Fetch-Site) and application/json (a cross-origin text/plain form is refused before any
search: 403 or 415); a body beyond 64 KiB is answered 413 unread (Content-Length checked
first, a chunked body read no further than the limit); one client address has at most
``per_client`` searches in flight (429 beyond); every response forbids framing
(``frame-ancestors 'none'``, ``X-Frame-Options: DENY``), so no page can auto-solve
``/?board=...&solve=1`` in a frame. Listening beyond loopback needs HTTPS or ``insecure``
(check_exposure, as pdbd serve), and ``throttle_logs`` lets the same log line through at
most once per few seconds.

Errors carry the CLI's messages and exit codes, as JSON {"error", "exit_code"}: HTTP 400 for
bad input or an unsolvable board (exit codes 2 and 3), 503 when a limit stopped the search
(deadline, node budget, full queue: 4) or pdbd refuses searches for now (shutting down, a
table changed on disk: 1), 429 when the daemon's limit of searches per client (this
browser's, through --trusted-proxy) refused it, 502 when pdbd cannot be reached or failed
(1).
A client that goes away cancels its search on the daemon (the gRPC call is cancelled).

Loads no numba: the page and the client are all it needs.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import logging
import math
import re
import socket
import ssl
import threading
import time
from urllib.parse import urlsplit

import anyio
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.middleware import Middleware
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from pdbtool.cli import animate
from pdbtool.errors import BadInput, PdbError
from pdbtool.geometry import as_shape

from .address import LOOPBACK_NAMES, parse_address
from .client import ClientTls, SolverClient
from .defaults import DEFAULT_SERVER, DEFAULT_WEB_LISTEN
from .listening import ListenError

PROGRESS_MS = 200  # SSE progress interval; well inside the page's 500 ms promise
MAX_BODY = 64 * 1024  # bytes of a request body; a board is a few hundred
WATCH_MS = 200  # how often a POST's search looks whether its browser is still there
PER_CLIENT = 4        # searches (POST /api/solve, streams) one client address may have in flight
LOG_EVERY = 5.0       # seconds: the same log line at most once in this time
SEARCHES = ("/api/solve", "/api/solve/stream")
NO_FRAMES = [(b"content-security-policy", b"frame-ancestors 'none'"),
             (b"x-frame-options", b"DENY"), (b"x-content-type-options", b"nosniff"),
             (b"referrer-policy", b"no-referrer")]
log = logging.getLogger("pdbd")
HTTP_STATUS = {2: 400, 3: 400, 4: 503}  # exit code -> HTTP status; anything else 502


def http_status(error: PdbError) -> int:
    """The HTTP status of a failed solve: by its exit code, except that the daemon's limit of
    searches per client (the browser's, through --trusted-proxy) is 429, as the page's own.
    A 503 when pdbd itself refuses for now (shutting down, a table changed on disk).
    A 502 (pdbd unreachable or failed) is the operator's to see: it is logged (a WARNING,
    the same line at most once per few seconds: throttle_logs)."""
    if getattr(error, "limit", None) == "per-client":
        return 429
    if getattr(error, "refused", False):  # pdbd answered, but serves nothing now (shutting
        return 503  # down, a table changed on disk): unavailable, not a bad gateway
    status = HTTP_STATUS.get(error.exit_code, 502)
    if status == 502:
        log.warning("answered 502: %s", error)
    return status


def error_body(error: PdbError) -> dict:
    return {"error": str(error), "exit_code": error.exit_code}


def number(value, name: str, kind=float, text: bool = False):
    """An optional positive number from JSON (``text``: or from a query string, where
    every value is text); BadInput names the field."""
    if value is None or value == "" and text:
        return None
    if isinstance(value, str) and not text:  # JSON has numbers: "5" is a mistake
        raise BadInput(f"{name} must be a JSON number, not the string {shown(value)}")
    if kind is int and isinstance(value, float):  # int() would round it
        raise BadInput(f"{name} must be a whole number, not {shown(value)}")
    try:
        if isinstance(value, bool):
            raise TypeError
        v = kind(value)
    except (TypeError, ValueError, OverflowError):
        raise BadInput(f"{name} must be a{' whole' * (kind is int)} number, "
                       f"not {shown(value)}") from None
    if not math.isfinite(v):
        raise BadInput(f"{name} must be a finite number, not {shown(value)}")
    if v <= 0:
        raise BadInput(f"{name} must be more than 0, not {shown(value)}")
    return v


def shown(value) -> str:
    """A request's value as the client wrote it (JSON: true, null, [1, 2]), cut short."""
    try:
        text = json.dumps(value, allow_nan=False)  # (inf: repr)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


FIELDS = ("board", "goal", "deadline", "budget", "shape")  # what a request may name


def solve_args(fields, text: bool = False) -> dict:
    """The arguments of SolverClient.solve from request fields (a JSON object, or with
    ``text`` a query string's); a field it does not know is refused (a misspelt
    "deadline" must not pass silently)."""
    unknown = sorted(set(fields) - set(FIELDS))
    if unknown:
        raise BadInput(f"unknown field{'s' * (len(unknown) > 1)} {', '.join(map(repr, unknown))}: "
                       f"a request names {', '.join(FIELDS)}")
    board = fields.get("board")
    if board is None:
        raise BadInput('no board: give "board" as the tiles row by row ("1 2 3 ..." or a list), '
                       "0 for the blank")
    if not isinstance(board, (str, list)):
        raise BadInput('board must be the tiles row by row ("1 2 3 ..." or a list), 0 for the '
                       f"blank, not {shown(board)}")
    goal, shape = fields.get("goal"), fields.get("shape")
    if text:  # a query string's empty value is no value, as for the numbers
        goal, shape = goal or None, shape or None
    if goal is not None and not isinstance(goal, (str, list)):  # the client checks the rest
        raise BadInput("goal must be blank-last, blank-first or a goal board's tiles, "
                       f"not {shown(goal)}")
    if shape is not None and not isinstance(shape, str):
        raise BadInput(f"shape must be ROWSxCOLS (e.g. \"3x4\"), not {shown(shape)}")
    return {"board": board, "goal": "blank-last" if goal is None else goal,
            "deadline": number(fields.get("deadline"), "deadline", text=text),
            "budget": number(fields.get("budget"), "budget", int, text=text),
            "shape": None if shape is None else as_shape(shape)}


def sse(event: str, data: dict) -> str:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n"


def create_app(server: str = DEFAULT_SERVER, progress_ms: int = PROGRESS_MS,
               tls: ClientTls | None = None, allow_hosts=(), max_body: int = MAX_BODY,
               per_client: int = PER_CLIENT) -> Starlette:
    """The web app, solving through pdbd at ``server`` (over TLS with ``tls``), behind its
    Door (``allow_hosts``: more names the Host header may carry; ``max_body`` bytes;
    ``per_client`` searches per client address, 0 for no limit). Each call names the HTTP
    client it is for (metadata pdbd-client), which a daemon started with --trusted-proxy
    for this host counts per client instead of this proxy as one."""
    client = SolverClient(server, tls=tls)
    html = animate.page(None, live=True)

    async def index(request: Request) -> HTMLResponse:
        return HTMLResponse(html)

    async def solve(request: Request) -> JSONResponse:
        try:
            fields = json.loads(await request.body())
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise BadInput(f"the request body is not JSON: {e}") from None
        except ClientDisconnect:  # gone before its body arrived: nobody to answer (it was
            return gone_away()  # an "Exception in ASGI application" and a traceback)
        if not isinstance(fields, dict):
            raise BadInput('the request body must be a JSON object, e.g. {"board": "1 2 3 4 5 6 7 0 8"}')
        who = http_client(request)
        gone = threading.Event()  # the browser went away: the search is cancelled

        def search():  # (the stream's events, read on a worker thread: each interval it
            # looks whether the browser is still there; leaving closes the stream, which
            # cancels the RPC, so pdbd stops the search, as for /api/solve/stream)
            for event in client.solve_stream(**solve_args(fields), progress_ms=progress_ms,
                                             on_behalf=who):
                if gone.is_set():
                    return None
                if not isinstance(event, dict):
                    return event

        async def watch():
            while not gone.is_set():
                if await request.is_disconnected():
                    gone.set()
                    return
                await anyio.sleep(min(progress_ms, WATCH_MS) / 1000)

        result, error = None, None
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(watch)
            try:
                result = await anyio.to_thread.run_sync(search)
            except PdbError as e:  # raised below, out of the group (which would wrap it)
                error = e
            finally:
                gone.set()
                tasks.cancel_scope.cancel()  # the watcher now, not after its sleep (every
                # answer waited up to 200 ms for it)
        if error is not None:
            raise error
        if result is None:  # nobody to answer
            return gone_away()
        return JSONResponse(result.to_dict())

    def gone_away() -> JSONResponse:
        return JSONResponse({"error": "the client went away", "exit_code": 4}, status_code=499)

    async def stream(request: Request) -> Response:
        headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
        if request.method == "HEAD":  # the headers alone: no search for them (one ran)
            return Response(media_type="text/event-stream", headers=headers)
        return StreamingResponse(events(dict(request.query_params), http_client(request)),
                                 media_type="text/event-stream", headers=headers)

    async def events(fields: dict, who: str | None):
        try:
            search = client.solve_stream(**solve_args(fields, text=True),
                                         progress_ms=progress_ms, on_behalf=who)
        except PdbError as e:
            yield sse("failure", {**error_body(e), "status": http_status(e)})
            return
        try:
            while True:
                # The gRPC stream blocks: read it on a worker thread. A cancelled request
                # waits here for the next event (one progress interval), then closes it.
                event = await anyio.to_thread.run_sync(next, search, None)
                if event is None:
                    return
                if isinstance(event, dict):
                    yield sse("progress", event)
                else:
                    yield sse("result", event.to_dict())
        except PdbError as e:
            yield sse("failure", {**error_body(e), "status": http_status(e)})
        finally:
            search.close()  # cancels the RPC if it still runs, so pdbd stops the search

    async def info(request: Request) -> JSONResponse:
        return JSONResponse(await anyio.to_thread.run_sync(client.info))

    async def pdb_error(request: Request, e: PdbError) -> JSONResponse:
        return JSONResponse(error_body(e), status_code=http_status(e))

    async def http_error(request: Request, e: HTTPException) -> JSONResponse:
        """The router's own refusals (no such path, a method not taken) as JSON too."""
        return JSONResponse({"error": f"{request.method} {request.url.path}: {e.detail.lower()}",
                             "exit_code": 2}, status_code=e.status_code, headers=e.headers)

    @contextlib.asynccontextmanager
    async def lifespan(app):
        yield
        client.close()

    return Starlette(routes=[Route("/", index), Route("/api/solve", solve, methods=["POST"]),
                             Route("/api/solve/stream", stream, methods=["GET"]),
                             Route("/api/info", info, methods=["GET"])],
                     exception_handlers={PdbError: pdb_error, HTTPException: http_error},
                     lifespan=lifespan,
                     middleware=[Middleware(Door, allow_hosts=allow_hosts, max_body=max_body,
                                            per_client=per_client)])


class Door:
    """ASGI middleware: what a request must be before any route sees it (module docstring).
    A refusal is JSON {"error", "exit_code"} as the routes' errors, and closes the
    connection (an unread body is never read)."""

    def __init__(self, app, allow_hosts=(), max_body: int = MAX_BODY,
                 per_client: int = PER_CLIENT):
        self.app = app
        self.names = (LOOPBACK_NAMES | {socket.gethostname().lower()}
                      | {host_name(h) for h in allow_hosts})
        self.max_body = max_body
        self.per_client = per_client
        self.searches: dict[str, int] = {}  # client address -> searches in flight

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def framed(message):  # every response: never inside a frame
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", ()), *NO_FRAMES]}
            await send(message)

        headers = Headers(scope=scope)
        stream = scope["path"] == "/api/solve/stream" and scope["method"] == "GET"
        refusal = self.refusal(scope, headers)
        if refusal is None:
            refusal, receive = await self.body(headers, receive)
        if refusal is not None:
            return await refuse(framed, *refusal, stream=stream)
        if scope["path"] not in SEARCHES or not self.per_client:
            return await self.app(scope, receive, framed)
        who = http_client(Request(scope)) or "unknown"
        if self.searches.get(who, 0) >= self.per_client:
            return await refuse(framed, 429, f"{who} has {self.per_client} searches in flight "
                                "already (the most one client may have): wait for one to end",
                                exit_code=4, stream=stream)
        self.searches[who] = self.searches.get(who, 0) + 1
        try:
            await self.app(scope, receive, framed)
        finally:
            if self.searches[who] <= 1:
                del self.searches[who]
            else:
                self.searches[who] -= 1

    def refusal(self, scope, headers) -> tuple[int, str] | None:
        """(status, message) if the request is refused for where it comes from or what it
        claims to be; None if it may go on."""
        host = headers.get("host", "")
        if not self.host_allowed(host):
            return 403, (f"unknown Host {host!r}: this page answers to its IP addresses, "
                         "localhost and this machine's name (pdbd web --allow-host NAME for more)")
        unsafe = scope["method"] not in ("GET", "HEAD")
        if not (unsafe or scope["path"].startswith("/api/")):
            return None  # the page itself: any site may link to it (framing is refused)
        origin = headers.get("origin")
        if origin is not None and not same_origin(origin, host):
            return 403, (f"cross-origin request from {origin} refused: use the page at "
                         f"http(s)://{host}/")
        if headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
            return 403, "cross-site request refused: use the page itself"
        kind = headers.get("content-type", "").partition(";")[0].strip().lower()
        posted = scope["method"] == "POST" and scope["path"] == "/api/solve"  # the one body
        if posted and kind != "application/json":  # (other methods and paths: 405, 404)
            return 415, (f"expected Content-Type: application/json, not {kind or 'none'} "
                         '(the body: {"board": "1 2 3 ..."})')
        return None

    def host_allowed(self, host: str) -> bool:
        name = host_name(host)
        if name in self.names:
            return True
        try:
            ipaddress.ip_address(name)  # an IP address cannot be rebound to another host
            return True
        except ValueError:
            return False

    async def body(self, headers, receive):
        """(refusal or None, the receive to pass on): at most max_body bytes, never read
        beyond; a chunked body is read here (up to the limit) and replayed."""
        too_big = (413, (f"request body larger than {self.max_body:,} bytes (a board is a "
                         "few hundred): refused unread"))
        length = headers.get("content-length")
        if length is not None:
            if not length.strip().isdigit():
                return (400, f"Content-Length {length!r} is not a number"), receive
            return (too_big if int(length) > self.max_body else None), receive
        if "chunked" not in headers.get("transfer-encoding", "").lower():
            return None, receive
        parts, size, more = [], 0, True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return (400, "the client went away"), receive
            parts.append(message.get("body", b""))
            size += len(parts[-1])
            more = message.get("more_body", False)
            if size > self.max_body:
                return too_big, receive
        replay = [{"type": "http.request", "body": b"".join(parts), "more_body": False}]

        async def replayed():
            return replay.pop() if replay else await receive()

        return None, replayed


async def refuse(send, status: int, message: str, exit_code: int = 2,
                 stream: bool = False) -> None:
    """The refusal as JSON with its status; to the progress stream (``stream``), a
    `failure` event that says it, as the stream's own refusals are: an EventSource cannot
    read an error response (the page said "connection lost" for a client's limit)."""
    error = {"error": message, "exit_code": exit_code}
    if stream:
        status, kind, body = 200, b"text/event-stream", sse("failure", {**error,
                                                                       "status": status}).encode()
    else:
        kind, body = b"application/json", json.dumps(error).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", kind), (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})


def same_origin(origin: str, host: str) -> bool:
    """Whether a browser's Origin is the address its request was sent to (the Host header:
    scheme aside, as a proxy in front may add TLS; default ports dropped)."""
    try:
        parts = urlsplit(origin)
    except ValueError:
        return False
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return False
    return strip_port(parts.netloc.lower()) == strip_port(host.lower())


def host_name(host: str) -> str:
    """The name in a Host header: 'example.org:8080' -> 'example.org', '[::1]:80' -> '::1'."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:host.find("]")] if "]" in host else ""
    return host.split(":")[0]


def strip_port(netloc: str) -> str:
    return netloc.removesuffix(":80").removesuffix(":443")


NUMBERS = re.compile(r"0x[0-9a-fA-F]+|\d+(?:\.\d+)?")  # left out of a line's identity


class Throttle(logging.Filter):
    """A handler's filter: the same line (logger, level and message template, its numbers
    and addresses left out: asyncio formats a handle's timer and id into each message) at
    most once per ``every`` seconds; the next one let through says how many were
    suppressed. ``clock``: seconds, as time.monotonic (a test's own)."""

    def __init__(self, every: float = LOG_EVERY, keep: int = 1000, clock=time.monotonic):
        super().__init__()
        self.every, self.keep, self.clock = every, keep, clock
        self._lock = threading.Lock()
        self._last: dict[tuple, float] = {}
        self._suppressed: dict[tuple, int] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        key = (record.name, record.levelno, NUMBERS.sub("#", str(record.msg)))
        now = self.clock()
        with self._lock:
            if now - self._last.get(key, float("-inf")) < self.every:
                self._suppressed[key] = self._suppressed.get(key, 0) + 1
                return False
            if len(self._last) >= self.keep:  # forget lines not seen for a while
                for old in [k for k, t in self._last.items() if now - t >= self.every]:
                    del self._last[old]
                    self._suppressed.pop(old, None)
            self._last[key] = now
            suppressed = self._suppressed.pop(key, 0)
        if suppressed:
            record.msg = (f"{record.getMessage()} ({suppressed} more like it suppressed in "
                          f"the last {self.every:g} s)")
            record.args = ()
        return True


def throttle_logs(every: float = LOG_EVERY) -> None:
    """Throttle every line through pdbd.logs' handler (installed by logs.setup)."""
    for handler in logging.getLogger().handlers:
        if getattr(handler, "pdbd", False) and not any(isinstance(f, Throttle)
                                                        for f in handler.filters):
            handler.addFilter(Throttle(every))


def http_client(request: Request) -> str | None:
    """The HTTP client's address, as the daemon is told it (None if unknown)."""
    return request.client.host if request.client else None


STOP_GRACE = 1.0  # seconds the requests in flight get at a stop, then cancelled: an open
# progress stream (a search of hours) held the stop for the join's whole timeout


class ExposureError(ListenError):
    pass


def check_exposure(listen: str, https, insecure: bool) -> None:
    """Beyond loopback only over HTTPS, or with ``insecure`` said out loud (pdbd serve's
    rule, and its reading of the address: a name that is not localhost counts as beyond
    loopback)."""
    if not parse_address(listen, "--listen").loopback and not https and not insecure:
        raise ExposureError(f"refusing to listen on {listen} without HTTPS: anyone who can "
                            "reach it could solve through the daemon behind it; give "
                            "--https-cert and --https-key, or --insecure")


def bind(listen: str = DEFAULT_WEB_LISTEN) -> socket.socket:
    """A listening socket for HOST:PORT (port 0 picks a free one); BadInput if malformed,
    ListenError if the address cannot be had (in use, not this machine's)."""
    host, port = parse_address(listen, "--listen")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        raise ListenError(f"cannot listen on {listen}: {(e.strerror or str(e)).lower()}") from None
    sock.listen(128)
    return sock


def url_of(sock: socket.socket, scheme: str = "http") -> str:
    host, port = sock.getsockname()[:2]
    return f"{scheme}://{f'[{host}]' if ':' in host else host}:{port}/"


class WebServer:
    """The app on uvicorn in a thread of this process, listening on ``listen`` (beyond
    loopback only with ``https`` or ``insecure``): ``url`` is where; ``start()`` returns
    once it serves, ``stop()`` shuts it down. The caller keeps the main thread and its
    signal handling (as `pdbd serve` does). ``allow_hosts``, ``per_client``: the Door's."""

    def __init__(self, listen: str = DEFAULT_WEB_LISTEN, server: str = DEFAULT_SERVER,
                 progress_ms: int = PROGRESS_MS, tls: ClientTls | None = None,
                 https: tuple[str, str] | None = None, insecure: bool = False,
                 allow_hosts=(), per_client: int = PER_CLIENT):
        import uvicorn

        check_exposure(listen, https, insecure)

        https_files = {}
        if https:  # (certificate chain, key): read now, so a missing file is said at once
            https_files = {"ssl_certfile": https[0], "ssl_keyfile": https[1]}
            try:
                ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(*https)
            except (OSError, ssl.SSLError) as e:
                raise BadInput(f"cannot use the HTTPS certificate {https[0]} and key "
                               f"{https[1]}: {getattr(e, 'strerror', None) or e}") from None
        self.sock = bind(listen)
        self.url = url_of(self.sock, "https" if https else "http")
        # log_config=None: uvicorn's lines go through the process's handler (pdbd.logs).
        app = create_app(server, progress_ms, tls, allow_hosts=allow_hosts,
                         per_client=per_client)
        config = uvicorn.Config(app, log_level="warning", lifespan="on", log_config=None,
                                timeout_graceful_shutdown=STOP_GRACE, **https_files)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self.sock]},
                                        name="pdbd-web", daemon=True)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def start(self, timeout: float = 30.0) -> "WebServer":
        self._thread.start()
        end = time.monotonic() + timeout
        while not self._server.started:
            if not self.alive or time.monotonic() > end:
                self.stop()
                raise PdbError(f"pdbd web did not start on {self.url}")
            time.sleep(0.01)
        return self

    def stop(self, timeout: float = 10.0) -> None:
        self._server.should_exit = True
        if self._thread.ident is not None:
            self._thread.join(timeout)
        self.sock.close()
