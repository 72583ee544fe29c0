"""Catalogues as data: the shipped files, their plans, and the max of additive sums."""

import numpy as np
import pytest

from pdbtool import catalogue
from pdbtool.builder import build
from pdbtool.errors import BadInput
from pdbtool.geometry import blank_region, symmetries, transpose
from pdbtool.pdb_heuristic import load_heuristic
from pdbtool.search import Solver


def test_every_partition_splits_the_tiles():
    for c in catalogue.catalogues().values():
        for p in c.partitions:
            assert sorted(t for g in p for t in g) == list(range(1, c.cells)), c.name


def test_plans_share_tables_through_symmetries():
    plan = catalogue.plan_tables(catalogue.get("24/6-6-6-6"))
    assert plan.tables == [(1, 5, 6, 10, 11, 12), (2, 3, 4, 7, 8, 9)]
    assert [g.table for g in plan.groups] == [0, 1, 1, 1]
    for tiles, ti, sigma, _ in plan.groups:
        # The symmetry carries each tile's goal cell onto the table tile's goal cell.
        assert [sigma[t] for t in tiles] == list(plan.tables[ti])
    small = catalogue.get("24/small")
    assert len(small.partitions) == 7 and all(len(p) == 4 for p in small.partitions)
    assert len(catalogue.plan_tables(small).tables) == 11  # 28 groups, 11 distinct tables


def test_bad_catalogue_files_are_refused_with_the_reason():
    with pytest.raises(BadInput, match="partition 0 does not split"):
        catalogue.parse("# name: x\n1,2,3\n4,5,6\n")
    with pytest.raises(BadInput, match="not a group"):
        catalogue.parse("# name: x\n1,2,x\n")
    with pytest.raises(BadInput, match="unknown catalogue"):
        catalogue.get("24/none")


def test_symmetries_and_regions():
    assert len(symmetries(4)) == 8 and tuple(range(16)) in symmetries(4)
    t = transpose(5)
    assert all(t[t[c]] == c for c in range(25))
    assert blank_region(4, {1, 4}) == {0}  # cell 0 boxed in by tiles 1 and 4


EIGHT = catalogue.parse("""# name: 8/test-two
# note: two additive partitions of the 8-puzzle, for the tests
1,2,3,4
5,6,7,8

1,2,5,6
3,4,7,8
""")


def test_max_of_additive_sums_is_admissible_and_optimal(tmp_path, oracle8):
    meta = build(EIGHT, tmp_path, progress=False)
    assert meta.partitions == 2 and meta.zero_aware
    h = load_heuristic(meta.path)
    solver = Solver(h)
    boards = list(oracle8)
    for i in np.random.default_rng(7).choice(len(boards), 300, replace=False):
        board = boards[i]
        assert h.value(board) <= oracle8[board]
        r = solver.solve(board, "blank-first")
        assert r.length == oracle8[board]
    assert solver.heuristic.H.tile_lk.shape[1] == 4  # 2 partitions x (direct, reflected)
