"""Addresses pdbd listens on and dials (pdbd.address): host:port, [v6]:port, unix:PATH
(a socket only its owner may use), dns:///host:port; clear errors for anything else."""

import os
import socket
import stat

import pytest

from pdbd.address import parse_target
from pdbd.client import SolverClient
from pdbd.server import Daemon, ListenError
from pdbtool.errors import BadInput
from pdbtool.heuristics.table_free import table_free
from pdbtool.selection import TableSet
from serving import EASY15


@pytest.mark.parametrize("text, kind, where", [
    ("127.0.0.1:50051", "tcp", ("127.0.0.1", 50051)),
    ("[::1]:0", "tcp", ("::1", 0)),
    ("localhost:7", "tcp", ("localhost", 7)),
    ("unix:/run/pdbd.sock", "unix", "/run/pdbd.sock"),
    ("unix:///run/pdbd.sock", "unix", "/run/pdbd.sock"),
    ("unix:pdbd.sock", "unix", "pdbd.sock"),
])
def test_what_a_server_listens_on(text, kind, where):
    t = parse_target(text, "--listen")
    assert t.kind == kind and t.text == text
    assert (t.path if kind == "unix" else tuple(t.address)) == where
    assert t.loopback


@pytest.mark.parametrize("text, where", [
    ("dns:///localhost:50051", ("localhost", 50051)),
    ("dns://8.8.8.8:53/pdbd.example:50051", ("pdbd.example", 50051)),
    ("dns://[2001:4860:4860::8888]:53/pdbd.example:50051", ("pdbd.example", 50051)),
    ("dns:pdbd.example", ("pdbd.example", 443)),
    ("ipv4:127.0.0.1:1", ("127.0.0.1", 1)),
    ("ipv6:[::1]:1", ("::1", 1)),
])
def test_what_a_client_dials(text, where):
    assert tuple(parse_target(text, "--server", dial=True).address) == where


@pytest.mark.parametrize("text, dial, message", [
    ("::1:50051", False, "put an IPv6 address in brackets"),
    ("unix:", False, "give the socket's path"),
    ("unix:/tmp/" + "x" * 120, False, "a unix socket's path has at most 107 bytes"),
    ("unix:///tmp/" + "x" * 120, True, "a unix socket's path has at most 107 bytes"),
    ("dns:///localhost:50051", False, "not on a dns: target"),
    ("ipv4:127.0.0.1:1", False, "not on a ipv4: target"),
    ("xds:///pdbd", True, "unknown scheme xds:"),
    ("localhost", False, "expected HOST:PORT, [IPv6]:PORT or unix:PATH"),
    ("a:b:c", True, "expected HOST:PORT, [IPv6]:PORT, unix:PATH or dns:///HOST:PORT"),
    ("host:99999", True, "the port must be a number"),
    ("dns://resolver", True, "expected dns:///HOST:PORT"),
    # gRPC refuses a resolver without its port ("Cannot parse authority"), late and unnamed
    ("dns://8.8.8.8/pdbd.example:50051", True, "give the DNS resolver's port too, e.g. "
                                               "dns://8.8.8.8:53/pdbd.example:50051"),
])
def test_anything_else_is_refused_clearly(text, dial, message):
    with pytest.raises(BadInput, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_target(text, "--listen", dial=dial)
    assert "brackets" not in message or dial is False  # no IPv6 hint for unix: or dns:


@pytest.mark.process
def test_a_unix_socket_is_owner_only_and_answers(tmp_path):
    path = tmp_path / "pdbd.sock"
    tables = TableSet({4: table_free("manhattan", 4)})
    daemon = Daemon(tables, f"unix:{path}", threads=1, max_queue=1, warm=False)
    daemon.start()
    try:
        assert daemon.address == f"unix:{path}"
        assert stat.S_ISSOCK(path.stat().st_mode) and stat.S_IMODE(path.stat().st_mode) == 0o600
        for target in (f"unix:{path}", f"unix://{path}"):
            with SolverClient(target) as c:
                assert c.solve(EASY15).length == 2
        with pytest.raises(ListenError, match="address already in use"):
            Daemon(tables, f"unix:{path}", threads=1, max_queue=1, warm=False)
    finally:
        daemon.stop(grace=1)
    assert not path.exists()  # removed at stop
    path.write_text("not a socket")
    with pytest.raises(ListenError, match="exists and is not a socket"):
        Daemon(tables, f"unix:{path}", threads=1, max_queue=1, warm=False)
    path.unlink()
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(str(path))  # a socket nobody listens on (a daemon that died): replaced
    stale.close()
    daemon = Daemon(tables, f"unix:{path}", threads=1, max_queue=1, warm=False)
    daemon.start()
    try:
        with SolverClient(f"unix:{path}") as c:
            assert c.solve(EASY15).length == 2
    finally:
        daemon.stop(grace=1)


@pytest.mark.process
def test_tcp_targets_and_dns(tmp_path):
    tables = TableSet({4: table_free("manhattan", 4)})
    daemon = Daemon(tables, "127.0.0.1:0", threads=1, max_queue=1, warm=False)
    daemon.start()
    try:
        port = daemon.address.rsplit(":", 1)[1]
        for target in (f"dns:///localhost:{port}", f"ipv4:127.0.0.1:{port}"):
            with SolverClient(target) as c:
                assert c.solve(EASY15).length == 2, target
    finally:
        daemon.stop(grace=1)


@pytest.mark.process
def test_an_ipv6_loopback_address():
    if not socket.has_ipv6 or not os.path.exists("/proc/net/if_inet6"):
        pytest.skip("no IPv6 on this machine (the parser tests above still ran)")
    tables = TableSet({4: table_free("manhattan", 4)})
    daemon = Daemon(tables, "[::1]:0", threads=1, max_queue=1, warm=False)
    daemon.start()
    try:
        assert daemon.address.startswith("[::1]:")
        with SolverClient(daemon.address) as c:
            assert c.solve(EASY15).length == 2
    finally:
        daemon.stop(grace=1)
