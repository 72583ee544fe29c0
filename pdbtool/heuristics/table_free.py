"""The heuristics that need no tables: Hamming, Manhattan, Gaschnig, linear conflict,
walking distance.

Each is a ``Heuristic``: a name and the ``HeuristicArrays`` that kernels/heuristic.py
evaluates. Pattern databases build the same object in heuristics/pattern_db.py, so the search
never needs to know which heuristic it runs.
"""

from __future__ import annotations

import zipfile
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path

import numpy as np

from pdbtool import puzzle
from pdbtool.errors import BadInput, PdbError
from pdbtool.geometry import Shape, as_shape, goal_cells, manhattan_table
from pdbtool.kernels import CACHE_DIR
from pdbtool.kernels import heuristic as hk
from pdbtool.kernels import table_free as tf
from pdbtool.kernels.table_free import WD_COL_TAG
from pdbtool.tables.files import atomic_output

TABLE_FREE = ("hamming", "gaschnig", "manhattan", "linear-conflict", "walking-distance")
PER_TILE_GOALS = ("hamming", "gaschnig", "manhattan")  # serve a goal with the blank anywhere
# Walking distance's tables hold a shape's row and column states (walking_states): 4x4
# 24,964; 3x5 352,560 + 525; 4x5 5,977,015 + 107,712 (316 MB, built in about 15 s on first
# use, then kept); 3x6 50 M, 5x5 66 M, 4x6 3.0 G: beyond WALKING_MAX_STATES, refused.
WALKING_MAX_STATES = 8_000_000  # both parts; 52 bytes a state (code, distance, moves)
WALKING_CACHED = 100_000  # parts larger than this are kept on disk (walking_part)
WALKING_MAX_CELLS = 16  # the fallback without tables (selection) takes it up to here
LARGE_MAX_SIDE = 20  # Hamming and Manhattan tables (the constructive solver's check)


@dataclass(frozen=True, eq=False)  # equal to itself only (its arrays), hashable
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
    """Linear-conflict value of every line content, indexed as in kernels.table_free.line_conflict:
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


@cache
def walking_states(lines: int, k: int) -> int:
    """How many walking-distance states ``lines`` lines of k cells have, known before their
    table is built: the count matrices whose lines hold k tiles (the blank's line k-1) and
    whose goal lines k (line 0, the blank's goal line, k-1). Every such matrix is reached
    (tests: equal to the search's count on every shape it serves). Counted line by line
    over the goal lines' room left, which any order of them counts alike (so sorted); the
    blank's line may be any of the lines alike."""
    def contents(total, room):  # the ways to spread ``total`` tiles over ``room``
        if len(room) == 1:
            if total <= room[0]:
                yield (total,)
            return
        for x in range(min(total, room[0]) + 1):
            for rest in contents(total - x, room[1:]):
                yield (x, *rest)

    @cache
    def fill(line: int, room: tuple[int, ...]) -> int:
        if line == lines:
            return 1
        total = k - 1 if line == 0 else k
        return sum(fill(line + 1, tuple(sorted(r - x for r, x in zip(room, c))))
                   for c in contents(total, room))

    return lines * fill(0, tuple(sorted([k - 1] + [k] * (lines - 1))))


def walking_size(shape) -> int:
    """The states of a shape's walking-distance table: its row part and its column part
    (one part for a square)."""
    rows, cols = as_shape(shape)
    return walking_states(rows, cols) + (walking_states(cols, rows) if rows != cols else 0)


@lru_cache(maxsize=None)
def walking_part(lines: int, k: int):
    """The walking-distance states of ``lines`` lines of k cells: (sorted codes,
    transitions, distances), as kernels.table_free.wd_search finds them, sorted by code
    (wd_index finds a board's state by binary search).

    A state is the count matrix M[line][goal line] of tiles (blank excluded). In the
    blank-first goal line 0 holds k-1 tiles, the blank's line is the one short of k.
    trans[i, d, g]: the state after a tile whose goal line is g moves into the blank's line
    from the line below (d=0, the tile moves up) or above (d=1); -1 if impossible.
    Parts of more than WALKING_CACHED states are kept in the kernels' cache directory
    (kernels.CACHE_DIR, named for the kernels' sources, so a change of the code's format
    starts afresh) and loaded from there by later processes.
    """
    path = walking_cache(lines, k)
    try:
        with np.load(path) as f:
            return f["codes"], f["trans"], f["dist"]
    except (OSError, KeyError, ValueError, EOFError, zipfile.BadZipFile):  # none yet, or broken
        pass
    codes, trans, dist = build_walking_part(lines, k)
    if len(codes) > WALKING_CACHED:
        keep(path, codes=codes, trans=trans, dist=dist)
    return codes, trans, dist


def walking_cache(lines: int, k: int) -> Path:
    return Path(CACHE_DIR) / f"walking-{lines}x{k}.npz"


def build_walking_part(lines: int, k: int):
    """walking_part's arrays, built (no cache)."""
    codes, dist, trans = tf.wd_search(lines, k)
    order = np.argsort(codes)
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    trans = np.where(trans >= 0, rank[trans], -1).astype(np.int32)[order]
    return codes[order], trans, dist[order]


def keep(path: Path, **arrays) -> None:
    """Write ``arrays`` to ``path`` whole or not at all (tables.files.atomic_output); a
    cache that cannot be written is left out."""
    try:
        with atomic_output(path) as tmp, open(tmp, "wb") as f:
            np.savez(f, **arrays)
    except (OSError, PdbError):
        pass


def table_free(name: str, shape, goal_blank: int = 0) -> Heuristic:
    """One of TABLE_FREE for boards of ``shape`` (a Shape, or a square's side), towards the
    image goal whose blank is at ``goal_blank`` (0: blank-first; others only for
    PER_TILE_GOALS)."""
    if name not in TABLE_FREE:
        raise BadInput(f"unknown heuristic {name!r}: choose one of {', '.join(TABLE_FREE)}")
    shape = as_shape(shape)
    if min(shape) < puzzle.MIN_SIDE:
        raise BadInput(f"a {shape} board is not supported: its sides are {puzzle.MIN_SIDE} or more")
    side = max(shape)
    limit = LARGE_MAX_SIDE if name in ("hamming", "manhattan") else puzzle.SEARCH_MAX_SIDE
    if side > limit:
        raise BadInput(f"{name} serves boards up to {limit}x{limit}; the searches serve up to "
                       f"{puzzle.SEARCH_MAX_SIDE}x{puzzle.SEARCH_MAX_SIDE}, the greedy solver "
                       f"up to {puzzle.MAX_SIDE}x{puzzle.MAX_SIDE} (--algorithm greedy)")
    if not isinstance(goal_blank, (int, np.integer)) or isinstance(goal_blank, bool) \
            or not 0 <= goal_blank < shape.cells:
        raise BadInput(f"goal_blank is the goal's blank cell: 0 to {shape.cells - 1} on a "
                       f"{shape} board, not {goal_blank!r:.40}")
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
        if (states := walking_size(shape)) > WALKING_MAX_STATES:
            raise BadInput(f"walking distance on {shape} boards would need {states:,} states "
                           f"({states * 52 / 2**30:,.1f} GiB); it serves shapes of up to "
                           f"{WALKING_MAX_STATES:,} (4x5: 6.1 M, 316 MB): use linear-conflict "
                           "or a pattern database")
        codes, trans, dists = walking_tables(shape)
        kind, arrays = hk.WALKING, dict(wd_codes=codes, wd_trans=trans, wd_dist=dists)
    return Heuristic(name, shape, hk.heuristic_arrays(kind, **arrays), hk.state_width(kind, shape, 0),
                     consistent=name != "linear-conflict",
                     goal_blank=goal_blank)
