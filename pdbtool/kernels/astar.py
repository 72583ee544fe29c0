"""The A* kernel: best-first search with an open list (binary heap) and a hash-based
closed set, in a memory budget fixed by the caller (seed 001 section 7; seed 004 section 6).

Every state reached is held once: its key (kernels.state_key), its parent's index and g.
A hash table of int32 indices (open addressing, at most half full) finds a state again; a
binary heap of int64 entries ``f << 40 | (MAX_G - g) << 32 | index`` orders the open list
by f, then by the larger g. A state reached again by a shorter path gets the new g and is
pushed again (an entry whose g is stale is skipped when popped), so the answer is optimal
for any admissible heuristic, consistent or not. When the arrays are full the search stops
with MEMORY, and the caller reports how many states it held.

The heuristic is evaluated as the IDA* kernel does: each expanded state's row from scratch
(h_init), each child's by one h_update with no limit (exact).
"""

import numpy as np
from numba import njit

from pdbtool.kernels.heuristic import h_init, h_update, no_first
from pdbtool.kernels.ida import BOUND, FOUND, INF, NOT_FOUND, poll, publish, slide
from pdbtool.kernels.state_key import board_of, key_moved, key_of, slot_of

MEMORY = 4  # outcome: the memory budget is exhausted
MAX_G = 255
BYTES_PER_STATE = 16 + 4 + 1 + 8 + 12  # key, parent, g, two hash slots, 1.5 heap entries
HASH_BYTES = 8  # of those, the hash table's two int32 slots (its least: limits.hashed_states)


@njit(cache=True, nogil=True, inline="always")
def heap_push(heap, size, item):
    i = size
    heap[i] = item
    while i > 0:
        p = (i - 1) >> 1
        if heap[p] <= item:
            break
        heap[i] = heap[p]
        heap[p] = item
        i = p
    return size + 1


@njit(cache=True, nogil=True, inline="always")
def heap_pop(heap, size):
    top = heap[0]
    size -= 1
    item = heap[size]
    i = 0
    while True:
        c = 2 * i + 1
        if c >= size:
            break
        if c + 1 < size and heap[c + 1] < heap[c]:
            c += 1
        if heap[c] >= item:
            break
        heap[i] = heap[c]
        i = c
    if size > 0:
        heap[i] = item
    return top, size


@njit(cache=True, nogil=True, inline="always")
def pop_entry(heap, size):
    """The best entry of an open list (heap_push's packing): (state index, g, f, new size)."""
    item, size = heap_pop(heap, size)
    return item & 0xFFFFFFFF, MAX_G - ((item >> 32) & 0xFF), item >> 40, size


@njit(cache=True, nogil=True, inline="always")
def look_at_child(H, s, board, pos, rows, c, b, k0, k1, n, bits, per, limit):
    """The child in which the tile at cell c slides into the blank at b, looked at and
    taken back: (its h, as h_update derives it from rows[0] into rows[1], and its key)."""
    t = slide(board, pos, c, b)
    h = h_update(H, s, board, pos, rows[0], rows[1], t, c, b, limit, no_first())
    slide(board, pos, b, c)
    c0, c1 = key_moved(k0, k1, t, c, b, n, bits, per)
    return h, c0, c1


@njit(cache=True, nogil=True)
def find(table, keys, k0, k1, mask):
    """(slot, index) of the key in the hash table (``table``: index + 1 per slot, 0 empty,
    linear probing); index -1 and the empty slot if absent."""
    slot = slot_of(k0, k1, mask)
    while True:
        j = table[slot] - 1
        if j < 0 or (keys[j, 0] == k0 and keys[j, 1] == k1):
            return slot, j
        slot = (slot + 1) & mask


@njit(cache=True, nogil=True, inline="always")
def expand(H, s, board, pos, rows, k0, k1, n, bits, per, f, counters, stop, budget, generated,
           expanded, reported_g, reported_e):
    """Begin expanding the state with key (k0, k1): the board set to it, its h in rows[0],
    counted, f published as the bound, the stop flag and the budget polled; returns
    (status, expanded, reported_g, reported_e)."""
    board_of(k0, k1, n, bits, per, board, pos)
    h_init(H, s, board, pos, rows[0])
    expanded += 1
    counters[BOUND] = f
    status, reported_g, reported_e = poll(counters, stop, budget, generated, expanded,
                                          reported_g, reported_e)
    return status, expanded, reported_g, reported_e


@njit(cache=True, nogil=True, inline="always")
def take_slot(free, nfree, top):
    """A state's slot: the last one freed if any, else the next never used; returns (slot,
    nfree, top)."""
    if nfree > 0:
        return free[nfree - 1], nfree - 1, top
    return top, nfree, top + 1


@njit(cache=True, nogil=True, _nrt=False)  # no reference counting: docs/architecture.md
def astar(H, s, board, pos, moves, nmoves, rows, bits, per, keys, parent, gs, heap, table,
          budget, stop, counters):
    """A* from the board (rows[0] its state row; rows has >= 2 rows) to h = 0.

    keys int64[cap, 2], parent int32[cap], gs uint8[cap]: the states held; heap int64[hcap];
    table int32[2^k >= 2 cap], zeros (slot = index + 1). Returns (status, goal index,
    expanded, generated, states held, largest open list).
    """
    n = board.shape[0]
    no_limit = np.int64(INF)  # not a literal: see kernels.heuristic.h_update
    cap = keys.shape[0]
    hcap = heap.shape[0]
    mask = table.shape[0] - 1
    k0, k1 = key_of(board, n, bits, per)
    keys[0, 0] = k0
    keys[0, 1] = k1
    parent[0] = -1
    gs[0] = 0
    table[slot_of(k0, k1, mask)] = 1
    held = 1
    size = heap_push(heap, 0, (np.int64(rows[0, 0]) << 40) | (np.int64(MAX_G) << 32))
    peak = 1
    expanded, generated = 0, 0
    reported_e, reported_g = 0, 0
    while size > 0:
        idx, g, f, size = pop_entry(heap, size)
        if gs[idx] != g:
            continue  # reached again by a shorter path since this entry was pushed
        if f == g:  # h = 0: the goal, expanded first at the optimal cost
            publish(counters, generated, expanded, reported_g, reported_e)
            return FOUND, idx, expanded, generated, held, peak
        if g >= MAX_G:
            continue
        k0 = keys[idx, 0]
        k1 = keys[idx, 1]
        status, expanded, reported_g, reported_e = expand(
            H, s, board, pos, rows, k0, k1, n, bits, per, f, counters, stop, budget, generated,
            expanded, reported_g, reported_e)
        if status != NOT_FOUND:
            return status, -1, expanded, generated, held, peak
        b = pos[0]
        for k in range(nmoves[b]):
            c = moves[b, k] >> 2
            h, c0, c1 = look_at_child(H, s, board, pos, rows, c, b, k0, k1, n, bits, per,
                                      no_limit)
            generated += 1
            g2 = g + 1
            slot, j = find(table, keys, c0, c1, mask)
            if j >= 0:
                if gs[j] <= g2:
                    continue
            else:
                if held == cap:
                    return MEMORY, -1, expanded, generated, held, peak
                j = held
                held += 1
                keys[j, 0] = c0
                keys[j, 1] = c1
                table[slot] = j + 1
            gs[j] = g2
            parent[j] = idx
            if size == hcap:
                return MEMORY, -1, expanded, generated, held, peak
            size = heap_push(heap, size, (np.int64(g2 + h) << 40)
                             | (np.int64(MAX_G - g2) << 32) | j)
            if size > peak:
                peak = size
    return NOT_FOUND, -1, expanded, generated, held, peak


@njit(cache=True, nogil=True)
def trace(keys, parent, goal, n, bits, per, board, pos, out):
    """The blank's cells from the root to state ``goal``: out[:length]; returns length."""
    length = 0
    j = goal
    while parent[j] >= 0:
        board_of(keys[j, 0], keys[j, 1], n, bits, per, board, pos)
        out[length] = pos[0]
        length += 1
        j = parent[j]
    out[:length] = out[:length][::-1].copy()
    return length
