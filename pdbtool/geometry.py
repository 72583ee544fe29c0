"""The geometry of an s x s board: neighbours, the blank's moves, symmetries, regions.

Cells are numbered row-major from 0. Everything here is plain Python or small numpy
arrays built once per board side; the kernels take the arrays.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

# The blank's moves: U means the blank goes up (the tile above it slides down). The order
# is the kernels' direction order 0-3.
BLANK_STEP = {"U": (-1, 0), "D": (1, 0), "L": (0, -1), "R": (0, 1)}
DIRECTIONS = "".join(BLANK_STEP)


def neighbours(side: int) -> list[list[int]]:
    """Cells adjacent to each cell, in U, D, L, R order of the blank's step."""
    out = []
    for c in range(side * side):
        r, col = divmod(c, side)
        out.append([(r + dr) * side + col + dc for dr, dc in BLANK_STEP.values()
                    if 0 <= r + dr < side and 0 <= col + dc < side])
    return out


@lru_cache(maxsize=None)
def blank_moves(side: int) -> tuple[np.ndarray, np.ndarray]:
    """The blank's moves from each cell, packed for the kernels: moves[c, i] for
    i < nmoves[c] is (destination << 2) | direction, directions 0-3 being U, D, L, R."""
    moves = np.zeros((side * side, 4), dtype=np.int64)
    nmoves = np.zeros(side * side, dtype=np.int64)
    for c in range(side * side):
        r, col = divmod(c, side)
        for k, (dr, dc) in enumerate(BLANK_STEP.values()):
            if 0 <= r + dr < side and 0 <= col + dc < side:
                moves[c, nmoves[c]] = (((r + dr) * side + col + dc) << 2) | k
                nmoves[c] += 1
    moves.flags.writeable = nmoves.flags.writeable = False  # shared by every solver
    return moves, nmoves


def neighbour_arrays(side: int) -> tuple[np.ndarray, np.ndarray]:
    """nbr[c, k] for k < nnbr[c]: the cells next to c, in U, D, L, R order."""
    moves, nmoves = blank_moves(side)
    return moves >> 2, nmoves.copy()


@lru_cache(maxsize=None)
def symmetries(side: int) -> tuple[tuple[int, ...], ...]:
    """The 8 symmetries of the square as cell permutations sigma[c]."""
    out = []
    for k in range(8):
        perm = []
        for c in range(side * side):
            r, col = divmod(c, side)
            if k & 4:
                r, col = col, r
            for _ in range(k & 3):
                r, col = col, side - 1 - r
            perm.append(r * side + col)
        out.append(tuple(perm))
    return tuple(sorted(set(out)))


def transpose(side: int) -> tuple[int, ...]:
    """Reflection about the main diagonal, as a cell permutation (its own inverse)."""
    return tuple((c % side) * side + c // side for c in range(side * side))


def blank_region(side: int, occupied, start: int = 0) -> frozenset[int]:
    """Cells reachable by the blank from ``start`` without crossing occupied cells."""
    nbrs = neighbours(side)
    occupied = set(occupied)
    seen = {start}
    stack = [start]
    while stack:
        for nb in nbrs[stack.pop()]:
            if nb not in occupied and nb not in seen:
                seen.add(nb)
                stack.append(nb)
    return frozenset(seen)


def goal_cells(side: int, goal_blank: int = 0) -> np.ndarray:
    """Each tile's goal cell in the image goal: t, but with the blank at goal_blank the
    tile labelled goal_blank goes to cell 0 (puzzle.Frame)."""
    cells = np.arange(side * side, dtype=np.int64)
    if goal_blank:
        cells[0], cells[goal_blank] = goal_blank, 0
    return cells


def manhattan_table(side: int, goal_blank: int = 0) -> np.ndarray:
    """md[t, c]: grid distance from cell c to tile t's goal cell (0 for the blank)."""
    n = side * side
    c = np.arange(n)
    t = goal_cells(side, goal_blank)[:, None]
    md = np.abs(c // side - t // side) + np.abs(c % side - t % side)
    md[0, :] = 0
    return md.astype(np.int32)
