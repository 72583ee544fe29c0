"""Defaults shared by the server, the client and the command line.

Kept in their own module so the client side can read them without importing the server,
which loads numba.
"""

DEFAULT_LISTEN = "127.0.0.1:50051"  # loopback only unless told otherwise
DEFAULT_SERVER = DEFAULT_LISTEN
DEFAULT_MAX_QUEUE = 32
DEFAULT_WEB_LISTEN = "127.0.0.1:8080"  # `pdbd web`: loopback too

# Limits the server applies when a client sets none, and as a ceiling when it sets more
# (pdbd serve --max-search-seconds, --max-nodes, --max-search-memory): a query without a
# deadline cannot hold a search thread for hours, nor one search all the memory.
DEFAULT_MAX_SEARCH_SECONDS = 60.0
DEFAULT_MAX_NODES = 10_000_000_000
DEFAULT_MAX_SEARCH_MEMORY = 1 << 30  # A*'s states or the ida-tt table, per search
DEFAULT_REQUEST_TIMEOUT = 10.0      # seconds for a call's request to arrive
DEFAULT_IDLE_SECONDS = 300.0        # a connection without calls for this long is closed
DEFAULT_CONNECTION_AGE = 3600.0     # every connection is closed (gracefully) after this
DEFAULT_CLUSTER_ABOVE = 50_000_000  # nodes searched here before a search goes to the cluster


def default_per_client(threads: int, max_queue: int) -> int:
    """Searches one client (peer address) may have in flight: an eighth of the capacity
    (4 of 34 with 2 threads and the default queue), at least 2."""
    return max(2, (threads + max_queue) // 8)
