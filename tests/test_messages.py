"""The messages of issue 40's item 7 that were still unclear: each names the file (or the
stream), what was being done and the cause, in one line, never HDF5's own text or a
traceback; a complete artifact is a success even when its stamp cannot be written; a
result that cannot be written is a failure."""

import io
import json
import os
import shutil
import subprocess
import sys

import pytest

from pdbtool.cli.main import main
from pdbtool.tables import artifact, trust

pytestmark = pytest.mark.process

EASY8 = "1 2 3 4 5 6 0 7 8"
KORF1 = "14 13 15 7 11 12 9 5 6 0 2 1 4 8 10 3"  # 57 moves


def pdbtool(*args, prefix=(), preexec_fn=None, stdout=subprocess.PIPE, env=None):
    return subprocess.run([*prefix, sys.executable, "-m", "pdbtool.cli.main", *args],
                          stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=300,
                          preexec_fn=preexec_fn, env=env, check=False)


def unprivileged() -> list[str]:
    """A command prefix under which file modes apply (root reads and writes through them):
    none for another user, setpriv without the DAC capabilities for root."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: file modes do not apply")
    drop = "-dac_override,-dac_read_search"
    return ["setpriv", "--bounding-set", drop, "--inh-caps", drop, "--"]


def test_a_closed_stdout_is_an_error_not_a_silent_success():
    p = subprocess.run(["sh", "-c", 'exec "$@" >&-', "sh", sys.executable, "-m",
                        "pdbtool.cli.main", "solve", "--heuristic", "manhattan", EASY8],
                       stderr=subprocess.PIPE, text=True, timeout=300, check=False)
    assert p.returncode == 1
    assert p.stderr == "pdbtool: stdout is closed: the result has nowhere to go (run the " \
                       "command with its output open, e.g. > FILE)\n"


def test_a_closed_stderr_loses_the_messages_not_the_work(tmp_path):
    """`pdbtool build --json 2>&-` exited 1 with nothing written (the progress bar asked a
    missing stderr whether it was a terminal), and a build's lines went to stdout."""
    p = subprocess.run(["sh", "-c", 'exec "$@" 2>&-', "sh", sys.executable, "-m",
                        "pdbtool.cli.main", "build", "8/full", "--out", str(tmp_path), "--json"],
                       stdout=subprocess.PIPE, text=True, timeout=300, check=False)
    assert p.returncode == 0
    assert json.loads(p.stdout)["path"] == str(tmp_path / "8-full.h5")  # one object, no lines


def test_progress_on_a_stderr_that_fails_stops_printing_and_lets_the_work_go_on(monkeypatch):
    from pdbtool.progress import Progress

    class Gone(io.StringIO):  # a pipe whose reader has left
        def write(self, text):
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(sys, "stderr", Gone())
    bar = Progress("packing", 10)
    bar.update(1)
    assert not bar.enabled  # said once, then quiet
    bar.update(10, "done")
    bar.close("finished")
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    bar = Progress("packing", 10)
    bar.update(1)
    bar.close("finished")
    assert bar.enabled and sys.stderr.getvalue().endswith("finished\n")


def test_a_full_stdout_is_named():
    with open("/dev/full", "w") as full:
        p = pdbtool("solve", "--heuristic", "manhattan", EASY8, stdout=full)
    assert p.returncode == 1  # (a first run may say before that it compiles kernels)
    assert p.stderr.splitlines()[-1] == ("pdbtool: cannot write the result to stdout: No "
                                         "space left on device")


def test_a_full_stdout_after_a_pack_says_the_pack_is_whole(art_dir, tmp_path):
    """`pdbtool pack --json > /dev/full` exited 1 and kept the whole pack, not saying so: a
    second run was then refused ("exists")."""
    out = tmp_path / "8.pdbpack"
    with open("/dev/full", "w") as full:
        p = pdbtool("pack", str(art_dir / "8-full.h5"), "-o", str(out), "--json", stdout=full)
    assert p.returncode == 1 and out.is_file()
    assert p.stderr.splitlines()[-1] == ("pdbtool: cannot write the result to stdout: No space "
                                         f"left on device ({out} was written, whole, all the same)")


def test_the_fallback_is_said_before_the_search(tmp_path, capsys):
    """A 15-puzzle without a table falls back to walking distance; a hard board may then take
    hours, so the note comes first: here the search stops at its budget (exit 4) and the
    note has been said all the same."""
    assert main(["solve", "--artifacts", str(tmp_path), "--goal", "blank-first",
                 "--budget", "1000", KORF1]) == 4
    err = capsys.readouterr().err.splitlines()
    assert err[0] == (f"pdbtool: note: no table for 4x4 boards in {tmp_path}/: fell back to "
                      "walking-distance")
    assert main(["solve", "--artifacts", str(tmp_path), "--quiet", EASY8]) == 0
    assert "note:" not in capsys.readouterr().err


def test_the_fallback_without_a_default_directory_says_there_is_none(tmp_path, monkeypatch,
                                                                      capsys):
    """No --artifacts and no ./artifacts: the note said "no table ... in artifacts/", a
    directory that is not there."""
    monkeypatch.chdir(tmp_path)
    assert main(["solve", "--goal", "blank-first", "--budget", "1000", KORF1]) == 4
    assert capsys.readouterr().err.splitlines()[0] == (
        "pdbtool: note: no table for 4x4 boards (no ./artifacts/ directory here; --artifacts "
        "DIR names another): fell back to walking-distance")


def test_a_full_disk_is_said_plainly_and_leaves_nothing(art_dir, tmp_path):
    """A file-size limit stands in for a full disk (the same failed write, EFBIG): HDF5's
    text (errno = 27, buf = 0x...) is not the message; no partial file is left. (art_dir:
    the build kernels are compiled and cached before, not under the limit.) The limit is set
    by a small program that then execs the command, not by a preexec_fn: one runs the
    parent's at-fork handlers in the child (gRPC's, in this process of many servers), whose
    lines on stderr ('Epoll1Poller ... epoll_wait error', '*** SIGABRT received') came
    before the message now and then."""
    small_files = [sys.executable, "-c", "import os, resource, sys; "
                   f"resource.setrlimit(resource.RLIMIT_FSIZE, ({64 << 10}, {64 << 10})); "
                   "os.execv(sys.argv[1], sys.argv[1:])"]
    out = tmp_path / "new" / "out"  # made by the build, and removed again (they were left)
    p = pdbtool("build", "8/full", "--out", str(out), "--quiet", prefix=small_files)
    assert p.returncode == 1
    assert p.stderr == (f"pdbtool: {out}/8-full.h5: cannot write it in {out}: File too large; "
                        "nothing was left behind (free some space there or write elsewhere, "
                        "then run the command again)\n")
    assert list(tmp_path.iterdir()) == []


def test_an_unstamped_complete_artifact_is_a_success_with_a_warning(tmp_path, capsys):
    """The stamp written after a build (or verify, or unpack) cannot be written, as on a
    disk that filled up just then (a directory in its place here): the artifact is whole,
    the command succeeds and says what is missing; no half stamp is left."""
    stamp = trust.stamp_path(tmp_path / "8-full.h5")
    stamp.mkdir()
    assert main(["build", "8/full", "--out", str(tmp_path), "--quiet"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith(f"wrote {tmp_path}/8-full.h5")
    assert err.startswith(f"pdbtool: warning: {tmp_path}/8-full.h5 is complete and passed "
                          f"its checks, but its verification stamp {stamp} could not be written")
    assert err.rstrip().endswith(f"until it is stamped (`pdbtool verify {tmp_path}/8-full.h5` "
                                 "once the stamp can be written there)")
    assert main(["verify", str(tmp_path / "8-full.h5")]) == 0
    assert "could not be written" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["8-full.h5", "8-full.h5.verified"]
    assert not trust.is_recorded(artifact.read_meta(tmp_path / "8-full.h5"))


def test_unreadable_and_unwritable_files_are_named(art_dir, tmp_path):
    prefix = unprivileged()
    shutil.copy(art_dir / "8-full.h5", tmp_path / "8-full.h5")
    os.chmod(tmp_path / "8-full.h5", 0)
    p = pdbtool("info", str(tmp_path / "8-full.h5"), prefix=prefix)
    assert p.returncode == 1
    assert p.stderr == (f"pdbtool: {tmp_path}/8-full.h5: cannot be read: Permission denied "
                        "(check its mode and owner, and its directory's)\n")
    p = pdbtool("list", str(tmp_path), prefix=prefix)
    assert p.returncode == 1
    assert p.stderr == (f"pdbtool: {tmp_path}: 1 file damaged, unreadable or not an artifact "
                        "(each named in the list)\n")
    assert p.stdout.rstrip().endswith("unreadable: cannot be read: Permission denied (check "
                                      "its mode and owner, and its directory's)")
    closed = tmp_path / "closed"
    closed.mkdir(mode=0o555)
    p = pdbtool("build", "8/full", "--out", str(closed), "--quiet", prefix=prefix)
    assert p.returncode == 1
    assert p.stderr == (f"pdbtool: {closed}/8-full.h5: cannot write in {closed}: Permission "
                        "denied (write to a directory you may write to)\n")  # before building


def test_stdout_keeps_the_results_alone_beside_a_library_that_prints():
    """With a cluster the command's results stay alone on stdout: Ray's driver prints a
    raylet's death (a 20-line dump) to sys.stdout, which corrupted --json; after
    console.results_apart() what is printed to sys.stdout goes to stderr, the results
    (and a --json error object) to the original stdout."""
    script = """if True:
        import argparse, sys
        from pdbtool.cli import console
        args = argparse.Namespace(json=True)
        with console.results_apart():
            print("(raylet) Raylet is terminated.")  # as Ray's listener thread prints it
            console.emit(args, {"length": 57}, "length 57")
            console.report_error("pdbtool", args, "a node was lost", 1)
        print("after")  # the command's stdout is sys.stdout again
    """
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                       timeout=300, check=True)
    assert p.stdout.splitlines() == ['{"length": 57}',
                                     '{"error": "a node was lost", "exit_code": 1, "where": ""}',
                                     "after"]
    assert p.stderr.splitlines() == ["(raylet) Raylet is terminated.",
                                     "pdbtool: a node was lost"]
