"""What IDA* with a transposition table and weighted IDA* (WIDA*) add to the IDA* kernel,
which runs them (kernels.ida.dfs_loop, given ``Extras`` instead of ``NoExtras``):

* f = gw * g + hw * h. IDA* is gw = hw = 1; WIDA* with weight W = hw / gw >= 1 (seed 003)
  answers with at most W times the optimal length: every node of an optimal path has
  f <= gw * W * C*, so no bound passes gw * W * C* before a goal is found, and a goal
  found under bound B has gw * g <= B.
* A depth limit (``max_depth``): weighted answers can be long.
* A transposition table (seed 004 section 7): slot -> (state key, g, iteration), simple
  overwrite, ``tt.shape[0]`` slots (a power of two; 0 disables it). A node is cut
  only when the same state was expanded earlier in the same iteration with g' <= g.
  A slot is one row of 32 bytes, half a cache line (``transposition_table`` aligns
  them), and the kernel starts loading a child's slot before it evaluates the child's
  heuristic: the probe then finds the line in cache. (On the 24-puzzle the table leaves
  1.16-1.26x fewer nodes to expand; the early load made it 1.25-1.5x faster, about as
  fast as plain IDA*: BENCHMARKS, "Levers for the hour".)
  Why this stays optimal with the automaton: the depth-first order is the lexicographic
  order of move strings (U < D < L < R). A state S on the lexicographically smallest
  optimal solution P = p + q, visited earlier in the iteration by a path p' with
  |p'| <= |p|, gives a solution p' + q no longer than P and lexicographically smaller
  (or shorter): impossible. So P's nodes are never cut, the first of them over the bound
  still sets the next bound, and the bound never passes C*. A lost entry only cuts less.

Like the heuristic's kind (kernels.heuristic.kind_of), whether the extras are on is the
class of the argument, a compile-time constant in the kernel: plain IDA* pays nothing for
them.
"""

from typing import NamedTuple

import numpy as np
from numba import njit

from pdbtool.kernels.intrinsics import class_constant

TT_ENTRY_BYTES = 32  # two key words, (iteration << 16 | g) and a spare word: half a line
TT_KEY0, TT_KEY1, TT_TAG = 0, 1, 2  # columns of a slot
CACHE_LINE = 64
MAX_DEPTH_W = 1023  # stack depth: weighted answers can be long


class IdaExtras(NamedTuple):
    gw: int               # f = gw * g + hw * h
    hw: int
    max_depth: int        # no node deeper (the stacks' size)
    tt: np.ndarray        # int64[slots, 4]: a state key (kernels.state_key) and its tag,
                          # (iteration << 16) | g, a slot (transposition_table)
    bits: int             # the key's layout (kernels.state_key.layout)
    per: int


class NoExtras(IdaExtras):
    """Plain IDA*: the kernel ignores every field."""
    __slots__ = ()
    ACTIVE = False


class Extras(IdaExtras):
    __slots__ = ()
    ACTIVE = True


def no_extras() -> NoExtras:
    """The extras of plain IDA*: one shared instance (its empty table is never written)."""
    return _NO_EXTRAS


def transposition_table(slots: int) -> np.ndarray:
    """An empty table of ``slots`` slots (int64[slots, 4]), aligned so that no slot
    straddles two cache lines."""
    words = TT_ENTRY_BYTES // 8
    raw = np.zeros(slots * words + CACHE_LINE // 8, np.int64)
    skip = (-raw.ctypes.data % CACHE_LINE) // 8
    return raw[skip:skip + slots * words].reshape(slots, words)


_NO_EXTRAS = NoExtras(1, 1, 0, transposition_table(0), 1, 1)


@njit(cache=True, nogil=True, inline="always")
def active(extras):
    """Whether the kernel applies the extras: a compile-time constant."""
    return class_constant(extras, "ACTIVE")


@njit(cache=True, nogil=True, inline="always")
def tt_seen(tt, slot, k0, k1, g, iteration):
    """True if the state (key k0, k1, at ``slot``) was expanded in this iteration with
    g' <= g; else record it."""
    tag = tt[slot, TT_TAG]
    if tt[slot, TT_KEY0] == k0 and tt[slot, TT_KEY1] == k1 and (tag >> 16) == iteration \
            and (tag & 0xFFFF) <= g:
        return True
    tt[slot, TT_KEY0] = k0
    tt[slot, TT_KEY1] = k1
    tt[slot, TT_TAG] = (np.int64(iteration) << 16) | g
    return False
