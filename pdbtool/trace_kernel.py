"""A tracing variant of the IDA* kernel: search_kernel's serial search, node for node, that
also writes down every node it generates (for ``pdbtool solve --trace`` and the animation).

It runs the same loop as ``search_kernel.dfs`` from the root (g0 = 0, automaton state 0):
children in the order of ``moves``, the same automaton, ``h_update`` with the same limit
``bound - g`` (so a PDB child is pruned at the same sum), the same stop polling and node
budget. Hence the same nodes, in the same order, with the same counts per iteration;
tests/test_trace.py checks that against the plain kernel and against a Python reference.

Events, int32[cap, EVENT_FIELDS], one row per generated node while rows are left:
  EV_ITERATION  index of the IDA* iteration
  EV_G          g (the node's depth)
  EV_H          h as the search saw it: for a pruned node of a lazily evaluated heuristic
                (PDB), a lower bound that already exceeds bound - g
  EV_CELL       the blank's cell after the move (cells of the goal's image, puzzle.Frame)
  EV_OUTCOME    EXPANDED_NODE (f <= bound, its children follow), PRUNED_NODE (f > bound)
                or GOAL_NODE (h = 0 within the bound: the search ends)
f is g + h; the bound is the iteration's. Beyond the cap the search goes on unrecorded.
"""

import numpy as np
from numba import literally, njit

from .heuristic_kernels import h_update
from .search_kernel import (BOUND, BUDGET, FOUND, INF, MAX_DEPTH, NOT_FOUND, POLL, halted,
                            path_to, publish, slide, undo, unwind)

EV_ITERATION, EV_G, EV_H, EV_CELL, EV_OUTCOME = 0, 1, 2, 3, 4
EVENT_FIELDS = 5
EXPANDED_NODE, PRUNED_NODE, GOAL_NODE = 0, 1, 2


@njit(cache=True, nogil=True, inline="always")
def record(events, n, iteration, g, h, cell, outcome):
    """Write one event if a row is left; return the number of rows used."""
    if n < events.shape[0]:
        events[n, EV_ITERATION] = iteration
        events[n, EV_G] = g
        events[n, EV_H] = h
        events[n, EV_CELL] = cell
        events[n, EV_OUTCOME] = outcome
        return n + 1
    return n


@njit(cache=True, nogil=True)
def traced_iteration(kind, H, s, board, pos, moves, nmoves, fsm, hs, root_blank, bound, budget,
                     stop, counters, path, events, n, iteration):
    """One bounded search from the root, as search_kernel.dfs with g0 = 0 and automaton
    state 0, recording its nodes into events[n:]. Returns (status, next bound, expanded,
    generated, length, rows used)."""
    literally(kind)
    blanks = np.empty(MAX_DEPTH + 2, dtype=np.int64)
    it = np.empty(MAX_DEPTH + 2, dtype=np.int64)
    automaton = np.empty(MAX_DEPTH + 2, dtype=np.int64)
    counters[BOUND] = bound
    h0 = hs[0, 0]
    if h0 > bound:
        return NOT_FOUND, h0, 0, 0, 0, n
    if h0 == 0:
        return FOUND, bound, 0, 0, 0, n
    next_bound = INF
    expanded, generated = 1, 0
    reported_e, reported_g = 0, 0
    depth = 0
    blanks[0] = root_blank
    automaton[0] = 0
    it[0] = 0
    status = NOT_FOUND
    length = 0
    while True:
        b = blanks[depth]
        k = it[depth]
        if k == nmoves[b]:
            if depth == 0:
                break
            undo(board, pos, blanks, depth)
            depth -= 1
            continue
        it[depth] = k + 1
        next_state = fsm[automaton[depth], moves[b, k] & 3]
        if next_state < 0:
            continue
        c = moves[b, k] >> 2
        t = slide(board, pos, c, b)
        generated += 1
        g = depth + 1
        h = h_update(kind, H, s, board, pos, hs[depth], hs[depth + 1], t, c, b, bound - g)
        if g + h > bound:
            n = record(events, n, iteration, g, h, c, PRUNED_NODE)
            next_bound = min(next_bound, g + h)
            slide(board, pos, b, c)
            continue
        if h == 0:
            n = record(events, n, iteration, g, h, c, GOAL_NODE)
            status = FOUND
            length = path_to(path, blanks, depth, c)
            break
        n = record(events, n, iteration, g, h, c, EXPANDED_NODE)
        depth = g
        blanks[depth] = c
        automaton[depth] = next_state
        it[depth] = 0
        expanded += 1
        if expanded % POLL == 0:
            reported_g, reported_e = publish(counters, generated, expanded, reported_g, reported_e)
            status = halted(stop, budget, generated)
            if status != NOT_FOUND:
                unwind(board, pos, blanks, depth)  # so the caller's board is intact
                break
    publish(counters, generated, expanded, reported_g, reported_e)
    return status, next_bound, expanded, generated, length, n


@njit(cache=True, nogil=True)
def traced_ida(kind, H, s, board, pos, moves, nmoves, fsm, hs, blank, budget, stop, counters,
               path, bounds, nodes, events):
    """search_kernel.ida over traced_iteration. Returns (status, length, expanded,
    generated, iterations, events recorded)."""
    literally(kind)
    bound = hs[0, 0]
    expanded, generated, n = 0, 0, 0
    i = 0
    while True:
        if bound > MAX_DEPTH:
            return BUDGET, 0, expanded, generated, i, n
        left = -1
        if budget >= 0:
            if generated >= budget:
                return BUDGET, 0, expanded, generated, i, n
            left = budget - generated
        status, nb, e, g, length, n = traced_iteration(
            kind, H, s, board, pos, moves, nmoves, fsm, hs, blank, bound, left, stop, counters,
            path, events, n, i)
        expanded += e
        generated += g
        if i < bounds.shape[0]:
            bounds[i] = bound
            nodes[i] = g
        i += 1
        if status != NOT_FOUND or nb >= INF:
            return status, length, expanded, generated, i, n
        bound = nb


@njit(cache=True, nogil=True)
def run_traced_ida(kind, H, s, board, pos, moves, nmoves, fsm, hs, blank, budget, stop, counters,
                   path, bounds, nodes, events):
    """traced_ida with ``kind`` as a plain int (see search_kernel.run_ida)."""
    if kind == 0:
        return traced_ida(0, H, s, board, pos, moves, nmoves, fsm, hs, blank, budget, stop,
                          counters, path, bounds, nodes, events)
    if kind == 1:
        return traced_ida(1, H, s, board, pos, moves, nmoves, fsm, hs, blank, budget, stop,
                          counters, path, bounds, nodes, events)
    if kind == 2:
        return traced_ida(2, H, s, board, pos, moves, nmoves, fsm, hs, blank, budget, stop,
                          counters, path, bounds, nodes, events)
    if kind == 3:
        return traced_ida(3, H, s, board, pos, moves, nmoves, fsm, hs, blank, budget, stop,
                          counters, path, bounds, nodes, events)
    return traced_ida(4, H, s, board, pos, moves, nmoves, fsm, hs, blank, budget, stop,
                      counters, path, bounds, nodes, events)
