"""A pattern database lookup's kernels: the ranks of its tiles' placement (kept in the
search's state row and derived after each move), the index of its entry in the table, and
the reads of entries and of their parity bits. kernels/heuristic.py combines the lookups
into a heuristic; the arrays ``H`` are its HeuristicArrays (lk_* for the lookups, table,
parity and the region arrays of kernels/ranking.py).
"""

import numpy as np
from numba import njit

from pdbtool.kernels.intrinsics import ix, popcount
from pdbtool.kernels.ranking import TWO_REGIONS, lowest_bit, map_rank_split

@njit(cache=True, nogil=True, inline="always")
def read_entry(H, l, e):
    """The 4-bit entry e (a nibble index) of lookup l's table."""
    return np.int32((H.table[H.lk_off[l] + (e >> 1)] >> ((e & 1) << 2)) & 15)


@njit(cache=True, nogil=True, inline="always")
def moved_entry(H, l, e, before, dmd):
    """Lookup l's entry e after a move of one of its tiles, whose Manhattan distance
    changed by ``dmd``; ``before`` is the entry before the move.

    A zero-aware group's value (its Manhattan distance plus twice the entry) is a
    distance in the group's own state space with one cost a move of its tiles, so a move
    of one of them changes it by exactly one: the entry stays or moves by -dmd, and its
    lowest bit (``parity``) says which. Min-over-blank values can change by more: their
    entries are read whole.

    A wrong ``before`` follows every move below it: Solver.root refuses a root whose
    entries its neighbours contradict (broken_derivation). Against a wrong entry deeper
    down, an entry never falls below 0 here (h stays at least the Manhattan distance)
    and h_update takes md = 0 as the goal, so the search still ends and the path check
    (kernels.ida.path_violation, which reads whole entries) judges its answer."""
    if H.zero_aware:
        k = parity_index(H, l, e)
        bit = (H.parity[ix(k >> 3)] >> (k & 7)) & 1
        return max(before - dmd * ((bit ^ before) & 1), 0)
    return read_entry(H, l, e)


@njit(cache=True, nogil=True, inline="always")
def parity_index(H, l, e):
    """The bit of lookup l's entry e in ``H.parity``: byte k >> 3, bit k & 7."""
    return 2 * H.lk_off[ix(l)] + e


@njit(cache=True, nogil=True)
def parity_bits(table, out):
    """out[j] bit i = the lowest bit of 4-bit entry 8 j + i of ``table`` (its parity): one
    32-bit word of entries (8 nibbles) a byte. ``table`` is a multiple of 4 bytes long.
    One thread: a parallel kernel (numba's OpenMP layer) made a process that loaded a
    table unsafe to fork (a child that then loaded one aborted, a fork Pool hung)."""
    words = table.view(np.uint32)
    for j in range(words.shape[0]):
        x = np.uint64(words[j]) & np.uint64(0x11111111)  # bit 4 q of each nibble q
        x = (x | (x >> np.uint64(3))) & np.uint64(0x03030303)
        x = (x | (x >> np.uint64(6))) & np.uint64(0x000F000F)
        out[j] = (x | (x >> np.uint64(12))) & np.uint64(0xFF)


@njit(cache=True, nogil=True, inline="always")
def placement_rank(H, pos, l):
    """Lookup l's placement: its tiles' cells mapped into the table's frame by its cell map,
    as (lexicographic rank, bit mask of the cells, rank of the tiles' order on them). h_init
    ranks every lookup this way; after a move, moved_rank derives all three from the
    parent's. Order digit i (place value lk_pw) counts the later tiles' cells below tile
    i's cell."""
    tiles = H.lk_tiles
    cmap = H.lk_cmap
    occupied = np.int64(0)
    e = 0
    m = H.lk_m[l]
    for i in range(m):
        c = cmap[l, pos[tiles[l, i]]]
        bit = np.int64(1) << c
        e += (c - popcount(occupied & (bit - 1))) * H.lk_lw[l, i]
        occupied |= bit
    later = occupied
    order = np.int64(0)
    for i in range(m):
        bit = np.int64(1) << cmap[l, pos[tiles[l, i]]]
        later &= ~bit
        order += popcount(later & (bit - 1)) * H.lk_pw[l, i]
    return e, occupied, order


@njit(cache=True, nogil=True, inline="always")
def moved_rank(H, board, lex, occupied, order, l, tile, src, dst):
    """(rank, mask, order rank) of lookup l's placement after its ``tile`` moved from cell
    src to dst (board already updated), from the parent's (placement_rank's three).

    Digit i of the lexicographic rank is c_i minus the earlier tiles' cells below c_i. When
    tile k moves from frame cell a to b, its own digit changes by b - a, less the earlier
    tiles strictly between a and b; each later tile strictly between a and b gains or
    loses one. Order digit i counts the later tiles below c_i: only k and the tiles
    strictly between a and b change sides, so k's digit (for a later tile between) or the
    earlier tile's digit changes by one. A sideways move has no cell between (the frame
    is the board turned or mirrored, so a and b are neighbours there too), an up or down
    move side - 1 cells."""
    cmap, digit, lw, pw = H.lk_cmap[ix(l)], H.lk_digit[ix(l)], H.lk_lw[ix(l)], H.lk_pw[ix(l)]
    a = cmap[ix(src)]
    b = cmap[ix(dst)]
    k = digit[ix(tile)]
    lex += (b - a) * lw[ix(k)]
    step = 1 if b > a else -1
    lo = min(a, b)
    hits = occupied & ((np.int64(1) << max(a, b)) - (np.int64(2) << lo))
    while hits:
        j = digit[ix(board[ix(H.lk_cell[ix(l), ix(lowest_bit(hits))])])]
        if j < k:
            lex -= step * lw[ix(k)]
            order -= step * pw[ix(j)]
        else:
            lex += step * lw[ix(j)]
            order += step * pw[ix(k)]
        hits &= hits - 1
    return lex, occupied ^ (np.int64(1) << a) ^ (np.int64(1) << b), order


@njit(cache=True, nogil=True, inline="always")
def entry_index(H, l, blank, lex, occupied, order):
    """Where lookup l's entry is in its table, a nibble index, from its placement (its three
    ranks, placement_rank) and the blank's cell. The group's table value is its Manhattan
    distance plus twice the entry.

    Region 0 (the region of the lowest free cell) is a placement table in lexicographic
    order, so the entries of a parent and its child often share a cache line or a page
    (a move of a late tile changes only low digits). Whether the blank is elsewhere
    depends on the map: a word per map (reg_outside, mostly in cache) holds its free
    cells outside region 0, and whether it has exactly two regions; only a blank in a
    third region reads the region index. A blank outside region 0 reads the map's
    secondary entries (map x order)."""
    e = lex
    if H.zero_aware:
        cmap, pw = H.lk_cmap[ix(l)], H.lk_pw[ix(l)]
        m = H.lk_m[ix(l)]
        map_r = map_rank_split(occupied, H.colex_lo, H.colex_hi)
        outside = np.int64(H.reg_outside[ix(H.lk_mbase[ix(l)] + map_r)])
        cb = cmap[ix(blank)]
        if (outside >> cb) & 1:  # the blank is outside region 0
            k = 1
            if not outside & TWO_REGIONS:
                k = H.reg_index[ix(H.lk_rbase[ix(l)] + map_r * cmap.shape[0] + cb)]
            e = H.reg_secondary[ix(H.lk_obase[ix(l)] + map_r)] + (k - 1) * pw[0] * m + order
    return e
