"""The addresses --cluster takes, each in a process of its own (the session's Ray is not
used): what is no address is bad input (exit 2) before anything starts; an address where
nothing listens fails at once with exit 1 (Ray itself retries it for about 12 minutes,
deaf to Ctrl-C); `pdbd serve --cluster local`'s Ray listens on loopback only, as
`pdbtool solve --cluster local`'s does (pdbd imported Ray before it said so)."""

import os
import socket
import subprocess
import sys
import threading
import time

import pytest

pytestmark = [pytest.mark.cluster, pytest.mark.process]

pytest.importorskip("ray", reason="the cluster extra is not installed: pip install -e '.[cluster]' in the checkout")

EASY8 = "1 2 3 4 5 6 0 7 8"


def run(*argv, env=None, timeout=120):
    return subprocess.run([sys.executable, *argv], capture_output=True, text=True,
                          timeout=timeout, env=env)


@pytest.mark.parametrize("address", ["", "http://head:6379", "head", "head:port", "head:70000"])
def test_no_address_is_bad_input(address):
    for argv in (["-m", "pdbtool.cli.main", "solve", "--cluster", address, EASY8],
                 ["-m", "pdbd.cli", "serve", "--cluster", address]):
        p = run(*argv)
        assert p.returncode == 2, p.stderr
        assert "argument --cluster: give the head node's HOST:PORT" in p.stderr, p.stderr
        assert "'local' or 'auto'" in p.stderr, p.stderr
        assert "Traceback" not in p.stderr and p.stdout == ""


def test_an_address_nothing_listens_on_fails_at_once(art_dir):
    with socket.socket() as closed:  # bound, not listening: a connection is refused
        closed.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{closed.getsockname()[1]}"
        t0 = time.monotonic()
        p = run("-m", "pdbtool.cli.main", "solve", "--artifact", str(art_dir / "8-full.h5"),
                "--cluster", address, EASY8)
        seconds = time.monotonic() - t0
    assert p.returncode == 1, p.stderr
    assert p.stderr.strip().splitlines()[-1] == (
        f"pdbtool: cannot reach the Ray cluster at {address}: Connection refused (start one "
        "with `ray start --head`, or use --cluster local)"), p.stderr
    assert seconds < 60 and p.stdout == ""


def test_pdbd_local_ray_listens_on_loopback(tmp_path):
    # pdbd serve checks Ray is installed before it loads the tables; with no tables it stops
    # there, and the Ray it imported says whether a Ray it starts would bind every interface.
    env = {k: v for k, v in os.environ.items() if k != "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"}
    code = ("import sys\n"
            "from pdbd.cli import main\n"
            f"code = main(['serve', '--cluster', 'local', '--artifacts', {str(tmp_path)!r}])\n"
            "import ray._private.ray_constants as c\n"
            "print(code, 'ray' in sys.modules, c.ENABLE_RAY_CLUSTER)\n")
    p = run("-c", code, env=env)
    assert p.stdout.split() == ["1", "True", "False"], p.stdout + p.stderr  # 1: no tables


def test_a_head_on_loopback_gets_a_loopback_driver(monkeypatch):
    """A head started on 127.0.0.1 (or localhost): Ray took this machine's own address for
    the driver and retried there for 14 minutes before failing (the test suite's Ray, and
    `--cluster local`, had the setting that keeps it on loopback; a user's command did not)."""
    from pdbtool.cluster.messages import on_loopback, ray_module

    assert [on_loopback(a) for a in ("127.0.0.1:6390", "localhost:6379", "[::1]:6379",
                                     "10.0.0.5:6379", "head:6379", "local", None)] == [
        True, True, True, False, False, False, False]
    monkeypatch.delenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", raising=False)
    ray_module("127.0.0.1:6390")
    assert os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] == "0"
    monkeypatch.delenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER")
    ray_module("10.0.0.5:6379")
    assert "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER" not in os.environ


def test_a_node_s_error_is_said_by_its_cause():
    """An unusable --cluster-cache on a node was said as Ray's coloured first line, no cause:
    "its worker failed: \\x1b[36mray::NodeWorker.load()\\x1b[39m (pid=..., actor_id=...)"."""
    from pdbtool.cluster.run import first_line

    class TaskError(Exception):  # as Ray's RayTaskError: its text, and the node's error
        def __init__(self, cause):
            super().__init__("\x1b[36mray::NodeWorker.load()\x1b[39m (pid=7, actor_id=ab)\n"
                             "Traceback (most recent call last): ...")
            self.cause = cause

    cause = NotADirectoryError(20, "Not a directory", "/work/b15.txt/x")
    assert first_line(TaskError(cause)) == ("NotADirectoryError: [Errno 20] Not a directory: "
                                            "'/work/b15.txt/x'")
    assert first_line(RuntimeError("\x1b[31mred\x1b[39m\nmore")) == "red"


def test_a_head_gone_is_never_asked_again(monkeypatch):
    """Asked while its head was away, Ray's calls for the cluster's nodes blocked, and when
    a head restarted at that address answered them, Ray ended the process (`pdbd serve
    --cluster` died of a failed check, "WrongClusterID", when the head came back). The head
    is asked only while it takes a TCP connection, and once it did not, never again."""
    from types import SimpleNamespace

    from pdbd.jobs import Delegation
    from pdbtool.cluster.driver import Cluster
    from pdbtool.cluster.messages import ClusterError
    from reference import free_port

    port = free_port()  # nothing listens: refused at once
    said, asked = [], []
    cluster = object.__new__(Cluster)  # its state, without a Ray to connect to
    cluster.address, cluster.notify, cluster.lost = f"127.0.0.1:{port}", said.append, None
    cluster.head = cluster.address
    cluster._nodes, cluster._workers, cluster._lock = None, None, threading.Lock()
    cluster.ray = SimpleNamespace(nodes=lambda: asked.append(1) or [])
    with pytest.raises(ClusterError, match=rf"head at 127.0.0.1:{port} was lost at .* "
                                           r"\(Connection refused\).*restart to use"):
        cluster.nodes()
    assert said == [cluster.lost] and not asked
    with socket.create_server(("127.0.0.1", port)):  # the head is back: still not asked
        for ask in (cluster.nodes, cluster.info, Delegation(cluster, 1).info):
            with pytest.raises(ClusterError, match="was lost at"):
                ask()
    assert not asked and len(said) == 1


def test_the_head_is_asked_for_its_nodes_once(monkeypatch):
    """Ray's call for the cluster's state, made while the head was hung (it took TCP
    connections, answered nothing) blocked, and ended the daemon when a head restarted at
    that address answered it. The nodes are asked for once; Info then asks the actors."""
    from types import SimpleNamespace

    from pdbtool.cluster.driver import Cluster
    from pdbtool.cluster.run import Node

    asked = []
    node = {"NodeID": "n1", "Alive": True, "Resources": {"CPU": 2.0},
            "NodeManagerHostname": "h", "NodeManagerAddress": "10.0.0.1"}
    cluster = object.__new__(Cluster)
    cluster.address, cluster.notify, cluster.lost, cluster.head = "local", print, None, None
    cluster._nodes, cluster._workers, cluster._lock = None, None, threading.Lock()
    cluster.ray = SimpleNamespace(nodes=lambda: asked.append(1) or [node],
                                  wait=lambda refs, **kw: ([], refs))
    assert cluster.info().nodes == 1 and cluster.info().cpus == 2 and len(asked) == 1
    worker = SimpleNamespace(lost=None, node=Node("n1", "h (10.0.0.1)", 2),
                             control=lambda *a: object())
    cluster._workers = [worker, SimpleNamespace(lost="gone", node=None)]
    assert cluster.info().nodes == 1 and len(cluster.nodes()) == 1 and len(asked) == 1


@pytest.fixture
def no_ray_yet(monkeypatch, tmp_path):
    """Ray as a process that has not initialised it (the session's Ray may be up), whose
    ray.init is recorded, not run; Ray's temp directory empty, no RAY_ADDRESS."""
    import ray

    from pdbtool.cluster import messages

    inits = []
    monkeypatch.setattr(messages, "speaks_http2", lambda s: True)  # (a listening socket: the head)
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", lambda **kw: inits.append(kw["address"]))
    monkeypatch.setenv("RAY_TMPDIR", str(tmp_path))
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    return inits


def test_auto_is_probed_as_an_address_is(no_ray_yet, monkeypatch, tmp_path):
    """--cluster auto: the head Ray finds (RAY_ADDRESS, else the address file of the last
    `ray start --head` in Ray's temp directory) takes a TCP connection before Ray is asked
    anything, as an address given does; it was not probed, and a head that was away hung
    the command (Ray retries for minutes) or, lost later, was asked again."""
    import ray._private.services as services

    from pdbtool.cluster.driver import Cluster
    from pdbtool.cluster.messages import ClusterError
    from reference import free_port

    # Ray looks for a head running on this machine before its address file: the session's
    # Ray of the other cluster tests (or any other) would be found instead.
    monkeypatch.setattr(services, "find_gcs_addresses", set)
    port = free_port()  # nothing listens: refused at once
    monkeypatch.setenv("RAY_ADDRESS", f"127.0.0.1:{port}")
    with pytest.raises(ClusterError, match=rf"cannot reach the Ray cluster at 127.0.0.1:{port} "
                                           r"\(--cluster auto\): Connection refused"):
        Cluster("auto")
    assert no_ray_yet == []
    monkeypatch.delenv("RAY_ADDRESS")
    (tmp_path / "ray").mkdir()
    (tmp_path / "ray" / "ray_current_cluster").write_text(f"127.0.0.1:{port}\n")
    said = []
    with socket.create_server(("127.0.0.1", port)):  # the head, up
        cluster = Cluster("auto", notify=said.append)
        assert no_ray_yet == [f"127.0.0.1:{port}"]  # the head probed, not looked for again
        cluster.reachable()
    with pytest.raises(ClusterError, match=rf"head at 127.0.0.1:{port} \(--cluster auto\) "
                                           r"was lost at .* \(Connection refused\)"):
        cluster.reachable()
    assert said == [cluster.lost]
    cluster.close()


def test_an_auto_found_head_on_loopback_gets_a_loopback_driver(no_ray_yet, monkeypatch,
                                                                tmp_path):
    """--cluster auto finding a head on 127.0.0.1 (RAY_ADDRESS, Ray's address file): Ray is
    imported before the head is known, so the loopback setting an address given gets
    before the import came too late, and Ray's own form of the address named the head by
    this machine's own address (refused by a head listening on loopback only; a driver
    that got there would have taken that address for its own too). Now it is what the same
    address given gets: the same head probed and handed to ray.init, and Ray's setting
    (its constant, read at each use) and the environment the same."""
    import ray._private.ray_constants as constants
    import ray._private.services as services

    from pdbtool.cluster.driver import Cluster, head_of
    from reference import free_port

    monkeypatch.setattr(services, "find_gcs_addresses", set)  # (this machine's other Rays)
    LOOPBACK_SETTING = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
    port = free_port()
    head = f"127.0.0.1:{port}"
    (tmp_path / "ray").mkdir()
    monkeypatch.setenv(LOOPBACK_SETTING, "0")  # (so that the test's end puts it back)

    def driver(address: str, *, env: str | None = None, file: str | None = None):
        """What Cluster(address) hands ray.init, in a process that imported Ray without
        the setting, and the setting after."""
        monkeypatch.setattr(constants, "ENABLE_RAY_CLUSTER", True)
        monkeypatch.delenv(LOOPBACK_SETTING, raising=False)
        monkeypatch.delenv("RAY_ADDRESS", raising=False)
        if env:
            monkeypatch.setenv("RAY_ADDRESS", env)
        (tmp_path / "ray" / "ray_current_cluster").unlink(missing_ok=True)
        if file:
            (tmp_path / "ray" / "ray_current_cluster").write_text(f"{file}\n")
        del no_ray_yet[:]
        Cluster(address).close()
        return no_ray_yet, constants.ENABLE_RAY_CLUSTER, os.environ.get(LOOPBACK_SETTING)

    given = ([head], False, "0")  # the head given: ray_module sets the variable, and a
    # command imports Ray just after, which reads it
    with socket.create_server(("127.0.0.1", port)):  # the head, up, on loopback only
        assert driver("auto", env=head) == given
        assert driver("auto", file=head) == given
        assert driver(head) == given
    monkeypatch.setattr(constants, "ENABLE_RAY_CLUSTER", True)  # a head elsewhere: as it was
    monkeypatch.delenv(LOOPBACK_SETTING)
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.5:6379")
    assert head_of("auto") == "10.0.0.5:6379"
    assert (constants.ENABLE_RAY_CLUSTER, os.environ.get(LOOPBACK_SETTING)) == (True, None)


def test_auto_with_no_cluster_to_find_says_so(no_ray_yet, monkeypatch):
    import ray._private.services as services

    from pdbtool.cluster.driver import Cluster
    from pdbtool.cluster.messages import ClusterError

    monkeypatch.setattr(services, "find_gcs_addresses", set)  # (this machine's other Rays)
    with pytest.raises(ClusterError, match=r"--cluster auto: no Ray cluster found \(RAY_ADDRESS "
                                           r"is not set, .*`ray start --head`\): give the head's "
                                           r"HOST:PORT, or use --cluster local"):
        Cluster("auto")
    assert no_ray_yet == []


def test_a_probe_that_timed_out_is_tried_again_one_refused_is_final(monkeypatch):
    """One probe of the head that timed out (2 s: a loaded head, or network) marked the
    cluster lost until a restart. A timeout is tried again (three probes in all); a
    connection refused is final at once: nothing listens there, and a head that takes the
    next connection is a restarted one, which Ray must never be asked about."""
    from types import SimpleNamespace

    from pdbtool.cluster import driver
    from pdbtool.cluster.messages import ClusterError, PROBE_TRIES

    outcomes, probes = [], []

    def connect(where, timeout):
        probes.append(where)
        outcome = outcomes.pop(0)
        if outcome is not None:
            raise outcome
        return SimpleNamespace(close=lambda: None)

    monkeypatch.setattr(driver, "socket", SimpleNamespace(create_connection=connect))
    monkeypatch.setattr(driver, "PROBE_PAUSE", 0.0, raising=False)  # (none before)

    def cluster():
        c = object.__new__(driver.Cluster)
        c.address = c.head = "10.0.0.5:6379"
        c.lost, c.said = None, []
        c.notify = c.said.append
        return c

    timeout = TimeoutError("timed out")
    c = cluster()
    for answers in ([timeout, None], [timeout] * (PROBE_TRIES - 1) + [None], [None]):
        outcomes[:], probes[:] = answers, []
        c.reachable()
        assert len(probes) == len(answers) and c.lost is None and not c.said
    outcomes[:], probes[:] = [timeout, ConnectionRefusedError(111, "Connection refused"), None], []
    with pytest.raises(ClusterError, match=r"head at 10.0.0.5:6379 was lost at .* "
                                           r"\(Connection refused\)"):
        c.reachable()
    assert len(probes) == 2 and c.said == [c.lost]  # the accepting head: never probed
    with pytest.raises(ClusterError, match="was lost at"):
        c.reachable()
    assert len(probes) == 2
    c = cluster()
    outcomes[:], probes[:] = [timeout] * PROBE_TRIES, []
    with pytest.raises(ClusterError, match=rf"\(timed out {PROBE_TRIES} times in a row, 2 s "
                                           r"each\); Ray cannot take"):
        c.reachable()
    assert len(probes) == PROBE_TRIES and c.said == [c.lost]


def test_an_address_where_something_else_answers_is_refused_in_seconds(monkeypatch):
    """A mistyped port where a web server listens (Ray's dashboard, 8265): the TCP probe
    passed and ray.init waited for a GCS there for minutes (331 s and counting), deaf to
    SIGTERM. The head must answer gRPC: a web server does not, a gRPC server does."""
    import http.server
    from concurrent import futures

    import grpc

    from pdbtool.cluster import messages
    from pdbtool.cluster.messages import ClusterError

    monkeypatch.setattr(messages, "CONNECT_SECONDS", 3.0)
    web = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    threading.Thread(target=web.serve_forever, daemon=True).start()
    head = grpc.server(futures.ThreadPoolExecutor(1))
    port = head.add_insecure_port("127.0.0.1:0")
    head.start()
    try:
        address = f"127.0.0.1:{web.server_address[1]}"
        t = time.monotonic()
        with pytest.raises(ClusterError, match=rf"^{address} answers, but not as a Ray head: "
                                               r"no gRPC there within 3 s"):
            messages.reach(address)
        assert time.monotonic() - t < 30
        messages.reach(f"127.0.0.1:{port}")  # a gRPC server: taken (Ray's GCS is one)
    finally:
        web.shutdown()
        head.stop(None)


STOPPED_IN_INIT = """
import signal, sys
import ray
from pdbtool.cluster import driver
shut = []
def init(**kw):  # as ray.init's own SIGTERM handler does (sys.exit), or a Ctrl-C
    raise SystemExit(15) if sys.argv[1] == "term" else KeyboardInterrupt()
ray.init, ray.shutdown = init, lambda: shut.append(1)
class Stopped(BaseException): pass
def handler(signum, frame): raise Stopped()
signal.signal(signal.SIGTERM, handler)
try:
    driver.Cluster("local")
except BaseException as e:
    print(type(e).__name__, shut, signal.getsignal(signal.SIGTERM) is handler)
"""


@pytest.mark.parametrize("stop, seen", [("term", "Stopped [1] True"),
                                        ("int", "KeyboardInterrupt [1] True")])
def test_a_stop_while_ray_starts_shuts_down_what_it_started(stop, seen):
    """SIGTERM 6-12 s into `--cluster local` (Ray starting) exited 15 with no word, Ray's
    handler's sys.exit, and a Ctrl-C then left Ray's agents running and its session in
    /tmp/ray: neither went through Cluster.close. Now what started is shut down, and a
    SIGTERM reaches the process's own handler (the command's: exit 143, one line)."""
    p = run("-c", STOPPED_IN_INIT, stop, timeout=120)
    assert p.stdout.strip() == seen, p.stderr
