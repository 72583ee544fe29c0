"""pdbd and its table files (issue 13): a served file that changes is refused, never read
(no wrong answer, no SIGBUS); SIGHUP reloads safely; tables are kept in memory; TLS."""

import os
import shutil
import signal
import subprocess
import time

import grpc
import pytest

from pdbd.client import ClientTls, ServerUnavailable, SolverClient
from pdbd.listening import ListenError, Tls, check_exposure
from pdbd.server import Daemon
from pdbd.v1 import solver_pb2 as pb
from pdbd.wire import SERVICE_NAME
from pdbtool.errors import BadInput
from pdbtool.selection import load_directory
from pdbtool.tables import artifact, residency, trust
from reference import flip_byte, free_port
from serving import (EASY8, EASY15, HARDEST, Drained, change_under, channel_stub, pdbd_process,
                     running_daemon, table_fds, table_mappings, wait_for)


def serving_copy(art_dir, tmp_path, *names):
    """A directory of stamped copies of the built artifacts."""
    d = tmp_path / "served"
    d.mkdir()
    for name in names:
        shutil.copy(art_dir / name, d / name)
        trust.record(artifact.read_meta(d / name))
    return d


def start(directory, *extra):
    port = free_port()
    proc = pdbd_process("serve", "--artifacts", str(directory), "--listen", f"127.0.0.1:{port}",
                        "--threads", "1", *extra)
    client = SolverClient(f"127.0.0.1:{port}")
    try:
        client.wait_serving(60)
    except ServerUnavailable:
        proc.kill()
        raise AssertionError(proc.communicate()[1])
    return proc, client


def stop(proc, client) -> str:
    client.close()
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    return err


# -- 4. a served table cannot change under the server --------------------------------------

@pytest.mark.process
def test_a_changed_table_is_refused_and_sighup_reloads(art_dir, tmp_path):
    d = serving_copy(art_dir, tmp_path, "8-full.h5")
    served = d / "8-full.h5"
    proc, client = start(d)
    log = Drained(proc)  # read as it comes: the refused reload is waited for below
    try:
        assert client.solve(EASY8).length == 2
        os.truncate(served, served.stat().st_size // 2)  # killed pdbd with SIGBUS before
        with pytest.raises(ServerUnavailable, match="refused: table file 8-full.h5 changed"):
            client.solve(EASY8)
        assert str(d) not in str(client.info())  # names, never the server's paths
        # Alive, but the solver service out of rotation: every search would be refused
        # (it said SERVING), and Info says which table and why.
        assert client.health() == "SERVING" and proc.poll() is None
        assert wait_for(lambda: client.health(SERVICE_NAME) == "NOT_SERVING", 10)
        # Refused at once; whether the file is changed for good is decided after the writer
        # closes it (a lease's recovery) or at once (the check before a search): waited for,
        # since old bytes written back before that decision serve again, rightly.
        decided = ("content changed", "truncated")
        assert wait_for(lambda: any(w in (client.info()["artifacts"][0]["refused"] or "")
                                    for w in decided), 30), client.info()
        # Its old bytes written back in place: still refused (a table found changed stays
        # refused until a reload, whatever it holds meanwhile; a rewrite in place of a file
        # not yet refused: test_table_identity.py).
        data = bytearray(open(art_dir / "8-full.h5", "rb").read())
        with open(served, "r+b") as f:
            f.write(bytes(data))
        with pytest.raises(ServerUnavailable, match="changed on disk"):
            client.solve(EASY8)
        # A reload refused meanwhile says the refused table stays refused (it said every
        # table loaded before was still served)
        (d / "bad.h5").write_bytes(b"not an artifact")
        proc.send_signal(signal.SIGHUP)
        assert wait_for(lambda: any("reload refused" in line for line in log.lines), 30)
        assert any(f"(of which {served} stays refused: changed on disk)" in line
                   for line in log.lines), log.lines
        (d / "bad.h5").unlink()
        # The way to roll out: a new file under another name, renamed over, then SIGHUP.
        shutil.copy(art_dir / "8-full.h5", d / "new.tmp")
        os.replace(d / "new.tmp", served)
        proc.send_signal(signal.SIGHUP)
        # the reload itself, not answers (which may come back before it: the rewrite held the
        # same bytes); a second SIGHUP sent before it is handled would make one reload of both
        assert wait_for(lambda: any("reloaded" in line for line in log.lines), 30), log.lines
        assert client.solve(EASY8).length == 2
        assert client.health(SERVICE_NAME) == "SERVING"
        assert client.info()["artifacts"][0]["refused"] is None
        # A reload that fails verification keeps the tables loaded before.
        refusals = sum("reload refused" in line for line in log.lines)
        (d / "15-5-5-5.h5").write_bytes(b"not an artifact")
        proc.send_signal(signal.SIGHUP)
        assert wait_for(lambda: sum("reload refused" in line for line in log.lines) > refusals, 30)
        assert client.solve(EASY8).length == 2
        # One flipped bit in the attributes' heap sent HDF5 into an endless loop (another
        # such bit crashed it), and pdbd with it on a reload: the seal refuses the file first.
        shutil.copy(art_dir / "15-5-5-5.h5", d / "15-5-5-5.h5")
        flip_byte(d / "15-5-5-5.h5", (d / "15-5-5-5.h5").read_bytes().index(b"GCOL") + 24)
        proc.send_signal(signal.SIGHUP)
        assert wait_for(lambda: any("do not match its seal" in line for line in log.lines), 30)
        assert client.solve(EASY8).length == 2 and client.health() == "SERVING"
    finally:
        client.close()
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        proc.wait(30)
        err = log.text()
    assert "changed on disk" in err and "reload refused" in err and "reloaded" in err
    assert "Traceback" not in err and proc.returncode == 0


def _answers(client, board=EASY8) -> bool:
    try:
        return client.solve(board).length == 2
    except ServerUnavailable:
        return False


@pytest.mark.process
@pytest.mark.parametrize("how", ["truncate", "copy over"])
def test_a_table_changed_during_a_search_ends_the_search_not_the_daemon(art_dir, tmp_path, how):
    """Truncating a mapped file faulted the next table read with SIGBUS: pdbd died. With a
    read lease the daemon hears of the writer first, drops the mapping, stops the search."""
    d = serving_copy(art_dir, tmp_path, "15-5-5-5.h5")
    served = d / "15-5-5-5.h5"
    proc, client = start(d, "--no-prefault")
    try:
        with channel_stub(client.address) as stub:
            search = stub.Solve.future(pb.SolveRequest(tiles=HARDEST))
            assert wait_for(lambda: client.info()["counters"]["running"] == 1, 30)
            time.sleep(0.3)  # well into the search, which takes minutes
            change_under(served, how, art_dir / "8-full.h5")
            error = search.exception(timeout=20)
        assert proc.poll() is None, proc.communicate()[1]
        assert error is not None and error.code() == grpc.StatusCode.UNAVAILABLE
        assert "15-5-5-5.h5 changed on disk" in error.details()
        assert "opened for writing by another process" in error.details()
        assert client.health() == "SERVING"
        with pytest.raises(ServerUnavailable, match="refusing to answer"):
            client.solve(EASY15)
        # Rolled out the safe way: refused until a verified reload.
        shutil.copy(art_dir / "15-5-5-5.h5", d / "new.tmp")
        os.replace(d / "new.tmp", served)
        proc.send_signal(signal.SIGHUP)
        assert wait_for(lambda: _answers(client, EASY15), 60)
    finally:
        err = stop(proc, client)
    assert "opened for writing while in use" in err and "1 search(es) on it stopped" in err
    assert "Fatal Python error" not in err and "Traceback" not in err and proc.returncode == 0


@pytest.mark.process
def test_reload_lets_running_searches_finish_on_the_old_tables(art_dir, tmp_path, caplog):
    from pdbtool.search.control import SearchControl

    d = serving_copy(art_dir, tmp_path, "8-full.h5")
    daemon = running_daemon(load_directory(d), threads=1, prefault=False)
    try:
        old = daemon.servicer.served
        assert old.hold()  # as a search admitted before the reload holds them
        with caplog.at_level("INFO", logger="pdbd"):
            daemon.reload(load_directory(art_dir))
        assert daemon.servicer.served is not old
        assert daemon.servicer.tables.shapes == [(3, 3), (4, 4)]
        # The old solver still answers from its mapping (a job that held it would).
        r = old.solvers[3, 3].solve(EASY8, control=SearchControl())
        assert r.length == 2
        fds = table_fds(d)
        assert fds >= 1 and table_mappings(d) >= 1  # the old file: open and mapped
        assert not any("released the tables" in rec.getMessage() for rec in caplog.records)
        with caplog.at_level("INFO", logger="pdbd"):
            old.leave()  # its last search ended: unmapped and closed
        assert table_mappings(d) == 0 and table_fds(d) < fds  # (what Python's mmap object
        # holds, a duplicate, goes with the object, which the test still holds)
        assert any(rec.getMessage() == "released the tables replaced by a reload: 8-full.h5"
                   for rec in caplog.records)
    finally:
        daemon.stop(grace=1)


def test_a_reload_that_serves_a_size_no_more_says_so(art_dir, tmp_path, caplog):
    from pdbd.server import reload_tables

    d = serving_copy(art_dir, tmp_path, "8-full.h5", "15-5-5-5.h5")
    daemon = running_daemon(load_directory(d), threads=1)
    try:
        (d / "15-5-5-5.h5").unlink()
        reload_tables(daemon, d)
        assert daemon.servicer.tables.shapes == [(3, 3)]
        assert "reloaded without a table for 4x4 boards, served before: they are refused " \
               "from now on" in caplog.text
    finally:
        daemon.stop(grace=1)


# -- 9. tables stay resident ---------------------------------------------------------------

def test_prefault_brings_evicted_pages_back(art_dir, tmp_path):
    path = tmp_path / "15-5-5-5.h5"
    shutil.copy(art_dir / "15-5-5-5.h5", path)
    fd = os.open(path, os.O_RDONLY)
    os.fsync(fd)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)  # drop the clean pages
    os.close(fd)
    meta = artifact.read_meta(path)
    data = artifact.map_tables(meta)
    assert residency.resident_bytes(data) < data.nbytes
    residency.prefault(data)
    assert residency.resident_bytes(data) == data.nbytes
    residency.lock(data)  # root or a large enough memlock limit in the test environment


@pytest.mark.process
def test_info_reports_residency(art_dir):
    daemon = running_daemon(load_directory(art_dir), threads=1, mlock=True)
    try:
        with SolverClient(daemon.address) as client:
            def resident():  # both artifacts listed (all() of none would be True), in memory
                listed = client.info()["artifacts"]
                return len(listed) == 2 and all(a["resident_bytes"] == a["bytes"] > 0
                                                for a in listed)
            assert wait_for(resident, 10)
            assert [a["locked"] for a in client.info()["artifacts"]] == [True, True]
    finally:
        daemon.stop(grace=1)


# -- 8. transport security -----------------------------------------------------------------
# (the certificates: the pki fixture of conftest.py, shared with test_web_operator.py)

@pytest.mark.process
def test_tls_and_mutual_tls(art_dir, pki):
    tables = load_directory(art_dir)
    daemon = running_daemon(tables, threads=1, tls=Tls(pki / "server.pem", pki / "server.key"))
    try:
        with SolverClient(daemon.address, tls=ClientTls(str(pki / "ca.pem"))) as client:
            assert client.solve(EASY8).length == 2
        with SolverClient(daemon.address) as plain, pytest.raises(ServerUnavailable) as e:
            plain.solve(EASY8, deadline=5)
        assert "give --tls-ca" in str(e.value), e.value  # the hint for a plaintext call
    finally:
        daemon.stop(grace=1)
    daemon = running_daemon(tables, threads=1, tls=Tls(pki / "server.pem", pki / "server.key",
                                                       pki / "ca.pem"))
    try:
        anonymous = ClientTls(str(pki / "ca.pem"))
        with SolverClient(daemon.address, tls=anonymous) as client, \
                pytest.raises(ServerUnavailable) as e:
            client.health(timeout=2)
        # not the plaintext call's hint: this client gave --tls-ca, it lacks a certificate
        assert "give --tls-cert and --tls-key" in str(e.value), e.value
        assert "give --tls-ca" not in str(e.value)
        known = ClientTls(str(pki / "ca.pem"), str(pki / "client.pem"), str(pki / "client.key"))
        with SolverClient(daemon.address, tls=known) as client:
            assert client.solve(EASY8).length == 2
    finally:
        daemon.stop(grace=1)


def test_pem_files_that_openssl_cannot_use_are_named(art_dir, pki, tmp_path):
    """A key that is not the certificate's, or a CA file with no certificate in it, is
    named before gRPC sees it: the server's bind failed ("cannot listen"), a client's
    handshake failed ("Failed to create security handshaker"), neither naming the file."""
    tables = load_directory(art_dir)
    not_pem = tmp_path / "ca.txt"
    not_pem.write_text("not a certificate\n")
    empty = tmp_path / "empty.key"
    empty.write_text("")

    def server(cert, key):
        return lambda: running_daemon(tables, threads=1, tls=Tls(cert, key))

    def client(*files):
        return lambda: SolverClient("127.0.0.1:1", tls=ClientTls(*map(str, files)))

    for make, says in (
            (server(pki / "server.pem", pki / "client.key"),
             r"cannot use the certificate .*server\.pem with the key .*client\.key: "
             r"KEY_VALUES_MISMATCH"),
            (client(not_pem), r"cannot use the CA certificates .*ca\.txt: .*ca\.txt holds no "
                              r"certificate"),
            (client(pki / "ca.pem", pki / "client.pem", pki / "server.key"),
             r"cannot use the certificate .*client\.pem with the key .*server\.key"),
            # A key given as the certificate, or an empty file: OpenSSL said only "PEM lib".
            (server(pki / "server.key", pki / "server.key"),
             r"cannot use the certificate .*server\.key with the key .*server\.key: "
             r".*server\.key holds no certificate"),
            (server(pki / "server.pem", empty), r"empty\.key holds no private key")):
        with pytest.raises(BadInput, match=says):
            make()


@pytest.mark.process
def test_query_command_speaks_tls(art_dir, pki, capsys):
    from pdbd import cli

    daemon = running_daemon(load_directory(art_dir), threads=1,
                            tls=Tls(pki / "server.pem", pki / "server.key"))
    try:
        code = cli.main(["query", "--server", daemon.address, "--tls-ca", str(pki / "ca.pem"),
                         *map(str, EASY8)])
        assert code == 0 and "length 2" in capsys.readouterr().out
    finally:
        daemon.stop(grace=1)


@pytest.mark.process
def test_a_certificate_the_client_cannot_accept_is_said_why(art_dir, pki, capsys, tmp_path):
    """Only gRPC's words were given ("Hostname Verification Check failed",
    "CERTIFICATE_VERIFY_FAILED"), not what to change."""
    from pdbd import cli

    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                    tmp_path / "other.key", "-out", tmp_path / "other.pem", "-days", "2",
                    "-subj", "/CN=another CA"], check=True, capture_output=True)
    daemon = running_daemon(load_directory(art_dir), threads=1,
                            tls=Tls(pki / "server.pem", pki / "server.key"))
    try:
        for ca, name, said in ((pki / "ca.pem", "wrong.example",
                                "does not carry the name connected to, or given by "
                                "--tls-server-name"),
                               (tmp_path / "other.pem", None,
                                "is not signed by a CA of --tls-ca")):
            code = cli.main(["query", "--server", daemon.address, "--tls-ca", str(ca),
                             *(["--tls-server-name", name] if name else []), *map(str, EASY8)])
            assert code == 1 and said in capsys.readouterr().err
    finally:
        daemon.stop(grace=1)


class _Failed(grpc.RpcError):
    """A channel's failure as gRPC reports it: UNAVAILABLE with its details."""

    def __init__(self, details):
        self._details = details

    def code(self):
        return grpc.StatusCode.UNAVAILABLE

    def details(self):
        return self._details

    def trailing_metadata(self):
        return ()


@pytest.mark.parametrize("details, tls, says", [
    ("...: CERTIFICATE_VERIFY_FAILED: certificate has expired", True, "out of its dates"),
    ("...: CERTIFICATE_VERIFY_FAILED: unable to get local issuer certificate", True,
     "not signed by a CA of --tls-ca"),
    ("Stream removed (Socket closed)", True, "the daemon stopped, or it requires client"),
    ("Stream removed (Socket closed)", False, "the daemon stopped, or it serves TLS"),
    ("failed to connect to all addresses; last error: UNKNOWN: ipv4:127.0.0.1:1: Ssl handshake "
     "failed (TSI_PROTOCOL_FAILURE): SSL_ERROR_SSL: error:100000f7:SSL "
     "routines:OPENSSL_internal:WRONG_VERSION_NUMBER: Invalid certificate verification "
     "context: OK", True, "the server did not answer TLS: it may serve plaintext"),
    ("failed to connect to all addresses; last error: UNKNOWN: ipv4:127.0.0.1:1: Failed "
     "parsing HTTP/2 (Expected SETTINGS frame as the first frame, got frame type 79)", False,
     "does not speak gRPC: an HTTP server, perhaps pdbd's --metrics")])
def test_each_tls_failure_gets_its_own_hint(details, tls, says):
    """An expired certificate was said not to be signed by the CA; a TLS daemon that
    stopped mid-call was said to require client certificates; a TLS call to a plaintext
    daemon, or a call to an HTTP port, got gRPC's words alone."""
    from pdbd.client import translate

    assert says in str(translate(_Failed(details), "127.0.0.1:1", tls=tls))


@pytest.mark.parametrize("details", ["Deadline Exceeded", "Stream removed (Deadline Exceeded)"])
def test_a_deadline_the_channel_ended_is_said_once(details):
    """`pdbd query --stream --deadline 4` said "deadline exceeded: Stream removed (Deadline
    Exceeded) (the search was stopped; ...)": gRPC's words for a stream, said twice."""
    from pdbd.client import translate

    class Expired(_Failed):
        def code(self):
            return grpc.StatusCode.DEADLINE_EXCEEDED

    assert str(translate(Expired(details), "127.0.0.1:1")).startswith(
        "deadline exceeded (the search was stopped; give a longer deadline")
    # a streamed call is not told to stream its progress
    assert "stream its progress" in str(translate(Expired(details), "127.0.0.1:1"))
    assert str(translate(Expired(details), "127.0.0.1:1", streamed=True)) == (
        "deadline exceeded (the search was stopped; give a longer deadline)")


def test_beyond_loopback_needs_tls_or_insecure(art_dir):
    for listen in ("0.0.0.0:0", "[::]:0", "192.0.2.1:50051", "example.org:50051"):
        with pytest.raises(ListenError, match="without TLS"):
            check_exposure(listen, None, insecure=False)
        check_exposure(listen, None, insecure=True)
        check_exposure(listen, Tls("c", "k"), insecure=False)
    for listen in ("127.0.0.1:0", "localhost:50051", "[::1]:0", "127.0.0.2:1"):
        check_exposure(listen, None, insecure=False)
    with pytest.raises(BadInput, match="port"):
        check_exposure("127.0.0.1:99999", None, insecure=False)
    with pytest.raises(ListenError, match="without TLS"):  # (TEST-NET: never bound here)
        Daemon(load_directory(art_dir), "192.0.2.7:0", threads=1, warm=False)


def test_a_table_a_stronger_one_outserves_is_loaded_but_not_served_nor_read_in(
        art_dir, tmp_path, monkeypatch):
    """Beside the zero-aware 8/full, one kept per placement (min over the blank) is checked
    and listed, serves nothing, and pdbd does not read it into memory (the operator audit
    found every table of --artifacts read in, serving or not)."""
    from pathlib import Path

    from pdbd import warming
    from pdbtool.tables.builder import build

    shutil.copy(art_dir / "8-full.h5", tmp_path / "8-full.h5")
    build("8/full", tmp_path, zero_aware=False, progress=False)
    tables = load_directory(tmp_path)
    assert sorted(Path(t.meta.path).name for t in tables.loaded) == ["8-full-min.h5", "8-full.h5"]
    assert [Path(t.meta.path).name for t in tables.serving] == ["8-full.h5"]
    read_in = []
    monkeypatch.setattr(residency, "prefault", lambda data, stop=None: read_in.append(data))
    warming.prefault_tables(tables)
    assert len(read_in) == 1 and read_in[0] is tables.serving[0].data
