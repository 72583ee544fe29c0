"""Running a job on the actors: the workers the driver holds (``Worker``), batches fed as
capacity frees (``Dispatch``), and one board's search iteration by iteration
(``SearchRun``); the answer replayed before it is returned."""

from __future__ import annotations

import re
import time
import uuid
from collections import deque
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from pdbtool.cluster.frontier import FRONTIER_PER_CPU, frontier
from pdbtool.cluster.messages import (BATCHES_PER_CPU, HEAD_CHECK_SECONDS, IN_FLIGHT_PER_CPU,
                                      POLL_SECONDS, PROGRESS_SECONDS, Batch, BatchResult,
                                      ClusterError, HeuristicSpec, NodeProgress, NodeReport,
                                      SubtreeRecord)
from pdbtool.errors import BadInput, PdbError
from pdbtool.kernels.ida import BOUND, BUDGET, EXPANDED, GENERATED, INF, NOT_FOUND, STOPPED
from pdbtool.kernels.tasks import FAR
from pdbtool.result import SolveResult
from pdbtool.search.checkpoint import CLUSTER_ALGORITHM, Checkpoint, identity
from pdbtool.search.control import (IterationOutcome, PreparedBoard, Root, SearchControl,
                                    Tally, closest_first)
from pdbtool.search.solver import Solver
from pdbtool.search.threads import Counted

if TYPE_CHECKING:
    from pdbtool.cluster.driver import Cluster


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


def replays(prepared: PreparedBoard, result: SolveResult) -> bool:
    """Whether a result's moves take the board to its goal (checked on the driver)."""
    from pdbtool import puzzle

    return puzzle.apply_tile_moves(prepared.board, result.moves) == prepared.frame.target


def wait_any(ray, refs: list) -> list:
    """The refs done now, once at least one is or POLL_SECONDS have passed."""
    ready, rest = ray.wait(refs, num_returns=1, timeout=POLL_SECONDS)
    if ready and rest:
        ready += ray.wait(rest, num_returns=len(rest), timeout=0)[0]
    return ready


ANSI = re.compile(r"\x1b\[[0-9;]*m")  # Ray colours its task errors' first line


def first_line(e: BaseException) -> str:
    """What went wrong, in a line: a Ray task's error by its cause (an OSError on the
    node, say: its first line was only "ray::NodeWorker.load() (pid=..., actor_id=...)",
    coloured), else the error's own first line."""
    cause = getattr(e, "cause", None)
    if isinstance(cause, BaseException) and cause is not e:
        return f"{type(cause).__name__}: {first_line(cause)}"
    text = ANSI.sub("", str(e)).strip().splitlines()
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
                self.cluster.lose(w, e, self.what)
                self.todo.appendleft(item)
            except self.ray.exceptions.RayTaskError as e:  # the task raised: a refusal
                cause = getattr(e, "cause", None)  # as itself (its exit code), else in a
                if isinstance(cause, PdbError):  # line (Ray's text is its traceback)
                    raise cause.with_traceback(None) from None
                raise ClusterError(f"node {w.node.name}: {first_line(e)}") from None
        return out


class SearchRun:
    """One board's search on the cluster: the frontier, the iterations' batches on the
    nodes' actors, the live counters. Each iteration after the first searches the
    frontier's subtrees closest first (by the smallest h their search expanded in the one
    before; ties in frontier order), as the threads order their tasks: the goal's subtree
    is nearly always among the first, so the last iteration ends early. With
    ``control.checkpoint`` the finished batches of the current iteration are saved now and
    then, and at a stop, with the order; ``resume`` (a checkpoint of this search) searches
    only the batches it lacks (search/checkpoint.py)."""

    def __init__(self, cluster: Cluster, solver: Solver, prepared: PreparedBoard,
                 control: SearchControl, target: int | None, resume: Checkpoint | None = None):
        self.cluster, self.ray = cluster, cluster.ray
        self.solver, self.prepared, self.control = solver, prepared, control
        self.workers = cluster.workers(solver)
        self.spec = HeuristicSpec.of(solver)
        self.cpus = sum(w.node.cpus for w in self.workers if w.lost is None)
        self.target = resume.split if resume else target or FRONTIER_PER_CPU * self.cpus
        self.keeper, self.resume = control.checkpoint, resume
        # what the shared counters held before this run (pdbd's search on its own machine
        # first, search_here_then_on): the budget is this run's, its nodes counted beyond it
        self.base = int(control.counters[GENERATED])
        self.before: Counted | None = None  # what the iterations before the current counted
        self.job = uuid.uuid4().hex
        self.serial = np.zeros_like(control.counters)
        self.nodes: list | None = None
        self.order: np.ndarray | None = None    # the iteration's order of the frontier
        self.closest: np.ndarray | None = None  # per frontier node, filled as batches end
        self.subtrees: list[SubtreeRecord] = []  # each subtree searched, as its node timed it
        self.live: dict[int, NodeProgress] = {}  # per worker: the last poll
        self.lost_counts = np.zeros(2, np.int64)  # generated, expanded by actors since
        # restarted (a restarted actor counts the job from 0 again): counted all the same
        self.busy = 0
        self._polls: dict = {}
        self._last_poll = 0.0
        self._last_check = time.monotonic()

    @property
    def live_cpus(self) -> int:
        """The CPUs of the nodes not lost (``cpus``: at the search's start)."""
        return sum(w.node.cpus for w in self.workers if w.lost is None)

    def node_counts(self) -> np.ndarray:
        """Generated and expanded: what the nodes counted of this job so far, as last heard
        (the counts of restarted actors kept)."""
        return self.lost_counts + np.array([sum(p.generated for p in self.live.values()),
                                            sum(p.expanded for p in self.live.values())], np.int64)

    def publish(self, bound: int) -> None:
        c = self.control.counters
        generated, expanded = self.node_counts()
        c[GENERATED] = self.serial[GENERATED] + generated
        c[EXPANDED] = self.serial[EXPANDED] + expanded
        c[BOUND] = bound

    def heard(self, k: int, now: NodeProgress) -> None:
        """Worker ``k``'s live counters: from another process, or fewer than it said
        before, and its actor was restarted (its job counted from 0 again): what the one
        before counted is kept, so the count shown and the budget checked never go back."""
        before = self.live.get(k)
        if before is not None and (now.pid != before.pid or now.generated < before.generated):
            self.lost_counts += (before.generated, before.expanded)
        self.live[k] = now

    def begin(self, bound, expanded, generated, iterations, seconds) -> None:
        """Told by the bound loop what was counted before each iteration (checkpoints)."""
        self.before = Counted(expanded, generated, list(iterations), seconds, time.monotonic())

    def progress(self, bound: int, finished: dict) -> Checkpoint:
        b = self.before
        return Checkpoint(
            identity(self.solver, self.prepared, CLUSTER_ALGORITHM), self.target, bound,
            b.expanded, b.generated, b.iterations, self.order.tolist(),
            self.closest.tolist(), dict(finished), b.seconds + time.monotonic() - b.at)

    def save(self, bound: int, finished: dict) -> None:
        self.keeper.save(self.progress(bound, finished))

    def batches(self, finished: dict) -> deque:
        """The frontier in batches of nodes consecutive in the iteration's order, about
        BATCHES_PER_CPU a CPU, but for the ranges of ``finished`` (the place in the order
        of a batch's first node -> [..., length])."""
        n = len(self.nodes)
        per = max(1, n // (BATCHES_PER_CPU * self.cpus))
        todo = np.ones(n, bool)
        for first, row in finished.items():
            if not (0 <= first and len(row) == 4 and 0 < row[3] <= n - first):
                raise BadInput(f"{self.keeper.path}: the checkpoint's batch at {first} does not "
                               f"fit a frontier of {n} nodes; it is damaged")
            todo[first:first + row[3]] = False
        out = deque()
        i = 0
        while i < n:
            if not todo[i]:
                i += 1
                continue
            j = i
            while j < n and todo[j] and j - i < per:
                j += 1
            indices = self.order[i:j].tolist()
            out.append(Batch(i, [self.nodes[k] for k in indices], indices))
            i = j
        return out

    def resumed(self) -> dict:
        """The saved iteration's finished batches, and its order (a checkpoint without one,
        of the code before closest first, searched in frontier order)."""
        saved, self.resume = self.resume, None
        n = len(self.nodes)
        if saved.order:
            if sorted(saved.order) != list(range(n)) or len(saved.closest) != n:
                raise BadInput(f"{self.keeper.path}: the checkpoint's order does not fit a "
                               f"frontier of {n} nodes; it is damaged")
            self.order[:], self.closest[:] = saved.order, saved.closest
        return dict(saved.finished)

    def iteration(self, bound: int, left: int, root: Root) -> IterationOutcome:
        """Every subtree under ``bound``, in batches over the nodes (the workers make their
        own ``root``: the frontier's nodes are their roots)."""
        if self.nodes is None:
            nodes, goal_path = frontier(self.solver, self.prepared.image, self.target)
            if goal_path is not None:
                return IterationOutcome(list(goal_path), INF, 0, 0, NOT_FOUND)
            self.nodes = nodes
            self.order = np.arange(len(nodes), dtype=np.int64)
            self.closest = np.full(len(nodes), FAR, np.int64)
        finished: dict = {}  # first place in the order -> [next bound, expanded, generated, length]
        counted_before = self.node_counts()
        if self.resume:  # the saved bound: its finished batches are not searched again
            finished = self.resumed()
        else:
            self.closest.fill(FAR)
        batches = self.batches(finished)
        tally = Tally()
        per_batch = left  # each batch's budget: what is left beyond the saved batches' nodes
        if finished:
            saved = np.array(list(finished.values()), np.int64)
            tally.add(IterationOutcome(None, int(saved[:, 0].min()), int(saved[:, 1].sum()),
                                       int(saved[:, 2].sum()), NOT_FOUND))
            if left >= 0:
                per_batch = max(0, left - int(saved[:, 2].sum()))
        tasks = Dispatch(self.cluster, self.workers, batches, "its subtrees go to the other nodes",
                         cancelled=BatchResult(IterationOutcome(None, INF, 0, 0, STOPPED), []))
        halted = spent = False
        stop, budget = self.control.stop, self.control.budget
        try:
            # once halted, a batch whose node is lost is not searched again (Dispatch puts
            # it back in ``todo``): the loop waits only for the batches out
            while tasks.refs or (tasks.todo and not halted):
                if not halted:
                    tasks.feed(lambda w, batch: w.actor.search.remote(self.job, self.spec, bound,
                                                                      per_batch, batch))
                for batch, done in tasks.finished():
                    tally.add(done.outcome, bool(stop[0]))
                    self.subtrees.extend(done.subtrees)
                    for record in done.subtrees:
                        self.closest[record.index] = record.closest
                    o = done.outcome
                    if o.status == NOT_FOUND and o.found is None:
                        finished[batch.first] = [int(o.next_bound), int(o.expanded),
                                                 int(o.generated), len(batch.nodes)]
                self._poll(bound)
                if self.keeper is not None and not halted:
                    self.keeper.save_if_due(lambda: self.progress(bound, finished))
                if tally.found is not None or stop[0]:
                    if not halted:
                        halted = True
                        tasks.todo.clear()
                        self.cluster.halt_job(self.job, [], list(tasks.refs))
                        self._halt_actors()
                if (budget is not None and tally.found is None and not halted
                        and self.control.counters[GENERATED] - self.base > budget):
                    halted = spent = True
                    tasks.todo.clear()
                    self._halt_actors()
            if halted and tally.found is None:  # a batch cancelled while it ran counts 0:
                seen = self.node_counts() - counted_before  # the nodes' live counts say what
                tally.generated = max(tally.generated, int(seen[0]))  # this iteration searched
                tally.expanded = max(tally.expanded, int(seen[1]))
            if stop[0] and tally.found is None:
                tally.status = STOPPED
            elif tally.found is None and (spent or left >= 0 and tally.generated > left):
                # the budget, whatever the batches halted for it say (STOPPED), or spent
                # though no poll caught it while they ran
                tally.status = BUDGET
            if self.keeper is not None and tally.found is None and tally.status != NOT_FOUND:
                self.save(bound, finished)  # stopped: resumable from here
            # the next iteration's order: closest first, ties in frontier order
            self.order[:] = closest_first(self.closest)
            return tally.outcome()
        except BaseException:  # Ctrl-C or SIGTERM raised here (or a failure): the job
            self.cluster.halt_job(self.job, self.workers, list(tasks.refs))  # stops, and
            if self.keeper is not None and tally.found is None:  # the progress is saved
                self.save(bound, finished)  # as at any other stop, as the threads do
            raise

    def _poll(self, bound: int) -> None:
        """Collect the nodes' live counters (asked for without waiting), publish them."""
        now = time.monotonic()
        if self._polls:
            ready, _ = self.ray.wait(list(self._polls), num_returns=len(self._polls), timeout=0)
            for ref in ready:
                k = self._polls.pop(ref)
                try:
                    self.heard(k, self.ray.get(ref))
                except self.ray.exceptions.RayError:
                    pass
            self.busy = sum(p.busy for k, p in self.live.items() if self.workers[k].lost is None)
        if not self._polls and now - self._last_poll >= PROGRESS_SECONDS:
            self._last_poll = now
            self._polls = {w.control("progress", self.job): k
                           for k, w in enumerate(self.workers) if w.lost is None}
        self.publish(bound)
        if now - self._last_check >= HEAD_CHECK_SECONDS:  # a lost head: ClusterError, and
            self._last_check = now  # the progress saved as at any stop (iteration)
            self.cluster.reachable()

    def _halt_actors(self) -> None:
        for w in self.workers:
            if w.lost is None:
                w.control("halt", self.job)

    def finish(self) -> None:
        """The job is over: whatever still runs stops."""
        self._halt_actors()
        for w in self.workers:
            w.in_flight.clear()
