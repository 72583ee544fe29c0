"""pdbd: the gRPC solver daemon over pdbtool's memory-mapped pattern databases.

Imports go one way: pdbd uses pdbtool, pdbtool never imports pdbd or grpc. The wire
stubs live in pdbd.v1, as protoc writes them for the proto package pdbd.v1.
"""


def command() -> None:
    """The ``pdbd`` command (pyproject's scripts)."""
    from pdbtool.cli import launch

    launch("pdbd", "pdbd.cli")
