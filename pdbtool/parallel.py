"""Parallel IDA* of one board: the root is expanded to a frontier of subtrees, and every
iteration searches all of them with the same bound on a thread pool (the numba kernel
releases the GIL). The first bound at which any subtree reaches the goal is optimal,
exactly as in serial IDA*.

A task is plain data, (board, blank, automaton state, g, bound) -> (status, next bound,
nodes, path), so the same tasks run on a Ray cluster too (pdbtool.cluster): the bound loop
(``search_bounds``), the combination of outcomes (``Tally``) and the search of a batch of
subtrees (``search_subtrees``) are shared with it.
"""

from __future__ import annotations

import concurrent.futures as cf
import queue
import threading
import time
from typing import NamedTuple

import numpy as np

from .errors import LimitReached
from .result import SolveResult
from .search import DfsOutcome, PreparedBoard, Root, SearchControl, Solver
from .search_kernel import (BOUND, BUDGET, EXPANDED, FOUND, GENERATED, INF, MAX_DEPTH,
                            NOT_FOUND, STOPPED)

FRONTIER_PER_THREAD = 128  # subtrees per thread: enough for load balance, few enough
# that the per-task cost in Python (about 40 us) stays small against the search
SERIAL_BELOW = 1_000_000  # after an iteration this small, the next runs serially: handing
# out subtrees would cost more than it saves


class FrontierNode(NamedTuple):
    """A node of the root's breadth-first expansion: the root of one subtree."""

    board: tuple[int, ...]   # blank-first
    blank: int
    automaton_state: int
    path: tuple[int, ...]    # the blank's cells from the search root


class Subtree(NamedTuple):
    """A frontier node with the kernel arrays that search it, built once for every
    iteration (the kernel restores the board after a search that did not finish)."""

    node: FrontierNode
    root: Root
    out: np.ndarray  # the path below the node, when the goal is found


class IterationOutcome(NamedTuple):
    found: list | None  # the blank's cells from the root, if the goal was reached
    next_bound: int
    expanded: int
    generated: int
    status: int         # NOT_FOUND, STOPPED or BUDGET when nothing was found


def frontier(solver: Solver, root, target: int) -> tuple[list[FrontierNode], tuple | None]:
    """Breadth-first expansion under the pruning automaton, until ``target`` nodes.

    Returns (nodes, goal path or None). Of several paths to one board only the first in
    breadth-first (lexicographic) order is kept: the smallest of a board's paths is the
    one the automaton never prunes.
    """
    level = [FrontierNode(tuple(root), root.index(0), 0, ())]
    while len(level) < target and len(level[0].path) < MAX_DEPTH:
        seen, nxt = set(), []
        for node in level:
            b = node.blank
            for i in range(solver.nmoves[b]):
                move = int(solver.moves[b, i])
                c, nstate = move >> 2, int(solver.fsm[node.automaton_state, move & 3])
                if nstate < 0:
                    continue
                cells = list(node.board)
                cells[b], cells[c] = cells[c], 0
                key = tuple(cells)
                if key in seen:
                    continue
                seen.add(key)
                nxt.append(FrontierNode(key, c, nstate, node.path + (c,)))
        for node in nxt:
            if solver.heuristic.value(node.board) == 0:
                return [], node.path
        level = nxt
    return level, None


def subtree_outcome(node: FrontierNode, o: DfsOutcome, out: np.ndarray) -> IterationOutcome:
    """One subtree's search as an iteration's share: the path from the root if it found
    the goal (``out[:length]`` holds the part below the node)."""
    found = list(node.path) + out[:o.length].tolist() if o.status == FOUND else None
    status = o.status if o.status in (STOPPED, BUDGET) else NOT_FOUND
    return IterationOutcome(found, o.next_bound, o.expanded, o.generated, status)


class Tally:
    """Shares of one iteration (subtrees, or batches of them) combined as they arrive:
    the first goal found (any is optimal at this bound), the smallest overshoot, the nodes,
    and why the iteration stopped short (``stopped``: the caller's stop flag was set)."""

    def __init__(self):
        self.found, self.next_bound, self.expanded, self.generated = None, INF, 0, 0
        self.status = NOT_FOUND

    def add(self, share: IterationOutcome, stopped: bool = False) -> None:
        self.expanded += share.expanded
        self.generated += share.generated
        if share.found is not None and self.found is None:
            self.found = share.found
        elif share.status in (STOPPED, BUDGET) and self.found is None:
            self.status = STOPPED if stopped else share.status
        self.next_bound = min(self.next_bound, share.next_bound)

    def outcome(self) -> IterationOutcome:
        return IterationOutcome(self.found, self.next_bound, self.expanded, self.generated,
                                self.status)


def search_subtrees(solver: Solver, nodes, bound: int, budget: int, halt: np.ndarray,
                    counters: np.ndarray) -> IterationOutcome:
    """Search frontier nodes one after the other under ``bound`` (a cluster worker's
    batch): their outcomes combined. Nodes left when ``halt`` is set are skipped."""
    tally = Tally()
    out = np.zeros(MAX_DEPTH + 1, np.int64)
    for node in nodes:
        if halt[0]:
            tally.add(IterationOutcome(None, INF, 0, 0, STOPPED))
            break
        left = -1 if budget < 0 else max(0, budget - tally.generated)
        o = solver.dfs(solver.root(node.board), node.blank, node.automaton_state,
                       len(node.path), bound, left, halt, counters, out)
        tally.add(subtree_outcome(node, o, out))
        if o.status == FOUND:
            break
    return tally.outcome()


def search_bounds(solver: Solver, prepared: PreparedBoard, control: SearchControl, threads: int,
                  serial: np.ndarray, parallel_iteration, publish,
                  serial_below: int = SERIAL_BELOW) -> SolveResult:
    """The bounds of IDA* for one board, as the threads (search_parallel) and the cluster
    (pdbtool.cluster) run them: from the initial h up to the first bound that reaches the
    goal (optimal, as in serial IDA*), each to the smallest overshoot of the one before.

    Small iterations run serially from the root on this thread, counting into ``serial``
    (an easy board never pays for the frontier); the first that generates ``serial_below``
    nodes switches to ``parallel_iteration(bound, left)`` -> IterationOutcome for the rest.
    ``publish(bound)`` writes the caller's counters (control.counters)."""
    bf = prepared.image
    stop, budget = control.stop, control.budget
    t0 = time.perf_counter()
    root = solver.root(bf)
    h0 = root.h
    if h0 == 0:
        return solver.result(prepared, [], 0, 0, time.perf_counter() - t0, 0, [], threads)
    root_out = np.zeros(MAX_DEPTH + 1, np.int64)

    def serial_iteration(bound, left) -> IterationOutcome:
        """One whole iteration from the root on this thread (for small iterations)."""
        o = solver.dfs(root, bf.index(0), 0, 0, bound, left, stop, serial, root_out)
        publish(bound)
        return subtree_outcome(FrontierNode(bf, bf.index(0), 0, ()), o, root_out)

    bound, expanded, generated, iterations = h0, 0, 0, []
    last = 0
    while True:
        if bound > MAX_DEPTH:
            raise LimitReached(f"bound {bound} exceeds the search's depth limit")
        left = -1 if budget is None else max(0, budget - generated)
        if last < serial_below:
            it = serial_iteration(bound, left)
        else:
            it = parallel_iteration(bound, left)
        expanded += it.expanded
        generated += it.generated
        last = it.generated
        iterations.append({"bound": int(bound), "nodes": int(it.generated)})
        if it.found is not None:
            return solver.result(prepared, it.found, expanded, generated,
                                 time.perf_counter() - t0, h0, iterations, threads)
        if it.status != NOT_FOUND or stop[0]:
            why = "node budget exhausted" if it.status == BUDGET else "search stopped (cancelled or deadline)"
            raise LimitReached(f"{why} after {generated:,} nodes ({time.perf_counter() - t0:.3f} s, bound {bound})")
        if it.next_bound >= INF:
            raise LimitReached("no solution below the depth limit")
        bound = it.next_bound


def search_parallel(solver: Solver, prepared: PreparedBoard, threads: int,
                    control: SearchControl, target: int | None = None,
                    serial_below: int = SERIAL_BELOW) -> SolveResult:
    """Solve a prepared board on ``threads`` threads (called by Solver.search); the
    first iteration of ``serial_below`` nodes or more goes to the subtrees."""
    bf = prepared.image
    stop, counters, budget = control.stop, control.counters, control.budget
    subtrees: list[Subtree] = []  # made when the first big iteration needs them
    halt = np.zeros(1, np.int64)  # set when a subtree found the goal or the caller stopped
    local = threading.local()
    serial = np.zeros_like(counters)  # the serial iterations' counters
    rows = []  # each worker thread's counters
    lock = threading.Lock()

    def publish(bound):
        """The caller's counters: everything counted so far, and the current bound."""
        counters[GENERATED] = serial[GENERATED] + sum(int(r[GENERATED]) for r in rows)
        counters[EXPANDED] = serial[EXPANDED] + sum(int(r[EXPANDED]) for r in rows)
        counters[BOUND] = bound

    def worker_counters():
        if not hasattr(local, "c"):
            local.c = np.zeros_like(counters)
            with lock:
                rows.append(local.c)
        return local.c

    def task(subtree: Subtree, bound, left) -> IterationOutcome:
        node = subtree.node
        if halt[0]:  # the goal was found or the caller stopped: skip queued subtrees
            return IterationOutcome(None, INF, 0, 0, STOPPED)
        o = solver.dfs(subtree.root, node.blank, node.automaton_state, len(node.path), bound,
                       left, halt, worker_counters(), subtree.out)
        return subtree_outcome(node, o, subtree.out)

    def parallel_iteration(bound, left) -> IterationOutcome:
        """All subtrees under one bound on the pool; completed tasks arrive on a queue
        (waiting on thousands of futures at once would cost O(tasks) per wake-up)."""
        if not subtrees:
            nodes, goal_path = frontier(solver, bf, target or FRONTIER_PER_THREAD * threads)
            if goal_path is not None:  # breadth first: the shortest path there is
                return IterationOutcome(list(goal_path), INF, 0, 0, NOT_FOUND)
            subtrees.extend(Subtree(node, solver.root(node.board), np.zeros(MAX_DEPTH + 1, np.int64))
                            for node in nodes)
        halt[0] = 0
        finished: queue.SimpleQueue = queue.SimpleQueue()
        for subtree in subtrees:
            pool.submit(task, subtree, bound, left).add_done_callback(finished.put)
        tally = Tally()
        remaining = len(subtrees)
        while remaining:
            try:
                done = [finished.get(timeout=0.02)]
            except queue.Empty:
                done = []
            publish(bound)
            if stop[0]:
                halt[0] = 1
            for f in done:
                remaining -= 1
                tally.add(f.result(), bool(stop[0]))
                if tally.found is not None:
                    halt[0] = 1  # the others can stop: this bound is optimal
            if budget is not None and counters[GENERATED] > budget and tally.found is None:
                tally.status, halt[0] = BUDGET, 1  # live counts: running tasks stop within a poll
        return tally.outcome()

    with cf.ThreadPoolExecutor(threads) as pool:
        try:
            return search_bounds(solver, prepared, control, threads, serial, parallel_iteration,
                                 publish, serial_below)
        finally:  # also on Ctrl-C: running subtrees stop, queued ones are skipped
            halt[0] = 1
