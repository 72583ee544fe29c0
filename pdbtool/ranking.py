"""Perfect ranking of partial permutations: m tiles placed on n cells.

A placement is the cells of the group's tiles, in the group's tile order. Its rank is the
mixed-radix number whose digit i (radix n - i) counts the cells below pos[i] that earlier
tiles left free; digit 0 is the most significant (seeds 000, section 7.4). There are
n!/(n-m)! ranks, each table entry one byte. Rank is O(m) with a bit mask and a popcount.
"""

import numpy as np
from numba import njit

from .intrinsics import popcount

RANK_SCHEME = "mixed-radix-lex"
RANK_VERSION = 1
UNSET = 255  # a table entry no placement of that rank has reached (unreachable parity)


def table_size(n: int, m: int) -> int:
    """Number of placements of m tiles on n cells: n!/(n-m)!."""
    size = 1
    for i in range(m):
        size *= n - i
    return size


def reachable_placements(n: int, m: int) -> int:
    """Placements the BFS reaches: all of them, but half when the group holds every tile,
    since the blank's cell is then fixed and parity splits the placements."""
    size = table_size(n, m)
    return size // 2 if m == n - 1 else size


@njit(cache=True)
def weights(n, m):
    """Place values of the digits: w[i] = (n-i-1)(n-i-2)...(n-m+1)."""
    w = np.ones(m, dtype=np.int64)
    for i in range(m - 2, -1, -1):
        w[i] = w[i + 1] * (n - i - 1)
    return w


@njit(cache=True, nogil=True, inline="always")
def rank(pos, w):
    """Rank of the placement pos (cells, distinct) with place values w."""
    # All int64: numba turns uint64 mixed with int64 into float64.
    used = 0
    r = 0
    for i in range(pos.shape[0]):
        p = pos[i]
        r += (p - popcount(used & ((1 << p) - 1))) * w[i]
        used |= 1 << p
    return r


@njit(cache=True, nogil=True)
def unrank(r, n, m, w, pos):
    """Write into pos the placement of rank r; return the occupied-cell bit mask."""
    used = 0
    for i in range(m):
        d = r // w[i]
        r -= d * w[i]
        # pos[i] is the d-th free cell (0-based).
        c = 0
        while True:
            if not (used >> c) & 1:
                if d == 0:
                    break
                d -= 1
            c += 1
        pos[i] = c
        used |= 1 << c
    return used


@njit(cache=True)
def round_trip_errors(n, m, start, stop, step):
    """Count ranks in range(start, stop, step) where rank(unrank(r)) != r (0 if correct)."""
    w = weights(n, m)
    pos = np.empty(m, dtype=np.int64)
    bad = 0
    for r in range(start, stop, step):
        unrank(r, n, m, w, pos)
        if rank(pos, w) != r:
            bad += 1
    return bad


def rank_of(cells, n: int) -> int:
    """Python-level rank of a placement (for tools and tests)."""
    pos = np.asarray(cells, dtype=np.int64)
    return int(rank(pos, weights(n, len(pos))))


def unrank_of(r: int, n: int, m: int) -> list[int]:
    pos = np.empty(m, dtype=np.int64)
    unrank(r, n, m, weights(n, m), pos)
    return pos.tolist()
