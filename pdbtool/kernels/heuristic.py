"""Numba kernels of the heuristics, shared by the search and by the verifiers.

numba cannot cache a kernel that takes another jitted function as an argument, so the
search stays generic another way: a heuristic is a fixed tuple of arrays ``H``, a
HeuristicArrays whose class names its kind (built in heuristics/table_free.py / heuristics/pattern_db.py),
and two functions here take the kind's own function by that class (INIT, UPDATE):

* ``h_init``   computes h of a board from scratch and fills the heuristic's state row;
* ``h_update`` derives the next state row from the previous one after one tile moved.

The state row (int32) holds h in column 0 and what the kind needs to update it cheaply.
Boards are always in the blank-first convention: tile t's goal cell is t. The kernels'
``s`` is the board's width (a square's side, a rectangle's columns); its cells are
``board.shape[0]``, its rows ``board.shape[0] // s``.
"""

from typing import NamedTuple

import numpy as np
from numba import njit
from numba.extending import overload

from pdbtool.kernels.intrinsics import class_constant, ix, prefetch
from pdbtool.kernels.lookups import (entry_index, moved_entry, moved_rank, parity_index,
                                     placement_rank, read_entry)
from pdbtool.kernels.table_free import gaschnig, line_conflict, wd_index

PER_TILE = 0        # sum of a per-tile table: Hamming or Manhattan  [h]
LINEAR_CONFLICT = 1  # Manhattan + 2 * per-line conflicts            [h, md, line values...]
WALKING = 2         # walking distance, rows + columns               [h, row state, col state]
PDB = 3             # additive PDBs, max over sums  [h, md, best sum, sums..., per lookup...]
GASCHNIG = 4        # swaps with a blank that jumps: misplaced + cycles without the blank  [h]

# Named columns of the state row.
ROW_H = 0          # every kind: h itself
LC_MD = 1          # linear conflict: Manhattan part; line values follow
LC_LINES = 2
WD_ROWS, WD_COLS = 1, 2  # walking distance: row and column state
PDB_MD = 1         # PDB: the board's Manhattan distance
PDB_BEST = 2       # PDB: which sum was the largest (evaluated first at the children)
PDB_SUMS = 3       # PDB: sum s of the lookups' 4-bit entries at PDB_SUMS + s; then the
                   # entry of each lookup l at PDB_SUMS + sums + l, its placement's
                   # lexicographic rank at PDB_SUMS + sums + lookups + l, the bit mask of
                   # its tiles' cells (in the table's frame) at PDB_SUMS + sums + 2 * lookups + l
                   # and the rank of its tiles' order on those cells at ... + 3 * lookups + l


class HeuristicArrays(NamedTuple):
    """Everything a kernel needs to evaluate a heuristic; slots a kind does not use hold
    small placeholders of the same type. A heuristic's arrays are an instance of its kind's
    subclass below (``heuristic_arrays``)."""

    tile_tab: np.ndarray     # int32[tile, cell]: per-tile value (Hamming, Manhattan)
    wd_trans: np.ndarray     # int32[state, up/down, goal line]: walking-distance moves
    wd_dist: np.ndarray      # int32[state]: walking distance of a state
    wd_codes: np.ndarray     # int64[state]: sorted codes of the walking-distance states
    lk_tiles: np.ndarray     # int64[lookup, i]: the tiles a lookup reads, in table order
    lk_m: np.ndarray         # int64[lookup]: how many tiles
    lk_cmap: np.ndarray      # int64[lookup, cell]: cell map into the table's frame
    lk_pw: np.ndarray        # int64[lookup, i]: place values of the order digits
    lk_lw: np.ndarray        # int64[lookup, i]: place values of the lexicographic digits
    lk_off: np.ndarray       # int64[lookup]: byte offset of the lookup's table in ``table``
    lk_rbase: np.ndarray     # int64[lookup]: where its maps' region index starts in reg_index
    lk_obase: np.ndarray     # int64[lookup]: where its maps' offsets start in reg_secondary
    tile_lk: np.ndarray      # int64[tile, sum]: the lookup of that sum holding a tile (sums
                             # that share a group share its lookup)
    tile_lk_slot: np.ndarray  # int64[tile, sum]: which of the tile's distinct lookups that is
    table: np.ndarray        # uint8[]: all tables, 4-bit entries, concatenated
    colex_lo: np.ndarray     # int32[low cells]: map ranks, low half (ranking.colex_tables)
    colex_hi: np.ndarray     # int32[high cells, tiles below]: map ranks, high half
    reg_index: np.ndarray    # uint8[]: region of each (map, cell), per tile count
    reg_secondary: np.ndarray  # int64[]: entry of (map, region 1, order 0), per tile count
    zero_aware: np.int64     # 1: an entry per region of the blank; 0: per placement
    reg_outside: np.ndarray  # uint32[]: per map, its free cells outside region 0 and whether
                             # it has two regions (ranking.outside_cells), per tile count
    lk_mbase: np.ndarray     # int64[lookup]: where its maps start in reg_outside
    line_tab: np.ndarray     # int32[line code]: linear-conflict value of a line
    goal_cell: np.ndarray    # int64[tile]: the tile's goal cell (Gaschnig)
    lk_digit: np.ndarray     # int64[lookup, tile]: the tile's digit in the lookup's rank, -1
                             # if the lookup does not read it
    lk_cell: np.ndarray      # int64[lookup, cell]: board cell of a cell of the table's frame
                             # (lk_cmap inverted)
    parity: np.ndarray       # uint8[]: zero-aware tables, the lowest bit of each 4-bit entry
                             # of ``table``, eight a byte (parity_bits); what a move reads


# The kind is the class of the arrays. numba types a NamedTuple by its class, so every
# kernel is compiled (and cached) once per kind, and ``kind_of(H)`` is a constant in it:
# each kind's kernels are free of the other kinds' branches, and Python calls the kernels
# directly, whatever the kind.

def _arrays_class(kind: int, name: str, ahead: bool = False) -> type:
    """HeuristicArrays' subclass for one kind, a module attribute of its own name (numba's
    cache refers to the class by name). ``ahead``: the search looks ahead at its children's
    first table reads (kernels.ida.look_ahead; a class of its own, so that the kernels of
    the other tables are compiled without that code)."""
    cls = type(name, (HeuristicArrays,), {"__slots__": (), "KIND": kind, "AHEAD": int(ahead),
                                          "__module__": __name__})
    globals()[name] = cls
    return cls


ARRAYS_OF_KIND = {kind: _arrays_class(kind, name) for kind, name in (
    (PER_TILE, "PerTileArrays"), (LINEAR_CONFLICT, "LinearConflictArrays"),
    (WALKING, "WalkingArrays"), (PDB, "PdbArrays"), (GASCHNIG, "GaschnigArrays"))}
PDB_AHEAD = _arrays_class(PDB, "PdbAheadArrays", ahead=True)  # pattern_db.scattered's tables
ARRAYS_CLASSES = {cls.__name__: cls for cls in (*ARRAYS_OF_KIND.values(), PDB_AHEAD)}


@njit(cache=True, nogil=True, inline="always")
def kind_of(H):
    """The heuristic's kind code, a compile-time constant in a kernel."""
    return class_constant(H, "KIND")


@njit(cache=True, nogil=True, inline="always")
def looks_ahead(H):
    """Whether the search looks ahead at the children's first reads (PDB_AHEAD), a
    compile-time constant in a kernel."""
    return class_constant(H, "AHEAD")


def heuristic_arrays(kind: int, ahead: bool = False, **arrays) -> HeuristicArrays:
    """The arrays of a heuristic of ``kind`` (tables: ``ahead`` for PDB_AHEAD): those
    given, placeholders in the other slots."""
    cls = PDB_AHEAD if ahead and kind == PDB else ARRAYS_OF_KIND[kind]
    return cls(**{**placeholder_arrays(), **arrays})


def read_only(a: np.ndarray) -> np.ndarray:
    """A read-only view of ``a`` (for the ``table`` slot). A memory-mapped artifact's table is read-only, and
    numba types read-only and writable arrays apart: giving every heuristic a read-only
    table keeps one compiled kernel per kind, whether it reads tables or not (each kernel
    is compiled once, not twice: minutes of a cold start)."""
    view = a.view()
    view.flags.writeable = False
    return view


def placeholder_arrays() -> dict:
    """Typed empty slots of HeuristicArrays, to be overridden by what a kind uses."""
    return dict(
        tile_tab=np.zeros((1, 1), np.int32),
        wd_trans=np.zeros((1, 2, 1), np.int32),
        wd_dist=np.zeros(1, np.int32),
        wd_codes=np.zeros(1, np.int64),
        lk_tiles=np.zeros((1, 1), np.int64),
        lk_m=np.zeros(0, np.int64),
        lk_cmap=np.zeros((1, 1), np.int64),
        lk_pw=np.zeros((1, 1), np.int64),
        lk_lw=np.zeros((1, 1), np.int64),
        lk_off=np.zeros(1, np.int64),
        lk_rbase=np.zeros(1, np.int64),
        lk_obase=np.zeros(1, np.int64),
        tile_lk=np.full((1, 2), -1, np.int64),
        tile_lk_slot=np.zeros((1, 2), np.int64),
        table=read_only(np.zeros(1, np.uint8)),
        colex_lo=np.zeros(1, np.int32),
        colex_hi=np.zeros((1, 1), np.int32),
        reg_index=np.zeros(1, np.uint8),
        reg_secondary=np.zeros(1, np.int64),
        zero_aware=np.int64(0),
        reg_outside=np.zeros(1, np.uint32),
        lk_mbase=np.zeros(1, np.int64),
        line_tab=np.zeros(1, np.int32),
        goal_cell=np.zeros(1, np.int64),
        lk_digit=np.zeros((1, 1), np.int64),
        lk_cell=np.zeros((1, 1), np.int64),
        parity=read_only(np.zeros(1, np.uint8)),
    )


def state_width(kind: int, shape, lookups: int = 0, sums: int = 0) -> int:
    """Columns of the heuristic state row for a kind on a board of ``shape`` (rows, cols)."""
    return {PER_TILE: 1, LINEAR_CONFLICT: LC_LINES + shape[0] + shape[1], WALKING: 3,
            PDB: PDB_SUMS + sums + 4 * lookups, GASCHNIG: 1}[kind]


@njit(cache=True, nogil=True, inline="always")
def columns(H):
    """Where the row's per-lookup columns start: entries, ranks, masks, order ranks."""
    first = PDB_SUMS + H.tile_lk.shape[1]
    lookups = H.lk_m.shape[0]
    return first, first + lookups, first + 2 * lookups, first + 3 * lookups


@njit(cache=True, nogil=True, inline="always")
def moved_entry_index(H, board, pos, prev, row, l, tile, src, dst):
    """The entry index of lookup l after its ``tile`` moved from src to dst; keeps the
    placement's new ranks and mask in the row (moved_rank)."""
    _, rank_col, mask_col, order_col = columns(H)
    lex, occupied, order = moved_rank(H, board, prev[ix(rank_col + l)], prev[ix(mask_col + l)],
                                      prev[ix(order_col + l)], l, tile, src, dst)
    row[ix(rank_col + l)] = lex
    row[ix(mask_col + l)] = occupied
    row[ix(order_col + l)] = order
    return entry_index(H, l, src, lex, occupied, order)


@njit(cache=True, nogil=True, _nrt=False)
def h_init(H, s, board, pos, row):
    """h of the board from scratch; fills the state row and returns h."""
    return init_of_kind(H, s, board, pos, row)


def init_of_kind(H, s, board, pos, row):
    """h_init of H's kind (INIT), chosen by the arrays' class when numba types the call: a
    kernel compiled for one kind does not type (and compile) the others' functions, as
    branches on kind_of would (walking distance's wd_index, 2 s of a first solve with a
    table)."""
    raise TypeError("init_of_kind is called from kernels only")


@njit(cache=True, nogil=True)
def tile_sum(H, board):
    """The sum of H.tile_tab over the board's tiles (Manhattan distance for most kinds)."""
    h = 0
    for c in range(board.shape[0]):
        if board[c] != 0:
            h += H.tile_tab[board[c], c]
    return h


def _init_per_tile(H, s, board, pos, row):
    row[ROW_H] = tile_sum(H, board)
    return row[ROW_H]


def _init_line_conflict(H, s, board, pos, row):
    n = board.shape[0]
    md = tile_sum(H, board)
    h = md
    rows = n // s
    for line in range(rows):
        row[LC_LINES + line] = line_conflict(H, board, s, line, False)
        h += row[LC_LINES + line]
    for line in range(s):
        row[LC_LINES + rows + line] = line_conflict(H, board, s, line, True)
        h += row[LC_LINES + rows + line]
    row[ROW_H] = h
    row[LC_MD] = md
    return h


def _init_walking(H, s, board, pos, row):
    # Rows and columns are two states of the same table (a square's goal is
    # transpose-symmetric; a rectangle's table holds both parts, wd_index).
    row[WD_ROWS] = wd_index(board, s, H, False)
    row[WD_COLS] = wd_index(board, s, H, True)
    row[ROW_H] = H.wd_dist[row[WD_ROWS]] + H.wd_dist[row[WD_COLS]]
    return row[ROW_H]


def _init_gaschnig(H, s, board, pos, row):
    row[ROW_H] = gaschnig(H, board, board.shape[0])
    return row[ROW_H]


def _init_pdb(H, s, board, pos, row):
    n = board.shape[0]
    md = tile_sum(H, board)
    nsums = H.tile_lk.shape[1]
    for j in range(nsums):
        row[PDB_SUMS + j] = 0
    _, rank_col, mask_col, order_col = columns(H)
    for l in range(H.lk_m.shape[0]):
        lex, occupied, order = placement_rank(H, pos, l)
        row[rank_col + l] = lex
        row[mask_col + l] = occupied
        row[order_col + l] = order
        row[PDB_SUMS + nsums + l] = read_entry(H, l, entry_index(H, l, pos[0], lex,
                                                                occupied, order))
    for t in range(1, n):  # each lookup of a sum counted once, at its first tile
        for j in range(nsums):
            l = H.tile_lk[t, j]
            if H.lk_tiles[l, 0] == t:
                row[PDB_SUMS + j] += row[PDB_SUMS + nsums + l]
    best = 0
    for j in range(nsums):
        if row[PDB_SUMS + j] > row[PDB_SUMS + best]:
            best = j
    row[PDB_MD] = md
    row[PDB_BEST] = best
    row[ROW_H] = md + 2 * row[PDB_SUMS + best]
    return row[ROW_H]


INIT = {PER_TILE: _init_per_tile, LINEAR_CONFLICT: _init_line_conflict, WALKING: _init_walking,
        GASCHNIG: _init_gaschnig, PDB: _init_pdb}


@overload(init_of_kind, jit_options={"nogil": True, "_nrt": False})
def _init_by_class(H, s, board, pos, row):
    return INIT[H.instance_class.KIND]


@njit(cache=True, nogil=True)
def broken_derivation(H, s, board, pos, row, moves, nmoves):
    """The first cell the blank can move to from this board (row: its h_init) where the
    entries that a move derives from the board's (h_update, moved_entry) differ from the
    child's own (h_init), or -1 if none: a zero-aware table damaged behind valid checksums
    at a search's root, which every node below would inherit. -1 for other heuristics.
    ``moves``, ``nmoves``: the blank's moves (geometry.blank_moves); the board is restored."""
    if not H.zero_aware:
        return -1
    _, rank_col, _, _ = columns(H)
    derived = np.empty_like(row)
    fresh = np.empty_like(row)
    no_limit = np.int64(1 << 30)  # not a literal: h_update is compiled once (see h_update)
    b = pos[0]
    for k in range(nmoves[b]):
        c = moves[b, k] >> 2
        t = board[c]
        board[b], board[c], pos[t], pos[0] = t, 0, b, c
        h = h_update(H, s, board, pos, row, derived, t, c, b, no_limit, no_first())
        broken = h_init(H, s, board, pos, fresh) != h
        if derived[PDB_MD] != 0:  # h_update stops at the goal, its entries unread
            for col in range(PDB_SUMS, rank_col):
                broken |= derived[col] != fresh[col]
        board[b], board[c], pos[t], pos[0] = 0, t, c, b
        if broken:
            return c
    return -1


@njit(cache=True, nogil=True, inline="always")
def start_reads(H, board, pos, prev, row, tile, src, dst, read):
    """Start the table reads of every lookup of ``tile`` not in ``read`` (a bit per slot
    of the tile's lookups; the tile moved from src to dst) at once, so that they wait for
    memory together instead of one after the other, and keep each one's entry index in its
    column of the row (where its value goes once read). Returns the bits of the lookups
    started. (On 24/small this made the search 4% faster on one thread and 6-15% on two:
    BENCHMARKS, "Levers for the hour".)"""
    nsums = H.tile_lk.shape[1]
    started = read
    slots, lookups = H.tile_lk_slot[ix(tile)], H.tile_lk[ix(tile)]
    for j in range(nsums):
        bit = np.int64(1) << slots[ix(j)]
        if started & bit:
            continue
        l = lookups[ix(j)]
        e = moved_entry_index(H, board, pos, prev, row, l, tile, src, dst)
        row[ix(PDB_SUMS + nsums + l)] = e  # an int32 (heuristic_from: tables < 2^31 entries)
        started |= bit
        if H.zero_aware:
            prefetch(H.parity, parity_index(H, l, e) >> 3)
        else:
            prefetch(H.table, H.lk_off[ix(l)] + (e >> 1))
    return started & ~read


@njit(cache=True, nogil=True, inline="always")
def no_first():
    """h_update's ``first`` from a caller that did not look ahead (first_read)."""
    none = np.int64(-1)  # not a literal: see h_update
    return none, none, none, none


@njit(cache=True, nogil=True, _nrt=False, forceinline=True)
def first_read(H, board, pos, row, tile, src, dst):
    """Where h_update will read first for the child in which ``tile`` moves from src to
    dst (board, pos and row: the parent's, left as they were): the lookup of the parent's
    best sum that holds the tile, as (rank, mask, order rank, entry index); its entry
    starts loading now. The search calls it for every child of a node as it expands the
    node and hands each child's four to h_update, so that the children's reads wait for
    memory together and nothing is ranked twice. Four -1 for other kinds and for tables
    that do not look ahead (looks_ahead)."""
    if kind_of(H) != PDB or not looks_ahead(H):
        none = np.int64(-1)
        return none, none, none, none
    l = H.tile_lk[ix(tile), ix(row[PDB_BEST])]
    _, rank_col, mask_col, order_col = columns(H)
    lex, occupied, order = moved_rank(H, board, row[ix(rank_col + l)], row[ix(mask_col + l)],
                                      row[ix(order_col + l)], l, tile, src, dst)
    e = entry_index(H, l, src, lex, occupied, order)
    if H.zero_aware:
        prefetch(H.parity, parity_index(H, l, e) >> 3)
    else:
        prefetch(H.table, H.lk_off[ix(l)] + (e >> 1))
    return np.int64(lex), np.int64(occupied), np.int64(order), np.int64(e)


@njit(cache=True, nogil=True, _nrt=False, forceinline=True)
def h_update(H, s, board, pos, prev, row, tile, src, dst, limit, first):
    """After ``tile`` moved from cell src to cell dst (board and pos already updated; the
    blank is now at src), derive the state row from the previous one; return the new h.
    A kind may stop early and return a lower bound on h once that exceeds ``limit`` (the
    row is then incomplete: the caller prunes the node). Each kind's own function
    (UPDATE) is chosen by the arrays' class when numba types the call (update_of_kind):
    a kernel for one kind does not type and compile the others' code (branches on kind_of
    did: 3 of h_update's 9 s of compiling on the AMD EPYC). LLVM inlines both
    (``forceinline``; numba's own inlining typed h_update again at every call site, half
    a minute of a first solve): dfs_loop's and tasks_loop's machine code is the same
    instruction for instruction as with the branches. Callers pass ``limit`` as an
    int64 variable, never a literal, which numba would compile a copy for (ida.dfs_loop).
    ``first``: the (rank, mask, order rank, entry index) first_read found for this child,
    or four with a negative entry index (no_first(): h_update finds it itself)."""
    return update_of_kind(H, s, board, pos, prev, row, tile, src, dst, limit, first)


def update_of_kind(H, s, board, pos, prev, row, tile, src, dst, limit, first):
    """h_update of H's kind (UPDATE), chosen by class as init_of_kind is."""
    raise TypeError("update_of_kind is called from kernels only")


def _update_per_tile(H, s, board, pos, prev, row, tile, src, dst, limit, first):
    h = prev[ROW_H] + H.tile_tab[tile, dst] - H.tile_tab[tile, src]
    row[ROW_H] = h
    return h


def _update_line_conflict(H, s, board, pos, prev, row, tile, src, dst, limit, first):
    for i in range(row.shape[0]):
        row[i] = prev[i]
    md = prev[LC_MD] + H.tile_tab[tile, dst] - H.tile_tab[tile, src]
    row[LC_MD] = md
    # A vertical move changes the contents of two rows, a horizontal one of two columns.
    rows = board.shape[0] // s
    if src // s != dst // s:
        row[LC_LINES + src // s] = line_conflict(H, board, s, src // s, False)
        row[LC_LINES + dst // s] = line_conflict(H, board, s, dst // s, False)
    else:
        row[LC_LINES + rows + src % s] = line_conflict(H, board, s, src % s, True)
        row[LC_LINES + rows + dst % s] = line_conflict(H, board, s, dst % s, True)
    h = md
    for i in range(LC_LINES, LC_LINES + rows + s):
        h += row[i]
    row[ROW_H] = h
    return h


def _update_walking(H, s, board, pos, prev, row, tile, src, dst, limit, first):
    trans = H.wd_trans
    row[WD_ROWS] = prev[WD_ROWS]
    row[WD_COLS] = prev[WD_COLS]
    # The tile moves up (dst above src: the blank went down) or down, or sideways.
    d = 0 if dst < src else 1
    if src // s != dst // s:
        row[WD_ROWS] = trans[prev[WD_ROWS], d, tile // s]
    else:
        row[WD_COLS] = trans[prev[WD_COLS], d, tile % s]
    h = H.wd_dist[row[WD_ROWS]] + H.wd_dist[row[WD_COLS]]
    row[ROW_H] = h
    return h


def _update_gaschnig(H, s, board, pos, prev, row, tile, src, dst, limit, first):
    h = gaschnig(H, board, board.shape[0])
    row[ROW_H] = h
    return h


def _update_pdb(H, s, board, pos, prev, row, tile, src, dst, limit, first):
    # PDB: h = md + 2 * max over the sums of their lookups' entries. Only the lookup of each
    # sum that holds the moved tile changes, and a lookup that several sums share is read
    # once (``read``: a bit per lookup of the tile). The parent's best sum goes first, and
    # the first sum that lifts h over the limit ends the evaluation (lazy); if the best
    # does not, the reads of the others start together (start_reads).
    dmd = H.tile_tab[ix(tile), ix(dst)] - H.tile_tab[ix(tile), ix(src)]
    md = prev[PDB_MD] + dmd
    nsums = H.tile_lk.shape[1]
    for i in range(row.shape[0]):
        row[ix(i)] = prev[ix(i)]
    row[PDB_MD] = md
    if md == 0:  # the goal: its h is 0 whatever the entries say (see moved_entry)
        row[ROW_H] = 0
        return 0
    best = prev[PDB_BEST]
    top = -1
    read = np.int64(0)
    indexed = np.int64(0)
    slots, lookups = H.tile_lk_slot[ix(tile)], H.tile_lk[ix(tile)]
    for k in range(nsums):
        j = best + k
        if j >= nsums:
            j -= nsums
        l = lookups[ix(j)]
        bit = np.int64(1) << slots[ix(j)]
        col = ix(PDB_SUMS + nsums + l)  # the lookup's entry
        if read & bit:
            v = row[col]
        elif indexed & bit:  # its index is in the row (start_reads)
            v = moved_entry(H, l, row[col], prev[col], dmd)
            read |= bit
        elif k == 0 and first[3] >= 0:  # the search found its index (first_read)
            _, rank_col, mask_col, order_col = columns(H)
            row[ix(rank_col + l)] = first[0]
            row[ix(mask_col + l)] = first[1]
            row[ix(order_col + l)] = first[2]
            v = moved_entry(H, l, first[3], prev[col], dmd)
            read |= bit
        else:
            v = moved_entry(H, l, moved_entry_index(H, board, pos, prev, row, l, tile, src, dst),
                            prev[col], dmd)
            read |= bit
        total = prev[ix(PDB_SUMS + j)] + v - prev[col]
        row[ix(PDB_SUMS + j)] = total
        row[col] = v
        if total > top:
            top = total
            row[PDB_BEST] = j
        if md + 2 * total > limit:
            return md + 2 * total
        if k == 0:  # the best sum did not prune: the others are read until one does
            indexed = start_reads(H, board, pos, prev, row, tile, src, dst, read)
    h = md + 2 * top
    row[ROW_H] = h
    return h


UPDATE = {PER_TILE: _update_per_tile, LINEAR_CONFLICT: _update_line_conflict,
          WALKING: _update_walking, GASCHNIG: _update_gaschnig, PDB: _update_pdb}


@overload(update_of_kind, jit_options={"nogil": True, "_nrt": False, "forceinline": True})
def _update_by_class(H, s, board, pos, prev, row, tile, src, dst, limit, first):
    return UPDATE[H.instance_class.KIND]
