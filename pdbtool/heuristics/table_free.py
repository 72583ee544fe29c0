"""The heuristics that need no tables: Hamming, Manhattan, Gaschnig, linear conflict,
walking distance.

Each is a ``Heuristic``: a name and the ``HeuristicArrays`` that kernels/heuristic.py
evaluates. Pattern databases build the same object in heuristics/pattern_db.py, so the search
never needs to know which heuristic it runs.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from pdbtool import puzzle
from pdbtool.errors import BadInput
from pdbtool.geometry import Shape, as_shape, goal_cells, manhattan_table
from pdbtool.kernels import heuristic as hk
from pdbtool.kernels.table_free import WD_COL_TAG

TABLE_FREE = ("hamming", "gaschnig", "manhattan", "linear-conflict", "walking-distance")
PER_TILE_GOALS = ("hamming", "gaschnig", "manhattan")  # serve a goal with the blank anywhere
# The walking-distance table has 24,964 states for 4x4, millions for 5x5: up to 16 cells
# (4x4, and rectangles such as 3x5 or 2x6; not 4x5).
WALKING_MAX_CELLS = 16
LARGE_MAX_SIDE = 20  # Hamming and Manhattan tables (the constructive solver's check)


@dataclass(frozen=True)
class Heuristic:
    name: str
    shape: Shape  # the boards it serves
    H: hk.HeuristicArrays
    width: int  # columns of the kernel's state row
    artifact: str | None = None  # version of the table artifact it reads, if any
    consistent: bool = False  # h changes by at most 1 per move (checked along every answer)
    note: str = ""  # e.g. why a fallback was taken
    goal_blank: int = 0  # the image goal's blank cell it measures towards (puzzle.Frame)
    # The open table file it reads (trust.Pinned), guarded around each search; None: none.
    source: object = field(default=None, compare=False, repr=False)
    artifact_path: str | None = None  # the file of those tables (shipped to a cluster)
    reflected: bool = False  # also looks the reflected board up (tables only)

    @property
    def side(self) -> int:
        """The kernels' ``s``: the board's width (a square's side, a rectangle's columns)."""
        return self.shape.cols

    def state(self, board_bf) -> np.ndarray:
        """The kernel's state row of a blank-first board: h first (slow path, for tools)."""
        board, pos = board_arrays(board_bf)
        row = np.zeros(self.width, dtype=np.int32)
        hk.h_init(self.H, self.side, board, pos, row)
        return row

    def value(self, board_bf) -> int:
        return int(self.state(board_bf)[0])


def board_arrays(board_bf):
    """A blank-first board as the kernels take it: cells -> tiles, and tiles -> cells."""
    board = np.asarray(board_bf, dtype=np.int64)
    pos = np.empty(len(board), dtype=np.int64)
    pos[board] = np.arange(len(board))
    return board, pos


def line_table(shape) -> np.ndarray:
    """Linear-conflict value of every line content, indexed as in kernels.line_conflict:
    2 * (tiles of the line - longest strictly increasing run of their goal positions).
    A rectangle's rows and columns differ in length: the columns' table follows the rows'."""
    rows, cols = as_shape(shape)
    if rows == cols:
        return _line_table(cols)
    return np.concatenate([_line_table(cols), _line_table(rows)])


def _line_table(s: int) -> np.ndarray:
    """line_table for lines of s cells."""
    table = np.zeros((s + 1) ** s, dtype=np.int32)
    for code in range(table.size):
        digits, c = [], code
        for _ in range(s):
            digits.append(c % (s + 1))
            c //= s + 1
        keys = [d for d in reversed(digits) if d < s]  # cell order, tiles of this line
        longest = [1] * len(keys)
        for i in range(len(keys)):
            for j in range(i):
                if keys[j] < keys[i]:
                    longest[i] = max(longest[i], longest[j] + 1)
        table[code] = 2 * (len(keys) - max(longest, default=0))
    return table


def hamming_table(shape, goal_blank: int = 0) -> np.ndarray:
    n = as_shape(shape).cells
    tab = (np.arange(n)[None, :] != goal_cells(shape, goal_blank)[:, None]).astype(np.int32)
    tab[0, :] = 0
    return tab


def walking_tables(shape):
    """The walking-distance table of a board's rows and columns: (sorted codes,
    transitions, distances). A square's rows and columns share one table (walking_part); a
    rectangle's column part follows its row part, its codes tagged with WD_COL_TAG and its
    state numbers shifted (kernels.table_free.wd_index)."""
    rows, cols = as_shape(shape)
    if rows == cols:
        return walking_part(rows, cols)
    rc, rt, rd = walking_part(rows, cols)
    cc, ct, cd = walking_part(cols, rows)
    width = max(rows, cols)
    trans = np.full((len(rc) + len(cc), 2, width), -1, dtype=np.int32)
    trans[:len(rc), :, :rows] = rt
    trans[len(rc):, :, :cols] = np.where(ct >= 0, ct + len(rc), -1)
    return (np.concatenate([rc, cc + WD_COL_TAG]), trans, np.concatenate([rd, cd]))


@lru_cache(maxsize=None)
def walking_part(lines: int, k: int):
    """BFS over walking-distance states of ``lines`` lines of k cells; returns (sorted
    codes, transitions, distances).

    A state is the count matrix M[line][goal line] of tiles (blank excluded). In the
    blank-first goal line 0 holds k-1 tiles, the blank's line is the one short of k.
    trans[i, d, g]: the state after a tile whose goal line is g moves into the blank's line
    from the line below (d=0, the tile moves up) or above (d=1); -1 if impossible.
    """
    s = lines
    goal = tuple(tuple((k - (r == 0)) if r == g else 0 for g in range(s)) for r in range(s))
    dist = {goal: 0}
    queue = deque([goal])
    edges = {}
    while queue:
        m = queue.popleft()
        br = next(r for r in range(s) if sum(m[r]) == k - 1)
        out = {}
        for d, src in ((0, br + 1), (1, br - 1)):
            if not 0 <= src < s:
                continue
            for g in range(s):
                if m[src][g] == 0:
                    continue
                rows = [list(r) for r in m]
                rows[src][g] -= 1
                rows[br][g] += 1
                nxt = tuple(tuple(r) for r in rows)
                out[d, g] = nxt
                if nxt not in dist:
                    dist[nxt] = dist[m] + 1
                    queue.append(nxt)
        edges[m] = out

    def code(m):
        v = 0
        for r in m:
            for x in r:
                v = v * (k + 1) + x
        return v

    states = sorted(dist, key=code)
    index = {m: i for i, m in enumerate(states)}
    codes = np.array([code(m) for m in states], dtype=np.int64)
    trans = np.full((len(states), 2, s), -1, dtype=np.int32)
    for m, out in edges.items():
        for (d, g), nxt in out.items():
            trans[index[m], d, g] = index[nxt]
    dists = np.array([dist[m] for m in states], dtype=np.int32)
    return codes, trans, dists


def table_free(name: str, shape, goal_blank: int = 0) -> Heuristic:
    """One of TABLE_FREE for boards of ``shape`` (a Shape, or a square's side), towards the
    image goal whose blank is at ``goal_blank`` (0: blank-first; others only for
    PER_TILE_GOALS)."""
    if name not in TABLE_FREE:
        raise BadInput(f"unknown heuristic {name!r}: choose one of {', '.join(TABLE_FREE)}")
    shape = as_shape(shape)
    side = max(shape)
    limit = LARGE_MAX_SIDE if name in ("hamming", "manhattan") else puzzle.SEARCH_MAX_SIDE
    if side > limit:
        raise BadInput(f"{name} serves boards up to {limit}x{limit}; the searches serve up to "
                       f"{puzzle.SEARCH_MAX_SIDE}x{puzzle.SEARCH_MAX_SIDE}, the greedy solver "
                       f"up to {puzzle.MAX_SIDE}x{puzzle.MAX_SIDE} (--algorithm greedy)")
    if goal_blank and name not in PER_TILE_GOALS:
        raise BadInput(f"{name} needs a goal with the blank in a corner (its lines follow the "
                       f"blank-first goal); for this goal use {', '.join(PER_TILE_GOALS)}")
    if name in ("hamming", "manhattan"):
        table = hamming_table(shape, goal_blank) if name == "hamming" else manhattan_table(shape, goal_blank)
        kind, arrays = hk.PER_TILE, dict(tile_tab=table)
    elif name == "gaschnig":
        kind, arrays = hk.GASCHNIG, dict(goal_cell=goal_cells(shape, goal_blank))
    elif name == "linear-conflict":
        kind, arrays = hk.LINEAR_CONFLICT, dict(tile_tab=manhattan_table(shape),
                                                line_tab=line_table(shape))
    elif name == "walking-distance":
        if shape.cells > WALKING_MAX_CELLS:
            raise BadInput(f"walking distance is available up to 4x4 boards and rectangles of "
                           f"up to {WALKING_MAX_CELLS} cells, not {shape}")
        codes, trans, dists = walking_tables(shape)
        kind, arrays = hk.WALKING, dict(wd_codes=codes, wd_trans=trans, wd_dist=dists)
    return Heuristic(name, shape, hk.heuristic_arrays(kind, **arrays), hk.state_width(kind, shape, 0),
                     consistent=name != "linear-conflict",
                     goal_blank=goal_blank)
