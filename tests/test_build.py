"""The builder against a plain reference: 0/1-BFS over (pattern tile cells, blank cell)."""

import numpy as np
import pytest

from pdbtool.artifact import open_tables
from pdbtool.build import build, build_table
from pdbtool.partitions import get, plan_tables
from pdbtool.pdb_heuristic import load_heuristic
from pdbtool.ranking import rank_of
from reference import reference_table


@pytest.mark.parametrize("tiles, side", [
    ((1, 2), 3), ((1, 5, 6), 3), ((4, 8), 3), ((1, 2, 3, 4, 5, 6, 7, 8), 3),
    ((1, 2, 3), 4), ((5, 6, 9, 10), 4), ((1, 5, 6), 5),
])
def test_builder_equals_reference_entry_for_entry(tiles, side):
    assert (build_table(tiles, side, progress=False) == reference_table(tiles, side)).all()


def test_8_full_is_the_exact_distance_table(oracle8):
    table = build_table(tuple(range(1, 9)), 3, progress=False)
    for state, d in oracle8.items():
        cells = [state.index(t) for t in range(1, 9)]
        assert table[rank_of(cells, 9)] == d
    assert (table == 255).sum() == 181440


def test_symmetric_group_reads_the_shared_table_correctly():
    # 15/5-5-5: the third group is a symmetric image (a flip) of the first and reuses its table.
    part = get("15/5-5-5")
    plan = plan_tables(part)
    assert len(plan.tables) == 2
    tiles, ti, cmap = plan.groups[2]
    own = build_table(tuple(sorted(tiles)), 4, progress=False)
    shared = build_table(plan.tables[ti], 4, progress=False)
    rng = np.random.default_rng(1)
    for _ in range(3000):
        cells = rng.choice(16, size=5, replace=False).tolist()  # cells of tiles in table order
        by_tile = dict(zip(tiles, cells))
        own_cells = [by_tile[t] for t in sorted(tiles)]
        assert own[rank_of(own_cells, 16)] == shared[rank_of([cmap[c] for c in cells], 16)]


def test_same_tables_whatever_the_worker_count(tmp_path):
    a = build("15/6-6-3", tmp_path / "one", workers=1, progress=False)
    b = build("15/6-6-3", tmp_path / "two", workers=2, progress=False)
    assert [t.sha256 for t in a.tables] == [t.sha256 for t in b.tables]
    assert a.version == b.version


def test_artifact_describes_itself(art_dir):
    meta, data = open_tables(art_dir / "15-5-5-5.h5")
    assert meta.partition == "15/5-5-5" and meta.size == 4 and meta.goal == "blank-first"
    assert sorted(t for g in meta.groups for t in g.tiles) == list(range(1, 16))
    assert all(t.unset == 0 and t.histogram[0] == 1 for t in meta.tables)
    assert load_heuristic(art_dir / "15-5-5-5.h5").value(tuple(range(16))) == 0
