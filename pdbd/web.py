"""`pdbd web`: the animation page served live, solving through a pdbd server (starlette on
uvicorn; loopback by default).

Routes:
  GET  /                   the page (pdbtool/animation.html in live mode): paste or shuffle a
                           board, choose the goal, solve, watch the progress, then the animation
  POST /api/solve          JSON {"board": "1 2 3 ..." or [1, 2, ...], "goal", "deadline",
                           "budget"} -> the JSON of `pdbtool solve --json` (with path_h)
  GET  /api/solve/stream   the same as query parameters -> server-sent events from SolveStream:
                           ``progress`` (every ``progress_ms``, default 200), then ``result``,
                           or ``failure`` ({"error", "exit_code", "status"}: an EventSource
                           cannot read an error response, so a refusal is an event too)
  GET  /api/info           the server's Info as JSON (`pdbd info --json`)

Errors carry the CLI's messages and exit codes, as JSON {"error", "exit_code"}: HTTP 400 for
bad input or an unsolvable board (exit codes 2 and 3), 503 when a limit stopped the search
(deadline, node budget, full queue: 4), 502 when pdbd cannot be reached or failed (1).
A client that goes away cancels its search on the daemon (the gRPC call is cancelled).

Loads no numba: the page and the client are all it needs.
"""

from __future__ import annotations

import contextlib
import json
import math
import socket
import ssl
import threading
import time

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, StreamingResponse
from starlette.routing import Route

from pdbtool.cli import animate
from pdbtool.errors import BadInput, PdbError

from .client import ClientTls, SolverClient
from .defaults import DEFAULT_SERVER, DEFAULT_WEB_LISTEN

PROGRESS_MS = 200  # SSE progress interval; well inside the page's 500 ms promise
HTTP_STATUS = {2: 400, 3: 400, 4: 503}  # exit code -> HTTP status; anything else 502


def http_status(error: PdbError) -> int:
    return HTTP_STATUS.get(error.exit_code, 502)


def error_body(error: PdbError) -> dict:
    return {"error": str(error), "exit_code": error.exit_code}


def number(value, name: str, kind=float):
    """An optional positive number from JSON or a query string; BadInput names the field."""
    if value is None or value == "":
        return None
    try:
        v = kind(value)
    except (TypeError, ValueError):
        raise BadInput(f"{name} must be a number, not {value!r}") from None
    if isinstance(value, bool) or not (math.isfinite(v) and v > 0):
        raise BadInput(f"{name} must be more than 0, not {value!r}")
    return v


def solve_args(fields) -> dict:
    """The arguments of SolverClient.solve from request fields (a dict or query params)."""
    board = fields.get("board")
    if not isinstance(board, (str, list)):
        raise BadInput('no board: give "board" as the tiles row by row ("1 2 3 ..." or a list), '
                       "0 for the blank")
    goal = fields.get("goal") or "blank-last"
    if not isinstance(goal, str):
        raise BadInput(f"goal must be blank-last, blank-first or a goal board's tiles, not {goal!r}")
    return {"board": board, "goal": goal, "deadline": number(fields.get("deadline"), "deadline"),
            "budget": number(fields.get("budget"), "budget", int)}


def sse(event: str, data: dict) -> str:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n"


def create_app(server: str = DEFAULT_SERVER, progress_ms: int = PROGRESS_MS,
               tls: ClientTls | None = None) -> Starlette:
    """The web app, solving through pdbd at ``server`` (over TLS with ``tls``). Each call
    names the HTTP client it is for (metadata pdbd-client), which a daemon started with
    --trusted-proxy for this host counts per client instead of this proxy as one."""
    client = SolverClient(server, tls=tls)
    html = animate.page(None, live=True)

    async def index(request: Request) -> HTMLResponse:
        return HTMLResponse(html)

    async def solve(request: Request) -> JSONResponse:
        try:
            fields = json.loads(await request.body())
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise BadInput(f"the request body is not JSON: {e}") from None
        if not isinstance(fields, dict):
            raise BadInput('the request body must be a JSON object, e.g. {"board": "1 2 3 4 5 6 7 0 8"}')
        who = http_client(request)
        result = await anyio.to_thread.run_sync(lambda: client.solve(**solve_args(fields),
                                                                     on_behalf=who))
        return JSONResponse(result.to_dict())

    async def stream(request: Request) -> StreamingResponse:
        return StreamingResponse(events(dict(request.query_params), http_client(request)),
                                 media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    async def events(fields: dict, who: str | None):
        try:
            search = client.solve_stream(**solve_args(fields), progress_ms=progress_ms,
                                         on_behalf=who)
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

    @contextlib.asynccontextmanager
    async def lifespan(app):
        yield
        client.close()

    return Starlette(routes=[Route("/", index), Route("/api/solve", solve, methods=["POST"]),
                             Route("/api/solve/stream", stream), Route("/api/info", info)],
                     exception_handlers={PdbError: pdb_error}, lifespan=lifespan)


def http_client(request: Request) -> str | None:
    """The HTTP client's address, as the daemon is told it (None if unknown)."""
    return request.client.host if request.client else None


def bind(listen: str = DEFAULT_WEB_LISTEN) -> socket.socket:
    """A listening socket for HOST:PORT (port 0 picks a free one); BadInput if malformed."""
    host, sep, port = listen.rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise BadInput(f"--listen {listen!r}: expected HOST:PORT, e.g. {DEFAULT_WEB_LISTEN}")
    host = host.strip("[]")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, int(port)))
    except OSError as e:
        sock.close()
        raise BadInput(f"cannot listen on {listen}: {e.strerror}") from None
    sock.listen(128)
    return sock


def url_of(sock: socket.socket, scheme: str = "http") -> str:
    host, port = sock.getsockname()[:2]
    return f"{scheme}://{f'[{host}]' if ':' in host else host}:{port}/"


class WebServer:
    """The app on uvicorn in a thread of this process, listening on ``listen``: ``url`` is
    where; ``start()`` returns once it serves, ``stop()`` shuts it down. The caller keeps
    the main thread and its signal handling (as `pdbd serve` does)."""

    def __init__(self, listen: str = DEFAULT_WEB_LISTEN, server: str = DEFAULT_SERVER,
                 progress_ms: int = PROGRESS_MS, tls: ClientTls | None = None,
                 https: tuple[str, str] | None = None):
        import uvicorn

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
        config = uvicorn.Config(create_app(server, progress_ms, tls), log_level="warning",
                                lifespan="on", log_config=None, **https_files)
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
