"""Parallel IDA* of one board: the root is expanded to a frontier of subtrees, and every
iteration searches all of them with the same bound on a thread pool (the numba kernel
releases the GIL). The first bound at which any subtree reaches the goal is optimal,
exactly as in serial IDA*.

A task is plain data, (board, blank, previous blank, g, bound) -> (status, next bound,
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


def frontier(solver: Solver, root, target: int):
    """Breadth-first expansion without move reversal or duplicates until ``target`` nodes.

    Returns (nodes, goal path or None); a node is (board tuple, blank, prev blank, path).
    """
    nbrs = [list(solver.nbr[c, :solver.nnbr[c]]) for c in range(len(root))]
    level = [(tuple(root), root.index(0), -1, ())]
    while len(level) < target and len(level[0][3]) < MAX_DEPTH:
        seen, nxt = set(), []
        for board, b, prev, path in level:
            for c in nbrs[b]:
                if c == prev:
                    continue
                cells = list(board)
                cells[b], cells[c] = cells[c], 0
                key = tuple(cells)
                if key in seen:
                    continue
                seen.add(key)
                nxt.append((key, c, b, path + (c,)))
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
    _, _, hs0 = solver.root(bf)
    h0 = int(hs0[0, 0])
    if h0 == 0:
        return solver.result(board, goal, bf, [], 0, 0, time.perf_counter() - t0, 0, [], threads)
    nodes, goal_path = frontier(solver, bf, target or FRONTIER_PER_THREAD * threads)
    if goal_path is not None:
        return solver.result(board, goal, bf, goal_path, 0, 0, time.perf_counter() - t0, h0, [], threads)

    halt = np.zeros(1, np.int64)  # set when a subtree found the goal or the caller stopped
    local = threading.local()
    rows = []
    lock = threading.Lock()

    def worker_counters():
        if not hasattr(local, "c"):
            local.c = np.zeros(3, np.int64)
            with lock:
                rows.append(local.c)
        return local.c

    def task(node, bound, left):
        cells, blank, prev, path = node
        if halt[0]:  # the goal was found or the caller stopped: skip queued subtrees
            return (STOPPED, INF, 0, 0, 0), path, None
        b, pos, hs = solver.root(cells)
        out = np.zeros(MAX_DEPTH + 1, np.int64)
        res = run_dfs(int(solver.heuristic.H[0]), solver.heuristic.H, solver.side, b, pos, solver.nbr,
                      solver.nnbr, hs, blank, prev, len(path), bound, left, halt, worker_counters(), out)
        return res, path, out

    bound, expanded, generated, iterations = h0, 0, 0, []
    with cf.ThreadPoolExecutor(threads) as pool:
        while True:
            if bound > MAX_DEPTH:
                raise LimitReached(f"bound {bound} exceeds the search's depth limit")
            halt[0] = 0
            left = -1 if budget is None else max(0, budget - generated)
            # Completed tasks arrive on a queue: waiting on thousands of futures at once
            # would cost O(tasks) per wake-up.
            finished: queue.SimpleQueue = queue.SimpleQueue()
            for n in nodes:
                pool.submit(task, n, bound, left).add_done_callback(finished.put)
            found, next_bound, it_nodes, status = None, INF, 0, NOT_FOUND
            remaining = len(nodes)
            while remaining:
                try:
                    done = [finished.get(timeout=0.02)]
                except queue.Empty:
                    done = []
                counters[0] = sum(int(r[0]) for r in rows)
                counters[1] = sum(int(r[1]) for r in rows)
                counters[2] = bound
                if stop[0]:
                    halt[0] = 1
                for f in done:
                    remaining -= 1
                    (st, nb, e, g, length), path, out = f.result()
                    expanded += e
                    generated += g
                    it_nodes += g
                    if st == FOUND and found is None:
                        found = list(path) + out[:length].tolist()
                        halt[0] = 1  # the others can stop: this bound is optimal
                    elif st in (STOPPED, BUDGET) and found is None:
                        status = STOPPED if stop[0] else st
                    next_bound = min(next_bound, nb)
                if budget is not None and generated > budget and found is None:
                    status, halt[0] = BUDGET, 1
            iterations.append({"bound": int(bound), "nodes": it_nodes})
            if found is not None:
                return solver.result(board, goal, bf, found, expanded, generated,
                                     time.perf_counter() - t0, h0, iterations, threads)
            if status != NOT_FOUND or stop[0]:
                why = "node budget exhausted" if status == BUDGET else "search stopped (cancelled or deadline)"
                raise LimitReached(f"{why} after {generated:,} nodes ({time.perf_counter() - t0:.3f} s, bound {bound})")
            bound = next_bound
