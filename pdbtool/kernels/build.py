"""Numba kernels of the pattern-database builder: a layered BFS over (placement, blank region).

Additive accounting: a move of a pattern tile costs 1, a move of the blank among the other
cells costs 0. So a state is a placement of the group's tiles plus the connected region of
free cells the blank can roam for free. Per placement we keep bit masks over the cells:

  cur[p]      blank cells first reached at the current layer d (the frontier);
  seen[p]     two masks in one word: the low ``half`` bits are the blank cells reached so
              far (always whole regions), the high ones the seeds for layer d + 1 (cells a
              pattern tile just left). A move's target is tested and seeded in one word:
              one cache miss, not two (the moves land all over the table).

``expand`` pushes every pattern move of the frontier into the seeds with an atomic OR
(threads may hit the same word); ``close`` turns seeds into whole regions, records the
layer in the distance table for every (placement, region) entry reached the first time,
and makes them the next frontier. Both are set operations, so the table is the same
whatever the number of threads. A flag per chunk of placements (live_cur, live_nxt) says
where the frontier and the seeds are, so the sparse first and last layers skip most of
the masks. The masks are indexed by the map x order rank; the distance table as
ranking.region_entry says (the table's own layout, region 0 in lexicographic order): one
entry per region of the blank (zero-aware), or one per placement when the region index
maps every free cell to region 0 (min over the blank: the first layer that reaches a
placement).
"""

import numpy as np
from numba import njit, prange

from pdbtool.kernels.intrinsics import atomic_or
from pdbtool.kernels.ranking import (UNSET, entry_index, lex_next, lex_unrank, lowest_bit,
                                     order_next, placement, rank, region_entry, unrank)

CHUNKS = 4096


@njit(cache=True, nogil=True, inline="always")
def flood(seeds, free, s, n):
    """Grow the seed cells through the free cells of a grid of n cells, s a row (bit masks,
    int64)."""
    not_first_col = 0
    not_last_col = 0
    for c in range(n):
        if c % s != 0:
            not_first_col |= 1 << c
        if c % s != s - 1:
            not_last_col |= 1 << c
    region = seeds
    while True:
        grown = region | ((region & not_last_col) << 1) | ((region & not_first_col) >> 1)
        grown |= (region << s) | (region >> s)
        grown &= free
        grown |= region
        if grown == region:
            return region
        region = grown


@njit(cache=True, nogil=True, inline="always")
def chunk_work(chunk, size, m):
    """The placements of one of CHUNKS equal slices of a table (the unit of the threads),
    as range(lo, hi), and that thread's buffers for a placement's m cells and for its
    map's (ranking.placement)."""
    step = (size + CHUNKS - 1) // CHUNKS
    return (chunk * step, min(size, (chunk + 1) * step), np.empty(m, dtype=np.int64),
            np.empty(m, dtype=np.int64))


@njit(cache=True, nogil=True, inline="always")
def chunk_of(q, size):
    """The chunk (chunk_work) that holds placement q."""
    return q // ((size + CHUNKS - 1) // CHUNKS)


@njit(cache=True, parallel=True)
def expand(cur, seen, half, live_cur, live_nxt, n, m, binom, pw, orders, nbr, nnbr):
    """Push the pattern moves of the frontier ``cur`` into the seeds of ``seen``, flagging
    the chunks they land in (live_nxt); chunks without frontier (live_cur) are skipped.
    Returns the moves pushed."""
    mfact = pw[0] * m
    pushed = np.zeros(CHUNKS, dtype=np.int64)
    for chunk in prange(CHUNKS):
        if live_cur[chunk] == 0:
            continue
        lo, hi, pos, cells = chunk_work(chunk, cur.shape[0], m)
        last, occupied = -1, np.int64(0)
        for p in range(lo, hi):
            if cur[p] == 0:  # not in the frontier
                continue
            mask = np.int64(cur[p])
            last, occupied = placement(p, last, occupied, n, m, binom, mfact, orders, cells, pos)
            for i in range(m):
                c = pos[i]
                for k in range(nnbr[c]):
                    b = nbr[c, k]
                    if (mask >> b) & 1:
                        # Tile i slides from c into the blank at b; the blank is now at c.
                        pos[i] = b
                        q = rank(pos, binom, pw)
                        pos[i] = c
                        bit = np.int64(1) << c
                        if (np.int64(seen[q]) & bit) == 0:  # not visited
                            atomic_or(seen, q, bit << half)
                            pushed[chunk] += 1
                            target = chunk_of(q, cur.shape[0])
                            if live_nxt[target] == 0:
                                atomic_or(live_nxt, target, 1)
    return pushed.sum()


@njit(cache=True, parallel=True)
def close(cur, seen, half, live_cur, live_nxt, dist, layer, n, m, binom, pw, lw, orders,
          reg_index, reg_offset, s):
    """Turn seeds into regions: the new frontier, its chunks flagged in live_cur (a chunk
    without seeds is only cleared of the old frontier). Returns (new entries, new
    regions)."""
    full = (np.int64(1) << n) - 1
    low = (np.int64(1) << half) - 1
    mfact = pw[0] * m
    entries = np.zeros(CHUNKS, dtype=np.int64)
    regions = np.zeros(CHUNKS, dtype=np.int64)
    for chunk in prange(CHUNKS):
        if live_nxt[chunk] == 0:
            if live_cur[chunk] != 0:
                lo, hi, _, _ = chunk_work(chunk, cur.shape[0], 0)
                cur[lo:hi] = 0
                live_cur[chunk] = 0
            continue
        live_nxt[chunk] = 0
        lo, hi, pos, cells = chunk_work(chunk, cur.shape[0], m)
        last, occupied = -1, np.int64(0)
        for q in range(lo, hi):
            word = np.int64(seen[q])
            seeds = word >> half
            if seeds == 0:
                if cur[q] != 0:
                    cur[q] = 0
                continue
            visited = word & low
            last, occupied = placement(q, last, occupied, n, m, binom, mfact, orders, cells, pos)
            free = full & ~occupied
            region = flood(seeds, free, s, n) & ~visited
            cur[q] = region
            seen[q] = visited | region  # the seeds are used up
            regions[chunk] += 1
            x = region
            while x:  # every cell of the new regions names its region's entry
                c = lowest_bit(x)
                x &= x - 1
                e = region_entry(pos, q // mfact, q % mfact, c, mfact, lw, reg_index,
                                 reg_offset)
                if dist[e] == UNSET:
                    dist[e] = layer
                    entries[chunk] += 1
        live_cur[chunk] = regions[chunk] != 0
    return entries.sum(), regions.sum()


@njit(cache=True)
def seed(cur, seen, live_cur, dist, goal_cells, blank_cell, n, m, binom, pw, lw, reg_index,
         reg_offset, s):
    """Layer 0: the goal placement with the blank's region around its goal cell."""
    pos = goal_cells.copy()
    q = rank(pos, binom, pw)
    occupied = 0
    for i in range(m):
        occupied |= np.int64(1) << pos[i]
    region = flood(np.int64(1) << blank_cell, ((np.int64(1) << n) - 1) & ~occupied, s, n)
    cur[q] = region
    seen[q] = region
    live_cur[chunk_of(q, cur.shape[0])] = 1
    mfact = pw[0] * m
    dist[region_entry(pos, q // mfact, q % mfact, blank_cell, mfact, lw, reg_index, reg_offset)] = 0
    return q


@njit(cache=True, nogil=True, inline="always")
def pack_entry(packed, e, dist, pos, md_tab, bad, too_large, slot, saturate):
    """Store the 4-bit form of distance v = dist[e] of placement pos as entry e: (v - md) / 2,
    where md is the group's own Manhattan distance there (md_tab[i, cell]: tile i's
    distance from that cell to its goal; a distance is never below md and has its
    parity). UNSET becomes 15; so does a value below md or of the other parity (counted
    in bad[slot]: a builder error) or one of 15 or more (too_large), which ``saturate``
    stores as 14 instead: md + 28, a lower bound that keeps every derivation of a move
    right (kernels.lookups.moved_entry: an even 14 reads as staying put), and writes
    back into dist (so the table's histogram counts the values it holds)."""
    v = np.int64(dist[e])
    nib = 15
    if v != UNSET:
        md = 0
        for i in range(pos.shape[0]):
            md += md_tab[i, pos[i]]
        if v < md or (v - md) & 1:
            bad[slot] += 1
        elif (v - md) >> 1 >= 15:
            too_large[slot] += 1
            if saturate:
                nib = 14
                dist[e] = md + 28
        else:
            nib = (v - md) >> 1
    packed[e >> 1] |= np.uint8(nib << ((e & 1) << 2))


@njit(cache=True, parallel=True)
def compact(dist, packed, md_tab, binom, pw, lw, reg_count, secondary, saturate):
    """Pack a distance table into 4-bit entries (``pack_entry``), in the table's own
    layout; returns the counts of entries too large and inconsistent, so the caller can
    refuse the table.

    Region 0 is packed in lexicographic order, a chunk of whole bytes a thread (a byte's
    two entries belong to different maps), stepping from placement to placement
    (ranking.lex_next) rather than unranking each; the other regions map by map, order by
    order (ranking.order_next): their entries of one map and region are m! long and start
    at a multiple of m! (even), so no two threads share a byte."""
    m, n = md_tab.shape
    mfact = pw[0] * m
    maps = reg_count.shape[0]
    placements = maps * mfact
    too_large = np.zeros(CHUNKS + maps, np.int64)  # a slot per chunk, then per map
    bad = np.zeros(CHUNKS + maps, np.int64)
    for chunk in prange(CHUNKS):
        lo, hi, pos, _ = chunk_work(chunk, (placements + 1) // 2, m)
        if lo >= hi:  # the last chunks of a small table are empty
            continue
        lex_unrank(2 * lo, n, m, lw, pos)
        for e in range(2 * lo, min(2 * hi, placements)):
            pack_entry(packed, e, dist, pos, md_tab, bad, too_large, chunk, saturate)
            lex_next(pos, n)
    for r in prange(maps):
        pos = np.empty(m, dtype=np.int64)
        if reg_count[r] > 1:
            unrank(r * mfact, n, m, binom, pw, pos)
        for o in range(mfact if reg_count[r] > 1 else 0):
            for k in range(1, reg_count[r]):
                e = entry_index(pos, r, o, k, mfact, lw, secondary)
                pack_entry(packed, e, dist, pos, md_tab, bad, too_large, CHUNKS + r,
                           saturate)
            order_next(pos)
    return too_large.sum(), bad.sum()
