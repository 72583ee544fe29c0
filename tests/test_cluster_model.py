"""The cluster's wall-time model (scripts/cluster_model.py, used by the cluster benchmark)
on toy cases worked out by hand."""

import sys

import pytest

from reference import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
from cluster_model import IterationTasks, SearchTasks, iteration_seconds, merge, search_seconds  # noqa: E402


def test_an_iteration_ends_with_its_last_subtree():
    tasks = IterationTasks([3, 1, 1, 1])
    assert iteration_seconds(tasks, 1) == 6
    assert iteration_seconds(tasks, 2) == 3   # one worker 3, the other 1+1+1
    assert iteration_seconds(tasks, 8) == 3   # more workers than subtrees: the biggest


def test_a_straggler_started_last_keeps_one_worker_busy():
    tasks = IterationTasks([1, 1, 1, 1, 4])
    assert iteration_seconds(tasks, 2) == 6   # 8 s of work, but 1+1+4 on one worker
    assert iteration_seconds(IterationTasks([4, 1, 1, 1, 1]), 2) == 4  # big one first: no wait


def test_the_goal_ends_the_iteration_when_its_subtree_reaches_it():
    assert iteration_seconds(IterationTasks([3, 1, 1, 0.5, 9], goal=3), 2) == 2.5  # 1+1+0.5
    assert iteration_seconds(IterationTasks([3, 1, 1, 0.5, 9], goal=3), 1) == 5.5
    assert iteration_seconds(IterationTasks([5, 2], goal=1), 2) == 2  # while 5 still runs


def test_overhead_latency_and_the_serial_part_add_up():
    search = SearchTasks(0.5, [IterationTasks([1, 1]), IterationTasks([2, 2, 1], goal=2)])
    assert search.work() == 7.5
    assert search_seconds(search, 2) == 0.5 + 1 + 3
    assert search_seconds(search, 2, overhead=0.1, latency=0.2) == pytest.approx(0.5 + 0.2 + 1.1 + 0.2 + 3.2)
    assert search_seconds(search.scaled(2), 2) == 0.5 + 2 + 6


def test_merge_sums_fine_subtrees_and_stops_at_the_goal():
    fine = IterationTasks([1, 2, 3, 4, 5, 6], goal=3)
    coarse = merge(fine, [0, 0, 1, 1, 1, 2])
    assert coarse == IterationTasks([3, 7, 6], 1)  # 3 + 4: the 5 after the goal never runs
    assert merge(IterationTasks([1, 2, 3]), [0, 2, 2]) == IterationTasks([1, 0, 5], None)
    with pytest.raises(ValueError):
        merge(IterationTasks([1, 2]), [1, 0])


def test_workers_must_be_positive():
    with pytest.raises(ValueError):
        iteration_seconds(IterationTasks([1]), 0)
