"""Numba kernels of the pattern-database builder: a layered BFS over (placement, blank region).

Additive accounting: a move of a pattern tile costs 1, a move of the blank among the other
cells costs 0. So a state is a placement of the group's tiles plus the connected region of
free cells the blank can roam for free. Per placement we keep bit masks over the cells:

  visited[p]  blank cells reached so far (always whole regions);
  cur[p]      blank cells first reached at the current layer d (the frontier);
  nxt[p]      seeds for layer d + 1: cells a pattern tile just left.

``expand`` pushes every pattern move of the frontier into nxt with an atomic OR (threads
may hit the same word); ``close`` turns seeds into whole regions, records the layer for
placements seen the first time, and makes them the next frontier. Both are set operations,
so the table is the same whatever the number of threads.
"""

import numpy as np
from numba import njit, prange

from .intrinsics import atomic_or
from .ranking import UNSET, rank, unrank

CHUNKS = 4096


@njit(cache=True, nogil=True, inline="always")
def flood(seeds, free, s):
    """Grow the seed cells through the free cells of an s x s grid (bit masks, int64)."""
    not_first_col = 0
    not_last_col = 0
    for c in range(s * s):
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


@njit(cache=True, parallel=True)
def expand(cur, nxt, visited, n, m, w, nbr, nnbr):
    """Push the pattern moves of the frontier ``cur`` into ``nxt``; return moves pushed."""
    size = cur.shape[0]
    step = (size + CHUNKS - 1) // CHUNKS
    pushed = np.zeros(CHUNKS, dtype=np.int64)
    for chunk in prange(CHUNKS):
        pos = np.empty(m, dtype=np.int64)
        for p in range(chunk * step, min(size, (chunk + 1) * step)):
            mask = np.int64(cur[p])
            if mask == 0:
                continue
            unrank(p, n, m, w, pos)
            for i in range(m):
                c = pos[i]
                for k in range(nnbr[c]):
                    b = nbr[c, k]
                    if (mask >> b) & 1:
                        # Tile i slides from c into the blank at b; the blank is now at c.
                        pos[i] = b
                        q = rank(pos, w)
                        pos[i] = c
                        bit = np.int64(1) << c
                        if (np.int64(visited[q]) & bit) == 0:
                            atomic_or(nxt, q, bit)
                            pushed[chunk] += 1
    return pushed.sum()


@njit(cache=True, parallel=True)
def close(cur, nxt, visited, dist, layer, n, m, w, s):
    """Turn seeds into regions: the new frontier. Returns (new placements, new regions)."""
    size = cur.shape[0]
    step = (size + CHUNKS - 1) // CHUNKS
    full = (np.int64(1) << n) - 1
    placements = np.zeros(CHUNKS, dtype=np.int64)
    regions = np.zeros(CHUNKS, dtype=np.int64)
    for chunk in prange(CHUNKS):
        pos = np.empty(m, dtype=np.int64)
        for q in range(chunk * step, min(size, (chunk + 1) * step)):
            seeds = np.int64(nxt[q])
            if seeds == 0:
                if cur[q] != 0:
                    cur[q] = 0
                continue
            nxt[q] = 0
            free = full & ~unrank(q, n, m, w, pos)
            region = flood(seeds, free, s) & ~np.int64(visited[q])
            cur[q] = region
            visited[q] = np.int64(visited[q]) | region
            regions[chunk] += 1
            if dist[q] == UNSET:
                dist[q] = layer
                placements[chunk] += 1
    return placements.sum(), regions.sum()


@njit(cache=True)
def seed(cur, visited, dist, goal_cells, blank_cell, n, m, w, s):
    """Layer 0: the goal placement with the blank's region around its goal cell."""
    pos = goal_cells.copy()
    q = rank(pos, w)
    occupied = 0
    for i in range(m):
        occupied |= np.int64(1) << pos[i]
    region = flood(np.int64(1) << blank_cell, ((np.int64(1) << n) - 1) & ~occupied, s)
    cur[q] = region
    visited[q] = region
    dist[q] = 0
    return q
