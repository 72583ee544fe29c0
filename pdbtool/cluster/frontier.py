"""The cluster's tasks: the root expanded breadth-first to a frontier of subtrees
(``frontier``), each searched on a node's worker (``search_subtree``) with the same
kernel as the threads (Solver.dfs)."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from pdbtool.kernels.ida import INF, MAX_DEPTH, STOPPED
from pdbtool.search.control import FrontierNode, IterationOutcome, subtree_outcome

if TYPE_CHECKING:
    from pdbtool.search.solver import Solver

FRONTIER_PER_CPU = 128  # subtrees per cluster CPU: enough for load balance, few
# enough that the per-task cost in Python (about 40 us) stays small against the search
MAX_FRONTIER = FRONTIER_PER_CPU * 16_384  # a cluster of 16,384 CPUs: a checkpoint
# naming a larger frontier is damaged (the driver lists it in Python, without a stop)


SERIAL_BELOW = 1_000_000  # on a cluster, after an iteration this small the next runs on
# the driver: handing out subtrees would cost more than it saves


def frontier(solver: Solver, root, target: int) -> tuple[list[FrontierNode], tuple | None]:
    """Breadth-first expansion under the pruning automaton, until ``target`` nodes.

    Returns (nodes, goal path or None). Of several paths to one board only the first in
    breadth-first (lexicographic) order is kept: the smallest of a board's paths is the
    one the automaton never prunes.
    """
    level = [FrontierNode(tuple(root), root.index(0), 0, ())]
    while len(level) < target and len(level[0].path) < MAX_DEPTH:
        seen, nxt = set(), []
        for node in level:
            b = node.blank
            for i in range(solver.nmoves[b]):
                move = int(solver.moves[b, i])
                c, nstate = move >> 2, int(solver.fsm[node.automaton_state, move & 3])
                if nstate < 0:
                    continue
                cells = list(node.board)
                cells[b], cells[c] = cells[c], 0
                key = tuple(cells)
                if key in seen:
                    continue
                seen.add(key)
                nxt.append(FrontierNode(key, c, nstate, node.path + (c,)))
        for node in nxt:
            if solver.heuristic.value(node.board) == 0:
                return [], node.path
        level = nxt
    return level, None


class SubtreeSearch(NamedTuple):
    """One frontier node's subtree searched under a bound."""

    outcome: IterationOutcome
    closest: int  # the smallest h expanded in it (INF: its root was over the bound, or it
    # was skipped, halted): the driver searches the next iteration's subtrees in this order
    # (closest first)


def search_subtree(solver: Solver, node: FrontierNode, bound: int, budget: int,
                   halt: np.ndarray, counters: np.ndarray) -> SubtreeSearch:
    """Search a frontier node's subtree under ``bound`` (skipped if ``halt`` is set)."""
    if halt[0]:
        return SubtreeSearch(IterationOutcome(None, INF, 0, 0, STOPPED), INF)
    out = np.zeros(MAX_DEPTH + 1, np.int64)
    o = solver.dfs(solver.root(node.board), node.blank, node.automaton_state, len(node.path),
                   bound, budget, halt, counters, out)
    return SubtreeSearch(subtree_outcome(node, o, out), o.closest)
