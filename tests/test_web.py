"""`pdbd web` over HTTP (httpx; the page in a browser is test_browser.py): the JSON endpoint
answers as `pdbtool solve --json` does, bad input is HTTP 400 with the CLI's messages, the
SSE stream brings progress while a search runs and cancels it when the client leaves."""

import json
import logging
import signal
import subprocess
import sys
import time

import httpx
import pytest

from pdbtool.cli import main as pdbtool_cli
from pdbtool.heuristics.table_free import table_free
from pdbtool.loading import load_heuristic
from pdbtool.search.solver import Solver
from reference import ROOT, free_port, instances, korf_shortest
from serving import EASY8, HARD, info, pdbd_process, run_cli, running_daemon, running_web, wait_for

pytestmark = pytest.mark.process

KORF24_1 = instances("korf24_50.txt")[0][2]  # 95 moves: Manhattan IDA* would run for ages


@pytest.fixture(scope="module")
def web(served):
    with running_web(served.address) as url:
        yield url


@pytest.fixture(scope="module")
def daemon24():
    """pdbd serving 5x5 boards with Manhattan distance on one thread."""
    from pdbtool.selection import TableSet

    daemon = running_daemon(TableSet({5: table_free("manhattan", 5)}), threads=1, max_queue=1)
    yield daemon
    daemon.stop(grace=1)


def events(response) -> list[tuple[float, str, dict]]:
    """(arrival time, name, data) of each server-sent event, read as they arrive."""
    out, name = [], None
    for line in response.iter_lines():
        if line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: "):
            out.append((time.monotonic(), name, json.loads(line[6:])))
    return out


def test_api_solve_answers_as_pdbtool_solve(web, art_dir):
    local = Solver(load_heuristic(art_dir / "15-5-5-5.h5"))
    _, optimum, board = korf_shortest(1)[0]
    r = httpx.post(web + "api/solve", json={"board": list(board), "goal": "blank-first"}, timeout=60)
    assert r.status_code == 200
    mine = local.solve(board, "blank-first").to_dict()
    got = r.json()
    assert list(got) == list(mine) and got["length"] == optimum
    for key in ("moves", "blank_moves", "iterations", "path_h", "nodes_generated", "heuristic"):
        assert got[key] == mine[key], key
    r = httpx.post(web + "api/solve", json={"board": " ".join(map(str, EASY8))})
    assert r.status_code == 200 and r.json()["path_h"] == [2, 1, 0]


BAD = {  # body -> the `pdbd query` arguments that make the same mistake
    "not an integer": ({"board": "1 2 x"}, ["1 2 x"]),
    "not square": ({"board": [1, 2, 3]}, ["1 2 3"]),
    "duplicate": ({"board": "1 2 3 4 5 6 7 8 8"}, ["1 2 3 4 5 6 7 8 8"]),
    "empty": ({"board": ""}, [""]),
    "goal": ({"board": "1 2 3 4 5 6 7 8 0", "goal": "nope"}, ["--goal", "nope", "1 2 3 4 5 6 7 8 0"]),
    "no table": ({"board": list(range(36))}, [" ".join(map(str, range(36)))]),
    "unsolvable": ({"board": "1 2 3 4 5 6 8 7 0"}, ["1 2 3 4 5 6 8 7 0"]),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_is_400_with_the_cli_message(case, web, served, capsys):
    body, argv = BAD[case]
    r = httpx.post(web + "api/solve", json=body)
    code, _, err = run_cli(capsys, "query", "--server", served.address, *argv)
    assert r.status_code == 400 and r.json() == {"error": err.strip().removeprefix("pdbd: "),
                                                 "exit_code": code}
    assert code in (2, 3)
    if case not in ("empty", "no table"):  # pdbtool solve, in-process, says it alike
        code = pdbtool_cli.main(["solve", "--heuristic", "manhattan", *argv])
        err = capsys.readouterr().err
        assert err.strip() == "pdbtool: " + r.json()["error"] and code == r.json()["exit_code"]


@pytest.mark.parametrize("body, says", [
    ({"board": [8.9, 6, 7, 2, 5, 4, 3, 0, 1.2]}, "not an integer: 8.9"),
    ({"board": [8, 6, 7, 2, 5, 4, 3, True, False]}, "not an integer: True"),
    ('{"board": [1e400, 6, 7, 2, 5, 4, 3, 0, 1]}', "not an integer: inf"),  # as sent
    ({"board": "8 6 7 2 5 4 3 0 1", "algorithm": "foo"}, "unknown field 'algorithm'"),
    ({"board": "8 6 7 2 5 4 3 0 1", "dedline": 5}, "unknown field 'dedline'"),
    ({"board": "8 6 7 2 5 4 3 0 1", "budget": 1000.5}, "budget must be a whole number"),
    ({"board": "8 6 7 2 5 4 3 0 1", "budget": "5"}, 'budget must be a JSON number, not the string "5"'),
    ({"board": "8 6 7 2 5 4 3 0 1", "budget": True}, "budget must be a whole number, not true"),
    # a goal or a shape given but empty or of no kind: never blank-last, or no shape, silently
    ({"board": "8 6 7 2 5 4 3 0 1", "goal": ""}, "goal must be blank-last, blank-first"),
    ({"board": "8 6 7 2 5 4 3 0 1", "goal": 0}, "goal must be blank-last, blank-first or a goal board's tiles, not 0"),
    ({"board": "8 6 7 2 5 4 3 0 1", "goal": False}, "not false"),
    ({"board": "8 6 7 2 5 4 3 0 1", "goal": []}, "goal must be blank-last"),
    ({"board": "8 6 7 2 5 4 3 0 1", "shape": ""}, "not a shape: ''"),
    ({"board": "8 6 7 2 5 4 3 0 1", "shape": "0x0"}, "not a shape: '0x0'"),  # was "not Shape(rows=0, ..."
    ({"board": {"a": 1}}, 'board must be the tiles row by row ("1 2 3 ..." or a list), 0 for the blank, not {"a": 1}'),
    ({"board": "8 6 7 2 5 4 3 0 1", "deadline": ""}, "deadline must be a JSON number"),
    ('{"board": "8 6 7 2 5 4 3 0 1", "deadline": 1e309}', "deadline must be a finite number, not inf"),
])
def test_json_that_no_board_text_could_say_is_refused(web, body, says):
    """Mistakes only JSON can make: a float or a bool for a tile (int() would round it or
    read 1 and 0), a number too large for a float, a field the API does not know, a budget
    with a fraction or in a string, a deadline of infinity: 400, never an answer to another
    board or a server error."""
    if isinstance(body, str):  # JSON that Python's encoder would not write
        r = httpx.post(web + "api/solve", content=body, headers={"content-type": "application/json"})
    else:
        r = httpx.post(web + "api/solve", json=body)
    assert r.status_code == 400 and says in r.json()["error"], r.text
    assert r.json()["exit_code"] == 2


def test_a_goal_given_as_a_list_or_as_text_is_one_goal(web, served, capsys):
    """A goal board's tiles as a list, as a board's may be (it was refused, the message
    saying tiles were taken); `pdbd query --goal ""` is refused as pdbtool refuses it (it
    solved towards blank-last)."""
    board, goal = "8 6 7 2 5 4 3 0 1", [1, 2, 3, 4, 5, 6, 7, 0, 8]
    answers = [httpx.post(web + "api/solve", json={"board": board, "goal": g}, timeout=30)
               for g in (goal, " ".join(map(str, goal)))]
    assert [r.status_code for r in answers] == [200, 200], answers[0].text
    assert answers[0].json()["moves"] == answers[1].json()["moves"]
    code, _, err = run_cli(capsys, "query", "--server", served.address, "--goal", "", board)
    assert code == 2 and "goal must be blank-last, blank-first or a goal board's tiles, not ''" in err
    from pdbd.client import SolverClient

    with SolverClient(served.address) as c:  # the library's None: blank-last, as before
        assert c.solve(board, None).moves == c.solve(board, "blank-last").moves


def test_malformed_requests_limits_and_an_unreachable_daemon(web, served, caplog):
    for content, message in ((b"{", "not JSON"), (b"[1, 2]", "JSON object"),
                             (b'{"board": 7}', "board must be the tiles"), (b'{}', "no board"),
                             (b'{"board": "1 2 3 4 5 6 7 0 8", "budget": -1}', "budget must be more than 0"),
                             (b'{"board": "1 2 3 4 5 6 7 0 8", "deadline": "soon"}', "deadline must be a JSON number")):
        r = httpx.post(web + "api/solve", content=content,
                       headers={"content-type": "application/json"})
        assert r.status_code == 400 and message in r.json()["error"], content
    r = httpx.post(web + "api/solve", json={"board": list(HARD), "goal": "blank-first", "budget": 1000})
    assert r.status_code == 503 and r.json()["exit_code"] == 4 and "budget" in r.json()["error"]
    with running_web(f"127.0.0.1:{free_port()}") as nowhere:
        with caplog.at_level(logging.WARNING, logger="pdbd"):
            r = httpx.post(nowhere + "api/solve", json={"board": list(EASY8)}, timeout=30)
        assert r.status_code == 502 and "cannot reach pdbd" in r.json()["error"]
    # the operator sees it in the log, not only the browser
    assert any(rec.levelno == logging.WARNING and "answered 502: cannot reach pdbd"
               in rec.getMessage() for rec in caplog.records), caplog.records


def test_a_daemon_shutting_down_is_503_not_a_bad_gateway(caplog):
    """pdbd answered, but takes no new searches (a drain): the service is unavailable for
    now (503), not a gateway that failed (502, which the operator is warned of)."""
    from pdbtool.selection import TableSet

    daemon = running_daemon(TableSet({3: table_free("manhattan", 3)}))
    try:
        with running_web(daemon.address) as url:
            daemon.servicer.refuse_new()
            with caplog.at_level(logging.WARNING, logger="pdbd"):
                r = httpx.post(url + "api/solve", json={"board": list(EASY8)}, timeout=30)
            assert r.status_code == 503 and "shutting down" in r.json()["error"], r.text
            with httpx.stream("GET", url + "api/solve/stream", params={"board": "1 2 3 4 5 6 0 7 8"},
                              timeout=30) as s:
                got = events(s)
            assert [name for _, name, _ in got] == ["failure"] and got[0][2]["status"] == 503
    finally:
        daemon.stop(grace=1)
    assert not any("answered 502" in rec.getMessage() for rec in caplog.records)


def test_page_info_and_stream(web, served):
    page = httpx.get(web)
    assert page.status_code == 200 and 'data-mode="live"' in page.text
    assert httpx.get(web + "api/info").json()["sizes"] == info(served)["sizes"]
    with httpx.stream("GET", web + "api/solve/stream", params={"board": "1 2 3 4 5 6 0 7 8"}) as r:
        assert r.headers["content-type"].startswith("text/event-stream")
        got = events(r)
    assert [name for _, name, _ in got] == ["result"] and got[0][2]["length"] == 2
    with httpx.stream("GET", web + "api/solve/stream", params={"board": "1 2 3 4 5 6 8 7 0"}) as r:
        got = events(r)
    assert [name for _, name, _ in got] == ["failure"]
    assert got[0][2]["status"] == 400 and got[0][2]["exit_code"] == 3 and "unsolvable" in got[0][2]["error"]
    # a query string's numbers are text: "budget=5" is the number 5 there (in JSON, refused)
    with httpx.stream("GET", web + "api/solve/stream", params={
            "board": " ".join(map(str, HARD)), "goal": "blank-first", "budget": "5"}) as r:
        got = events(r)
    assert [name for _, name, _ in got] == ["failure"]
    assert got[0][2]["status"] == 503 and "budget" in got[0][2]["error"], got


def test_stream_brings_progress_repeatedly_until_the_client_leaves(daemon24):
    """A 24-puzzle search (Manhattan distance: days): progress arrives again and again while
    it searches (a stream that stalled would end in the read timeout, 30 s, and fail);
    leaving stops the search. The cadence, every 500 ms on the page's promise, is a
    benchmark's: scripts/bench daemon, 'web page's progress: an event at least every
    500 ms'."""
    with running_web(daemon24.address) as url:
        arrivals, name = [], None
        with httpx.stream("GET", url + "api/solve/stream", timeout=30,
                          params={"board": " ".join(map(str, KORF24_1)), "goal": "blank-first"}) as r:
            for line in r.iter_lines():
                if line.startswith("event: "):
                    name = line[7:]
                elif line.startswith("data: "):
                    arrivals.append((name, json.loads(line[6:])))
                if len(arrivals) >= 6:
                    break
            # searching on the worker (Manhattan: days), so that its stop below means something
            assert info(daemon24)["counters"]["running"] == 1
        assert [name for name, _ in arrivals] == ["progress"] * 6, arrivals
        nodes = [p["nodes_generated"] for _, p in arrivals]
        assert nodes == sorted(nodes) and nodes[-1] > 0
        # The daemon's search stops (its count of cancelled streams is issue 13's: an
        # abandoned stream is not always counted yet).
        assert wait_for(lambda: info(daemon24)["counters"]["running"] == 0, 30), "search not stopped"


def test_a_solve_whose_browser_leaves_is_stopped(daemon24):
    """POST /api/solve of a search of hours; the client goes away: the daemon's search
    stops (it ran on to its end, holding a worker and the browser's slot)."""
    import socket
    from urllib.parse import urlsplit

    with running_web(daemon24.address) as url:
        where = urlsplit(url)
        body = json.dumps({"board": " ".join(map(str, KORF24_1)), "goal": "blank-first"}).encode()
        with socket.create_connection((where.hostname, where.port)) as s:
            s.sendall(b"POST /api/solve HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                      b"application/json\r\n" + f"Content-Length: {len(body)}\r\n\r\n".encode()
                      + body)
            assert wait_for(lambda: info(daemon24)["counters"]["running"] == 1, 10)
        # the socket closed: the browser has left
        assert wait_for(lambda: info(daemon24)["counters"]["running"] == 0, 30), "search not stopped"


def test_pdbd_web_command(served):
    proc = pdbd_process("web", "--listen", "127.0.0.1:0", "--server", served.address)
    try:
        line = proc.stderr.readline()
        assert "pdbd web on http://127.0.0.1:" in line, line
        url = line.split(" on ")[1].split(",")[0]
        assert httpx.get(url, timeout=10).status_code == 200
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0
    finally:
        proc.kill()
        proc.wait()
    proc = pdbd_process("web", "--listen", "nowhere")
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2 and "--listen 'nowhere' is not HOST:PORT" in err


def test_the_web_side_loads_no_numba():
    code = ("import sys, pdbd.web\n"
            "pdbd.web.create_app('127.0.0.1:1')\n"
            "bad = sorted(m for m in sys.modules if m.split('.')[0] == 'numba')\n"
            "sys.exit(f'loaded {bad}' if bad else 0)\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                       timeout=120)
    assert p.returncode == 0, p.stderr + p.stdout


def test_a_stop_does_not_wait_for_an_open_progress_stream(daemon24):
    """SIGTERM to `pdbd web` with a page's progress stream open (a search of days): the
    server waited for the stream to end, so the stop took its whole join timeout (10 s)
    and the web process then died with the thread. Now the requests in flight get
    STOP_GRACE, then are cancelled; the server's thread ends."""
    from pdbd.web import WebServer

    server = WebServer("127.0.0.1:0", daemon24.address).start()
    try:
        with httpx.stream("GET", server.url + "api/solve/stream", timeout=30,
                          params={"board": " ".join(map(str, KORF24_1)),
                                  "goal": "blank-first"}) as r:
            lines = r.iter_lines()
            assert any(line.startswith("data: ") for line in lines)  # streaming now
            server.stop(timeout=60)
            assert not server._thread.is_alive()
    finally:
        server.stop()
    assert wait_for(lambda: info(daemon24)["counters"]["running"] == 0, 30), "search not stopped"
