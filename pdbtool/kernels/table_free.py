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
    table built once (heuristics.table_free.line_table) holds 2 * (tiles of the line - longest
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

    The state is the count matrix M[line][goal line] of tiles; its code is wd_code's (the
    blank's line, then the counts but the last line's and goal line's), and the table keeps
    the codes sorted, so a binary search finds the state's index. Only
    h_init needs this; moves follow the transition table. A rectangle's column states
    (lines of another length) are a second part of the table, their codes tagged with
    WD_COL_TAG.
    """
    codes = H.wd_codes
    rows = board.shape[0] // s
    lines, k = (s, rows) if is_col else (rows, s)  # lines of k cells
    blank = 0
    for c in range(board.shape[0]):
        if board[c] == 0:
            blank = c % s if is_col else c // s
    code = np.int64(blank)  # wd_code's, counted here from the board
    for line in range(lines - 1):
        for goal_line in range(lines - 1):
            cnt = 0
            for i in range(k):
                t = board[i * s + line] if is_col else board[line * s + i]
                if t != 0 and (t % s if is_col else t // s) == goal_line:
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


@njit(cache=True, nogil=True)
def wd_code(counts, lines, k):
    """A walking-distance state's code: the blank's line (the one with k-1 tiles), then the
    counts M[line][goal line] of every line but the last and every goal line but the last,
    in base k+1 (the rest follow from the lines' and goal lines' totals). ``counts`` is
    M row-major, lines*lines entries."""
    blank = 0
    for line in range(lines):
        total = 0
        for g in range(lines):
            total += counts[line * lines + g]
        if total == k - 1:
            blank = line
    code = np.int64(blank)
    for line in range(lines - 1):
        for g in range(lines - 1):
            code = code * (k + 1) + counts[line * lines + g]
    return code


WD_HASH = np.int64(-7046029254386353131)  # 0x9E3779B97F4A7C15 (Fibonacci hashing) as int64


@njit(cache=True, nogil=True, inline="always")
def _wd_slot(slots, codes, c):
    """The slot of code ``c`` in the open-addressing hash ``slots`` (state numbers, -1
    free): where it is, or the free slot where it goes."""
    mask = slots.shape[0] - 1
    x = c * WD_HASH
    h = (x ^ (x >> 29)) & mask
    while slots[h] >= 0 and codes[slots[h]] != c:
        h = (h + 1) & mask
    return h


@njit(cache=True, nogil=True)
def _wd_grow(mats, codes, dist, trans, n):
    """The arrays of wd_search doubled, and a hash of their n states twice their size."""
    cap = 2 * n
    mats2 = np.zeros((cap, mats.shape[1]), np.int8)
    mats2[:n] = mats[:n]
    codes2 = np.empty(cap, np.int64)
    codes2[:n] = codes[:n]
    dist2 = np.empty(cap, np.int32)
    dist2[:n] = dist[:n]
    trans2 = np.full((cap, 2, trans.shape[2]), -1, np.int32)
    trans2[:n] = trans[:n]
    slots = np.full(2 * cap, -1, np.int64)
    for i in range(n):
        slots[_wd_slot(slots, codes2, codes2[i])] = i
    return mats2, codes2, dist2, trans2, slots


@njit(cache=True, nogil=True)
def wd_search(lines, k):
    """Breadth-first search over the walking-distance states of ``lines`` lines of k cells
    from the blank-first goal (line 0 holds its k-1 tiles and the blank; the blank's line
    is the one short of a tile). Returns the states in the order reached: their codes
    (wd_code), distances, and moves trans[i, d, g]: the state after a tile whose goal line
    is g moves into the blank's line from the line below (d=0) or above (d=1), -1 if none.
    The states are found by their codes in an open-addressing hash, grown at half full."""
    cells = lines * lines
    goal = np.zeros((1, cells), np.int8)
    for line in range(lines):
        goal[0, line * lines + line] = k - 1 if line == 0 else k
    codes = np.full(1, wd_code(goal[0], lines, k), np.int64)
    mats, codes, dist, trans, slots = _wd_grow(goal, codes, np.zeros(1, np.int32),
                                               np.full((1, 2, lines), -1, np.int32), 1)
    n = 1
    child = np.empty(cells, np.int8)
    head = 0
    while head < n:
        blank = 0
        for line in range(lines):
            total = 0
            for g in range(lines):
                total += mats[head, line * lines + g]
            if total == k - 1:
                blank = line
        for d in range(2):
            src = blank + 1 if d == 0 else blank - 1
            if src < 0 or src >= lines:
                continue
            for g in range(lines):
                if mats[head, src * lines + g] == 0:
                    continue
                child[:] = mats[head]
                child[src * lines + g] -= 1
                child[blank * lines + g] += 1
                c = wd_code(child, lines, k)
                h = _wd_slot(slots, codes, c)
                if slots[h] < 0:
                    if n == mats.shape[0]:
                        mats, codes, dist, trans, slots = _wd_grow(mats, codes, dist, trans, n)
                        h = _wd_slot(slots, codes, c)
                    slots[h] = n
                    mats[n] = child
                    codes[n] = c
                    dist[n] = dist[head] + 1
                    n += 1
                trans[head, d, g] = slots[h]
        head += 1
    return codes[:n].copy(), dist[:n].copy(), trans[:n].copy()
