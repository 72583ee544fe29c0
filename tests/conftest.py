"""Shared fixtures: exact 8-puzzle oracles, small artifacts built once per session,
in-process pdbd servers, headless Chromium. Helpers and oracles live in reference.py and serving.py."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from reference import bfs_distances

# Every Ray the tests start (here and in their subprocesses) listens on loopback only: with
# clusters "disabled" Ray binds 127.0.0.1, otherwise every interface. Read when Ray is
# imported, so it is set before any test module imports it.
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
from serving import channel_stub, running_daemon


RAY_FILES = "test_cluster"  # every test that starts Ray lives in tests/test_cluster*.py


def pytest_collection_modifyitems(config, items):
    """Refuse a test marked ``cluster`` outside the Ray files (it would run beside them)."""
    stray = [item.nodeid for item in items if item.get_closest_marker("cluster")
             and not item.path.name.startswith(RAY_FILES)]
    if stray:
        raise pytest.UsageError(f"tests marked cluster outside tests/{RAY_FILES}*.py: {stray}")


@pytest.hookimpl(optionalhook=True)  # (a hook of pytest-xdist, the test extra's)
def pytest_xdist_make_scheduler(config, log):
    """With pytest-xdist's --dist loadfile (scripts/test, two workers): a file's tests on one
    worker, so its module fixtures (daemons, small tables) are made once, and every Ray file
    on the same one, so that one Ray runs at a time (the tests of `--cluster auto` look for
    a head where Ray's address file says). (xdist's own groups, --dist loadgroup, do not
    work with pytest 9.2: they rename a test's node id, which pytest now ignores.)"""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class RayFilesTogether(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return "ray" if Path(path).name.startswith(RAY_FILES) else path

    return RayFilesTogether(config, log)


@pytest.fixture(scope="session")
def oracle8():
    """Exact distances of all 181,440 8-puzzle states to the blank-first goal."""
    d = bfs_distances(tuple(range(9)))
    assert len(d) == 181440
    return d


@pytest.fixture(scope="session")
def oracle8_last():
    return bfs_distances((1, 2, 3, 4, 5, 6, 7, 8, 0))


@pytest.fixture(scope="session")
def oracle(oracle8, oracle8_last):
    """Exact 8-puzzle distances (BFS over every state) for each goal."""
    return {"blank-first": oracle8, "blank-last": oracle8_last}


@pytest.fixture(scope="session")
def chromium():
    """Headless Chromium's executable; the test skips, saying how to install it, without."""
    from browser import MISSING, find_chromium

    exe = find_chromium()
    if exe is None:
        pytest.skip(MISSING)
    return exe


@pytest.fixture(scope="session")
def art_dir(tmp_path_factory):
    """8/full and 15/5-5-5 artifacts (a second or two to build)."""
    from pdbtool.tables.builder import build

    d = tmp_path_factory.mktemp("artifacts")
    build("8/full", d, progress=False)
    build("15/5-5-5", d, progress=False)
    return d


@pytest.fixture
def served_dir(art_dir, tmp_path):
    """A directory of stamped copies of the 8/full and 15/5-5-5 artifacts, to serve and
    change (rollouts, reloads)."""
    from pdbtool.tables import artifact, trust

    d = tmp_path / "served"
    d.mkdir()
    for name in ("8-full.h5", "15-5-5-5.h5"):
        shutil.copy(art_dir / name, d / name)
        trust.record(artifact.read_meta(d / name))
    return d


@pytest.fixture(scope="session")
def ray_local():
    """One local Ray instance for the whole session (2 CPUs, a small object store): the
    cluster tests share it; each test module frees the CPUs its actors hold."""
    ray = pytest.importorskip("ray", reason="the cluster extra is not installed: "
                                            "pip install -e '.[cluster]' in the checkout")
    import logging

    ray.init(address="local", num_cpus=2, object_store_memory=200 * 2**20, include_dashboard=False,
             log_to_driver=False, logging_level=logging.ERROR)
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def served(art_dir):
    """pdbd over the built 8/full and 15/5-5-5 artifacts: 2 threads, queue 8."""
    from pdbtool.selection import load_directory

    daemon = running_daemon(load_directory(art_dir, require=True), threads=2, max_queue=8)
    yield daemon
    daemon.stop(grace=1)


@pytest.fixture(scope="module")
def slow():
    """pdbd serving the 15-puzzle with Manhattan distance on one thread, queue 1: a hard
    board (serving.HARD) searches for an hour or more unless stopping works."""
    from pdbtool.heuristics.table_free import table_free
    from pdbtool.selection import TableSet

    daemon = running_daemon(TableSet({4: table_free("manhattan", 4)}), threads=1, max_queue=1)
    yield daemon
    daemon.stop(grace=1)


@pytest.fixture
def stub(served):
    with channel_stub(served.address) as stub:
        yield stub


@pytest.fixture
def slow_stub(slow):
    with channel_stub(slow.address) as stub:
        yield stub


@pytest.fixture(scope="session")
def pki(tmp_path_factory):
    """A CA, a server certificate for 127.0.0.1/localhost and a client certificate."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    d = tmp_path_factory.mktemp("pki")

    def ssl(*args):
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True)

    ssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
        "-days", "2", "-subj", "/CN=pdbd test CA")
    (d / "san.cnf").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    for name in ("server", "client"):
        ssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out",
            f"{name}.csr", "-subj", f"/CN={name}")
        ssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", f"{name}.pem", "-days", "2", "-extfile", "san.cnf")
    return d
