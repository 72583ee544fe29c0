"""The exhaustive check of a built table (``pdbtool verify --exhaustive``): every entry, and
every move of the group's tiles out of it.

An entry of a zero-aware table is the exact distance d of its abstract state (the group's
placement and the blank's region) to the goal, counting the group's own moves. Every move
of one of its tiles into a cell of the blank's region changes d by exactly one (d has the
parity of the group's Manhattan distance, which a move changes by one). So on every entry:

  consistency   |v - v'| <= 1 for each move (with v = 0 at the goal, this gives
                v <= d: admissibility, by induction along a shortest path);
  descent       v > 0 has a move to an entry v' = v - 1, and v = 0 only at the goal
                (this gives v >= d: the entry is the exact distance);
  closure       no move leads from a reachable entry to an unreachable one (15).

A min-over-blank entry is the minimum of d over the blank's regions. Descent and closure
hold there too (some region's shortest path starts with a move to an entry at most v - 1);
consistency only between placements whose free cells are one region (``whole``).

The value histogram (v = md + 2 * nibble, unreachable entries left out) is counted on the
way; ``histogram`` counts it alone (every ``pdbtool verify``).
"""

import numpy as np
from numba import njit, prange

from pdbtool.kernels.ranking import (entry_index, lex_next, lex_unrank, map_rank, order_next,
                                     order_rank, placement, unrank)

CHUNKS = 256
# kinds of failure (first_bad[chunk, 1]); 0 = none
JUMP = 1          # |v - v'| > 1 across a move
NO_DESCENT = 2    # v > 0 and no move to an entry below it
FALSE_GOAL = 3    # v = 0 away from the goal
TO_UNREACHED = 4  # a move from a reachable entry to an unreachable one
TOO_LARGE = 5     # v beyond the histogram's width


@njit(cache=True, nogil=True, inline="always")
def nibble(packed, e):
    return (packed[e >> 1] >> ((e & 1) << 2)) & 15


@njit(cache=True, nogil=True, inline="always")
def note(first_bad, chunk, e, kind, other):
    if first_bad[chunk, 1] == 0:
        first_bad[chunk, 0] = e
        first_bad[chunk, 1] = kind
        first_bad[chunk, 2] = other


@njit(cache=True, parallel=True)
def audit(packed, lo, hi, goal_entry, n, binom, pw, lw, orders, md_tab, reg_index,
          reg_count, secondary, whole, nbr, nnbr, hist, first_bad):
    """Check the entries of placements lo .. hi - 1 (map x order rank), every region of
    each. ``hist[chunk, v]`` counts the values; ``first_bad[chunk]`` = (entry, kind,
    the entry at the other end of the move or -1) of a chunk's first failure; returns
    the failures."""
    m = md_tab.shape[0]
    mfact = pw[0] * m
    step = (hi - lo + CHUNKS - 1) // CHUNKS
    width = hist.shape[1]
    failures = np.zeros(CHUNKS, np.int64)
    for chunk in prange(CHUNKS):
        start = lo + chunk * step
        stop = min(hi, start + step)
        pos = np.empty(m, np.int64)
        cells = np.empty(m, np.int64)
        last, occupied = -1, np.int64(0)
        for q in range(start, stop):
            last, occupied = placement(q, last, occupied, n, m, binom, mfact, orders, cells, pos)
            order = q - last * mfact
            md = 0
            for i in range(m):
                md += md_tab[i, pos[i]]
            for k in range(reg_count[last]):
                e = entry_index(pos, last, order, k, mfact, lw, secondary)
                nib = nibble(packed, e)
                if nib == 15:
                    continue
                v = md + 2 * nib
                if v >= width:
                    failures[chunk] += 1
                    note(first_bad, chunk, e, TOO_LARGE, -1)
                    continue
                hist[chunk, v] += 1
                if v == 0 and e != goal_entry:
                    failures[chunk] += 1
                    note(first_bad, chunk, e, FALSE_GOAL, -1)
                descends = v == 0
                for i in range(m):
                    c = pos[i]
                    for j in range(nnbr[c]):
                        b = nbr[c, j]
                        if (occupied >> b) & 1 or reg_index[last, b] != k:
                            continue  # not the blank's region: no move there
                        # tile i slides from c into b; the blank's region now holds c
                        after = occupied ^ (np.int64(1) << c) ^ (np.int64(1) << b)
                        pos[i] = b
                        r2 = map_rank(after, binom)
                        e2 = entry_index(pos, r2, order_rank(pos, after, pw),
                                         reg_index[r2, c], mfact, lw, secondary)
                        pos[i] = c
                        nib2 = nibble(packed, e2)
                        if nib2 == 15:
                            failures[chunk] += 1
                            note(first_bad, chunk, e, TO_UNREACHED, e2)
                            continue
                        v2 = md - md_tab[i, c] + md_tab[i, b] + 2 * nib2
                        if v2 < v:
                            descends = True
                        if (v2 - v > 1 or v - v2 > 1) and whole[last] and whole[r2]:
                            failures[chunk] += 1
                            note(first_bad, chunk, e, JUMP, e2)
                if not descends:
                    failures[chunk] += 1
                    note(first_bad, chunk, e, NO_DESCENT, -1)
    return failures.sum()


@njit(cache=True, nogil=True, inline="always")
def count_value(packed, e, pos, md_tab, hist, slot):
    nib = nibble(packed, e)
    if nib == 15:
        return 0
    v = 2 * nib
    for i in range(pos.shape[0]):
        v += md_tab[i, pos[i]]
    if v >= hist.shape[1]:
        return 1
    hist[slot, v] += 1
    return 0


@njit(cache=True, parallel=True)
def histogram(packed, n, binom, pw, lw, md_tab, reg_count, secondary, hist):
    """Count the values of every entry into hist[chunk, v] (hist has CHUNKS rows),
    stepping from placement to placement as the builder's compact does: region 0 in
    lexicographic order, then the other regions map by map. The check of the metadata's
    histogram, without the moves. Returns the entries beyond hist's width."""
    m = md_tab.shape[0]
    mfact = pw[0] * m
    maps = reg_count.shape[0]
    placements = maps * mfact
    step = (placements + CHUNKS - 1) // CHUNKS
    map_step = (maps + CHUNKS - 1) // CHUNKS
    over = np.zeros(CHUNKS, np.int64)
    for chunk in prange(CHUNKS):
        lo = chunk * step
        hi = min(placements, lo + step)
        pos = np.empty(m, np.int64)
        if lo < hi:
            lex_unrank(lo, n, m, lw, pos)
        for e in range(lo, hi):
            over[chunk] += count_value(packed, e, pos, md_tab, hist, chunk)
            lex_next(pos, n)
        for r in range(chunk * map_step, min(maps, (chunk + 1) * map_step)):
            if reg_count[r] < 2:
                continue
            unrank(r * mfact, n, m, binom, pw, pos)
            for o in range(mfact):
                for k in range(1, reg_count[r]):
                    over[chunk] += count_value(packed, secondary[r] + (k - 1) * mfact + o,
                                               pos, md_tab, hist, chunk)
                order_next(pos)
    return over.sum()
