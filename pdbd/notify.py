"""Telling a service manager how the daemon is doing: systemd's readiness protocol
(sd_notify(3)), without libsystemd. Under a unit of ``Type=notify`` (docs/pdbd.service)
systemd sets ``NOTIFY_SOCKET`` and counts the service started only on ``READY=1``, sent once
the tables are loaded and checked and the kernels warm (health SERVING), not when the
process starts; ``RELOADING=1`` and ``READY=1`` frame a SIGHUP reload, ``STOPPING=1`` begins
the shutdown. Elsewhere (no ``NOTIFY_SOCKET``) nothing is sent.
"""

from __future__ import annotations

import logging
import os
import socket
import time

log = logging.getLogger("pdbd")
_said: set[str] = set()  # the addresses that could not be reached, said once each


def notify(*fields: str) -> bool:
    """Send ``fields`` ("READY=1", ...) as one datagram to the socket in NOTIFY_SOCKET (a
    leading '@' names an abstract socket); False when there is none, or when it cannot be
    reached (said once in the log: the daemon serves on regardless)."""
    address = os.environ.get("NOTIFY_SOCKET")
    if not address:
        return False
    if address.startswith("@"):
        address = "\0" + address[1:]
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as s:
            s.connect(address)
            s.sendall("\n".join(fields).encode())
    except OSError as e:
        if address not in _said:
            _said.add(address)
            log.warning("cannot tell the service manager (NOTIFY_SOCKET %s): %s",
                        os.environ["NOTIFY_SOCKET"], e)
        return False
    return True


def ready() -> bool:
    return notify("READY=1", "STATUS=serving")


def reloading() -> bool:
    """Before a reload: systemd (Type=notify-reload) wants the monotonic clock with it."""
    now = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
    return notify("RELOADING=1", f"MONOTONIC_USEC={now}", "STATUS=reloading the tables")


def stopping() -> bool:
    return notify("STOPPING=1", "STATUS=shutting down")
