"""Exact breadth-first search over whole boards, for boards small enough to enumerate
(up to 3x3: 9! = 362,880 permutations, half of them reachable).

A board is ranked by its Lehmer code (a perfect hash onto 0..n!-1). ``dist`` (int8, -1
unseen) and ``parent`` (int32 rank) are indexed by rank; the queue holds ranks. With a
target rank the search stops when it is reached; with -1 it runs to exhaustion, which is
how the exact 8-puzzle table of distances (the oracle) is built.
"""

import numpy as np
from numba import njit

from pdbtool.kernels.ida import FOUND, NOT_FOUND, POLL, halted


@njit(cache=True, nogil=True)
def rank(board, n, fact):
    r = 0
    for i in range(n):
        smaller = 0
        for j in range(i + 1, n):
            if board[j] < board[i]:
                smaller += 1
        r += smaller * fact[n - 1 - i]
    return r


@njit(cache=True, nogil=True)
def unrank(r, n, fact, board):
    used = 0
    for i in range(n):
        d = r // fact[n - 1 - i]
        r -= d * fact[n - 1 - i]
        v = 0
        while True:  # the d-th unused value
            if not (used >> v) & 1:
                if d == 0:
                    break
                d -= 1
            v += 1
        used |= 1 << v
        board[i] = v


@njit(cache=True, nogil=True)
def bfs(board, target, n, nbr, nnbr, fact, dist, parent, queue, stop, budget):
    """Breadth-first from ``board`` until rank ``target`` is dequeued (-1: every state),
    the stop flag or more than ``budget`` nodes generated (-1: no budget; looked at every
    POLL expansions, as IDA* does). Returns (status, expanded, generated, states
    reached)."""
    start = rank(board, n, fact)
    dist[start] = 0
    parent[start] = -1
    head, tail = 0, 1
    queue[0] = start
    expanded, generated = 0, 0
    cells = np.empty(n, np.int64)
    while head < tail:
        r = queue[head]
        head += 1
        if r == target:
            return FOUND, expanded, generated, tail
        unrank(r, n, fact, cells)
        expanded += 1
        if expanded & (POLL - 1) == 0:
            status = halted(stop, budget, generated)
            if status != NOT_FOUND:
                return status, expanded, generated, tail
        tail, pushed, _ = push_children(r, n, nbr, nnbr, fact, cells, dist, parent, queue, tail,
                                        dist[:0])
        generated += pushed
    return NOT_FOUND, expanded, generated, tail


@njit(cache=True, nogil=True, inline="always")
def blank_of(r, n, fact, cells):
    """The blank's cell on the board ranked r (unranked into ``cells``)."""
    unrank(r, n, fact, cells)
    b = 0
    while cells[b] != 0:
        b += 1
    return b


@njit(cache=True, nogil=True, inline="always")
def push_children(r, n, nbr, nnbr, fact, cells, dist, parent, queue, tail, other):
    """Queue the neighbours not reached yet of the board ranked r (unranked in ``cells``,
    left as it was) at distance dist[r] + 1; returns (the new tail, the neighbours generated,
    the first one queued that ``other`` has reached, or -1: bidirectional search's meeting;
    an empty ``other`` for none)."""
    generated, meet = 0, -1
    b = 0
    while cells[b] != 0:
        b += 1
    for k in range(nnbr[b]):
        c = nbr[b, k]
        cells[b] = cells[c]
        cells[c] = 0
        q = rank(cells, n, fact)
        cells[c] = cells[b]
        cells[b] = 0
        generated += 1
        if dist[q] < 0:
            dist[q] = dist[r] + 1
            parent[q] = r
            queue[tail] = q
            tail += 1
            if meet < 0 and other.shape[0] > 0 and other[q] >= 0:
                meet = q
    return tail, generated, meet


@njit(cache=True, nogil=True)
def trace(target, parent, n, fact, out):
    """The blank's cells from the start to rank ``target``: out[:length]; returns length."""
    cells = np.empty(n, np.int64)
    length = 0
    r = target
    while parent[r] >= 0:
        out[length] = blank_of(r, n, fact, cells)
        length += 1
        r = parent[r]
    out[:length] = out[:length][::-1].copy()
    return length
