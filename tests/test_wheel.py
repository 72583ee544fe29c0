"""The install a user makes: the wheel, built from a copy of the sources, installed with its
dependencies into a fresh venv outside the checkout, and used from a directory that is not
the checkout, with a fresh kernel cache. Every test run from the editable install sees the
source tree; only this one sees what the wheel carries."""

import json
import shutil
import subprocess
import sys
import time
import zipfile

import pytest

from reference import ROOT, bfs_distances, free_port

pytestmark = [pytest.mark.network, pytest.mark.process]

PIP = ["-m", "pip", "--disable-pip-version-check", "-q"]
BOARD = "8 6 7 2 5 4 3 0 1"  # one of the two 8-puzzles 31 moves from blank-last
CATALOGUES = sorted(p.stem for p in (ROOT / "pdbtool" / "tables" / "catalogues").glob("*.cat"))


def source_copy(dest):
    """What a build reads, copied, so that building leaves the checkout clean."""
    dest.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, dest / name)
    for package in ("pdbtool", "pdbd"):
        shutil.copytree(ROOT / package, dest / package,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return dest


def run(cmd, cwd, env, timeout=600, check=True, **kw):
    p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
                       **kw)
    if check:
        assert p.returncode == 0, f"{cmd}: exit {p.returncode}\n{p.stdout[-2000:]}\n{p.stderr[-3000:]}"
    return p


def unreachable(output: str) -> bool:
    """pip failed for want of the network, not for the project (a bad pyproject.toml, a
    dependency floor no release meets: those fail the test, never skip it)."""
    return any(sign in output for sign in (
        "NewConnectionError", "Temporary failure in name resolution", "Could not fetch URL",
        "Network is unreachable", "ConnectTimeoutError", "ProxyError"))


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(bin directory, a working directory outside the checkout, environment)."""
    tmp = tmp_path_factory.mktemp("wheel")
    wheels = tmp / "wheels"
    built = subprocess.run([sys.executable, *PIP, "wheel", "--no-deps", "-w", str(wheels),
                            str(source_copy(tmp / "src"))], capture_output=True, text=True,
                           timeout=600)
    if built.returncode != 0 and unreachable(built.stderr + built.stdout):
        pytest.skip(f"cannot build: the build backend cannot be fetched: {built.stderr[-300:]}")
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = wheels.glob("pdbtool-*.whl")
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    work = tmp / "work"
    work.mkdir()
    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(tmp / "home"),
           "NUMBA_CACHE_DIR": str(tmp / "kernel-cache")}  # a fresh machine's: nothing compiled
    got = run([str(venv / "bin" / "python"), *PIP, "install", str(wheel)], work, env,
              timeout=1200, check=False)
    if got.returncode != 0 and unreachable(got.stderr + got.stdout):
        pytest.skip(f"the package registry cannot be reached: {got.stderr[-300:]}")
    assert got.returncode == 0, got.stderr[-3000:]
    return venv / "bin", work, env, wheel


def test_the_wheel_carries_the_data_files(installed):
    *_, wheel = installed
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {f"pdbtool/tables/catalogues/{c}.cat" for c in CATALOGUES} | {
        "pdbtool/heuristics/forbidden_words.txt", "pdbtool/cli/animation.html",
        "pdbtool/py.typed", "pdbd/py.typed", "pdbd/v1/solver_pb2.pyi"}
    assert expected <= names, expected - names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
    text = zipfile.ZipFile(wheel).read(metadata).decode()
    assert "License-Expression: MIT" in text
    requires = [line for line in text.splitlines() if line.startswith("Requires-Dist:")]
    assert not [r for r in requires if "grpcio-tools" in r and "extra ==" not in r], requires


def test_a_user_builds_solves_and_serves_from_the_wheel(installed):
    bin_, work, env, _ = installed
    pdbtool, pdbd, python = str(bin_ / "pdbtool"), str(bin_ / "pdbd"), str(bin_ / "python")
    assert run([python, "-c", "import grpc_tools"], work, env, check=False).returncode != 0

    assert run([pdbtool, "--version"], work, env).stdout.startswith("pdbtool ")
    assert run([pdbd, "--version"], work, env).stdout.startswith("pdbd ")
    listed = json.loads(run([pdbtool, "partitions", "--json"], work, env).stdout)["catalogues"]
    assert sorted(r["name"].replace("/", "-") for r in listed) == CATALOGUES

    (work / "art").mkdir()
    run([pdbtool, "build", "8/full", "--out", "art"], work, env, timeout=900)
    first = run([pdbtool, "solve", "--artifacts", "art", "--json", BOARD], work, env)
    assert "compiling the search kernels for this machine, once" in first.stderr
    answer = json.loads(first.stdout)
    distances = bfs_distances((1, 2, 3, 4, 5, 6, 7, 8, 0))
    assert answer["length"] == distances[tuple(map(int, BOARD.split()))] == 31
    assert answer["optimal"] and "8/full" in answer["heuristic"]
    second = run([pdbtool, "solve", "--artifacts", "art", "--json", BOARD], work, env)
    assert "compiling" not in second.stderr and json.loads(second.stdout)["length"] == 31

    port = free_port()
    server = subprocess.Popen([pdbd, "serve", "--artifacts", "art", "--listen",
                               f"127.0.0.1:{port}"], cwd=work, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 300
        while True:
            health = run([pdbd, "health", "--server", f"127.0.0.1:{port}"], work, env, check=False)
            if health.returncode == 0 or server.poll() is not None or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert health.returncode == 0, (health.stderr, server.poll())
        queried = run([pdbd, "query", "--server", f"127.0.0.1:{port}", "--json", BOARD], work, env)
        assert json.loads(queried.stdout)["length"] == 31
    finally:
        server.terminate()
        log = server.communicate(timeout=60)[0]
    assert "Traceback" not in log, log


def test_importing_changes_nothing_in_the_environment(installed):
    bin_, work, env, _ = installed
    run([str(bin_ / "python"), "-c",
         "import os; before = dict(os.environ)\n"
         "import pdbtool, pdbd, pdbtool.kernels, pdbtool.search.solver, pdbtool.cli.main\n"
         "changed = {k for k in set(before) | set(os.environ) if before.get(k) != os.environ.get(k)}\n"
         "assert not changed, changed"], work, {**env, "NUMBA_CACHE_DIR": ""})


def test_a_closed_pipe_is_quiet(installed):
    bin_, work, env, _ = installed
    boards = work / "boards.txt"
    boards.write_text("1 2 3 4 5 6 7 0 8\n" * 2000)
    p = run(["bash", "-c", f"'{bin_ / 'pdbtool'}' solve --quiet --heuristic manhattan --json --file '{boards}' | "
             "head -c 100; "
             "echo \" ${PIPESTATUS[0]}\""], work, env)
    assert p.stderr == "" and p.stdout.rstrip().endswith(" 141"), (p.stdout[-200:], p.stderr)
    # a failure's --json object into a closed pipe: the error's line and exit code stay (it
    # was a traceback and exit 1)
    for argv, code in ((["pdbtool", "solve", "--json", "1 2 3"], 2),
                       (["pdbtool", "info", "--json", "nonexistent.h5"], 2)):
        p = run(["bash", "-c", f"'{bin_ / argv[0]}' {' '.join(repr(a) for a in argv[1:])} | "
                 "head -c 0; echo \" ${PIPESTATUS[0]}\""], work, env)
        assert p.stdout.rstrip().endswith(f" {code}") and "Traceback" not in p.stderr, \
            (argv, p.stdout[-200:], p.stderr)
        assert p.stderr.count("\n") == 1 and p.stderr.startswith("pdbtool: "), p.stderr
