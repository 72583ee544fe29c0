"""Recursive best-first search (Korf 1993; seed 000 section 9.3), optimal with an
admissible heuristic, in memory linear in the depth.

The recursion RBFS(n, F(n), B) is unrolled onto an explicit stack. A frame holds the
node's children (at most 4: the blank's cell, the automaton's state) and their backed-up
values F. The frame descends into its best child with the bound min(B, second best F). A
child whose best F exceeds its bound returns that F to its parent, which stores it as the
child's backed-up value. A child's F starts at its static f, or at max(F(parent), f) when
the parent was explored before (F(parent) > f(parent)). The goal is recognised when it is
chosen for expansion (F <= B), which is what makes the answer optimal. The board moves
with make/undo and h with h_update, as in the IDA* kernel; moves go through the same
automaton.

Returns (status, length, expanded, generated).
"""

import numpy as np
from numba import njit

from pdbtool.kernels.heuristic import h_update, no_first
from pdbtool.kernels.ida import (BOUND, FOUND, INF, MAX_DEPTH, NOT_FOUND, poll, publish, slide,
                                 undo, unwind)


@njit(cache=True, nogil=True)
def rbfs(H, s, board, pos, moves, nmoves, fsm, rows, root_blank, budget, stop, counters, path):
    """rows: MAX_DEPTH + 3 heuristic rows (row 0 the root's); path receives the blank's
    cells on FOUND."""
    D = MAX_DEPTH + 2
    return rbfs_loop(H, s, board, pos, moves, nmoves, fsm, rows, root_blank, budget, stop,
                     counters, path, np.zeros((5, D), np.int64), np.zeros((3, D, 4), np.int64))


@njit(cache=True, nogil=True, _nrt=False)  # no reference counting: docs/architecture.md
def rbfs_loop(H, s, board, pos, moves, nmoves, fsm, rows, root_blank, budget, stop,
              counters, path, per_node, per_child):
    """rbfs over its stacks: per_node int64[5, D] (blank cell, automaton state, children,
    bound B, current child), per_child int64[3, D, 4] (child cell, state, stored F)."""
    blank, state, nch, B, cur = per_node[0], per_node[1], per_node[2], per_node[3], per_node[4]
    ccell, cstate, F = per_child[0], per_child[1], per_child[2]
    no_limit = np.int64(INF)  # not a literal: see kernels.heuristic.h_update
    expanded, generated = 0, 0
    reported_e, reported_g = 0, 0
    if rows[0, 0] == 0:
        return FOUND, 0, 0, 0
    depth = 0
    blank[0] = root_blank
    state[0] = 0
    B[0] = INF
    fn = rows[0, 0]
    Fn = fn
    while True:
        # Expand the node at ``depth``: its children's static f, lifted to F(n) if needed.
        b = blank[depth]
        m = 0
        for k in range(nmoves[b]):
            move = moves[b, k]
            ns = fsm[state[depth], move & 3]
            if ns < 0:
                continue
            c = move >> 2
            t = slide(board, pos, c, b)
            h = h_update(H, s, board, pos, rows[depth], rows[depth + 1], t, c, b, no_limit, no_first())
            slide(board, pos, b, c)
            generated += 1
            fc = depth + 1 + h
            if fn < Fn and fc < Fn:
                fc = Fn
            ccell[depth, m] = c
            cstate[depth, m] = ns
            F[depth, m] = fc
            m += 1
        nch[depth] = m
        expanded += 1
        status, reported_g, reported_e = poll(counters, stop, budget, generated, expanded,
                                              reported_g, reported_e)
        if status != NOT_FOUND:
            unwind(board, pos, blank, depth)  # restore the root's board
            return status, 0, expanded, generated
        # Choose: descend into the best child within the bound, or back up to the parent.
        while True:
            best, second = -1, INF
            for i in range(nch[depth]):
                if best < 0 or F[depth, i] < F[depth, best]:
                    if best >= 0:
                        second = F[depth, best]
                    best = i
                elif F[depth, i] < second:
                    second = F[depth, i]
            fb = INF if best < 0 else F[depth, best]
            if fb > B[depth] or fb >= INF or depth >= MAX_DEPTH:
                if depth == 0:
                    return NOT_FOUND, 0, expanded, generated
                undo(board, pos, blank, depth)
                depth -= 1
                F[depth, cur[depth]] = fb if depth + 1 < MAX_DEPTH else INF
                continue
            c = ccell[depth, best]
            b = blank[depth]
            t = slide(board, pos, c, b)
            h = h_update(H, s, board, pos, rows[depth], rows[depth + 1], t, c, b, no_limit, no_first())
            cur[depth] = best
            B[depth + 1] = min(B[depth], second)
            counters[BOUND] = fb
            depth += 1
            blank[depth] = c
            state[depth] = cstate[depth - 1, best]
            if h == 0:
                for i in range(depth):
                    path[i] = blank[i + 1]
                publish(counters, generated, expanded, reported_g, reported_e)
                return FOUND, depth, expanded, generated
            fn = depth + h
            Fn = fb
            break
