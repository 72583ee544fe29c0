"""Who a call comes from, for the limit of searches per client: the peer's address, or, for
a call through a proxy the daemon trusts (``pdbd serve --trusted-proxy``), the client the
proxy names in the metadata ``pdbd-client`` (``pdbd web`` names its HTTP client). Never
trusted by default: anyone could name any client."""

from __future__ import annotations

import ipaddress
import threading
from urllib.parse import unquote

from pdbtool.errors import BadInput

from .wire import CLIENT_KEY

MAX_NAME = 100  # a proxied client's name, as kept and logged


def client_of(peer: str) -> str:
    """The client's address without its port ("ipv4:10.0.0.7:53211" -> "ipv4:10.0.0.7"),
    as it is written ("ipv6:%5B::1%5D:5" -> "ipv6:[::1]": gRPC escapes the brackets)."""
    kind = peer.split(":", 1)[0]
    return unquote(peer.rsplit(":", 1)[0]) if kind in ("ipv4", "ipv6") else peer


def peer_ip(peer: str):
    """The IP address of a gRPC peer ("ipv4:10.0.0.7:53211", "ipv6:%5B::1%5D:5"), or None
    (a unix socket's peer, or one that does not parse)."""
    kind, _, rest = peer.partition(":")
    if kind not in ("ipv4", "ipv6"):
        return None
    host = unquote(rest).rsplit(":", 1)[0].strip("[]")
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


class TrustedProxies:
    """The peers whose ``pdbd-client`` metadata names the client: IP addresses or networks
    ("10.0.0.5", "10.0.0.0/8", "::1"), and "unix" for any peer on a unix socket."""

    def __init__(self, specs=()):
        self.specs = tuple(specs)
        self.unix = False
        self.networks = []
        for spec in self.specs:
            if spec == "unix":
                self.unix = True
                continue
            try:
                self.networks.append(ipaddress.ip_network(spec, strict=False))
            except ValueError:
                raise BadInput(f"--trusted-proxy {spec!r}: give an IP address, a network "
                               "(10.0.0.0/8) or unix") from None

    def __bool__(self) -> bool:
        return bool(self.specs)

    def trusts(self, peer: str) -> bool:
        if peer.startswith("unix:"):
            return self.unix
        ip = peer_ip(peer)
        return ip is not None and any(ip in net for net in self.networks)

    def client(self, context) -> str:
        """The client a call counts against: the proxy's word for it, from a trusted peer
        that gives one; the peer's address otherwise."""
        peer = context.peer()
        base = client_of(peer)
        if self and self.trusts(peer):
            for key, value in context.invocation_metadata() or ():
                if key == CLIENT_KEY and value:
                    return f"{base} for {str(value)[:MAX_NAME]}"
        return base


class PeerCounts:
    """Things in progress (searches, calls) per client: at most ``limit`` each and ``total``
    in all (None: no limit)."""

    def __init__(self, limit: int | None, total: int | None = None):
        self.limit, self.total = limit, total
        self._lock = threading.Lock()
        self._n: dict[str, int] = {}
        self.count = 0

    def enter(self, client: str) -> bool:
        with self._lock:
            n = self._n.get(client, 0)
            if (self.limit and n >= self.limit) or (self.total and self.count >= self.total):
                return False
            self._n[client] = n + 1
            self.count += 1
            return True

    def has_room(self, client: str) -> bool:
        with self._lock:
            return not self.limit or self._n.get(client, 0) < self.limit

    def leave(self, client: str) -> None:
        with self._lock:
            n = self._n.pop(client, 1) - 1
            if n > 0:
                self._n[client] = n
            self.count -= 1
