"""What IDA* with a transposition table and weighted IDA* (WIDA*) add to the IDA* kernel,
which runs them (search_kernel.dfs_loop, given ``Extras`` instead of ``NoExtras``):

* f = gw * g + hw * h. IDA* is gw = hw = 1; WIDA* with weight W = hw / gw >= 1 (seed 003)
  answers with at most W times the optimal length: every node of an optimal path has
  f <= gw * W * C*, so no bound passes gw * W * C* before a goal is found, and a goal
  found under bound B has gw * g <= B.
* A depth limit (``max_depth``): weighted answers can be long.
* A transposition table (seed 004 section 7): slot -> (state key, g, iteration), simple
  overwrite, ``tt_key.shape[0]`` slots (a power of two; 0 disables it). A node is cut
  only when the same state was expanded earlier in the same iteration with g' <= g.
  Why this stays optimal with the automaton: the depth-first order is the lexicographic
  order of move strings (U < D < L < R). A state S on the lexicographically smallest
  optimal solution P = p + q, visited earlier in the iteration by a path p' with
  |p'| <= |p|, gives a solution p' + q no longer than P and lexicographically smaller
  (or shorter): impossible. So P's nodes are never cut, the first of them over the bound
  still sets the next bound, and the bound never passes C*. A lost entry only cuts less.

Like the heuristic's kind (heuristic_kernels.kind_of), whether the extras are on is the
class of the argument, a compile-time constant in the kernel: plain IDA* pays nothing for
them.
"""

from typing import NamedTuple

import numpy as np
from numba import njit

from .intrinsics import class_constant
from .state_key_kernel import slot_of

TT_ENTRY_BYTES = 24  # two key words and (iteration << 16 | g)
MAX_DEPTH_W = 1023  # stack depth: weighted answers can be long


class IdaExtras(NamedTuple):
    gw: int               # f = gw * g + hw * h
    hw: int
    max_depth: int        # no node deeper (the stacks' size)
    tt_key: np.ndarray    # int64[slots, 2]: the state keys (state_key_kernel) of the table
    tt_tag: np.ndarray    # int64[slots]: (iteration << 16) | g of each slot
    bits: int             # the key's layout (state_key_kernel.layout)
    per: int


class NoExtras(IdaExtras):
    """Plain IDA*: the kernel ignores every field."""
    __slots__ = ()
    ACTIVE = False


class Extras(IdaExtras):
    __slots__ = ()
    ACTIVE = True


def no_extras() -> NoExtras:
    return NoExtras(1, 1, 0, np.zeros((0, 2), np.int64), np.zeros(0, np.int64), 1, 1)


@njit(cache=True, nogil=True, inline="always")
def active(extras):
    """Whether the kernel applies the extras: a compile-time constant."""
    return class_constant(extras, "ACTIVE")


@njit(cache=True, nogil=True, inline="always")
def tt_seen(tt_key, tt_tag, k0, k1, g, iteration, mask):
    """True if the state was expanded in this iteration with g' <= g; else record it."""
    slot = slot_of(k0, k1, mask)
    tag = tt_tag[slot]
    if tt_key[slot, 0] == k0 and tt_key[slot, 1] == k1 and (tag >> 16) == iteration \
            and (tag & 0xFFFF) <= g:
        return True
    tt_key[slot, 0] = k0
    tt_key[slot, 1] = k1
    tt_tag[slot] = (np.int64(iteration) << 16) | g
    return False
