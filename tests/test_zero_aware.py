"""Zero-aware tables against an independent 0/1-BFS over full abstract states (the
group's tiles and the blank), entry for entry; the 4-bit form against the distances; the
max over a catalogue's sums against exact 8-puzzle distances."""

from collections import deque
from itertools import permutations
from math import factorial

import numpy as np
import pytest

from pdbtool import catalogue
from pdbtool.build import build, compact_table, distance_table
from pdbtool.errors import BadInput
from pdbtool.geometry import blank_region
from pdbtool.pdb_heuristic import load_heuristic
from pdbtool.ranking import NO_REGION, rank_of, regions
from pdbtool.search import Solver

CASES = [((1, 2, 3), 3), ((1, 3, 5, 7), 3), ((4, 5, 8), 3), ((1, 2, 4), 4), ((5, 6, 9), 4)]


def abstract_distances(tiles, side):
    """0/1-BFS over (cells of the tiles, blank cell): a move of a group tile costs 1, the
    blank's other moves 0; from the goal placement with the blank in cell 0."""
    start = (tuple(tiles), 0)
    dist = {start: 0}
    queue = deque([start])
    while queue:
        state = queue.popleft()
        cells, b = state
        r, c = divmod(b, side)
        for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1)):
            if not (0 <= r + dr < side and 0 <= c + dc < side):
                continue
            nb = (r + dr) * side + c + dc
            if nb in cells:
                nxt = (tuple(b if x == nb else x for x in cells), nb)
                cost = 1
            else:
                nxt, cost = (cells, nb), 0
            d = dist[state] + cost
            if d < dist.get(nxt, 1 << 30):
                dist[nxt] = d
                (queue.appendleft if cost == 0 else queue.append)(nxt)
    return dist


def entry(tiles_cells, blank, side, zero_aware=True):
    """Index of a table entry, computed from the documented layout with Python ints."""
    n, m = side * side, len(tiles_cells)
    q = rank_of(list(tiles_cells), n)
    mfact = factorial(m)
    reg = regions(side, m, zero_aware)
    return int(reg.offset[q // mfact]) + int(reg.index[q // mfact, blank]) * mfact + q % mfact


@pytest.mark.parametrize("tiles,side", CASES)
def test_zero_aware_table_equals_abstract_bfs_entry_for_entry(tiles, side):
    reference = abstract_distances(tiles, side)
    table = distance_table(tiles, side, progress=False)
    assert len(table) == regions(side, len(tiles)).entries
    for (cells, blank), d in reference.items():
        assert table[entry(cells, blank, side)] == d, (cells, blank)
    # Every (placement, region) is reached: no entry is left unset.
    assert (table != 255).all()


@pytest.mark.parametrize("tiles,side", CASES)
def test_min_over_blank_is_the_minimum_and_zero_aware_dominates_it(tiles, side):
    reference = abstract_distances(tiles, side)
    zero = distance_table(tiles, side, progress=False)
    low = distance_table(tiles, side, zero_aware=False, progress=False)
    for cells in {c for c, _ in reference}:
        best = min(d for (c, _), d in reference.items() if c == cells)
        assert low[entry(cells, cells_free(cells, side), side, False)] == best
        for blank in range(side * side):
            if blank not in cells:
                assert zero[entry(cells, blank, side)] >= best


def cells_free(cells, side):
    return next(c for c in range(side * side) if c not in cells)


def test_region_index_numbers_the_blank_regions_by_lowest_cell():
    side, m = 4, 5
    reg = regions(side, m)
    for r in range(0, reg.count.size, 37):
        cells = {c for c in range(16) if reg.index[r, c] == NO_REGION}
        assert len(cells) == m
        comps = []
        for c in range(16):
            if c not in cells and not any(c in x for x in comps):
                comps.append(blank_region(side, cells, c))
        assert reg.count[r] == len(comps)
        for k, comp in enumerate(comps):
            assert {int(reg.index[r, c]) for c in comp} == {k}


@pytest.mark.parametrize("tiles,side", CASES)
def test_compact_entries_decode_to_the_distances(tiles, side):
    dist = distance_table(tiles, side, progress=False)
    packed = compact_table(dist, tiles, side)
    nib = np.empty(packed.size * 2, np.uint8)
    nib[0::2], nib[1::2] = packed & 15, packed >> 4
    for (cells, blank), d in abstract_distances(tiles, side).items():
        md = sum(abs(c // side - t // side) + abs(c % side - t % side) for c, t in zip(cells, tiles))
        assert md + 2 * nib[entry(cells, blank, side)] == d


def test_catalogue_files_parse_and_plan():
    small = catalogue.get("24/small")
    assert len(small.partitions) == 7 and all(len(p) == 4 for p in small.partitions)
    assert len(catalogue.plan_tables(small).tables) == 11  # 28 groups, 11 distinct tables
    assert len(catalogue.plan_tables(catalogue.get("24/6-6-6-6")).tables) == 2
    with pytest.raises(BadInput, match="partition 0 does not split"):
        catalogue.parse("# name: x\n1,2,3\n4,5,6\n")
    with pytest.raises(BadInput, match="not a group"):
        catalogue.parse("# name: x\n1,2,x\n")


EIGHT = catalogue.parse("""# name: 8/test-two
# note: two additive partitions of the 8-puzzle, for the tests
1,2,3,4
5,6,7,8

1,2,5,6
3,4,7,8
""")


def test_max_of_additive_sums_is_admissible_and_optimal_on_the_8_puzzle(tmp_path, oracle8):
    meta = build(EIGHT, tmp_path, progress=False)
    assert meta.partitions == 2 and meta.zero_aware
    h = load_heuristic(meta.path)
    solver = Solver(h)
    rng = np.random.default_rng(7)
    boards = list(oracle8)
    for i in rng.choice(len(boards), 300, replace=False):
        board = boards[i]
        assert h.value(board) <= oracle8[board]
        r = solver.solve(board, "blank-first")
        assert r.length == oracle8[board]


def test_every_permutation_of_a_small_group_has_an_entry():
    # The order part of the rank covers all m! orders of each map exactly once.
    n, m = 9, 3
    seen = {rank_of(list(p), n) for cells in [(0, 4, 8)] for p in permutations(cells)}
    assert len(seen) == factorial(m)


def test_tables_are_the_same_whatever_the_process_layout(tmp_path):
    one = build("15/5-5-5", tmp_path / "one", processes=1, workers=2, progress=False)
    two = build("15/5-5-5", tmp_path / "two", processes=2, workers=2, progress=False)
    assert two.build["processes"] == 2 and one.build["processes"] == 1
    assert [t.sha256 for t in one.tables] == [t.sha256 for t in two.tables]
    assert one.version == two.version
