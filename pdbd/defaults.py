"""Defaults shared by the server, the client and the command line.

Kept in their own module so the client side can read them without importing the server,
which loads numba.
"""

DEFAULT_LISTEN = "127.0.0.1:50051"  # loopback only unless told otherwise
DEFAULT_SERVER = DEFAULT_LISTEN
DEFAULT_MAX_QUEUE = 32
DEFAULT_WEB_LISTEN = "127.0.0.1:8080"  # `pdbd web`: loopback too
