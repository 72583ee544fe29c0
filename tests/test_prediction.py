"""Korf-Reid-Edelkamp prediction: the brute-force tree counts, the value distribution, the
formula (with h = 0 everywhere it is the whole tree, which IDA* then searches)."""

import numpy as np
import pytest

from pdbtool.errors import BadInput
from pdbtool.heuristics.prediction import iteration_counts, predict, tree_sizes, value_distribution
from pdbtool.kernels.ida import MAX_DEPTH
from pdbtool.tables import artifact


def test_tree_sizes_with_parent_pruning():
    # Blank in the centre of 3x3: 4 children, each on a side cell with 2 moves left.
    assert list(tree_sizes(3, 3, 4, prune=False)[:3]) == [1, 4, 8]
    assert list(tree_sizes(4, 2, 0, prune=False)) == [1, 2, 4]
    pruned, plain = tree_sizes(4, 20, 5), tree_sizes(4, 20, 5, prune=False)
    assert (pruned <= plain).all() and pruned[-1] < plain[-1]


def test_formula_with_a_zero_heuristic_is_the_whole_tree():
    N = tree_sizes(4, 11, 0)
    rows = iteration_counts(N, np.array([1.0]), 10)
    for d, r in enumerate(rows):
        assert r["expanded"] == N[:d + 1].sum() and r["generated"] == N[1:d + 2].sum()


def test_prediction_stops_at_the_search_depth_limit(art_dir):
    meta = artifact.read_meta(art_dir / "8-full.h5")
    assert len(predict(meta, MAX_DEPTH)) == MAX_DEPTH + 1
    with pytest.raises(BadInput, match=f"depth {MAX_DEPTH + 1} out of range"):
        predict(meta, MAX_DEPTH + 1)  # its counts would overflow a float near 1,000


def test_prediction_from_an_artifact(art_dir):
    meta = artifact.read_meta(art_dir / "15-5-5-5.h5")
    p = value_distribution(meta)
    assert abs(p.sum() - 1) < 1e-9 and p[0] > 0
    rows = predict(meta, 50, blank=0)
    N = tree_sizes(4, 51, 0)
    assert all(a["generated"] <= b["generated"] for a, b in zip(rows, rows[1:]))
    assert all(r["generated"] <= N[1:r["bound"] + 2].sum() for r in rows)
    assert rows[10]["generated"] < 1 < rows[50]["generated"]
