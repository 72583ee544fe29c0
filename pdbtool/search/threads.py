"""Parallel IDA* of one board on threads.

An iteration's tasks are the subtrees below the nodes at a split depth; every thread claims
them from a shared counter and searches them (kernels.tasks.search_tasks; the numba kernel
releases the GIL), closest first: in the order of how near their search came to the goal in
the iteration before. The first bound at which any thread reaches the goal is optimal,
exactly as in serial IDA*. The bound loop (``search_bounds``) serves the cluster too
(cluster/driver.py), whose tasks are the subtrees of a frontier (cluster/frontier.py).
"""

from __future__ import annotations

import concurrent.futures as cf
import math
import os
import queue
import threading
import time
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from pdbtool import limits, signals
from pdbtool.errors import BadInput, LimitReached
from pdbtool.kernels.ida import (BOUND, EXPANDED, FOUND, GENERATED, INF, MAX_DEPTH, NOT_FOUND,
                                 SHARED_BUDGET, SPENT, STOPPED, TASK, new_claims)
from pdbtool.kernels.tasks import RESULT_BOUND, RESULT_EXPANDED, RESULT_GENERATED
from pdbtool.result import SolveResult
from pdbtool.search.checkpoint import Checkpoint, finished_rows, identity
from pdbtool.search.control import (Earlier, FrontierNode, IterationOutcome, PreparedBoard,
                                    SearchControl, Tally, Tasks, limit_reached, subtree_outcome)

if TYPE_CHECKING:
    from pdbtool.search.solver import Solver

SHARE_BELOW = 1_000  # on threads, the same (a shared iteration costs a hand-off a thread)
ONE_THREAD_SHARE_BELOW = 100  # one thread: from the first iteration of this many nodes on,
# the iterations are searched as tasks, closest first (Korf's 100 with 15/7-8: 16,597 ->
# 10,197 nodes generated an instance, 0.75x the time of one kernel call for every bound;
# docs/bench-history/2026-11-25-closest-first-from-the-start.md). Not for boards of 9
# cells or fewer: their searches are microseconds, and their first solve on a machine
# would wait for the tasks' kernels to compile.
SHARED_PER_THREAD = 512  # nodes at the split depth per thread: enough for load balance
POLLED_AFTER = 1_000_000  # nodes generated: the iterations are long enough for progress
NEVER = 1 << 62  # serial_below: every iteration in one kernel call


def search_bounds(solver: Solver, prepared: PreparedBoard, control: SearchControl, threads: int,
                  serial: np.ndarray, parallel_iteration, serial_below: int, *,
                  resume: Checkpoint | None = None, begin=None) -> SolveResult:
    """The bounds of IDA* for one board, as the threads (search_parallel) and the cluster
    (pdbtool.cluster.driver) run them: from the initial h up to the first bound that reaches the
    goal (optimal, as in serial IDA*), each to the smallest overshoot of the one before.

    The small iterations run serially from the root on this thread, in one kernel call
    (Solver.iterate: an easy board never pays for the threads or the frontier), up to the
    first that generates ``serial_below`` nodes; ``parallel_iteration(bound, left, root)`` ->
    IterationOutcome runs the rest (``root``: the search's, made and checked here once).
    ``serial`` receives the serial iterations' counters (from which, and the parallel
    iterations' own, the caller's parallel_iteration publishes control.counters).
    ``resume`` (a checkpoint): no serial iterations, the search goes on at the saved bound
    with the saved counts and time; ``begin(bound, expanded, generated, iterations,
    seconds)`` is told what was counted before each parallel iteration, and the search's
    seconds so far."""
    bf = prepared.image
    stop, budget = control.stop, control.budget
    t0 = time.perf_counter() - (resume.seconds if resume else 0.0)
    root = solver.root(bf)
    if resume:
        expanded, generated = resume.expanded, resume.generated
        iterations, status, found, bound = list(resume.iterations), NOT_FOUND, None, resume.bound
        # what the earlier sittings counted: the iterations before the bound and the
        # bound's tasks (or batches) finished; the live counters start from it
        finished = list(resume.finished.values())
        control.earlier = Earlier(generated + sum(int(r[RESULT_GENERATED]) for r in finished),
                                  resume.seconds)
        serial[GENERATED] = control.earlier.generated
        serial[EXPANDED] = expanded + sum(int(r[RESULT_EXPANDED]) for r in finished)
        # one thread's kernel counts on from them (it keeps its budget's count apart)
        control.counters[GENERATED] = serial[GENERATED]
        control.counters[EXPANDED] = serial[EXPANDED]
    else:
        first = solver.iterate(root, bf.index(0), control, hand_off=serial_below)
        serial[:] = control.counters  # the kernel counted into them, for live progress
        expanded, generated, iterations = first.expanded, first.generated, first.iterations
        status, found, bound = first.status, first.path, first.next_bound
    searches = 1  # depth-first searches held at once: the serial one, then one a thread
    while True:
        if status == FOUND:
            return solver.result(prepared, found, expanded, generated,
                                 time.perf_counter() - t0, root.h, iterations, threads,
                                 peak_memory=searches * solver.search_memory(root))
        if status != NOT_FOUND or stop[0]:
            raise limit_reached(STOPPED if status == NOT_FOUND else status, generated,
                                time.perf_counter() - t0, control,
                                last_bound=iterations[-1]["bound"] if iterations else root.h)
        if bound >= INF:
            raise LimitReached("no solution below the depth limit")
        if bound > MAX_DEPTH:
            raise LimitReached(f"bound {bound} exceeds the search's depth limit")
        left = -1 if budget is None else max(0, budget - generated)
        if begin:
            begin(bound, expanded, generated, iterations, time.perf_counter() - t0)
        it = parallel_iteration(bound, left, root)
        searches = 1 + threads
        expanded += it.expanded
        generated += it.generated
        iterations.append({"bound": int(bound), "nodes": int(it.generated)})
        status = FOUND if it.found is not None else it.status
        found, bound = it.found, it.next_bound


def resumed(solver: Solver, prepared: PreparedBoard, keeper) -> Checkpoint | None:
    """The threads' search's saved progress in ``keeper`` (a Checkpointing or Held, or
    None): None if none is saved yet; BadInput for another search's checkpoint or a damaged
    one (Solver.search asks before the kernels compile, the search again once it holds
    the file)."""
    if keeper is None or keeper.empty:  # (an empty Held, pdbd's fast lane's, needs no
        return None  # identity made to say so)
    # The deepest split a checkpoint may hold: this version's, or that of the versions
    # before it, which chose a board's split by its width (a 6x3 board's as a 3x3's).
    shape = solver.shape
    deepest = max(split_depth(shape.cells, limits.MAX_THREADS),
                  split_depth(shape.cols ** 2, limits.MAX_THREADS))
    return keeper.load(identity(solver, prepared), frame=prepared.frame, max_split=deepest)


def search_parallel(solver: Solver, prepared: PreparedBoard, control: SearchControl, *,
                    threads: int = 1, split: int | None = None,
                    serial_below: int | None = None) -> SolveResult:
    """Solve a prepared board on ``threads`` threads (called by Solver.search; also for
    one thread, to search the iterations closest first).

    The small iterations run serially on this thread (search_bounds), up to the first that
    generates ``serial_below`` nodes (default SHARE_BELOW, for one thread
    ONE_THREAD_SHARE_BELOW, or never for a board of 9 cells or fewer on one thread: until
    then it searches as fast in one kernel call). The others are shared: their tasks are
    the subtrees below the nodes at depth ``split`` (default ``split_depth``; never deeper
    than the bound, so the goal is never above it), which the threads claim from a shared
    counter (kernels.tasks.search_tasks). Each iteration after the first shared one
    searches the tasks in the order of the smallest h their search expanded in the one
    before (ties in depth-first order): the goal's subtree is nearly always among the
    first, so the last iteration ends early. This thread searches too, so an iteration costs one
    hand-off per other thread and iterations of a few milliseconds gain; once the search
    has generated POLLED_AFTER nodes, this thread instead publishes the threads' counters
    every 20 ms while they search (progress; one thread alone searches on this thread and
    counts into the caller's counters as it goes). The kernels poll the caller's stop
    flag; the threads share the node budget (kernels.ida.spend). With ``control.checkpoint``
    (a Checkpointing) this thread always waits for the searching ones, saving the progress
    now and then, and a saved search resumes at its bound (search/checkpoint.py); a Held
    keeper is saved to only when the search stops short, and changes nothing else."""
    bf = prepared.image
    stop, counters = control.stop, control.counters
    keeper = control.checkpoint  # checkpoint.Checkpointing or Held, or None
    resume = resumed(solver, prepared, keeper)
    if resume:
        split = resume.split  # the saved tasks, whatever the threads now
    split = split_depth(solver.shape.cells, threads) if split is None else split
    if serial_below is None:
        serial_below = (SHARE_BELOW if threads > 1 else ONE_THREAD_SHARE_BELOW
                        if solver.shape.cells > 9 else NEVER)
    claims = new_claims()  # the next task of the order, and the threads' shared budget
    serial = np.zeros_like(counters)  # the serial iterations' counters
    live = threads == 1  # the one search runs on this thread and counts into ``counters``
    rows = [counters] if live else [np.zeros_like(counters) for _ in range(threads)]
    roots = []  # each thread's board, changed in place (made at the first shared iteration)
    outs = [np.zeros(MAX_DEPTH + 1, np.int64) for _ in range(threads)]
    blank = bf.index(0)
    root_node = FrontierNode(bf, blank, 0, ())
    tasks = None  # made at the first shared iteration
    before = None  # Counted: what search_bounds counted before this iteration (checkpoints)

    def publish(bound):
        """The caller's counters: everything counted so far, and the current bound."""
        if not live:
            counters[GENERATED] = serial[GENERATED] + sum(int(r[GENERATED]) for r in rows)
            counters[EXPANDED] = serial[EXPANDED] + sum(int(r[EXPANDED]) for r in rows)
        counters[BOUND] = bound

    def share(k, bound, budget) -> IterationOutcome:
        o = solver.search_tasks(roots[k], blank, tasks, bound, budget, stop, rows[k], outs[k],
                                claims)
        return subtree_outcome(root_node, o, outs[k])

    def progress(bound) -> Checkpoint:
        finished = finished_rows(tasks.results)  # first: a task's closest is written before
        # its row, so every task saved as finished has its closest in the copy below
        return Checkpoint(
            identity(solver, prepared), tasks.nodes.cells.shape[1], bound, before.expanded,
            before.generated, before.iterations, tasks.order.tolist(), tasks.closest.tolist(),
            finished, before.seconds + time.monotonic() - before.at)

    def save(bound):
        keeper.save(progress(bound))

    def parallel_iteration(bound, left, root) -> IterationOutcome:
        nonlocal tasks, resume, crew
        if not roots:
            solver.compile_kernels(shared=True)  # if the search did not ask for them first
            # the serial iterations left the root's board as it was: this thread
            # searches from it, the others from copies (not made and checked again)
            roots.extend([root] + [root.copy() for _ in range(threads - 1)])
            tasks = Tasks.below(solver, blank, min(split, bound))
            if threads > 1 or (keeper and keeper.watching):
                crew = Crew.hire(threads)
        claims[TASK] = 0
        tasks.results.fill(-1)
        if resume:  # the saved bound: its finished tasks are not searched again
            if len(resume.order) != len(tasks.order) or len(resume.closest) != len(tasks.order):
                raise BadInput(f"{keeper.path}: the checkpoint lists {len(resume.order)} tasks "
                               f"where the search has {len(tasks.order)}; it is damaged")
            tasks.order[:], tasks.closest[:] = resume.order, resume.closest
            for i, row in resume.finished.items():
                tasks.results[i] = row
            resume = None
        done = tasks.results[:, RESULT_BOUND] >= 0  # finished in an earlier sitting
        if left >= 0:  # their nodes count against the budget too
            left = max(0, left - int(tasks.results[done, RESULT_GENERATED].sum()))
        budget = left  # shared: each thread may take all of it (claims[SHARED_BUDGET])
        claims[SPENT], claims[SHARED_BUDGET] = 0, left
        watched = keeper is not None and keeper.watching  # saved here while others search
        polled = watched or (not live and int(counters[GENERATED]) >= POLLED_AFTER)
        futures = [crew.submit(share, k, bound, budget) for k in range(0 if polled else 1, threads)]
        shares = [] if polled else [share(0, bound, budget)]
        if polled:
            try:
                while cf.wait(futures, timeout=0.02).not_done:
                    publish(bound)
                    if watched:
                        keeper.save_if_due(lambda: progress(bound))
            except BaseException:  # Ctrl-C or SIGTERM raised here: the others stop, then
                with signals.held():  # the progress is saved as at any other stop (a
                    control.halt()  # second Ctrl-C here, 5 ms on, once lost the save)
                    cf.wait(futures)
                    if watched:
                        save(bound)
                raise
        shares += [f.result() for f in futures]
        publish(bound)
        tally = Tally()
        for outcome in shares:
            tally.add(outcome, bool(stop[0]))
        if done.any():
            saved = tasks.results[done]
            tally.add(IterationOutcome(None, int(saved[:, RESULT_BOUND].min()),
                                       int(saved[:, RESULT_EXPANDED].sum()),
                                       int(saved[:, RESULT_GENERATED].sum()), NOT_FOUND))
        if keeper is not None and tally.found is None and (stop[0] or tally.status != NOT_FOUND):
            save(bound)  # stopped (Ctrl-C, a deadline, the budget): resumable from here
        tasks.reorder()
        return tally.outcome()

    def begin(bound, expanded, generated, iterations, seconds):
        nonlocal before
        before = Counted(expanded, generated, list(iterations), seconds, time.monotonic())

    # on Ctrl-C, Solver.search halts the control: the threads stop
    crew = None  # the search's threads (Crew), started at its first shared iteration
    try:
        return search_bounds(solver, prepared, control, threads, serial, parallel_iteration,
                             serial_below, resume=resume, begin=begin)
    finally:
        if crew:
            crew.close()


class Counted(NamedTuple):
    """What the iterations before the current one counted, and when it began."""

    expanded: int
    generated: int
    iterations: list
    seconds: float  # the search's time at its start, earlier sittings included
    at: float       # time.monotonic() then


def split_depth(cells: int, threads: int) -> int:
    """The depth whose nodes the threads share: about SHARED_PER_THREAD nodes a thread
    there, at the branching factor of a puzzle of ``cells`` cells under move pruning (1.73
    for the 8-puzzle, about 2.13 for the 15-puzzle, 2.37 for the 24-puzzle; a rectangle
    takes the next square's at least as large, so a board and its transpose split alike)."""
    branching = 1.73 if cells <= 9 else 2.13 if cells <= 16 else 2.37
    return max(1, math.ceil(math.log(SHARED_PER_THREAD * threads) / math.log(branching)))


class Crew:
    """A search's own search threads, taken at its first shared iteration and given back
    when it ends: independent searches never queue behind one another's (a halt or a
    deadline ends each within the kernels' poll). Daemon threads, like the caller's own: a
    search on an app's daemon thread never holds the process's exit. A crew given back
    waits, idle, for the next search of its size (IDLE_CREWS at most; starting threads for
    each search cost Korf's 100 on two threads 0.146 -> 0.186 s)."""

    _idle: dict[int, list[Crew]] = {}
    _lock = threading.Lock()

    @classmethod
    def hire(cls, size: int) -> Crew:
        """An idle crew of ``size`` threads, or a new one."""
        with cls._lock:
            idle = cls._idle.get(size)
            if idle:
                return idle.pop()
        return cls(size)

    def __init__(self, size: int):
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._size = size
        self._given: list[cf.Future] = []  # this search's jobs
        for k in range(size):
            threading.Thread(target=self._work, name=f"pdbtool-share-{k}", daemon=True).start()

    def submit(self, fn, *args) -> cf.Future:
        future: cf.Future = cf.Future()
        self._given.append(future)
        self._jobs.put((future, fn, args))
        return future

    def close(self) -> None:
        """Give the crew back as its search ends: idle for the next search if every job it
        was given is done (a search that ended by an exception may leave one running: that
        crew is not shared), else its threads end after their jobs."""
        done = all(f.done() for f in self._given)
        self._given = []
        with Crew._lock:
            idle = Crew._idle.setdefault(self._size, [])
            if done and len(idle) < IDLE_CREWS:
                idle.append(self)
                return
        for _ in range(self._size):
            self._jobs.put(None)

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            future, fn, args = job
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn(*args))
                except BaseException as e:  # the caller's f.result() raises it
                    future.set_exception(e)
            # nothing of the job kept while the thread waits: its closure holds the search's
            # solver and through it the table's mapping (an idle crew held a replaced file)
            job = future = fn = args = None


IDLE_CREWS = 2  # idle crews kept for each size (two searches on threads at once, as pdbd's)
os.register_at_fork(after_in_child=Crew._idle.clear)  # a child has none of their threads
