"""The geometry of a rows x cols board: its shape, neighbours, the blank's moves,
symmetries, regions.

Cells are numbered row-major from 0. Everything here is plain Python or small numpy
arrays built once per shape; the kernels take the arrays (and the board's width, the
``s`` of their signatures: a square's side, a rectangle's columns). Every function takes a
shape as ``as_shape`` takes it (a ``Shape``, ROWSxCOLS text, a (rows, cols) pair or, for a
square, its side): the square's arrays are exactly what they were before rectangles.
"""

from __future__ import annotations

import operator
import re
from functools import lru_cache
from typing import NamedTuple

import numpy as np

from pdbtool.errors import BadInput

# The blank's moves: U means the blank goes up (the tile above it slides down). The order
# is the kernels' direction order 0-3.
BLANK_STEP = {"U": (-1, 0), "D": (1, 0), "L": (0, -1), "R": (0, 1)}
DIRECTIONS = "".join(BLANK_STEP)


class Shape(NamedTuple):
    """A board's shape: ``rows`` x ``cols`` cells. ``str(Shape(3, 4))`` is ``3x4``."""

    rows: int
    cols: int

    @property
    def cells(self) -> int:
        return self.rows * self.cols

    @property
    def square(self) -> bool:
        return self.rows == self.cols

    @property
    def transposed(self) -> Shape:
        return Shape(self.cols, self.rows)

    def __str__(self) -> str:
        return f"{self.rows}x{self.cols}"

    @classmethod
    def parse(cls, text: str) -> Shape:
        """``ROWSxCOLS`` (``3x4``; also ``3X4`` or ``3*4``); BadInput names the problem."""
        m = SHAPE_TEXT.fullmatch(str(text))
        if not m:
            raise BadInput(f"not a shape: {text!r} (give ROWSxCOLS, e.g. 3x4)")
        return cls(int(m.group(1)), int(m.group(2)))


SHAPE_TEXT = re.compile(r"\s*([0-9]+)\s*[xX*]\s*([0-9]+)\s*")
SHAPE_FORMS = ('ROWSxCOLS text such as "3x4", a (rows, cols) pair or a square\'s side, in '
               "positive whole numbers")


def as_shape(shape) -> Shape:
    """A Shape from a Shape, ROWSxCOLS text ("3x4", as --shape takes it), a (rows, cols)
    pair (a numpy array too) or a square's side, in whole numbers (numpy's too); BadInput
    naming those forms for anything else, a float, a bool or a size below 1 too (the sizes
    served are puzzle.check_shape's)."""
    if isinstance(shape, Shape):
        return shape
    if isinstance(shape, np.ndarray) and shape.ndim == 1:
        shape = shape.tolist()
    if isinstance(shape, str):
        m = SHAPE_TEXT.fullmatch(shape)
        dims = (int(m.group(1)), int(m.group(2))) if m else ()
    elif isinstance(shape, (tuple, list)):
        dims = tuple(shape)
    else:
        dims = (shape, shape)
    try:
        rows, cols = map(_whole, dims)
    except (TypeError, ValueError):  # (ValueError: not two of them)
        rows = cols = 0
    if rows < 1 or cols < 1:
        raise BadInput(f"not a shape: {shape!r:.60} (give {SHAPE_FORMS})")
    return Shape(rows, cols)


def _whole(n) -> int:
    """A whole number as an int; TypeError for a float, a bool or anything else."""
    if isinstance(n, (bool, np.bool_)):
        raise TypeError("a bool is not a size")
    return operator.index(n)


def neighbours(shape) -> list[list[int]]:
    """Cells adjacent to each cell, in U, D, L, R order of the blank's step."""
    rows, cols = as_shape(shape)
    out = []
    for c in range(rows * cols):
        r, col = divmod(c, cols)
        out.append([(r + dr) * cols + col + dc for dr, dc in BLANK_STEP.values()
                    if 0 <= r + dr < rows and 0 <= col + dc < cols])
    return out


def blank_moves(shape) -> tuple[np.ndarray, np.ndarray]:
    """The blank's moves from each cell, packed for the kernels: moves[c, i] for
    i < nmoves[c] is (destination << 2) | direction, directions 0-3 being U, D, L, R."""
    return _blank_moves(as_shape(shape))


@lru_cache(maxsize=None)
def _blank_moves(shape: Shape) -> tuple[np.ndarray, np.ndarray]:
    rows, cols = shape
    moves = np.zeros((shape.cells, 4), dtype=np.int64)
    nmoves = np.zeros(shape.cells, dtype=np.int64)
    for c in range(shape.cells):
        r, col = divmod(c, cols)
        for k, (dr, dc) in enumerate(BLANK_STEP.values()):
            if 0 <= r + dr < rows and 0 <= col + dc < cols:
                moves[c, nmoves[c]] = (((r + dr) * cols + col + dc) << 2) | k
                nmoves[c] += 1
    moves.flags.writeable = nmoves.flags.writeable = False  # shared by every solver
    return moves, nmoves


def neighbour_arrays(shape) -> tuple[np.ndarray, np.ndarray]:
    """nbr[c, k] for k < nnbr[c]: the cells next to c, in U, D, L, R order."""
    moves, nmoves = blank_moves(shape)
    return moves >> 2, nmoves.copy()


def symmetries(shape) -> tuple[tuple[int, ...], ...]:
    """The symmetries of the board as cell permutations sigma[c]: the square's 8, a
    rectangle's 4 (identity, the two mirrors, the half turn)."""
    return _symmetries(as_shape(shape))


@lru_cache(maxsize=None)
def _symmetries(shape: Shape) -> tuple[tuple[int, ...], ...]:
    rows, cols = shape
    out = []
    if not shape.square:  # mirror the rows' order (bit 0) and/or each row (bit 1)
        for k in range(4):
            out.append(tuple((rows - 1 - c // cols if k & 1 else c // cols) * cols
                             + (cols - 1 - c % cols if k & 2 else c % cols)
                             for c in range(shape.cells)))
        return tuple(sorted(set(out)))
    side = rows
    for k in range(8):
        perm = []
        for c in range(shape.cells):
            r, col = divmod(c, side)
            if k & 4:
                r, col = col, r
            for _ in range(k & 3):
                r, col = col, side - 1 - r
            perm.append(r * side + col)
        out.append(tuple(perm))
    return tuple(sorted(set(out)))


def transpose(shape) -> tuple[int, ...]:
    """Reflection about the main diagonal, as a map from the cells of a rows x cols board
    to those of its cols x rows image (a square's is its own inverse)."""
    rows, cols = as_shape(shape)
    return tuple((c % cols) * rows + c // cols for c in range(rows * cols))


def blank_region(shape, occupied, start: int = 0) -> frozenset[int]:
    """Cells reachable by the blank from ``start`` without crossing occupied cells."""
    nbrs = neighbours(shape)
    occupied = set(occupied)
    seen = {start}
    stack = [start]
    while stack:
        for nb in nbrs[stack.pop()]:
            if nb not in occupied and nb not in seen:
                seen.add(nb)
                stack.append(nb)
    return frozenset(seen)


def goal_cells(shape, goal_blank: int = 0) -> np.ndarray:
    """Each tile's goal cell in the image goal: t, but with the blank at goal_blank the
    tile labelled goal_blank goes to cell 0 (puzzle.Frame)."""
    cells = np.arange(as_shape(shape).cells, dtype=np.int64)
    if goal_blank:
        cells[0], cells[goal_blank] = goal_blank, 0
    return cells


def manhattan_table(shape, goal_blank: int = 0) -> np.ndarray:
    """md[t, c]: grid distance from cell c to tile t's goal cell (0 for the blank)."""
    shape = as_shape(shape)
    cols = shape.cols
    c = np.arange(shape.cells)
    t = goal_cells(shape, goal_blank)[:, None]
    md = np.abs(c // cols - t // cols) + np.abs(c % cols - t % cols)
    md[0, :] = 0
    return md.astype(np.int32)


def distance(shape, a: int, b: int) -> int:
    """Taxicab distance between cells a and b."""
    cols = as_shape(shape).cols
    return abs(a // cols - b // cols) + abs(a % cols - b % cols)
