"""Best-first frontier search (Korf, Zhang, Thayer & Hohwald 2005): A* that keeps only its
open list, no closed list.

Each open node holds its key (kernels.state_key), g, h, and a bit per direction of the
blank: the *used operators*, the moves that lead to a neighbour already expanded (or
that generated this node). Expanding a node generates its neighbours through the unused
operators only, marks in each neighbour the operator that leads back, and deletes the
node: a closed node is never generated again, because every neighbour expanded after it
had that operator marked. With a consistent heuristic every node is expanded once, at its
optimal g, as in A*, so the goal taken from the open list is optimal.

There are no back pointers. Every node instead carries its *middle node* (Korf's
divide-and-conquer frontier search): the first node on its path with g >= h (with a
consistent h that is strictly between the start and the goal of any path of 2 moves or
more), its key and its g, inherited from the parent that gave the node its g. The caller
solves start -> middle and middle -> goal again, recursively, until a half is one move.

Open nodes sit in a hash table of int32 indices (open addressing, at most half full,
deleted by backward shift, no tombstones); their free indices in a stack; the open list is
a binary heap of ``f << 40 | (255 - g) << 32 | index`` whose stale entries (a node deleted,
or given a smaller g since) are skipped when popped. When the heap is full its stale
entries are swept out. Returns (status, g of the goal, middle's g, expanded, generated,
largest number of nodes held, largest heap); mid_out receives the middle's key.
"""

import numpy as np
from numba import njit

from pdbtool.kernels.astar import (MAX_G, MEMORY, expand, find, heap_push, look_at_child,
                                   pop_entry, take_slot)
from pdbtool.kernels.ida import FOUND, INF, NOT_FOUND, publish
from pdbtool.kernels.state_key import key_of, slot_of

NO_MID = 255
ALIVE = 0x80  # in used[]: the index holds an open node
# key 16, middle's key 16, g, h, used operators, middle's g 4, two hash slots 8, free list 4,
# two heap entries 16
BYTES_PER_NODE = 16 + 16 + 4 + 8 + 4 + 16
HASH_BYTES = 8  # of those, the two hash slots (the table's least: limits.hashed_states)


@njit(cache=True, nogil=True)
def delete(table, keys, slot, mask):
    """Empty a slot and shift the run after it back (linear probing without tombstones)."""
    i = slot
    j = slot
    while True:
        table[i] = 0
        while True:
            j = (j + 1) & mask
            e = table[j] - 1
            if e < 0:
                return
            home = slot_of(keys[e, 0], keys[e, 1], mask)
            # e may move into i unless its home lies cyclically in (i, j]
            if (j > i and (home <= i or home > j)) or (j < i and home <= i and home > j):
                break
        table[i] = table[j]
        i = j


@njit(cache=True, nogil=True)
def back_direction(moves, nmoves, c, b):
    """The direction of the blank's move from cell c back to cell b."""
    for k in range(nmoves[c]):
        if moves[c, k] >> 2 == b:
            return moves[c, k] & 3
    return 0


@njit(cache=True, nogil=True)
def sweep(heap, size, keys, gs, hs, used):
    """Keep the heap's live entries only; returns the new size."""
    m = 0
    for i in range(size):
        e = heap[i]
        j = e & 0xFFFFFFFF
        g = MAX_G - ((e >> 32) & 0xFF)
        if used[j] & ALIVE and gs[j] == g and (e >> 40) == g + hs[j]:
            heap[m] = e
            m += 1
    heap[:m] = np.sort(heap[:m])  # a sorted array is a heap
    return m


@njit(cache=True, nogil=True)
def frontier(H, s, board, pos, moves, nmoves, rows, bits, per, t0, t1, keys, gs, hs, used,
             mid, midg, free, heap, table, budget, stop, counters, mid_out):
    """Frontier A* from the board (rows[0] its state row; rows has >= 2 rows) to the
    state whose key is (t0, t1). Node arrays of ``cap`` rows; heap int64[>= 2 cap]; table
    int32[2^k >= 2 cap], zeros."""
    n_cells = board.shape[0]
    h0 = rows[0, 0]
    no_limit = np.int64(INF)  # not a literal: see kernels.heuristic.h_update
    cap = keys.shape[0]
    hcap = heap.shape[0]
    mask = table.shape[0] - 1
    k0, k1 = key_of(board, n_cells, bits, per)
    if k0 == t0 and k1 == t1:
        return FOUND, 0, 0, 0, 0, 1, 1
    keys[0, 0] = k0
    keys[0, 1] = k1
    gs[0] = 0
    hs[0] = h0
    used[0] = ALIVE
    midg[0] = NO_MID
    slot, _ = find(table, keys, k0, k1, mask)
    table[slot] = 1
    held, peak, top, nfree = 1, 1, 1, 0
    size = heap_push(heap, 0, (np.int64(h0) << 40) | (np.int64(MAX_G) << 32))
    hpeak = 1
    expanded, generated = 0, 0
    reported_e, reported_g = 0, 0
    while size > 0:
        n, g, f, size = pop_entry(heap, size)
        if not (used[n] & ALIVE) or gs[n] != g or f != g + hs[n]:
            continue  # stale: expanded (deleted) already, or reached by a shorter path since
        k0 = keys[n, 0]
        k1 = keys[n, 1]
        if k0 == t0 and k1 == t1:
            mid_out[0] = mid[n, 0]
            mid_out[1] = mid[n, 1]
            publish(counters, generated, expanded, reported_g, reported_e)
            return FOUND, g, midg[n], expanded, generated, peak, hpeak
        status, expanded, reported_g, reported_e = expand(
            H, s, board, pos, rows, k0, k1, n_cells, bits, per, f, counters, stop, budget,
            generated, expanded, reported_g, reported_e)
        if status != NOT_FOUND:
            return status, 0, 0, expanded, generated, peak, hpeak
        b = pos[0]
        gc = g + 1
        for k in range(nmoves[b]):
            d = moves[b, k] & 3
            if used[n] & (1 << d) or gc >= MAX_G:
                continue
            c = moves[b, k] >> 2
            h, c0, c1 = look_at_child(H, s, board, pos, rows, c, b, k0, k1, n_cells, bits, per,
                                      no_limit)
            generated += 1
            back = np.int64(1) << back_direction(moves, nmoves, c, b)
            slot, j = find(table, keys, c0, c1, mask)
            if j >= 0:
                used[j] |= back
                if gs[j] <= gc:
                    continue
            else:
                if held == cap:
                    return MEMORY, 0, 0, expanded, generated, peak, hpeak
                j, nfree, top = take_slot(free, nfree, top)
                keys[j, 0] = c0
                keys[j, 1] = c1
                used[j] = ALIVE | back
                hs[j] = h
                table[slot] = j + 1
                held += 1
                if held > peak:
                    peak = held
            gs[j] = gc
            if midg[n] != NO_MID:
                mid[j, 0] = mid[n, 0]
                mid[j, 1] = mid[n, 1]
                midg[j] = midg[n]
            elif gc >= h:
                mid[j, 0] = c0
                mid[j, 1] = c1
                midg[j] = gc
            else:
                midg[j] = NO_MID
            if size == hcap:
                size = sweep(heap, size, keys, gs, hs, used)
                if size >= hcap - 4:
                    return MEMORY, 0, 0, expanded, generated, peak, hpeak
            size = heap_push(heap, size, (np.int64(gc + h) << 40) | (np.int64(MAX_G - gc) << 32) | j)
            if size > hpeak:
                hpeak = size
        # delete the expanded node: no closed list
        slot, _ = find(table, keys, k0, k1, mask)
        delete(table, keys, slot, mask)
        used[n] = 0
        free[nfree] = n
        nfree += 1
        held -= 1
    return NOT_FOUND, 0, 0, expanded, generated, peak, hpeak
