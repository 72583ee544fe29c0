"""Searches, batches and builds on a Ray cluster (the optional ``cluster`` extra).

The driver (this process) keeps what it already does on one machine: it chooses the
heuristic, iterates the IDA* bounds (parallel.search_bounds), expands the root to a
frontier (parallel.frontier), combines the outcomes (parallel.Tally) and replays the
answer (Solver.result). What it hands out are the same subtree tasks the threads run,
(frontier nodes, bound, budget) -> IterationOutcome, in batches of consecutive frontier
nodes (``Batch``); each subtree's size and CPU time come back with the outcome
(``SubtreeRecord``: the task sizes that pdbtool.schedule simulates larger clusters from).

* **One actor per node** (``NodeWorker``) holds the node's CPUs, maps the tables once and
  searches with a pool of that many threads (the numba kernel releases the GIL), one
  subtree at a time and a job's subtrees in frontier order, whichever batch they came in:
  the node's threads share its batches as one machine's threads share the subtrees. The
  first subtree that reaches the goal halts the job on its node at once. Its control calls
  (load, progress, halt) run in their own concurrency group, so they are answered while
  every search thread is busy.
* **Tables travel packed and are verified on arrival.** The driver asks each node for the
  tables' content version; only the nodes whose cache lacks it are sent the artifact,
  packed once per version on the driver (packing.pack), through Ray's object store or a
  shared directory every node sees. Such a node unpacks it and runs every verify check
  (packing.install: sha256 of each table, then the checks of ``pdbtool verify``); a copy
  that fails is refused with a message naming the node and the table, and never replaced
  by a weaker heuristic. The installed copy stays in the node's cache under its version,
  so a later job does not ship it again.
* **Faults.** Actors restart (``max_restarts``) and their tasks are retried
  (``max_task_retries``): a killed worker costs its batches' time, not the answer. A node
  that disappears makes its actor die; its batches go to the other nodes and the loss is
  reported; with no node left the search fails with a message instead of waiting.
* **Stopping.** The first bound that finds the goal, the caller's stop flag (Ctrl-C,
  deadline, cancel) or the node budget halts the job on every actor (the kernels poll
  the flag every few thousand nodes) and cancels the batches not yet started
  (``ray.cancel``).

A Ray started here (``--cluster local``) is a new instance, even if another runs on this
machine, and runs its workers at nice 0 (LOCAL_NICENESS), as the threads of --threads run.
Batches of boards (``solve_many``) send one board per task to the same actors (searched on
the same pool); a catalogue's independent tables build as Ray tasks (``build_tables``),
retried if their worker dies; builder.build writes the artifact as it does locally.

Ray is imported only here and only when a cluster is used: ``import pdbtool`` (and the
command line without --cluster) never loads it, and without Ray installed ``--cluster``
says how to install it (``RAY_MISSING``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import itertools
import logging
import os
import socket
import tempfile
import threading
import time
import uuid
from collections import OrderedDict, deque
from pathlib import Path
from typing import Callable, Iterable, NamedTuple

import numpy as np

from . import __version__
from .errors import EXIT_LIMIT, ArtifactError, BadInput, PdbError, not_a_directory
from .interrupts import MAIN_THREAD_SEARCHES
from .ordered_pool import OrderedPool
from .parallel import (FRONTIER_PER_THREAD, SERIAL_BELOW, IterationOutcome, Tally, frontier,
                       search_bounds, search_subtrees)
from .result import SolveResult
from .search import PreparedBoard, SearchControl, Solver
from .search_kernel import BOUND, BUDGET, EXPANDED, GENERATED, INF, NOT_FOUND, STOPPED

log = logging.getLogger("pdbtool")

RAY_MISSING = ("--cluster needs Ray, an optional extra: pip install -e '.[cluster]' in the "
               "checkout (or pip install ray)")
LOCAL = "local"          # --cluster local: start a Ray instance on this machine
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
LOCAL_NICENESS = "0"     # of the workers of a Ray started here (Ray's default is 15): a
# search on this machine should share it as --threads does, not only take the CPU time
# that every other process leaves (at 15 a single busy process halved the cluster's speed)


class ClusterError(PdbError):
    """The cluster cannot be reached, or lost every node, or refused the work."""

    exit_code = 1


def ray_module():
    """Ray, imported on first use; ClusterError saying how to install it if it is not."""
    try:
        import ray
    except ImportError:
        raise ClusterError(RAY_MISSING) from None
    return ray


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
        if h.artifact and not h.artifact_path:
            raise ClusterError(f"heuristic {h.name}: its artifact file is not known, so it "
                               "cannot be shipped to the cluster")
        return cls(h.name, h.side, h.goal_blank, h.note, h.artifact,
                   Path(h.artifact_path).name if h.artifact_path else None,
                   h.reflected, solver.prune)


class TableSource(NamedTuple):
    """Where a node gets the packed artifact when its cache lacks the version: the
    object store (``packed`` holds one ObjectRef, in a tuple so that Ray hands it over
    unresolved and the node fetches it itself) or a shared path."""

    version: str
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
    """Consecutive frontier nodes of one iteration, handed to a node as one task."""

    first: int               # the frontier index of nodes[0]
    nodes: list


class SubtreeRecord(NamedTuple):
    """One subtree's search under one bound, as a node timed it: the task sizes that
    scripts/bench_cluster.py records and pdbtool.schedule simulates from."""

    bound: int
    index: int               # in the frontier
    nodes: int               # generated
    seconds: float           # CPU time of its thread: what it takes on a core of its own
    found: bool


class BatchResult(NamedTuple):
    outcome: IterationOutcome
    subtrees: list           # SubtreeRecord per node of the batch


class NodeProgress(NamedTuple):
    generated: int           # of a job on this node, so far (restarts count again)
    expanded: int
    busy: int                # search threads running now


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


def receive_tables(version: str, source: TableSource | None, table: str, cache_dir: Path,
                   node: str) -> tuple[Path | None, bool]:
    """The installed artifact of ``version`` in this node's cache: there already (its
    verification stamp still valid), or fetched from ``source``, unpacked and verified now;
    (None, False) if it is not cached and no source is given. Returns (path, shipped).
    ArtifactError names the node and the table when the copy fails."""
    from . import artifact, trust
    from .packing import install

    tables = Path(cache_dir) / "tables"
    tables.mkdir(parents=True, exist_ok=True)
    path = tables / f"{version}.h5"
    what = f"node {node}: table {table} (version {version})"
    with open(tables / ".lock", "a") as lock:  # actors of one node install one at a time
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if path.exists():
                try:
                    meta = artifact.read_meta(path)
                    if meta.version == version and trust.is_recorded(meta):
                        return path, False
                except ArtifactError:
                    pass
                path.unlink()  # not what it should be: receive it again
            if source is None:
                return None, False
            if source.shared:
                packed, fetched = Path(source.shared), False
            elif source.packed:
                packed, fetched = tables / f"{version}.{os.getpid()}.pdbpack", True
                packed.write_bytes(ray_module().get(source.packed[0]))
            else:
                raise ArtifactError(f"{what}: not in the node's cache and nothing was shipped")
            try:
                install(packed, path, threads=1)
            except (ArtifactError, OSError) as e:
                raise ArtifactError(f"{what} refused on arrival, it failed verification: {e}") from None
            finally:
                if fetched:
                    packed.unlink(missing_ok=True)
            got = artifact.read_meta(path).version
            if got != version:
                path.unlink()
                raise ArtifactError(f"{what} refused on arrival: it holds version {got}")
            return path, True
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def node_heuristic(spec: HeuristicSpec, source: TableSource | None, cache_dir: Path, node: str):
    """The spec's heuristic on this node (tables received and verified first); returns
    (heuristic, shipped), or (None, False) when the tables are not cached and no source
    is given."""
    from .heuristics import table_free
    from .pdb_heuristic import load_heuristic

    if spec.pdbtool != __version__:
        raise ClusterError(f"node {node} runs pdbtool {__version__}, the driver {spec.pdbtool}: "
                           "install the same version on every node")
    shipped = False
    if spec.version is None:
        h = table_free(spec.name, spec.side, spec.goal_blank)
    else:
        path, shipped = receive_tables(spec.version, source, spec.table, cache_dir, node)
        if path is None:
            return None, False
        try:
            h = load_heuristic(path, reflect=spec.reflect)
        except ArtifactError as e:
            raise ArtifactError(f"node {node}: table {spec.table} (version {spec.version}) "
                                f"refused: {e}") from None
    if h.name != spec.name or h.side != spec.side:
        raise ClusterError(f"node {node} made heuristic {h.name} ({h.side}x{h.side}), the driver "
                           f"asked for {spec.name} ({spec.side}x{spec.side})")
    return dataclasses.replace(h, note=spec.note), shipped


class JobState:
    """One job on one actor: its halt flag (the kernels poll it), its live counters, and
    its place in the queue of the node's threads (jobs in the order they arrived)."""

    def __init__(self, order: int):
        self.order = order
        self.halt = np.zeros(1, np.int64)
        self.rows: list[np.ndarray] = []  # a batch's live counters, a row per subtree
        self.controls: list[SearchControl] = []


class NodeWorker:
    """The actor body: one per node; maps each heuristic's tables once (``load``) and runs
    many tasks on its threads. Plain Python, made a Ray actor by Cluster (so this module
    imports without Ray). After a restart it maps the tables again from the node's cache
    when a task needs them.

    The searching is done by the node's own pool of ``cpus`` threads, one subtree (or one
    board) at a time, a job's in frontier order (ordered_pool). A Ray task only hands its
    subtrees to the pool and waits for them, so the node's threads share every batch it
    holds: at the bound that finds the goal they all work on the earliest subtrees, as the
    threads of one machine do, instead of each thread running a whole batch of its own.
    (One thread per batch made #40 search 9.1M nodes at its last bound against 5.0-5.6M on
    threads: the goal's batch ran on one thread while the other searched later batches.)"""

    def __init__(self, cache_dir: str, cpus: int):
        self.cache_dir, self.cpus = Path(cache_dir), cpus
        self.node = node_name()
        self._solvers: dict[HeuristicSpec, Solver] = {}
        self._jobs: OrderedDict[str, JobState] = OrderedDict()
        self._lock = threading.Lock()
        self._loading = threading.Lock()
        self._busy = 0
        self._pool = OrderedPool(cpus, "search")
        self._arrivals = itertools.count()

    def _job(self, job: str) -> JobState:
        with self._lock:
            state = self._jobs.get(job)
            if state is None:
                state = self._jobs[job] = JobState(next(self._arrivals))
                while len(self._jobs) > JOBS_KEPT:
                    self._jobs.popitem(last=False)
            return state

    def _solver(self, spec: HeuristicSpec) -> Solver:
        """The spec's Solver, mapped from the node's cache if this process lacks it."""
        solver = self._solvers.get(spec)
        if solver is None:
            report = self.load(spec)
            if report.error or report.missing:
                raise ClusterError(report.error or f"node {self.node}: table {spec.table} "
                                   f"(version {spec.version}) is no longer in its cache")
            solver = self._solvers[spec]
        return solver

    # -- control group -----------------------------------------------------------------

    def load(self, spec: HeuristicSpec, source: TableSource | None = None) -> NodeReport:
        """Make the spec's heuristic: its tables from the node's cache, or received from
        ``source`` and verified; ``missing`` when neither has them."""
        t0 = time.perf_counter()
        shipped, error = False, None
        with self._loading:
            if spec not in self._solvers:
                try:
                    h, shipped = node_heuristic(spec, source, self.cache_dir, self.node)
                    if h is not None:
                        solver = Solver(h, prune=spec.prune)
                        warm_up(solver)
                        self._solvers[spec] = solver
                except PdbError as e:  # reported: the driver refuses the work
                    error = str(e)
        return NodeReport(self.node, os.getpid(), self.cpus, shipped, time.perf_counter() - t0,
                          error, spec not in self._solvers and error is None)

    def progress(self, job: str) -> NodeProgress:
        state = self._job(job)
        with self._lock:
            rows, controls, busy = list(state.rows), list(state.controls), self._busy
        return NodeProgress(sum(int(r[:, GENERATED].sum()) for r in rows) + sum(c.generated for c in controls),
                            sum(int(r[:, EXPANDED].sum()) for r in rows) + sum(c.expanded for c in controls),
                            busy)

    def halt(self, job: str) -> None:
        state = self._job(job)
        state.halt[0] = 1
        with self._lock:
            controls = list(state.controls)
        for c in controls:
            c.halt("cancelled")

    # -- search group ------------------------------------------------------------------

    def _busy_while(self, fn, *args):
        """``fn(*args)`` on a pool thread, counted as busy while it runs."""
        with self._lock:
            self._busy += 1
        try:
            return fn(*args)
        finally:
            with self._lock:
                self._busy -= 1

    def search(self, job: str, spec: HeuristicSpec, bound: int, budget: int,
               batch: Batch) -> BatchResult:
        """A batch of subtrees under one bound, one subtree per task of the node's pool;
        their outcomes combined (parallel.Tally) and each one's size and time. The first
        subtree that reaches the goal halts the job on this node at once: any goal at this
        bound is optimal."""
        solver = self._solver(spec)
        state = self._job(job)
        rows = np.zeros((len(batch.nodes), 3), np.int64)  # live counters, one per subtree
        with self._lock:
            state.rows.append(rows)

        def subtree(k: int, node) -> tuple[IterationOutcome, float]:
            t0 = time.thread_time()
            share = search_subtrees(solver, [node], bound, budget, state.halt, rows[k])
            if share.found is not None:
                state.halt[0] = 1
            return share, time.thread_time() - t0

        futures = [self._pool.submit((state.order, batch.first + k), self._busy_while, subtree, k, node)
                   for k, node in enumerate(batch.nodes)]
        tally, records = Tally(), []
        for k, future in enumerate(futures):
            share, seconds = future.result()
            tally.add(share)
            records.append(SubtreeRecord(bound, batch.first + k, share.generated, seconds,
                                         share.found is not None))
        return BatchResult(tally.outcome(), records)

    def solve(self, job: str, spec: HeuristicSpec, index: int, board: tuple, goal: str,
              algorithm, budget: int | None, timeout: float | None) -> BoardAnswer:
        """Board ``index`` of a batch, searched on one thread of the node's pool."""
        control = SearchControl(budget=budget, timeout=timeout)
        state = self._job(job)
        with self._lock:
            state.controls.append(control)

        def one() -> BoardAnswer:
            try:
                if state.halt[0]:
                    control.halt("cancelled")
                solver = self._solver(spec)
                return BoardAnswer(solver.solve(board, goal, control=control, algorithm=algorithm))
            except PdbError as e:
                return BoardAnswer(None, str(e), e.exit_code)

        return self._pool.submit((state.order, index), self._busy_while, one).result()


def warm_up(solver: Solver) -> None:
    """Compile (or load from numba's cache) the kernels a node runs for this heuristic:
    the subtree search, and the whole IDA* of a batch's boards."""
    from . import puzzle
    from .parallel import FrontierNode

    board = puzzle.apply_blank_moves(puzzle.goal_board(solver.side, "blank-first"), "R")
    solver.solve(board, "blank-first")
    node = FrontierNode(board, board.index(0), 0, ())
    search_subtrees(solver, [node], 1, -1, np.zeros(1, np.int64), np.zeros(3, np.int64))


def build_on_node(job) -> tuple:
    """A Ray task: one table of a catalogue (builder.TableJob) on this node's cores."""
    import numba

    from .builder import build_table

    numba.set_num_threads(max(1, min(job.threads, numba.config.NUMBA_NUM_THREADS)))
    t0 = time.perf_counter()
    table = build_table(job.tiles, job.side, job.name, zero_aware=job.zero_aware, progress=False)
    return table, node_name(), time.perf_counter() - t0


# --- the driver --------------------------------------------------------------------------

class Node(NamedTuple):
    node_id: str
    name: str
    cpus: int


class Worker:
    """The driver's handle of one node's actor, and the batches it has in flight."""

    def __init__(self, actor, node: Node):
        self.actor, self.node = actor, node
        self.report: NodeReport | None = None  # of the last load
        self.in_flight: dict = {}  # ObjectRef -> what it searches
        self.lost: str | None = None

    @property
    def capacity(self) -> int:
        return IN_FLIGHT_PER_CPU * self.node.cpus

    def control(self, method: str, *args):
        """A call in the actor's control group (answered while every search thread is
        busy), not retried: the driver asks again if it needs to."""
        return getattr(self.actor, method).options(concurrency_group="control",
                                                   max_task_retries=0).remote(*args)


class Cluster:
    """A connection to a Ray cluster (``address``, or ``"local"`` to start Ray on this
    machine; an already initialised Ray is used as it is), and the actors made for the
    heuristics it has served. ``notify(text)`` hears about lost nodes. Close it (or use
    it as a context manager) to free the nodes' CPUs."""

    def __init__(self, address: str = LOCAL, *, cache_dir=None, shared=None,
                 notify: Callable[[str], None] | None = None, num_cpus: int | None = None):
        if address == LOCAL:
            # A local Ray listens on loopback only: with clusters "disabled" Ray binds
            # 127.0.0.1, otherwise every interface. Ray reads it on import; the user's
            # setting wins.
            os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
        self.ray = ray = ray_module()
        self.address = address
        self.cache_dir = Path(cache_dir) if cache_dir else default_cache_dir()
        self.shared = Path(shared) if shared else None
        if self.shared is not None and not self.shared.is_dir():
            raise BadInput(f"--cluster-shared {not_a_directory(self.shared)}")
        self.notify = notify or (lambda text: log.warning("%s", text))
        self._owns_ray = not ray.is_initialized()
        if self._owns_ray:
            if address == LOCAL:  # read by the raylet it starts; the user's setting wins
                os.environ.setdefault("RAY_worker_niceness", LOCAL_NICENESS)
            try:
                ray.init(address=address,  # "local": a new instance, even if one runs here
                         num_cpus=num_cpus if address == LOCAL else None,
                         include_dashboard=False, log_to_driver=False,
                         logging_level=logging.ERROR, configure_logging=False)
            except (ConnectionError, RuntimeError, ValueError) as e:
                raise ClusterError(f"cannot reach the Ray cluster at {address}: {e} (start one "
                                   "with `ray start --head`, or use --cluster local)") from None
        self._workers: list[Worker] | None = None  # one per node, made on first use
        self._loaded: set[HeuristicSpec] = set()    # heuristics every worker has loaded
        self._lock = threading.Lock()
        self.running: SearchRun | None = None  # the last search started (its busy count)
        self._actor_class = ray.remote(concurrency_groups={"control": 2})(NodeWorker)
        self._build_task = ray.remote(build_on_node)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- nodes and actors --------------------------------------------------------------

    def nodes(self) -> list[Node]:
        """The cluster's live nodes that have CPUs."""
        out = []
        for n in self.ray.nodes():
            cpus = int(n.get("Resources", {}).get("CPU", 0))
            if n.get("Alive") and cpus > 0:
                out.append(Node(n["NodeID"], f"{n.get('NodeManagerHostname', '?')} "
                                             f"({n.get('NodeManagerAddress', '?')})", cpus))
        if not out:
            raise ClusterError(f"the Ray cluster at {self.address} has no live node with CPUs")
        return out

    def workers(self, solver: Solver) -> list[Worker]:
        """The nodes' actors (made on first use, one per node), with ``solver``'s
        heuristic loaded on each: the tables shipped to the nodes whose cache lacks them
        and verified there. ArtifactError if a node refuses them, naming the node and
        the table; ClusterError if no node is left."""
        spec = HeuristicSpec.of(solver)
        with self._lock:
            if self._workers is None:
                self._workers = self._start()
            workers = [w for w in self._workers if w.lost is None]
            if not workers:
                raise ClusterError(f"every node of the Ray cluster at {self.address} was lost")
            if spec in self._loaded:
                return workers
            problems = self._ask(workers, "load", spec)
            missing = [w for w in workers if w.report is not None and w.report.missing]
            if missing and not problems:  # ship the tables to the nodes that lack them
                problems = self._ask(missing, "load", spec, self._source(solver))
            if problems:
                refused = any("refused" in p for p in problems)
                raise (ArtifactError if refused else ClusterError)("; ".join(problems))
            for w in workers:
                r = w.report
                log.info("node %s: %s, %d CPUs, tables %s in %.2f s", r.node, spec.name, r.cpus,
                         "received and verified" if r.shipped else "ready", r.seconds)
            self._loaded.add(spec)
            return workers

    def _start(self) -> list[Worker]:
        """One actor per live node, holding the node's CPUs; ClusterError naming the
        nodes whose actor did not start within START_SECONDS."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        nodes = self.nodes()
        actors = [self._actor_class.options(
            num_cpus=n.cpus, max_concurrency=IN_FLIGHT_PER_CPU * n.cpus,  # the pool searches
            max_restarts=MAX_RESTARTS, max_task_retries=MAX_TASK_RETRIES,
            scheduling_strategy=NodeAffinitySchedulingStrategy(n.node_id, soft=False),
        ).remote(str(self.cache_dir), n.cpus) for n in nodes]
        workers = [Worker(a, n) for a, n in zip(actors, nodes)]
        refs = {w.actor.__ray_ready__.remote(): w for w in workers}
        ready, late = self.ray.wait(list(refs), num_returns=len(refs), timeout=START_SECONDS)
        problems = [f"node {refs[r].node.name}: its worker did not start within "
                    f"{START_SECONDS:g} s (are its CPUs held by another job?)" for r in late]
        for r in ready:
            try:
                self.ray.get(r)
            except self.ray.exceptions.RayError as e:
                problems.append(f"node {refs[r].node.name}: its worker failed to start: "
                                f"{first_line(e)}")
        if problems:
            for a in actors:
                self.ray.kill(a, no_restart=True)
            raise ClusterError("; ".join(problems))
        return workers

    def _ask(self, workers: list[Worker], method: str, *args) -> list[str]:
        """Call ``method`` on each worker's actor and keep its NodeReport; the problems."""
        refs = [w.control(method, *args) for w in workers]
        problems = []
        for w, ref in zip(workers, refs):
            try:
                w.report = self.ray.get(ref)
            except self.ray.exceptions.RayError as e:
                problems.append(f"node {w.node.name}: its worker failed: {first_line(e)}")
                continue
            if w.report.error:
                problems.append(w.report.error)
        return problems

    def _source(self, solver: Solver) -> TableSource:
        """The packed artifact of the solver's tables, packed once per version: in the
        shared directory, else put in the object store (fetched only by nodes without it)."""
        from .packing import pack

        h = solver.heuristic
        name = f"{h.artifact}.pdbpack"
        target = self.shared / name if self.shared else self.cache_dir / "packed" / name
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            pack(h.artifact_path, target, force=True)
        if self.shared:
            return TableSource(h.artifact, (), str(target))
        return TableSource(h.artifact, (self.ray.put(target.read_bytes()),), None)

    def info(self) -> ClusterInfo:
        """Nodes, CPUs, and the search threads busy now (over every pool's actors)."""
        nodes = self.nodes()
        busy = 0
        with self._lock:
            live = [w for w in self._workers or () if w.lost is None]
        refs = [w.control("progress", "") for w in live]
        ready, _ = self.ray.wait(refs, num_returns=len(refs), timeout=2.0) if refs else ([], [])
        for ref in ready:
            try:
                busy += self.ray.get(ref).busy
            except self.ray.exceptions.RayError:
                pass
        return ClusterInfo(self.address, len(nodes), sum(n.cpus for n in nodes), busy)

    def close(self) -> None:
        with self._lock:
            workers, self._workers = self._workers or [], None
            self._loaded.clear()
        for w in workers:
            try:
                self.ray.kill(w.actor, no_restart=True)
            except Exception:  # already gone
                pass
        if self._owns_ray and self.ray.is_initialized():
            self.ray.shutdown()

    # -- one board ---------------------------------------------------------------------

    def search(self, solver: Solver, prepared: PreparedBoard, control: SearchControl | None = None,
               *, serial_below: int = SERIAL_BELOW, target: int | None = None) -> SolveResult:
        """Solve a prepared board with IDA* over the cluster: optimal, replayed on the
        driver. Iterations that generate fewer than ``serial_below`` nodes run on this
        process (an easy board never pays for the cluster); the rest are split into
        about ``FRONTIER_PER_THREAD`` subtrees per CPU of the cluster (or ``target``).
        Raises LimitReached when the control's budget, timeout or stop flag ends it."""
        control = control or SearchControl()
        run = self.running = SearchRun(self, solver, prepared, control, target)
        timer = control.timer()
        source = solver.heuristic.source  # the driver's table file: frontier and replay read it
        try:
            with (source.guarding(control) if source else contextlib.nullcontext(),
                  MAIN_THREAD_SEARCHES.halting(control)):  # Ctrl-C halts the job, even if lost
                return search_bounds(solver, prepared, control, run.cpus, run.serial,
                                     run.iteration, run.publish, serial_below)
        except BaseException as e:
            if not isinstance(e, PdbError):  # Ctrl-C, SIGTERM
                control.halt("cancelled")
            raise
        finally:
            if timer:
                timer.cancel()
            run.finish()

    # -- many boards -------------------------------------------------------------------

    def solve_many(self, items: Iterable[tuple[Solver, PreparedBoard]], *, algorithm=None,
                   budget: int | None = None, timeout: float | None = None):
        """Solve boards over the cluster, one board per task; yields a BoardAnswer per
        item in the order given, each as soon as it and those before it are done. Each
        answer has been replayed here."""
        items = list(items)
        job = uuid.uuid4().hex
        specs = [HeuristicSpec.of(solver) for solver, _ in items]
        workers = []
        for solver, _ in {spec: item for spec, item in zip(specs, items)}.values():
            workers = self.workers(solver)
        answers: dict[int, BoardAnswer] = {}
        tasks = Dispatch(self, workers, range(len(items)), "its boards go to the other nodes",
                         cancelled=BoardAnswer(None, "cancelled", EXIT_LIMIT))
        nxt = 0
        try:
            while tasks.pending:
                tasks.feed(lambda w, i: w.actor.solve.remote(
                    job, specs[i], i, items[i][1].board, items[i][1].goal, algorithm, budget, timeout))
                for i, answer in tasks.finished():
                    if answer.result is not None and not replays(items[i][1], answer.result):
                        answer = BoardAnswer(None, "internal error: the node's solution does not "
                                             "replay to the goal", 1)
                    answers[i] = answer
                while nxt in answers:
                    yield answers.pop(nxt)
                    nxt += 1
        finally:
            if tasks.refs:
                self._halt_job(job, workers, list(tasks.refs))

    # -- a catalogue's tables ----------------------------------------------------------

    def build_threads(self, tables: int) -> int:
        """Threads per table build: the cluster's CPUs shared out, at most a node's."""
        nodes = self.nodes()
        return max(1, min(max(n.cpus for n in nodes), sum(n.cpus for n in nodes) // max(1, tables)))

    def build_tables(self, jobs: list, labels: dict, progress: bool = True) -> list:
        """Every job's table (builder.TableJob -> artifact.TableData), in job order, each
        built as a Ray task on ``job.threads`` CPUs of some node (retried if its worker
        dies)."""
        import sys

        refs = [self._build_task.options(num_cpus=j.threads, max_retries=BUILD_RETRIES).remote(j)
                for j in jobs]
        index = {ref: k for k, ref in enumerate(refs)}
        out: list = [None] * len(jobs)
        pending = list(refs)
        try:
            while pending:
                ready, pending = self.ray.wait(pending, num_returns=1)
                for ref in ready:
                    k = index[ref]
                    try:
                        table, node, seconds = self.ray.get(ref)
                    except self.ray.exceptions.RayError as e:
                        raise ClusterError(f"{labels[jobs[k].index]}: the build failed on the "
                                           f"cluster: {first_line(e)}") from None
                    out[k] = table
                    if progress:
                        print(f"{labels[jobs[k].index]}: {table.entries:,} entries on node {node} "
                              f"in {seconds:.1f} s", file=sys.stderr, flush=True)
        finally:
            for ref in pending:
                self.ray.cancel(ref, force=True)
        return out

    # -- shared by the above -----------------------------------------------------------

    def _lose(self, w: Worker, e: BaseException, what: str) -> None:
        if w.lost is None:
            w.lost = first_line(e)
            self.notify(f"node {w.node.name} lost ({w.lost}); {what}")

    def _halt_job(self, job: str, workers: list[Worker], refs: list) -> None:
        """Halt a job everywhere: the running kernels stop within a poll, the queued
        tasks are cancelled."""
        for w in workers:
            if w.lost is None:
                try:
                    w.control("halt", job)
                except Exception:  # a dead actor: nothing runs there
                    pass
        for ref in refs:
            try:
                self.ray.cancel(ref)
            except Exception:  # finished meanwhile
                pass
        for w in workers:
            w.in_flight.clear()


def replays(prepared: PreparedBoard, result: SolveResult) -> bool:
    """Whether a result's moves take the board to its goal (checked on the driver)."""
    from . import puzzle

    return puzzle.apply_tile_moves(prepared.board, result.moves) == prepared.frame.target


def wait_any(ray, refs: list) -> list:
    """The refs done now, once at least one is or POLL_SECONDS have passed."""
    ready, rest = ray.wait(refs, num_returns=1, timeout=POLL_SECONDS)
    if ready and rest:
        ready += ray.wait(rest, num_returns=len(rest), timeout=0)[0]
    return ready


def first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__


class Dispatch:
    """Tasks on the nodes' actors: each item handed to the least loaded live worker with
    room (``submit(worker, item)`` -> ObjectRef), collected as they finish. An item whose
    actor died for good goes back to the queue (the loss is reported: ``what`` happens to
    its work); with no worker left, ClusterError."""

    def __init__(self, cluster: Cluster, workers: list[Worker], items, what: str, cancelled=None):
        self.cluster, self.ray, self.workers = cluster, cluster.ray, workers
        self.todo = deque(items)
        self.refs: dict = {}  # ObjectRef -> (worker, item)
        self.what, self.cancelled = what, cancelled

    @property
    def pending(self) -> bool:
        return bool(self.todo or self.refs)

    def feed(self, submit) -> None:
        while self.todo:
            free = [w for w in self.workers if w.lost is None and len(w.in_flight) < w.capacity]
            if not free:
                return
            w = min(free, key=lambda w: len(w.in_flight) / w.node.cpus)
            item = self.todo.popleft()
            ref = submit(w, item)
            w.in_flight[ref] = item
            self.refs[ref] = (w, item)

    def finished(self) -> list[tuple]:
        """(item, value) of the tasks done now (waiting at most POLL_SECONDS for one); a
        task cancelled before it ran gives ``cancelled``."""
        if not self.refs:
            raise ClusterError("every node of the cluster was lost; the work cannot go on")
        out = []
        for ref in wait_any(self.ray, list(self.refs)):
            w, item = self.refs.pop(ref)
            w.in_flight.pop(ref, None)
            try:
                out.append((item, self.ray.get(ref)))
            except self.ray.exceptions.TaskCancelledError:
                out.append((item, self.cancelled))
            except (self.ray.exceptions.RayActorError,
                    self.ray.exceptions.ActorUnschedulableError) as e:
                # dead for good, or to be restarted on a node that is gone (its node
                # affinity is hard): the node is lost either way
                self.cluster._lose(w, e, self.what)
                self.todo.appendleft(item)
        return out


class SearchRun:
    """One board's search on the cluster: the frontier, the iterations' batches on the
    nodes' actors, the live counters."""

    def __init__(self, cluster: Cluster, solver: Solver, prepared: PreparedBoard,
                 control: SearchControl, target: int | None):
        self.cluster, self.ray = cluster, cluster.ray
        self.solver, self.prepared, self.control = solver, prepared, control
        self.workers = cluster.workers(solver)
        self.spec = HeuristicSpec.of(solver)
        self.cpus = sum(w.node.cpus for w in self.workers if w.lost is None)
        self.target = target or FRONTIER_PER_THREAD * self.cpus
        self.job = uuid.uuid4().hex
        self.serial = np.zeros_like(control.counters)
        self.nodes: list | None = None
        self.subtrees: list[SubtreeRecord] = []  # each subtree searched, as its node timed it
        self.live: dict[int, NodeProgress] = {}  # per worker: the last poll
        self.busy = 0
        self._polls: dict = {}
        self._last_poll = 0.0

    def publish(self, bound: int) -> None:
        c = self.control.counters
        c[GENERATED] = self.serial[GENERATED] + sum(p.generated for p in self.live.values())
        c[EXPANDED] = self.serial[EXPANDED] + sum(p.expanded for p in self.live.values())
        c[BOUND] = bound

    def iteration(self, bound: int, left: int) -> IterationOutcome:
        """Every subtree under ``bound``, in batches over the nodes."""
        if self.nodes is None:
            nodes, goal_path = frontier(self.solver, self.prepared.image, self.target)
            if goal_path is not None:
                return IterationOutcome(list(goal_path), INF, 0, 0, NOT_FOUND)
            self.nodes = nodes
        per = max(1, len(self.nodes) // (BATCHES_PER_CPU * self.cpus))
        batches = deque(Batch(i, self.nodes[i:i + per]) for i in range(0, len(self.nodes), per))
        tally = Tally()
        tasks = Dispatch(self.cluster, self.workers, batches, "its subtrees go to the other nodes",
                         cancelled=BatchResult(IterationOutcome(None, INF, 0, 0, STOPPED), []))
        halted = False
        stop, budget = self.control.stop, self.control.budget
        try:
            while tasks.pending:
                if not halted:
                    tasks.feed(lambda w, batch: w.actor.search.remote(self.job, self.spec, bound,
                                                                      left, batch))
                for _, done in tasks.finished():
                    tally.add(done.outcome, bool(stop[0]))
                    self.subtrees.extend(done.subtrees)
                self._poll(bound)
                if tally.found is not None or stop[0]:
                    if not halted:
                        halted = True
                        tasks.todo.clear()
                        self.cluster._halt_job(self.job, [], list(tasks.refs))
                        self._halt_actors()
                if (budget is not None and tally.found is None and not halted
                        and self.control.counters[GENERATED] > budget):
                    tally.status, halted = BUDGET, True
                    tasks.todo.clear()
                    self._halt_actors()
            if stop[0] and tally.found is None:
                tally.status = STOPPED
            return tally.outcome()
        except BaseException:
            self.cluster._halt_job(self.job, self.workers, list(tasks.refs))
            raise

    def _poll(self, bound: int) -> None:
        """Collect the nodes' live counters (asked for without waiting), publish them."""
        now = time.monotonic()
        if self._polls:
            ready, _ = self.ray.wait(list(self._polls), num_returns=len(self._polls), timeout=0)
            for ref in ready:
                k = self._polls.pop(ref)
                try:
                    self.live[k] = self.ray.get(ref)
                except self.ray.exceptions.RayError:
                    pass
            self.busy = sum(p.busy for p in self.live.values())
        if not self._polls and now - self._last_poll >= PROGRESS_SECONDS:
            self._last_poll = now
            self._polls = {w.control("progress", self.job): k
                           for k, w in enumerate(self.workers) if w.lost is None}
        self.publish(bound)

    def _halt_actors(self) -> None:
        for w in self.workers:
            if w.lost is None:
                w.control("halt", self.job)

    def finish(self) -> None:
        """The job is over: whatever still runs stops."""
        self._halt_actors()
        for w in self.workers:
            w.in_flight.clear()
