"""Tables that groups share through the 5x5 board's symmetries, against the tests' own oracle.

catalogue.plan_tables lets a group read an earlier group's table when a symmetry of the board
(a turn, a reflection) maps the group's goal cells and the blank's goal region onto that
table's; the group then reads the table through the symmetry (its cell map), its tiles in
the order the symmetry gives them. The 24-puzzle's catalogues depend on it (24/6-6-6-6
reads one table for three turned groups), yet only 15/5-5-5's one flip was checked
(test_build.py::test_symmetric_group_reads_the_shared_table_correctly). A turn the wrong
way, a map left out, tiles in the wrong order or a blank's region that does not match gives
values that look like a heuristic's but are another group's.

The catalogue here is groups of three tiles on the 5x5 board (its tables build in about a
second). Partition 0: a group and its three quarter turns; a group with its transpose and
a quarter turn (these wall a cell in, a pocket for the blank); one more. Partition 1 is
partition 0 transposed, so groups read tables through the board's mirrors too. Partition 2:
a group that walls the blank in at its goal cell, with its turns, which must not read its
table (their blank's goal region differs), and partition 0's other groups.

Each group's value (its Manhattan distance plus twice its 4-bit entry) must equal its own
abstract distance, found by group_distances below: a breadth-first search over (the group's
cells, the blank's region) that uses no project code and no symmetry. It is compared with
the table bytes read through the cell map the artifact records, with the heuristic's
lookups (direct and reflected, from scratch and after moves), and, through optimal
solves, with the exact lengths of reference.meet_in_the_middle.
"""

from __future__ import annotations

import functools
import random
from collections import deque

import numpy as np
import pytest

from pdbtool.kernels import heuristic as hk
from pdbtool.loading import load_heuristic
from pdbtool.search.solver import Solver
from pdbtool.tables import artifact, catalogue
from pdbtool.tables.builder import build
from reference import (abstract_distances, assert_replays, meet_in_the_middle, neighbour_cells,
                       table_entry)

SIDE = 5
CELLS = SIDE * SIDE
GOAL = tuple(range(CELLS))  # blank-first: tile t's goal cell is t, the blank's is 0
NO_LIMIT = 1 << 30


# -- the board's symmetries, written here ---------------------------------------------------

def quarter_turn(cell: int) -> int:
    """The cell a clockwise quarter turn of the board takes ``cell`` to: (r, c) -> (c, 4 - r)."""
    r, c = divmod(cell, SIDE)
    return c * SIDE + SIDE - 1 - r


def transpose(cell: int) -> int:
    """The cell the reflection about the main diagonal takes ``cell`` to: (r, c) -> (c, r)."""
    r, c = divmod(cell, SIDE)
    return c * SIDE + r


def turned(group, quarters: int) -> tuple[int, ...]:
    """The group whose goal cells are ``group``'s turned clockwise by ``quarters`` quarters
    (a tile's goal cell is its number, so cells and tiles are the same numbers)."""
    for _ in range(quarters):
        group = [quarter_turn(t) for t in group]
    return tuple(sorted(group))


def transposed(group) -> tuple[int, ...]:
    return tuple(sorted(transpose(t) for t in group))


def named_symmetries() -> dict[tuple[int, ...], str]:
    """The square's eight symmetries as cell permutations, by name."""
    out = {}
    for mirrored in (False, True):
        for quarters in range(4):
            perm = []
            for cell in range(CELLS):
                cell = transpose(cell) if mirrored else cell
                for _ in range(quarters):
                    cell = quarter_turn(cell)
                perm.append(cell)
            name = (f"transpose, then {quarters} quarter turn(s)" if mirrored
                    else f"{quarters} quarter turn(s)")
            out[tuple(perm)] = name
    assert len(out) == 8
    return out


# -- the catalogue ----------------------------------------------------------------------------

# No symmetry but the identity keeps any of these four: exactly one symmetry takes a group
# onto each of its images, so a wrong one cannot pass for right.
TURNED = (1, 3, 13)
POCKET = (2, 4, 8)    # walls cell 3 in; its transpose and its quarter turn wall 15 and 19 in
ALONE = (6, 12, 22)
WALLED = (1, 5, 7)    # walls the blank in at its goal cell 0; its turns wall other corners

PARTITION_0 = [TURNED, turned(TURNED, 1), turned(TURNED, 2), turned(TURNED, 3),
               POCKET, transposed(POCKET), turned(POCKET, 1), ALONE]
PARTITION_1 = [transposed(g) for g in PARTITION_0]
PARTITION_2 = [WALLED, turned(WALLED, 1), turned(WALLED, 2), turned(WALLED, 3),
               *PARTITION_0[4:]]
PARTITIONS = [PARTITION_0, PARTITION_1, PARTITION_2]
CATALOGUE = "# name: 24/test-symmetric\n" + "\n".join(
    "".join(",".join(map(str, g)) + "\n" for g in p) for p in PARTITIONS)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The catalogue's artifact (a few 3-tile tables of the 5x5 board)."""
    cat = catalogue.parse(CATALOGUE)
    meta = build(cat, tmp_path_factory.mktemp("symmetric"), workers=1, processes=1,
                 progress=False)
    return meta.path


# -- the oracle: each group's own abstract distances ---------------------------------------

@functools.cache
def regions_of(occupied: frozenset) -> dict[int, frozenset]:
    """Each cell not in ``occupied`` -> the cells the blank reaches from it without
    crossing one that is."""
    out: dict[int, frozenset] = {}
    for start in range(CELLS):
        if start in occupied or start in out:
            continue
        seen, stack = {start}, [start]
        while stack:
            for nb in neighbour_cells(stack.pop(), SIDE):
                if nb not in occupied and nb not in seen:
                    seen.add(nb)
                    stack.append(nb)
        region = frozenset(seen)
        out.update(dict.fromkeys(region, region))
    return out


@functools.cache
def group_distances(tiles: tuple[int, ...]) -> dict[tuple[tuple[int, ...], frozenset], int]:
    """The fewest moves of the group's tiles between its goal (tile t on cell t, the blank
    on cell 0) and each of its states, by breadth-first search: a state is the cells of
    ``tiles`` (in that order) and the region of the blank among the other cells, since the
    blank's steps among the tiles of other groups (indistinguishable here) are free. A
    tile moves to a neighbouring cell of the blank's region and leaves the blank in the
    cell it left."""
    goal = (tuple(tiles), regions_of(frozenset(tiles))[0])
    dist = {goal: 0}
    queue = deque([goal])
    while queue:
        state = queue.popleft()
        cells, region = state
        for i, cell in enumerate(cells):
            for to in neighbour_cells(cell, SIDE):
                if to in region:
                    moved = cells[:i] + (to,) + cells[i + 1:]
                    nxt = (moved, regions_of(frozenset(moved))[cell])
                    if nxt not in dist:
                        dist[nxt] = dist[state] + 1
                        queue.append(nxt)
    return dist


def own_distance(tiles, board) -> int:
    """The abstract distance of the group of ``tiles`` on ``board`` (blank-first)."""
    tiles = tuple(sorted(int(t) for t in tiles))
    cells = tuple(board.index(t) for t in tiles)
    return group_distances(tiles)[(cells, regions_of(frozenset(cells))[board.index(0)])]


def manhattan_of(tiles, board) -> int:
    """Manhattan distance of ``tiles`` on ``board`` to their goal cells."""
    return sum(abs(board.index(t) // SIDE - t // SIDE) + abs(board.index(t) % SIDE - t % SIDE)
               for t in map(int, tiles))


def own_h(board, reflect: bool) -> int:
    """The heuristic's value by its definition, from the oracle: the largest of the
    partitions' sums of their groups' distances and, with ``reflect``, of the sums of the
    transposed groups' (the reflected board's lookups)."""
    sums = [sum(own_distance(g, board) for g in p) for p in PARTITIONS]
    if reflect:
        sums += [sum(own_distance(transposed(g), board) for g in p) for p in PARTITIONS]
    return max(sums)


# -- boards ---------------------------------------------------------------------------------

def random_boards(count: int, seed: int) -> list[tuple[int, ...]]:
    """Boards with the tiles shuffled anywhere (each group's placement and the blank's cell
    at random; abstract states do not care for the parity of the whole board)."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        board = list(GOAL)
        rng.shuffle(board)
        out.append(tuple(board))
    return out


def walled_in_boards(tiles, count: int, seed: int) -> list[tuple[int, ...]]:
    """Boards on which ``tiles`` hold every neighbour of some cell (a corner or an edge
    cell), walling it in, half with the blank inside and half with it outside: the group's
    free cells are then two regions, the case where the blank's region is not the table's
    region 0 (that of the lowest free cell) most often. Random boards give few of these."""
    rng = random.Random(seed)
    candidates = [c for c in range(CELLS) if len(neighbour_cells(c, SIDE)) <= len(tiles)]
    out = []
    for k in range(count):
        x, inside = rng.choice(candidates), k % 2 == 0
        walls = neighbour_cells(x, SIDE)
        group = list(tiles)
        rng.shuffle(group)
        board = [-1] * CELLS
        for t, c in zip(group, walls):
            board[c] = t
        rest = [c for c in range(CELLS) if board[c] < 0 and (c != x or not inside)]
        pieces = group[len(walls):] + [t for t in range(1, CELLS) if t not in tiles]
        if inside:
            board[x] = 0
        else:
            pieces.append(0)
        rng.shuffle(pieces)
        for c, t in zip(rest, pieces):
            board[c] = t
        assert sorted(board) == list(GOAL)
        out.append(tuple(board))
    return out


def random_walk(steps: int, rng: random.Random) -> tuple[int, ...]:
    """The board ``steps`` random moves of the blank from the goal (never straight back)."""
    board, blank, last = list(GOAL), 0, -1
    for _ in range(steps):
        to = rng.choice([c for c in neighbour_cells(blank, SIDE) if c != last])
        board[blank], board[to] = board[to], 0
        last, blank = blank, to
    return tuple(board)


def every_group():
    """Each distinct group of the catalogue, sorted."""
    return sorted({tuple(sorted(g)) for p in PARTITIONS for g in p})


def sample_boards(seed: int, count: int = 2000) -> list[tuple[int, ...]]:
    """``count`` random boards and, for every group, 40 on which its tiles wall a cell in."""
    boards = random_boards(count, seed)
    for i, g in enumerate(every_group()):
        boards += walled_in_boards(g, 40, seed * 100 + i)
    return boards


# -- tests ------------------------------------------------------------------------------------

def test_the_oracle_equals_the_reference_abstract_search():
    """group_distances (a BFS over the blank's regions) gives every state the distance of
    reference.abstract_distances (a 0/1-BFS over the blank's cells), for a group that walls
    the blank in at its goal."""
    ours = group_distances(WALLED)
    seen = set()
    for (cells, blank), d in abstract_distances(WALLED, SIDE).items():
        key = (cells, regions_of(frozenset(cells))[blank])
        assert ours[key] == d, key
        seen.add(key)
    assert seen == ours.keys()


def test_the_plan_shares_tables_through_turns_and_reflections(built):
    """What the other tests rely on: groups read tables through every symmetry of the
    board, each tile of a group sent by the cell map onto the goal cell of the table's tile
    in the same place; and the group that walls the blank in at its goal reads a table of
    its own, not one with its turns."""
    meta = artifact.read_meta(built)
    names = named_symmetries()
    used = set()
    for g in meta.groups:
        table = meta.tables[g.table].tiles
        assert tuple(g.cell_map) in names, (g.tiles, "cell map is not a symmetry")
        assert [g.cell_map[t] for t in g.tiles] == list(table), g
        used.add(names[tuple(g.cell_map)])
    assert used == set(names.values())  # all eight, the identity too
    assert len(meta.tables) < len(every_group())
    by_tiles = {tuple(sorted(g.tiles)): g.table for g in meta.groups}
    assert by_tiles[WALLED] not in {by_tiles[turned(WALLED, k)] for k in (1, 2, 3)}
    assert len({by_tiles[g] for g in PARTITION_0[:4]}) == 1
    assert len({by_tiles[g] for g in PARTITION_0[4:7]}) == 1


def test_each_group_reads_its_own_distance_from_the_shared_table(built):
    """The table bytes, read through each group's cell map at the documented layout
    (reference.table_entry), hold the group's own distance: Manhattan + 2 * entry (a
    thousand boards a group: table_entry is plain Python)."""
    meta, data = artifact.open_tables(built)
    seen = set()
    boards = sample_boards(seed=1, count=1000)
    for g in meta.groups:
        if (g.tiles, g.table, g.cell_map) in seen:  # a group that two partitions hold
            continue
        seen.add((g.tiles, g.table, g.cell_map))
        table = artifact.table_view(data, meta.tables[g.table])
        for board in boards:
            cells = [g.cell_map[board.index(t)] for t in g.tiles]
            e = table_entry(cells, g.cell_map[board.index(0)], SIDE)
            entry = (int(table[e // 2]) >> 4 * (e % 2)) & 15
            assert manhattan_of(g.tiles, board) + 2 * entry == own_distance(g.tiles, board), \
                (g.tiles, g.table, board)


def lookup_values(h, row, board) -> dict[tuple[int, ...], tuple[int, int]]:
    """Each lookup of the heuristic's state row: its tiles -> (its value, Manhattan + 2 *
    the entry in the row; the group's own distance)."""
    H = h.H
    entries = hk.PDB_SUMS + H.tile_lk.shape[1]
    out = {}
    for lk in range(H.lk_m.shape[0]):
        tiles = tuple(sorted(int(t) for t in H.lk_tiles[lk, :H.lk_m[lk]]))
        out[tiles] = (manhattan_of(tiles, board) + 2 * int(row[entries + lk]),
                      own_distance(tiles, board))
    return out


@pytest.mark.parametrize("reflect", [False, True])
def test_every_lookup_of_the_heuristic_is_its_groups_distance(built, reflect):
    """h_init's entry of every lookup (each group; with reflection also the transposed
    groups, read through the cell map and the transpose) gives the group's own distance,
    and h is the largest of the sums of those distances."""
    h = load_heuristic(built, reflect=reflect)
    expected = set(every_group()) | ({transposed(g) for g in every_group()} if reflect else set())
    for board in sample_boards(seed=2 + reflect):
        values = lookup_values(h, h.state(board), board)
        assert set(values) == expected
        wrong = {tiles: v for tiles, v in values.items() if v[0] != v[1]}
        assert not wrong, (board, wrong)
        assert h.value(board) == own_h(board, reflect), board


def test_lookups_stay_exact_move_after_move(built):
    """Along a random walk, the entries h_update derives after each move (through the cell
    maps: the moved tile's ranks in a turned or mirrored frame, and the parity bit of the
    entry) stay the groups' own distances, as the search reads them."""
    h = load_heuristic(built)
    rng = random.Random(4)
    board = list(random_boards(1, seed=4)[0])
    row = h.state(board)
    np_board, pos = np.array(board, np.int64), np.empty(CELLS, np.int64)
    pos[np_board] = np.arange(CELLS)
    for _ in range(2000):
        blank = int(pos[0])
        cell = rng.choice(neighbour_cells(blank, SIDE))
        tile = int(np_board[cell])
        np_board[blank], np_board[cell] = tile, 0
        pos[tile], pos[0] = blank, cell
        new = np.zeros_like(row)
        hk.h_update(h.H, SIDE, np_board, pos, row, new, tile, cell, blank, NO_LIMIT, hk.no_first())
        row, board = new, [int(t) for t in np_board]
        wrong = {t: v for t, v in lookup_values(h, row, board).items() if v[0] != v[1]}
        assert not wrong, (board, wrong)
        assert row[hk.ROW_H] == own_h(board, True)


def test_solves_short_walks_optimally(built):
    """IDA* with the catalogue's tables (shared through turns and reflections) finds
    the exact distance of boards 20 to 30 random moves from the goal, a search from both
    ends says, and its answers replay."""
    solver = Solver(load_heuristic(built))
    rng = random.Random(5)
    for _ in range(6):
        board = random_walk(rng.randint(20, 30), rng)
        exact = meet_in_the_middle(board, GOAL, SIDE)
        assert own_h(board, True) <= exact
        r = solver.solve(board, "blank-first")
        assert r.length == exact, board
        assert_replays(r.to_dict(), board, "blank-first")
