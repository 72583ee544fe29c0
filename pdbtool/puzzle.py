"""Boards, goals, parsing, parity, moves, replay and random instances.

A board is a tuple of rows*cols ints, row-major, 0 the blank. Its shape (geometry.Shape) is
given, or else the board is a square whose side is inferred from the count. Two goal
conventions exist (see docs/architecture.md): ``blank-last`` (1..N, 0) is the default,
``blank-first`` (0, 1..N) is Korf's. They are isomorphic: rotating the board 180 degrees
(a symmetry of every rectangle) and relabelling tile t -> N+1-t maps one onto the other,
so the solver works in ``blank-first`` internally and maps boards and moves across at the
edges.

A goal may also be any arrangement (a board). A ``Frame`` maps it, and every board solved
towards it, into the solver's image: by a symmetry of the board (the square's 8, a
rectangle's 4) that takes the goal's blank cell to cell 0 and a relabelling, onto
blank-first (any corner goal, so every heuristic and table serves it); otherwise by the
relabelling alone, onto blank-first with the blank moved to the goal's blank cell
(``goal_blank``), which per-tile heuristics serve.
"""

from __future__ import annotations

import math
import operator
import random
import re
from functools import lru_cache

from typing import NamedTuple

import numpy as np

from pdbtool.errors import BadInput, Unsolvable
from pdbtool.geometry import BLANK_STEP, Shape, as_shape, distance, neighbours, symmetries

GOALS = ("blank-last", "blank-first")
MIN_SIDE, MAX_SIDE = 2, 20  # the constructive solver goes to 20x20
SEARCH_MAX_SIDE = 6  # the searches and their heuristics (selection and heuristics refuse more)
# Rectangles: each side 2..SEARCH_MAX_SIDE (the searches and greedy; greedy's larger sizes
# are for squares).


def parse_board(text: str | list | tuple, shape=None) -> tuple[int, ...]:
    """Parse tiles given as text ("1 2 3, 4 ...") or a sequence of such pieces (the
    command line's words); validate; return a tuple.

    Raises BadInput with a message naming the problem.
    """
    return validate(numbers(text), shape)


def numbers(text: str | list | tuple | np.ndarray) -> list[int]:
    """The whole numbers of a board's text ("1 2 3, 4 ..."), or of a sequence of such
    pieces, unchecked as a board: BadInput for an empty one, an empty field, or a word
    that is not written in ASCII digits (int() would also take '١', '1_0' or '+1')."""
    if isinstance(text, np.ndarray):
        text = text.tolist()
    if isinstance(text, (list, tuple)):
        if any(isinstance(t, (list, tuple)) for t in text):  # rows: their tiles, in one list
            raise BadInput(f"a board is a sequence of whole numbers, not {text!r:.60}")
        text = " ".join(str(t) for t in text)
    if not isinstance(text, str):
        raise BadInput(f"a board is a sequence of whole numbers or its text, not {text!r:.60}")
    tokens = re.split(r"\s*,\s*|\s+", text.strip())
    if tokens == [""]:
        raise BadInput("empty board: give the tiles row by row, 0 for the blank")
    if "" in tokens:
        raise BadInput(f"empty field in {text.strip()!r}: separate the tiles by one comma or by spaces")
    return [number(tok) for tok in tokens]


def number(word: str) -> int:
    """One tile's word as a whole number written in ASCII digits; BadInput otherwise."""
    if not re.fullmatch(r"-?[0-9]+", word):
        raise BadInput(f"not an integer: {word!r} (tiles are whole numbers, 0 is the blank)")
    return int(word)


def check_shape(shape) -> Shape:
    """A shape the product serves: a square of side MIN_SIDE..MAX_SIDE, or a rectangle of
    sides MIN_SIDE..SEARCH_MAX_SIDE (BadInput otherwise)."""
    shape = as_shape(shape)
    limit = MAX_SIDE if shape.square else SEARCH_MAX_SIDE
    if not (MIN_SIDE <= shape.rows <= limit and MIN_SIDE <= shape.cols <= limit):
        if shape.square:
            raise BadInput(f"board side {shape.rows} is not supported (sides {MIN_SIDE} to {MAX_SIDE})")
        raise BadInput(f"a {shape} board is not supported: rectangles have {MIN_SIDE} to "
                       f"{SEARCH_MAX_SIDE} rows and columns (squares up to {MAX_SIDE}x{MAX_SIDE})")
    return shape


def validate(tiles, shape=None) -> tuple[int, ...]:
    """Check a board (a sequence of ints, or text as parse_board reads it): rows*cols tiles
    for a given ``shape``, else a square count; each of 0..N exactly once."""
    if isinstance(tiles, str):
        return parse_board(tiles, shape)
    try:
        tiles = tuple(operator.index(t) for t in tiles)
    except TypeError:
        raise BadInput(f"a board is a sequence of whole numbers, not {tiles!r:.60}") from None
    n = len(tiles)
    if shape is None:
        side = math.isqrt(n)
        if side * side != n:
            raise BadInput(f"{n} tiles is not a square board (expected s*s tiles: 4, 9, 16, 25, "
                           "...); a board that is not square needs its shape, rows x columns (e.g. 3x4)")
        shape = Shape(side, side)
    shape = check_shape(shape)
    if n != shape.cells:
        raise BadInput(f"{n} tiles do not fill a {shape} board ({shape.cells} tiles, 0 the blank)")
    out_of_range = sorted({t for t in tiles if not 0 <= t < n})
    if out_of_range:
        raise BadInput(f"tile(s) {out_of_range} out of range: a {shape} board holds 0..{n - 1}")
    seen, dups = set(), set()
    for t in tiles:
        (dups if t in seen else seen).add(t)
    if dups:
        missing = sorted(set(range(n)) - seen)
        raise BadInput(f"duplicate tile(s) {sorted(dups)}; missing {missing}")
    return tiles


def shape_of(board, shape=None) -> Shape:
    """The board's shape: ``shape`` if given (a Shape or a square's side), else the square
    of its count."""
    if shape is None:
        side = math.isqrt(len(board))
        return Shape(side, side)
    return as_shape(shape)


def check_goal(goal, shape=None) -> str:
    """A goal's canonical text: one of GOALS, or a board's tiles joined by commas (a board
    of ``shape`` if given, else a square; its tiles as text, a list, a tuple or a numpy
    array, as a board's)."""
    if isinstance(goal, str) and goal in GOALS:
        return goal
    if isinstance(goal, np.ndarray):
        goal = goal.tolist()
    if not isinstance(goal, (str, list, tuple)):
        raise BadInput(f"a goal is one of {', '.join(GOALS)} or a goal board's tiles, not "
                       f"{goal!r:.60}")
    if isinstance(goal, str) and not re.search(r"\d", goal):
        raise BadInput(f"unknown goal {goal!r}: choose one of {', '.join(GOALS)}, or give the "
                       "goal board's tiles (e.g. '1 2 3 4 0 5 6 7 8')")
    try:
        tiles = parse_board(goal, shape)
    except BadInput as e:
        raise BadInput(f"goal board: {e}") from None
    return ",".join(map(str, tiles))


def goal_board(shape, goal: str = "blank-last") -> tuple[int, ...]:
    shape = as_shape(shape)
    n = shape.cells
    goal = check_goal(goal, shape)
    if goal == "blank-first":
        return tuple(range(n))
    if goal == "blank-last":
        return tuple(range(1, n)) + (0,)
    target = tuple(int(t) for t in goal.split(","))
    if len(target) != n:
        raise BadInput(f"the goal board has {len(target)} tiles, the board {n} ({shape})")
    return target


class Frame(NamedTuple):
    """How a goal maps into the solver's image: image cell of each user cell (``cells``),
    image tile of each user tile (``labels``); the image's goal has the blank at
    ``goal_blank`` (0 for the blank-first image of a corner goal)."""

    target: tuple[int, ...]  # the goal, as the user gave it
    cells: tuple[int, ...]
    labels: tuple[int, ...]
    goal_blank: int

    def image(self, board) -> tuple[int, ...]:
        out = [0] * len(board)
        for c, t in enumerate(board):
            out[self.cells[c]] = self.labels[t]
        return tuple(out)

    def board(self, image) -> tuple[int, ...]:
        """The user's board of an image (the inverse of ``image``)."""
        tile = {lt: t for t, lt in enumerate(self.labels)}
        return tuple(tile[int(image[ic])] for ic in self.cells)

    @property
    def image_goal(self) -> tuple[int, ...]:
        return self.image(self.target)

    def user_cells(self, image_cells) -> list[int]:
        back = {ic: c for c, ic in enumerate(self.cells)}
        return [back[int(x)] for x in image_cells]


def frame(shape, goal) -> Frame:
    """The frame of a goal on a board of ``shape`` (cached: every solve asks for it)."""
    shape = as_shape(shape)
    return _frame(shape, check_goal(goal, shape))


@lru_cache(maxsize=64)
def _frame(shape: Shape, goal: str) -> Frame:
    """The frame of a goal (see the module's docstring). The named goals keep the
    isomorphism of rotate_relabel (blank-last) and the identity (blank-first)."""
    target = goal_board(shape, goal)
    n = shape.cells
    gb = target.index(0)
    rotation = tuple(n - 1 - c for c in range(n))  # the half turn, a symmetry of every shape
    options = [tuple(range(n)), rotation, *symmetries(shape)]
    sigma = next((p for p in options if p[gb] == 0), None)
    if sigma is not None:
        labels = [0] * n
        for c, t in enumerate(target):
            labels[t] = sigma[c]
        return Frame(target, sigma, tuple(labels), 0)
    labels = [0] * n
    for c, t in enumerate(target):
        labels[t] = gb if c == 0 else c
    labels[0] = 0
    return Frame(target, tuple(range(n)), tuple(labels), gb)


def rotate_relabel(board) -> tuple[int, ...]:
    """The isomorphism between the goals: rotate 180 degrees, relabel t -> N+1-t (0 stays).

    It is its own inverse and maps the blank-last goal onto the blank-first goal.
    """
    n = len(board)
    return tuple(0 if t == 0 else n - t for t in reversed(board))


# --- parity -------------------------------------------------------------------------------

def permutation_parity(perm) -> int:
    """Parity (0 even, 1 odd) of a permutation given as a sequence, by its cycles."""
    seen = [False] * len(perm)
    transpositions = 0
    for start in range(len(perm)):
        length = 0
        i = start
        while not seen[i]:
            seen[i] = True
            i = perm[i]
            length += 1
        if length:
            transpositions += length - 1
    return transpositions & 1


def solvability(board, goal="blank-last", shape=None) -> tuple[bool, str]:
    """Decide solvability by the parity theorem; return (solvable, explanation).

    Every move swaps the blank with a tile: it is one transposition of the cells' contents
    and one step of the blank. So the permutation that takes the board to the goal and the
    blank's taxicab distance to its goal cell always have the same parity on a solvable
    board, and the condition is also sufficient (seeds 000, section 3), on every rectangle
    of at least two rows and two columns. ``shape``: the board's (default: a square).
    """
    shape = shape_of(board, shape)
    target = goal_board(shape, goal)
    where = {t: c for c, t in enumerate(target)}
    perm = [where[t] for t in board]  # cell -> goal cell of its content
    odd = permutation_parity(perm)
    b, gb = board.index(0), target.index(0)
    dist = distance(shape, b, gb)
    word = ("even", "odd")
    steps = f"{dist} move{'' if dist == 1 else 's'}"
    if odd == dist % 2:
        return True, (f"solvable: the board is an {word[odd]} permutation of the goal and the blank "
                      f"is {steps} from its goal cell, an {word[dist % 2]} number: the parities "
                      "agree, so moves reach the goal")
    return False, (
        f"unsolvable for the {check_goal(goal, shape)} goal: the board is an {word[odd]} permutation of the goal, "
        f"but the blank is {steps} from its goal cell, an {word[dist % 2]} number; "
        "every move is one transposition and one blank step, so these parities must agree "
        "(swapping any two tiles turns a solvable board into an unsolvable one, as in Loyd's "
        "14-15 puzzle)"
    )


def require_solvable(board, goal: str = "blank-last", shape=None) -> None:
    ok, why = solvability(board, goal, shape)
    if not ok:
        raise Unsolvable(why)


# --- moves and replay ---------------------------------------------------------------------

def step_letter(shape, src: int, dst: int) -> str:
    """The letter of the blank's move from cell src to the adjacent cell dst."""
    cols = as_shape(shape).cols
    delta = dst - src
    return {-cols: "U", cols: "D", -1: "L", 1: "R"}[delta]


def blank_path_to_moves(board, blank_cells, shape=None):
    """Given the cells the blank visits after the start, return (tile numbers, UDLR string)."""
    shape = shape_of(board, shape)
    cells = list(board)
    b = cells.index(0)
    tiles, letters = [], []
    for nxt in blank_cells:
        tiles.append(cells[nxt])
        letters.append(step_letter(shape, b, nxt))
        cells[b], cells[nxt] = cells[nxt], 0
        b = nxt
    return tiles, "".join(letters)


def apply_tile_moves(board, tile_moves, shape=None) -> tuple[int, ...]:
    """Slide each named tile into the blank; raise BadInput if a tile is not adjacent."""
    shape = shape_of(board, shape)
    cells = list(board)
    b = cells.index(0)
    for i, t in enumerate(tile_moves):
        c = cells.index(t)
        if distance(shape, c, b) != 1:
            raise BadInput(f"move {i + 1}: tile {t} is not next to the blank")
        cells[b], cells[c] = t, 0
        b = c
    return tuple(cells)


def apply_blank_moves(board, letters: str, shape=None) -> tuple[int, ...]:
    """Move the blank by a string of U/D/L/R; raise BadInput on an illegal step."""
    rows, cols = shape_of(board, shape)
    cells = list(board)
    b = cells.index(0)
    for i, m in enumerate(letters):
        if m not in BLANK_STEP:
            raise BadInput(f"move {i + 1}: {m!r} is not one of U, D, L, R")
        dr, dc = BLANK_STEP[m]
        r, c = b // cols + dr, b % cols + dc
        if not (0 <= r < rows and 0 <= c < cols):
            raise BadInput(f"move {i + 1}: the blank cannot go {m} from cell {b}")
        nb = r * cols + c
        cells[b], cells[nb] = cells[nb], 0
        b = nb
    return tuple(cells)


# --- random instances ---------------------------------------------------------------------

def random_board(shape, goal: str = "blank-last", rng: random.Random | None = None):
    """A uniformly random solvable board of ``shape`` (or a square's side): a random
    permutation, fixed up by one swap."""
    rng = rng or random.Random()
    shape = check_shape(shape)
    cells = list(range(shape.cells))
    rng.shuffle(cells)
    if not solvability(tuple(cells), goal, shape)[0]:
        i, j = [k for k, t in enumerate(cells) if t != 0][:2]
        cells[i], cells[j] = cells[j], cells[i]
    return tuple(cells)


def random_walk(shape, steps: int, goal: str = "blank-last", rng: random.Random | None = None):
    """The board reached by ``steps`` random blank moves from the goal (no immediate undo)."""
    rng = rng or random.Random()
    nbrs = neighbours(shape)
    cells = list(goal_board(shape, goal))
    b, prev = cells.index(0), -1
    for _ in range(steps):
        nb = rng.choice([c for c in nbrs[b] if c != prev])
        cells[b], cells[nb] = cells[nb], 0
        prev, b = b, nb
    return tuple(cells)

