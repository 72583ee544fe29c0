"""SMA* (Russell 1992): best-first search in a fixed number of nodes, optimal whenever the
optimal path fits.

The nodes held form a tree below the root (a tree search: moves go through the IDA*
kernel's automaton, so no move back and no duplicate move sequence of up to 14 moves,
which keeps the lexicographically smallest optimal path). A node has one *slot* per move
of its blank (at most 4): UNGEN (not generated yet), NOMOVE (off the board or cut by the
automaton), the index of a child held in memory, or FORGOTTEN with the f-value backed up
from that child's subtree when it was dropped (``FORGOT - slot``).

The open list is a min-heap of the nodes that still have a slot to generate, keyed by the
lowest value of those slots (an UNGEN slot: the node's own f, ``lb``, pathmax'd from its
parent; a forgotten slot: its backed-up f), then by the larger g; each step generates one
child, from the best node's best slot (SMA*'s "next successor"). A child's f is max(the
slot's value, g + h). When all ``cap`` nodes are in use, the worst leaf (highest value,
then the shallowest; a max-heap over the leaves, the same keys) is dropped, and its value
goes into its parent's slot: its parent is back on the open list. So every open value is
a lower bound on the cost of the solutions below its slot, and a goal taken from the top
of the heap is optimal. A child whose f is ``cap`` or more (a path of f moves needs f + 1
nodes: no solution below it could be held) or that has no move gets f = INF without
being stored; if the top of the heap is INF the optimal
path does not fit (MEMORY).

The keys are shared by both heaps: ``key[n] = value << 8 | (255 - g)``. Both heaps are
indexed (``*pos[n]`` is n's position + 1, 0 when absent), so a node is moved or removed in
O(log n) when its value changes. Returns (status, length, expanded, generated, dropped,
regenerated, largest number of nodes held).
"""

import numpy as np
from numba import njit

from pdbtool.kernels.astar import MAX_G, MEMORY, expand, take_slot, trace
from pdbtool.kernels.heuristic import h_update, no_first
from pdbtool.kernels.ida import FOUND, INF, NOT_FOUND, publish, slide
from pdbtool.kernels.state_key import key_moved, key_of

UNGEN, NOMOVE, FORGOT = -1, -2, -3  # slot values; FORGOT - f: forgotten with value f
# keys 16, g 1, lb 4, automaton state 4, parent 4, slots 16, children held 1, heap key 8,
# two heaps and their positions 16, free list 4
BYTES_PER_NODE = 16 + 1 + 4 + 4 + 4 + 16 + 1 + 8 + 16 + 4


@njit(cache=True, nogil=True)
def sift_up(hp, hpos, key, sgn, i):
    n = hp[i]
    kn = sgn * key[n]
    while i > 0:
        p = (i - 1) >> 1
        m = hp[p]
        if sgn * key[m] <= kn:
            break
        hp[i] = m
        hpos[m] = i + 1
        i = p
    hp[i] = n
    hpos[n] = i + 1


@njit(cache=True, nogil=True)
def sift_down(hp, hpos, size, key, sgn, i):
    n = hp[i]
    kn = sgn * key[n]
    while True:
        c = 2 * i + 1
        if c >= size:
            break
        if c + 1 < size and sgn * key[hp[c + 1]] < sgn * key[hp[c]]:
            c += 1
        if sgn * key[hp[c]] >= kn:
            break
        hp[i] = hp[c]
        hpos[hp[c]] = i + 1
        i = c
    hp[i] = n
    hpos[n] = i + 1


@njit(cache=True, nogil=True)
def heap_add(hp, hpos, size, key, sgn, n):
    hp[size] = n
    hpos[n] = size + 1
    sift_up(hp, hpos, key, sgn, size)
    return size + 1


@njit(cache=True, nogil=True)
def heap_drop(hp, hpos, size, key, sgn, n):
    """Remove node n (present) from the heap; returns the new size."""
    i = hpos[n] - 1
    hpos[n] = 0
    size -= 1
    if i == size:
        return size
    m = hp[size]
    hp[i] = m
    hpos[m] = i + 1
    sift_up(hp, hpos, key, sgn, i)
    sift_down(hp, hpos, size, key, sgn, hpos[m] - 1)
    return size


@njit(cache=True, nogil=True)
def heap_fix(hp, hpos, size, key, sgn, n):
    """n's key changed: move it to its place."""
    sift_up(hp, hpos, key, sgn, hpos[n] - 1)
    sift_down(hp, hpos, size, key, sgn, hpos[n] - 1)


@njit(cache=True, nogil=True)
def value_of(slot, lb, n):
    """The lowest value of n's slots still to generate (INF: none)."""
    best = INF
    for k in range(4):
        v = slot[n, k]
        if v == UNGEN:
            return lb[n]
        if v <= FORGOT and FORGOT - v < best:
            best = FORGOT - v
    return best


@njit(cache=True, nogil=True)
def rekey(slot, lb, gs, key, ohp, opos, osize, lhp, lpos, lsize, n):
    """n's slots changed: its key, its place in the open list (there while it has a slot
    below INF to generate) and among the leaves (if it is one); returns the open list's
    size."""
    v = value_of(slot, lb, n)
    key[n] = (np.int64(v) << 8) | (MAX_G - np.int64(gs[n]))
    up = np.int64(1)
    if v >= INF:
        if opos[n] > 0:
            osize = heap_drop(ohp, opos, osize, key, up, n)
    elif opos[n] > 0:
        heap_fix(ohp, opos, osize, key, up, n)
    else:
        osize = heap_add(ohp, opos, osize, key, up, n)
    if lpos[n] > 0:
        heap_fix(lhp, lpos, lsize, key, -up, n)
    return osize


@njit(cache=True, nogil=True)
def sma(H, s, board, pos, moves, nmoves, fsm, rows, bits, per, t0, t1, keys, gs, lb, st, par,
        slot, nin, key, ohp, opos, lhp, lpos, free, budget, stop, counters, out):
    """SMA* from the board (rows[0] its state row, rows has >= 2 rows) to the state whose
    key is (t0, t1), in as many nodes as ``keys`` has rows (all node arrays that long,
    zeros). out receives the blank's cells on FOUND."""
    n_cells = board.shape[0]
    cap = keys.shape[0]
    up = np.int64(1)
    down = np.int64(-1)
    no_limit = np.int64(INF)  # not a literal: see kernels.heuristic.h_update
    depth_limit = min(cap, MAX_G)
    expanded, generated, dropped, regenerated = 0, 0, 0, 0
    reported_e, reported_g = 0, 0
    k0, k1 = key_of(board, n_cells, bits, per)
    keys[0, 0] = k0
    keys[0, 1] = k1
    gs[0] = 0
    lb[0] = rows[0, 0]
    st[0] = 0
    par[0] = -1
    b = pos[0]
    for k in range(4):
        slot[0, k] = UNGEN if k < nmoves[b] else NOMOVE
    if lb[0] >= depth_limit and not (k0 == t0 and k1 == t1):
        return MEMORY, 0, 0, 0, 0, 0, 1
    key[0] = (np.int64(lb[0]) << 8) | MAX_G
    osize = heap_add(ohp, opos, 0, key, up, 0)
    lsize = 0
    held, peak, top = 1, 1, 1  # nodes in use, the most at once, indices handed out
    nfree = 0
    while True:
        if osize == 0:  # every value left is INF: the optimal path cannot be held
            return MEMORY, 0, expanded, generated, dropped, regenerated, peak
        n = ohp[0]
        if keys[n, 0] == t0 and keys[n, 1] == t1:
            length = trace(keys, par, n, n_cells, bits, per, board, pos, out)
            publish(counters, generated, expanded, reported_g, reported_e)
            return FOUND, length, expanded, generated, dropped, regenerated, peak
        # SMA*'s next successor of the best node: its best slot
        best_k, fslot = -1, INF
        for k in range(4):
            v = slot[n, k]
            if v == UNGEN:
                best_k, fslot = k, lb[n]
                break
            if v <= FORGOT and FORGOT - v < fslot:
                best_k, fslot = k, FORGOT - v
        if slot[n, best_k] != UNGEN:
            regenerated += 1
        status, expanded, reported_g, reported_e = expand(
            H, s, board, pos, rows, keys[n, 0], keys[n, 1], n_cells, bits, per, fslot, counters,
            stop, budget, generated, expanded, reported_g, reported_e)
        if status != NOT_FOUND:
            return status, 0, expanded, generated, dropped, regenerated, peak
        b = pos[0]
        move = moves[b, best_k]
        c = move >> 2
        ns = fsm[st[n], move & 3]
        t = slide(board, pos, c, b)
        h = h_update(H, s, board, pos, rows[0], rows[1], t, c, b, no_limit, no_first())
        generated += 1
        c0, c1 = key_moved(keys[n, 0], keys[n, 1], t, c, b, n_cells, bits, per)
        gc = np.int64(gs[n]) + 1
        fc = max(np.int64(fslot), gc + h)
        goal = c0 == t0 and c1 == t1
        nm = 0
        for k in range(nmoves[c]):
            if fsm[ns, moves[c, k] & 3] >= 0:
                nm += 1
        if fc >= depth_limit or (nm == 0 and not goal):
            fc = INF  # every path through it has f moves or more: f + 1 nodes do not fit
        if fc < INF and held == cap:
            # drop the worst leaf other than n (n's children would be its descendants)
            w = -1
            if lsize > 0 and lhp[0] != n:
                w = lhp[0]
            else:
                for i in (1, 2):
                    if i < lsize and (w < 0 or key[lhp[i]] > key[w]):
                        w = lhp[i]
            if w < 0:
                fc = INF  # only the path to n is held (the depth limit prevents this)
            else:
                q = par[w]
                fw = value_of(slot, lb, w)
                for k in range(4):
                    if slot[q, k] == w:
                        slot[q, k] = FORGOT - fw
                lsize = heap_drop(lhp, lpos, lsize, key, down, w)
                if opos[w] > 0:
                    osize = heap_drop(ohp, opos, osize, key, up, w)
                free[nfree] = w
                nfree += 1
                held -= 1
                dropped += 1
                nin[q] -= 1
                osize = rekey(slot, lb, gs, key, ohp, opos, osize, lhp, lpos, lsize, q)
                if nin[q] == 0 and q != 0 and lpos[q] == 0:
                    lsize = heap_add(lhp, lpos, lsize, key, down, q)
        if fc >= INF:
            slot[n, best_k] = FORGOT - INF
        else:
            j, nfree, top = take_slot(free, nfree, top)
            keys[j, 0] = c0
            keys[j, 1] = c1
            gs[j] = gc
            lb[j] = fc
            st[j] = ns
            par[j] = n
            nin[j] = 0
            for k in range(4):
                slot[j, k] = NOMOVE
                if k < nmoves[c] and fsm[ns, moves[c, k] & 3] >= 0:
                    slot[j, k] = UNGEN
            key[j] = (np.int64(fc) << 8) | (MAX_G - gc)
            osize = heap_add(ohp, opos, osize, key, up, j)
            lsize = heap_add(lhp, lpos, lsize, key, down, j)
            slot[n, best_k] = j
            nin[n] += 1
            if lpos[n] > 0:
                lsize = heap_drop(lhp, lpos, lsize, key, down, n)
            held += 1
            if held > peak:
                peak = held
        osize = rekey(slot, lb, gs, key, ohp, opos, osize, lhp, lpos, lsize, n)
