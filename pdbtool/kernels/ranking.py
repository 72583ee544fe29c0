"""Perfect ranking of partial permutations (m tiles placed on n cells), and the index of the
blank's regions that zero-aware tables add to it.

A placement is the cells of the group's tiles, in the group's tile order. It has two ranks:

* the **lexicographic rank** (Korf's): digit i (radix n - i) counts the cells below pos[i]
  that earlier tiles left free; digit 0 is the most significant. A move of a late tile
  changes only low digits, so the entries a depth-first search reads one after another
  lie close together (cache lines and pages are shared): the table's main block is in
  this order;
* the **map x order rank** (combination x permutation, as in Clausecker & Reinefeld's
  zero-aware tables): the map, the set of occupied cells, ranked in the colexicographic
  order of m-subsets (sum of C(c_k, k) over the sorted cells c_1 < ... < c_m, k from 1),
  times m!, plus the order of the tiles on those cells (digit i, radix m - i, counts the
  occupied cells below pos[i] that earlier tiles left free). The builder's frontier is
  indexed by it, and the blank's other regions below.

Both are bijections onto 0 .. n!/(n-m)! - 1, O(m) with bit masks and popcounts.

The blank's region (the free cells it can reach without moving a tile of the group)
depends on the map only. Regions of a map are numbered by their lowest cell, so region 0
holds the lowest free cell. A zero-aware table keeps one entry per (placement, region),
region 0 first, as a plain placement table in lexicographic order, then the other regions
of every map:

    region 0:   index = lexicographic rank
    region k:   index = secondary[map] + (k - 1) * m! + order

where secondary[map] = m! * (C(n, m) + other regions of all smaller maps). A lookup reads a
word per map (outside_cells): the free cells outside region 0, and whether the map has
exactly two regions. A blank on none of those cells is in region 0; only a blank in a
third or later region reads the region index, and any region but 0 the secondary offsets.
``Regions`` holds the per-map arrays; they are small (C(25, 6) = 177,100 maps) and rebuilt
on load.
"""

from __future__ import annotations

from functools import lru_cache
from math import comb, factorial
from typing import NamedTuple

import numpy as np
from numba import njit

from pdbtool.kernels.intrinsics import ix, popcount

RANK_SCHEME = "lexicographic+regions"
RANK_VERSION = 3
UNSET = 255  # a distance no build reached (the unreachable parity half of 8/full)
NO_REGION = 255  # region index of an occupied cell


def table_size(n: int, m: int) -> int:
    """Number of placements of m tiles on n cells: n!/(n-m)!."""
    return comb(n, m) * factorial(m)


@lru_cache(maxsize=None)
def binomials(n: int, m: int) -> np.ndarray:
    """binom[c, k] = C(c, k) for c <= n, k <= m."""
    b = np.zeros((n + 1, m + 1), np.int64)
    for c in range(n + 1):
        for k in range(m + 1):
            b[c, k] = comb(c, k)
    b.flags.writeable = False
    return b


@lru_cache(maxsize=None)
def order_weights(m: int) -> np.ndarray:
    """Place values of the order digits: pw[i] = (m - 1 - i)!."""
    w = np.array([factorial(m - 1 - i) for i in range(m)], np.int64)
    w.flags.writeable = False
    return w


@lru_cache(maxsize=None)
def lex_weights(n: int, m: int) -> np.ndarray:
    """Place values of the lexicographic digits: lw[i] = (n-1-i)! / (n-m)!, the number of
    ways to place the tiles after tile i."""
    w = np.ones(m, np.int64)
    for i in range(m - 2, -1, -1):
        w[i] = w[i + 1] * (n - 1 - i)
    w.flags.writeable = False
    return w


@njit(cache=True, nogil=True, inline="always")
def lowest_bit(x):
    """Index of the lowest set bit of x (x != 0)."""
    return popcount((x & -x) - 1)


@njit(cache=True, nogil=True, inline="always")
def map_rank(occupied, binom):
    """Colexicographic rank of the set of cells in the bit mask ``occupied``."""
    r = 0
    k = 1
    x = occupied
    while x:
        r += binom[lowest_bit(x), k]
        k += 1
        x &= x - 1
    return r


@lru_cache(maxsize=None)
def colex_tables(n: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Tables for map_rank_split: a set of at most m of n cells has the colex rank
    lo[low] + hi[high, popcount(low)], where low is its mask of the first L = ceil(n/2)
    cells and high the rest shifted down (an element's index among the set only shifts
    by the elements below it)."""
    low_bits = (n + 1) // 2
    binom = binomials(n, m)
    lo = np.zeros(1 << low_bits, np.int32)
    hi = np.zeros((1 << (n - low_bits), m + 1), np.int32)
    for mask in range(1 << low_bits):
        cells = [c for c in range(low_bits) if mask >> c & 1]
        if len(cells) <= m:
            lo[mask] = sum(int(binom[c, i + 1]) for i, c in enumerate(cells))
    for mask in range(1 << (n - low_bits)):
        cells = [low_bits + c for c in range(n - low_bits) if mask >> c & 1]
        for below in range(m + 1 - len(cells)):
            hi[mask, below] = sum(int(binom[c, below + i + 1]) for i, c in enumerate(cells))
    lo.flags.writeable = hi.flags.writeable = False
    return lo, hi


@njit(cache=True, nogil=True, inline="always")
def map_rank_split(occupied, lo, hi):
    """map_rank by two table reads (colex_tables): no loop over the cells."""
    low_mask = lo.shape[0] - 1
    low = occupied & low_mask
    return np.int64(lo[ix(low)]) + hi[ix(occupied >> popcount(low_mask)), ix(popcount(low))]


TWO_REGIONS = 1 << 31  # outside_cells: the map has exactly two regions
MAX_OUTSIDE_CELLS = 31  # outside_cells: a bit per cell below TWO_REGIONS


def outside_cells(index: np.ndarray, count: np.ndarray) -> np.ndarray:
    """A word per map (uint32): bit c set where cell c is free and not in region 0, and
    TWO_REGIONS where the map has exactly two regions (so a cell outside region 0 is in
    region 1). One read from this array (708 KB for 6 of 25 cells, mostly in cache) decides
    region 0 for every map, where the region index (25 bytes a map) would miss the cache."""
    n = index.shape[1]
    if count.max(initial=1) == 1:  # one region a map (min over the blank, or no pockets)
        return np.zeros(count.shape[0], np.uint32)
    if n > MAX_OUTSIDE_CELLS:
        raise ValueError(f"outside_cells: {n} cells, at most {MAX_OUTSIDE_CELLS}")
    outside = (index != 0) & (index != NO_REGION)
    words = (outside.astype(np.uint64) << np.arange(n, dtype=np.uint64)).sum(axis=1)
    words |= np.where(count == 2, np.uint64(TWO_REGIONS), np.uint64(0))
    return words.astype(np.uint32)


@njit(cache=True, nogil=True, inline="always")
def order_rank(pos, occupied, pw):
    """Rank of the order of the tiles on their cells (``occupied`` is their mask)."""
    rest = occupied
    r = 0
    for i in range(pos.shape[0]):
        c = pos[i]
        r += popcount(rest & ((np.int64(1) << c) - 1)) * pw[i]
        rest &= ~(np.int64(1) << c)
    return r


@njit(cache=True, nogil=True, inline="always")
def occupied_mask(pos):
    x = np.int64(0)
    for i in range(pos.shape[0]):
        x |= np.int64(1) << pos[i]
    return x


@njit(cache=True, nogil=True, inline="always")
def rank(pos, binom, pw):
    """Rank of the placement pos (cells, distinct)."""
    occupied = occupied_mask(pos)
    m = pos.shape[0]
    return map_rank(occupied, binom) * (pw[0] * m) + order_rank(pos, occupied, pw)


@njit(cache=True, nogil=True)
def unrank_map(r, n, m, binom):
    """The bit mask of cells whose colexicographic rank is r."""
    occupied = np.int64(0)
    c = n - 1
    for k in range(m, 0, -1):
        while binom[c, k] > r:
            c -= 1
        r -= binom[c, k]
        occupied |= np.int64(1) << c
        c -= 1
    return occupied


@njit(cache=True, nogil=True)
def unrank(idx, n, m, binom, pw, pos):
    """Write into pos the placement of rank idx; return its occupied-cell mask."""
    mfact = pw[0] * m
    occupied = unrank_map(idx // mfact, n, m, binom)
    r = idx % mfact
    rest = occupied
    for i in range(m):
        d = r // pw[i]
        r -= d * pw[i]
        x = rest
        for _ in range(d):  # skip the d lowest cells still free for this tile
            x &= x - 1
        c = lowest_bit(x)
        pos[i] = c
        rest &= ~(np.int64(1) << c)
    return occupied


def order_table(m: int) -> np.ndarray:
    """uint8[order rank, i]: which of its map's cells, counted from the lowest, tile i
    holds. The orders in rank order are the permutations of range(m) in lexicographic
    order (the order rank is their Lehmer code). Made from those of range(m - 1), a block
    for each first value: m! x m bytes and no Python object a row (a list of m! tuples
    took about 6 GiB and 25 s for the 11 tiles of a 3x4 board's exact table)."""
    table = np.zeros((1, 0), np.uint8)
    for k in range(1, m + 1):  # the permutations of range(k) from those of range(k - 1)
        rest, n = table, len(table)
        table = np.empty((n * k, k), np.uint8)
        for first in range(k):
            block = table[first * n:(first + 1) * n]
            block[:, 0] = first
            np.add(rest, rest >= first, out=block[:, 1:], casting="unsafe")
    return table


@njit(cache=True, nogil=True, inline="always")
def placement(idx, last, occupied, n, m, binom, mfact, orders, cells, pos):
    """unrank for sweeps through increasing ranks: write into pos the placement of rank
    idx from ``orders`` (order_table) and cells[:m], the sorted cells of map ``last``
    (mask ``occupied``), which are unranked again only when idx is on another map (its m!
    orders are consecutive). Returns (idx's map rank, its occupied mask): the caller
    passes them back as ``last`` and ``occupied`` (start with last = -1)."""
    r = idx // mfact
    if r != last:
        occupied = unrank_map(r, n, m, binom)
        x = occupied
        for i in range(m):
            cells[i] = lowest_bit(x)
            x &= x - 1
    o = idx - r * mfact
    for i in range(m):
        pos[i] = cells[orders[o, i]]
    return r, occupied


@njit(cache=True, nogil=True, inline="always")
def lex_rank(pos, lw):
    """Lexicographic rank of the placement pos (cells, distinct)."""
    used = np.int64(0)
    r = 0
    for i in range(pos.shape[0]):
        bit = np.int64(1) << pos[i]
        r += (pos[i] - popcount(used & (bit - 1))) * lw[i]
        used |= bit
    return r


@njit(cache=True, nogil=True)
def lex_unrank(r, n, m, lw, pos):
    """Write into pos the placement of lexicographic rank r; return its occupied mask."""
    used = np.int64(0)
    for i in range(m):
        d = r // lw[i]
        r -= d * lw[i]
        x = ((np.int64(1) << n) - 1) & ~used
        for _ in range(d):  # skip the d lowest cells still free
            x &= x - 1
        c = lowest_bit(x)
        pos[i] = c
        used |= np.int64(1) << c
    return used


@njit(cache=True, nogil=True, inline="always")
def lex_next(pos, n):
    """Advance pos to the placement of the next lexicographic rank (amortised O(1): most
    steps move only the last tile). Past the last rank pos is left as it is."""
    m = pos.shape[0]
    full = (np.int64(1) << n) - 1
    used = occupied_mask(pos)
    for i in range(m - 1, -1, -1):
        used &= ~(np.int64(1) << pos[i])  # now the cells of tiles 0 .. i-1
        above = full & ~used & ~((np.int64(2) << pos[i]) - 1)
        if above:
            pos[i] = lowest_bit(above)
            used |= np.int64(1) << pos[i]
            for j in range(i + 1, m):  # the later tiles on the lowest cells left
                pos[j] = lowest_bit(full & ~used)
                used |= np.int64(1) << pos[j]
            return


@njit(cache=True, nogil=True, inline="always")
def order_next(pos):
    """Advance pos to the next order of the same map (the next permutation of its cells:
    the order rank is their Lehmer code). Past the last order pos is left as it is."""
    m = pos.shape[0]
    i = m - 2
    while i >= 0 and pos[i] > pos[i + 1]:
        i -= 1
    if i < 0:
        return
    j = m - 1
    while pos[j] < pos[i]:
        j -= 1
    pos[i], pos[j] = pos[j], pos[i]
    lo, hi = i + 1, m - 1
    while lo < hi:
        pos[lo], pos[hi] = pos[hi], pos[lo]
        lo += 1
        hi -= 1


@njit(cache=True)
def round_trip_errors(n, m, binom, pw, lw, start, stop, step):
    """Count ranks in range(start, stop, step) where rank(unrank(r)) != r, in either
    ranking (0 if both are correct)."""
    pos = np.empty(m, dtype=np.int64)
    bad = 0
    for r in range(start, stop, step):
        unrank(r, n, m, binom, pw, pos)
        if rank(pos, binom, pw) != r:
            bad += 1
        lex_unrank(r, n, m, lw, pos)
        if lex_rank(pos, lw) != r:
            bad += 1
    return bad


def rank_of(cells, n: int) -> int:
    """Python-level rank of a placement (for tools and tests)."""
    pos = np.asarray(cells, dtype=np.int64)
    m = len(pos)
    return int(rank(pos, binomials(n, m), order_weights(m)))


def lex_rank_of(cells, n: int) -> int:
    """Python-level lexicographic rank of a placement (for tools and tests)."""
    return int(lex_rank(np.asarray(cells, dtype=np.int64), lex_weights(n, len(cells))))


def unrank_of(r: int, n: int, m: int) -> list[int]:
    pos = np.empty(m, dtype=np.int64)
    unrank(r, n, m, binomials(n, m), order_weights(m), pos)
    return pos.tolist()


# --- the blank's regions ------------------------------------------------------------------

class Regions(NamedTuple):
    """The blank's regions of every map of m tiles on an s x s board."""

    index: np.ndarray      # uint8[map, cell]: region of a free cell, NO_REGION if occupied
    count: np.ndarray      # int64[map]: regions of the map
    secondary: np.ndarray  # int64[map + 1]: the entry of (map, region 1, order 0)

    @property
    def entries(self) -> int:
        return int(self.secondary[-1])


@njit(cache=True)
def _region_kernel(side, n, m, binom, index, count):
    """Each map's regions of free cells on a grid of n cells, ``side`` a row."""
    full = (np.int64(1) << n) - 1
    not_first_col = np.int64(0)
    not_last_col = np.int64(0)
    for c in range(n):
        if c % side != 0:
            not_first_col |= np.int64(1) << c
        if c % side != side - 1:
            not_last_col |= np.int64(1) << c
    for r in range(count.shape[0]):
        free = full & ~unrank_map(r, n, m, binom)
        k = 0
        while free:
            region = free & -free
            while True:  # flood the lowest free cell's region
                grown = region | ((region & not_last_col) << 1) | ((region & not_first_col) >> 1)
                grown |= (region << side) | (region >> side)
                grown &= free
                grown |= region
                if grown == region:
                    break
                region = grown
            x = region
            while x:
                index[r, lowest_bit(x)] = k
                x &= x - 1
            free &= ~region
            k += 1
        count[r] = k


def regions(shape, m: int, zero_aware: bool = True) -> Regions:
    """The region index of every map of m tiles on a board of ``shape`` ((rows, cols), or
    a square's side); without ``zero_aware`` each map counts as one region (a
    min-over-blank table: one entry per placement)."""
    rows, cols = (shape, shape) if isinstance(shape, int) else shape
    return _regions(rows, cols, m, zero_aware)


@lru_cache(maxsize=None)
def _regions(rows: int, cols: int, m: int, zero_aware: bool) -> Regions:
    n = rows * cols
    maps = comb(n, m)
    index = np.full((maps, n), NO_REGION, np.uint8)
    count = np.zeros(maps, np.int64)
    _region_kernel(cols, n, m, binomials(n, m), index, count)
    if not zero_aware:
        index[index != NO_REGION] = 0
        count[:] = 1
    secondary = np.full(maps + 1, maps * factorial(m), np.int64)
    np.cumsum((count - 1) * factorial(m), out=secondary[1:])
    secondary[1:] += maps * factorial(m)
    for a in (index, count, secondary):
        a.flags.writeable = False
    return Regions(index, count, secondary)


def reachable_entries(shape, m: int, zero_aware: bool = True) -> int:
    """Entries a table's BFS reaches: all of them, but half when the group holds every
    tile, since the blank's cell is then fixed and parity splits the placements."""
    entries = regions(shape, m, zero_aware).entries
    return entries // 2 if m == regions(shape, m, zero_aware).index.shape[1] - 1 else entries


@njit(cache=True, nogil=True, inline="always")
def entry_index(pos, map_r, order_r, region, mfact, lw, secondary):
    """Index of the entry of placement pos (map x order rank map_r * m! + order_r) with
    the blank in ``region``."""
    if region == 0:
        return lex_rank(pos, lw)
    return secondary[map_r] + (region - 1) * mfact + order_r


@njit(cache=True, nogil=True, inline="always")
def region_entry(pos, map_r, order_r, blank_cell, mfact, lw, reg_index, secondary):
    """Index of the entry of placement pos with the blank in ``blank_cell``."""
    return entry_index(pos, map_r, order_r, reg_index[map_r, blank_cell], mfact, lw, secondary)


def entry_of(cells, blank: int, shape, zero_aware: bool = True) -> int:
    """Python-level index of (placement, blank cell) in a table (for tools and tests)."""
    reg = regions(shape, len(cells), zero_aware)
    n, m = reg.index.shape[1], len(cells)
    q = rank_of(list(cells), n)
    mfact = factorial(m)
    return int(region_entry(np.asarray(cells, np.int64), q // mfact, q % mfact, blank, mfact,
                            lex_weights(n, m), reg.index, reg.secondary))
