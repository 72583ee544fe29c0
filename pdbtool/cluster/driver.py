"""Searches, batches and builds on a Ray cluster (the optional ``cluster`` extra).

The driver (this process) keeps what it already does on one machine: it chooses the
heuristic, iterates the IDA* bounds (threads.search_bounds), expands the root to a
frontier (frontier.frontier), combines the outcomes (control.Tally) and replays the
answer (Solver.result). What it hands out are the same subtree tasks the threads run,
(frontier nodes, bound, budget) -> IterationOutcome, in batches of consecutive frontier
nodes (``Batch``); each subtree's size and CPU time come back with the outcome
(``SubtreeRecord``: the task sizes that scripts/cluster_model.py simulates larger clusters from).

* **One actor per node** (``NodeWorker``) holds the node's CPUs, maps the tables once and
  searches with a pool of that many threads (the numba kernel releases the GIL), one
  subtree at a time and a job's subtrees in the iteration's order (closest first, as the
  threads' tasks: SearchRun), whichever batch they came in:
  the node's threads share its batches as one machine's threads share the subtrees. The
  first subtree that reaches the goal halts the job on its node at once. Its control calls
  (load, progress, halt) run in their own concurrency group, so they are answered while
  every search thread is busy.
* **Tables travel packed and are verified on arrival.** The driver asks each node for the
  tables' content version; only the nodes whose cache lacks it are sent the artifact,
  packed once per version on the driver (packing.pack), through Ray's object store or a
  shared directory every node sees. Such a node unpacks it and runs every verify check
  (loading.install: sha256 of each table, then the checks of ``pdbtool verify``); a copy
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
import logging
import os
import shutil
import signal
import socket
import threading
import time
import uuid
from pathlib import Path
from typing import Callable, Iterable

from pdbtool import __version__
from pdbtool.cluster.frontier import MAX_FRONTIER, SERIAL_BELOW
from pdbtool.cluster.messages import (BUILD_RETRIES, IN_FLIGHT_PER_CPU, LOCAL,
                                      LOCAL_NICENESS, MAX_RESTARTS, MAX_TASK_RETRIES,
                                      PROBE_PAUSE, PROBE_SECONDS, PROBE_TRIES, RECONNECT_SECONDS,
                                      START_SECONDS, BoardAnswer, ClusterError, ClusterInfo,
                                      HeuristicSpec, TableSource, default_cache_dir,
                                      keep_on_loopback, log, on_loopback, ray_module, reach,
                                      split_address)
from pdbtool.cluster.node import NodeWorker, build_on_node
from pdbtool.cluster.run import Dispatch, Node, SearchRun, Worker, first_line, replays
from pdbtool.errors import EXIT_LIMIT, ArtifactError, BadInput, LimitReached, not_a_directory
from pdbtool.result import SolveResult
from pdbtool.search.checkpoint import CLUSTER_ALGORITHM, Checkpoint, identity
from pdbtool.search.control import PreparedBoard, SearchControl, envelope
from pdbtool.search.solver import Solver
from pdbtool.search.threads import search_bounds
from pdbtool.tables.files import private_directory



def remove_session(session: Path) -> None:
    """Remove the directory of a Ray this process started and stopped (its logs and
    sockets, about 300 KB: /tmp/ray gathered one for every command run with --cluster
    local), and Ray's link to the latest session if it names this one."""
    shutil.rmtree(session, ignore_errors=True)
    latest = session.parent / "session_latest"
    with contextlib.suppress(OSError):
        if latest.is_symlink() and Path(os.readlink(latest)).name == session.name:
            latest.unlink()


def resumed(solver: Solver, prepared: PreparedBoard, keeper) -> Checkpoint | None:
    """The cluster search's saved progress in ``keeper`` (a Checkpointing, or None): None
    if none is saved yet; BadInput for another search's checkpoint (a thread search's
    too) or a damaged one. Needs no cluster: the command line asks it before Ray starts."""
    if keeper is None:
        return None
    resume = keeper.load(identity(solver, prepared, CLUSTER_ALGORITHM), frame=prepared.frame)
    if resume and resume.split > MAX_FRONTIER:
        raise BadInput(f"{keeper.path}: the checkpoint's frontier of {resume.split:,} "
                       "subtrees is larger than any cluster search of this program makes; "
                       "it is damaged")
    return resume

class Cluster:
    """A connection to a Ray cluster (``address``; ``"auto"``: the one Ray finds, ``head_of``;
    ``"local"`` to start Ray on this machine; an already initialised Ray is used as it
    is), and the actors made for the heuristics it has served. ``notify(text)`` hears
    about lost nodes. Close it (or use it as a context manager) to free the nodes' CPUs."""

    def __init__(self, address: str = LOCAL, *, cache_dir=None, shared=None,
                 notify: Callable[[str], None] | None = None, num_cpus: int | None = None):
        # Ray ends a driver whose head it has not heard for a minute (its own line, "The
        # program will terminate", exit 1, no checkpoint saved): the searches probe the head
        # themselves (SearchRun: reachable) and stop saying so. Read when Ray is imported.
        os.environ.setdefault("RAY_gcs_rpc_server_reconnect_timeout_s", str(RECONNECT_SECONDS))
        self.ray = ray = ray_module(address)  # "local": on loopback only
        self.address = address
        self.cache_dir = Path(cache_dir) if cache_dir else default_cache_dir()
        self.shared = Path(shared) if shared else None
        if self.shared is not None and not self.shared.is_dir():
            raise BadInput(f"--cluster-shared {not_a_directory(self.shared)}")
        self.notify = notify or (lambda text: log.warning("%s", text))
        self._owns_ray = not ray.is_initialized()
        self._session: Path | None = None  # the directory of a Ray started here
        self.lost: str | None = None  # why the cluster is no longer asked (``reachable``)
        self._nodes: list[Node] | None = None  # asked of the head once (``nodes``)
        # The address probed (``reachable``); an initialised Ray's head is not looked for
        self.head = head_of(address) if self._owns_ray or address != "auto" else None
        if self._owns_ray:
            if address == LOCAL:  # read by the raylet it starts; the user's setting wins
                os.environ.setdefault("RAY_worker_niceness", LOCAL_NICENESS)
                # Ray's default for a new local cluster, token authentication (a token
                # made once in ~/.ray), is announced in a warning on every command
                logging.getLogger("ray._private.authentication").setLevel(logging.ERROR)
            reach(self.head, self.named)
            try:
                with kept_sigterm():
                    # "local": a new instance, even if one runs here; "auto": the head
                    # probed (not looked for again)
                    context = ray.init(
                        address=self.head or address,
                        num_cpus=num_cpus if address == LOCAL else None,
                        include_dashboard=False, log_to_driver=False,
                        logging_level=logging.ERROR, configure_logging=False)
                if address == LOCAL and context.address_info.get("session_dir"):
                    self._session = Path(context.address_info["session_dir"])
            except (ConnectionError, RuntimeError, ValueError) as e:
                if address == LOCAL:
                    raise ClusterError(f"cannot start Ray on this machine: {e}") from None
                raise ClusterError(f"cannot reach the Ray cluster at {self.named}: {e} (a cluster "
                                   "with token authentication also needs RAY_AUTH_MODE=token "
                                   "here, and its token in ~/.ray/auth_token)") from None
            except BaseException as e:  # a Ctrl-C, or a SIGTERM that Ray's handler took
                self._abandon_start()
                if isinstance(e, SystemExit):  # (ray.init's handler: sys.exit on SIGTERM)
                    os.kill(os.getpid(), signal.SIGTERM)  # to the process's own, put back
                    raise ClusterError("Ray's start was stopped by SIGTERM") from None
                raise
        self._workers: list[Worker] | None = None  # one per node, made on first use
        self._loaded: set[HeuristicSpec] = set()    # heuristics every worker has loaded
        self._lock = threading.Lock()
        self.running: SearchRun | None = None  # the last search started (its busy count)
        self._actor_class = ray.remote(concurrency_groups={"control": 2})(NodeWorker)
        self._build_task = ray.remote(build_on_node)

    def _abandon_start(self) -> None:
        """Ray's start stopped half way (Ctrl-C, SIGTERM): what it started is shut down and
        a local session's directory removed (its processes and /tmp/ray/session_* stayed)."""
        session = None
        with contextlib.suppress(Exception):  # (how far the start came decides what exists)
            node = self.ray._private.worker._global_node
            if node is not None and self.address == LOCAL:
                session = Path(node.get_session_dir_path())
        with contextlib.suppress(Exception):
            self.ray.shutdown()
        if session is not None:
            remove_session(session)

    @property
    def named(self) -> str:
        """The cluster's address in messages: with the head's for "auto"."""
        if self.head is None or self.head == self.address:
            return self.address
        return f"{self.head} (--cluster {self.address})"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- nodes and actors --------------------------------------------------------------

    def nodes(self) -> list[Node]:
        """The cluster's live nodes that have CPUs, asked of its head once, while it takes
        a TCP connection (``reachable``), then kept (the actors are made once too: nodes
        that join later are not used). Ray's calls for the cluster's state block while the
        head is away, hung or gone, and when a head restarted at that address answers one,
        Ray ends the process (a failed check, "WrongClusterID", a stack dump, SIGABRT): a
        daemon that asked while the head was away died when it came back. After this one
        call only the actors are asked (``info``)."""
        if self._nodes is None:
            self.reachable()
            out = []
            for n in self.ray.nodes():
                cpus = int(n.get("Resources", {}).get("CPU", 0))
                if n.get("Alive") and cpus > 0:
                    out.append(Node(n["NodeID"], f"{n.get('NodeManagerHostname', '?')} "
                                                 f"({n.get('NodeManagerAddress', '?')})", cpus))
            if not out:
                raise ClusterError(f"the Ray cluster at {self.named} has no live node with "
                                   "CPUs")
            self._nodes = out
        return self._nodes

    def reachable(self) -> None:
        """ClusterError once the head has not taken a TCP connection, and from then on
        (``lost``): Ray cannot take a driver back to a head that restarted, so the command,
        or pdbd, is restarted to use the cluster again. A probe refused (or failed any way
        but a timeout) is final: nothing listens there, and a connection taken later would
        be a restarted head's. A probe that timed out (PROBE_SECONDS: a loaded head or
        network) is tried again, PROBE_TRIES in all, PROBE_PAUSE apart, before the head
        is taken for lost: a head that died meanwhile on a live host refuses the next one,
        and a new head would have to start (seconds) within those few seconds of silence
        to be taken for the old one."""
        if self.lost is not None:
            raise ClusterError(self.lost)
        if self.head is None:  # this machine's own Ray
            return
        where = split_address(self.head)
        for tries in range(1, PROBE_TRIES + 1):
            try:
                socket.create_connection(where, timeout=PROBE_SECONDS).close()
                return
            except TimeoutError:
                reason = f"timed out {tries} times in a row, {PROBE_SECONDS:g} s each"
            except OSError as e:
                reason = e.strerror or str(e)
                break
            if tries < PROBE_TRIES:
                time.sleep(PROBE_PAUSE)
        self.lost = (f"the Ray cluster's head at {self.named} was lost at "
                     f"{time.strftime('%H:%M:%S')} ({reason}); Ray cannot take a driver back "
                     "to a head that restarted, so it is not asked again: restart to use the "
                     "cluster")
        self.notify(self.lost)
        raise ClusterError(self.lost)

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
                raise ClusterError(f"every node of the Ray cluster at {self.named} was lost")
            if spec in self._loaded:
                return workers
            problems = self._ask(workers, "load", spec)
            missing = [w for w in workers if w.report is not None and w.report.missing]
            source = None
            if missing and not problems:  # ship the tables to the nodes that lack them
                source = self._source(solver)
                problems = self._ask(missing, "load", spec, source)
            if problems:
                refused = any("refused" in p for p in problems)
                if refused and source is not None:  # the copy shipped: said where it is kept
                    problems.append(f"the copy shipped is {self._pack_path(solver)} (packed "
                                    "once per version: remove it, and the next run packs the "
                                    "table again)")
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
        from pdbtool.tables.packing import pack

        h = solver.heuristic
        target = self._pack_path(solver)
        if self.shared:  # a directory every node reads: the operator's to protect
            target.parent.mkdir(parents=True, exist_ok=True)
        else:
            private_directory(private_directory(self.cache_dir) / "packed")
        if not target.exists():
            pack(h.artifact_path, target, force=True)
        if self.shared:
            return TableSource((), str(target))
        return TableSource((self.ray.put(target.read_bytes()),), None)

    def _pack_path(self, solver: Solver) -> Path:
        """Where the packed artifact of the solver's tables is kept: the shared directory,
        else the driver's cache."""
        name = f"{solver.heuristic.artifact}.pdbpack"
        return (self.shared or self.cache_dir / "packed") / name

    def info(self) -> ClusterInfo:
        """Nodes, CPUs, and the search threads busy now (over every pool's actors): the
        nodes of the live actors once they are made, else those the head named (``nodes``);
        ClusterError if the head does not take a TCP connection (``reachable``)."""
        self.reachable()
        busy = 0
        made = self._workers  # replaced whole, never changed in place: read without the
        # lock, which a first load holds for minutes (CPUs waited for, tables shipped)
        live = [w for w in made or () if w.lost is None]
        nodes = [w.node for w in live] if made is not None else self.nodes()
        refs = [w.control("progress", "") for w in live]
        ready, _ = self.ray.wait(refs, num_returns=len(refs), timeout=2.0) if refs else ([], [])
        for ref in ready:
            try:
                busy += self.ray.get(ref).busy
            except self.ray.exceptions.RayError:
                pass
        return ClusterInfo(self.named, len(nodes), sum(n.cpus for n in nodes), busy)

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
        if self._session is not None:
            remove_session(self._session)
            self._session = None

    # -- one board ---------------------------------------------------------------------

    def search(self, solver: Solver, prepared: PreparedBoard, control: SearchControl | None = None,
               *, serial_below: int = SERIAL_BELOW, target: int | None = None) -> SolveResult:
        """Solve a prepared board with IDA* over the cluster: optimal, replayed on the
        driver. Iterations that generate fewer than ``serial_below`` nodes run on this
        process (an easy board never pays for the cluster); the rest are split into
        about ``FRONTIER_PER_CPU`` subtrees per CPU of the cluster (or ``target``).
        Raises LimitReached when the control's budget, timeout or stop flag ends it. With
        ``control.checkpoint`` the search saves its progress and resumes from it, as on
        threads (search/checkpoint.py)."""
        control = control or SearchControl()
        keeper = control.checkpoint
        with keeper.holding() if keeper else contextlib.nullcontext():  # before it is read
            resume = resumed(solver, prepared, keeper)
            run = self.running = SearchRun(self, solver, prepared, control, target, resume)
            try:  # the driver's table file: the frontier and the replay read it
                with envelope(control, solver.heuristic.source):
                    return search_bounds(solver, prepared, control, run.cpus, run.serial,
                                         run.iteration, serial_below, resume=resume,
                                         begin=run.begin)
            finally:
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
                self.halt_job(job, workers, list(tasks.refs))

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

        refs = [self._build_task.options(num_cpus=j.threads, max_retries=BUILD_RETRIES).remote(
            j, __version__) for j in jobs]
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
                        cause = getattr(e, "cause", None)  # the task's own exception
                        why = str(cause) if isinstance(cause, ClusterError) else first_line(e)
                        raise ClusterError(f"{labels[jobs[k].index]}: the build failed on the "
                                           f"cluster: {why}") from None
                    out[k] = table
                    if progress:
                        print(f"{labels[jobs[k].index]}: {table.entries:,} entries on node {node} "
                              f"in {seconds:.1f} s", file=sys.stderr, flush=True)
        finally:
            for ref in pending:
                self.ray.cancel(ref, force=True)
        return out

    # -- shared by the above and by the runs (run.py) -----------------------------------

    def lose(self, w: Worker, e: BaseException, what: str) -> None:
        """Mark a worker lost (once) and say so, and what becomes of its work (``what``)."""
        if w.lost is None:
            w.lost = first_line(e)
            self.notify(f"node {w.node.name} lost ({w.lost}); {what}")

    def halt_job(self, job: str, workers: list[Worker], refs: list) -> None:
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


def head_of(address: str) -> str | None:
    """The address of the head ``ray.init(address)`` connects to, to probe before Ray is
    asked anything: ``address`` itself; None for "local" (a Ray started here); for "auto"
    the one Ray finds, as ray.init does (RAY_ADDRESS, else a head process running here or
    the address file of the last `ray start --head` in Ray's temp directory), None if that
    is "local" or an address of another scheme than ray://. A head found on loopback gets
    the driver on loopback (``keep_on_loopback``), as that address given does, before
    Ray's own canonical form of it (which, without, named 127.0.0.1 by this machine's
    own address: refused by a head on loopback). ClusterError if "auto" finds none. Ray
    is installed (``ray_module``)."""
    if address != "auto":
        return None if address == LOCAL else address
    env = os.environ.get("RAY_ADDRESS")
    if env and "://" in env:  # Ray Client's, taken as it is by ray.init
        return env if env.startswith("ray://") else None
    from ray._private.services import (canonicalize_bootstrap_address,
                                       get_ray_address_from_environment)

    try:
        found = get_ray_address_from_environment("auto", None)  # (ray.init's own lookup)
        if on_loopback(found):
            keep_on_loopback()
        return canonicalize_bootstrap_address(found)
    except ConnectionError:
        raise ClusterError("--cluster auto: no Ray cluster found (RAY_ADDRESS is not set, and "
                           "no head was started on this machine with `ray start --head`): give "
                           "the head's HOST:PORT, or use --cluster local") from None
    except ValueError as e:  # RAY_ADDRESS, or the address file, holds no address
        raise ClusterError(f"--cluster auto: {e} (from RAY_ADDRESS, or Ray's address file of "
                           "the last `ray start --head`)") from None


@contextlib.contextmanager
def kept_sigterm():
    """Keep the process's SIGTERM handling across ``ray.init``, which replaces it twice:
    with its own Python handler (exit 1, or a local node's teardown and exit 1) and, below
    Python, with its core worker's failure handler (a stack dump on stderr). Putting the
    Python handler back re-installs Python's own C handler too, so `pdbtool solve
    --cluster` exits 143 with one line on SIGTERM, and `pdbd serve --cluster` drains as
    without a cluster. Ray's local processes are still shut down: by ``Cluster.close``
    as the exception unwinds, or by Ray's exit hook."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    handler = signal.getsignal(signal.SIGTERM)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, handler if handler is not None else signal.SIG_DFL)


def search_here_then_on(solver: Solver, prepared: PreparedBoard,
                        control: SearchControl | None = None, *, cluster: Cluster,
                        above: int, on_cluster: Callable[[], None] | None = None) -> SolveResult:
    """IDA* of a prepared board here, within ``above`` nodes, then, if that was not enough,
    over ``cluster`` with the rest of the control's budget: what ``pdbd serve --cluster``
    does with each search. The caller's control is not changed; each part runs under one
    that shares its stop flag and counters (a deadline, a cancel or Ctrl-C stops either
    part), inside one envelope that keeps the caller's timeout over both. A part stopped by
    the control raises LimitReached as usual; only running out of ``above`` goes on
    (``on_cluster()`` is called then)."""
    control = control or SearchControl()
    with envelope(control):
        here = SearchControl(budget=above if control.budget is None else min(above, control.budget),
                             stop=control.stop, counters=control.counters)
        try:
            return solver.search(prepared, here)
        except LimitReached:
            if control.halted or (control.budget is not None and control.budget <= above):
                raise  # stopped, or the caller's own budget is spent
        left = None if control.budget is None else control.budget - here.generated
        there = SearchControl(budget=left, stop=control.stop, counters=control.counters)
        if on_cluster:
            on_cluster()
        return cluster.search(solver, prepared, there, serial_below=min(SERIAL_BELOW, above))
