"""The wall time of a cluster search, simulated from recorded subtree times.

A cluster search (pdbtool.cluster.driver) runs each big IDA* iteration as subtree tasks handed
out in frontier order; the iteration ends when the last subtree is done (every overshoot
is needed for the next bound), or, at the bound that finds the goal, when the subtree
holding the goal reaches it. How long that takes on W workers depends on the sizes of the
subtrees, not only on their sum: one big subtree started late keeps one worker busy while
the others idle (a straggler). This module replays recorded subtree times on W workers to
predict the wall time for a cluster larger than the one the times were recorded on.

The model (the assumptions scripts/bench_cluster.py states with its figures):

* W identical workers take the subtrees in frontier order, each the next one as soon as
  it is free (list scheduling; the driver's batches go to the least loaded node, whose
  threads take them in order: the same greedy order, up to one batch of look-ahead);
* a subtree takes the same time on any worker as when it was recorded, plus ``overhead``
  for its dispatch;
* an iteration starts when the one before has ended, after ``latency`` (the driver's
  round trip: collect, choose the next bound, send);
* the small iterations the driver runs itself (``serial``) take their recorded time.
"""

from __future__ import annotations

import heapq
from typing import NamedTuple, Sequence


class IterationTasks(NamedTuple):
    """One parallel iteration: each subtree's time on one worker, in frontier order."""

    seconds: Sequence[float]
    goal: int | None = None  # the subtree that reaches the goal (its time: to the goal)


class SearchTasks(NamedTuple):
    """One board's search as recorded: the driver's serial time, then the iterations."""

    serial: float
    iterations: Sequence[IterationTasks]

    def work(self) -> float:
        """Seconds of one worker: the serial part and every subtree."""
        return self.serial + sum(sum(it.seconds) for it in self.iterations)

    def scaled(self, factor: float) -> SearchTasks:
        """The same shape with every subtree ``factor`` times as long (a harder board of
        the same kind); the serial part, which is small by construction, is kept."""
        return SearchTasks(self.serial, [IterationTasks([t * factor for t in it.seconds], it.goal)
                                         for it in self.iterations])


def iteration_seconds(tasks: IterationTasks, workers: int, overhead: float = 0.0) -> float:
    """Wall time of one iteration on ``workers`` workers (list scheduling in order): the
    time the last subtree ends or, with a goal, the time its subtree reaches it (the
    others are halted then; subtrees after it that had not started never run)."""
    if workers < 1:
        raise ValueError(f"workers must be at least 1, not {workers}")
    free = [0.0] * workers
    end = 0.0
    for k, t in enumerate(tasks.seconds):
        start = heapq.heappop(free)
        finish = start + overhead + t
        if k == tasks.goal:
            return finish
        end = max(end, finish)
        heapq.heappush(free, finish)
    return end


def search_seconds(search: SearchTasks, workers: int, overhead: float = 0.0,
                   latency: float = 0.0) -> float:
    """Wall time of one board's search on ``workers`` workers: the serial part, then each
    iteration after the driver's ``latency``."""
    return search.serial + sum(latency + iteration_seconds(it, workers, overhead)
                               for it in search.iterations)


def merge(tasks: IterationTasks, groups: Sequence[int]) -> IterationTasks:
    """The iteration with coarser subtrees: fine subtree k belongs to coarse subtree
    ``groups[k]`` (non-decreasing: a coarse subtree's descendants are consecutive in
    frontier order). A coarse subtree's time is the sum of its fine ones'; the goal's
    coarse subtree ends at the goal, so its fine subtrees after the goal's are dropped."""
    if len(groups) != len(tasks.seconds):
        raise ValueError(f"{len(groups)} groups for {len(tasks.seconds)} subtrees")
    out: list[float] = []
    goal = None
    for k, (t, g) in enumerate(zip(tasks.seconds, groups)):
        if goal is not None and g == goal:
            continue  # after the goal, inside its coarse subtree
        if out and g < len(out) - 1 or g < 0:
            raise ValueError("groups must be non-decreasing and non-negative")
        while len(out) <= g:
            out.append(0.0)
        out[g] += t
        if k == tasks.goal:
            goal = g
    return IterationTasks(out, goal)
