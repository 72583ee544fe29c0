"""Bidirectional search: breadth-first from both ends over ranked boards (up to 3x3), and
MM (Holte, Felner, Sharon & Sturtevant 2016) for larger boards.

**Breadth-first from both ends.** Boards are ranked by their Lehmer code (kernels.bfs);
each direction has its own int8 distance and int32 parent per rank and its own queue. The
direction with the smaller queue expands one whole layer; a state it generates that the
other direction has reached closes a path of d + 1 + d' moves. Before that layer no state
was reached by both, so every path is longer than the two depths' sum, and the first
meeting is optimal. Returns (status, meeting rank, expanded, generated, states reached).

**MM.** Two best-first searches, each A*'s data structure (kernels.astar: keys, parent,
g, a hash table of indices, a heap of entries with stale ones skipped), the forward one
towards the goal with the solver's heuristic, the backward one towards the start with its
own (the caller's; Manhattan distance to the start). A node's priority is
pr = max(g + h, 2 g); each step expands the direction whose best pr is lower; a state
reached by both closes a path of g_F + g_B moves (U, the best so far). MM stops when U is
at most the smaller best pr: every optimal path has a node open in one direction with
pr <= C* (Holte et al., Theorem 10), so nothing shorter than U is left. Nodes reached again
by a shorter path are reopened, so an admissible heuristic suffices. Returns (status,
length, forward index, backward index of the meeting state, expanded, generated, states
held in both).
"""

import numpy as np
from numba import njit

from pdbtool.kernels.astar import MAX_G, MEMORY, find, heap_pop, heap_push, look_at_child
from pdbtool.kernels.bfs import blank_of, push_children, unrank
from pdbtool.kernels.heuristic import h_init
from pdbtool.kernels.ida import BOUND, FOUND, INF, NOT_FOUND, halted, poll, publish
from pdbtool.kernels.state_key import board_of, key_of, slot_of

CLOSED = 0x80  # flag in MM's gs: expanded
MAX_G_MM = 127  # g below the flag
BYTES_PER_STATE = 16 + 4 + 1 + 8 + 12  # as A*: key, parent, g, two hash slots, 1.5 heap entries
HASH_BYTES = 8  # of those, the two hash slots (the table's least: limits.hashed_states)


@njit(cache=True, nogil=True)
def bfs_layer(n, nbr, nnbr, fact, dist, parent, queue, head, tail, other, cells):
    """Expand the layer queue[head:tail]; returns (meeting rank or -1, new tail, generated)."""
    end = tail
    generated = 0
    for i in range(head, end):
        r = queue[i]
        unrank(r, n, fact, cells)
        tail, pushed, meet = push_children(r, n, nbr, nnbr, fact, cells, dist, parent, queue,
                                           tail, other)
        generated += pushed
        if meet >= 0:
            return meet, tail, generated
    return -1, tail, generated


@njit(cache=True, nogil=True)
def bibfs(start, target, n, nbr, nnbr, fact, dist_f, parent_f, queue_f, dist_b, parent_b,
          queue_b, stop, budget):
    """Breadth-first from rank ``start`` and from rank ``target`` until they meet, the stop
    flag or more than ``budget`` nodes generated (-1: no budget; both looked at before
    each layer); dist_* all -1."""
    dist_f[start] = 0
    parent_f[start] = -1
    dist_b[target] = 0
    parent_b[target] = -1
    if start == target:
        return FOUND, start, 0, 0, 1
    queue_f[0] = start
    queue_b[0] = target
    hf, tf, hb, tb = 0, 1, 0, 1
    expanded, generated = 0, 0
    cells = np.empty(n, np.int64)
    while hf < tf and hb < tb:
        status = halted(stop, budget, generated)
        if status != NOT_FOUND:
            return status, -1, expanded, generated, tf + tb
        if tf - hf <= tb - hb:
            meet, t, gen = bfs_layer(n, nbr, nnbr, fact, dist_f, parent_f, queue_f, hf, tf,
                                     dist_b, cells)
            expanded += tf - hf
            hf, tf = tf, t
        else:
            meet, t, gen = bfs_layer(n, nbr, nnbr, fact, dist_b, parent_b, queue_b, hb, tb,
                                     dist_f, cells)
            expanded += tb - hb
            hb, tb = tb, t
        generated += gen
        if meet >= 0:
            return FOUND, meet, expanded, generated, tf + tb
    return NOT_FOUND, -1, expanded, generated, tf + tb


@njit(cache=True, nogil=True)
def bfs_trace(meet, parent, n, fact, out):
    """The blank's cells of the states on the parent chain from rank ``meet`` to the
    root, both included, into out; returns the count."""
    cells = np.empty(n, np.int64)
    length = 0
    r = meet
    while r >= 0:
        out[length] = blank_of(r, n, fact, cells)
        length += 1
        r = parent[r]
    return length


@njit(cache=True, nogil=True)
def mm_push(heap, size, pr, g, j):
    return heap_push(heap, size, (np.int64(pr) << 40) | (np.int64(MAX_G - g) << 32) | j)


@njit(cache=True, nogil=True)
def mm_top(heap, size, gs):
    """Pop the stale entries off the top; returns (size, pr of the top or INF)."""
    while size > 0:
        item = heap[0]
        j = item & 0xFFFFFFFF
        g = MAX_G - ((item >> 32) & 0xFF)
        if gs[j] == g:  # open with that g (a closed state has CLOSED set)
            return size, item >> 40
        _, size = heap_pop(heap, size)
    return size, INF


@njit(cache=True, nogil=True)
def mm_expand(H, s, board, pos, moves, nmoves, rows, bits, per, keys, parent, gs, heap, size,
              table, held, okeys, ogs, otable, best):
    """Expand the top of one direction's heap. Returns (status, heap size, states held,
    generated, best length, this side's and the other side's index of its meeting state
    (-1, -1 if it did not improve))."""
    n_cells = board.shape[0]
    no_limit = np.int64(INF)
    item, size = heap_pop(heap, size)
    idx = item & 0xFFFFFFFF
    g = np.int64(gs[idx])
    gs[idx] = g | CLOSED
    k0 = keys[idx, 0]
    k1 = keys[idx, 1]
    board_of(k0, k1, n_cells, bits, per, board, pos)
    h_init(H, s, board, pos, rows[0])
    mine, theirs = -1, -1
    generated = 0
    if g + 1 >= MAX_G_MM:
        return NOT_FOUND, size, held, generated, best, mine, theirs
    mask = table.shape[0] - 1
    omask = otable.shape[0] - 1
    b = pos[0]
    g2 = g + 1
    for k in range(nmoves[b]):
        c = moves[b, k] >> 2
        h, c0, c1 = look_at_child(H, s, board, pos, rows, c, b, k0, k1, n_cells, bits, per,
                                  no_limit)
        generated += 1
        slot, j = find(table, keys, c0, c1, mask)
        if j >= 0:
            if (gs[j] & ~CLOSED) <= g2:
                continue
        else:
            if held == keys.shape[0]:
                return MEMORY, size, held, generated, best, mine, theirs
            j = held
            held += 1
            keys[j, 0] = c0
            keys[j, 1] = c1
            table[slot] = j + 1
        gs[j] = g2  # open (again)
        parent[j] = idx
        if size == heap.shape[0]:
            return MEMORY, size, held, generated, best, mine, theirs
        size = heap_push(heap, size, (np.int64(max(g2 + h, 2 * g2)) << 40)
                         | (np.int64(MAX_G - g2) << 32) | j)
        slot = slot_of(c0, c1, omask)  # reached from the other side?
        while True:
            o = otable[slot] - 1
            if o < 0 or (okeys[o, 0] == c0 and okeys[o, 1] == c1):
                break
            slot = (slot + 1) & omask
        if o >= 0 and g2 + (ogs[o] & ~CLOSED) < best:
            best = g2 + (ogs[o] & ~CLOSED)
            mine, theirs = j, o
    return NOT_FOUND, size, held, generated, best, mine, theirs


@njit(cache=True, nogil=True)
def mm(HF, HB, s, board_f, pos_f, board_b, pos_b, moves, nmoves, rows_f, rows_b, bits, per,
       keys_f, parent_f, gs_f, heap_f, table_f, keys_b, parent_b, gs_b, heap_b, table_b,
       budget, stop, counters):
    """MM from board_f (towards the goal, heuristic HF; rows_f[0] its row) and board_b,
    the goal (towards the start, HB; rows_b[0]). Per direction: keys int64[cap, 2], parent
    int32[cap], gs uint8[cap] (g, or g | CLOSED), heap int64[>= 1.5 cap], table
    int32[2^k >= 2 cap], zeros."""
    n_cells = board_f.shape[0]
    k0, k1 = key_of(board_f, n_cells, bits, per)
    keys_f[0, 0], keys_f[0, 1] = k0, k1
    table_f[slot_of(k0, k1, table_f.shape[0] - 1)] = 1
    parent_f[0] = -1
    k0, k1 = key_of(board_b, n_cells, bits, per)
    keys_b[0, 0], keys_b[0, 1] = k0, k1
    table_b[slot_of(k0, k1, table_b.shape[0] - 1)] = 1
    parent_b[0] = -1
    if keys_f[0, 0] == keys_b[0, 0] and keys_f[0, 1] == keys_b[0, 1]:
        return FOUND, 0, 0, 0, 0, 0, 2
    size_f = mm_push(heap_f, 0, rows_f[0, 0], 0, 0)
    size_b = mm_push(heap_b, 0, rows_b[0, 0], 0, 0)
    held_f, held_b = 1, 1
    best, best_f, best_b = INF, -1, -1
    expanded, generated = 0, 0
    reported_e, reported_g = 0, 0
    while True:
        size_f, pr_f = mm_top(heap_f, size_f, gs_f)
        size_b, pr_b = mm_top(heap_b, size_b, gs_b)
        if best <= min(pr_f, pr_b):
            publish(counters, generated, expanded, reported_g, reported_e)
            return (FOUND if best < INF else NOT_FOUND), best, best_f, best_b, expanded, \
                generated, held_f + held_b
        counters[BOUND] = min(pr_f, pr_b)
        expanded += 1
        status, reported_g, reported_e = poll(counters, stop, budget, generated, expanded,
                                              reported_g, reported_e)
        if status != NOT_FOUND:
            return status, 0, -1, -1, expanded, generated, held_f + held_b
        if pr_f <= pr_b:
            status, size_f, held_f, gen, best, mine, theirs = mm_expand(
                HF, s, board_f, pos_f, moves, nmoves, rows_f, bits, per, keys_f, parent_f, gs_f,
                heap_f, size_f, table_f, held_f, keys_b, gs_b, table_b, best)
            if mine >= 0:
                best_f, best_b = mine, theirs
        else:
            status, size_b, held_b, gen, best, mine, theirs = mm_expand(
                HB, s, board_b, pos_b, moves, nmoves, rows_b, bits, per, keys_b, parent_b, gs_b,
                heap_b, size_b, table_b, held_b, keys_f, gs_f, table_f, best)
            if mine >= 0:
                best_f, best_b = theirs, mine
        generated += gen
        if status != NOT_FOUND:
            return status, 0, -1, -1, expanded, generated, held_f + held_b


@njit(cache=True, nogil=True)
def mm_trace(keys, parent, j, n, bits, per, board, pos, out):
    """The blank's cells of the states on the parent chain from j to the root, both
    included, into out; returns the count."""
    length = 0
    while j >= 0:
        board_of(keys[j, 0], keys[j, 1], n, bits, per, board, pos)
        out[length] = pos[0]
        length += 1
        j = parent[j]
    return length
