"""The cluster's tasks: the root expanded breadth-first to a frontier of subtrees
(``frontier``), searched one after the other by a node's worker (``search_subtrees``)
with the same kernel as the threads (Solver.dfs)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from pdbtool.kernels.ida import FOUND, INF, MAX_DEPTH, STOPPED
from pdbtool.search.control import FrontierNode, IterationOutcome, Tally, subtree_outcome

if TYPE_CHECKING:
    from pdbtool.search.solver import Solver

FRONTIER_PER_THREAD = 128  # subtrees per cluster CPU: enough for load balance, few
# enough that the per-task cost in Python (about 40 us) stays small against the search


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


def search_subtrees(solver: Solver, nodes, bound: int, budget: int, halt: np.ndarray,
                    counters: np.ndarray) -> IterationOutcome:
    """Search frontier nodes one after the other under ``bound`` (a cluster worker's
    batch): their outcomes combined. Nodes left when ``halt`` is set are skipped."""
    tally = Tally()
    out = np.zeros(MAX_DEPTH + 1, np.int64)
    for node in nodes:
        if halt[0]:
            tally.add(IterationOutcome(None, INF, 0, 0, STOPPED))
            break
        left = -1 if budget < 0 else max(0, budget - tally.generated)
        o = solver.dfs(solver.root(node.board), node.blank, node.automaton_state,
                       len(node.path), bound, left, halt, counters, out)
        tally.add(subtree_outcome(node, o, out))
        if o.status == FOUND:
            break
    return tally.outcome()
