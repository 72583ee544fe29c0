"""Where a pdbd server listens, checked before it binds: beyond loopback only with TLS (or
--insecure said out loud), an address this machine can bind and nothing else holds, a unix
socket's path (never replacing what is not a socket, or a socket another daemon answers
on), created owner-only; and the daemon's TLS credentials. `pdbd serve` runs these before
its slow steps, so what fails fails at once; `pdbd web` shares ListenError."""

from __future__ import annotations

import contextlib
import os
import socket
import stat
from dataclasses import dataclass
from pathlib import Path

import grpc

from pdbtool.errors import BadInput, PdbError

from .address import parse_address, parse_target
from .pem import check_pem


class ListenError(PdbError):
    exit_code = 1


@dataclass(frozen=True)
class Tls:
    """Server credentials: certificate chain and key (PEM files), and for mutual TLS the CA
    that client certificates must be signed by."""

    cert: Path
    key: Path
    client_ca: Path | None = None

    def credentials(self) -> grpc.ServerCredentials:
        """The credentials; BadInput (exit 2, as the clients' and pdbd web's) naming a file
        that cannot be read or used."""
        try:
            pair = (Path(self.key).read_bytes(), Path(self.cert).read_bytes())
            ca = Path(self.client_ca).read_bytes() if self.client_ca else None
        except OSError as e:
            raise BadInput(f"cannot read TLS file {e.filename}: {e.strerror}") from None
        check_pem(self.cert, self.key, self.client_ca)
        return grpc.ssl_server_credentials([pair], root_certificates=ca,
                                           require_client_auth=ca is not None)


def check_exposure(listen: str, tls: Tls | None, insecure: bool) -> None:
    """Beyond loopback only with TLS, or with ``insecure`` said out loud (a unix socket
    stays on this machine, owner-only)."""
    target = parse_target(listen, "--listen")
    if not target.loopback and tls is None and not insecure:
        raise ListenError(f"refusing to listen on {listen} without TLS: anyone who can reach "
                          "it could use the server; give --tls-cert and --tls-key (and "
                          "--client-ca to require client certificates), or --insecure")


def check_metrics(metrics: str, insecure: bool):
    """The address of --metrics: loopback unless ``insecure`` is said (plain HTTP, no TLS)."""
    address = parse_address(metrics, "--metrics")
    if not address.loopback and not insecure:
        raise ListenError(f"refusing to serve metrics on {metrics}: anyone who can reach it "
                          "could read them; give a loopback address (127.0.0.1:9100), or "
                          "--insecure")
    return address


def check_listen(listen: str) -> None:
    """Fail at once if ``listen`` cannot be bound (a port in use, an address not of this
    machine), before the slow steps: a plain socket bound as gRPC binds its own
    (SO_REUSEADDR, no SO_REUSEPORT), then closed. gRPC serves if one resolved address binds.
    A unix socket: see check_unix."""
    target = parse_target(listen, "--listen")
    if target.kind == "unix":
        return check_unix(target.path, listen)
    address = target.address
    try:
        found = socket.getaddrinfo(address.host, address.port, type=socket.SOCK_STREAM,
                                   flags=socket.AI_PASSIVE)
    except socket.gaierror as e:
        raise ListenError(f"cannot listen on {listen}: {e.strerror.lower()}") from None
    error = None
    for family, kind, proto, _, sockaddr in found:
        try:
            with socket.socket(family, kind, proto) as s:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s.bind(sockaddr)
            return
        except OSError as e:
            error = e
    raise ListenError(f"cannot listen on {listen}: {(error.strerror or str(error)).lower()}")


def check_unix(path: str, listen: str) -> None:
    """gRPC replaces whatever is at a unix socket's path: refuse a path that is not a
    socket, or a socket a server answers on (another daemon), or in a missing directory."""
    p = Path(path)
    if not p.parent.is_dir():
        raise ListenError(f"cannot listen on {listen}: no such directory {p.parent}")
    if not (p.exists() or p.is_symlink()):
        return
    if not stat.S_ISSOCK(p.lstat().st_mode):
        raise ListenError(f"cannot listen on {listen}: {path} exists and is not a socket")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        try:
            s.connect(path)
        except OSError:
            return  # left by a daemon that is gone: gRPC replaces it
    raise ListenError(f"cannot listen on {listen}: address already in use")


@contextlib.contextmanager
def owner_only():
    """Files created meanwhile (gRPC's unix socket) get no group or other permissions."""
    old = os.umask(0o077)
    try:
        yield
    finally:
        os.umask(old)
