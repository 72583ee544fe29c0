"""`pdbd web` in front of a daemon as an operator runs it: TLS to the daemon, HTTPS to the
browser, and per-client fairness through it (--trusted-proxy and the pdbd-client metadata)."""

import logging
import ssl

import grpc
import httpx
import pytest

from pdbd.client import ClientTls
from pdbd.listening import Tls
from pdbd.server import Daemon
from pdbd.peers import TrustedProxies
from pdbd.servicer import Limits
from pdbd.v1 import solver_pb2 as pb
from pdbd.web import WebServer
from pdbtool.heuristics.table_free import table_free
from pdbtool.selection import TableSet, load_directory
from serving import EASY8, HARD, channel_stub, info, running_web, wait_for

pytestmark = pytest.mark.process


def manhattan(**options):
    daemon = Daemon(TableSet({4: table_free("manhattan", 4)}), "127.0.0.1:0", threads=2,
                    max_queue=2, limits=Limits(per_client=1), **options)
    daemon.start()
    return daemon


def test_web_speaks_tls_to_the_daemon_and_https_to_the_browser(art_dir, pki):
    daemon = Daemon(load_directory(art_dir), "127.0.0.1:0", threads=1,
                    tls=Tls(pki / "server.pem", pki / "server.key", pki / "ca.pem"))
    daemon.start()
    tls = ClientTls(str(pki / "ca.pem"), str(pki / "client.pem"), str(pki / "client.key"))
    web = WebServer("127.0.0.1:0", daemon.address, tls=tls,
                    https=(str(pki / "server.pem"), str(pki / "server.key"))).start()
    try:
        assert web.url.startswith("https://127.0.0.1:")
        trust = ssl.create_default_context(cafile=str(pki / "ca.pem"))
        r = httpx.post(web.url + "api/solve", json={"board": list(EASY8)}, verify=trust,
                       timeout=30)
        assert r.status_code == 200 and r.json()["length"] == 2, r.text
    finally:
        web.stop()
        daemon.stop(grace=1)


def test_a_trusted_proxy_names_its_clients_and_no_one_else_can():
    hard = pb.SolveRequest(tiles=HARD, goal="blank-first")

    def as_client(stub, name):
        return stub.Solve.future(hard, timeout=60, metadata=(("pdbd-client", name),))

    for trusted in (True, False):
        daemon = manhattan(proxies=TrustedProxies(["127.0.0.0/8"] if trusted else ["10.0.0.0/8"]))
        try:
            with channel_stub(daemon.address) as stub:
                a = as_client(stub, "a")
                assert wait_for(lambda: info(daemon)["counters"]["running"] == 1, 5)
                b = as_client(stub, "b")  # another client behind the proxy: its own limit
                if trusted:
                    assert wait_for(lambda: info(daemon)["counters"]["running"] == 2, 5)
                    calls = [a, b, as_client(stub, "a")]  # a's second: beyond its limit
                else:
                    calls = [a, b]  # the metadata ignored: one client, b beyond its limit
                with pytest.raises(grpc.RpcError) as e:
                    calls[-1].result()
                assert e.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
                assert ("pdbd-limit", "per-client") in e.value.trailing_metadata()
                for call in calls:
                    call.cancel()
                assert wait_for(lambda: info(daemon)["counters"]["running"] == 0, 5)
        finally:
            daemon.stop(grace=1)


def test_web_names_the_client_it_calls_for(caplog):
    daemon = manhattan(proxies=TrustedProxies(["127.0.0.1"]))
    try:
        with running_web(daemon.address) as url, caplog.at_level(logging.INFO, logger="pdbd"):
            board = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 0, 14, 15]
            r = httpx.post(url + "api/solve", json={"board": board}, timeout=30)
            assert r.status_code == 200 and r.json()["length"] == 2
        solves = [rec for rec in caplog.records if rec.getMessage().startswith("solve 4x4")]
        assert [rec.client for rec in solves] == ["ipv4:127.0.0.1 for 127.0.0.1"]
    finally:
        daemon.stop(grace=1)


def test_the_daemons_limit_per_browser_is_429_through_the_web():
    """A browser beyond the daemon's --max-per-client (counted by the name pdbd web gives it)
    gets 429, as beyond the page's own limit, not 503, which says the service is down."""
    import threading

    daemon = manhattan(proxies=TrustedProxies(["127.0.0.1"]))
    try:
        with running_web(daemon.address) as url:
            first = {}

            def solve_hard():  # an hour or more on one thread: ended by the daemon's stop
                first["r"] = httpx.post(url + "api/solve", timeout=60,
                                        json={"board": list(HARD), "goal": "blank-first"})

            t = threading.Thread(target=solve_hard)
            t.start()
            assert wait_for(lambda: info(daemon)["counters"]["running"] == 1, 10)
            easy = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 0, 14, 15]
            r = httpx.post(url + "api/solve", json={"board": easy}, timeout=30)
            assert r.status_code == 429, r.text
            assert "searches in flight" in r.json()["error"]
            daemon.stop(grace=1)
            t.join(30)
            assert not t.is_alive()
    finally:
        daemon.stop(grace=1)


def test_trusted_proxy_is_checked():
    from pdbtool.errors import BadInput

    assert TrustedProxies(["10.0.0.0/8", "::1", "unix"]).trusts("ipv6:%5B::1%5D:5000")
    assert TrustedProxies(["unix"]).trusts("unix:/run/pdbd.sock")
    assert not TrustedProxies([]).trusts("ipv4:127.0.0.1:5")
    with pytest.raises(BadInput, match="--trusted-proxy 'proxy.example'"):
        TrustedProxies(["proxy.example"])
