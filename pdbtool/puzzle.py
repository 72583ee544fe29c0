"""Boards, goals, parsing, parity, moves, replay and random instances.

A board is a tuple of s*s ints, row-major, 0 the blank; the side s is inferred from the
count. Two goal conventions exist (see docs/architecture.md): ``blank-last`` (1..N, 0) is
the default, ``blank-first`` (0, 1..N) is Korf's. They are isomorphic: rotating the board
180 degrees and relabelling tile t -> N+1-t maps one onto the other, so the solver works
in ``blank-first`` internally and maps boards and moves across at the edges.

A goal may also be any arrangement (a board). A ``Frame`` maps it, and every board solved
towards it, into the solver's image: by a symmetry of the square that takes the goal's
blank cell to cell 0 and a relabelling, onto blank-first (any corner goal, so every
heuristic and table serves it); otherwise by the relabelling alone, onto blank-first with
the blank moved to the goal's blank cell (``goal_blank``), which per-tile heuristics serve.
"""

from __future__ import annotations

import math
import operator
import random
import re
from functools import lru_cache

from typing import NamedTuple

from pdbtool.errors import BadInput, Unsolvable
from pdbtool.geometry import BLANK_STEP, neighbours, symmetries

GOALS = ("blank-last", "blank-first")
MIN_SIDE, MAX_SIDE = 2, 20  # the constructive solver goes to 20x20
SEARCH_MAX_SIDE = 6  # the searches and their heuristics (selection and heuristics refuse more)

ROTATE_MOVE = str.maketrans("UDLR", "DURL")


def parse_board(text: str | list | tuple) -> tuple[int, ...]:
    """Parse tiles given as text ("1 2 3, 4 ...") or a sequence of such pieces (the
    command line's words); validate; return a tuple.

    Raises BadInput with a message naming the problem.
    """
    if isinstance(text, (list, tuple)):
        text = " ".join(str(t) for t in text)
    tokens = re.split(r"\s*,\s*|\s+", text.strip())
    if tokens == [""]:
        raise BadInput("empty board: give the tiles row by row, 0 for the blank")
    if "" in tokens:
        raise BadInput(f"empty field in {text.strip()!r}: separate the tiles by one comma or by spaces")
    tiles = []
    for tok in tokens:
        if not re.fullmatch(r"-?[0-9]+", tok):  # int() would also take '١' or '1_0'
            raise BadInput(f"not an integer: {tok!r} (tiles are whole numbers, 0 is the blank)")
        tiles.append(int(tok))
    return validate(tiles)


def validate(tiles) -> tuple[int, ...]:
    """Check a board (a sequence of ints, or text as parse_board reads it): a square count,
    each of 0..N exactly once."""
    if isinstance(tiles, str):
        return parse_board(tiles)
    try:
        tiles = tuple(operator.index(t) for t in tiles)
    except TypeError:
        raise BadInput(f"a board is a sequence of whole numbers, not {tiles!r:.60}") from None
    n = len(tiles)
    side = math.isqrt(n)
    if side * side != n:
        raise BadInput(f"{n} tiles is not a square board (expected s*s tiles: 4, 9, 16, 25, ...)")
    if not MIN_SIDE <= side <= MAX_SIDE:
        raise BadInput(f"board side {side} is not supported (sides {MIN_SIDE} to {MAX_SIDE})")
    out_of_range = sorted({t for t in tiles if not 0 <= t < n})
    if out_of_range:
        raise BadInput(f"tile(s) {out_of_range} out of range: a {side}x{side} board holds 0..{n - 1}")
    seen, dups = set(), set()
    for t in tiles:
        (dups if t in seen else seen).add(t)
    if dups:
        missing = sorted(set(range(n)) - seen)
        raise BadInput(f"duplicate tile(s) {sorted(dups)}; missing {missing}")
    return tiles


def side_of(board) -> int:
    return math.isqrt(len(board))


def check_goal(goal) -> str:
    """A goal's canonical text: one of GOALS, or a board's tiles joined by commas."""
    if isinstance(goal, str) and goal in GOALS:
        return goal
    if isinstance(goal, str) and not re.search(r"\d", goal):
        raise BadInput(f"unknown goal {goal!r}: choose one of {', '.join(GOALS)}, or give the "
                       "goal board's tiles (e.g. --goal '1 2 3 4 0 5 6 7 8')")
    try:
        tiles = parse_board(goal)
    except BadInput as e:
        raise BadInput(f"goal board: {e}") from None
    return ",".join(map(str, tiles))


def goal_board(side: int, goal: str = "blank-last") -> tuple[int, ...]:
    n = side * side
    goal = check_goal(goal)
    if goal == "blank-first":
        return tuple(range(n))
    if goal == "blank-last":
        return tuple(range(1, n)) + (0,)
    target = tuple(int(t) for t in goal.split(","))
    if len(target) != n:
        raise BadInput(f"the goal board has {len(target)} tiles, the board {n} ({side}x{side})")
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

    @property
    def image_goal(self) -> tuple[int, ...]:
        return self.image(self.target)

    def user_cells(self, image_cells) -> list[int]:
        back = {ic: c for c, ic in enumerate(self.cells)}
        return [back[int(x)] for x in image_cells]


def frame(side: int, goal) -> Frame:
    """The frame of a goal (cached: every solve asks for it)."""
    return _frame(side, check_goal(goal))


@lru_cache(maxsize=64)
def _frame(side: int, goal: str) -> Frame:
    """The frame of a goal (see the module's docstring). The named goals keep the
    isomorphism of rotate_relabel (blank-last) and the identity (blank-first)."""
    target = goal_board(side, goal)
    n = side * side
    gb = target.index(0)
    rotation = tuple(n - 1 - c for c in range(n))
    options = [tuple(range(n)), rotation, *symmetries(side)]
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


def to_blank_first(board, goal: str) -> tuple[int, ...]:
    """Map a board for ``goal`` onto the equivalent board for the blank-first goal."""
    if check_goal(goal) == "blank-first":
        return tuple(board)
    return rotate_relabel(board)


def rotate_relabel(board) -> tuple[int, ...]:
    """The isomorphism between the goals: rotate 180 degrees, relabel t -> N+1-t (0 stays).

    It is its own inverse and maps the blank-last goal onto the blank-first goal.
    """
    n = len(board)
    return tuple(0 if t == 0 else n - t for t in reversed(board))


def moves_from_blank_first(tile_moves, blank_moves, side, goal):
    """Map a solution found for the blank-first image back to the user's goal convention."""
    if goal == "blank-first":
        return list(tile_moves), blank_moves
    n = side * side
    return [n - t for t in tile_moves], blank_moves.translate(ROTATE_MOVE)


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


def solvability(board, goal="blank-last") -> tuple[bool, str]:
    """Decide solvability by the parity theorem; return (solvable, explanation).

    Every move swaps the blank with a tile: it is one transposition of the cells' contents
    and one step of the blank. So the permutation that takes the board to the goal and the
    blank's taxicab distance to its goal cell always have the same parity on a solvable
    board, and the condition is also sufficient (seeds 000, section 3).
    """
    side = side_of(board)
    target = goal_board(side, goal)
    where = {t: c for c, t in enumerate(target)}
    perm = [where[t] for t in board]  # cell -> goal cell of its content
    odd = permutation_parity(perm)
    b, gb = board.index(0), target.index(0)
    dist = abs(b // side - gb // side) + abs(b % side - gb % side)
    word = ("even", "odd")
    if odd == dist % 2:
        return True, (f"solvable: the board is an {word[odd]} permutation of the goal and the blank "
                      f"is {dist} move(s) from its goal cell, an {word[dist % 2]} number: the parities "
                      "agree, so moves reach the goal")
    return False, (
        f"unsolvable for the {check_goal(goal)} goal: the board is an {word[odd]} permutation of the goal, "
        f"but the blank is {dist} move(s) from its goal cell, an {word[dist % 2]} number; "
        "every move is one transposition and one blank step, so these parities must agree "
        "(e.g. Loyd's 14-15 board: one swap away, blank at home)"
    )


def require_solvable(board, goal: str = "blank-last") -> None:
    ok, why = solvability(board, goal)
    if not ok:
        raise Unsolvable(why)


# --- moves and replay ---------------------------------------------------------------------

def step_letter(side: int, src: int, dst: int) -> str:
    """The letter of the blank's move from cell src to the adjacent cell dst."""
    delta = dst - src
    return {-side: "U", side: "D", -1: "L", 1: "R"}[delta]


def blank_path_to_moves(board, blank_cells):
    """Given the cells the blank visits after the start, return (tile numbers, UDLR string)."""
    side = side_of(board)
    cells = list(board)
    b = cells.index(0)
    tiles, letters = [], []
    for nxt in blank_cells:
        tiles.append(cells[nxt])
        letters.append(step_letter(side, b, nxt))
        cells[b], cells[nxt] = cells[nxt], 0
        b = nxt
    return tiles, "".join(letters)


def apply_tile_moves(board, tile_moves) -> tuple[int, ...]:
    """Slide each named tile into the blank; raise BadInput if a tile is not adjacent."""
    side = side_of(board)
    cells = list(board)
    b = cells.index(0)
    for i, t in enumerate(tile_moves):
        c = cells.index(t)
        if abs(c // side - b // side) + abs(c % side - b % side) != 1:
            raise BadInput(f"move {i + 1}: tile {t} is not next to the blank")
        cells[b], cells[c] = t, 0
        b = c
    return tuple(cells)


def apply_blank_moves(board, letters: str) -> tuple[int, ...]:
    """Move the blank by a string of U/D/L/R; raise BadInput on an illegal step."""
    side = side_of(board)
    cells = list(board)
    b = cells.index(0)
    for i, m in enumerate(letters):
        if m not in BLANK_STEP:
            raise BadInput(f"move {i + 1}: {m!r} is not one of U, D, L, R")
        dr, dc = BLANK_STEP[m]
        r, c = b // side + dr, b % side + dc
        if not (0 <= r < side and 0 <= c < side):
            raise BadInput(f"move {i + 1}: the blank cannot go {m} from cell {b}")
        nb = r * side + c
        cells[b], cells[nb] = cells[nb], 0
        b = nb
    return tuple(cells)


# --- random instances ---------------------------------------------------------------------

def random_board(side: int, goal: str = "blank-last", rng: random.Random | None = None):
    """A uniformly random solvable board: a random permutation, fixed up by one swap."""
    rng = rng or random.Random()
    cells = list(range(side * side))
    rng.shuffle(cells)
    if not solvability(tuple(cells), goal)[0]:
        i, j = [k for k, t in enumerate(cells) if t != 0][:2]
        cells[i], cells[j] = cells[j], cells[i]
    return tuple(cells)


def random_walk(side: int, steps: int, goal: str = "blank-last", rng: random.Random | None = None):
    """The board reached by ``steps`` random blank moves from the goal (no immediate undo)."""
    rng = rng or random.Random()
    nbrs = neighbours(side)
    cells = list(goal_board(side, goal))
    b, prev = cells.index(0), -1
    for _ in range(steps):
        nb = rng.choice([c for c in nbrs[b] if c != prev])
        cells[b], cells[nb] = cells[nb], 0
        prev, b = b, nb
    return tuple(cells)

