"""Solving a board: validation, the goal isomorphism, the IDA* kernel, replay, statistics.

``Solver`` wraps one heuristic and answers ``solve(board, goal)`` with a ``SolveResult``
whose moves have been replayed to the goal before it is returned.
"""

from __future__ import annotations

import time

import numpy as np

from . import puzzle
from .errors import ArtifactError, BadInput, LimitReached, PdbError
from .heuristic_kernels import h_init
from .heuristics import Heuristic, board_arrays
from .move_pruning import pruning_fsm
from .result import SolveResult
from .search_kernel import BUDGET, FOUND, MAX_DEPTH, STOPPED, run_ida


def move_arrays(side: int):
    """The blank's moves from each cell, packed for the kernel: moves[c, i] for
    i < nmoves[c] is (destination << 2) | direction, directions 0-3 being U, D, L, R."""
    moves = np.zeros((side * side, 4), dtype=np.int64)
    nmoves = np.zeros(side * side, dtype=np.int64)
    for c in range(side * side):
        r, col = divmod(c, side)
        for k, (dr, dc) in enumerate(puzzle.BLANK_STEP.values()):
            if 0 <= r + dr < side and 0 <= col + dc < side:
                moves[c, nmoves[c]] = (((r + dr) * side + col + dc) << 2) | k
                nmoves[c] += 1
    return moves, nmoves


class Solver:
    """Optimal solver for one board size with one heuristic; safe to share across threads."""

    def __init__(self, heuristic: Heuristic, prune: bool = True):
        self.heuristic = heuristic
        self.side = heuristic.side
        self.moves, self.nmoves = move_arrays(self.side)
        self.prune = prune
        self.fsm = pruning_fsm(prune)

    def prepare(self, board, goal: str):
        """Validate and map to blank-first; raise BadInput / Unsolvable with a clear message."""
        board = puzzle.validate(board)
        puzzle.check_goal(goal)
        side = puzzle.side_of(board)
        if side != self.side:
            raise BadInput(
                f"board is {side}x{side} ({len(board)} tiles) but the heuristic "
                f"{self.heuristic.name!r} serves {self.side}x{self.side} boards")
        puzzle.require_solvable(board, goal)
        return board, puzzle.to_blank_first(board, goal)

    def root(self, board_bf):
        """Kernel arrays of a root: board, positions, heuristic state stack (row 0 set)."""
        board, pos = board_arrays(board_bf)
        hs = np.zeros((MAX_DEPTH + 2, self.heuristic.width), dtype=np.int32)
        h_init(self.heuristic.H, self.side, board, pos, hs[0])
        return board, pos, hs

    def solve(self, board, goal: str = "blank-last", budget: int | None = None,
              stop: np.ndarray | None = None, counters: np.ndarray | None = None) -> SolveResult:
        """Solve optimally. ``stop`` (int64[1]) cancels when set non-zero; ``counters``
        (int64[3]: generated, expanded, bound) are published while the search runs."""
        board, bf = self.prepare(board, goal)
        stop = np.zeros(1, np.int64) if stop is None else stop
        counters = np.zeros(3, np.int64) if counters is None else counters
        b, pos, hs = self.root(bf)
        path = np.zeros(MAX_DEPTH + 1, dtype=np.int64)
        bounds = np.zeros(MAX_DEPTH + 1, dtype=np.int64)
        nodes = np.zeros(MAX_DEPTH + 1, dtype=np.int64)
        h0 = int(hs[0, 0])
        t0 = time.perf_counter()
        status, length, expanded, generated, iters = run_ida(
            int(self.heuristic.H[0]), self.heuristic.H, self.side, b, pos, self.moves, self.nmoves, self.fsm, hs, bf.index(0),
            -1 if budget is None else int(budget), stop, counters, path, bounds, nodes)
        seconds = time.perf_counter() - t0
        iterations = [{"bound": int(bounds[i]), "nodes": int(nodes[i])} for i in range(min(iters, len(bounds)))]
        if status != FOUND:
            why = {STOPPED: "search stopped (cancelled or deadline)", BUDGET: "node budget exhausted"}
            raise LimitReached(
                f"{why.get(status, 'search limit reached')} after {generated:,} nodes "
                f"({seconds:.3f} s, last bound {iterations[-1]['bound'] if iterations else h0})")
        return self.result(board, goal, bf, path[:length], expanded, generated, seconds, h0, iterations)

    def result(self, board, goal, bf, blank_cells, expanded, generated, seconds, h0, iterations,
               threads=1) -> SolveResult:
        """Turn the blank's path into moves in the user's convention and replay them."""
        tiles, letters = puzzle.blank_path_to_moves(bf, [int(c) for c in blank_cells])
        moves, blank_moves = puzzle.moves_from_blank_first(tiles, letters, self.side, goal)
        if puzzle.apply_tile_moves(board, moves) != puzzle.goal_board(self.side, goal):
            raise PdbError("internal error: the solution found does not replay to the goal")
        if len(moves) < h0:
            # A real path shorter than h proves h overestimates: never answer from it.
            where = f" (artifact {self.heuristic.artifact})" if self.heuristic.artifact else ""
            raise ArtifactError(f"heuristic {self.heuristic.name}{where} overestimates: h = {h0} but a "
                                f"{len(moves)}-move solution exists; the table is damaged, run pdbtool verify")
        return SolveResult(
            board=board, goal=goal, side=self.side, length=len(moves), moves=moves,
            blank_moves=blank_moves, nodes_expanded=int(expanded), nodes_generated=int(generated),
            seconds=seconds, heuristic=self.heuristic.name, initial_h=h0, iterations=iterations,
            artifact=self.heuristic.artifact, threads=threads, note=self.heuristic.note)
