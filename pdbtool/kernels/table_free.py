"""Kernels of the table-free heuristics' pieces that read whole lines or cycles of a board:
Gaschnig's swaps, a line's linear conflicts, a walking-distance state's index.
kernels/heuristic.py dispatches to them. ``H`` is the heuristic's arrays
(heuristic.HeuristicArrays); ``s`` the board's width (a square's side, a rectangle's
columns), its cells ``board.shape[0]``.
"""

import numpy as np
from numba import njit

WD_COL_TAG = np.int64(1) << 62  # a rectangle's column states' codes (wd_index), after its rows'


@njit(cache=True, nogil=True, inline="always")
def gaschnig(H, board, n):
    """Gaschnig's relaxation (seed 003): a tile may swap with the blank from anywhere. The
    fewest swaps sort the permutation cell -> goal cell of its content: a cycle through the
    blank costs one swap per tile in it, any other cycle one more than its tiles. So
    h = misplaced tiles + cycles (of two or more cells) without the blank. O(n) per call."""
    seen = np.int64(0)
    h = 0
    for c in range(n):
        if (seen >> c) & 1:
            continue
        j = c
        length = 0
        blank = False
        while not (seen >> j) & 1:
            seen |= np.int64(1) << j
            t = board[j]
            if t == 0:
                blank = True
            elif H.goal_cell[t] != j:
                h += 1
            j = H.goal_cell[t]
            length += 1
        if length > 1 and not blank:
            h += 1
    return h


@njit(cache=True, nogil=True, inline="always")
def line_conflict(H, board, s, line, is_col):
    """2 x the tiles that must leave a line so the rest keep their goal order.

    The line's content is coded in base k+1 (k: the line's cells), one digit per cell: a
    tile's goal position within this line, or k for a blank or a tile of another line. A
    table built once (heuristics.line_table) holds 2 * (tiles of the line - longest
    increasing run); a rectangle's column table follows its row table (``span``).
    """
    k = board.shape[0] // s if is_col else s
    code = 0
    span = 1
    for i in range(k):
        t = board[i * s + line] if is_col else board[line * s + i]
        digit = k
        if t != 0:
            if is_col and t % s == line:
                digit = t // s
            elif not is_col and t // s == line:
                digit = t % s
        code = code * (k + 1) + digit
        span *= k + 1
    if is_col:
        code += H.line_tab.shape[0] - span
    return H.line_tab[code]


@njit(cache=True, nogil=True)
def wd_index(board, s, H, is_col):
    """Walking-distance state of the board's rows (is_col: of its columns).

    The state is the count matrix M[line][goal line] of tiles; its code is the mixed-radix
    number of the counts, and the table keeps the codes sorted, so a binary search finds
    the state's index. Only h_init needs this; moves follow the transition table. A
    rectangle's column states (lines of another length) are a second part of the table,
    their codes tagged with WD_COL_TAG.
    """
    codes = H.wd_codes
    code = np.int64(0)
    rows = board.shape[0] // s
    lines, k = (s, rows) if is_col else (rows, s)  # lines of k cells
    # Mixed radix k+1 over the lines*lines counts, row-major (counts are 0..k).
    for line in range(lines):
        for goal_line in range(lines):
            cnt = 0
            for i in range(k):
                c = i * s + line if is_col else line * s + i
                t = board[c]
                if t != 0:
                    g = t % s if is_col else t // s
                    if g == goal_line:
                        cnt += 1
            code = code * (k + 1) + cnt
    if is_col and rows != s:
        code += WD_COL_TAG
    lo, hi = 0, codes.shape[0] - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if codes[mid] < code:
            lo = mid + 1
        else:
            hi = mid
    return lo
