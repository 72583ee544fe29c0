"""The best-first searches that bound or share out A*'s memory: SMA* (``sma``), frontier
search (``frontier``) and bidirectional search (``bidir``). algorithms.search_with calls
``search(solver, prepared, algorithm, control)`` with the algorithm's ``max_memory`` set;
each runs its kernel (kernels/sma.py, frontier.py, bidir.py) and hands the blank's path
to Solver.result, which replays and checks it like every other answer.
"""

from __future__ import annotations

import math
import time

import numpy as np

from pdbtool.errors import LimitReached, PdbError
from pdbtool.geometry import neighbour_arrays
from pdbtool.heuristics.table_free import board_arrays, table_free
from pdbtool.kernels.heuristic import PER_TILE, h_init, heuristic_arrays
from pdbtool.kernels.ida import FOUND, MAX_DEPTH
from pdbtool.kernels.state_key import board_of, key_of, layout
from pdbtool.limits import hashed_states, memory_tries
from pdbtool.search.control import limit_reached

BIDIR_BFS_MAX_CELLS = 9  # breadth-first from both ends up to 3x3 (or 2x4); MM above


def search(solver, prepared, algorithm, control):
    run = {"sma": _sma, "frontier": _frontier, "bidir": _bidir}[algorithm.name]
    return run(solver, prepared, algorithm, control)


def _memory(text: str) -> LimitReached:
    return LimitReached(text, limit="memory")



def _mib(x: int) -> str:
    return f"{x / 2**20:,.4g} MiB" if x >= 1 << 20 else f"{x:,} bytes"


def _key(board):
    bits, per = layout(len(board))
    k0, k1 = key_of(np.asarray(board, np.int64), len(board), bits, per)
    return np.int64(k0), np.int64(k1)


def manhattan_to(target, cols: int):
    """Heuristic arrays of the Manhattan distance towards any board ``target`` of ``cols``
    columns (PER_TILE)."""
    n = len(target)
    where = np.empty(n, np.int64)
    where[np.asarray(target, np.int64)] = np.arange(n)
    c = np.arange(n)
    tab = np.abs(c // cols - where[:, None] // cols) + np.abs(c % cols - where[:, None] % cols)
    tab[0, :] = 0
    return heuristic_arrays(PER_TILE, tile_tab=tab.astype(np.int32))


def _rows(H, width, side, board):
    b, pos = board_arrays(board)
    rows = np.zeros((2, width), np.int32)
    h_init(H, side, b, pos, rows[0])
    return b, pos, rows


# -- SMA* --------------------------------------------------------------------------------

def _sma(solver, prepared, algorithm, control):
    from pdbtool.kernels.sma import BYTES_PER_NODE, MEMORY, sma

    side = solver.side
    bits, per = layout(solver.shape.cells)
    cap = int(max(2, min(algorithm.max_memory // BYTES_PER_NODE, (1 << 31) - 2)))
    root = solver.root(prepared.image, 1)
    h0 = root.h  # the kernel reuses the root's rows as it goes
    t0, t1 = _key(prepared.frame.image_goal)
    z = np.zeros
    keys, gs, lb, st, par = z((cap, 2), np.int64), z(cap, np.uint8), z(cap, np.int32), \
        z(cap, np.int32), z(cap, np.int32)
    slot, nin, key = z((cap, 4), np.int32), z(cap, np.uint8), z(cap, np.int64)
    ohp, opos, lhp, lpos, free = (z(cap, np.int32) for _ in range(5))
    out = z(MAX_DEPTH + 1, np.int64)
    start = time.perf_counter()
    status, length, expanded, generated, dropped, regenerated, peak = sma(
        solver.heuristic.H, side, root.board, root.pos, solver.moves, solver.nmoves, solver.fsm,
        root.rows, bits, per, t0, t1, keys, gs, lb, st, par, slot, nin, key, ohp, opos, lhp,
        lpos, free, control.kernel_budget, control.stop, control.counters, out)
    seconds = time.perf_counter() - start
    if status == MEMORY:
        raise _memory(f"sma: the optimal path does not fit in the memory limit of "
                      f"{_mib(algorithm.max_memory)} ({cap:,} nodes of {BYTES_PER_NODE} bytes; "
                      f"a path of d moves needs d + 1) after {int(expanded):,} expansions, "
                      f"{int(dropped):,} states dropped, {seconds:.3f} s; raise the memory limit")
    if status != FOUND:
        raise limit_reached(status, generated, seconds, control, name="sma")
    r = solver.result(prepared, out[:length], expanded, generated, seconds, h0, [],
                      algorithm="sma", peak_memory=int(peak) * BYTES_PER_NODE)
    r.dropped, r.reexpanded = int(dropped), int(regenerated)
    r.add_note(f"held {int(peak):,} of {cap:,} nodes; dropped {int(dropped):,} "
               f"states, {int(regenerated):,} re-expansions")
    return r


# -- frontier search -----------------------------------------------------------------------

class _Frontier:
    """Frontier A* runs and their divide-and-conquer path: a run finds the goal's g and its
    middle node; start -> middle is searched again towards the middle (Manhattan distance
    to it), middle -> goal with the same heuristic, until a half is one move."""

    def __init__(self, solver, control, max_bytes):
        from pdbtool.kernels.frontier import BYTES_PER_NODE, HASH_BYTES
        self.solver, self.control, self.side = solver, control, solver.side
        self.bits, self.per = layout(solver.shape.cells)
        self.max_cap, self.max_slots = hashed_states(
            max_bytes, BYTES_PER_NODE - HASH_BYTES,
            min((1 << 31) - 2, math.factorial(solver.shape.cells) // 2))
        self.max_bytes = max_bytes
        self.expanded = self.generated = self.runs = self.peak = 0
        self.top_expanded = self.top_generated = 0

    def run(self, H, width, start, target, cap):
        """(goal's g, middle's g, middle board) of frontier A* from start to target (no
        middle board when the target is a move away or the start itself)."""
        from pdbtool.kernels.frontier import MEMORY, frontier

        n = len(target)
        t0, t1 = _key(target)
        cap = min(cap, self.max_cap)
        while True:
            board, pos, rows = _rows(H, width, self.side, start)
            z = np.zeros
            keys, mid = z((cap, 2), np.int64), z((cap, 2), np.int64)
            gs, hs, used, midg = (z(cap, np.uint8) for _ in range(4))
            free, heap = z(cap, np.int32), z(2 * cap, np.int64)
            table = z(min(1 << (2 * cap - 1).bit_length(), self.max_slots), np.int32)
            mid_out = z(2, np.int64)
            budget = self.control.kernel_budget
            if budget >= 0:
                budget = max(0, budget - self.generated)
            status, g, midg_, expanded, generated, held, hpeak = frontier(
                H, self.side, board, pos, self.solver.moves, self.solver.nmoves, rows, self.bits,
                self.per, t0, t1, keys, gs, hs, used, mid, midg, free, heap, table, budget,
                self.control.stop, self.control.counters, mid_out)
            self.expanded += int(expanded)
            self.generated += int(generated)
            self.runs += 1
            from pdbtool.kernels.frontier import BYTES_PER_NODE
            self.peak = max(self.peak, int(held) * (BYTES_PER_NODE - 16) + int(hpeak) * 8
                            + min(table.nbytes, 8 * int(held)))
            if status == MEMORY and cap < self.max_cap:
                cap = min(2 * cap, self.max_cap)  # again, with twice the room: this run's
                del keys, mid, gs, hs, used, midg, free, heap, table  # arrays go first
                continue
            if status == MEMORY:
                raise _memory(f"frontier: memory limit of {_mib(self.max_bytes)} reached holding "
                              f"{int(held):,} open states after {self.expanded:,} expansions; "
                              "raise the memory limit or use ida")
            if status != FOUND:
                raise limit_reached(status, self.generated, time.perf_counter() - self.t_start,
                                    self.control, name="frontier")
            if g < 2:  # no node strictly inside the path: the kernel set no middle to decode
                return int(g), int(midg_), None
            middle = np.zeros(n, np.int64)
            board_of(mid_out[0], mid_out[1], n, self.bits, self.per, middle, np.zeros(n, np.int64))
            return int(g), int(midg_), tuple(int(x) for x in middle)

    def path(self, H, width, start, target, length=None, cap=1 << 10):
        """The blank's cells after ``start`` on an optimal path to ``target``."""
        if length == 0:
            return []
        if length == 1:
            return [target.index(0)]
        g, midg, middle = self.run(H, width, start, target, cap)
        if length is None:  # the first run: what the answer's node counts report
            self.top_expanded, self.top_generated = self.expanded, self.generated
        if g <= 1 and length is None:  # the board itself is a move from the goal, or on it
            return [target.index(0)] if g else []
        if g != (length if length is not None else g) or not (0 < midg < g):
            raise PdbError(f"internal error: frontier search's middle node at {midg} of {g} moves")
        first = self.path(manhattan_to(middle, self.side), 1, start, middle, midg)
        return first + self.path(H, width, middle, target, g - midg)


def _frontier(solver, prepared, algorithm, control):
    heuristic, note = solver.heuristic, ""
    if not heuristic.consistent:
        # a node is expanded once; with an inconsistent h that may be before its best g
        note = (f"frontier search needs a consistent heuristic; {heuristic.name} is not, "
                "so it searched with manhattan")
        heuristic = table_free("manhattan", solver.shape, heuristic.goal_blank)
    f = _Frontier(solver, control, algorithm.max_memory)
    f.t_start = start = time.perf_counter()
    image, goal = prepared.image, prepared.frame.image_goal
    cells = f.path(heuristic.H, heuristic.width, image, goal, None, 1 << 16)
    seconds = time.perf_counter() - start
    h0 = int(_rows(heuristic.H, heuristic.width, solver.side, image)[2][0, 0])
    r = solver.result(prepared, cells, f.expanded, f.generated, seconds, h0, [],
                      algorithm="frontier", peak_memory=f.peak, heuristic=heuristic.name)
    r.add_note(note)
    r.add_note(
        f"open list only, no closed list; path by divide and conquer: {f.runs} frontier runs "
        f"(the first {f.top_expanded:,} expansions, the halves {f.expanded - f.top_expanded:,})")
    return r


# -- bidirectional -------------------------------------------------------------------------

def _bidir(solver, prepared, algorithm, control):
    if solver.shape.cells <= BIDIR_BFS_MAX_CELLS:
        return _bibfs(solver, prepared, algorithm, control)
    return mm(solver, prepared, algorithm, control)


def _bibfs(solver, prepared, algorithm, control):
    from pdbtool.kernels.bfs import rank
    from pdbtool.kernels.bidir import bfs_trace, bibfs

    n = solver.shape.cells
    fact = np.array([math.factorial(i) for i in range(n + 1)], np.int64)
    nbr, nnbr = neighbour_arrays(solver.shape)
    states = math.factorial(n)
    need = 2 * states * 5 + 2 * (states // 2 + 1) * 4
    if need > algorithm.max_memory:
        raise _memory(f"bidir: breadth-first from both ends needs {_mib(need)} on a "
                      f"{solver.shape} board, more than the memory limit of "
                      f"{_mib(algorithm.max_memory)}")
    dist_f, dist_b = np.full(states, -1, np.int8), np.full(states, -1, np.int8)
    parent_f, parent_b = np.zeros(states, np.int32), np.zeros(states, np.int32)
    queue_f, queue_b = np.zeros(states // 2 + 1, np.int32), np.zeros(states // 2 + 1, np.int32)
    s = rank(np.asarray(prepared.image, np.int64), n, fact)
    t = rank(np.asarray(prepared.frame.image_goal, np.int64), n, fact)
    start = time.perf_counter()
    status, meet, expanded, generated, reached = bibfs(
        s, t, n, nbr, nnbr, fact, dist_f, parent_f, queue_f, dist_b, parent_b, queue_b, control.stop,
        control.kernel_budget)
    seconds = time.perf_counter() - start
    if status != FOUND:
        raise limit_reached(status, generated, seconds, control, name="bidir")
    out = np.zeros(MAX_DEPTH + 1, np.int64)
    k = bfs_trace(meet, parent_f, n, fact, out)
    cells = out[:k][::-1][1:].tolist()
    k = bfs_trace(meet, parent_b, n, fact, out)
    cells += out[1:k].tolist()
    r = solver.result(prepared, cells, expanded, generated, seconds, None, [], algorithm="bidir",
                      peak_memory=need, heuristic="none")
    r.add_note(f"breadth-first from both ends, met after {int(reached):,} states "
               f"(depths {int(dist_f[meet])} + {int(dist_b[meet])})")
    return r


def mm(solver, prepared, algorithm, control):
    """MM (Holte et al. 2016): the forward search with the solver's heuristic, the backward
    one with the Manhattan distance to the start (the tables measure towards the goal, the
    start's blank may be anywhere). Any board side up to 5x5 (the tests run it on 3x3)."""
    from pdbtool.kernels.bidir import BYTES_PER_STATE, HASH_BYTES, MEMORY, mm as mm_kernel, mm_trace

    side = solver.side
    n = solver.shape.cells
    bits, per = layout(n)
    image, goal = prepared.image, prepared.frame.image_goal
    h = solver.heuristic
    HB = manhattan_to(image, side)
    z = np.zeros
    start = time.perf_counter()
    spent_e = spent_g = fills = 0  # by the tries before that filled up (limits.memory_tries)
    for room in memory_tries(algorithm.max_memory):
        cap, tsize = hashed_states(room // 2, BYTES_PER_STATE - HASH_BYTES,
                                   min((1 << 31) - 2, math.factorial(n) // 2))  # a direction's
        board_f, pos_f, rows_f = _rows(h.H, h.width, side, image)
        h0 = int(rows_f[0, 0])  # the kernel reuses the rows as it goes
        board_b, pos_b, rows_b = _rows(HB, 1, side, goal)
        arrays = [(z((cap, 2), np.int64), z(cap, np.int32), z(cap, np.uint8),
                   z(cap + cap // 2, np.int64), z(tsize, np.int32)) for _ in range(2)]
        left = control.kernel_budget if control.kernel_budget < 0 else \
            max(0, control.kernel_budget - spent_g)
        status, length, jf, jb, expanded, generated, held = mm_kernel(
            h.H, HB, side, board_f, pos_f, board_b, pos_b, solver.moves, solver.nmoves, rows_f,
            rows_b, bits, per, *arrays[0], *arrays[1], left, control.stop, control.counters)
        if status != MEMORY or room == algorithm.max_memory:
            break
        spent_e, spent_g, fills = spent_e + int(expanded), spent_g + int(generated), fills + 1
    expanded, generated = spent_e + int(expanded), spent_g + int(generated)
    seconds = time.perf_counter() - start
    memory = int(held) * (BYTES_PER_STATE - 12) + 2 * tsize * 4  # (touched at random)
    if status == MEMORY:
        raise _memory(f"bidir: memory limit of {_mib(algorithm.max_memory)} reached holding "
                      f"{int(held):,} states after {int(expanded):,} expansions, "
                      f"{seconds:.3f} s; raise the memory limit or use ida")
    if status != FOUND:
        raise limit_reached(status, generated, seconds, control, name="bidir")
    out = np.zeros(MAX_DEPTH + 2, np.int64)
    scratch = (np.zeros(n, np.int64), np.zeros(n, np.int64))
    cells = []
    if length > 0:
        k = mm_trace(arrays[0][0], arrays[0][1], jf, n, bits, per, *scratch, out)
        cells = out[:k][::-1][1:].tolist()
        k = mm_trace(arrays[1][0], arrays[1][1], jb, n, bits, per, *scratch, out)
        cells += out[1:k].tolist()
    r = solver.result(prepared, cells, expanded, generated, seconds, h0, [],
                      algorithm="bidir", peak_memory=memory)
    r.add_note(f"MM: forward with {h.name}, backward with Manhattan distance to the "
               f"start; held {int(held):,} states"
               + (f" (after {fills} smaller tries, their nodes counted)" if fills else ""))
    return r
