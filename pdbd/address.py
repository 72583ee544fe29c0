"""Addresses (host:port) as the server binds them and the client dials them, and whether
one stays on this machine. Loads neither numba nor the server."""

from __future__ import annotations

import ipaddress
from typing import NamedTuple

from pdbtool.errors import BadInput

LOOPBACK_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost"}


class Address(NamedTuple):
    host: str   # as given, IPv6 without brackets
    port: int

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"

    @property
    def loopback(self) -> bool:
        """Only this machine can reach it: 127.0.0.0/8, ::1 or localhost."""
        if self.host.lower() in LOOPBACK_NAMES:
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False  # another name: it may resolve to anything


def parse_address(text: str, what: str = "address") -> Address:
    """``host:port`` or ``[v6]:port``, port 0..65535 (0: the server picks one)."""
    host, sep, port = text.rpartition(":")
    if not sep or not host:
        raise BadInput(f"{what} {text!r} is not HOST:PORT")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise BadInput(f"{what} {text!r}: put an IPv6 address in brackets, e.g. [::1]:50051")
    if not port.isdigit() or int(port) > 65535:
        raise BadInput(f"{what} {text!r}: the port must be a number from 0 to 65535")
    return Address(host, int(port))
