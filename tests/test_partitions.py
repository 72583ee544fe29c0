from pdbtool.geometry import blank_region, symmetries, transpose
from pdbtool.partitions import CATALOGUE, plan_tables
from pdbtool.ranking import table_size


def test_groups_are_disjoint_and_cover_every_tile():
    for p in CATALOGUE.values():
        tiles = [t for g in p.groups for t in g]
        assert sorted(tiles) == list(range(1, p.cells)), p.name


def test_documented_sizes():
    assert CATALOGUE["15/7-8"].group_sizes() == [57_657_600, 518_918_400]
    assert CATALOGUE["24/6-6-6-6"].group_sizes() == [127_512_000] * 4
    assert CATALOGUE["8/full"].group_sizes() == [table_size(9, 8)]


def test_24_puzzle_needs_two_tables():
    plan = plan_tables(CATALOGUE["24/6-6-6-6"])
    assert plan.tables == [(1, 5, 6, 10, 11, 12), (2, 3, 4, 7, 8, 9)]
    assert [g.table for g in plan.groups] == [0, 1, 1, 1]
    for tiles, ti, sigma in plan.groups:
        # The symmetry carries each tile's goal cell onto the table tile's goal cell.
        assert [sigma[t] for t in tiles] == list(plan.tables[ti])


def test_symmetries_and_regions():
    assert len(symmetries(4)) == 8 and tuple(range(16)) in symmetries(4)
    t = transpose(5)
    assert all(t[t[c]] == c for c in range(25))
    assert blank_region(4, {1, 4}) == {0}  # cell 0 boxed in by tiles 1 and 4
