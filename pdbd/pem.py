"""PEM files checked with Python's ssl (OpenSSL) before gRPC takes them: gRPC reports a
certificate it cannot use only later and as something else (a server's bind that failed,
a client's handshake), never naming the file."""

from __future__ import annotations

import ssl

from pdbtool.errors import BadInput


def check_pem(cert, key, ca, error: type[Exception] = BadInput) -> None:
    """Raise ``error`` naming the files unless OpenSSL loads the certificate chain ``cert``
    with its private ``key`` (both or neither) and the CA certificates ``ca`` (or None)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    what = ""
    try:
        if cert:
            what = f"the certificate {cert} with the key {key}"
            context.load_cert_chain(cert, key, password=lambda: b"")  # never a prompt
        if ca:
            what = f"the CA certificates {ca}"
            context.load_verify_locations(cafile=ca)
    except ssl.SSLError as e:
        raise error(f"cannot use {what}: {_missing(cert, key, ca) or e.reason or e}") from None
    except OSError as e:
        raise error(f"cannot read TLS file {e.filename or what}: {e.strerror}") from None


def _missing(cert, key, ca) -> str | None:
    """What a file OpenSSL refused lacks, said plainly (its own words are "PEM lib"): a
    key given as the certificate, a certificate as the key, an empty file."""
    for path, marker, what in ((cert, b"-----BEGIN CERTIFICATE-----", "no certificate"),
                               (key or cert, b"PRIVATE KEY-----", "no private key"),
                               (ca, b"-----BEGIN CERTIFICATE-----", "no certificate")):
        if not path:
            continue
        try:
            with open(path, "rb") as f:
                text = f.read(1 << 20)
        except OSError:
            continue
        if marker not in text:
            return f"{path} holds {what} (a PEM block '{marker.decode().strip('-')}')"
    return None
