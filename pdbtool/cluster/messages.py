"""What the cluster's driver and nodes exchange: the constants, the errors, and the named
types that travel through Ray (specs, batches, reports, progress, answers)."""

from __future__ import annotations

import ipaddress
import logging
import os
import socket
import sys
import tempfile
from pathlib import Path
from typing import NamedTuple


from pdbtool import __version__
from pdbtool.errors import BadInput, PdbError
from pdbtool.result import SolveResult
from pdbtool.search.control import IterationOutcome
from pdbtool.search.solver import Solver


log = logging.getLogger("pdbtool")

RAY_MISSING = ("--cluster needs Ray, the optional cluster extra: pip install 'pdbtool[cluster]' "
               "(or, in a checkout, pip install -e '.[cluster]')")
LOCAL = "local"          # --cluster local: start a Ray instance on this machine
LOOPBACK_SETTING = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"  # "0": Ray on loopback (keep_on_loopback)
BATCHES_PER_CPU = 8      # an iteration's subtrees in about this many batches per CPU
IN_FLIGHT_PER_CPU = 4    # batches queued at a node per CPU: none idles between two batches
# (a call to an actor costs milliseconds: tens on a busy machine)
POLL_SECONDS = 0.05      # the driver's wait between looks at the stop flag
PROGRESS_SECONDS = 0.5   # between polls of the nodes' live counters
MAX_RESTARTS = 3         # of an actor whose process died (Ray restarts it on its node)
MAX_TASK_RETRIES = 3     # of a task whose actor died while it ran
BUILD_RETRIES = 3        # of a table build whose worker died
JOBS_KEPT = 256          # per actor: halt flags of recent jobs
START_SECONDS = 120.0    # for a node's actor to start (it waits for the node's CPUs)
CONNECT_SECONDS = 10.0   # to open a TCP connection to a cluster's address before Ray does
PROBE_SECONDS = 2.0      # the same, before the cluster's nodes are asked for once connected
PROBE_TRIES = 3          # probes that time out before the head is taken for lost (one
PROBE_PAUSE = 0.5        # refused is enough), this many seconds apart
# (Ray itself retries an unreachable address for about 12 minutes, deaf to Ctrl-C)
HEAD_CHECK_SECONDS = 5.0  # between probes of the head during a search (Ray would end
# the process a minute after losing it, with a line of its own and no checkpoint saved)
RECONNECT_SECONDS = 10 * 365 * 86400  # how long a driver's Ray waits for a lost head:
# the driver's own probe decides (RAY_gcs_rpc_server_reconnect_timeout_s)
LOCAL_NICENESS = "0"     # of the workers of a Ray started here (Ray's default is 15): a
# search on this machine should share it as --threads does, not only take the CPU time
# that every other process leaves (at 15 a single busy process halved the cluster's speed)


class ClusterError(PdbError):
    """The cluster cannot be reached, or lost every node, or refused the work: a search it
    stops has its progress saved (``stops_a_search``: Checkpointing.holding says so)."""

    exit_code = 1
    stops_a_search = True


def on_loopback(address: str | None) -> bool:
    """Whether a cluster address (host:port) names this machine's loopback."""
    if not address or address == LOCAL:
        return False
    host = address.rsplit(":", 1)[0].strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def ray_module(address: str | None = None):
    """Ray, imported on first use; ClusterError saying how to install it if it is not.
    For ``address`` "local" a Ray started here will listen on loopback only, and for a
    head on loopback (127.0.0.1:6379, localhost:6379) the driver is on loopback too
    (``keep_on_loopback``, before the import)."""
    if address == LOCAL or on_loopback(address):
        keep_on_loopback()
    try:
        import ray
    except ImportError:
        raise ClusterError(RAY_MISSING) from None
    return ray


def keep_on_loopback() -> None:
    """This process's Ray on loopback, unless the environment says otherwise (the user's
    setting wins): with clusters "disabled" (LOOPBACK_SETTING=0) a Ray started here binds
    127.0.0.1, not every interface, and a driver takes 127.0.0.1 for its own address and
    for a head's 127.0.0.1 or localhost; otherwise Ray took this machine's own address for
    both and retried there for 14 minutes before it failed. Ray reads the setting once, as
    it is imported, into ``ray._private.ray_constants.ENABLE_RAY_CLUSTER``, and that
    constant each time it needs this machine's address (services.get_node_ip_address: its
    one reader in Ray 2.60; none of its binaries reads the variable). So a Ray imported
    already, as it is before ``--cluster auto`` knows its head (driver.head_of), gets the
    constant set too: it is then as if the setting had come before the import. The
    variable is also what the processes a Ray started here read."""
    if os.environ.setdefault(LOOPBACK_SETTING, "0") != "0":
        return
    constants = sys.modules.get("ray._private.ray_constants")
    if constants is not None:
        constants.ENABLE_RAY_CLUSTER = False


def split_address(address: str) -> tuple[str, int] | None:
    """(host, port) of a cluster's address: HOST:PORT, [IPv6]:PORT, or ray://HOST:PORT
    (Ray Client); None for "local" and "auto" (whose head Ray finds: driver.head_of).
    BadInput if it is none of these."""
    if address in (LOCAL, "auto"):
        return None
    rest = address.removeprefix("ray://")
    host, _, port = rest.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not host or not port.isdigit() or not 0 < int(port) < 65536 or "/" in rest:
        raise BadInput(f"--cluster {address!r}: give the head node's HOST:PORT (e.g. "
                       "HEAD:6379, as `ray start --head` prints it), 'local' or 'auto'")
    return host, int(port)


def reach(address: str | None, named: str | None = None) -> None:
    """Open (and close) a TCP connection to a cluster's head at ``address`` (None: none to
    probe), within CONNECT_SECONDS, and see it answer HTTP/2 as a gRPC server does:
    ClusterError naming it (``named``, else ``address``) and why if it cannot be reached
    or something else answers there (Ray would retry for minutes, deaf to Ctrl-C and
    SIGTERM); BadInput if it is no address."""
    where = split_address(address) if address is not None else None
    if where is None:
        return
    try:
        with socket.create_connection(where, timeout=CONNECT_SECONDS) as s:
            answers = speaks_http2(s)
    except OSError as e:
        reason = "timed out" if isinstance(e, TimeoutError) else e.strerror or str(e)
        raise ClusterError(f"cannot reach the Ray cluster at {named or address}: {reason} "
                           "(start one with `ray start --head`, or use --cluster local)") from None
    if not answers:
        raise ClusterError(f"{named or address} answers, but not as a Ray head: no gRPC there "
                           f"within {CONNECT_SECONDS:g} s (give the address `ray start --head` "
                           "prints: port 6379 unless it was given another; 8265 is its "
                           "dashboard)")


HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])


def speaks_http2(s: socket.socket) -> bool:
    """Whether the server on the connected socket ``s`` answers HTTP/2's client preface
    (and an empty SETTINGS frame) with a SETTINGS frame of its own, as a gRPC server, a
    Ray head's GCS, does; another service there (a web server: a port mistyped) does not,
    and Ray waited for it for minutes. True where Ray's connections use TLS (RAY_USE_TLS),
    which this plain probe cannot speak. OSError if the connection fails meanwhile."""
    if os.environ.get("RAY_USE_TLS", "").lower() in ("1", "true"):
        return True
    s.sendall(HTTP2_PREFACE)
    head = b""
    try:
        while len(head) < 9:  # a frame's header: length (3 bytes), type (4: SETTINGS), ...
            piece = s.recv(9 - len(head))
            if not piece:
                return False
            head += piece
    except TimeoutError:
        return False
    return head[3] == 4


def default_cache_dir() -> Path:
    """Where a node keeps the tables it received (and the driver its packed copies):
    $PDBTOOL_CLUSTER_CACHE, else <tmp>/pdbtool-cluster-<uid>."""
    env = os.environ.get("PDBTOOL_CLUSTER_CACHE")
    return Path(env) if env else Path(tempfile.gettempdir()) / f"pdbtool-cluster-{os.getuid()}"


# --- what travels ------------------------------------------------------------------------

class HeuristicSpec(NamedTuple):
    """What a node needs to make the driver's heuristic: a table-free one by name, or an
    artifact's tables by content version. Equal specs share the same actors."""

    name: str                 # the heuristic's name (for a table-free one, which)
    side: int
    goal_blank: int
    note: str
    version: str | None       # the artifact's content version; None: table-free
    table: str | None         # the artifact's file name (for messages)
    reflect: bool
    prune: bool
    pdbtool: str = __version__

    @classmethod
    def of(cls, solver: Solver) -> HeuristicSpec:
        h = solver.heuristic
        if not h.shape.square:
            raise BadInput(f"the cluster searches square boards, not {h.shape}: solve it "
                           "without --cluster (--threads N uses this machine's cores)")
        if h.artifact and not h.artifact_path:
            raise ClusterError(f"heuristic {h.name}: its artifact file is not known, so it "
                               "cannot be shipped to the cluster")
        return cls(h.name, h.side, h.goal_blank, h.note, h.artifact,
                   Path(h.artifact_path).name if h.artifact_path else None,
                   h.reflected, solver.prune)


class TableSource(NamedTuple):
    """Where a node gets the packed artifact when its cache lacks the version: the
    object store (``packed`` holds one ObjectRef, in a tuple so that Ray hands it over
    unresolved and the node fetches it itself) or a shared path. The version it must hold
    travels in the HeuristicSpec."""

    packed: tuple = ()
    shared: str | None = None


class NodeReport(NamedTuple):
    """A node's actor, ready (or not): where it runs and how it got the tables."""

    node: str                # "host (ip)"
    pid: int
    cpus: int
    shipped: bool            # the tables arrived now (False: from the node's cache)
    seconds: float           # to receive, unpack, verify and map them
    error: str | None        # why the node refuses the work
    missing: bool = False    # the node's cache lacks the tables: ship them (receive)


class Batch(NamedTuple):
    """Frontier nodes of one iteration, consecutive in its order (closest first), handed
    to a node as one task."""

    first: int               # the place of nodes[0] in the iteration's order
    nodes: list
    indices: list            # each node's index in the frontier


class SubtreeRecord(NamedTuple):
    """One subtree's search under one bound, as a node timed it: the task sizes that
    scripts/bench_cluster.py records and scripts/cluster_model.py simulates from."""

    bound: int
    index: int               # in the frontier
    nodes: int               # generated
    seconds: float           # CPU time of its thread: what it takes on a core of its own
    found: bool
    closest: int             # the smallest h expanded in it (frontier.SubtreeSearch)


class BatchResult(NamedTuple):
    outcome: IterationOutcome
    subtrees: list           # SubtreeRecord per node of the batch


class NodeProgress(NamedTuple):
    generated: int           # of a job on this node, so far (restarts count again)
    expanded: int
    busy: int                # search threads running now
    pid: int = 0             # the actor's process (another after a restart)


class BoardAnswer(NamedTuple):
    """A board of a batch, as a node answers it: a result, or an error and its exit code."""

    result: SolveResult | None
    error: str = ""
    exit_code: int = 0


class ClusterInfo(NamedTuple):
    address: str
    nodes: int
    cpus: int
    busy: int


# --- on a node ---------------------------------------------------------------------------

def node_name() -> str:
    try:
        ip = ray_module().util.get_node_ip_address()
    except Exception:  # not in a Ray worker: the name alone
        ip = "?"
    return f"{socket.gethostname()} ({ip})"
