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
way; ``histogram`` counts it alone (every ``pdbtool verify``), and ``misplaced_unset``
checks where a table of every tile holds its unreachable entries (every verify too).
"""

import numpy as np
from numba import njit, prange

from pdbtool.kernels.ranking import (entry_index, lex_next, lex_unrank, lowest_bit, map_rank,
                                     order_rank, placement, unrank_map)

CHUNKS = 256
# kinds of failure (first_bad[chunk, 1]); 0 = none
JUMP = 1          # |v - v'| > 1 across a move
NO_DESCENT = 2    # v > 0 and no move to an entry below it
FALSE_GOAL = 3    # v = 0 away from the goal
TO_UNREACHED = 4  # a move from a reachable entry to an unreachable one
TOO_LARGE = 5     # v beyond the histogram's width
# A table of every tile may hold a few entries beyond md + 28 as md + 28 (the builder's
# saturation): such an entry is a lower bound, so it may sit more than 1 below a neighbour
# and need no move below it; every other check holds for it.
SATURATED = 14


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
                        if (v2 - v > 1 and nib != SATURATED or v - v2 > 1 and nib2 != SATURATED) \
                                and whole[last] and whole[r2]:
                            failures[chunk] += 1
                            note(first_bad, chunk, e, JUMP, e2)
                if not descends and nib != SATURATED:
                    failures[chunk] += 1
                    note(first_bad, chunk, e, NO_DESCENT, -1)
    return failures.sum()


@njit(cache=True, nogil=True, inline="always")
def count(hist, chunk, v, nib, over):
    """Count value v of a reachable entry (nib != 15) in row ``chunk``; over[chunk] counts
    the values past the histogram's width."""
    if nib != 15:
        if v < hist.shape[1]:
            hist[chunk, v] += 1
        else:
            over[chunk] += 1


@njit(cache=True, parallel=True)
def histogram(packed, n, binom, lw_prefix, md_tab, reg_count, secondary, orders, hist):
    """Count the values of every entry into hist[chunk, v] (hist has CHUNKS rows): the
    check of the metadata's histogram, without the moves, at about the speed of reading
    the table. Region 0 is in lexicographic order, where the entries of one placement of
    the first m - 1 tiles are consecutive, the last tile on each free cell in turn (its
    digit is the last one): one unranking of the prefix (ranking.lex_next) and its
    Manhattan sum serve all of them. The other regions go map by map: the Manhattan sum
    of each of the map's m! orders once, then each region's m! consecutive entries.
    Needs m >= 2. Returns the entries past hist's width."""
    m = md_tab.shape[0]
    mfact = orders.shape[0]
    maps = reg_count.shape[0]
    last = n - m + 1  # the radix of the last digit: cells left for the last tile
    prefixes = maps * mfact // last
    step = (prefixes + CHUNKS - 1) // CHUNKS
    map_step = (maps + CHUNKS - 1) // CHUNKS
    over = np.zeros(CHUNKS, np.int64)
    for chunk in prange(CHUNKS):
        lo = chunk * step
        hi = min(prefixes, lo + step)
        pos = np.empty(m - 1, np.int64)
        if lo < hi:
            lex_unrank(lo, n, m - 1, lw_prefix, pos)
        for p in range(lo, hi):
            occupied = np.int64(0)
            md = 0
            for i in range(m - 1):
                occupied |= np.int64(1) << pos[i]
                md += md_tab[i, pos[i]]
            e = p * last
            for c in range(n):
                if (occupied >> c) & 1:
                    continue
                nib = nibble(packed, e)
                count(hist, chunk, md + md_tab[m - 1, c] + 2 * nib, nib, over)
                e += 1
            lex_next(pos, n)
        cells = np.empty(m, np.int64)
        md_of = np.empty(mfact, np.int64)
        for r in range(chunk * map_step, min(maps, (chunk + 1) * map_step)):
            if reg_count[r] < 2:
                continue
            x = unrank_map(r, n, m, binom)
            for i in range(m):
                cells[i] = lowest_bit(x)
                x &= x - 1
            for o in range(mfact):
                md = 0
                for i in range(m):
                    md += md_tab[i, cells[orders[o, i]]]
                md_of[o] = md
            for k in range(1, reg_count[r]):
                base = secondary[r] + (k - 1) * mfact
                for o in range(mfact):
                    nib = nibble(packed, base + o)
                    count(hist, chunk, md_of[o] + 2 * nib, nib, over)
    return over.sum()


@njit(cache=True, parallel=True)
def misplaced_unset(packed, n, cols, tiles, lw_prefix, first_bad, start, stop):
    """A table of every tile (m = n - 1, one free cell: the blank): its unreachable
    entries (15) must be exactly the placements of the wrong parity, those whose
    permutation's parity differs from the blank's distance to its goal cell 0 (every move
    is one transposition and one step of the blank). Entries come in pairs, a placement
    of the first m - 1 tiles with the last tile on the lower or the higher of the two
    free cells. Checks the placements of the first m - 1 tiles in [start, stop) (of
    n * lw_prefix[0] = n! / 2: a caller takes them in slices, so that Ctrl-C is heard
    between them); ``first_bad[chunk]`` = the first misplaced entry of a chunk or -1;
    returns how many there are. Needs m >= 2."""
    m = tiles.shape[0]
    step = (stop - start + CHUNKS - 1) // CHUNKS
    bad = np.zeros(CHUNKS, np.int64)
    for chunk in prange(CHUNKS):
        lo = start + chunk * step
        hi = min(stop, lo + step)
        pos = np.empty(m - 1, np.int64)
        board = np.empty(n, np.int64)
        seen = np.empty(n, np.bool_)
        if lo < hi:
            lex_unrank(lo, n, m - 1, lw_prefix, pos)
        for p in range(lo, hi):
            occupied = np.int64(0)
            for i in range(m - 1):
                occupied |= np.int64(1) << pos[i]
                board[pos[i]] = tiles[i]
            free = ((np.int64(1) << n) - 1) & ~occupied
            a = lowest_bit(free)
            b = lowest_bit(free & (free - 1))
            for j in range(2):  # the last tile on a (entry 2p), or on b (2p + 1)
                last, blank = (a, b) if j == 0 else (b, a)
                board[last] = tiles[m - 1]
                board[blank] = 0
                cycles = 0
                for c in range(n):
                    seen[c] = False
                for c in range(n):
                    if not seen[c]:
                        cycles += 1
                        x = c
                        while not seen[x]:
                            seen[x] = True
                            x = board[x]
                odd = (n - cycles) & 1
                reachable = odd == ((blank // cols + blank % cols) & 1)
                e = 2 * p + j
                if (nibble(packed, e) == 15) == reachable:
                    bad[chunk] += 1
                    if first_bad[chunk] < 0:
                        first_bad[chunk] = e
            lex_next(pos, n)
    return bad.sum()
