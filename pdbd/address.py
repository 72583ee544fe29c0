"""Addresses as the server binds them and the client dials them (the targets gRPC takes),
and whether one stays on this machine. Loads neither numba nor the server.

* ``host:port``, ``[v6]:port``: TCP (port 0: the server picks one);
* ``unix:PATH`` (``unix:///abs/path`` too): a unix socket, reachable only on this machine;
* dialled only: ``dns:///host:port`` or ``dns://resolver:port/host:port`` (gRPC's DNS resolver),
  ``ipv4:addr:port`` and ``ipv6:[addr]:port`` (gRPC's own spellings of a TCP address).
"""

from __future__ import annotations

import ipaddress
import os
from typing import NamedTuple

from pdbtool.errors import BadInput

LOOPBACK_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost"}
LISTEN_FORMS = "HOST:PORT, [IPv6]:PORT or unix:PATH"
DIAL_FORMS = "HOST:PORT, [IPv6]:PORT, unix:PATH or dns:///HOST:PORT"
MAX_UNIX_PATH = 107  # bytes of a unix socket's path (sockaddr_un.sun_path, less its NUL)


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


class Target(NamedTuple):
    """A parsed gRPC target: ``kind`` tcp (``address``), unix (``path``) or dns."""

    kind: str
    text: str                      # as given: what gRPC is handed
    address: Address | None = None  # tcp and dns
    path: str | None = None         # unix

    @property
    def loopback(self) -> bool:
        """Reachable only from this machine (a unix socket; a loopback TCP address)."""
        if self.kind == "unix":
            return True
        return self.kind == "tcp" and self.address.loopback


def parse_address(text: str, what: str = "address") -> Address:
    """``host:port`` or ``[v6]:port``, port 0..65535 (0: the server picks one)."""
    if text.partition(":")[0].lower() in ("unix", "unix-abstract", "dns", "ipv4", "ipv6"):
        raise BadInput(f"{what} {text!r}: takes HOST:PORT only (no gRPC target scheme)")
    host, sep, port = text.rpartition(":")
    if not sep or not host:
        raise BadInput(f"{what} {text!r} is not HOST:PORT")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        if _is_ipv6(host):
            raise BadInput(f"{what} {text!r}: put an IPv6 address in brackets, e.g. [::1]:50051")
        raise BadInput(f"{what} {text!r} is not HOST:PORT")
    if not port.isdigit() or int(port) > 65535:
        raise BadInput(f"{what} {text!r}: the port must be a number from 0 to 65535")
    return Address(host, int(port))


def parse_target(text: str, what: str = "address", dial: bool = False) -> Target:
    """A target to listen on (``dial`` False: TCP or unix) or to dial (also dns:); BadInput
    naming the forms taken otherwise."""
    forms = DIAL_FORMS if dial else LISTEN_FORMS
    scheme, sep, rest = text.partition(":")
    scheme = scheme.lower() if sep else ""
    if scheme == "unix":
        path = rest[2:] if rest.startswith("//") else rest  # unix:///abs -> /abs
        if not path or path.endswith("/"):
            raise BadInput(f"{what} {text!r}: give the socket's path, e.g. unix:/run/pdbd.sock")
        if len(os.fsencode(path)) > MAX_UNIX_PATH:  # else gRPC's own error, late, unnamed
            raise BadInput(f"{what} {text!r}: a unix socket's path has at most "
                           f"{MAX_UNIX_PATH} bytes, this one {len(os.fsencode(path))}; "
                           "choose a shorter one, e.g. unix:/run/pdbd/pdbd.sock")
        return Target("unix", text, path=path)
    if scheme in ("dns", "ipv4", "ipv6") and not dial:
        raise BadInput(f"{what} {text!r}: a server listens on {LISTEN_FORMS}, not on a "
                       f"{scheme}: target (for clients)")
    if scheme == "dns":  # dns:[//resolver:port/]host[:port], the port 443 if none (as gRPC)
        name, resolver = rest, ""
        if rest.startswith("//"):
            resolver, slash, name = rest[2:].partition("/")
            if not slash:
                name = ""
        if not name:
            raise BadInput(f"{what} {text!r}: expected dns:///HOST:PORT (or "
                           "dns://RESOLVER:PORT/HOST:PORT)")
        if resolver and ":" not in resolver.rpartition("]")[2]:  # gRPC: "Cannot parse authority"
            raise BadInput(f"{what} {text!r}: give the DNS resolver's port too, e.g. "
                           f"dns://{resolver}:53/{name}")
        if ":" not in name.rpartition("]")[2]:
            name += ":443"
        return Target("dns", text, address=_host_port(name, what, text, forms))
    if scheme in ("ipv4", "ipv6"):
        return Target("tcp", text, address=_host_port(rest, what, text, forms))
    if scheme and rest.startswith("/"):  # xds:///..., a scheme this daemon does not take
        raise BadInput(f"{what} {text!r}: unknown scheme {scheme}:; expected {forms}")
    return Target("tcp", text, address=_host_port(text, what, text, forms))


def _host_port(part: str, what: str, text: str, forms: str) -> Address:
    try:
        return parse_address(part, what)
    except BadInput as e:
        if "brackets" in str(e) or "port must" in str(e):
            raise
        raise BadInput(f"{what} {text!r}: expected {forms}") from None


def _is_ipv6(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).version == 6
    except ValueError:
        return False
