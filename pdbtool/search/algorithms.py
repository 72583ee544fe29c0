"""The algorithms besides IDA*: choosing one, checking what it can serve, running its
kernel, and turning its outcome into a SolveResult (replayed and checked by Solver.result).

| name     | kernel              | answer                          | memory                      |
|----------|---------------------|---------------------------------|-----------------------------|
| ida      | kernels.ida         | optimal                         | O(depth)                    |
| ida-tt   | kernels.ida + TT    | optimal                         | O(depth) + the table        |
| astar    | kernels.astar       | optimal                         | every state reached         |
| rbfs     | kernels.rbfs        | optimal                         | O(depth)                    |
| bfs      | kernels.bfs         | optimal (up to 9 cells)         | every state (n! entries)    |
| wida     | kernels.ida + W     | at most W x optimal             | O(depth)                    |
| greedy   | kernels.greedy      | some solution (up to 20x20)     | the solution                |
| sma      | kernels.sma         | optimal if the path fits        | at most --max-memory        |
| frontier | kernels.frontier    | optimal (consistent h)          | the open list only          |
| bidir    | kernels.bidir       | optimal                         | both directions' states     |

(+ TT, + W: the IDA* kernel with kernels.ida_tt's Extras; sma, frontier and bidir run in
search/best_first.py.) Each search reuses the Solver's heuristic (tables included) through h_init / h_update, and
its result goes through Solver.result like IDA*'s.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import time
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from pdbtool import limits, puzzle
from pdbtool.errors import BadInput, LimitReached
from pdbtool.geometry import as_shape, neighbour_arrays
from pdbtool.kernels.ida import BUDGET, EXPANDED, FOUND, GENERATED, MAX_DEPTH, STOPPED
from pdbtool.search.control import limit_reached

ALGORITHMS = ("ida", "ida-tt", "astar", "rbfs", "wida", "bfs", "greedy", "sma", "frontier", "bidir")
OPTIMAL = ("ida", "ida-tt", "astar", "rbfs", "bfs", "sma", "frontier", "bidir")
MEMORY_BOUND = ("astar", "sma", "frontier", "bidir")  # take --max-memory
DEFAULT_MAX_MEMORY = 1 << 30  # A*: 1 GiB of states
MIN_MAX_MEMORY = 1 << 16
DEFAULT_TT_SIZE = 1 << 20     # IDA*+TT: entries (32 MiB)
DEFAULT_WEIGHT = 1.5
# WIDA*'s first bound W x h0 lets a path grow to about W x h0 moves; once that nears the
# kernel's depth limit (kernels.ida_tt.MAX_DEPTH_W, 1023) the depth-first search backtracks
# through an exponential tree below it (W = 20 on a 24-puzzle, 60 on a 15-puzzle: minutes
# where W = 10 takes milliseconds). The weight is lowered so that W x h0 stays within this.
WIDA_REACH = 500
BFS_MAX_CELLS = 9  # bfs: boards of up to 9 cells (3x3, 2x4); its arrays span every placement
KEYED = ("astar", "ida-tt", "sma", "frontier", "bidir")  # boards of up to KEY_MAX_CELLS cells
RECTANGLES = ("ida", "wida", "rbfs", "greedy", *KEYED)  # serve boards that are not square
@dataclass(frozen=True)
class Algorithm:
    """An algorithm and its options: ``weight`` (wida), ``tt_size`` (ida-tt, entries),
    ``max_memory`` (astar, sma, frontier, bidir: bytes). Unset options take the defaults
    above."""

    name: str = "ida"
    weight: float | None = None
    tt_size: int | None = None
    max_memory: int | None = None

    def __post_init__(self):
        for name in ("tt_size", "max_memory"):  # whole numbers (a float or a bool: refused)
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool)
                                      or not isinstance(value, numbers.Integral)):
                raise BadInput(f"{name} must be a whole number, not {value!r:.60}")
        if self.weight is not None and (isinstance(self.weight, (bool, str, bytes))
                                        or not isinstance(self.weight, numbers.Number)
                                        or isinstance(self.weight, complex)):
            raise BadInput(f"weight must be a number, not {self.weight!r:.60}")
        if self.name not in ALGORITHMS:
            raise BadInput(f"unknown algorithm {self.name!r}: choose one of {', '.join(ALGORITHMS)}")
        if self.weight is not None and self.name != "wida":
            raise BadInput("a weight applies to the wida algorithm only")
        if self.weight is not None and not (1 <= self.weight <= 100):
            raise BadInput(f"weight {self.weight} out of range: wida takes 1 <= W <= 100")
        if self.tt_size is not None and self.name != "ida-tt":
            raise BadInput("a transposition table size applies to the ida-tt algorithm only")
        if self.tt_size is not None and self.tt_size < 1:
            raise BadInput(f"a transposition table of {self.tt_size} entries: it needs at least 1")
        if self.max_memory is not None and self.name not in MEMORY_BOUND:
            raise BadInput(f"a memory limit applies to the algorithms {', '.join(MEMORY_BOUND)} only")
        if self.max_memory is not None and self.max_memory < MIN_MAX_MEMORY:
            raise BadInput(f"a memory limit of {self.max_memory:,} bytes is too small: at least 64K")

    @property
    def optimal(self) -> bool:
        return self.name in OPTIMAL

    @property
    def w(self) -> Fraction:
        """The weight as the kernel's integers take it: thousandths, rounded down (an
        answer within it is within the weight asked for; 1.3333 is 1333/1000)."""
        return thousandths(Fraction(repr(float(self.weight or DEFAULT_WEIGHT))))

    def within(self, memory: int | None) -> tuple[Algorithm, bool]:
        """This algorithm with its memory lowered to at most ``memory`` bytes (None: no
        limit): the states of A*, SMA*, frontier and bidirectional search (max_memory), the
        ida-tt table (tt_size); and whether that lowered anything. A server's limit per
        search (pdbd serve --max-search-memory)."""
        if memory and self.name in MEMORY_BOUND and (self.max_memory or DEFAULT_MAX_MEMORY) > memory:
            return dataclasses.replace(self, max_memory=max(memory, MIN_MAX_MEMORY)), True
        if memory and self.name == "ida-tt":
            from pdbtool.kernels.ida_tt import TT_ENTRY_BYTES
            if (self.tt_size or DEFAULT_TT_SIZE) * TT_ENTRY_BYTES > memory:
                return dataclasses.replace(self, tt_size=max(1, memory // TT_ENTRY_BYTES)), True
        return self, False

    def check_memory(self) -> None:
        """Refuse (BadInput) an ida-tt table, or a memory limit asked for A*, SMA*, frontier
        or bidir, beyond what this machine has or this process may take
        (limits.memory_caps): no search could ever have the table, and a search that grew
        toward the limit would be killed by the system before it met it, with no word said.
        One within them that cannot be had at the moment (other processes hold the memory)
        is a limit met by the search, exit 4, as A*'s."""
        from pdbtool.progress import fmt_bytes

        if self.name == "ida-tt":
            from pdbtool.kernels.ida_tt import TT_ENTRY_BYTES

            entries = tt_entries(self.tt_size)
            need = entries * TT_ENTRY_BYTES
            asked = f"a transposition table of {entries:,} entries needs {fmt_bytes(need)} of memory"
        elif self.name in MEMORY_BOUND and self.max_memory is not None:
            need = self.max_memory
            asked = f"a memory limit of {fmt_bytes(need)} cannot be reached"
        else:
            return
        for what, have in limits.memory_caps():
            if need > have:
                raise BadInput(f"{asked}; {what} {fmt_bytes(have)}")

    def check_shape(self, shape) -> None:
        """Refuse, with the reason and the algorithms that do serve it, a board shape (or a
        square's side) this algorithm cannot serve (``serves``)."""
        shape = as_shape(shape)
        if serves(self.name, shape):
            return
        if self.name == "bfs":
            states = math.factorial(shape.cells) // 2
            count = f"{states:,}" if states < 10 ** 15 else f"{float(states):.2e}"
            why = (f"bfs holds every reachable state of the board ({count} for {shape}): "
                   "boards of up to 9 cells (3x3, 2x4, 4x2)")
        elif self.name in KEYED:
            why = (f"{self.name} keys a state in two words: boards of up to 25 cells (5x5, "
                   f"4x6, 6x4), not {shape}")
        elif not shape.square:
            why = f"{self.name} serves square boards, not {shape}"
        else:
            limit = puzzle.MAX_SIDE if self.name == "greedy" else puzzle.SEARCH_MAX_SIDE
            why = f"{self.name} serves boards up to {limit}x{limit}, not {shape}"
        takers = [name for name in OPTIMAL if serves(name, shape)] + [
            f"{name} ({what})" for name, what in (("wida", "bounded-suboptimal"),
                                                  ("greedy", "not optimal")) if serves(name, shape)]
        raise BadInput(f"{why}; a {shape} board takes {', '.join(takers)}" if takers else why)


def serves(name: str, shape) -> bool:
    """Does algorithm ``name`` serve boards of ``shape`` (a Shape, or a square's side)? bfs
    up to 9 cells; the keyed ones up to KEY_MAX_CELLS (5x5, 4x6, 6x4); squares up to
    puzzle.SEARCH_MAX_SIDE (greedy: puzzle.MAX_SIDE); rectangles: RECTANGLES."""
    from pdbtool.kernels.state_key import KEY_MAX_CELLS

    shape = as_shape(shape)
    if name == "bfs":
        return shape.cells <= BFS_MAX_CELLS
    if name in KEYED and shape.cells > KEY_MAX_CELLS:
        return False
    if not shape.square:
        return name in RECTANGLES
    return shape.rows <= (puzzle.MAX_SIDE if name == "greedy" else puzzle.SEARCH_MAX_SIDE)


def search_with(solver, prepared, control, *, algorithm: Algorithm):
    """Run ``algorithm`` on a prepared board, on this thread (called by Solver.search, which
    checked the board's size and the threads against it). The control's counters end as the
    result's (its kernel publishes them only now and then, or never: a daemon's metrics read
    them)."""
    run = {"ida-tt": _ida_tt, "wida": _ida_tt, "astar": _astar, "rbfs": _rbfs, "bfs": _bfs,
           "greedy": _greedy}.get(algorithm.name)
    try:
        if run is None:  # sma, frontier, bidir
            from pdbtool.search import best_first
            r = best_first.search(solver, prepared, dataclasses.replace(
                algorithm, max_memory=algorithm.max_memory or DEFAULT_MAX_MEMORY), control)
        else:
            r = run(solver, prepared, algorithm, control)
    except MemoryError:  # the arrays asked for (--tt-size, --max-memory) cannot be had
        option = "transposition table size" if algorithm.name == "ida-tt" else "memory limit"
        raise LimitReached(f"{algorithm.name}: not enough memory for the arrays it asked for; "
                           f"lower its {option}", limit="memory") from None
    control.counters[GENERATED], control.counters[EXPANDED] = r.nodes_generated, r.nodes_expanded
    return r


def _ida_tt(solver, prepared, algorithm, control):
    from pdbtool.kernels.ida_tt import MAX_DEPTH_W, TT_ENTRY_BYTES, Extras, transposition_table
    from pdbtool.kernels.ida import ida, no_events
    from pdbtool.kernels.state_key import layout

    weighted = algorithm.name == "wida"
    side = solver.side
    depth = MAX_DEPTH_W if weighted else MAX_DEPTH
    root = solver.root(prepared.image, depth)
    w, lowered = algorithm.w, False
    if weighted and w * root.h > WIDA_REACH:  # (see WIDA_REACH)
        w, lowered = max(Fraction(1), thousandths(Fraction(WIDA_REACH, root.h))), True
    if weighted:
        gw, hw = w.denominator, w.numerator
        size, bits, per = 0, 1, 1
    else:
        gw = hw = 1
        size = tt_entries(algorithm.tt_size)
        bits, per = layout(solver.shape.cells)
    try:  # (memory taken by others: a limit, exit 4; beyond the machine: check_memory)
        tt = transposition_table(size)
    except (MemoryError, ValueError):
        raise LimitReached(f"ida-tt: a transposition table of {size:,} entries "
                           f"({size * TT_ENTRY_BYTES / 2**30:,.0f} GiB) cannot be allocated here; "
                           "give a smaller transposition table size", limit="memory") from None
    path = np.zeros(depth + 1, np.int64)
    bounds = np.zeros(depth + 1, np.int64)
    nodes = np.zeros(depth + 1, np.int64)
    t0 = time.perf_counter()
    status, length, expanded, generated, iters, _, cuts, _ = ida(
        solver.heuristic.H, side, root.board, root.pos, solver.moves, solver.nmoves, solver.fsm,
        root.rows, prepared.image.index(0), control.kernel_budget, control.stop, control.counters,
        path, bounds, nodes, no_events(), Extras(gw, hw, depth, tt, bits, per), -1)
    seconds = time.perf_counter() - t0
    if status != FOUND:
        raise limit_reached(status, generated, seconds, control, name=algorithm.name)
    # the kernel's bounds are on gw x (g + W x h), W = hw / gw: in moves, rounded down
    iterations = [{"bound": int(bounds[i]) // gw, "nodes": int(nodes[i])}
                  for i in range(min(iters, len(bounds)))]
    memory = root.rows.nbytes + 6 * path.nbytes + size * TT_ENTRY_BYTES
    exact = weighted and w == 1  # f = g + h: IDA*'s own bounds, so its answer is optimal
    r = solver.result(prepared, path[:length], expanded, generated, seconds, root.h, iterations,
                      algorithm=algorithm.name, optimal=not weighted or exact,
                      bound=float(w) if weighted and not exact else None, peak_memory=memory)
    if lowered:
        r.add_note(f"weight {float(algorithm.w):g} lowered to {float(w):g}: its first "
                   f"bound, W x h0 = W x {root.h}, may be at most {WIDA_REACH} moves "
                   "(the depth-first search wanders to its depth limit beyond)")
    if exact:
        r.add_note("weight 1: optimal (IDA*'s bounds)")
    elif weighted:
        least = max(math.ceil(r.length / w), root.h)  # h0 too: the heuristic is admissible
        r.add_note(f"bounded-suboptimal: at most {float(w):g} x the optimal "
                   f"length (so the optimum is at least {least})")
    else:
        r.add_note(f"transposition table: {size:,} entries, {int(cuts):,} cuts")
    return r


def tt_entries(tt_size: int | None) -> int:
    """The slots of the ida-tt table asked for by ``tt_size``: a power of two, at most it."""
    return 1 << ((tt_size or DEFAULT_TT_SIZE).bit_length() - 1)


def thousandths(x: Fraction) -> Fraction:
    """``x`` rounded down to a multiple of 1/1000."""
    return Fraction(math.floor(x * 1000), 1000)



def _astar(solver, prepared, algorithm, control):
    from pdbtool.kernels.astar import BYTES_PER_STATE, HASH_BYTES, MEMORY, astar, trace
    from pdbtool.kernels.state_key import layout

    side, n = solver.side, solver.shape.cells
    bits, per = layout(n)
    budget_bytes = algorithm.max_memory or DEFAULT_MAX_MEMORY
    # Never more slots than reachable states (the 8-puzzle's 181,440): the hash table is
    # touched at random, so an oversized one costs a page fault per state.
    reachable = math.factorial(n) // 2
    t0 = time.perf_counter()
    spent_e = spent_g = fills = 0  # by the tries before that filled up (limits.memory_tries)
    for room in limits.memory_tries(budget_bytes):
        cap, slots = limits.hashed_states(room, BYTES_PER_STATE - HASH_BYTES,
                                          min(reachable, (1 << 31) - 2))
        root = solver.root(prepared.image, 1)
        h0 = root.h  # the kernel reuses the root's rows as it goes
        keys = np.zeros((cap, 2), np.int64)
        parent = np.zeros(cap, np.int32)
        gs = np.zeros(cap, np.uint8)
        heap = np.zeros(cap + cap // 2, np.int64)
        table = np.zeros(slots, np.int32)
        left = control.kernel_budget if control.kernel_budget < 0 else \
            max(0, control.kernel_budget - spent_g)
        status, goal, expanded, generated, held, peak = astar(
            solver.heuristic.H, side, root.board, root.pos, solver.moves, solver.nmoves,
            root.rows, bits, per, keys, parent, gs, heap, table, left, control.stop,
            control.counters)
        if status != MEMORY or room == budget_bytes:
            break
        spent_e, spent_g, fills = spent_e + int(expanded), spent_g + int(generated), fills + 1
    expanded, generated = spent_e + int(expanded), spent_g + int(generated)
    seconds = time.perf_counter() - t0
    memory = int(held) * (16 + 4 + 1) + int(peak) * 8 + table.nbytes  # (touched at random)
    if status == MEMORY:  # raised without a name for it here: a frame that held the error
        # and the error's traceback that holds the frame (and its arrays) would be a cycle,
        # freed only when the cyclic collector happens to run
        raise LimitReached(f"astar: memory limit of {budget_bytes / 2**20:,.4g} MiB reached holding "
                           f"{int(held):,} states ({int(peak):,} open at most) after "
                           f"{int(expanded):,} expansions, {seconds:.3f} s; raise the memory limit "
                           "or use ida", limit="memory")
    if status != FOUND:
        raise limit_reached(status, generated, seconds, control, name="astar")
    out = np.zeros(MAX_DEPTH + 1, np.int64)
    length = trace(keys, parent, goal, n, bits, per, root.board.copy(), root.pos.copy(), out)
    r = solver.result(prepared, out[:length], expanded, generated, seconds, h0, [],
                      algorithm="astar", peak_memory=memory)
    r.add_note(f"held {int(held):,} states, {int(peak):,} open at most"
               + (f" (after {fills} smaller tries, their nodes counted)" if fills else ""))
    return r


def _rbfs(solver, prepared, algorithm, control):
    from pdbtool.kernels.rbfs import rbfs

    root = solver.root(prepared.image, MAX_DEPTH + 1)
    path = np.zeros(MAX_DEPTH + 1, np.int64)
    t0 = time.perf_counter()
    status, length, expanded, generated = rbfs(
        solver.heuristic.H, solver.side, root.board, root.pos,
        solver.moves, solver.nmoves, solver.fsm, root.rows, prepared.image.index(0),
        control.kernel_budget, control.stop, control.counters, path)
    seconds = time.perf_counter() - t0
    if status != FOUND:
        raise limit_reached(status, generated, seconds, control, name="rbfs")
    memory = root.rows.nbytes + (MAX_DEPTH + 2) * 8 * 18
    return solver.result(prepared, path[:length], expanded, generated, seconds, root.h, [],
                         algorithm="rbfs", peak_memory=memory)


def _bfs(solver, prepared, algorithm, control):
    from pdbtool.kernels.bfs import bfs, rank, trace

    image = prepared.image
    n = len(image)
    fact = np.array([math.factorial(i) for i in range(n + 1)], np.int64)
    nbr, nnbr = neighbour_arrays(solver.shape)
    dist = np.full(math.factorial(n), -1, np.int8)
    parent = np.zeros(math.factorial(n), np.int32)
    queue = np.zeros(math.factorial(n) // 2 + 1, np.int32)
    target = rank(np.asarray(prepared.frame.image_goal, np.int64), n, fact)
    t0 = time.perf_counter()
    status, expanded, generated, reached = bfs(np.asarray(image, np.int64), target, n, nbr,
                                               nnbr, fact, dist, parent, queue, control.stop,
                                               control.kernel_budget)
    seconds = time.perf_counter() - t0
    if status != FOUND:
        raise limit_reached(status, generated, seconds, control, name="bfs")
    out = np.zeros(int(dist[target]) + 1, np.int64)
    length = trace(target, parent, n, fact, out)
    memory = dist.nbytes + parent.nbytes + queue.nbytes
    r = solver.result(prepared, out[:length], expanded, generated, seconds, None, [], algorithm="bfs",
                      peak_memory=memory, heuristic="none")
    r.add_note(f"reached {int(reached):,} states")
    return r


def exact_distances(shape=3) -> np.ndarray:
    """Every state's distance to the blank-first goal by exhaustive BFS (the 8-puzzle
    oracle as a product feature), indexed by the Lehmer rank of the board; -1 where
    unreachable (the other parity half). ``shape``: a Shape, or a square's side."""
    from pdbtool.kernels.bfs import bfs

    Algorithm("bfs").check_shape(shape)
    n = as_shape(shape).cells
    fact = np.array([math.factorial(i) for i in range(n + 1)], np.int64)
    nbr, nnbr = neighbour_arrays(shape)
    dist = np.full(math.factorial(n), -1, np.int8)
    bfs(np.arange(n, dtype=np.int64), -1, n, nbr, nnbr, fact, dist,
        np.zeros(math.factorial(n), np.int32), np.zeros(math.factorial(n) // 2 + 1, np.int32),
        np.zeros(1, np.int64), -1)
    return dist


def without_undos(start: int, cells: list[int]) -> list[int]:
    """The blank's path from cell ``start`` (its cells after each move) without the moves
    that the next one undoes (A -> B -> A, again and again as they meet): the same board
    at its end, never a longer way. The corner walks of the greedy solver made a solved
    board's answer 14 moves."""
    path = [start]
    for c in cells:
        if len(path) >= 2 and path[-2] == c:
            path.pop()
        else:
            path.append(c)
    return path[1:]


def _greedy(solver, prepared, algorithm, control):
    """Walk the goal's blank to the bottom-right corner along a fixed path, relabel so
    that arrangement is the blank-last goal, solve to it constructively, then walk the
    blank back: the answer reaches the goal itself."""
    from pdbtool.kernels.greedy import OK, greedy

    shape = solver.shape
    rows, side, n = shape.rows, shape.cols, shape.cells
    target = prepared.frame.target
    gb = target.index(0)
    walk = [gb // side * side + c for c in range(gb % side + 1, side)] + \
        [r * side + side - 1 for r in range(gb // side + 1, rows)]
    corner = puzzle.apply_blank_moves(target, _letters(shape, gb, walk), shape)
    label = {t: c + 1 for c, t in enumerate(corner) if t}
    label[0] = 0
    board = np.array([label[t] for t in prepared.board], np.int64)
    pos = np.empty(n, np.int64)
    pos[board] = np.arange(n)
    nbr, nnbr = neighbour_arrays(shape)
    out = np.zeros(64 * max(shape) ** 3 + 64, np.int64)
    t0 = time.perf_counter()
    status, length = greedy(board, pos, side, nbr, nnbr, out)
    seconds = time.perf_counter() - t0
    if status != OK:
        raise BadInput("greedy: no solution constructed (the board is unsolvable for this goal)")
    cells = out[:length].tolist() + (list(reversed([gb] + walk[:-1])) if walk else [])
    cells = without_undos(prepared.board.index(0), cells)
    image_cells = [prepared.frame.cells[c] for c in cells]
    r = solver.result(prepared, image_cells, 0, len(cells), seconds, None,
                      [], algorithm="greedy", optimal=False, peak_memory=out.nbytes, heuristic="none")
    r.add_note("constructive (rows, then columns, then the last 2x2): not optimal")
    return r


def _letters(shape, start, cells):
    out, b = [], start
    for c in cells:
        out.append(puzzle.step_letter(shape, b, c))
        b = c
    return "".join(out)
