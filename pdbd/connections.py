"""The connections open on the daemon's listening address, and a log line when they reach
the budget.

gRPC closes a connection beyond ``grpc.max_allowed_incoming_connections`` as it arrives
without a word (its core logs nothing of it, even at DEBUG), so the operator of a daemon
out of connections would only see clients time out. ``ConnectionWatch`` looks every second
at the connections established on the listening address (``/proc/net/tcp``, ``tcp6`` and
``unix``: the server's side of each, whichever process holds the other end) and logs once
when they reach the budget, with the peers holding the most; again only after they fell
below it and at least a minute later. Where ``/proc/net`` is missing it does nothing.
"""

from __future__ import annotations

import collections
import ipaddress
import logging
import os
import threading
import time
from pathlib import Path

log = logging.getLogger("pdbd")

PROC_NET = Path("/proc/net")
ESTABLISHED = "01"  # /proc/net/tcp's state
CONNECTED = "03"    # /proc/net/unix's (SS_CONNECTED)
TOP_PEERS = 3


def _address(hex_text: str) -> str:
    """An address of /proc/net/tcp (hex, each 32-bit word in host order: little-endian)."""
    raw = bytes.fromhex(hex_text)
    raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    ip = ipaddress.ip_address(raw)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    return str(ip)


def tcp_peers(port: int, proc: Path = PROC_NET) -> collections.Counter | None:
    """Connections established to local ``port``, by the peer's address; None if unknown."""
    peers: collections.Counter = collections.Counter()
    found = False
    for name in ("tcp", "tcp6"):
        try:
            lines = (proc / name).read_text().splitlines()[1:]
        except OSError:
            continue
        found = True
        for line in lines:
            fields = line.split()
            if len(fields) < 4 or fields[3] != ESTABLISHED:
                continue
            local, remote = fields[1], fields[2]
            if int(local.rpartition(":")[2], 16) == port:
                peers[_address(remote.rpartition(":")[0])] += 1
    return peers if found else None


def unix_peers(path: str, proc: Path = PROC_NET) -> collections.Counter | None:
    """Connections accepted on the unix socket at ``path`` (their peers have no address)."""
    try:
        lines = (proc / "unix").read_text().splitlines()[1:]
    except OSError:
        return None
    n = sum(1 for line in lines if (f := line.split()) and len(f) >= 8
            and f[5] == CONNECTED and f[7] == path)
    return collections.Counter({"local": n}) if n else collections.Counter()


def open_files() -> int | None:
    """This process's open file descriptors (each connection is one); None if unknown."""
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:
        return None


class ConnectionWatch:
    """A thread that logs when the connections ``peers()`` counts reach ``budget``: once,
    then again only after they fell below it and ``quiet`` seconds passed. ``files()``
    (open descriptors, at least as many as connections) spares reading /proc/net while
    it is below the budget: one directory listing a second."""

    def __init__(self, peers, budget: int, every: float = 1.0, quiet: float = 60.0,
                 files=None):
        self.peers, self.budget, self.every, self.quiet = peers, budget, every, quiet
        self.files = files
        self._stop = threading.Event()
        self._full = False
        self._said = float("-inf")
        self.warnings = 0  # lines logged at the budget (tests)

    def start(self) -> ConnectionWatch:
        if self.peers() is not None:
            threading.Thread(target=self._run, name="pdbd-connections", daemon=True).start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            try:
                self.look()
            except Exception:  # a look that failed must not end the watch
                log.exception("counting the open connections")

    def look(self) -> None:
        files = self.files() if self.files else None
        if files is not None and files < self.budget:
            n = files  # an upper bound: below the budget
        else:
            peers = self.peers()
            if peers is None:
                return
            n = sum(peers.values())
        now = time.monotonic()
        if n >= self.budget and not self._full and now - self._said >= self.quiet:
            self._full, self._said = True, now
            top = ", ".join(f"{peer} {k}" for peer, k in peers.most_common(TOP_PEERS))
            log.warning("%d connections open, at the budget of %d (the open-file limit less "
                        "a reserve): new ones are closed as they arrive until some close; "
                        "most from: %s (said once; again if it recurs a minute later)", n,
                        self.budget, top)
            self.warnings += 1  # after the line: a reader that sees the count finds the line
        elif n < self.budget and self._full:
            self._full = False
            log.info("fewer connections open than the budget of %d again", self.budget)
