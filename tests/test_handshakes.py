"""Failed TLS handshakes logged per peer at most once an interval (issue 40; pdbd/handshakes.py):
the core's trace sorted into failures and lines to pass on, and the throttle. The daemon
end to end is in tests/test_daemon_admission.py (a real TLS server, 50 plaintext clients)."""

import logging
import os
import threading
import time
from pathlib import Path

from pdbd.handshakes import (CoreError, Failure, Passing, Repeats, Throttle, Trace,
                             peer_host, read)

TRACE = Path(__file__).parent / "data" / "grpc-handshaker-trace.txt"
SSL_HTTP = ("UNKNOWN: Ssl handshake failed (TSI_PROTOCOL_FAILURE): SSL_ERROR_SSL: "
            "error:1000009c:SSL routines:OPENSSL_internal:HTTP_REQUEST: Invalid certificate "
            "verification context")


def sorted_trace(data: bytes, chunk: int) -> list:
    trace = Trace()
    items = []
    for i in range(0, len(data), chunk):
        items += trace.feed(data[i:i + chunk])
    return items + list(trace.flush())


def test_the_trace_gives_each_failed_handshake_with_its_peer_and_passes_the_rest():
    data = TRACE.read_bytes()
    expected = [
        b"----- ipv4 plaintext\n",
        Failure("127.0.0.1", SSL_HTTP),
        b"----- ipv4 TLS, one health check\n",  # a good handshake: nothing
        b"----- ipv6 plaintext\n",
        Failure("::1", SSL_HTTP),
        b"----- silent until the handshake timeout\n",
        Failure("::1", "UNAVAILABLE: Handshake read failed (Endpoint closing)"),
        b"----- closed at once\n",
        Failure("127.0.0.1", "UNAVAILABLE: Handshake read failed (Socket closed)"),
        b"----- pending at the server's stop\n",
        Failure("127.0.0.1", "UNAVAILABLE: Handshake read failed (Endpoint closing)"),
        b"----- end\n",
    ]
    for chunk in (len(data), 4096, 97, 1):  # however the pipe cuts it
        assert sorted_trace(data, chunk) == expected


def test_the_cores_errors_and_lines_not_its_own_pass_even_inside_a_record():
    info = b"I1126 06:47:39.917801    3081 channel_trace.h:396] handshake manager 0x7f:  calling\n"
    error = (b"E1126 06:47:40.000001    3081 chttp2_server.cc:12] something broke\n"
             b"=== Source Location Trace: === \n"
             b"src/core/util/status_helper.cc:68\n")
    crash = b"Fatal Python error: Segmentation fault\n\nThread 0x01 (most recent call first):\n"
    items = sorted_trace(info + crash + info + error + b"  File \"x.py\", line 1\n", 4096)
    # the blank line of the crash goes with the open record (a core record's own go on with
    # one); a core error goes out before a foreign line after it, in the order written
    assert items == [b"Fatal Python error: Segmentation fault\n",
                     b"Thread 0x01 (most recent call first):\n",
                     CoreError("chttp2_server.cc:12", "something broke"),
                     b"  File \"x.py\", line 1\n"]
    fatal = error.replace(b"E1126", b"F1126")
    assert sorted_trace(fatal + b"x\n", 4096) == [fatal, b"x\n"]  # passed on whole


def test_the_cores_errors_are_logged_once_a_place_an_interval_then_counted():
    """A client that asks a TLS server for a name its certificate does not carry made the
    core write an error line a connection, raw on the daemon's stderr (not in its log
    format, unthrottled): now one line a place in the core's source a minute."""
    r = Repeats(interval=60)
    sni = CoreError("ssl_transport_security.cc:3238", "No match found for server name: a")
    other = CoreError("chttp2_server.cc:12", "something broke")
    assert r.note(sni, 0) == ["gRPC: No match found for server name: a"]
    assert r.note(sni._replace(text="No match found for server name: b"), 1) == []
    assert r.note(sni, 2) == [] and r.note(other, 3) == ["gRPC: something broke"]
    assert r.due(59) == []
    assert r.due(61) == ["gRPC: 2 more like it from ssl_transport_security.cc:3238 in the "
                         "last 61 s: No match found for server name: a"]
    assert r.due(62, final=True) == []
    assert r.note(sni, 100) == []  # within the interval of the count's line
    assert r.due(101, final=True) == ["gRPC: 1 more like it from ssl_transport_security.cc:3238 "
                                      "in the last 40 s: No match found for server name: a"]


def test_the_reader_logs_the_cores_errors_in_the_daemons_log(caplog):
    line = (b"E1128 08:49:26.211841   19528 ssl_transport_security.cc:3238] No match found "
            b"for server name: bogus1.example\n")
    read_end, write_end = os.pipe()
    os.write(write_end, line * 20)
    os.close(write_end)
    with caplog.at_level(logging.ERROR, "pdbd.grpc"), \
            os.fdopen(read_end, "rb", buffering=0) as stream, open(os.devnull, "wb") as sink:
        read(stream, sink, Throttle(interval=60))
    assert [r.getMessage() for r in caplog.records if r.name == "pdbd.grpc"] == [
        "gRPC: No match found for server name: bogus1.example",
        "gRPC: 19 more like it from ssl_transport_security.cc:3238 in the last 0 s: No match "
        "found for server name: bogus1.example"]


def test_peer_addresses_lose_their_port():
    assert peer_host("ipv4:127.0.0.1:47106") == "127.0.0.1"
    assert peer_host("ipv6:%5B::1%5D:56302") == "::1"
    assert peer_host("ipv6:%5B2001:db8::7%5D:1") == "2001:db8::7"
    assert peer_host("unix:/run/pdbd.sock") == "unix:/run/pdbd.sock"


def test_one_line_a_peer_an_interval_then_the_count_held_back():
    t = Throttle(interval=60, burst=20)
    a, b = Failure("10.0.0.1", "bad"), Failure("10.0.0.2", "worse")
    assert t.note(a, 0) == ["TLS handshake from 10.0.0.1 failed: bad"]
    assert t.note(a, 1) == [] and t.note(a, 2) == []
    assert t.note(b, 3) == ["TLS handshake from 10.0.0.2 failed: worse"]  # its own budget
    assert t.due(59) == []
    assert t.due(60) == []  # looked at 59: the next look a quarter interval later
    assert t.due(75) == ["TLS handshakes from 10.0.0.1: 2 more failed in the last 75 s: bad"]
    assert t.due(200) == []  # said once; b held none back
    assert t.note(a, 210) == ["TLS handshake from 10.0.0.1 failed: bad"]
    assert t.note(a, 220) == []  # within the minute of its line
    assert t.due(220, final=True) == [
        "TLS handshakes from 10.0.0.1: 1 more failed in the last 10 s: bad"]
    assert t.note(b, 300) == ["TLS handshake from 10.0.0.2 failed: worse"]


def test_many_peers_are_held_to_a_burst_an_interval_and_a_bounded_memory():
    t = Throttle(interval=60, burst=5, max_peers=100)
    lines = []
    for i in range(300):
        lines += t.note(Failure(f"10.0.{i // 256}.{i % 256}", "bad"), i / 10)
    assert len(lines) == 5
    assert len(t._peers) == 100
    assert t.due(60) == ["295 more lines about failed TLS handshakes dropped in the last 60 s "
                         "(at most 5 a 60 s)"]


def test_the_reader_logs_failures_and_passes_the_rest_until_the_pipe_ends(caplog, tmp_path):
    read_end, write_end = os.pipe()
    data = TRACE.read_bytes()
    writer = threading.Thread(target=lambda: (os.write(write_end, data), os.close(write_end)))
    writer.start()
    out = tmp_path / "out"
    with caplog.at_level(logging.WARNING, "pdbd.tls"), open(out, "wb") as sink, \
            os.fdopen(read_end, "rb", buffering=0) as stream:
        read(stream, sink, Throttle(interval=60), clock=lambda: 100.0)  # one moment
    writer.join()
    assert out.read_bytes().count(b"-----") == 7 and b"handshaker" not in out.read_bytes()
    assert [r.getMessage() for r in caplog.records] == [
        f"TLS handshake from 127.0.0.1 failed: {SSL_HTTP}",
        f"TLS handshake from ::1 failed: {SSL_HTTP}",
        # at the pipe's end, what was held back (the peer logged first, first)
        "TLS handshakes from 127.0.0.1: 2 more failed in the last 0 s: "
        "UNAVAILABLE: Handshake read failed (Endpoint closing)",
        "TLS handshakes from ::1: 1 more failed in the last 0 s: "
        "UNAVAILABLE: Handshake read failed (Endpoint closing)",
    ]


def test_a_peer_whose_minute_ended_between_looks_is_counted_not_lost():
    t = Throttle(interval=60, burst=20)
    a = Failure("10.0.0.1", "bad")
    assert t.note(a, 0) == ["TLS handshake from 10.0.0.1 failed: bad"]
    assert t.note(a, 10) == []
    assert t.due(50) == []
    # at 61 its minute is over, but the next look is not due until 65: said with the line
    assert t.note(a, 61) == ["TLS handshake from 10.0.0.1 failed: bad "
                             "(1 more from it in the 61 s before)"]
    assert t.due(200) == [] and t.due(300, final=True) == []


def test_only_the_servers_failed_handshakes_count_and_the_early_time_format_is_the_cores():
    data = TRACE.read_bytes()
    failure = data[data.index(b"I1126 06:51:32.594674"):]
    failure = failure[:failure.index(b"\nI1126", 10) + 1]
    assert sorted_trace(failure, 4096) == [Failure("127.0.0.1", SSL_HTTP)]
    client_side = failure.replace(b"grpc.internal.server_credentials=",
                                  b"grpc.internal.channel_credentials=")
    assert sorted_trace(client_side, 4096) == []  # a daemon's own outgoing connection
    early = b"I0000 00:00:1772163580.568798    3081 handshaker.cc:80] adding handshaker\n"
    assert sorted_trace(early + b"x\n", 4096) == [b"x\n"]  # the core's, dropped


def test_a_line_without_end_is_passed_on_in_pieces():
    trace = Trace()
    out = list(trace.feed(b"y" * 70_000)) + list(trace.feed(b"z\n"))
    assert b"".join(out) == b"y" * 70_000 + b"z\n"


def test_the_reader_sorts_an_open_record_once_the_core_is_quiet(caplog):
    data = TRACE.read_bytes()
    failure = data[data.index(b"I1126 06:51:32.594674"):]
    failure = failure[:failure.index(b"\nI1126", 10) + 1]  # no core line after it
    read_end, write_end = os.pipe()
    os.write(write_end, failure)
    with caplog.at_level(logging.WARNING, "pdbd.tls"), \
            os.fdopen(read_end, "rb", buffering=0) as stream, open(os.devnull, "wb") as sink:
        reader = threading.Thread(target=read, args=(stream, sink, Throttle(interval=60)))
        reader.start()
        deadline = time.monotonic() + 10
        while not caplog.records and time.monotonic() < deadline:
            time.sleep(0.05)
        logged = [r.getMessage() for r in caplog.records]  # before the pipe's end
        os.close(write_end)
        reader.join(10)
    assert logged == [f"TLS handshake from 127.0.0.1 failed: {SSL_HTTP}"]


def test_what_passes_is_held_to_a_budget_and_the_rest_counted():
    p = Passing(interval=60, limit=1000)
    assert all(p.take(100, t) for t in range(10))  # 1,000 bytes
    assert not p.take(100, 11) and not p.take(1, 12)  # over: dropped, counted
    assert p.said(30) == []
    assert p.said(61) == ["2 lines of stderr (gRPC's errors, the daemon's children's) dropped "
                          "in the last 61 s: at most 1,000 bytes pass a 60 s"]
    assert p.take(900, 62)  # a new interval
