"""pdbd.connections: the connections open on the listening address, read from /proc/net
(a recorded sample here), and the watch that logs once when they reach the budget."""

import collections
import logging

from pdbd.connections import ConnectionWatch, tcp_peers, unix_peers

TCP = """  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:C350 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1
   1: 0100007F:C350 0100007F:D431 01 00000000:00000000 00:00000000 00000000     0        0 2 1
   2: 0100007F:C350 0100007F:D432 01 00000000:00000000 00:00000000 00000000     0        0 3 1
   3: 0100007F:D431 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 4 1
   4: 0A00000A:C350 0B00000A:1F90 06 00000000:00000000 00:00000000 00000000     0        0 5 1
"""
TCP6 = """  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000001000000:C350 0000000000000000FFFF00000200000A:9C40 01 00000000:00000000 00:00000000 00000000     0        0 6 1
   1: 00000000000000000000000001000000:C350 B80D0120000000000000000001000000:9C41 01 00000000:00000000 00:00000000 00000000     0        0 7 1
"""
UNIX = """Num       RefCount Protocol Flags    Type St Inode Path
0000000000000000: 00000002 00000000 00010000 0001 01 10 /run/pdbd.sock
0000000000000000: 00000003 00000000 00000000 0001 03 11 /run/pdbd.sock
0000000000000000: 00000003 00000000 00000000 0001 03 12
0000000000000000: 00000003 00000000 00000000 0001 03 13 /run/other.sock
"""


def test_peers_of_the_listening_port_from_proc_net(tmp_path):
    (tmp_path / "tcp").write_text(TCP)
    (tmp_path / "tcp6").write_text(TCP6)
    (tmp_path / "unix").write_text(UNIX)
    # port 0xC350 = 50000: the two established from 127.0.0.1 (not the listener, not the
    # client's own end, not one closing), one v4-mapped 10.0.0.2, one 2001:db8::1
    assert tcp_peers(50000, tmp_path) == {"127.0.0.1": 2, "10.0.0.2": 1, "2001:db8::1": 1}
    assert unix_peers("/run/pdbd.sock", tmp_path) == {"local": 1}
    assert tcp_peers(50000, tmp_path / "none") is None


def test_the_watch_says_it_once_until_the_connections_fall_below_and_a_minute_passed(caplog):
    counts = iter([1, 2, 3, 2, 1, 2, 2])
    watch = ConnectionWatch(lambda: collections.Counter({"127.0.0.1": next(counts)}), 2,
                            quiet=3600)
    with caplog.at_level(logging.INFO, logger="pdbd"):
        for _ in range(7):
            watch.look()
    said = [r.getMessage() for r in caplog.records]
    assert watch.warnings == 1 and len([m for m in said if "at the budget" in m]) == 1
    assert any("than the budget of 2 again" in m for m in said)


def test_below_the_budget_by_open_files_proc_net_is_not_read():
    def peers():
        raise AssertionError("read /proc/net although the open files are below the budget")

    ConnectionWatch(peers, 100, files=lambda: 99).look()
