"""Solving a board: validation, the goal's frame, the IDA* kernel (the other algorithms
are in search/algorithms.py), replay, statistics.

``Solver`` wraps one heuristic. ``solve(board, goal)`` validates once and returns a
``SolveResult`` whose moves have been replayed to the goal; callers that validated already
(the daemon validates before it queues) keep the ``PreparedBoard`` and call ``search``.
A ``SearchControl`` is what the caller shares with a running search: the stop flag, the
live counters, the node budget and the timeout.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from pdbtool import limits, puzzle
from pdbtool.errors import ArtifactError, BadInput, PdbError
from pdbtool.geometry import blank_moves
from pdbtool.heuristics.move_pruning import pruning_fsm
from pdbtool.heuristics.table_free import Heuristic, board_arrays
from pdbtool.kernels import ida as search_kernel, tasks as task_kernel
from pdbtool.kernels.heuristic import ROW_H, broken_derivation, h_init
from pdbtool.kernels.ida import COUNTERS, FOUND, MAX_DEPTH, no_events
from pdbtool.kernels.ida_tt import no_extras
from pdbtool.result import SolveResult
from pdbtool.search import warm
from pdbtool.search.algorithms import MEMORY_BOUND, MIN_MAX_MEMORY, Algorithm, search_with
from pdbtool.search.best_first import BIDIR_BFS_MAX_CELLS
from pdbtool.search.control import (DfsOutcome, Iterations, PreparedBoard, Root, SearchControl,
                                    SplitNodes, Tasks, envelope, limit_reached)
from pdbtool.search.threads import resumed, search_parallel

IDA = Algorithm("ida")
_NO_CLAIMS = search_kernel.new_claims()  # never written: a search that shares its iteration with none
# The split nodes a Solver keeps (split_nodes): a list up to SPLIT_KEPT bytes (up to 16
# threads on the 15- and 24-puzzles: 2.4 and 3.4 MiB with the blank inside; 0.5 MiB at
# most on two threads), SPLIT_HELD bytes in all, the least recently used dropped first. A
# larger list is made for each search that needs it: threads far beyond the cores make it
# hundreds of MiB (MAX_THREADS: 210 MiB on the 15-puzzle, 332 MiB on the 24-puzzle), in
# 0.4 s, which a long-lived process (the daemon) held for good.
SPLIT_KEPT = 4 << 20
SPLIT_HELD = 32 << 20


def split_bytes(nodes: SplitNodes) -> int:
    """The bytes of a list of split nodes (its three arrays)."""
    return sum(a.nbytes for a in nodes)


class Solver:
    """Solver for one board size with one heuristic (IDA* by default, optimal); safe to share
    across threads."""

    def __init__(self, heuristic: Heuristic, prune: bool = True):
        self.heuristic = heuristic
        self.shape = heuristic.shape
        self.side = heuristic.side  # the kernels' s: the board's width
        self.moves, self.nmoves = blank_moves(self.shape)
        self.prune = prune
        self.fsm = pruning_fsm(prune)
        self._compiled: set[str] = set()  # parts ready: serial, shared (compile_kernels), and
        # the other algorithms by name (compile_algorithm)
        # the kernels only read them; (blank, split) -> the nodes, least recently used first
        self._split_nodes: OrderedDict[tuple[int, int], SplitNodes] = OrderedDict()
        self._split_lock = threading.Lock()

    def prepare(self, board, goal: str = "blank-last") -> PreparedBoard:
        """Validate and map into the image; raise BadInput / Unsolvable with a clear message."""
        if isinstance(board, np.ndarray):
            board = board.tolist()
        if not isinstance(board, (str, Sequence)):
            raise BadInput(f"a board is a sequence of whole numbers or its text, not "
                           f"{board!r:.60}")
        if isinstance(board, str):  # its tiles first: their count, not the text's length,
            board = puzzle.numbers(board)  # says whether it is this solver's shape
        elif board and isinstance(board[0], (list, tuple, np.ndarray)):  # rows, not "3 tiles"
            raise BadInput(f"a board is a sequence of whole numbers, its rows in one, not "
                           f"{board!r:.60}")
        if len(board) != self.shape.cells:  # said before the tiles are checked as a board
            n = len(board)
            side = math.isqrt(n)
            raise BadInput(
                f"board is {f'{side}x{side} ({n} tiles)' if side * side == n else f'{n} tiles'} "
                f"but the heuristic {self.heuristic.name!r} serves {self.shape} boards "
                f"({self.shape.cells} tiles)")
        board = puzzle.validate(board, self.shape)
        goal = puzzle.check_goal(goal, self.shape)
        frame = puzzle.frame(self.shape, goal)
        if frame.goal_blank != self.heuristic.goal_blank:
            raise BadInput(f"the heuristic {self.heuristic.name!r} measures towards a goal with the "
                           "blank in a corner; this goal's blank is not in a corner "
                           "(Solvers picks one that fits)")
        puzzle.require_solvable(board, goal, self.shape)
        return PreparedBoard(board, goal, frame.image(board), frame, self.shape)

    def solve(self, board, goal: str = "blank-last", control: SearchControl | None = None, *,
              threads: int = 1, algorithm=None) -> SolveResult:
        """Validate the board once and solve it (``search``, whose arguments it takes after
        the board and its goal)."""
        return self.search(self.prepare(board, goal), control, threads=threads, algorithm=algorithm)

    def search(self, prepared: PreparedBoard, control: SearchControl | None = None, *,
               threads: int = 1, algorithm=None, events: np.ndarray | None = None
               ) -> SolveResult:
        """Solve a prepared board on ``threads`` threads with ``algorithm`` (an
        algorithms.Algorithm, or its name; default IDA*). Raises LimitReached when the
        control's budget, timeout or stop flag (or A*'s memory) ends the search first.

        IDA* runs threads.search_parallel, on one thread too (its large iterations search
        their subtrees closest first). ``events`` (int32[cap, kernels.ida.EVENT_FIELDS],
        IDA* on one thread only): the serial kernel records the first ``cap`` nodes it
        generates into it, every iteration in depth-first order.

        A table file that changed (or is opened for writing during the search: its lease,
        trust.Pinned) raises trust.TableChanged instead of an answer."""
        if prepared.shape != self.shape or \
                prepared.frame.goal_blank != self.heuristic.goal_blank:  # another solver's:
            raise BadInput(  # the kernels would read past its arrays, or never reach its goal
                f"a board prepared by another solver (a {prepared.shape} board, goal "
                f"{prepared.goal}): this solver serves {self.shape} boards toward goals of its "
                "own; prepare the board with it")
        control = control or SearchControl()
        threads = limits.threads(threads)
        algorithm = self.check_search(algorithm, threads, control, events)
        keeper = control.checkpoint  # held (envelope holds it on), then read: another
        with keeper.holding() if keeper is not None else contextlib.nullcontext():  # search's
            if algorithm.name == "ida":  # or one running on it, refused before the compile
                resumed(self, prepared, keeper)
                self.compile_kernels(shared="shared" in self.kernel_parts(threads))
            else:
                self.compile_algorithm(algorithm, prepared.frame)
            with envelope(control, self.heuristic.source):
                if algorithm.name != "ida":
                    return search_with(self, prepared, control, algorithm=algorithm)
                if events is not None:
                    return self._search_serial(prepared, control, events)
                return search_parallel(self, prepared, control, threads=threads)

    def check_search(self, algorithm=None, threads: int = 1, control: SearchControl | None = None,
                     events: np.ndarray | None = None) -> Algorithm:
        """The Algorithm ``search`` would run (``algorithm``: one, its name or None, IDA*),
        or BadInput for a search it would refuse with these arguments; nothing compiled or
        searched (the CLI asks before it announces a compile)."""
        if control is not None and not isinstance(control, SearchControl):
            raise BadInput(f"control must be a SearchControl, not {control!r:.60}")
        algorithm = Algorithm(algorithm) if isinstance(algorithm, str) else algorithm or IDA
        if not isinstance(algorithm, Algorithm):
            raise BadInput(f"algorithm must be an Algorithm or its name, not {algorithm!r:.60}")
        algorithm.check_shape(self.shape)
        algorithm.check_memory()
        if threads > 1 and algorithm.name != "ida":
            raise BadInput(f"only ida searches on threads ({threads} asked for); "
                           f"{algorithm.name} runs on one thread")
        if events is not None and threads > 1:
            raise BadInput("a traced search runs on one thread")
        if events is not None and algorithm.name != "ida":
            raise BadInput(f"a traced search runs IDA*, not {algorithm.name}")
        keeper = control.checkpoint if control is not None else None  # (others: none saved)
        if keeper is not None and keeper.watching and (algorithm.name != "ida"
                                                       or events is not None):
            what = "a traced search" if events is not None else algorithm.name
            raise BadInput(f"a checkpoint saves an untraced IDA* search (on threads or a "
                           f"cluster), not {what}")
        return algorithm

    def kernel_parts(self, threads: int) -> tuple[str, ...]:
        """What an IDA* search on ``threads`` threads compiles before it starts (warm.PARTS):
        a board of 9 cells or fewer on one thread never shares an iteration (search_parallel),
        so its first solve does not wait for those kernels."""
        return warm.PARTS if threads > 1 or self.shape.cells > 9 else warm.PARTS[:1]

    def compile_kernels(self, shared: bool = True) -> None:
        """Compile IDA*'s kernels for this heuristic (or load them from numba's cache) before
        a search's clock and timeout start: the first search on a machine would otherwise
        count seconds of compilation as search time. ``shared``: also those of the
        iterations the threads share (kernels.tasks), which search_parallel compiles itself
        if a search that did not ask for them gets there. Once per solver and part."""
        if "serial" in self._compiled and ("shared" in self._compiled or not shared):
            return
        cls = type(self.heuristic.H)
        if "serial" not in self._compiled:
            child = warm.aside(cls)  # IDA*'s loop compiles beside, on the other core ...
            tiles = list(range(self.shape.cells))
            try:
                self._check_path(tiles, [])  # ... the heuristic and the answer's check here,
                warm.wait_root_check(child)  # then the root's check, once the child has
                goal = self.root(tiles)  # compiled h_update
            finally:
                warm.wait(child)
            self.iterate(goal, 0, SearchControl(budget=1))  # a node or so: the call is the point
            self._compiled.add("serial")
            warm.mark_ready(cls, "serial")
        if shared and "shared" not in self._compiled:
            goal = self.root(list(range(self.shape.cells)))
            tasks = Tasks.below(self, 0, 1)
            self.search_tasks(goal, 0, tasks, -1, 1,  # bound -1: the root
                              np.zeros(1, np.int64), np.zeros(COUNTERS, np.int64),
                              np.zeros(MAX_DEPTH + 1, np.int64), search_kernel.new_claims())
            tasks.reorder()  # the next iteration's order is a kernel too
            self._compiled.add("shared")
            warm.mark_ready(cls, "shared")

    def compile_algorithm(self, algorithm: Algorithm, frame: puzzle.Frame) -> None:
        """Compile (or load from numba's cache) what ``algorithm``, not IDA*, runs, by
        solving a board four moves from the goal of ``frame`` with it, before a search's clock
        and timeout start: the first search of an algorithm in a process counted seconds of
        compiling (or loading) as search time, and a daemon's --max-search-seconds could
        stop it for that. Once per solver and algorithm. With the least memory the
        algorithm takes (the same types, so the same kernels): large arrays freed here
        would raise glibc's mmap threshold, and a daemon then kept the next searches'
        arrays (65 MiB of two A* searches at 256M, docs/reliability.md); bidir on a board
        of BIDIR_BFS_MAX_CELLS or fewer (breadth-first from both ends, whose arrays are the
        board's states and need more than the least) with its own."""
        if algorithm.name in self._compiled:
            return
        # Four moves from the goal (the blank across, down, across, down): on a board at
        # the goal or a move or two from it, some kernels never run (frontier's halves).
        image = list(frame.image_goal)
        cols, rows = self.shape.cols, self.shape.rows
        blank = image.index(0)
        for step in range(4):
            row, col = divmod(blank, cols)
            to = (blank + (1 if col + 1 < cols else -1) if step % 2 == 0
                  else blank + (cols if row + 1 < rows else -cols))
            image[blank], image[to] = image[to], image[blank]
            blank = to
        near = PreparedBoard(frame.board(tuple(image)), "", tuple(image), frame, self.shape)
        least = dataclasses.replace(
            algorithm, tt_size=1 if algorithm.name == "ida-tt" else algorithm.tt_size,
            max_memory=(MIN_MAX_MEMORY if algorithm.name in MEMORY_BOUND and (
                algorithm.name != "bidir" or self.shape.cells > BIDIR_BFS_MAX_CELLS)
                else algorithm.max_memory))
        search_with(self, near, SearchControl(), algorithm=least)
        self._compiled.add(algorithm.name)
        warm.mark_ready(type(self.heuristic.H), algorithm.name)  # (the CLI's notice)

    def _search_serial(self, prepared: PreparedBoard, control: SearchControl,
                       events: np.ndarray | None) -> SolveResult:
        bf = prepared.image
        root = self.root(bf)
        t0 = time.perf_counter()
        run = self.iterate(root, bf.index(0), control, events=events)
        seconds = time.perf_counter() - t0
        if run.status != FOUND:
            raise limit_reached(run.status, run.generated, seconds, control,
                                last_bound=run.iterations[-1]["bound"] if run.iterations
                                else root.h)
        return self.result(prepared, run.path, run.expanded, run.generated, seconds, root.h,
                           run.iterations, peak_memory=self.search_memory(root))

    @staticmethod
    def search_memory(root: Root) -> int:
        """Bytes one depth-first search holds: the root's heuristic rows and its stacks."""
        return root.rows.nbytes + 4 * 8 * (MAX_DEPTH + 1)

    def iterate(self, root: Root, blank: int, control: SearchControl, hand_off: int = -1,
                events: np.ndarray | None = None) -> Iterations:
        """IDA*'s iterations from ``root`` on this thread, in one kernel call: up to the
        goal or a limit of the control, or (``hand_off`` >= 0) to the end of the first
        iteration that generates at least ``hand_off`` nodes (kernels.ida.ida)."""
        path = np.zeros(MAX_DEPTH + 1, dtype=np.int64)
        bounds = np.zeros(MAX_DEPTH + 1, dtype=np.int64)
        nodes = np.zeros(MAX_DEPTH + 1, dtype=np.int64)
        status, length, expanded, generated, iters, _, _, next_bound = search_kernel.ida(
            self.heuristic.H, self.side, root.board, root.pos, self.moves, self.nmoves,
            self.fsm, root.rows, blank, control.kernel_budget, control.stop, control.counters,
            path, bounds, nodes, no_events() if events is None else events, no_extras(),
            hand_off)
        iterations = [{"bound": int(bounds[i]), "nodes": int(nodes[i])}
                      for i in range(min(iters, len(bounds)))]
        return Iterations(int(status), path[:length], int(expanded), int(generated),
                          iterations, int(next_bound))

    def root(self, board_bf, depth: int = MAX_DEPTH) -> Root:
        """Kernel arrays of a root: board, positions, heuristic state stack (row 0 set)."""
        board, pos, rows = self._fresh_root(board_bf, depth)
        H = self.heuristic.H
        if broken_derivation(H, self.side, board, pos, rows[0], self.moves, self.nmoves) >= 0:
            # a search below would inherit a wrong entry at every node (moved_entry)
            raise self._damaged("its entries at the start and at a neighbour of it are "
                                "more than a move apart")
        return Root(board, pos, rows)

    def _fresh_root(self, board_bf, depth: int) -> Root:
        """A root without root's check of the derivation (the answer's check, which
        computes every h along the path from scratch, needs none)."""
        board, pos = board_arrays(board_bf)
        rows = np.zeros((depth + 2, self.heuristic.width), dtype=np.int32)
        h_init(self.heuristic.H, self.side, board, pos, rows[0])
        return Root(board, pos, rows)

    def _damaged(self, evidence: str) -> ArtifactError:
        """The error for a heuristic shown wrong during a search (a table damaged behind
        valid checksums): never answer from it."""
        where = f" (artifact {self.heuristic.artifact})" if self.heuristic.artifact else ""
        return ArtifactError(f"heuristic {self.heuristic.name}{where} is wrong: {evidence}; "
                             "the table is damaged, run pdbtool verify")

    def dfs(self, root: Root, blank: int, automaton_state: int, g0: int, bound: int,
            budget: int, stop: np.ndarray, counters: np.ndarray, path: np.ndarray) -> DfsOutcome:
        """One bounded depth-first search below ``root`` (a cluster's task): f = g0 + g + h
        <= bound; on FOUND, path[:length] holds the blank's cells (kernels.ida.dfs)."""
        return DfsOutcome(*search_kernel.dfs(
            self.heuristic.H, self.side, root.board, root.pos,
            self.moves, self.nmoves, self.fsm, root.rows, blank, automaton_state, g0, bound,
            budget, stop, counters, path, no_extras(), _NO_CLAIMS))

    def split_nodes(self, blank: int, split: int) -> SplitNodes:
        """The nodes at depth ``split`` below a root with the blank at ``blank``, in the
        search's depth-first order (kernels.tasks.split_nodes); made once per solver (a
        short search would otherwise spend a tenth of its time listing them), up to
        SPLIT_KEPT bytes a list and SPLIT_HELD in all (the least recently used dropped)."""
        key = (blank, split)
        with self._split_lock:
            nodes = self._split_nodes.get(key)
            if nodes is not None:
                self._split_nodes.move_to_end(key)
                return nodes
        nodes = self._list_split_nodes(blank, split)
        if split_bytes(nodes) <= SPLIT_KEPT:
            with self._split_lock:
                self._split_nodes[key] = nodes  # (a list another thread made meanwhile: alike)
                held = sum(map(split_bytes, self._split_nodes.values()))
                while held > SPLIT_HELD:
                    held -= split_bytes(self._split_nodes.popitem(last=False)[1])
        return nodes

    def split_bytes_kept(self) -> int:
        """The bytes of the split nodes this solver keeps (split_nodes)."""
        with self._split_lock:
            return sum(map(split_bytes, self._split_nodes.values()))

    def _list_split_nodes(self, blank: int, split: int) -> SplitNodes:
        args = (self.moves, self.nmoves, self.fsm, blank, split)
        n = task_kernel.split_nodes(*args, np.zeros((0, split), np.int64),
                                    np.zeros((0, split), np.int64), np.zeros(0, np.int64))
        nodes = SplitNodes(np.zeros((n, split), np.int64), np.zeros((n, split), np.int64),
                           np.zeros(n, np.int64))
        task_kernel.split_nodes(*args, *nodes)
        return nodes

    def search_tasks(self, root: Root, blank: int, tasks: Tasks, bound: int, budget: int,
                     stop: np.ndarray, counters: np.ndarray, path: np.ndarray,
                     claims: np.ndarray) -> DfsOutcome:
        """This thread's share of an iteration: the tasks of ``tasks.order`` it claims from
        ``claims`` (kernels.ida.new_claims), each searched under ``bound``
        (kernels.tasks.search_tasks); on FOUND, path[:length] holds the blank's cells from
        the root."""
        if claims.shape != (search_kernel.CLAIMS,):  # the kernel reads it unchecked
            raise ValueError(f"claims of shape {claims.shape}: make them with new_claims()")
        n = tasks.nodes
        return DfsOutcome(*task_kernel.search_tasks(
            self.heuristic.H, self.side, root.board, root.pos, self.moves, self.nmoves,
            self.fsm, root.rows, blank, n.cells, n.ends, n.states, tasks.order, bound,
            budget, stop, counters, path, claims, tasks.closest, tasks.results, no_extras()))

    def _check_path(self, board_bf, blank_cells) -> tuple[int, list[int]]:
        """kernels.ida.path_violation along the solution found (microseconds), and the
        h of each board on it (the kernel leaves them in the rows it walked)."""
        root = self._fresh_root(board_bf, len(blank_cells))
        path = np.asarray(blank_cells, dtype=np.int64)
        step = int(search_kernel.path_violation(self.heuristic.H, self.side, root.board, root.pos,
                                                root.rows, path, len(path),
                                                self.heuristic.consistent))
        return step, [int(h) for h in root.rows[:len(path) + 1, ROW_H]]

    def result(self, prepared: PreparedBoard, blank_cells, expanded, generated, seconds, h0,
               iterations, threads=1, *, algorithm="ida", optimal=True, bound=None,
               peak_memory=0, heuristic=None) -> SolveResult:
        """Turn the blank's path in the image into moves on the user's board and replay
        them; check the heuristic along it (see _check_path). ``h0`` None: the search used
        no heuristic (``heuristic`` "none"); the result's initial_h is then the solver's
        heuristic's h of the start, as its path_h are, and the heuristic's note (a fallback
        said) is left out."""
        board, goal, bf, frame = prepared.board, prepared.goal, prepared.image, prepared.frame
        moves, blank_moves_ = puzzle.blank_path_to_moves(board, frame.user_cells(blank_cells),
                                                         self.shape)
        if puzzle.apply_tile_moves(board, moves, self.shape) != frame.target:
            raise PdbError("internal error: the solution found does not replay to the goal")
        step, path_h = self._check_path(bf, blank_cells)
        if step >= 0:
            # h above the moves left on a real path, or a jump a consistent h cannot make
            raise self._damaged(f"it overestimates at step {step} of a {len(moves)}-move "
                                "solution")
        return SolveResult(
            board=board, goal=goal, shape=self.shape, length=len(moves), moves=moves,
            blank_moves=blank_moves_, nodes_expanded=int(expanded), nodes_generated=int(generated),
            seconds=seconds, heuristic=heuristic or self.heuristic.name,
            initial_h=path_h[0] if h0 is None else h0,
            iterations=iterations, artifact=self.heuristic.artifact, threads=threads,
            note="" if h0 is None else self.heuristic.note, path_h=path_h, algorithm=algorithm,
            optimal=optimal, bound=bound, peak_memory_bytes=int(peak_memory))
