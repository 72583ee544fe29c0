"""Catalogues as data: the shipped files, their plans, and the max of additive sums."""

import numpy as np
import pytest

from pdbtool.errors import BadInput
from pdbtool.geometry import blank_region, symmetries, transpose
from pdbtool.loading import load_heuristic
from pdbtool.search.solver import Solver
from pdbtool.tables import artifact, catalogue
from pdbtool.tables.builder import build


def test_every_partition_splits_the_tiles():
    for c in catalogue.catalogues().values():
        for p in c.partitions:
            assert sorted(t for g in p for t in g) == list(range(1, c.cells)), c.name


def test_4x6_blocks_share_one_table_through_a_rectangles_symmetries():
    """24/4x6: the three 2x3 blocks of six tiles are mirror and half-turn images of one
    another (a rectangle has no diagonal), so two tables serve the four groups."""
    c = catalogue.get("24/4x6")
    assert c.shape == (4, 6) and c.cells == 24
    plan = catalogue.plan_tables(c)
    assert plan.tables == [(1, 2, 6, 7, 8), (3, 4, 5, 9, 10, 11)]
    assert [g.table for g in plan.groups] == [0, 1, 1, 1]
    for tiles, ti, sigma, _ in plan.groups:
        assert [sigma[t] for t in tiles] == list(plan.tables[ti])
        assert sigma in symmetries(c.shape)


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
    # a 1x9 was built, stamped and listed verified, then failed verify and was refused by
    # solve; a 7x7 raised OverflowError, a word for the strength ValueError
    with pytest.raises(BadInput, match="shape 1x9: tables are for boards of 2 to 6 rows"):
        catalogue.parse("# name: x\n# shape: 1x9\n1,2,3,4\n5,6,7,8\n")
    with pytest.raises(BadInput, match="shape 7x7: tables are for boards of 2 to 6 rows"):
        catalogue.parse("# name: x\n# shape: 7x7\n" + ",".join(map(str, range(1, 49))) + "\n")
    with pytest.raises(BadInput, match="shape 7x7: tables are for boards of 2 to 6 rows"):
        catalogue.parse("# name: x\n" + ",".join(map(str, range(1, 49))) + "\n")  # inferred
    for word in ("high", "--5", "\u00b2"):
        with pytest.raises(BadInput, match=f"strength {word!r} is not a whole number"):
            catalogue.parse(f"# name: x\n# strength: {word}\n1,2,3,4\n5,6,7,8\n")


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


SHARED = catalogue.parse("""# name: 8/test-shared
# note: partition 0 is its own reflection, so its reflected sum reads the same two lookups
1,2,3,6
4,5,7,8

1,2,3,4
5,6,7,8
""")


def test_lookups_equal_the_table_bytes_read_by_the_documented_layout(tmp_path):
    """h of the kernels (shared lookups, lexicographic region 0, the blank's regions, cell
    maps, reflection) equals h computed here from the artifact's bytes: each group's entry
    found by reference.table_entry, md + 2 * entry summed per partition, on the board and
    on its reflection, maxed."""
    from reference import table_entry

    meta = build(SHARED, tmp_path, progress=False)
    h = load_heuristic(meta.path)
    assert h.H.lk_m.shape[0] == 6  # 8 group lookups, 6 distinct tile sets
    _, data = artifact.open_tables(meta.path)
    t = transpose(3)

    def sums(board):
        pos = {tile: c for c, tile in enumerate(board)}
        out = [0] * meta.partitions
        for g in meta.groups:
            cells = [g.cell_map[pos[tile]] for tile in g.tiles]
            e = table_entry(cells, g.cell_map[pos[0]], 3)
            byte = int(artifact.table_view(data, meta.tables[g.table])[e // 2])
            md = sum(abs(pos[tile] // 3 - tile // 3) + abs(pos[tile] % 3 - tile % 3)
                     for tile in g.tiles)
            out[g.partition] += md + 2 * ((byte >> 4 * (e % 2)) & 15)
        return out

    rng = np.random.default_rng(11)
    for _ in range(400):
        board = tuple(int(x) for x in rng.permutation(9))
        reflected = [0] * 9
        for c, tile in enumerate(board):
            reflected[t[c]] = t[tile]
        assert h.value(board) == max(sums(board) + sums(tuple(reflected)))


@pytest.mark.parametrize("name", ["8/full", "15/5-5-5"])
def test_served_bytes_are_what_a_loaded_artifact_holds(name, art_dir):
    """`pdbtool partitions`' memory figure: the artifact's tables plus the parity bits
    derived at load (pattern_db.parity_of), byte for byte."""
    path = art_dir / f"{name.replace('/', '-')}.h5"
    _, data = artifact.open_tables(path)
    cat = catalogue.get(name)
    assert cat.table_bytes() == data.nbytes
    assert cat.served_bytes() == data.nbytes + load_heuristic(path).H.parity.nbytes
