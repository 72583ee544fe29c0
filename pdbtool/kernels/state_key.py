"""A board as a two-word key, for the searches that remember states (A*, IDA* with a
transposition table): plain numba helpers over int64.

Cell c < n - 1 holds its tile in ``bits`` bits at word c // per, shift (c % per) * bits;
the last cell is left out (its tile is the one missing). Two words hold boards of up to 25
cells (5x5, 4x6: 24 cells of 5 bits); ``layout`` refuses larger ones.
"""

from __future__ import annotations

import numpy as np
from numba import njit

KEY_MAX_CELLS = 25
HASH_MULT = np.int64(-7046029254386353131)  # 0x9E3779B97F4A7C15, Fibonacci hashing


def layout(cells: int) -> tuple[int, int]:
    """(bits per cell, cells per word) of the keys of boards of ``cells`` cells."""
    bits = max(1, (cells - 1).bit_length())
    per = 64 // bits
    if cells > KEY_MAX_CELLS or cells - 1 > 2 * per:
        raise ValueError(f"state keys serve boards of up to {KEY_MAX_CELLS} cells")
    return bits, per


@njit(cache=True, nogil=True, inline="always")
def key_of(board, n, bits, per):
    k0 = np.int64(0)
    k1 = np.int64(0)
    for c in range(n - 1):
        v = np.int64(board[c]) << ((c % per) * bits)
        if c < per:
            k0 |= v
        else:
            k1 |= v
    return k0, k1


@njit(cache=True, nogil=True, inline="always")
def key_moved(k0, k1, t, src, dst, n, bits, per):
    """The key after tile t slid from cell src into the blank at dst."""
    t = np.int64(t)
    if src < n - 1:
        if src < per:
            k0 -= t << ((src % per) * bits)
        else:
            k1 -= t << ((src % per) * bits)
    if dst < n - 1:
        if dst < per:
            k0 += t << ((dst % per) * bits)
        else:
            k1 += t << ((dst % per) * bits)
    return k0, k1


@njit(cache=True, nogil=True, inline="always")
def slot_of(k0, k1, mask):
    x = (k0 ^ (k1 * np.int64(31))) * HASH_MULT
    return (x >> 24) & mask


@njit(cache=True, nogil=True)
def board_of(k0, k1, n, bits, per, board, pos):
    """Decode a key into board (cells -> tiles) and pos (tiles -> cells)."""
    cmask = (np.int64(1) << bits) - 1
    total = n * (n - 1) // 2
    for c in range(n - 1):
        w = k0 if c < per else k1
        t = (w >> ((c % per) * bits)) & cmask
        board[c] = t
        pos[t] = c
        total -= t
    board[n - 1] = total
    pos[total] = n - 1
