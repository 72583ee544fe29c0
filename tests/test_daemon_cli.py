"""`pdbd query / info / health` as a user meets them: exit codes, text, JSON, one-line errors."""

import json
import sys

import pytest

from pdbd import cli
from pdbtool.heuristics.table_free import table_free
from pdbtool.selection import TableSet
from reference import free_port, korf_shortest
from serving import EASY8, HARD, run_cli, running_daemon


@pytest.mark.process
def test_query_exit_codes_and_json(served, slow, capsys, tmp_path):
    server = ["--server", served.address]
    code, out, _ = run_cli(capsys, "query", *server, "--json", *map(str, EASY8))
    assert code == 0 and json.loads(out)["length"] == 2
    code, out, _ = run_cli(capsys, "query", *server, "1,2,3,4,5,6,0,7,8")
    assert code == 0 and "length 2  moves 7 8" in out
    code, out, err = run_cli(capsys, "query", *server, "1", "2", "3")
    assert code == 2 and "not a square board" in err
    code, out, err = run_cli(capsys, "query", *server, "--json", "1", "2", "3")
    assert code == 2 and json.loads(out)["exit_code"] == 2
    code, _, err = run_cli(capsys, "query", *server, *map(str, [1, 2, 3, 4, 5, 6, 8, 7, 0]))
    assert code == 3 and "unsolvable" in err
    code, _, err = run_cli(capsys, "query", "--server", slow.address, "--goal", "blank-first",
                           "--deadline", "0.2", *map(str, HARD))
    assert code == 4 and "deadline exceeded" in err and "give a longer deadline" in err
    assert err.lower().count("deadline exceeded") == 1, err  # not "...: Deadline Exceeded"
    code, _, err = run_cli(capsys, "query", "--server", slow.address, "--goal", "blank-first",
                           "--budget", "100000", "--deadline", "120", *map(str, HARD))
    assert code == 4 and "budget" in err and "deadline" not in err
    code, _, err = run_cli(capsys, "query", "--server", f"127.0.0.1:{free_port()}", *map(str, EASY8))
    assert code == 1 and "cannot reach pdbd" in err and "Traceback" not in err
    assert "nothing listens there (connection refused); is pdbd running" in err
    code, _, err = run_cli(capsys, "query", "--server", f"unix:{tmp_path / 'none.sock'}",
                           *map(str, EASY8))
    assert code == 1 and "nothing listens there (no such socket)" in err


@pytest.mark.process
def test_a_refusal_by_the_server_is_not_unreachable(capsys):
    """UNAVAILABLE sent by pdbd itself (shutting down, a table changed on disk) is its
    answer: the server was reached."""
    daemon = running_daemon(TableSet({3: table_free("manhattan", 3)}), threads=1)
    try:
        daemon.servicer.close()  # refuses new searches, as while it shuts down
        code, _, err = run_cli(capsys, "query", "--server", daemon.address, *map(str, EASY8))
    finally:
        daemon.stop(grace=1)
    assert code == 1, err
    assert err == f"pdbd: pdbd at {daemon.address} refused: the server is shutting down\n"


@pytest.mark.process
def test_query_stream_and_info(served, capsys):
    _, optimum, board = korf_shortest(1)[0]
    code, out, err = run_cli(capsys, "query", "--server", served.address, "--stream", "--json",
                             "--goal", "blank-first", *map(str, board))
    assert code == 0 and json.loads(out)["length"] == optimum
    code, out, _ = run_cli(capsys, "info", "--server", served.address, "--json")
    assert code == 0 and json.loads(out)["sizes"][1]["size"] == 4
    code, out, _ = run_cli(capsys, "info", "--server", served.address)
    assert code == 0 and "serves 4x4" in out and "sha256" in out


@pytest.mark.process
def test_health_and_waiting_for_serving(served, capsys):
    code, out, _ = run_cli(capsys, "health", "--server", served.address)
    assert code == 0 and out.strip() == "SERVING"
    code, out, _ = run_cli(capsys, "health", "--server", served.address, "--wait", "5")
    assert code == 0 and out.strip() == "SERVING"
    code, out, err = run_cli(capsys, "health", "--server", f"127.0.0.1:{free_port()}",
                             "--wait", "0.3")
    assert code == 1 and out == "" and "not serving after 0.3 s" in err
    code, out, err = run_cli(capsys, "health", "--server", served.address, "--service", "nosuch")
    assert code == 2 and out == ""
    assert err.startswith(f"pdbd: pdbd at {served.address} has no health service 'nosuch' ")
    code, out, err = run_cli(capsys, "health", "--server", served.address, "--service", "nosuch",
                             "--wait", "30")  # at once: waiting cannot make the service appear
    assert code == 2 and "no health service 'nosuch'" in err
    code, out, _ = run_cli(capsys, "health", "--server", served.address, "--service",
                           "pdbd.v1.Solver", "--wait", "5")
    assert code == 0 and out == "SERVING\n"


def test_grace_is_checked_like_every_time_value(capsys):
    for value in ("-1", "nan", "soon"):
        with pytest.raises(SystemExit) as e:  # argparse: exit 2 and the usage
            cli.parser().parse_args(["serve", "--artifacts", "d", "--grace", value])
        assert e.value.code == 2
        assert "--grace" in capsys.readouterr().err
    assert cli.parser().parse_args(["serve", "--artifacts", "d", "--grace", "0"]).grace == 0
    assert cli.parser().parse_args(["serve", "--artifacts", "d", "--grace", "2.5"]).grace == 2.5


def test_an_unknown_option_points_at_its_subcommands_help(capsys):
    """`pdbd query --heuristic manhattan ...` said "pdbd: error: unrecognized arguments:
    --heuristic (see pdbd --help)", whose help lists no option of query."""
    with pytest.raises(SystemExit) as e:
        cli.parser().parse_args(["query", "--heuristic", "1 2 3 4 5 6 7 8 0"])
    assert e.value.code == 2
    assert capsys.readouterr().err == ("pdbd query: error: unrecognized arguments: --heuristic "
                                       "(see pdbd query --help)\n")


def test_query_stream_rewrites_one_progress_line_on_a_terminal(monkeypatch):
    """`pdbd query --stream` printed a new line for every progress event, several a second,
    on a terminal too (pdbtool solve rewrites its one line there)."""
    import io

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    event = {"queued": False, "bound": 50, "nodes_generated": 1000, "elapsed_seconds": 1.0}
    for stderr, expected in ((Terminal(), "\r\x1b[K{0}\r\x1b[K{0}\r\x1b[K"),
                             (io.StringIO(), "{0}\n{0}\n")):
        monkeypatch.setattr(sys, "stderr", stderr)
        cli.print_progress(event, False)
        cli.print_progress(event, False)
        cli.end_progress(False)
        line = "searching: bound 50, 1,000 nodes, 0.0M nodes/s, 0m01s elapsed"
        assert stderr.getvalue() == expected.format(line)


def test_health_of_a_port_that_never_answers_is_not_serving(capsys):
    """A daemon compiling its kernels has its port bound but answers nothing yet: health
    says so, exit 1 (not 4 and 'deadline exceeded: Deadline Exceeded', a search's words)."""
    import socket

    with socket.socket() as bound:  # listening, never accepting: as that daemon's port
        bound.bind(("127.0.0.1", 0))
        bound.listen()
        address = f"127.0.0.1:{bound.getsockname()[1]}"
        code, _, err = run_cli(capsys, "health", "--server", address)
    assert code == 1 and "did not answer within 5 s" in err, err


@pytest.mark.parametrize("stream", [[], ["--stream"]])
def test_a_query_whose_deadline_passes_unanswered_says_no_search_ran(capsys, stream):
    """A daemon stopped (SIGSTOP) or compiling its kernels answers nothing: a query with a
    deadline said "deadline exceeded (the search was stopped; give a longer deadline...)"."""
    import socket

    with socket.socket() as bound:  # listening, never accepting: as that daemon's port
        bound.bind(("127.0.0.1", 0))
        bound.listen()
        address = f"127.0.0.1:{bound.getsockname()[1]}"
        code, _, err = run_cli(capsys, "query", "--server", address, "--deadline", "0.5",
                               *stream, "1 2 3 4 5 6 7 0 8")
    assert code == 1 and err.startswith(f"pdbd: pdbd at {address} did not answer within the "
                                        "deadline, nor a health check within 1 s after it: "
                                        "no search was run"), err
    assert "search was stopped" not in err


@pytest.mark.parametrize("option", ["--max-search-seconds", "--max-nodes", "--grace", "--drain"])
def test_a_bad_limit_says_that_0_is_taken_too(option, capsys):
    """Each of these takes 0 (no limit, none; --drain's default): its error must not say
    that only values above 0 are, as the shared check of seconds and budgets did."""
    with pytest.raises(SystemExit) as e:
        cli.parser().parse_args(["serve", "--artifacts", "d", option, "-1"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert option in err and "(or 0: no" in err, err


def test_drain_help_says_info_and_health_still_answer(capsys):
    """--drain's help said "accept no new call", but a draining daemon still answers Info
    and health (NOT_SERVING): only new searches are refused."""
    with pytest.raises(SystemExit):
        cli.parser().parse_args(["serve", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    drain = text[text.index("--drain S"):]
    assert "start no new search (Info and health still answer: NOT_SERVING)" in drain
    assert "accept no new call" not in text


def test_info_text_counts_in_the_singular_too(capsys, monkeypatch):
    """`pdbd info` said "1 threads", "1 searches per client" and "1 nodes, 1 CPUs"."""
    d = {"version": "0", "uptime_seconds": 1.0, "threads": 1, "max_queue": 0, "sizes": [],
         "limits": {"max_search_seconds": 60, "max_nodes": 0, "per_client": 1},
         "overloaded": False, "artifacts": [], "counters": {"solved": 1},
         "cluster": {"address": "auto", "error": "", "nodes": 1, "cpus": 1, "busy": 0,
                     "above": 10, "delegated": 0}}

    class Fake:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def info(self):
            return d

    monkeypatch.setattr(cli, "client", lambda args: Fake())
    code, out, _ = run_cli(capsys, "info")
    assert code == 0 and "1 thread, queue 0" in out and "1 search per client" in out
    assert "cluster auto: 1 node, 1 CPU, 0 busy" in out
    d.update(threads=2, limits={**d["limits"], "per_client": 0},
             cluster={**d["cluster"], "nodes": 2, "cpus": 4})
    code, out, _ = run_cli(capsys, "info")
    assert "2 threads" in out and "any searches per client" in out and "2 nodes, 4 CPUs" in out


def test_web_without_its_extra_says_how_to_install_it(capsys, monkeypatch):
    monkeypatch.delitem(sys.modules, "pdbd.web", raising=False)
    # As if not installed: the package and every submodule an earlier test imported (a
    # cached submodule would import without its package, and the server would run).
    for name in ["starlette"] + [m for m in sys.modules if m.startswith("starlette.")]:
        monkeypatch.setitem(sys.modules, name, None)
    code, _, err = run_cli(capsys, "web", "--server", f"127.0.0.1:{free_port()}")
    assert code == 1 and "needs the web extra (starlette" in err
    assert "pip install 'pdbtool[web]' (or, in a checkout, pip install -e '.[web]')" in err


def test_several_boards_piped_to_query_are_told_about_file(served, capsys, monkeypatch):
    """Two boards piped into `pdbd query` are one board of 18 tiles: the error says how
    to send a board a line (--file -); one board over several lines is still one board."""
    import io

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(
        b"8 6 7 2 5 4 3 0 1\n1 2 3 4 5 6 7 0 8\n")))
    code, _, err = run_cli(capsys, "query", "--server", served.address)
    assert code == 2 and "18 tiles" in err and "`pdbd query --file -` solves one board a line" in err
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"8 6 7\n2 5 4\n3 0 1\n")))
    code, out, err = run_cli(capsys, "query", "--server", served.address)
    assert code == 0 and out.startswith("length 31"), (out, err)
    # ... whose other refusals say nothing of lines (a goal, an option)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"8 6 7\n2 5 4\n3 0 1\n")))
    code, _, err = run_cli(capsys, "query", "--server", served.address, "--goal", "blank-middle")
    assert code == 2 and "unknown goal" in err and "--file -" not in err, err


def test_query_without_a_board_at_a_terminal_says_so(capsys, monkeypatch):
    """`pdbd query` typed without a board waited, silent, for a board on the terminal
    (pdbtool solve says "no board")."""
    import io

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr(sys, "stdin", Terminal())
    code, _, err = run_cli(capsys, "query", "--server", f"127.0.0.1:{free_port()}")
    assert code == 2 and err == ("pdbd: no board: give the tiles (e.g. pdbd query 1 2 3 4 5 6 7 "
                                 "0 8), pipe them in, or give --file FILE\n"), err


@pytest.mark.process
def test_query_from_stdin_that_cannot_reach_pdbd_exits_with_one_line():
    """`pdbd query --file -` reads stdin on a thread of its own; with stdin still open (a
    terminal, a pipe whose writer waits) and no daemon there, it said so and then the
    interpreter aborted at exit: 'could not acquire lock for <stdin> at interpreter
    shutdown', exit 134."""
    import subprocess
    from pathlib import Path

    p = subprocess.Popen([str(Path(sys.executable).with_name("pdbd")), "query", "--server",
                          f"127.0.0.1:{free_port()}", "--file", "-"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        p.stdin.write("1 2 3 4 5 6 7 0 8\n")
        p.stdin.flush()  # and the pipe stays open: the reading thread waits for more
        p.wait(timeout=120)
        err = p.stderr.read()
    finally:
        p.kill()
        p.stdin.close()
    assert p.returncode == 1, err
    assert "Fatal Python error" not in err and err.count("\n") == 1, err
    assert "cannot reach pdbd" in err
