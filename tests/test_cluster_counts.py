"""The cluster search's live counters, without Ray: what the driver shows and checks the
budget against while the nodes search (cluster/run.py, SearchRun.heard and publish)."""

import numpy as np

from pdbtool.cluster.messages import NodeProgress
from pdbtool.cluster.run import SearchRun
from pdbtool.kernels.ida import EXPANDED, GENERATED
from pdbtool.search.control import SearchControl


class Worker:
    def __init__(self, lost=None):
        self.lost = lost


def a_run(workers) -> SearchRun:
    run = SearchRun.__new__(SearchRun)  # (its __init__ asks a cluster for its workers)
    run.control, run.workers = SearchControl(), workers
    run.serial = np.zeros_like(run.control.counters)
    run.live, run.lost_counts = {}, np.zeros(2, np.int64)
    return run


def test_a_restarted_actor_s_count_is_kept_and_the_shown_count_never_goes_back():
    """A node's actor restarted by Ray counts its job from 0 again: the count shown (and
    the budget checked against it) fell by all the dead process had counted."""
    run = a_run([Worker(), Worker()])
    run.serial[GENERATED], run.serial[EXPANDED] = 10, 4
    run.heard(0, NodeProgress(1000, 400, 2))
    run.heard(1, NodeProgress(500, 200, 2))
    run.publish(50)
    assert run.control.counters[GENERATED] == 1510 and run.control.counters[EXPANDED] == 604
    run.heard(0, NodeProgress(30, 12, 1))  # restarted: 30 since
    run.publish(50)
    assert run.control.counters[GENERATED] == 1540 and run.control.counters[EXPANDED] == 616
    run.heard(0, NodeProgress(80, 30, 1))  # and on from there
    run.publish(50)
    assert run.control.counters[GENERATED] == 1590


def test_a_restart_is_told_by_the_actor_s_process_too():
    """A restarted actor that had counted past its predecessor's figure by its first
    answer: its process tells it."""
    run = a_run([Worker()])
    run.heard(0, NodeProgress(100, 40, 2, 7))
    run.heard(0, NodeProgress(150, 60, 2, 8))  # another process: 150 of its own
    run.publish(50)
    assert run.control.counters[GENERATED] == 250 and run.control.counters[EXPANDED] == 100
    run.heard(0, NodeProgress(170, 70, 2, 8))
    run.publish(50)
    assert run.control.counters[GENERATED] == 270
