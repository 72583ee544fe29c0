"""`pdbd web`'s door (issue 40, finding 4): loopback unless HTTPS or --insecure, bodies beyond
64 KiB refused unread, POST same-origin and JSON only, unknown Host names refused (DNS
rebinding), never framed, a bounded number of searches per browser, log lines throttled.

The daemon behind the page is a fake SolverClient that records what it was asked, so
"started no search" is checked exactly; servers are started on loopback only."""

import json
import logging
import signal
import socket
import threading
import time
import warnings
from typing import ClassVar

import httpx
import pytest

with warnings.catch_warnings():  # starlette's note that it prefers httpx2
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

from reference import free_port
from serving import Drained, pdbd_process

from pdbd import web
from pdbtool.errors import BadInput

BOARD = {"board": "1 2 3 4 5 6 7 0 8"}
JSON = {"content-type": "application/json"}


class Result:
    def to_dict(self):
        return {"length": 1}


class FakeClient:
    """SolverClient's surface: counts the searches asked for; ``hold`` keeps them running."""

    searches: ClassVar[list] = []
    hold = threading.Event()

    def __init__(self, server, tls=None):
        pass

    def solve(self, **args):
        FakeClient.searches.append(args)
        FakeClient.hold.wait(10)
        return Result()

    def solve_stream(self, **args):
        FakeClient.searches.append(args)

        def events():
            FakeClient.hold.wait(10)
            yield Result()
        return events()

    def info(self):
        return {"sizes": []}

    def close(self):
        pass


def stream_refusal(r) -> dict:
    """The door's refusal of a progress stream: one `failure` event (an EventSource cannot
    read an error response: the page said "connection lost")."""
    assert r.status_code == 200 and r.headers["content-type"] == "text/event-stream", r.text
    event, data = r.text.strip().split("\n")
    assert event == "event: failure" and data.startswith("data: "), r.text
    return json.loads(data.removeprefix("data: "))


@pytest.fixture
def fake(monkeypatch):
    monkeypatch.setattr(web, "SolverClient", FakeClient)
    FakeClient.searches = []
    FakeClient.hold = threading.Event()
    FakeClient.hold.set()
    yield FakeClient
    FakeClient.hold.set()


@pytest.fixture
def app(fake):
    page = web.create_app("127.0.0.1:1", allow_hosts=["puzzles.example", "proxy.example:8443"])
    with TestClient(page, base_url="http://127.0.0.1:8080") as client:
        yield client


def test_beyond_loopback_only_with_https_or_insecure():
    for listen in ("127.0.0.1:8080", "localhost:0", "[::1]:8080", "127.3.4.5:80"):
        web.check_exposure(listen, None, False)
    for listen in ("0.0.0.0:8080", "[::]:8080", "192.0.2.7:80", "example.org:8080"):
        with pytest.raises(web.ExposureError, match="refusing to listen on .* without HTTPS: "
                           ".* give --https-cert and --https-key, or --insecure"):
            web.check_exposure(listen, None, False)
        web.check_exposure(listen, ("cert.pem", "key.pem"), False)
        web.check_exposure(listen, None, True)
    # read as pdbd serve reads --listen (pdbd web took '::1:8080', and '[::1]x:80' as ::1]x)
    for listen, said in (("::1:8080", "put an IPv6 address in brackets"),
                         ("[::1]x:80", "is not HOST:PORT"), ("127.0.0.1:x", "the port must be"),
                         ("unix:/tmp/x", "takes HOST:PORT only")):  # (said the port was bad)
        with pytest.raises(BadInput, match=said):
            web.check_exposure(listen, None, False)
    with pytest.raises(web.ExposureError):  # refused before anything is bound (a TEST-NET
        web.WebServer("192.0.2.7:0", "127.0.0.1:1")  # address: never bound if it were not)


@pytest.mark.process
def test_pdbd_web_refuses_an_exposed_address_at_once():
    proc = pdbd_process("web", "--listen", "192.0.2.7:0", "--server", "127.0.0.1:1")  # TEST-NET:
    try:  # refused by the same rule as 0.0.0.0, and never bound here if it were not
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 1 and "refusing to listen on 192.0.2.7:0 without HTTPS" in err, err


@pytest.mark.process
def test_pdbd_web_on_a_busy_port_is_a_runtime_failure():
    """Exit 1 and pdbd serve's words, not exit 2 (bad input): the address was well formed."""
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        listen = f"127.0.0.1:{busy.getsockname()[1]}"
        proc = pdbd_process("web", "--listen", listen, "--server", "127.0.0.1:1")
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, err
    assert f"pdbd: cannot listen on {listen}: address already in use" in err, err


def test_the_page_is_never_framed(app):
    for url in ("/", "/?board=1+2+3+4+5+6+7+0+8&solve=1", "/api/info"):
        r = app.get(url)
        assert r.status_code == 200
        assert r.headers["content-security-policy"] == "frame-ancestors 'none'"
        assert r.headers["x-frame-options"] == "DENY"
    r = app.get("/", headers={"host": "evil.example"})  # refusals too
    assert r.status_code == 403 and r.headers["x-frame-options"] == "DENY"


def test_cross_origin_and_non_json_posts_start_no_search(app, fake):
    refused = [
        ({"origin": "http://evil.example", "content-type": "text/plain"}, 403),  # the CSRF shape
        ({"origin": "http://evil.example", **JSON}, 403),
        ({"origin": "null", **JSON}, 403),
        ({"origin": "http://127.0.0.1:9999", **JSON}, 403),  # another port: another origin
        ({"content-type": "text/plain"}, 415),
        ({"content-type": "application/x-www-form-urlencoded"}, 415),
        ({}, 415),
        ({"sec-fetch-site": "cross-site", **JSON}, 403),
        ({"sec-fetch-site": "same-site", **JSON}, 403),
    ]
    for headers, status in refused:
        r = app.post("/api/solve", content=b'{"board": "1 2 3 4 5 6 7 0 8"}', headers=headers)
        assert r.status_code == status, (headers, r.text)
        assert r.json()["exit_code"] == 2 and r.json()["error"], r.text
    for headers in ({"sec-fetch-site": "cross-site"}, {"origin": "http://evil.example"}):
        r = app.get("/api/solve/stream", params=BOARD, headers=headers)
        assert stream_refusal(r)["status"] == 403, r.text  # an event: the page reads it
    assert fake.searches == []
    for origin in (None, "http://127.0.0.1:8080", "https://127.0.0.1:8080"):
        headers = {**JSON, **({"origin": origin} if origin else {}),
                   "sec-fetch-site": "same-origin"}
        r = app.post("/api/solve", json=BOARD, headers=headers)
        assert r.status_code == 200 and r.json() == {"length": 1}, r.text
    r = app.post("/api/solve", json=BOARD,
                 headers={"content-type": "application/json; charset=utf-8"})
    assert r.status_code == 200
    assert len(fake.searches) == 4


def test_unknown_host_names_are_refused(app, fake):
    """DNS rebinding: evil.example resolving to 127.0.0.1 sends Host: evil.example."""
    for host in ("evil.example", "evil.example:8080", "127.0.0.1.evil.example", "", "[::1"):
        for method, url in (("GET", "/"), ("GET", "/api/info"), ("POST", "/api/solve")):
            r = app.request(method, url, json=BOARD, headers={"host": host})
            assert r.status_code == 403 and "Host" in r.json()["error"], (host, url)
    assert fake.searches == []
    names = ("127.0.0.1:8080", "localhost:8080", "LOCALHOST", "[::1]:8080", "192.0.2.7:80",
             socket.gethostname(), "puzzles.example", "puzzles.example:443", "proxy.example")
    for host in names:
        origin = f"http://{host}"
        r = app.post("/api/solve", json=BOARD, headers={"host": host, "origin": origin})
        assert r.status_code == 200, (host, r.text)


def raw(url: str, request: bytes, then=b"", timeout=10.0) -> bytes:
    """Send ``request`` (and ``then``, ignoring a closed connection) over a socket to the
    server at ``url``; the response as read until the server closes (or ``timeout``)."""
    host, port = url.split("//")[1].rstrip("/").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        s.sendall(request)
        try:
            s.sendall(then)
        except OSError:
            pass
        out = b""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                got = s.recv(65536)
            except (TimeoutError, ConnectionResetError):
                break
            if not got:
                break
            out += got
        return out


@pytest.fixture
def served_page(fake):
    server = web.WebServer("127.0.0.1:0", "127.0.0.1:1").start()
    try:
        yield server.url
    finally:
        fake.hold.set()
        server.stop()


def test_a_100_mb_body_is_refused_unread(served_page, fake):
    host = served_page.split("//")[1].rstrip("/")
    head = (f"POST /api/solve HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {100 * 2**20}\r\n\r\n").encode()
    start = time.monotonic()
    response = raw(served_page, head)  # no byte of the body is ever sent
    assert response.startswith(b"HTTP/1.1 413 "), response[:200]
    assert b"refused unread" in response and time.monotonic() - start < 5
    chunk = b"%x\r\n%s\r\n" % (8192, b"x" * 8192)
    head = (f"POST /api/solve HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            "Transfer-Encoding: chunked\r\n\r\n").encode()
    response = raw(served_page, head + chunk * 9, then=chunk * 200)  # 72 KiB, then more
    assert response.startswith(b"HTTP/1.1 413 "), response[:200]
    assert fake.searches == []
    small = b'{"board": "1 2 3 4 5 6 7 0 8' + b" " * 60_000 + b'"}'  # padded with blanks
    r = httpx.post(served_page + "api/solve", content=small, headers=JSON, timeout=10)
    assert r.status_code == 200, r.text  # within 64 KiB: on to the search
    body = b"%x\r\n%s\r\n0\r\n\r\n" % (len(small), small)
    head = (f"POST /api/solve HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n").encode()
    assert raw(served_page, head + body).startswith(b"HTTP/1.1 200 ")
    assert len(fake.searches) == 2


def test_one_browser_has_a_bounded_number_of_searches(served_page, fake):
    fake.hold.clear()
    answers = []

    def post():
        answers.append(httpx.post(served_page + "api/solve", json=BOARD, timeout=30).status_code)

    posts = [threading.Thread(target=post) for _ in range(web.PER_CLIENT - 1)]
    for t in posts:
        t.start()
    stream = threading.Thread(target=lambda: answers.append(
        httpx.get(served_page + "api/solve/stream", params=BOARD, timeout=30).status_code))
    stream.start()
    end = time.monotonic() + 10
    while len(fake.searches) < web.PER_CLIENT and time.monotonic() < end:
        time.sleep(0.01)
    assert len(fake.searches) == web.PER_CLIENT
    r = httpx.post(served_page + "api/solve", json=BOARD, timeout=10)
    assert r.status_code == 429 and r.json()["exit_code"] == 4 and "in flight" in r.json()["error"]
    r = httpx.get(served_page + "api/solve/stream", params=BOARD, timeout=10)
    assert stream_refusal(r)["status"] == 429 and stream_refusal(r)["exit_code"] == 4
    assert httpx.get(served_page + "api/info", timeout=10).status_code == 200  # not a search
    fake.hold.set()
    for t in (*posts, stream):
        t.join(30)
    assert sorted(answers) == [200] * web.PER_CLIENT
    r = httpx.post(served_page + "api/solve", json=BOARD, timeout=10)  # the slots came back
    assert r.status_code == 200 and len(fake.searches) == web.PER_CLIENT + 1


def test_the_same_log_line_is_throttled():
    lines = []

    class Collect(logging.Handler):
        def emit(self, record):
            lines.append(record.getMessage())

    now = [100.0]  # the throttle's clock, moved by the test alone
    handler = Collect()
    handler.addFilter(web.Throttle(every=0.3, clock=lambda: now[0]))
    log = logging.getLogger("pdbd.test-throttle")
    log.addHandler(handler)
    log.propagate = False
    try:
        for i in range(1000):
            log.warning("Invalid HTTP request from %s", f"peer {i}")
            log.warning("another line, 100%")
            # asyncio formats a handle's timer and id into the message itself
            log.error(f"Exception in callback <TimerHandle when={7445.5 + i} at {hex(4096 + i)}>")
        assert lines == ["Invalid HTTP request from peer 0", "another line, 100%",
                         "Exception in callback <TimerHandle when=7445.5 at 0x1000>"]
        now[0] += 0.35
        log.warning("Invalid HTTP request from %s", "peer x")
        assert lines[-1] == ("Invalid HTTP request from peer x (999 more like it suppressed "
                             "in the last 0.3 s)")
    finally:
        log.removeHandler(handler)
        log.propagate = True


@pytest.mark.process
def test_a_flood_of_bad_requests_writes_a_few_lines(fake):
    port = free_port()
    proc = pdbd_process("web", "--listen", f"127.0.0.1:{port}", "--server", "127.0.0.1:1")
    try:
        line = proc.stderr.readline()
        assert f"pdbd web on http://127.0.0.1:{port}/" in line, line
        drained = Drained(proc)
        for _ in range(300):  # uvicorn logs each: "Invalid HTTP request received."
            with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
                s.sendall(b"\x00\x01garbage\r\n\r\n")
                s.settimeout(5)
                try:
                    s.recv(1024)
                except OSError:
                    pass
        r = httpx.get(f"http://127.0.0.1:{port}/", timeout=10)
        assert r.status_code == 200
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0
    finally:
        proc.kill()
        proc.wait()
    lines = drained.text().splitlines()  # all of it: the reader done with the closed pipe
    invalid = [x for x in lines if "Invalid HTTP request" in x]
    assert 1 <= len(invalid) <= 3, lines[:10]
    assert len(lines) < 10, lines


def test_the_router_and_a_dropped_body_answer_in_json_and_quietly(fake, monkeypatch):
    """The table of the web review: no such path and a method not taken were plain text
    (and DELETE /api/solve was 415, the JSON check before the router); HEAD on the stream
    started a search; an answer waited out its watcher's sleep (200 ms, each POST: made 60
    s here, so that the wait is certain); a client gone before its body was a traceback."""
    monkeypatch.setattr(web, "WATCH_MS", 60_000)
    page = web.create_app("127.0.0.1:1", progress_ms=60_000)
    with TestClient(page, base_url="http://127.0.0.1:8080") as client:
        start = time.monotonic()
        r = client.post("/api/solve", json=BOARD)
        assert r.status_code == 200 and time.monotonic() - start < 30  # not 60 s
        for method, path, status in (("GET", "/api/nope", 404), ("POST", "/nope", 404),
                                     ("DELETE", "/api/solve", 405), ("GET", "/api/solve", 405),
                                     ("POST", "/api/info", 405)):
            r = client.request(method, path)
            assert r.status_code == status and r.json()["exit_code"] == 2, (method, path, r.text)
        searches = len(fake.searches)
        r = client.head("/api/solve/stream", params=BOARD)
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        assert len(fake.searches) == searches  # no search for the headers
    import anyio

    sent = []

    async def gone():  # the client closes before its body's end: the server hears this
        return {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
             "method": "POST", "scheme": "http", "path": "/api/solve", "raw_path": b"/api/solve",
             "query_string": b"", "root_path": "", "client": ("127.0.0.1", 5000),
             "server": ("127.0.0.1", 8080),
             "headers": [(b"host", b"127.0.0.1:8080"), (b"content-type", b"application/json"),
                         (b"content-length", b"100")]}
    anyio.run(web.create_app("127.0.0.1:1"), scope, gone, send)  # raised ClientDisconnect
    assert sent[0]["type"] == "http.response.start" and sent[0]["status"] == 499, sent
