import itertools
import random
from math import factorial

import numpy as np

from pdbtool.kernels.ranking import (binomials, lex_next, lex_rank_of, lex_weights, order_next,
                                     order_table, order_weights, placement, rank_of,
                                     round_trip_errors, table_size, unrank_of)


def errors(n, m, start, stop, step):
    return round_trip_errors(n, m, binomials(n, m), order_weights(m), lex_weights(n, m),
                             start, stop, step)


def test_rank_is_a_bijection_on_small_groups():
    for n, m in ((4, 2), (6, 3), (9, 4), (9, 8)):
        ranks = sorted(rank_of(p, n) for p in itertools.permutations(range(n), m))
        assert ranks == list(range(table_size(n, m)))


def test_lex_rank_is_the_lexicographic_order():
    """itertools.permutations lists placements in lexicographic order: the lexicographic
    rank of the i-th is i (the table's main block is in this order)."""
    for n, m in ((4, 2), (6, 3), (9, 4), (9, 8), (16, 3)):
        for i, p in enumerate(itertools.permutations(range(n), m)):
            assert lex_rank_of(p, n) == i


def test_stepping_visits_the_ranks_in_order():
    """lex_next walks the lexicographic order and order_next a map's orders (the builder's
    compact steps with them instead of unranking): each step lands on the next rank."""
    for n, m in ((4, 2), (6, 3), (9, 4), (9, 9)):
        pos = np.arange(m, dtype=np.int64)
        for p in itertools.permutations(range(n), m):
            assert pos.tolist() == list(p)
            lex_next(pos, n)
        for first in (0, table_size(n, m) // 2 // factorial(m) * factorial(m)):
            pos = np.array(unrank_of(first, n, m), np.int64)
            for o in range(factorial(m)):
                assert pos.tolist() == unrank_of(first + o, n, m)
                order_next(pos)


def test_the_order_table_lists_the_permutations_in_lexicographic_order():
    """Row k is the permutation of Lehmer code k (made without a Python tuple a row)."""
    import itertools
    for m in range(1, 9):
        table = order_table(m)
        assert table.dtype == np.uint8
        assert table.tolist() == [list(p) for p in itertools.permutations(range(m))], m


def test_placement_of_a_sweep_is_unrank():
    """The builder's sweeps unrank with ranking.placement (a table of the orders, the map's
    cells kept while the map stays): every rank of a table, and a sparse sweep, as unrank."""
    for n, m, step in ((6, 3, 1), (9, 4, 1), (16, 5, 1), (16, 8, 997), (25, 6, 100_003)):
        binom, orders = binomials(n, m), order_table(m)
        cells, pos = np.empty(m, np.int64), np.empty(m, np.int64)
        last, occupied = -1, np.int64(0)
        for r in range(0, table_size(n, m), step):
            last, occupied = placement(r, last, occupied, n, m, binom, factorial(m), orders,
                                       cells, pos)
            assert pos.tolist() == unrank_of(r, n, m)
            assert occupied == sum(1 << c for c in pos.tolist())


def test_round_trip_exhaustive_medium():
    assert errors(16, 5, 0, table_size(16, 5), 1) == 0
    assert errors(25, 4, 0, table_size(25, 4), 1) == 0


def test_round_trip_sampled_real_groups():
    for n, m in ((16, 7), (16, 8), (25, 6)):
        size = table_size(n, m)
        assert errors(n, m, 0, size, size // 100_003) == 0
        rng = random.Random(m)
        for _ in range(2000):
            p = rng.sample(range(n), m)
            assert unrank_of(rank_of(p, n), n, m) == p


def test_sizes():
    assert table_size(16, 7) == 57_657_600
    assert table_size(16, 8) == 518_918_400
    assert table_size(25, 6) == 127_512_000
    # The last placement: the highest set of cells, each tile on the highest cell left.
    assert rank_of(list(range(8, 0, -1)), 9) == table_size(9, 8) - 1


def test_split_map_rank_equals_the_colex_rank():
    """The two-table map rank of the lookups agrees with map_rank on every set of at most
    m cells (3x3, 4x4) and on sampled sets of the 5x5 board."""
    from pdbtool.kernels.ranking import colex_tables, map_rank, map_rank_split
    for n, m in ((9, 8), (16, 8)):
        binom = binomials(n, m)
        lo, hi = colex_tables(n, m)
        for k in range(m + 1):
            for cells in itertools.combinations(range(n), k):
                mask = sum(1 << c for c in cells)
                assert map_rank_split(mask, lo, hi) == map_rank(mask, binom), (n, cells)
    rng = random.Random(7)
    binom = binomials(25, 7)
    lo, hi = colex_tables(25, 7)
    for _ in range(20000):
        mask = sum(1 << c for c in rng.sample(range(25), rng.randint(0, 7)))
        assert map_rank_split(mask, lo, hi) == map_rank(mask, binom)
