"""Numba kernels of the heuristics, shared by the search and by the verifiers.

numba cannot cache a kernel that takes another jitted function as an argument, so the
search stays generic another way: a heuristic is a kind code plus a fixed tuple of arrays
``H`` (built in heuristics.py / pdb.py), and two functions here dispatch on the kind:

* ``h_init``   computes h of a board from scratch and fills the heuristic's state row;
* ``h_update`` derives the next state row from the previous one after one tile moved.

The state row (int32) holds h in column 0 and what the kind needs to update it cheaply.
Boards are always in the blank-first convention: tile t's goal cell is t.
"""

import numpy as np
from numba import njit

from .intrinsics import popcount

PER_TILE = 0        # sum of a per-tile table: Hamming or Manhattan  [h]
LINEAR_CONFLICT = 1  # Manhattan + 2 * per-line conflicts            [h, md, line values...]
WALKING = 2         # walking distance, rows + columns               [h, row state, col state]
PDB = 3             # additive pattern databases, max with reflection [h, sum0, sum1, v_l...]

# Positions in the H tuple.
(KIND, TILE_TAB, WD_TRANS, WD_DIST, WD_CODES,
 LK_TILES, LK_M, LK_CMAP, LK_W, LK_OFF, LK_SET, TILE_LK, TABLE, LINE_TAB) = range(14)


def state_width(kind: int, side: int, lookups: int) -> int:
    """Columns of the heuristic state row for a kind."""
    return {PER_TILE: 1, LINEAR_CONFLICT: 2 + 2 * side, WALKING: 3, PDB: 3 + lookups}[kind]


@njit(cache=True, nogil=True, inline="always")
def line_conflict(H, board, s, line, is_col):
    """2 x the tiles that must leave a line so the rest keep their goal order.

    The line's content is coded in base s+1, one digit per cell: a tile's goal position
    within this line, or s for a blank or a tile of another line. A table built once
    (heuristics.line_table) holds 2 * (tiles of the line - longest increasing run).
    """
    code = 0
    for i in range(s):
        t = board[i * s + line] if is_col else board[line * s + i]
        digit = s
        if t != 0:
            if is_col and t % s == line:
                digit = t // s
            elif not is_col and t // s == line:
                digit = t % s
        code = code * (s + 1) + digit
    return H[LINE_TAB][code]


@njit(cache=True, nogil=True, inline="always")
def lookup(H, pos, l):
    """Table value of lookup l: its tiles' cells, mapped by its cell map, ranked in place
    (ranking.rank, fused here to skip a copy of the cells: this runs twice per node)."""
    tiles = H[LK_TILES]
    cmap = H[LK_CMAP]
    w = H[LK_W]
    used = 0
    r = 0
    for i in range(H[LK_M][l]):
        p = cmap[l, pos[tiles[l, i]]]
        r += (p - popcount(used & ((1 << p) - 1))) * w[l, i]
        used |= 1 << p
    return np.int32(H[TABLE][H[LK_OFF][l] + r])


@njit(cache=True, nogil=True)
def h_init(H, s, board, pos, row):
    """h of the board from scratch; fills the state row and returns h."""
    kind = H[KIND]
    n = s * s
    if kind == PER_TILE:
        h = 0
        for c in range(n):
            if board[c] != 0:
                h += H[TILE_TAB][board[c], c]
        row[0] = h
    elif kind == LINEAR_CONFLICT:
        md = 0
        for c in range(n):
            if board[c] != 0:
                md += H[TILE_TAB][board[c], c]
        h = md
        for line in range(s):
            row[2 + line] = line_conflict(H, board, s, line, False)
            row[2 + s + line] = line_conflict(H, board, s, line, True)
            h += row[2 + line] + row[2 + s + line]
        row[0] = h
        row[1] = md
    elif kind == WALKING:
        # Rows and columns are two states of the same table (the goal is transpose-symmetric).
        row[1] = wd_index(board, s, H, False)
        row[2] = wd_index(board, s, H, True)
        row[0] = H[WD_DIST][row[1]] + H[WD_DIST][row[2]]
    else:
        sums = np.zeros(2, dtype=np.int32)
        for l in range(H[LK_M].shape[0]):
            v = lookup(H, pos, l)
            row[3 + l] = v
            sums[H[LK_SET][l]] += v
        row[1] = sums[0]
        row[2] = sums[1]
        row[0] = max(sums[0], sums[1])
    return row[0]


@njit(cache=True, nogil=True)
def wd_index(board, s, H, is_col):
    """Walking-distance state of the board's rows (is_col: of its columns).

    The state is the count matrix M[line][goal line] of tiles; its code is the mixed-radix
    number of the counts, and the table keeps the codes sorted, so a binary search finds
    the state's index. Only h_init needs this; moves follow the transition table.
    """
    codes = H[WD_CODES]
    code = 0
    # Mixed radix s+1 over the s*s counts, row-major (counts are 0..s).
    for line in range(s):
        for goal_line in range(s):
            cnt = 0
            for i in range(s):
                c = i * s + line if is_col else line * s + i
                t = board[c]
                if t != 0:
                    g = t % s if is_col else t // s
                    if g == goal_line:
                        cnt += 1
            code = code * (s + 1) + cnt
    lo, hi = 0, codes.shape[0] - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if codes[mid] < code:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True, nogil=True, inline="always")
def h_update(kind, H, s, board, pos, prev, row, tile, src, dst):
    """After ``tile`` moved from cell src to cell dst (board and pos already updated),
    derive the state row from the previous one; return the new h. ``kind`` is a
    compile-time literal, so each kind gets a kernel without the others' branches."""
    if kind == PER_TILE:
        h = prev[0] + H[TILE_TAB][tile, dst] - H[TILE_TAB][tile, src]
        row[0] = h
        return h
    if kind == LINEAR_CONFLICT:
        for i in range(row.shape[0]):
            row[i] = prev[i]
        md = prev[1] + H[TILE_TAB][tile, dst] - H[TILE_TAB][tile, src]
        row[1] = md
        # A vertical move changes the contents of two rows, a horizontal one of two columns.
        if src // s != dst // s:
            row[2 + src // s] = line_conflict(H, board, s, src // s, False)
            row[2 + dst // s] = line_conflict(H, board, s, dst // s, False)
        else:
            row[2 + s + src % s] = line_conflict(H, board, s, src % s, True)
            row[2 + s + dst % s] = line_conflict(H, board, s, dst % s, True)
        h = md
        for i in range(2, 2 + 2 * s):
            h += row[i]
        row[0] = h
        return h
    if kind == WALKING:
        trans = H[WD_TRANS]
        row[1] = prev[1]
        row[2] = prev[2]
        if src // s != dst // s:
            # Tile moves up (dst above src: the blank went down) or down, changing rows.
            d = 0 if dst < src else 1
            row[1] = trans[prev[1], d, tile // s]
        else:
            d = 0 if dst < src else 1
            row[2] = trans[prev[2], d, tile % s]
        h = H[WD_DIST][row[1]] + H[WD_DIST][row[2]]
        row[0] = h
        return h
    # PDB: only the lookups that hold the moved tile change (direct and reflected).
    for i in range(row.shape[0]):
        row[i] = prev[i]
    for j in range(2):
        l = H[TILE_LK][tile, j]
        if l >= 0:
            v = lookup(H, pos, l)
            row[1 + H[LK_SET][l]] += v - prev[3 + l]
            row[3 + l] = v
    h = max(row[1], row[2])
    row[0] = h
    return h
