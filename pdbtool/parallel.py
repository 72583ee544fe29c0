"""Parallel IDA* of one board: the root is expanded to a frontier of subtrees, and every
iteration searches all of them with the same bound on a thread pool (the numba kernel
releases the GIL). The first bound at which any subtree reaches the goal is optimal,
exactly as in serial IDA*.

A task is plain data, (board, blank, automaton state, g, bound) -> (status, next bound,
nodes, path), so the same tasks could run on a cluster engine without touching the kernel.
"""

from __future__ import annotations

import concurrent.futures as cf
import queue
import threading
import time

import numpy as np

from .errors import LimitReached
from .result import SolveResult
from .search import Solver
from .search_kernel import BUDGET, FOUND, INF, MAX_DEPTH, NOT_FOUND, STOPPED, run_dfs

FRONTIER_PER_THREAD = 128  # subtrees per thread: enough for load balance, few enough
# that the per-task cost in Python (about 40 us) stays small against the search
SERIAL_BELOW = 1_000_000  # after an iteration this small, the next runs serially: handing
# out subtrees would cost more than it saves


def frontier(solver: Solver, root, target: int):
    """Breadth-first expansion under the pruning automaton, until ``target`` nodes.

    Returns (nodes, goal path or None); a node is (board tuple, blank, automaton state,
    path). Of several paths to one board only the first in breadth-first (lexicographic)
    order is kept: the smallest of a board's paths is the one the automaton never prunes.
    """
    level = [(tuple(root), root.index(0), 0, ())]
    while len(level) < target and len(level[0][3]) < MAX_DEPTH:
        seen, nxt = set(), []
        for board, b, state, path in level:
            for i in range(solver.nmoves[b]):
                move = int(solver.moves[b, i])
                c, nstate = move >> 2, int(solver.fsm[state, move & 3])
                if nstate < 0:
                    continue
                cells = list(board)
                cells[b], cells[c] = cells[c], 0
                key = tuple(cells)
                if key in seen:
                    continue
                seen.add(key)
                nxt.append((key, c, nstate, path + (c,)))
        for node in nxt:
            if solver.heuristic.value(node[0]) == 0:
                return [], node[3]
        level = nxt
    return level, None


def solve_parallel(solver: Solver, board, goal: str = "blank-last", *, threads: int = 2,
                   budget: int | None = None, stop: np.ndarray | None = None,
                   counters: np.ndarray | None = None, target: int | None = None) -> SolveResult:
    board, bf = solver.prepare(board, goal)
    stop = np.zeros(1, np.int64) if stop is None else stop
    counters = np.zeros(3, np.int64) if counters is None else counters
    t0 = time.perf_counter()
    root = solver.root(bf)
    h0 = int(root[2][0, 0])
    if h0 == 0:
        return solver.result(board, goal, bf, [], 0, 0, time.perf_counter() - t0, 0, [], threads)
    nodes, goal_path = frontier(solver, bf, target or FRONTIER_PER_THREAD * threads)
    if goal_path is not None:
        return solver.result(board, goal, bf, goal_path, 0, 0, time.perf_counter() - t0, h0, [], threads)
    # Kernel arrays are built once per subtree: the kernel restores the board and the
    # positions after a search that did not finish, so they serve every iteration.
    subtrees = [(node, solver.root(node[0]), np.zeros(MAX_DEPTH + 1, np.int64)) for node in nodes]
    root_out = np.zeros(MAX_DEPTH + 1, np.int64)
    halt = np.zeros(1, np.int64)  # set when a subtree found the goal or the caller stopped
    local = threading.local()
    serial = np.zeros(3, np.int64)  # the serial iterations' counters
    rows = []  # each worker thread's counters
    lock = threading.Lock()

    def publish(bound):
        """The caller's counters: everything counted so far, and the current bound."""
        counters[0] = serial[0] + sum(int(r[0]) for r in rows)
        counters[1] = serial[1] + sum(int(r[1]) for r in rows)
        counters[2] = bound

    def worker_counters():
        if not hasattr(local, "c"):
            local.c = np.zeros(3, np.int64)
            with lock:
                rows.append(local.c)
        return local.c

    def search(arrays, blank, state, g0, bound, left, flag, ctr, out):
        b, pos, hs = arrays
        return run_dfs(int(solver.heuristic.H[0]), solver.heuristic.H, solver.side, b, pos, solver.moves,
                       solver.nmoves, solver.fsm, hs, blank, state, g0, bound, left, flag, ctr, out)

    def task(subtree, bound, left):
        (_, blank, state, path), arrays, out = subtree
        if halt[0]:  # the goal was found or the caller stopped: skip queued subtrees
            return (STOPPED, INF, 0, 0, 0), path, out
        return search(arrays, blank, state, len(path), bound, left, halt, worker_counters(), out), path, out

    def serial_iteration(bound, left):
        """One whole iteration from the root on this thread (for small iterations)."""
        st, nb, e, g, length = search(root, bf.index(0), 0, 0, bound, left, stop, serial, root_out)
        publish(bound)
        found = root_out[:length].tolist() if st == FOUND else None
        return found, nb, e, g, st if st in (STOPPED, BUDGET) else NOT_FOUND

    def parallel_iteration(pool, bound, left):
        """All subtrees under one bound on the pool; completed tasks arrive on a queue
        (waiting on thousands of futures at once would cost O(tasks) per wake-up)."""
        halt[0] = 0
        finished: queue.SimpleQueue = queue.SimpleQueue()
        for subtree in subtrees:
            pool.submit(task, subtree, bound, left).add_done_callback(finished.put)
        found, next_bound, expanded, generated, status = None, INF, 0, 0, NOT_FOUND
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
                (st, nb, e, g, length), path, out = f.result()
                expanded += e
                generated += g
                if st == FOUND and found is None:
                    found = list(path) + out[:length].tolist()
                    halt[0] = 1  # the others can stop: this bound is optimal
                elif st in (STOPPED, BUDGET) and found is None:
                    status = STOPPED if stop[0] else st
                next_bound = min(next_bound, nb)
            if budget is not None and counters[0] > budget and found is None:
                status, halt[0] = BUDGET, 1  # live counts: running tasks stop within a poll
        return found, next_bound, expanded, generated, status

    bound, expanded, generated, iterations = h0, 0, 0, []
    last = 0
    with cf.ThreadPoolExecutor(threads) as pool:
        while True:
            if bound > MAX_DEPTH:
                raise LimitReached(f"bound {bound} exceeds the search's depth limit")
            left = -1 if budget is None else max(0, budget - generated)
            if last < SERIAL_BELOW:
                found, next_bound, e, g, status = serial_iteration(bound, left)
            else:
                found, next_bound, e, g, status = parallel_iteration(pool, bound, left)
            expanded += e
            generated += g
            last = g
            iterations.append({"bound": int(bound), "nodes": int(g)})
            if found is not None:
                return solver.result(board, goal, bf, found, expanded, generated,
                                     time.perf_counter() - t0, h0, iterations, threads)
            if status != NOT_FOUND or stop[0]:
                why = "node budget exhausted" if status == BUDGET else "search stopped (cancelled or deadline)"
                raise LimitReached(f"{why} after {generated:,} nodes ({time.perf_counter() - t0:.3f} s, bound {bound})")
            if next_bound >= INF:
                raise LimitReached("no solution below the depth limit")
            bound = next_bound
