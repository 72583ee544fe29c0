"""Searches as jobs: tried first on the caller's thread (the fast lane), then on a bounded
pool of worker threads.

The IDA* kernel releases the GIL, so plain threads search in parallel over the same
memory-mapped tables. A job holds a board validated once (a PreparedBoard) and the
SearchControl the kernel shares with its caller: halting it makes the search return within
about a millisecond, and its counters are read for progress.

The fast lane (``FastLane``) runs an IDA* search on the thread that took the call, within a
small node budget (tens of milliseconds): most queries end there, without the hand-off to
the pool and back, and a query that does not goes on in the pool where the lane stopped
(its progress held in memory: pdbtool.search.checkpoint.Held), not from the start. Long
searches therefore hold a lane slot only briefly, and an easy query is answered within
about that time whatever the pool is busy with.
"""

from __future__ import annotations

import logging
import threading
import time
import traceback
from collections import deque
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass

from pdbtool.cli.console import plural
from pdbtool.errors import LimitReached
from pdbtool.kernels.ida import BOUND, EXPANDED, GENERATED
from pdbtool.kernels.tasks import RESULT_EXPANDED, RESULT_GENERATED
from pdbtool.search.checkpoint import Held
from pdbtool.search.control import PreparedBoard, SearchControl
from pdbtool.search.solver import Solver

log = logging.getLogger("pdbd")


class Done:
    """A search's outcome known when it is made (the fast lane's): a finished Future's
    methods, without the lock and condition a Future takes in each (nothing changes it)."""

    __slots__ = ("_result", "_exception")

    def __init__(self, result=None, exception: BaseException | None = None):
        self._result, self._exception = result, exception

    def done(self) -> bool:
        return True

    def cancelled(self) -> bool:
        return False

    def running(self) -> bool:
        return False

    def cancel(self) -> bool:
        return False  # too late: as a finished Future's

    def result(self, timeout=None):
        if self._exception is not None:
            raise self._exception
        return self._result

    def exception(self, timeout=None) -> BaseException | None:
        return self._exception

    def add_done_callback(self, fn) -> None:
        """Called at once, as a finished Future calls it (a failure logged, not raised)."""
        try:
            fn(self)
        except Exception:
            log.exception("exception calling callback for %r", self)


POOL_WAIT_SECONDS = 0.005  # between looks for a slot of a full pool (a batch's boards wait)


class QueueFull(Exception):
    """Every worker is busy and the queue holds max_queue jobs already."""


CLUSTER_INFO_SECONDS = 3.0  # Info waits this long for the cluster's figures


class Delegation:
    """Big searches go to a Ray cluster (a pdbtool.cluster.driver.Cluster): an IDA* search that
    generates more than ``above`` nodes here is stopped and searched again over the
    cluster, with what is left of its budget and time (the cluster counts its nodes from
    zero). The job's stop flag reaches the cluster's tasks: deadlines and cancellation
    stop them too."""

    def __init__(self, cluster, above: int):
        self.cluster, self.above = cluster, above
        self._lock = threading.Lock()
        self.delegated = 0
        self._asking: Future | None = None  # the cluster's info, asked on a thread

    def info(self, timeout: float = CLUSTER_INFO_SECONDS):
        """The cluster's ``info()`` (nodes, CPUs, busy), waited for ``timeout`` seconds at
        most: Ray's calls block while its head is unreachable (``pdbd info`` waited out its
        deadline). One call is made at a time; an Info meanwhile waits on the same.
        PdbError (pdbtool.cluster.messages.ClusterError) when it fails or is late."""
        from pdbtool.cluster.messages import ClusterError

        if self.cluster.lost:  # its head went away: never asked again (Cluster.reachable)
            raise ClusterError(self.cluster.lost)
        with self._lock:
            if self._asking is None or self._asking.done():
                self._asking = asking = Future()
                threading.Thread(target=self._ask, args=(asking,), daemon=True,
                                 name="pdbd-cluster-info").start()
            asking = self._asking
        try:
            return asking.result(timeout)
        except FutureTimeout:
            raise ClusterError(f"the cluster at {self.cluster.address} did not answer within "
                               f"{timeout:g} s") from None

    def _ask(self, asking: Future) -> None:
        try:
            asking.set_result(self.cluster.info())
        except BaseException as e:
            asking.set_exception(e)

    def wants(self, job: Job) -> bool:
        ida = job.algorithm is None or job.algorithm.name == "ida"
        budget = job.control.budget
        square = job.solver.shape.square  # the cluster searches square boards
        return ida and square and (budget is None or budget > self.above)

    def search(self, job: Job):
        """``job``'s search: here first, within ``above`` nodes; then on the cluster
        (pdbtool.cluster.driver.search_here_then_on, counted when it goes there)."""
        from pdbtool.cluster.driver import search_here_then_on

        return search_here_then_on(job.solver, job.prepared, job.control, cluster=self.cluster,
                                   above=self.above, on_cluster=self._count)

    def _count(self) -> None:
        """A search goes to the cluster: counted, once the cluster answers (``info``: a
        cluster gone refuses the search at once, ClusterError, where its calls would block
        the worker past its deadline)."""
        self.info()
        with self._lock:
            self.delegated += 1


class Job:
    """A search to run with ``algorithm`` (pdbtool.search.algorithms.Algorithm; None: IDA*).
    ``timeout`` is the server's time limit (from the search's start; it halts with reason
    "time-limit"). The solver checks its table file around the search (TableChanged)."""

    def __init__(self, solver: Solver, prepared: PreparedBoard, budget: int | None,
                 timeout: float | None = None, algorithm=None,
                 delegation: Delegation | None = None):
        self.solver, self.prepared, self.algorithm = solver, prepared, algorithm
        self.delegation = delegation
        self.control = SearchControl(budget=budget, timeout=timeout, timeout_reason="time-limit")
        self.future: Future | Done | None = None
        self.client: str | None = None  # whom it counts against (pdbd.peers)
        self.peer = ""  # the call's peer as it began (context.peer() is "" once the call's
        # deadline has passed: its log lines take the peer from here)
        self.submitted = time.monotonic()
        self.started: float | None = None
        self.lane_seconds = 0.0  # searched in the fast lane before it went to the pool
        self._ends: list | None = []  # called as it ends (on_end); None once it has ended
        self._ends_lock = threading.Lock()

    @property
    def reason(self) -> str | None:
        """Why it was halted: deadline, cancelled, shutdown; None if it was not."""
        return self.control.reason

    def run(self, here_only: bool = False):
        """The search; a big one over the cluster unless ``here_only`` (the fast lane)."""
        self.started = time.monotonic()
        if self.control.halted:
            raise LimitReached("stopped before the search started")
        if not here_only and self.delegation is not None and self.delegation.wants(self):
            return self.delegation.search(self)
        return self.solver.search(self.prepared, control=self.control, algorithm=self.algorithm)

    def halt(self, reason: str) -> None:
        """Stop the search (or drop it from the queue); the first reason given wins."""
        self.control.halt(reason)
        if self.future is not None:
            self.future.cancel()  # only succeeds while it is still queued: frees its slot

    def on_end(self, fn) -> None:
        """``fn()`` once the job has ended (searched, failed, or dropped from the queue),
        before its outcome reaches whoever waits on ``future`` (a Future's own callbacks
        run after its waiters wake): what the job held is free by the time its client has
        the answer and asks again. At once if it has ended."""
        with self._ends_lock:
            if self._ends is not None:
                self._ends.append(fn)
                return
        fn()

    def end(self) -> None:
        """The job has ended: its ``on_end`` calls, once (a failure said, never raised)."""
        with self._ends_lock:
            ends, self._ends = self._ends, None
        for fn in ends or ():
            try:
                fn()
            except Exception:
                log.exception("as a search ended")

    @property
    def queue_seconds(self) -> float:
        """Seconds it waited for a worker (the fast lane's search before is not waiting)."""
        end = self.started if self.started is not None else time.monotonic()
        return end - self.submitted - self.lane_seconds

    @property
    def search_seconds(self) -> float:
        """Seconds searched: in the fast lane, then in the pool."""
        now = 0.0 if self.started is None else time.monotonic() - self.started
        return self.lane_seconds + now


class WorkerPool:
    """``threads`` workers and at most ``max_queue`` waiting jobs; beyond that, QueueFull.
    ``on_change`` is called after every admission and release (e.g. to report overload),
    ``on_finish(job)`` after every job that ran, and every one cancelled waiting (the
    fast lane may have searched it before handing it on: metrics count what ran).

    The waiting jobs are the pool's own queue, not an executor's: a job cancelled while it
    waits (its deadline passed, its client left) leaves the queue at once, with its slot.
    (ThreadPoolExecutor kept a cancelled job's work item, and through it the job, until a
    worker came to it: a client with short deadlines behind long searches grew it without
    bound.)"""

    def __init__(self, threads: int, max_queue: int, on_change=None, on_finish=None):
        self.threads, self.max_queue = threads, max_queue
        self.on_change = on_change or (lambda: None)
        self.on_finish = on_finish
        self._slots = threading.BoundedSemaphore(threads + max_queue)
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._jobs: set[Job] = set()  # admitted: waiting or running
        self._waiting: deque[Job] = deque()
        self._of_future: dict[Future, Job] = {}
        self._running = 0
        self._closed = False
        self._stopping = False
        self._workers: list[threading.Thread] = []  # started with the first job

    def close(self) -> None:
        """No job is taken from now on (RuntimeError, as from a shut-down executor): a
        search the fast lane hands on during a shutdown is refused, not started."""
        with self._lock:  # a submit admitted before this is among the jobs halt_all sees
            self._closed = True

    def submit(self, job: Job) -> Future:
        if self._closed:
            raise RuntimeError("the pool is closed: the server is shutting down")
        if not self._slots.acquire(blocking=False):
            raise QueueFull(f"{plural(self.threads, 'search', 'searches')} running and "
                            f"{self.max_queue} waiting")
        future = Future()
        with self._lock:
            if self._closed:  # closed since the check above: a halt_all may have passed
                self._slots.release()
                raise RuntimeError("the pool is closed: the server is shutting down")
            job.future = future
            if not self._workers:
                self._workers = [threading.Thread(target=self._work, daemon=True,
                                                  name=f"pdbd-search_{i}")
                                 for i in range(self.threads)]
                for worker in self._workers:
                    worker.start()
            self._jobs.add(job)
            self._of_future[future] = job
            self._waiting.append(job)
            self._wake.notify()
        self.on_change()
        future.add_done_callback(self._done)  # also when cancelled waiting
        return future

    def _done(self, future: Future) -> None:
        """The job's future is done: free its slot and, if it was cancelled waiting, its
        place in the queue. The callback names the future, not the job: a job referring to
        its future and back would be a cycle that keeps the job's tables (and their files)
        until Python's cyclic collector runs."""
        with self._lock:
            job = self._of_future.pop(future, None)
            if job is not None and future.cancelled():
                try:
                    self._waiting.remove(job)  # at most max_queue long
                except ValueError:
                    pass  # a worker took it first and saw it cancelled
        if job is None:
            return
        if future.cancelled() and self.on_finish is not None:
            try:  # (one the fast lane handed on searched there: a search that ran)
                self.on_finish(job)
            except Exception:
                log.exception("after a search")
        self._release(job)

    def _work(self) -> None:
        """A worker: the next waiting job, until the pool stops."""
        while True:
            with self._wake:
                while not self._waiting and not self._stopping:
                    self._wake.wait()
                if not self._waiting:
                    return
                job = self._waiting.popleft()
            future = job.future
            if future.set_running_or_notify_cancel():
                self._run(job, future)
            job = future = None  # nothing of it kept while this worker waits

    def _run(self, job: Job, future: Future) -> None:
        with self._lock:
            self._running += 1
        try:
            outcome, error = job.run(), None
        except BaseException as e:
            # The exception stays in the future, its traceback holding the frames below,
            # and they the job (and its tables): a cycle through the future. Their locals
            # go now; the printed traceback stays whole.
            traceback.clear_frames(e.__traceback__)
            outcome, error = None, e
        finally:
            with self._lock:
                self._running -= 1
            try:  # (a failure here must not end the worker nor leave the future unresolved)
                if self.on_finish is not None:
                    self.on_finish(job)
            except Exception:
                log.exception("after a search")
            self._release(job)  # before the result is visible, so counts are never stale
            job = None  # this frame is in that traceback too
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(outcome)

    def _release(self, job: Job) -> None:
        """Free the job's slot, once."""
        with self._lock:
            if job not in self._jobs:
                return
            self._jobs.discard(job)
        self._slots.release()
        job.end()
        try:
            self.on_change()
        except Exception:  # (on a worker or a done callback: said, the slot freed)
            log.exception("reporting the pool's change")

    @property
    def full(self) -> bool:
        """No room for another job: every thread busy and the queue full."""
        with self._lock:
            return len(self._jobs) >= self.threads + self.max_queue

    def idle(self) -> bool:
        """Whether a job submitted now would start at once (a worker free, none queued)."""
        with self._lock:
            return len(self._jobs) < self.threads

    @property
    def in_flight(self) -> int:
        with self._lock:
            return len(self._jobs)

    @property
    def running(self) -> int:
        with self._lock:
            return self._running

    @property
    def waiting(self) -> int:
        """Jobs in the queue, not yet taken by a worker."""
        with self._lock:
            return len(self._waiting)

    def halt_all(self, reason: str) -> None:
        with self._lock:
            jobs = list(self._jobs)
        for job in jobs:
            job.halt(reason)

    def shutdown(self) -> None:
        """Halt every job (the waiting ones are cancelled), then wait for the workers."""
        with self._lock:
            self._closed = True
        self.halt_all("shutdown")
        with self._wake:
            self._stopping = True
            self._wake.notify_all()
            workers = list(self._workers)
        for worker in workers:
            worker.join()


@dataclass(frozen=True)
class Lane:
    """The fast lane's settings: ``slots`` searches at once (on the callers' threads), at
    most ``per_client`` of them one client's, each within ``nodes`` nodes; a search waits
    up to ``wait`` seconds for a slot, then goes to the pool (a client whose own share is
    taken goes at once if a worker is free: its searches then run side by side, not in
    turn; with the workers busy it waits, as a search queued behind them might wait for
    minutes). ``slots`` 0: no fast lane."""

    slots: int = 2
    per_client: int = 1
    nodes: int = 250_000
    wait: float = 0.1


class FastLane:
    """Searches tried on the caller's thread within ``lane.nodes`` nodes (see the module's
    docstring). ``on_finish(job)`` is told of each search answered here (metrics)."""

    def __init__(self, lane: Lane = Lane(), on_finish=None, pool_idle=None):
        self.lane = lane
        self.on_finish = on_finish
        self.pool_idle = pool_idle  # () -> bool: a search sent to the pool now starts at once
        self._lock = threading.Lock()
        self._room = threading.Condition(self._lock)  # a slot freed, for the calls waiting
        self._n: dict[str, int] = {}
        self._busy = 0
        self._waiting = 0  # callers waiting for a slot (a batch's board defers to them)
        self._jobs: set[Job] = set()  # searching here now (a shutdown halts them too)

    def run(self, job: Job, client: str, deferring: bool = False) -> bool:
        """Search ``job`` here if it may be: True when ``job.future`` holds its outcome
        (the result, or the error that ended it), False when it is for the pool (not
        IDA*, no slot free in time, or not done within the lane's nodes: its counters then
        hold the progress it saved, which the pool's search resumes from, or 0 without one
        (_hand_over), its budget and stop flag kept). ``deferring`` (a batch's board, whose
        reader would otherwise hold a slot board after board): only a slot free at once,
        and none while another call waits for one."""
        control = job.control
        if not self._eligible(job) or not self._enter(client, deferring):
            return False
        budget = control.budget
        nodes = self.lane.nodes  # never past where a delegating daemon hands a search on
        if job.delegation is not None and job.delegation.wants(job):
            nodes = min(nodes, job.delegation.above)
        final = budget is not None and budget <= nodes  # the job's own budget binds
        control.budget = budget if final else nodes
        # Where the search stops if the lane's nodes run out, for the pool to go on from
        # (not a search the cluster may take over: that one starts afresh).
        control.checkpoint = None if final or job.delegation is not None else Held()
        future = None  # the outcome, unless the search goes on to the pool
        with self._lock:
            self._jobs.add(job)
        try:
            result = job.run(here_only=True)  # the cluster only from the pool
        except LimitReached as e:
            if final or control.reason is not None or getattr(e, "limit", None) == "memory":
                traceback.clear_frames(e.__traceback__)
                future = Done(exception=e)
            else:  # the lane's budget ran out: to the pool, resumed where it stopped
                self._hand_over(control, budget)
                job.lane_seconds = time.monotonic() - job.started
                job.started = None  # queued again (SolveStream's progress says so) until
                # a worker of the pool takes it
        except Exception as e:  # noqa: BLE001 (kept, as the pool's future keeps it, for the caller)
            traceback.clear_frames(e.__traceback__)
            future = Done(exception=e)
        else:
            future = Done(result)
        finally:
            with self._lock:
                self._jobs.discard(job)
            self._leave(client)
        if future is None:
            return False
        job.future = future
        job.end()
        if self.on_finish is not None:
            self.on_finish(job)
        return True

    @property
    def in_flight(self) -> int:
        """Searches running here now."""
        with self._lock:
            return len(self._jobs)

    def halt_all(self, reason: str) -> None:
        with self._lock:
            jobs = list(self._jobs)
        for job in jobs:
            job.halt(reason)

    @staticmethod
    def _hand_over(control: SearchControl, budget: int | None) -> None:
        """A search past the lane's nodes, for the pool: its own budget back, and its
        counters those of the progress saved (control.checkpoint, a Held: the iterations
        done and the tasks finished of the one it stopped in), which the pool's search
        resumes from, as if it had not stopped; without a saved progress (stopped in its
        first, serial iterations), from the start."""
        control.budget = budget
        control.counters[:] = 0
        saved = control.checkpoint.saved if control.checkpoint is not None else None
        if saved is None:
            control.checkpoint = None
            return
        finished = list(saved.finished.values())
        control.counters[BOUND] = saved.bound  # the iteration it resumes in
        control.counters[GENERATED] = saved.generated + sum(r[RESULT_GENERATED] for r in finished)
        control.counters[EXPANDED] = saved.expanded + sum(r[RESULT_EXPANDED] for r in finished)

    def _eligible(self, job: Job) -> bool:
        return self.lane.slots > 0 and (job.algorithm is None or job.algorithm.name == "ida")

    def _enter(self, client: str, deferring: bool = False) -> bool:
        lane = self.lane
        with self._lock:  # the condition's own lock, without its Python-level wrapper
            if self._free(client) and (not deferring or self._waiting == 0):
                self._take(client)
                return True
            if deferring:
                return False
            if self._n.get(client, 0) >= lane.per_client and self.pool_idle and self.pool_idle():
                return False  # its own share taken and a worker free: side by side there
            self._waiting += 1  # counted before the lock is let go: a batch defers to it
            try:
                ok = self._room.wait_for(lambda: self._free(client), lane.wait)
            finally:
                self._waiting -= 1
            if ok:
                self._take(client)
            return ok

    def _free(self, client: str) -> bool:
        """A slot free for ``client`` (under the lock)."""
        return self._busy < self.lane.slots and self._n.get(client, 0) < self.lane.per_client

    def _take(self, client: str) -> None:
        """A slot for ``client`` (under the lock)."""
        self._busy += 1
        self._n[client] = self._n.get(client, 0) + 1

    def _leave(self, client: str) -> None:
        """The slot back."""
        with self._lock:
            self._busy -= 1
            n = self._n.pop(client) - 1
            if n:
                self._n[client] = n
            if self._waiting:  # (under the lock, as the waiters count themselves)
                self._room.notify_all()
