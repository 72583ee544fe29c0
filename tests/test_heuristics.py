"""Admissibility on every 8-puzzle state against exact BFS, h(goal) = 0, consistency."""

import dataclasses
import random

import numpy as np
import pytest

from pdbtool import geometry, puzzle
from pdbtool.errors import ArtifactError
from pdbtool.heuristics.pattern_db import check_layout, parity_of
from pdbtool.heuristics.table_free import TABLE_FREE, board_arrays, table_free
from pdbtool.kernels import heuristic as hk, lookups
from pdbtool.kernels.ranking import (NO_REGION, TWO_REGIONS, lex_rank_of, lex_weights,
                                     order_rank, order_weights, outside_cells, regions)
from pdbtool.loading import load_heuristic
from pdbtool.tables import artifact


@pytest.mark.parametrize("name", TABLE_FREE)
def test_admissible_on_all_8_puzzle_states(name, oracle8):
    h = table_free(name, 3)
    over = [(s, d) for s, d in oracle8.items() if h.value(s) > d]
    assert not over, f"{name} overestimates on {len(over)} states, e.g. {over[0]}"
    assert h.value(tuple(range(9))) == 0


@pytest.mark.parametrize("name", TABLE_FREE)
def test_consistent_across_moves(name):
    # All four table-free heuristics are consistent: one move changes h by at most 1.
    for side in (3, 4):
        h = table_free(name, side)
        rng = random.Random(side)
        nbrs = geometry.neighbours(side)
        for _ in range(300):
            b = puzzle.random_board(side, "blank-first", rng)
            z = b.index(0)
            for c in nbrs[z]:
                cells = list(b)
                cells[z], cells[c] = cells[c], 0
                assert abs(h.value(cells) - h.value(b)) <= 1


def test_strength_order_on_8_puzzle(oracle8):
    states = list(oracle8)[::97]
    means = {n: np.mean([table_free(n, 3).value(s) for s in states]) for n in TABLE_FREE}
    assert means["hamming"] < means["manhattan"] < means["linear-conflict"]


def test_linear_conflict_counts_lines_not_pairs():
    # Row 0 holds 3 2 1 in reverse: two of them must leave the line: +4, not +6 (3 pairs).
    b = (3, 2, 1, 0, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)
    md = table_free("manhattan", 4).value(b)
    assert table_free("linear-conflict", 4).value(b) == md + 4


NO_LIMIT = 1 << 30


def incremental_matches_full(h, side, steps, seed):
    """Walk randomly; after each move the kernel's incremental row equals a recomputation,
    and with a limit below h, the lazy update returns a lower bound of h above the limit;
    the same with the first read found ahead of the move (first_read), as the search does."""
    rng = random.Random(seed)
    pdb = type(h.H).KIND == hk.PDB
    H = hk.PDB_AHEAD(*h.H) if pdb else h.H  # first_read on any table
    board, pos = board_arrays(puzzle.random_board(side, "blank-first", rng))
    row = np.zeros(h.width, np.int32)
    hk.h_init(h.H, side, board, pos, row)
    nbrs = geometry.neighbours(side)
    for _ in range(steps):
        b = int(pos[0])
        c = rng.choice(nbrs[b])
        t = int(board[c])
        ahead = hk.first_read(H, board, pos, row, t, c, b)  # before the move, as the search
        assert (ahead[-1] >= 0) == pdb
        board[b], board[c] = t, 0
        pos[t], pos[0] = b, c
        full = h.state(board)
        rows = []
        for first in (hk.no_first(), ahead):
            lazy = hk.h_update(H, side, board, pos, row, np.zeros_like(row), t, c, b,
                               int(full[hk.ROW_H]) - 3, first)
            assert full[hk.ROW_H] - 3 < lazy <= full[hk.ROW_H]
            new = np.zeros_like(row)
            hk.h_update(H, side, board, pos, row, new, t, c, b, NO_LIMIT, first)
            if type(h.H).KIND == hk.PDB:  # which of equal sums is "best" is only an order hint
                new[hk.PDB_BEST] = full[hk.PDB_BEST]
            assert new[hk.ROW_H] == full[hk.ROW_H] and (new == full).all(), (board.tolist(), new, full)
            rows.append(new)
        row = rows[1]


@pytest.mark.parametrize("name", TABLE_FREE)
def test_incremental_update_equals_recomputation(name):
    incremental_matches_full(table_free(name, 4), 4, 300, 1)


def test_pdb_incremental_min_over_blank(tmp_path):
    """Tables of the minimum over the blank's cells are read whole (not by parity)."""
    from pdbtool.tables.builder import build

    meta = build("15/5-5-5", tmp_path, zero_aware=False, progress=False)
    h = load_heuristic(meta.path)
    assert not h.H.zero_aware
    incremental_matches_full(h, 4, 500, 3)


def test_pdb_incremental_and_reflection(art_dir, oracle8):
    h = load_heuristic(art_dir / "15-5-5-5.h5")
    assert h.H.zero_aware
    incremental_matches_full(h, 4, 500, 2)
    # 8/full with reflection is exact: both sums equal the BFS distance (md + 2 * entries).
    h8 = load_heuristic(art_dir / "8-full.h5")
    for s, d in list(oracle8.items())[::50]:
        row = h8.state(s)
        md = row[hk.PDB_MD]
        direct, reflected = md + 2 * row[hk.PDB_SUMS], md + 2 * row[hk.PDB_SUMS + 1]
        assert row[hk.ROW_H] == direct == reflected == d


def test_gaschnig_between_hamming_and_the_truth(oracle8):
    g, ham = table_free("gaschnig", 3), table_free("hamming", 3)
    for s in list(oracle8)[::11]:
        assert ham.value(s) <= g.value(s) <= oracle8[s]
    # One 3-cycle of tiles, the blank home: 3 misplaced + 1 for the cycle.
    assert g.value((0, 2, 3, 1, 4, 5, 6, 7, 8)) == 4


@pytest.mark.parametrize("name", ("hamming", "gaschnig", "manhattan"))
def test_per_tile_heuristics_serve_goals_off_the_corners(name):
    from reference import bfs_distances

    goal = (1, 2, 3, 4, 0, 5, 6, 7, 8)
    f = puzzle.frame(3, ",".join(map(str, goal)))
    h = table_free(name, 3, f.goal_blank)
    exact = bfs_distances(goal)
    for s, d in list(exact.items())[::53]:
        assert h.value(f.image(s)) <= d
    assert h.value(f.image(goal)) == 0


def test_tables_of_2_31_entries_are_refused_not_misread(art_dir):
    """A 7-tile zero-aware table of the 24-puzzle (7-7-7-3) is a valid layout, but the
    search keeps entry indices in the int32 state row: it is refused by name."""
    meta = artifact.read_meta(art_dir / "15-5-5-5.h5")
    za = meta.zero_aware

    def table(name, tiles):
        return artifact.TableInfo(name, tiles, 25, regions(5, len(tiles), za).entries, 0, "", (), 0)

    groups = [artifact.GroupInfo(tuple(range(1 + 7 * i, 8 + 7 * i)), 0, tuple(range(25)), 0)
              for i in range(3)] + [artifact.GroupInfo((22, 23, 24), 1, tuple(range(25)), 0)]
    big = dataclasses.replace(meta, size=5, tables=(table("7", tuple(range(1, 8))),
                                                    table("3", (22, 23, 24))), groups=tuple(groups))
    assert big.tables[0].entries >= 2**31
    with pytest.raises(ArtifactError, match=r"table '7' has .* fewer than 2\^31"):
        check_layout(big)
    check_layout(meta)  # the real artifact passes


@pytest.mark.parametrize("side,m", [(4, 5), (5, 6), (5, 7)])
def test_moved_rank_equals_ranking_afresh(side, m):
    """After each move of one of its tiles, a lookup's placement rank, cell mask and order
    rank derived from the parent's (moved_rank) equal a ranking from scratch
    (placement_rank) and the builder's, for every symmetry of the board as the cell map:
    up and down moves pass the cells between."""
    n = side * side
    rng = random.Random(side * 10 + m)
    maps = geometry.symmetries(side)
    groups = [sorted(rng.sample(range(1, n), m)) for _ in maps]
    cmap = np.array(maps, np.int64)
    digit = np.full((len(maps), n), -1, np.int64)
    for l, g in enumerate(groups):
        digit[l, g] = range(m)
    H = hk.heuristic_arrays(
        hk.PDB, lk_tiles=np.array(groups, np.int64), lk_m=np.full(len(maps), m, np.int64),
        lk_cmap=cmap, lk_lw=np.tile(lex_weights(n, m), (len(maps), 1)),
        lk_pw=np.tile(order_weights(m), (len(maps), 1)), lk_digit=digit,
        lk_cell=np.argsort(cmap, axis=1))
    board, pos = board_arrays(puzzle.random_board(side, "blank-first", rng))
    ranks = [lookups.placement_rank(H, pos, l) for l in range(len(maps))]
    nbrs = geometry.neighbours(side)
    vertical = 0
    for _ in range(3000):
        b = int(pos[0])
        c = rng.choice(nbrs[b])
        t = int(board[c])
        board[b], board[c] = t, 0
        pos[t], pos[0] = b, c
        vertical += abs(b - c) == side
        for l, g in enumerate(groups):
            if t in g:
                ranks[l] = lookups.moved_rank(H, board, *ranks[l], l, t, c, b)
            assert ranks[l] == lookups.placement_rank(H, pos, l), (board.tolist(), l)
            cells = [maps[l][pos[t]] for t in g]  # the builder's ranking, as the oracle
            mask = sum(1 << c for c in cells)
            assert ranks[l] == (lex_rank_of(cells, n), mask,
                                order_rank(np.array(cells, np.int64), mask, order_weights(m)))
    assert vertical > 1000


def test_outside_cells_decide_region_0_and_region_1_as_the_region_index_does():
    """The word per map (outside_cells) that the lookups read instead of the region index:
    a free cell's bit is set exactly where its region is not 0, and on a map with the
    TWO_REGIONS bit every such cell is in region 1. 6 tiles on 5x5 (every map)."""
    reg = regions(5, 6)
    words = outside_cells(reg.index, reg.count).astype(np.int64)
    bits = (words[:, None] >> np.arange(25)) & 1
    free = reg.index != NO_REGION
    assert np.array_equal(bits == 1, free & (reg.index != 0))
    two = (words & TWO_REGIONS) != 0
    assert np.array_equal(two, reg.count == 2) and two.any() and (reg.count > 2).any()
    assert np.all(reg.index[two][bits[two] == 1] == 1)


def test_zero_aware_tables_beyond_31_cells_are_refused(art_dir):
    """A lookup keeps a map's free cells outside region 0 in a 32-bit word (outside_cells):
    zero-aware tables of a 6x6 board are refused by name, not misread."""
    meta = artifact.read_meta(art_dir / "15-5-5-5.h5")
    assert meta.zero_aware
    with pytest.raises(ArtifactError, match=r"6x6 board; this pdbtool reads them for at most 31"):
        check_layout(dataclasses.replace(meta, size=6))
    with pytest.raises(ValueError, match="36 cells"):
        outside_cells(regions(6, 3).index, np.full(regions(6, 3).count.shape, 3))


@pytest.mark.parametrize("length", [0, 3, 64, 4099])
def test_parity_bits_are_each_entrys_lowest_bit(length):
    """What a move reads of a zero-aware table (kernels.lookups.moved_entry): bit k of
    the parity array is the lowest bit of 4-bit entry k, whatever the data's length."""
    data = np.random.default_rng(length).integers(0, 256, length, dtype=np.uint8)
    bits = parity_of(data)
    assert bits.shape == ((length + 3) // 4,)
    for k in range(2 * length):
        assert (bits[k >> 3] >> (k & 7)) & 1 == (data[k >> 1] >> (4 * (k & 1))) & 1, k
