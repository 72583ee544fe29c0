"""The command line as a user meets it: exit codes, messages, JSON, no tracebacks."""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pdbtool.cli.main import main


def run(*args, stdin=None):
    p = subprocess.run([sys.executable, "-m", "pdbtool.cli.main", *args], capture_output=True, text=True,
                       input=stdin, timeout=300)
    assert "Traceback" not in p.stderr, p.stderr
    return p


@pytest.mark.process
def test_solve_json_fields():
    p = run("solve", "--json", "--heuristic", "manhattan", "8 6 7 2 5 4 3 0 1")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    for key in ("size", "goal", "length", "moves", "blank_moves", "nodes_expanded", "nodes_generated",
                "seconds", "heuristic", "initial_h", "iterations"):
        assert key in out
    assert out["length"] == 31 and out["size"] == 3 and out["goal"] == "blank-last"
    assert len(out["moves"]) == len(out["blank_moves"]) == 31


@pytest.mark.process
@pytest.mark.parametrize("board, words", [
    (["1", "2", "3"], "not a square"),
    (["1 2 3 4 5 6 7 8 8"], "duplicate"),
    (["1 2 3 4 5 6 7 8 9"], "out of range"),
    (["a b c d"], "not an integer"),
    ([], "no board"),
])
def test_bad_input_exit_2_with_message(board, words):
    p = run("solve", "--heuristic", "manhattan", *board)
    assert p.returncode == 2 and words in p.stderr


@pytest.mark.process
def test_bad_goal_and_bad_option():
    assert run("solve", "--goal", "sideways", "1 2 3 0").returncode == 2
    assert run("solve", "--heuristic", "magic", "1 2 3 0").returncode == 2
    p = run("solve", "--heuristic", "manhattan", "--artifacts", ".", "1 2 3 0")
    assert p.returncode == 2 and "--heuristic manhattan uses no table: leave out --artifacts" in p.stderr


@pytest.mark.process
def test_unsolvable_exit_3_says_why():
    p = run("solve", "--heuristic", "manhattan", "1 2 3 4 5 6 7 8 9 10 11 12 13 15 14 0")
    assert p.returncode == 3 and "unsolvable" in p.stderr and "permutation" in p.stderr


def test_solvable_words_fit_the_board(capsys):
    """The explanation counts in words ("1 move") and cites Loyd's puzzle as an example,
    not as this board (a 2x3 board was "Loyd's 14-15 board")."""
    assert main(["solvable", "--shape", "2x3", "1 2 3 5 4 0"]) == 3
    said = capsys.readouterr().out
    assert "0 moves from its goal cell" in said and "as in Loyd's 14-15 puzzle" in said
    assert main(["solvable", "1 2 3 4 5 6 7 0 8"]) == 0
    assert "is 1 move from its goal cell" in capsys.readouterr().out


def test_partitions_gives_small_sizes_in_kib(capsys):
    """The catalogues' sizes in the unit that shows them (8/full's table was "0 MiB" and
    its build "0.0 GiB")."""
    assert main(["partitions"]) == 0
    eight = capsys.readouterr().out.split("\n12/")[0]
    assert "1 table to build, 177.2 KiB zero-aware" in eight and "2.90 MiB to build" in eight


@pytest.mark.process
def test_a_first_run_compiles_before_the_clock_starts(tmp_path):
    """With an empty kernel cache the first search compiles its kernels (seconds); neither
    the reported seconds nor --timeout count that (a cold 8-puzzle with --timeout 1 used to
    stop at the deadline, and a first run reported 35 s for 2,449 nodes). The search's own
    seconds are compared with the same run's wall time, not with a fixed bar: counting the
    compile (the bulk of the wall time on an empty cache) they would be most of it. The
    first run's time is a benchmark's: scripts/bench first_run."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "pdbtool.cli.main", "solve", "--json", "--heuristic",
                        "manhattan", "--timeout", "1", "8 6 7 2 5 4 3 0 1"],
                       capture_output=True, text=True, env=env, timeout=600)
    wall = time.perf_counter() - t0
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["length"] == 31
    assert any(tmp_path.rglob("*.nbi")), "the kernels were not compiled into the empty cache"
    assert out["seconds"] < wall / 4, (wall, out["seconds"])


@pytest.mark.process
def test_budget_exit_4():
    p = run("solve", "--heuristic", "manhattan", "--budget", "1000", "--goal", "blank-first",
            "14 13 15 7 11 12 9 5 6 0 2 1 4 8 10 3")
    assert p.returncode == 4 and "budget" in p.stderr


@pytest.mark.process
def test_file_mode_one_line_per_board(tmp_path):
    f = tmp_path / "boards.txt"
    f.write_text("# comment\n1 2 3 4 5 6 7 0 8\n\n1 2 3 4 5 6 0 7 8\n1 2 3\n")
    p = run("solve", "--json", "--heuristic", "linear-conflict", "--file", str(f))
    lines = [json.loads(x) for x in p.stdout.splitlines()]
    assert [x.get("length") for x in lines] == [1, 2, None]
    assert "line 5" in p.stderr and p.returncode == 2
    p = run("solve", "--heuristic", "linear-conflict", "--file", "-", stdin="1 2 3 4 5 6 7 0 8\n")
    assert p.returncode == 0 and p.stdout.startswith("line 1: board 1 2 3 4 5 6 7 0 8\nlength 1")


def test_a_byte_order_mark_and_crlf_lines_are_read_as_boards(tmp_path, capsys):
    f = tmp_path / "boards.txt"  # as an editor on Windows saves it
    f.write_bytes(b"\xef\xbb\xbf1 2 3 4 5 6 7 0 8\r\n1 2 3 4 5 6 0 7 8\r\n")
    assert main(["solve", "--json", "--heuristic", "manhattan", "--file", str(f)]) == 0
    out = capsys.readouterr().out
    assert [json.loads(x)["length"] for x in out.splitlines()] == [1, 2]


def test_table_commands(tmp_path, capsys):
    assert main(["build", "8/full", "--out", str(tmp_path), "--quiet"]) == 0
    path = tmp_path / "8-full.h5"
    built = path.stat().st_mtime_ns
    assert main(["build", "8/full", "--out", str(tmp_path), "--quiet"]) == 2  # never by surprise
    assert "8-full.h5 exists: give --force" in capsys.readouterr().err
    assert path.stat().st_mtime_ns == built
    assert main(["build", "8/full", "--out", str(tmp_path), "--quiet", "--force"]) == 0
    assert path.stat().st_mtime_ns != built
    assert main(["verify", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["ok"]
    assert main(["info", str(path), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["partition"] == "8/full" and info["state"] == "verified"
    assert (info["size"], info["rows"], info["cols"]) == (3, 3, 3)  # (a 3x4's: size 3, no rows)
    packed = tmp_path / "8-full.pdbpack"
    assert main(["pack", str(path), "-o", str(packed), "--json"]) == 0
    pack = json.loads(capsys.readouterr().out)
    out = tmp_path / "copy" / "8-full.h5"
    out.parent.mkdir()
    assert main(["unpack", str(packed), "-o", str(out), "--json"]) == 0
    unpack = json.loads(capsys.readouterr().out)
    assert main(["build", "8/full", "--out", str(tmp_path / "b"), "--quiet", "--json"]) == 0
    build = json.loads(capsys.readouterr().out)
    # one vocabulary: the file written, what it holds, where it came from, whether stamped
    assert (pack["path"], pack["source"]) == (str(packed), str(path))
    assert (unpack["path"], unpack["source"]) == (str(out), str(packed))
    assert build["path"] == str(tmp_path / "b" / "8-full.h5")
    for record in (pack, unpack, build):
        assert record["partition"] == "8/full" and record["version"] == info["version"]
    for record in (unpack, build):
        assert record["stamped"] is True and record["warnings"] == []
    assert main(["build", "8/full", "--min-over-blank", "--out", str(tmp_path), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["list", str(tmp_path), "--json"]) == 0
    listed = {Path(r["path"]).name: r for r in json.loads(capsys.readouterr().out)["artifacts"]}
    assert [listed[n]["zero_aware"] for n in ("8-full.h5", "8-full-min.h5")] == [True, False]
    assert main(["list", str(tmp_path)]) == 0  # (the two said alike: 8/full)
    assert re.search(r"8-full-min\.h5 +8/full-min ", capsys.readouterr().out)
    assert main(["solve", "--json", "--artifact", str(out), "8 6 7 2 5 4 3 0 1"]) == 0
    assert json.loads(capsys.readouterr().out)["length"] == 31


@pytest.mark.process
def test_damaged_artifacts_are_refused(tmp_path):
    assert main(["build", "8/full", "--out", str(tmp_path), "--quiet"]) == 0
    path = tmp_path / "8-full.h5"
    data = bytearray(path.read_bytes())
    data[-1000] ^= 0xFF  # inside the table region
    path.write_bytes(bytes(data))
    p = run("info", str(path))  # reads the metadata only, but says the checksums are unchecked
    assert p.returncode == 0 and f"not verified here (no valid stamp beside it): pdbtool verify {path}" in p.stdout
    p = run("verify", str(path))
    assert p.returncode == 1 and "checksums" in p.stderr and "8-full" in p.stderr
    p = run("solve", "--artifact", str(path), "1 2 3 4 5 6 7 0 8")
    assert p.returncode == 1 and "checksum" in p.stderr
    path.write_bytes(bytes(data[: len(data) // 2]))
    p = run("verify", str(path))
    assert p.returncode == 1 and ("truncated" in p.stderr.lower() or "unreadable" in p.stderr.lower())
    p = run("solve", "--artifacts", str(tmp_path), "1 2 3 4 5 6 7 0 8")
    assert p.returncode == 1


@pytest.mark.process
def test_wrong_size_for_artifact(tmp_path):
    assert main(["build", "8/full", "--out", str(tmp_path), "--quiet"]) == 0
    p = run("solve", "--artifact", str(tmp_path / "8-full.h5"), "1 2 3 4 5 6 7 8 9 10 11 12 13 14 0 15")
    assert p.returncode == 2 and "3x3" in p.stderr


@pytest.mark.process
def test_help_explains():
    p = run("--help")
    assert p.returncode == 0 and "solve" in p.stdout and "build" in p.stdout


def test_progress_reports_bound_nodes_rate(capsys, monkeypatch):
    from pdbtool.cli import console
    from pdbtool.search.control import SearchControl
    from pdbtool.kernels.ida import BOUND, EXPANDED, GENERATED

    monkeypatch.setattr(console, "PROGRESS_EVERY", 0.01)
    monkeypatch.setattr(console, "LOG_EVERY", 0.01)
    control = SearchControl()
    control.counters[[GENERATED, EXPANDED, BOUND]] = 5_000_000, 1_000_000, 62
    said = []

    def reported() -> bool:  # a line comes 0.06 s after the start, or when the thread runs
        said.append(capsys.readouterr().err)
        return "M nodes/s" in "".join(said)

    with console.SearchReporter(control, enabled=True, after=0.05):
        end = time.monotonic() + 30
        while not reported() and time.monotonic() < end:
            time.sleep(0.01)
    err = "".join(said) + capsys.readouterr().err
    assert "bound 62" in err and "5,000,000 nodes" in err and "M nodes/s" in err
    with console.SearchReporter(control, enabled=False, after=0.0):
        time.sleep(0.1)
    assert capsys.readouterr().err == ""


def test_interrupt_exits_130_with_one_line(capsys):
    from pdbtool.cli.console import run
    from pdbtool.errors import EXIT_INTERRUPTED

    def interrupted(args):
        raise KeyboardInterrupt

    assert run("pdbtool", argparse.Namespace(func=interrupted)) == EXIT_INTERRUPTED == 130
    assert capsys.readouterr().err == "pdbtool: interrupted\n"


def test_out_of_memory_is_one_line(capsys):
    """numpy's MemoryError (a build or a verify under `ulimit -v`) was a traceback."""
    from pdbtool.cli.console import run

    def allocating(args):
        raise MemoryError("Unable to allocate 3.20 GiB for an array with shape (3435973837,)")

    assert run("pdbtool", argparse.Namespace(func=allocating)) == 1
    assert capsys.readouterr().err == ("pdbtool: out of memory: Unable to allocate 3.20 GiB for "
                                       "an array with shape (3435973837,)\n")


def test_no_room_for_a_thread_is_one_line_naming_the_limits(capsys, monkeypatch):
    """A first solve under `ulimit -v 600000` (its compile took the room) ended in
    threading's "RuntimeError: can't start new thread" and a traceback; an out-of-memory
    line did not say the process had a limit of its own."""
    import resource

    from pdbtool.cli.console import run

    def raising(error):
        def func(args):
            raise error
        return argparse.Namespace(func=func)

    monkeypatch.setattr(resource, "getrlimit", lambda which: (
        {resource.RLIMIT_AS: 600 << 20, resource.RLIMIT_NPROC: 4096}.get(
            which, resource.RLIM_INFINITY), resource.RLIM_INFINITY))
    assert run("pdbtool", raising(RuntimeError("can't start new thread"))) == 1
    assert capsys.readouterr().err == ("pdbtool: cannot start a thread (this process's limits: "
                                       "ulimit -v 600 MiB, ulimit -u 4096)\n")
    assert run("pdbtool", raising(MemoryError())) == 1
    assert capsys.readouterr().err == ("pdbtool: out of memory (this process's limits: "
                                       "ulimit -v 600 MiB)\n")
    with pytest.raises(RuntimeError, match="other"):  # a defect stays a traceback
        run("pdbtool", raising(RuntimeError("other")))


def test_a_build_that_needs_more_memory_than_there_is_is_refused_first(tmp_path, monkeypatch):
    """Found a while in, as a MemoryError's traceback (ulimit -v), or never (a custom
    catalogue's group of 15 tiles: 160 TiB)."""
    import resource

    from pdbtool.errors import BadInput
    from pdbtool.tables.builder import build
    from pdbtool.tables.catalogue import parse

    huge = parse("# name: test/15\n# shape: 4x4\n" + ",".join(map(str, range(1, 16))) + "\n")
    with pytest.raises(BadInput, match=r"building test/15 needs about .* of memory; this "
                                       r"machine has .* GiB"):
        build(huge, tmp_path, progress=False)
    monkeypatch.setattr(resource, "getrlimit", lambda which: (1 << 20, resource.RLIM_INFINITY))
    with pytest.raises(BadInput, match=r"needs about .* of memory; this process may take "
                                       r"\(ulimit -v\) 1 MiB"):
        build("8/full", tmp_path, progress=False)
    assert list(tmp_path.iterdir()) == []


@pytest.fixture
def stops_kept(monkeypatch):
    """The process's end (pdbtool.cli.end_with) called in this one, the test's: Ctrl-C and
    SIGTERM not ignored from then on (pytest's own Ctrl-C, the later tests' signals), nor
    kept ignored after a later command's outcome (signals.ending_with_command). The calls
    it would have made to ignore them."""
    from pdbtool import cli

    calls = []
    monkeypatch.setattr(cli, "ignore_stops", lambda: calls.append(True))
    monkeypatch.setattr(cli, "ending_with_command", lambda: None)
    return calls


@pytest.mark.parametrize("where", ["import", "arguments"])
def test_interrupt_before_the_command_runs_is_one_line_too(where, monkeypatch, capsys,
                                                           stops_kept):
    """A Ctrl-C while the command loads, or while it reads its arguments (argparse; the
    version text reads every package's metadata), before run() handles it."""
    import types

    from pdbtool.cli import launch

    def interrupted(*_):
        raise KeyboardInterrupt

    module = types.ModuleType("interrupted_cli")
    module.main = interrupted
    monkeypatch.setitem(sys.modules, "interrupted_cli", module)
    if where == "import":
        monkeypatch.setattr("importlib.import_module", interrupted)
    with pytest.raises(SystemExit) as ended:
        launch("pdbtool", "interrupted_cli")
    assert ended.value.code == 130 and capsys.readouterr().err == "pdbtool: interrupted\n"
    assert stops_kept == [True]


def test_a_stop_after_the_outcome_is_out_leaves_it_until_the_command_returns(capsys):
    """A command's cleanup once its outcome is out (closing Ray: tests/test_cluster_signals.py)
    ends with the outcome's exit status whatever stop comes (signals.outcome_out); before
    it, a stop interrupts as ever. In a process that does not end with the command (this
    one) the handlers are back once it returns. (Python's Ctrl-C handler is set first: a
    run from a background shell inherits SIGINT ignored, and Python keeps it so.)"""
    import signal

    from pdbtool.cli.console import _terminate, run
    from pdbtool.signals import outcome_out

    def command(out: bool):
        def func(args):
            print("answer", flush=True)
            if out:
                outcome_out()
            for sig in (signal.SIGINT, signal.SIGTERM):
                signal.raise_signal(sig)  # (each, before the outcome, stops it)
            return 3
        return argparse.Namespace(func=func)

    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        assert run("pdbtool", command(out=True)) == 3
        assert capsys.readouterr() == ("answer\n", "")
        assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == (
            signal.default_int_handler, _terminate)  # (run's own, as before)
        assert run("pdbtool", command(out=False)) == 130
        assert capsys.readouterr() == ("answer\n", "pdbtool: interrupted\n")
    finally:
        signal.signal(signal.SIGINT, inherited)


# A signal to this process when the object is collected: as the interpreter ends, after
# Python has dropped its own signal handlers (the last fraction of a second of a command).
SIGNAL_AT_TEARDOWN = """
import os, signal, sys

class SignalAtTeardown:
    def __init__(self, sig):
        self.kill, self.pid, self.sig = os.kill, os.getpid(), sig

    def __del__(self):
        self.kill(self.pid, self.sig)

hook = SignalAtTeardown(getattr(signal, sys.argv[1]))
prog, sys.argv = sys.argv[2], sys.argv[2:]
if prog == "pdbd":
    from pdbd import command
else:
    from pdbtool.cli import command
command()
"""


@pytest.mark.process
@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT"])
@pytest.mark.parametrize("argv, code, out", [
    (["pdbtool", "solvable", "1 2 3 4 5 6 7 8 0"], 0, "solvable: the board is an even"),
    (["pdbtool", "solvable", "1 2 3 4 5 6 8 7 0"], 3, "unsolvable for the blank-last goal"),
    (["pdbtool", "solve", "--threads", "x", "1 2 3 0"], 2, ""),  # argparse's SystemExit
    (["pdbd", "--version"], 0, "pdbd "),
], ids=["solved", "unsolvable", "usage-error", "pdbd"])
def test_a_signal_after_the_outcome_is_out_keeps_its_exit_status(sig, argv, code, out):
    """A Ctrl-C or SIGTERM that arrives as the process ends, once the command's outcome is
    out, left the exit status of a process killed by it (-2, -15: 130 and 143 in a shell),
    so a caller took a finished command for a failed one; the signal is delivered here at
    a fixed point of the teardown, not raced."""
    p = subprocess.run([sys.executable, "-c", SIGNAL_AT_TEARDOWN, sig, *argv],
                       capture_output=True, text=True, timeout=120)
    assert (p.returncode, p.stdout.startswith(out)) == (code, True), (p.stdout, p.stderr)
    assert "Traceback" not in p.stderr and "ignored" not in p.stderr, p.stderr


# -- issue 13: no crash, no traceback; batches report every failure -----------------------

KORF1 = "14 13 15 7 11 12 9 5 6 0 2 1 4 8 10 3"


@pytest.mark.process
def test_file_batch_reports_bad_lines_and_goes_on(tmp_path):
    boards = tmp_path / "boards.bin"
    boards.write_bytes(b"1 2 3 4 5 6 0 7 8\n\xff\xfe not text\n\x00\x01\x02\x89PNG\n"
                       b"8 6 7 2 5 4 3 0 1\n")
    p = run("solve", "--heuristic", "manhattan", "--json", "--file", str(boards))
    assert p.returncode == 2, p.stderr
    lines = [json.loads(line) for line in p.stdout.splitlines()]
    assert [d.get("length") for d in lines] == [2, None, None, 31]
    assert "line 2: not UTF-8" in p.stderr and "line 3" in p.stderr


@pytest.mark.process
def test_batch_exit_code_never_hides_a_failure(tmp_path):
    from pdbtool.cli.console import batch_exit_code

    assert batch_exit_code([0, 2, 1, 4]) == 1 and batch_exit_code([2, 4, 3]) == 4
    assert batch_exit_code([]) == 0
    damaged = tmp_path / "damaged.h5"
    damaged.write_bytes(b"not an artifact at all")
    boards = tmp_path / "boards.txt"
    boards.write_text("1 2 3\n1 2 3 4 5 6 0 7 8\n")  # bad input (2), then a failure (1)
    p = run("solve", "--artifact", str(damaged), "--file", str(boards))
    assert p.returncode == 1 and "line 1" in p.stderr and "line 2" in p.stderr
    assert "highest" in run("solve", "--help").stdout


def closed_stdin(*argv):
    exe = str(Path(sys.executable).with_name(argv[0]))
    return subprocess.run(["sh", "-c", 'exec "$@" <&-', "sh", exe, *argv[1:]],
                          capture_output=True, text=True, timeout=300)


@pytest.mark.process
def test_closed_stdin_is_an_error_not_a_crash():
    for argv in (("pdbtool", "solve", "--heuristic", "manhattan", "--file", "-"),
                 ("pdbd", "query", "--server", "127.0.0.1:1")):
        p = closed_stdin(*argv)
        assert p.returncode == 2 and "stdin is closed" in p.stderr, p.stderr
        assert "Traceback" not in p.stderr


@pytest.mark.process
@pytest.mark.parametrize("option, value", [
    ("--budget", str(2**64)), ("--budget", "0"), ("--budget", "1e3"),
    ("--timeout", "inf"), ("--timeout", "nan"), ("--timeout", "-1"), ("--timeout", "1e300"),
])
def test_limits_are_validated_alike_in_both_tools(option, value):
    from pdbd import cli as pdbd_cli

    p = run("solve", "--heuristic", "manhattan", option, value, KORF1)
    assert p.returncode == 2 and option in p.stderr, p.stderr
    with pytest.raises(SystemExit) as e:  # argparse: exit 2 with the same message
        pdbd_cli.parser().parse_args(["query", option, value, KORF1])
    assert e.value.code == 2


def test_limits_in_the_library_are_checked():
    from pdbd.client import SolverClient
    from pdbtool.errors import BadInput
    from pdbtool.search.control import SearchControl

    with pytest.raises(BadInput, match="2\\^63"):
        SearchControl(budget=2**64)
    with pytest.raises(BadInput, match="seconds"):
        SearchControl(timeout=float("inf"))
    with SolverClient("127.0.0.1:1") as client, pytest.raises(BadInput, match="2\\^63"):
        client.solve("1 2 3 4 5 6 0 7 8", budget=2**64)


def test_ctrl_c_leaves_another_wakeup_fd_alone():
    """A program with its own wakeup fd (an asyncio loop's) keeps it; its Ctrl-C then waits
    for the search to end, as a Python handler does."""
    import signal
    import socket

    from pdbtool.search.interrupts import MainThreadSearches
    from pdbtool.search.control import SearchControl

    reader, writer = socket.socketpair()
    writer.setblocking(False)
    previous = signal.set_wakeup_fd(writer.fileno())
    try:
        with MainThreadSearches().halting(SearchControl()):
            assert signal.set_wakeup_fd(writer.fileno()) == writer.fileno()
    finally:
        signal.set_wakeup_fd(previous)
        reader.close()
        writer.close()


def test_a_lost_ctrl_c_is_raised_again_when_the_search_ends():
    """Code that a search calls may catch the KeyboardInterrupt and go on (a cluster client
    can): the wakeup byte still halts the search, and the signal is raised again when it
    ends, so the command ends as Ctrl-C ends it (130), not with an answer or a limit."""
    import signal
    import threading

    from pdbtool.errors import LimitReached
    from pdbtool.search.interrupts import MAIN_THREAD_SEARCHES
    from pdbtool.search.control import SearchControl

    control = SearchControl()
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    lost = []
    try:
        with pytest.raises(KeyboardInterrupt):
            with MAIN_THREAD_SEARCHES.halting(control):
                threading.Timer(0.2, os.kill, args=(os.getpid(), signal.SIGINT)).start()
                end = time.monotonic() + 10
                while not control.halted and time.monotonic() < end:
                    try:
                        time.sleep(0.01)
                    except KeyboardInterrupt:
                        lost.append(True)  # caught and dropped
                raise LimitReached("search stopped (cancelled or deadline)")
    finally:
        signal.signal(signal.SIGINT, previous)
    assert control.halted and control.reason == "cancelled" and lost


@pytest.mark.parametrize("threads, main_thread", [(1, "searching"), (2, "searching"),
                                                  (2, "polling")])
def test_ctrl_c_stops_a_solve_on_the_main_thread(threads, main_thread, monkeypatch):
    """The kernel runs on the main thread (no GIL, no Python handler until it returns):
    the signal's wakeup byte halts it. On two threads the main thread either searches its
    own share of each iteration, or (once a search has generated POLLED_AFTER nodes) waits
    for the others' and publishes their counts: each is made the case here by setting
    POLLED_AFTER, not by a timer. The board is Korf & Felner's 24-puzzle #1 (95 moves, days
    of search with Manhattan distance), and the signal comes 0.3 s after its iteration at
    bound 85 began (Solver.search_tasks entered; 2.7 s on one thread here, the first of
    seconds): always while it searches, whatever the machine's speed (#88, searched
    before, ends in about 20 s on two threads: a timer of 3 s was a sixth of that away
    from the answer), and long before that iteration would have returned to Python. A
    sender that has not sent by the end sends nothing, never to interrupt a later test.
    A signal that did not halt the kernel would be seen only when the kernel returned, at
    the node budget (about 40 s here): the search must end far below it. How soon Ctrl-C
    stops a search is a benchmark's: scripts/bench search, 'a halt or a deadline stops
    IDA*' (Ctrl-C's row)."""
    import signal
    import threading

    from pdbtool.heuristics.table_free import table_free
    from pdbtool.search import threads as search_threads
    from pdbtool.search.control import SearchControl
    from pdbtool.search.solver import Solver
    from reference import instances

    monkeypatch.setattr(search_threads, "POLLED_AFTER",
                        0 if main_thread == "polling" else search_threads.NEVER)
    board = instances("korf24_50.txt")[0][2]
    solver = Solver(table_free("manhattan", 5))
    solver.compile_kernels()  # compiled (or loaded from numba's cache) first
    tasks_begun, ended, sent = threading.Event(), threading.Event(), []
    search_tasks = Solver.search_tasks

    def begun(self, root, blank, tasks, bound, *rest):
        if bound >= 85:
            tasks_begun.set()
        return search_tasks(self, root, blank, tasks, bound, *rest)

    monkeypatch.setattr(Solver, "search_tasks", begun)

    def ctrl_c():
        while not tasks_begun.wait(0.05):
            if ended.is_set():
                return
        if not ended.wait(0.3):
            sent.append(time.monotonic())
            os.kill(os.getpid(), signal.SIGINT)

    budget = 2_000_000_000  # a broken halt fails (about 40 s here), not hangs
    control = SearchControl(budget=budget)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    sender = threading.Thread(target=ctrl_c)
    try:
        sender.start()
        with pytest.raises(KeyboardInterrupt):
            solver.solve(board, "blank-first", threads=threads, control=control)
    finally:
        ended.set()
        sender.join(30)
        signal.signal(signal.SIGINT, previous)
    # Halted by the signal, not ended at the budget (bound 85 begins after some tens of
    # millions of nodes here: the budget is 30 times that and more).
    assert sent and control.generated < budget // 2, control.generated
    assert control.halted and control.reason == "cancelled"


@pytest.mark.process
@pytest.mark.parametrize("how", ["truncate", "copy over"])
def test_a_table_changed_during_a_solve_is_an_error_not_a_crash(art_dir, tmp_path, how):
    """Truncating the mapped table under a search killed pdbtool with SIGBUS."""
    from serving import HARDEST, change_under, wait_for

    from pdbtool.tables import artifact, trust

    table = tmp_path / "15-5-5-5.h5"
    shutil.copy(art_dir / "15-5-5-5.h5", table)
    trust.record(artifact.read_meta(table))  # stamped: loaded at once, then searched
    p = subprocess.Popen([sys.executable, "-m", "pdbtool.cli.main", "solve", "--artifact", str(table),
                          "--timeout", "120", " ".join(map(str, HARDEST))],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        maps = Path(f"/proc/{p.pid}/maps")
        assert wait_for(lambda: p.poll() is None and str(table) in maps.read_text(), 60)
        time.sleep(0.5)  # searching (kernels come from numba's cache); for minutes
        change_under(table, how, art_dir / "8-full.h5")
        out, err = p.communicate(timeout=30)
    finally:
        p.kill()
    assert p.returncode == 1, (p.returncode, err)
    assert "15-5-5-5.h5 changed on disk" in err and "opened for writing" in err
    assert "Traceback" not in err and "Fatal Python error" not in err


@pytest.mark.process
def test_a_fatal_signal_leaves_a_trace(art_dir):
    """A SIGBUS (a table truncated where no lease could be had) ended pdbtool in silence."""
    import signal

    from serving import HARDEST, wait_for

    table = art_dir / "15-5-5-5.h5"
    p = subprocess.Popen([sys.executable, "-m", "pdbtool.cli.main", "solve", "--artifact", str(table),
                          "--timeout", "120", " ".join(map(str, HARDEST))],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:  # the command is running once its table is mapped, and searches for minutes
        maps = Path(f"/proc/{p.pid}/maps")
        assert wait_for(lambda: p.poll() is None and str(table) in maps.read_text(), 60)
        p.send_signal(signal.SIGBUS)
        _, err = p.communicate(timeout=30)
    finally:
        p.kill()
    assert p.returncode == -signal.SIGBUS and "Fatal Python error: Bus error" in err


@pytest.mark.process
@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"),
                    reason="needs root to run as an unprivileged user")
def test_runs_as_a_user_without_writable_package_or_home(tmp_path):
    """numba cannot cache next to the (root-owned) package nor in a missing home: the tools
    fall back to a private cache directory instead of failing at import."""
    root = Path(__file__).resolve().parents[1]
    env = {"PATH": os.environ["PATH"], "HOME": "/nonexistent", "PYTHONPATH": str(root)}
    code = ("import os, pdbtool.kernels.ida, pdbtool.kernels.build, pdbtool.kernels.heuristic, "
            "pdbtool.kernels.ranking; import numba; print(numba.config.CACHE_DIR)")
    p = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                        sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=300, cwd="/")
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    assert "pdbtool-numba-" in p.stdout


@pytest.mark.process
@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"),
                    reason="needs root to run as an unprivileged user")
def test_an_output_directory_that_cannot_be_written_is_said_before_the_work():
    """As a user who may not write there (nobody, in a directory of root's): the build is
    refused before it builds (minutes to hours), as are a pack and a trace before theirs."""
    import tempfile

    root = Path(__file__).resolve().parents[1]
    env = {"PATH": os.environ["PATH"], "HOME": "/nonexistent", "PYTHONPATH": str(root)}
    with tempfile.TemporaryDirectory() as theirs:
        os.chmod(theirs, 0o755)
        for argv in (["build", "8/full", "--out", theirs],
                     ["solve", "--heuristic", "manhattan", "--trace", f"{theirs}/t.json",
                      "8 6 7 2 5 4 3 0 1"]):
            p = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                                sys.executable, "-m", "pdbtool", *argv], env=env,
                               capture_output=True, text=True, timeout=300, cwd="/")
            assert p.returncode == 1 and f"cannot write in {theirs}: Permission denied" in \
                p.stderr and "Traceback" not in p.stderr, p.stderr
            assert not os.listdir(theirs)


def test_sigterm_during_a_write_leaves_no_partial_file(tmp_path, capsys):
    import os as _os
    import signal

    from pdbtool.tables import files
    from pdbtool.cli.console import EXIT_TERMINATED, run as run_command

    target = tmp_path / "out.h5"

    def writing(args):
        with files.atomic_output(target) as tmp:
            tmp.write_bytes(b"half")
            _os.kill(_os.getpid(), signal.SIGTERM)
            time.sleep(5)  # the handler interrupts this
        return 0

    assert run_command("pdbtool", argparse.Namespace(func=writing)) == EXIT_TERMINATED
    assert list(tmp_path.iterdir()) == []
    assert "terminated" in capsys.readouterr().err
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


@pytest.mark.process
def test_a_file_where_a_directory_belongs_is_named(tmp_path):
    f = tmp_path / "notes.txt"
    f.write_text("not a directory\n")
    for args in (["list", str(f)], ["build", "8/full", "--out", str(f)],
                 ["build", "8/full", "--out", str(f / "sub")]):  # (exit 1, after a mkdir)
        p = run(*args)
        assert p.returncode == 2 and "notes.txt: not a directory" in p.stderr, (args, p.stderr)
    assert f.read_text() == "not a directory\n"
    p = run("list", str(tmp_path / "nope"))
    assert p.returncode == 2 and "nope: no such directory" in p.stderr


@pytest.mark.process
def test_searches_without_a_heuristic_say_so():
    p = run("solve", "--algorithm", "greedy", "8 6 7 2 5 4 3 0 1")
    assert p.returncode == 0 and "no heuristic: " in p.stdout and "h0" not in p.stdout


@pytest.mark.parametrize("argv", [["solve", "--artifact", "{missing}", "1 2 3 4 5 6 7 8 0"],
                                  ["verify", "{missing}"], ["info", "{missing}"],
                                  ["solve", "--artifact", "{dir}", "1 2 3 4 5 6 7 8 0"],
                                  ["list", "{missing}"]])
def test_a_path_that_names_no_file_is_bad_input(tmp_path, capsys, argv):
    """Exit 2, as for any bad input (a file that is there but damaged: 1)."""
    argv = [a.format(missing=tmp_path / "nope.h5", dir=tmp_path) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "nope.h5: no such" in err or "not a regular file: a directory" in err


def test_warm_names_a_missing_directory_before_announcing_a_compile(tmp_path, capsys):
    """The tables are loaded first: a wrong --artifacts is said alone, not after a promise
    to compile (the audit found "compiling the search kernels" printed before the error)."""
    assert main(["warm", "--artifacts", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert "nope: no such directory" in err and "compiling" not in err


@pytest.mark.parametrize("argv, code, refusal", [
    (["--algorithm", "astar", "--shape", "5x6", *map(str, range(1, 30)), "0"], 2,
     "astar keys a state in two words"),
    (["--algorithm", "astar", "--threads", "2", "1 2 3 4 5 6 7 0 8"], 2,
     "only ida searches on threads"),
    (["1 2 3 4 5 6 8 7 0"], 3, "unsolvable for the blank-last goal"),
])
def test_a_refused_solve_announces_nothing_first(tmp_path, monkeypatch, capsys, argv, code,
                                                 refusal):
    """A search solve refuses is said alone: it printed the table-free fallback's note and
    "compiling the search kernels ... about 25 s" (and compiled them, for --threads) before
    the refusal."""
    monkeypatch.setattr("pdbtool.search.warm.pending", lambda *a: 10.0)  # as on a fresh machine
    monkeypatch.chdir(tmp_path)  # no ./artifacts: the fallback's note is due
    assert main(["solve", *argv]) == code
    err = capsys.readouterr().err
    assert err.startswith(f"pdbtool: {refusal}") and err.count("\n") == 1, err


def test_verify_help_says_consistency_is_exhaustive_for_small_tables(capsys):
    """verify's help said consistency is "(sampled)"; it is checked on every entry of a
    table of at most EXHAUSTIVE_UP_TO entries (15/6-6-3's, the 8-puzzle's)."""
    from pdbtool.verification import EXHAUSTIVE_UP_TO

    with pytest.raises(SystemExit):
        main(["verify", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert EXHAUSTIVE_UP_TO == 32_000_000 and "(sampled)" not in text
    assert "on every entry of a table of at most 32 M entries, else sampled unless --exhaustive" in text


def test_the_tt_size_default_in_both_helps_is_a_number_the_option_takes(capsys):
    """--tt-size's help said "(default 1M)", which the option refuses (a whole number)."""
    from pdbd import cli as pdbd_cli
    from pdbtool.kernels.ida_tt import TT_ENTRY_BYTES
    from pdbtool.search.algorithms import DEFAULT_TT_SIZE

    said = f"(default {DEFAULT_TT_SIZE:,}: {DEFAULT_TT_SIZE * TT_ENTRY_BYTES >> 20} MiB)"
    for parse, argv in ((main, ["solve", "--help"]),
                        (pdbd_cli.parser().parse_args, ["query", "--help"])):
        with pytest.raises(SystemExit):
            parse(argv)
        text = " ".join(capsys.readouterr().out.split())
        assert f"ida-tt: transposition table entries {said}" in text, argv


def test_every_cluster_help_names_the_addresses_it_takes(capsys):
    """--cluster takes 'auto' too (the README says so); the helps named only 'local' and an
    address."""
    from pdbd import cli as pdbd_cli

    for parse, argv in ((main, ["solve", "--help"]), (main, ["build", "--help"]),
                        (pdbd_cli.parser().parse_args, ["serve", "--help"])):
        with pytest.raises(SystemExit):
            parse(argv)
        text = " ".join(capsys.readouterr().out.split())
        assert ("ADDRESS: the head node's HOST:PORT (as `ray start --head` prints it), 'local' "
                "(start Ray on this machine) or 'auto' (the head Ray finds:") in text, argv


def test_the_library_warning_of_a_table_without_a_stamp_has_the_prefix(art_dir, tmp_path,
                                                                       capsys):
    """The loader's warning (logger "pdbtool") reached stderr through Python's last resort,
    the bare message: it is a line like the command's own, once, and only while it runs."""
    import logging

    table = tmp_path / "8-full.h5"  # a copy: no stamp of its own
    shutil.copy(art_dir / "8-full.h5", table)
    assert main(["solve", "--quiet", "--artifact", str(table), "1 2 3 4 5 6 7 0 8"]) == 0
    err = capsys.readouterr().err
    assert err == (f"pdbtool: warning: {table}: no valid verification stamp (new here, or "
                   "copied, linked or touched since `pdbtool verify`): every check runs first, "
                   f"seconds to minutes for a large table; `pdbtool verify {table}` stamps it\n")
    assert logging.getLogger("pdbtool").handlers == []


def test_warm_without_artifacts_uses_the_artifacts_directory_here(art_dir, tmp_path, monkeypatch,
                                                                  capsys):
    """As its help says: ./artifacts when --artifacts is not given (it crashed: the
    directory None was handed to load_directory)."""
    (tmp_path / "artifacts").mkdir()
    shutil.copy(art_dir / "8-full.h5", tmp_path / "artifacts" / "8-full.h5")
    monkeypatch.chdir(tmp_path)
    assert main(["warm", "--json"]) == 0
    warmed = json.loads(capsys.readouterr().out)["warmed"]
    assert [(w["heuristic"], w["rows"], w["cols"]) for w in warmed] == [
        ("pdb 8/full + reflection", 3, 3)]  # (the shape as solve's JSON gives it; was [3, 3])
    assert main(["solvable", "--json", "--shape", "4x3", "2", "1", *map(str, range(3, 12)),
                 "0"]) == 3  # (a swap: Loyd's board)
    said = json.loads(capsys.readouterr().out)  # (a 3x4's and a 4x3's board read alike)
    assert (said["rows"], said["cols"], said["solvable"]) == (4, 3, False)


def test_a_table_of_the_other_form_is_a_usage_error_naming_the_command(art_dir, tmp_path,
                                                                      capsys):
    """A pack given to verify (or solve --artifact, seal, pack) and an installed table given
    to unpack were exit 1, as a damaged table: the wrong command, exit 2, one line saying
    what the file is and what to run. Told by the file's first bytes, not its name."""
    from reference import flip_byte

    board = "8 6 7 2 5 4 3 0 1"
    table = tmp_path / "table.pdbpack"  # an installed table named like a pack
    shutil.copy(art_dir / "8-full.h5", table)
    packed = tmp_path / "packed.h5"  # a pack renamed like a table (pack refuses the name)
    assert main(["pack", str(table), "-o", str(tmp_path / "packed.pdbpack")]) == 0
    (tmp_path / "packed.pdbpack").rename(packed)
    capsys.readouterr()
    for argv in (["verify", str(packed)], ["solve", "--artifact", str(packed), board],
                 ["seal", str(packed)], ["pack", str(packed), "-o", str(tmp_path / "b.pdbpack")]):
        assert main(argv) == 2, argv
        assert capsys.readouterr().err == (f"pdbtool: {packed} is a packed table: unpack it "
                                           f"first (pdbtool unpack {packed} -o TABLE.h5)\n")
    out = tmp_path / "out.h5"
    assert main(["unpack", str(table), "-o", str(out)]) == 2 and not out.exists()
    assert capsys.readouterr().err == (f"pdbtool: {table} is an installed table, not a packed "
                                       f"one: nothing to unpack (pdbtool verify {table} checks "
                                       "it)\n")
    served = tmp_path / "served"  # a directory's entry, not a path given: 1, as before
    served.mkdir()
    shutil.copy(packed, served / "8-full.h5")
    assert main(["solve", "--artifacts", str(served), board]) == 1
    assert "8-full.h5 is a packed table: unpack it first" in capsys.readouterr().err
    flip_byte(packed, packed.stat().st_size - 100)  # a damaged pack: damaged (1) to unpack
    assert main(["unpack", str(packed), "-o", str(out)]) == 1 and not out.exists()
    assert "do not match its seal" in capsys.readouterr().err


def test_json_says_when_the_stamp_was_not_written(art_dir, tmp_path, monkeypatch, capsys):
    """verify and unpack succeed when only the stamp cannot be written (a full disk, a
    read-only directory): the JSON said nothing of it, only stderr did."""
    from pdbtool.tables import trust

    path = tmp_path / "8-full.h5"
    shutil.copy(art_dir / "8-full.h5", path)
    assert main(["pack", str(path), "-o", str(tmp_path / "8.pdbpack")]) == 0
    capsys.readouterr()
    assert main(["verify", str(path), "--json"]) == 0
    good = json.loads(capsys.readouterr().out)
    assert good["stamped"] is True and good["warnings"] == []

    def full_disk(meta, checked=None):
        raise trust.StampNotWritten(f"{meta.path}: stamp not written (test)", meta)

    monkeypatch.setattr(trust, "record", full_disk)
    assert main(["verify", str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is True and report["stamped"] is False
    assert report["warnings"] == [f"{path}: stamp not written (test)"]
    out = tmp_path / "copy.h5"
    assert main(["unpack", str(tmp_path / "8.pdbpack"), "-o", str(out), "--json"]) == 0
    unpacked = json.loads(capsys.readouterr().out)
    assert unpacked["stamped"] is False and unpacked["warnings"] == [f"{out}: stamp not written (test)"]
    monkeypatch.undo()
    assert main(["unpack", str(tmp_path / "8.pdbpack"), "-o", str(tmp_path / "noext"), "--json"]) == 0
    out, err = capsys.readouterr()  # a name the directory scans never find: said
    assert json.loads(out)["warnings"] == [f"{tmp_path / 'noext'}: a name not ending .h5 is not "
                                           "found in a directory (pdbtool solve --artifacts, pdbd "
                                           "serve); give it with --artifact, or rename it"]
    assert "warning: " in err and "not ending .h5" in err
    # Another table's name (another catalogue's, or its own -min variant's) is refused
    # before anything is unpacked: with --force it replaced that table, the 4x4 boards then
    # unserved after a reload (it only warned); without, it would pass for it.
    for wrong in (tmp_path / "15-7-8.h5", tmp_path / "8-full-min.h5"):
        assert main(["unpack", str(tmp_path / "8.pdbpack"), "-o", str(wrong), "--json"]) == 2
        err = json.loads(capsys.readouterr().out)["error"]
        assert err == (f"{wrong}: that is another table's name, but the pack holds 8/full, named "
                       "8-full.h5; a directory's tables are found by what they hold, and this "
                       "name would replace or pass for that table: unpack it as 8-full.h5 (or "
                       "under a name of your own)")
        assert not wrong.exists() and not list(tmp_path.glob(f"{wrong.name}.*"))
    served = tmp_path / "15-5-5-5.h5"
    shutil.copy(art_dir / "15-5-5-5.h5", served)
    before = served.read_bytes()
    assert main(["unpack", str(tmp_path / "8.pdbpack"), "-o", str(served), "--force"]) == 2
    assert served.read_bytes() == before  # never replaced
    capsys.readouterr()
    (tmp_path / "other").mkdir()
    for right in ("8-full.h5", "mine.h5"):
        assert main(["unpack", str(tmp_path / "8.pdbpack"), "-o", str(tmp_path / "other" / right),
                     "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["warnings"] == [], right


def test_with_json_a_usage_error_is_a_json_error_too(capsys):
    with pytest.raises(SystemExit) as e:
        main(["solve", "--json", "--bogus", "1 2 3 4 5 6 7 8 0"])
    assert e.value.code == 2
    out, err = capsys.readouterr()
    assert json.loads(out) == {"error": "unrecognized arguments: --bogus", "exit_code": 2,
                               "where": ""}
    # said by the subcommand, whose --help lists its options (`pdbtool --help` does not)
    assert err == "pdbtool solve: error: unrecognized arguments: --bogus (see pdbtool solve --help)\n"
    with pytest.raises(SystemExit):
        main(["solve", "--threads", "0", "1 2 3 4 5 6 7 8 0"])  # without --json: stderr only
    out, err = capsys.readouterr()
    assert out == "" and "threads must be from 1 to 1024, not 0" in err
    # a value that starts with '-' (argparse takes it for an option): how to give it
    with pytest.raises(SystemExit):
        main(["solve", "--max-memory", "-1G", "1 2 3 4 5 6 7 8 0"])
    assert "('-1G' was taken for an option: give it as --max-memory=-1G)" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["solve", "1 2 3 4 5 6 7 8 0", "--goal"])  # a value missing: no such hint
    err = capsys.readouterr().err
    assert err.endswith("--goal: expected one argument (see pdbtool solve --help)\n"), err
    with pytest.raises(SystemExit):
        main(["solve", "--max-memory=-1G", "1 2 3 4 5 6 7 8 0"])
    assert "not a size: '-1G'" in capsys.readouterr().err


@pytest.mark.parametrize("argv, line", [
    (["solve", "--threads", "x", "1 2 3 0"], "pdbtool solve: error: argument --threads: "
     "threads must be a whole number, not 'x' (see pdbtool solve --help)"),
    (["verify"], "pdbtool verify: error: the following arguments are required: path "
     "(see pdbtool verify --help)"),
    ([], "pdbtool: error: the following arguments are required: COMMAND (see pdbtool --help)"),
])
def test_a_usage_error_is_one_line_with_where_the_help_is(argv, line, capsys):
    """argparse's usage block (a dozen lines for solve) no longer comes before the error."""
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2 and capsys.readouterr() == ("", line + "\n")


def test_build_force_onto_a_link_or_a_directory_is_refused_before_building(tmp_path,
                                                                          monkeypatch, capsys):
    """With --force, a target that is a symbolic link or a directory was refused only
    once the build was done (hours for 24/small): now before it starts."""
    from pdbtool.tables import builder

    def never(*args, **kwargs):
        raise AssertionError("built before the target was checked")

    monkeypatch.setattr(builder, "build", never)
    (tmp_path / "8-full.h5").mkdir()
    assert main(["build", "8/full", "--out", str(tmp_path), "--force"]) == 2
    assert "exists and is a directory: refusing to replace it" in capsys.readouterr().err
    (tmp_path / "8-full.h5").rmdir()
    (tmp_path / "8-full.h5").symlink_to(tmp_path / "elsewhere.h5")
    assert main(["build", "8/full", "--out", str(tmp_path), "--force"]) == 2
    assert "exists and is a symbolic link" in capsys.readouterr().err


def test_options_that_would_be_ignored_are_refused(art_dir, tmp_path):
    """An option that does nothing where it is given is said, before any search (the
    third probe found them silently ignored)."""
    board = "1 2 3 4 5 6 7 0 8"
    for args, message in (
            (["solve", "--checkpoint-every", "5", board], "--checkpoint-every goes with --checkpoint"),
            (["solve", "--checkpoint", "", board], "argument --checkpoint: needs a path, not an empty string"),
            (["solve", "--trace", "", board], "argument --trace: needs a path"),
            (["solve", "--artifacts", "", board], "argument --artifacts: needs a path"),
            (["build", "8/full", "--out", ""], "argument --out: needs a path"),
            (["build", "8/full", "--out", str(tmp_path / "8-full.h5")],
             "--out is the directory the artifact goes in (its file is named after the catalogue: 8-full.h5)"),
            (["list", ""], "argument dir: needs a path"),
            (["warm", "--artifacts", " "], "argument --artifacts: needs a path"),
            (["solve", "--artifact", str(art_dir / "8-full.h5"), "--artifacts", str(art_dir), board],
             "either --artifact FILE or --artifacts DIR, not both"),
            (["solve", "--checkpoint", str(tmp_path / "nowhere" / "cp.json"), board],
             "no such directory"),
            (["build", "8/full", "--processes", "0", "--out", str(tmp_path)],
             "processes must be from 1 to 1024, not 0"),
            (["build", "8/full", "--cluster", "local", "--workers", "2", "--out", str(tmp_path)],
             "--workers and --processes are for a build on this machine"),
            (["solve", "--trace-cap", "5", board], "--trace-cap goes with --trace"),
            (["animate", "--trace", str(tmp_path / "t.json"), "--goal", "blank-first",
              "--algorithm", "astar", "-o", str(tmp_path / "p.html")],
             "--trace animates a search already made: --goal, --algorithm would change nothing")):
        p = run(*args)
        assert p.returncode == 2 and message in p.stderr, (args, p.stderr)
    assert not (tmp_path / "nowhere").exists() and not list(tmp_path.iterdir())


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_help_that_cannot_be_written_is_an_error():
    """argparse drops a failed write of --help and exits 0; a full disk is said (exit 1)."""
    for args in (["--help"], ["solve", "--help"]):
        with open("/dev/full", "w") as full:
            p = subprocess.run([sys.executable, "-m", "pdbtool.cli.main", *args], stdout=full,
                               stderr=subprocess.PIPE, text=True, timeout=60)
        assert p.returncode == 1 and "cannot write the help to stdout" in p.stderr, p.stderr
    p = subprocess.run([sys.executable, "-m", "pdbtool.cli.main", "--help"], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0 and p.stdout.startswith("usage: pdbtool")


def test_ctrl_c_while_the_command_loads_is_an_interrupt_not_a_traceback(monkeypatch, capsys,
                                                                        stops_kept):
    import importlib

    from pdbtool import cli

    def interrupted(name):  # as a Ctrl-C in the first half second, while numba loads
        raise KeyboardInterrupt

    monkeypatch.setattr(importlib, "import_module", interrupted)
    with pytest.raises(SystemExit) as stop:
        cli.command()
    assert stop.value.code == 130 and capsys.readouterr().err == "pdbtool: interrupted\n"


@pytest.mark.parametrize("tt_size", ["9" * 22, str(1 << 40)])
def test_a_transposition_table_beyond_the_machine_is_a_usage_error(tt_size, capsys):
    """A --tt-size beyond this machine's memory (or numpy's sizes) can never be had: a
    usage error, exit 2, before any search, naming the option, the need and what the
    machine has (it was exit 4, the code of a limit a search meets)."""
    code = main(["solve", "--algorithm", "ida-tt", "--tt-size", tt_size, "8 6 7 2 5 4 3 0 1"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith(f"pdbtool: --tt-size {tt_size}: a transposition table of ")
    assert " GiB of memory; this machine has " in err and err.count("\n") == 1


def test_a_memory_limit_beyond_the_machine_is_a_usage_error(capsys):
    code = main(["solve", "--algorithm", "astar", "--max-memory", "100T", "--heuristic",
                 "manhattan", "8 6 7 2 5 4 3 0 1"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("pdbtool: --max-memory: a memory limit of 102,400 GiB "
                                        "cannot be reached; this machine has ")


def test_a_transposition_table_the_machine_could_hold_but_not_now_is_a_limit(monkeypatch,
                                                                              capsys):
    """A table within the machine's memory that cannot be had at the moment (others hold
    the memory): the limit the search met, exit 4, as A*'s memory."""
    from pdbtool.kernels import ida_tt

    made = ida_tt.transposition_table

    def taken(slots):  # (the kernels' own compile asks for 1 slot)
        if slots > 1:
            raise MemoryError
        return made(slots)

    monkeypatch.setattr(ida_tt, "transposition_table", taken)
    code = main(["solve", "--algorithm", "ida-tt", "--tt-size", str(1 << 20), "--heuristic",
                 "manhattan", "8 6 7 2 5 4 3 0 1"])
    assert code == 4 and "cannot be allocated here" in capsys.readouterr().err


def test_a_name_too_long_for_the_system_is_bad_input_in_every_command(tmp_path, capsys,
                                                                      monkeypatch):
    """verify and info said exit 2 for it, list and build exit 1 (an OSError's code)."""
    monkeypatch.chdir(tmp_path)
    long = "a" * 300
    for argv in (["list", long], ["verify", long], ["info", long],
                 ["build", "8/full", "--out", long]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.startswith(f"pdbtool: {long}") and err.count("\n") == 1, (argv, err)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.process
def test_libraries_that_cannot_load_are_one_line(tmp_path):
    """numba's LLVM under a low `ulimit -v` (its shared object cannot be mapped) was a
    traceback of thirty lines; a module missing from a broken install likewise. (In a
    process of its own: the entry point ends the process and changes its signals.)"""
    import subprocess

    (tmp_path / "unmappable.py").write_text(
        "try:\n    raise OSError('libllvmlite.so: failed to map segment from shared object')\n"
        "except OSError:\n    raise OSError('Could not find/load shared object file')\n")
    (tmp_path / "incomplete.py").write_text("import a_module_not_installed_anywhere\n")
    for module, says in (("unmappable", "libllvmlite.so: failed to map segment from shared "
                                        "object"),
                         ("incomplete", "No module named 'a_module_not_installed_anywhere'")):
        p = subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(tmp_path)!r}); "
                            f"from pdbtool.cli import launch; launch('pdbtool', {module!r})"],
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 1 and p.stderr.startswith(
            f"pdbtool: cannot load the libraries it runs on: {says}"), p.stderr
        assert p.stderr.count("\n") == 1
