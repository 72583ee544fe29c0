"""The node side: one actor per node (``NodeWorker``) that receives the tables (packed,
verified on arrival, cached by version), maps them once and searches its batches on a
pool of threads; builds run as plain tasks (``build_on_node``)."""

from __future__ import annotations

import dataclasses
import fcntl
import itertools
import os
import threading
import time
from collections import OrderedDict
from pathlib import Path

import numpy as np

from pdbtool import __version__
from pdbtool.cluster.frontier import SubtreeSearch, search_subtree
from pdbtool.cluster.messages import (JOBS_KEPT, Batch, BatchResult, BoardAnswer, ClusterError,
                                      HeuristicSpec, NodeProgress, NodeReport, SubtreeRecord,
                                      TableSource, node_name, ray_module)
from pdbtool.cluster.ordered_pool import OrderedPool
from pdbtool.errors import ArtifactError, PdbError
from pdbtool.kernels.ida import EXPANDED, GENERATED
from pdbtool.search.control import SearchControl, Tally
from pdbtool.search.solver import Solver
from pdbtool.tables.files import private_directory


def receive_tables(version: str, source: TableSource | None, table: str, cache_dir: Path,
                   node: str) -> tuple[Path | None, bool]:
    """The installed artifact of ``version`` in this node's cache: there already (its
    verification stamp still valid), or fetched from ``source``, unpacked and verified now;
    (None, False) if it is not cached and no source is given. Returns (path, shipped).
    ArtifactError names the node and the table when the copy fails."""
    from pdbtool.tables import artifact, trust
    from pdbtool.loading import install

    tables = private_directory(private_directory(cache_dir) / "tables")
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


def same_pdbtool(driver: str, node: str) -> None:
    """ClusterError unless this node runs the driver's pdbtool (another version may search
    or build differently: its answers and tables are not the driver's)."""
    if driver != __version__:
        raise ClusterError(f"node {node} runs pdbtool {__version__}, the driver {driver}: "
                           "install the same version on every node")


def node_heuristic(spec: HeuristicSpec, source: TableSource | None, cache_dir: Path, node: str):
    """The spec's heuristic on this node (tables received and verified first); returns
    (heuristic, shipped), or (None, False) when the tables are not cached and no source
    is given."""
    from pdbtool.heuristics.table_free import table_free
    from pdbtool.loading import load_heuristic

    same_pdbtool(spec.pdbtool, node)
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
    board) at a time, a job's in the iteration's order (ordered_pool; closest first, as the
    driver makes it). A Ray task only hands its subtrees to the pool and waits for them,
    so the node's threads share every batch it holds: at the bound that finds the goal
    they all work on the earliest subtrees, as the threads of one machine do, instead of
    each thread running a whole batch of its own.
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
                            busy, os.getpid())

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
        their outcomes combined (control.Tally) and each one's size and time. The first
        subtree that reaches the goal halts the job on this node at once: any goal at this
        bound is optimal."""
        solver = self._solver(spec)
        state = self._job(job)
        rows = np.zeros((len(batch.nodes), 3), np.int64)  # live counters, one per subtree
        with self._lock:
            state.rows.append(rows)

        def subtree(k: int, node) -> tuple[SubtreeSearch, float]:
            t0 = time.thread_time()
            share = search_subtree(solver, node, bound, budget, state.halt, rows[k])
            if share.outcome.found is not None:
                state.halt[0] = 1
            return share, time.thread_time() - t0

        futures = [self._pool.submit((state.order, batch.first + k), self._busy_while, subtree, k, node)
                   for k, node in enumerate(batch.nodes)]
        tally, records = Tally(), []
        for k, future in enumerate(futures):
            share, seconds = future.result()
            tally.add(share.outcome)
            records.append(SubtreeRecord(bound, batch.indices[k], share.outcome.generated,
                                         seconds, share.outcome.found is not None, share.closest))
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
    from pdbtool import puzzle
    from pdbtool.search.control import FrontierNode

    board = puzzle.apply_blank_moves(puzzle.goal_board(solver.side, "blank-first"), "R")
    solver.solve(board, "blank-first")
    node = FrontierNode(board, board.index(0), 0, ())
    search_subtree(solver, node, 1, -1, np.zeros(1, np.int64), np.zeros(3, np.int64))


def build_on_node(job, pdbtool: str) -> tuple:
    """A Ray task: one table of a catalogue (builder.TableJob) on this node's cores, if it
    runs the driver's ``pdbtool`` version."""
    import numba

    from pdbtool.tables.builder import build_table

    same_pdbtool(pdbtool, node_name())
    numba.set_num_threads(max(1, min(job.threads, numba.config.NUMBA_NUM_THREADS)))
    t0 = time.perf_counter()
    table = build_table(job.tiles, job.shape, job.name, zero_aware=job.zero_aware, progress=False)
    return table, node_name(), time.perf_counter() - t0

