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
        raise error(f"cannot use {what}: {e.reason or e}") from None
    except OSError as e:
        raise error(f"cannot read TLS file {e.filename or what}: {e.strerror}") from None
