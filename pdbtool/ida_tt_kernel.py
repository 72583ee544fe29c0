"""IDA* with a bounded transposition table, and weighted IDA* (WIDA*): one kernel.

The depth-first search is search_kernel.dfs's (explicit stack, make/undo, the move-pruning
automaton, incremental h) with two additions:

* f = gw * g + hw * h. IDA* is gw = hw = 1; WIDA* with weight W = hw / gw >= 1 (seed 003)
  answers with at most W times the optimal length: every node of an optimal path has
  f <= gw * W * C*, so no bound passes gw * W * C* before a goal is found, and a goal
  found under bound B has gw * g <= B.
* A transposition table (seed 004 section 7): slot -> (state key, g, iteration), simple
  overwrite, ``tt_key.shape[0]`` slots (a power of two; 0 disables it). A node is cut
  only when the same state was expanded earlier in the same iteration with g' <= g.
  Why this stays optimal with the automaton: the depth-first order is the lexicographic
  order of move strings (U < D < L < R). A state S on the lexicographically smallest
  optimal solution P = p + q, visited earlier in the iteration by a path p' with
  |p'| <= |p|, gives a solution p' + q no longer than P and lexicographically smaller
  (or shorter): impossible. So P's nodes are never cut, the first of them over the bound
  still sets the next bound, and the bound never passes C*. A lost entry only cuts less.

Returns like ida: (status, length, expanded, generated, iterations, cuts).
"""

import numpy as np
from numba import literally, njit

from .heuristic_kernels import h_update
from .search_kernel import (BOUND, BUDGET, FOUND, INF, NOT_FOUND, POLL, STOPPED, halted, path_to,
                            publish, slide, undo, unwind)
from .state_key_kernel import key_moved, key_of, slot_of

TT_ENTRY_BYTES = 24  # two key words and (iteration << 16 | g)
MAX_DEPTH_W = 1023  # stack depth: weighted answers can be long


@njit(cache=True, nogil=True, inline="always")
def tt_seen(tt_key, tt_tag, k0, k1, g, iteration, mask):
    """True if the state was expanded in this iteration with g' <= g; else record it."""
    slot = slot_of(k0, k1, mask)
    tag = tt_tag[slot]
    if tt_key[slot, 0] == k0 and tt_key[slot, 1] == k1 and (tag >> 16) == iteration \
            and (tag & 0xFFFF) <= g:
        return True
    tt_key[slot, 0] = k0
    tt_key[slot, 1] = k1
    tt_tag[slot] = (np.int64(iteration) << 16) | g
    return False


@njit(cache=True, nogil=True, _nrt=False)  # no reference counting: docs/architecture.md
def dfs_tt(kind, H, s, board, pos, moves, nmoves, fsm, hs, root_blank, bound, gw, hw, tt_key,
           tt_tag, iteration, bits, per, budget, stop, counters, path, max_depth, stacks):
    """stacks: int64[5, max_depth + 2] (blank cells, child iterators, automaton states,
    the two words of each node's key)."""
    literally(kind)
    n = s * s
    use_tt = tt_key.shape[0] > 0
    mask = tt_key.shape[0] - 1
    blanks, it, automaton, k0s, k1s = stacks[0], stacks[1], stacks[2], stacks[3], stacks[4]
    counters[BOUND] = bound
    h0 = hs[0, 0]
    if hw * h0 > bound:
        return NOT_FOUND, hw * h0, 0, 0, 0, 0
    if h0 == 0:
        return FOUND, bound, 0, 0, 0, 0
    next_bound = INF
    expanded, generated, cuts = 1, 0, 0
    reported_e, reported_g = 0, 0
    depth = 0
    blanks[0] = root_blank
    automaton[0] = 0
    it[0] = 0
    k0s[0], k1s[0] = 0, 0
    if use_tt:
        k0s[0], k1s[0] = key_of(board, n, bits, per)
        tt_seen(tt_key, tt_tag, k0s[0], k1s[0], 0, iteration, mask)
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
        move = moves[b, k]
        next_state = fsm[automaton[depth], move & 3]
        if next_state < 0:
            continue
        c = move >> 2
        t = slide(board, pos, c, b)
        generated += 1
        g = depth + 1
        h = h_update(kind, H, s, board, pos, hs[depth], hs[depth + 1], t, c, b,
                     (bound - gw * g) // hw)
        f = gw * g + hw * h
        if f > bound or (h > 0 and g >= max_depth):
            if bound < f < next_bound:
                next_bound = f
            slide(board, pos, b, c)
            continue
        if h == 0:
            status = FOUND
            length = path_to(path, blanks, depth, c)
            break
        c0, c1 = np.int64(0), np.int64(0)
        if use_tt:
            c0, c1 = key_moved(k0s[depth], k1s[depth], t, c, b, n, bits, per)
            if tt_seen(tt_key, tt_tag, c0, c1, g, iteration, mask):
                cuts += 1
                slide(board, pos, b, c)
                continue
        depth += 1
        blanks[depth] = c
        automaton[depth] = next_state
        k0s[depth] = c0
        k1s[depth] = c1
        it[depth] = 0
        expanded += 1
        if expanded & (POLL - 1) == 0:
            reported_g, reported_e = publish(counters, generated, expanded, reported_g, reported_e)
            status = halted(stop, budget, generated)
            if status != NOT_FOUND:
                break
    if status == STOPPED or status == BUDGET:
        unwind(board, pos, blanks, depth)
    publish(counters, generated, expanded, reported_g, reported_e)
    return status, next_bound, expanded, generated, length, cuts


@njit(cache=True, nogil=True)
def ida_tt(kind, H, s, board, pos, moves, nmoves, fsm, hs, blank, gw, hw, tt_key, tt_tag, bits, per,
           budget, stop, counters, path, bounds, nodes, max_depth):
    """Iterative deepening over dfs_tt from f(root); each bound the minimum overshoot.
    Returns (status, length, expanded, generated, iterations, cuts)."""
    literally(kind)
    stacks = np.empty((5, max_depth + 2), dtype=np.int64)
    bound = hw * hs[0, 0]
    expanded, generated, cuts = 0, 0, 0
    i = 0
    while True:
        left = -1
        if budget >= 0:
            if generated >= budget:
                return BUDGET, 0, expanded, generated, i, cuts
            left = budget - generated
        status, nb, e, g, length, cut = dfs_tt(kind, H, s, board, pos, moves, nmoves, fsm, hs, blank,
                                               bound, gw, hw, tt_key, tt_tag, i + 1, bits, per, left,
                                               stop, counters, path, max_depth, stacks)
        expanded += e
        generated += g
        cuts += cut
        if i < bounds.shape[0]:
            bounds[i] = bound
            nodes[i] = g
        i += 1
        if status != NOT_FOUND or nb >= INF:
            if status == NOT_FOUND:  # only the depth limit stopped it
                status = BUDGET
            return status, length, expanded, generated, i, cuts
        bound = nb


@njit(cache=True, nogil=True)
def run_ida_tt(kind, H, s, board, pos, moves, nmoves, fsm, hs, blank, gw, hw, tt_key, tt_tag, bits, per,
               budget, stop, counters, path, bounds, nodes, max_depth):
    if kind == 0:
        return ida_tt(0, H, s, board, pos, moves, nmoves, fsm, hs, blank, gw, hw, tt_key, tt_tag, bits, per, budget, stop, counters, path, bounds, nodes, max_depth)
    if kind == 1:
        return ida_tt(1, H, s, board, pos, moves, nmoves, fsm, hs, blank, gw, hw, tt_key, tt_tag, bits, per, budget, stop, counters, path, bounds, nodes, max_depth)
    if kind == 2:
        return ida_tt(2, H, s, board, pos, moves, nmoves, fsm, hs, blank, gw, hw, tt_key, tt_tag, bits, per, budget, stop, counters, path, bounds, nodes, max_depth)
    if kind == 3:
        return ida_tt(3, H, s, board, pos, moves, nmoves, fsm, hs, blank, gw, hw, tt_key, tt_tag, bits, per, budget, stop, counters, path, bounds, nodes, max_depth)
    return ida_tt(4, H, s, board, pos, moves, nmoves, fsm, hs, blank, gw, hw, tt_key, tt_tag, bits, per, budget, stop, counters, path, bounds, nodes, max_depth)
