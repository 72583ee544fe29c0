"""The IDA* kernel: a cost-bounded depth-first search with an explicit stack.

Plain numba over arrays, no Python objects: the board and the tile positions are changed
in place (make/undo), a move is generated only if the move-pruning automaton allows it
(move_pruning.py: no move back to the parent, no duplicate move sequences), and the
heuristic is updated from the parent's state row (heuristic_kernels.h_update). ``dfs`` searches one
subtree under one bound, so the same task serves serial IDA* (``ida`` below) and the
parallel search (parallel.py), which hands out subtrees of the root.

Control arrays, shared with the caller while the kernel runs (nogil):
  stop[0]     set non-zero by the caller to stop; polled every POLL expansions;
  counters    [GENERATED, EXPANDED, BOUND], published at each poll.

Events (``pdbtool solve --trace`` and the animation, trace.py): the same kernel writes
down every node it generates into int32[cap, EVENT_FIELDS] while rows are left (a search
that is not traced passes no rows), so a traced search is the plain search, node for node:
  EV_ITERATION  index of the IDA* iteration
  EV_G          g (the node's depth)
  EV_H          h as the search saw it: for a pruned node of a lazily evaluated heuristic
                (PDB), a lower bound that already exceeds bound - g
  EV_CELL       the blank's cell after the move (cells of the goal's image, puzzle.Frame)
  EV_OUTCOME    EXPANDED_NODE (f <= bound, its children follow), PRUNED_NODE (f > bound)
                or GOAL_NODE (h = 0 within the bound: the search ends)
f is g + h; the bound is the iteration's. Beyond the cap the search goes on unrecorded.
"""

import numpy as np
from numba import literally, njit

from .heuristic_kernels import h_update

NOT_FOUND, FOUND, STOPPED, BUDGET = 0, 1, 2, 3  # outcomes of a search
GENERATED, EXPANDED, BOUND = 0, 1, 2  # slots of the counters array
COUNTERS = 3
INF = 1 << 30
MAX_DEPTH = 255
POLL = 4096
EV_ITERATION, EV_G, EV_H, EV_CELL, EV_OUTCOME = 0, 1, 2, 3, 4
EVENT_FIELDS = 5
EXPANDED_NODE, PRUNED_NODE, GOAL_NODE = 0, 1, 2


@njit(cache=True, nogil=True, inline="always")
def record(events, n, iteration, g, h, cell, outcome):
    """Write one event if a row is left; return the number of rows used."""
    if n < events.shape[0]:
        events[n, EV_ITERATION] = iteration
        events[n, EV_G] = g
        events[n, EV_H] = h
        events[n, EV_CELL] = cell
        events[n, EV_OUTCOME] = outcome
        return n + 1
    return n


@njit(cache=True, nogil=True)
def no_events():
    """The events array of a search that is not traced: no rows (from Python or a kernel)."""
    return np.zeros((0, EVENT_FIELDS), np.int32)


@njit(cache=True, nogil=True, inline="always")
def slide(board, pos, c, b):
    """The tile at cell c slides into the blank at cell b; returns the tile. (pos[0] is
    left alone: the searches keep the blank's cell on their stacks.) slide(board, pos, b, c)
    takes the move back."""
    t = board[c]
    board[b] = t
    board[c] = 0
    pos[t] = b
    return t


@njit(cache=True, nogil=True, inline="always")
def undo(board, pos, blanks, depth):
    """Take back the move into the node at ``depth``: the tile returns to the blank's cell."""
    slide(board, pos, blanks[depth - 1], blanks[depth])


@njit(cache=True, nogil=True, inline="always")
def unwind(board, pos, blanks, depth):
    """Take back every move down to the root (a search stopped midway)."""
    while depth > 0:
        undo(board, pos, blanks, depth)
        depth -= 1


@njit(cache=True, nogil=True, inline="always")
def publish(counters, generated, expanded, reported_g, reported_e):
    """Add the nodes counted since the last report to the shared counters; returns the
    new reported pair (generated, expanded)."""
    counters[GENERATED] += generated - reported_g
    counters[EXPANDED] += expanded - reported_e
    return generated, expanded


@njit(cache=True, nogil=True, inline="always")
def halted(stop, budget, generated):
    """STOPPED if the caller set the stop flag, BUDGET if the node budget is spent (budget
    < 0: none), else NOT_FOUND (go on)."""
    if stop[0] != 0:
        return STOPPED
    if budget >= 0 and generated > budget:
        return BUDGET
    return NOT_FOUND


@njit(cache=True, nogil=True, inline="always")
def path_to(path, blanks, depth, c):
    """The blank's cells after the root, ending in c (a goal found below ``depth``);
    returns the length."""
    for i in range(depth):
        path[i] = blanks[i + 1]
    path[depth] = c
    return depth + 1


@njit(cache=True, nogil=True)
def dfs(kind, H, s, board, pos, moves, nmoves, fsm, hs, root_blank, root_state, g0, bound,
        budget, stop, counters, path):
    """Search below the root (whose state row is hs[0]) with f = g0 + g + h <= bound.

    moves[c, i] for i < nmoves[c] is (cell << 2) | direction of the blank's moves from c
    (directions 0-3 are U, D, L, R); fsm[state, direction] is the automaton's next state,
    or -1 if that move is pruned there.

    Returns (status, next bound, expanded, generated, length). On FOUND, path[:length]
    holds the cells the blank visits after the root; otherwise board and pos are restored.
    budget < 0 means no node limit. ``kind`` must be a literal: call it through run_dfs.
    """
    literally(kind)
    stacks = np.empty((3, MAX_DEPTH + 2), dtype=np.int64)
    status, next_bound, expanded, generated, length, _ = dfs_loop(
        kind, H, s, board, pos, moves, nmoves, fsm, hs, root_blank, root_state, g0, bound,
        budget, stop, counters, path, stacks, no_events(), 0, 0)
    return status, next_bound, expanded, generated, length


@njit(cache=True, nogil=True, _nrt=False)
def dfs_loop(kind, H, s, board, pos, moves, nmoves, fsm, hs, root_blank, root_state, g0, bound,
             budget, stop, counters, path, stacks, events, n, iteration):
    """dfs over its stacks (int64[3, MAX_DEPTH + 2]: blank cells, child iterators,
    automaton states), recording events[n:] as IDA* iteration ``iteration``; returns dfs's
    tuple and the rows of events used.

    Compiled without numba's reference counting: the arrays live as long as the caller's,
    and an inlined function that takes HeuristicArrays would otherwise incref and decref
    each of its arrays at every call (atomic operations that took over 40% of the time of
    a 24-puzzle search)."""
    literally(kind)
    blanks, it, automaton = stacks[0], stacks[1], stacks[2]
    counters[BOUND] = bound
    h0 = hs[0, 0]
    if g0 + h0 > bound:
        return NOT_FOUND, g0 + h0, 0, 0, 0, n
    if h0 == 0:
        return FOUND, bound, 0, 0, 0, n
    next_bound = INF
    expanded, generated = 1, 0
    reported_e, reported_g = 0, 0
    depth = 0
    blanks[0] = root_blank
    automaton[0] = root_state
    it[0] = 0
    status = NOT_FOUND
    length = 0
    while True:
        b = blanks[depth]
        k = it[depth]
        if k == nmoves[b]:
            if depth == 0:
                break
            undo(board, pos, blanks, depth)
            depth -= 1
            continue
        it[depth] = k + 1
        move = moves[b, k]
        next_state = fsm[automaton[depth], move & 3]
        if next_state < 0:
            continue
        c = move >> 2
        t = slide(board, pos, c, b)
        generated += 1
        g = g0 + depth + 1
        h = h_update(kind, H, s, board, pos, hs[depth], hs[depth + 1], t, c, b, bound - g)
        f = g + h
        if f > bound:
            n = record(events, n, iteration, g, h, c, PRUNED_NODE)
            if f < next_bound:
                next_bound = f
            slide(board, pos, b, c)
            continue
        if h == 0:
            n = record(events, n, iteration, g, h, c, GOAL_NODE)
            status = FOUND
            length = path_to(path, blanks, depth, c)
            break
        n = record(events, n, iteration, g, h, c, EXPANDED_NODE)
        depth += 1
        blanks[depth] = c
        automaton[depth] = next_state
        it[depth] = 0
        expanded += 1
        if expanded & (POLL - 1) == 0:
            reported_g, reported_e = publish(counters, generated, expanded, reported_g, reported_e)
            status = halted(stop, budget, generated)
            if status != NOT_FOUND:
                break
    if status == STOPPED or status == BUDGET:
        unwind(board, pos, blanks, depth)  # so the caller's board is intact
    publish(counters, generated, expanded, reported_g, reported_e)
    return status, next_bound, expanded, generated, length, n


@njit(cache=True, nogil=True)
def ida(kind, H, s, board, pos, moves, nmoves, fsm, hs, blank, budget, stop, counters, path, bounds,
        nodes, events):
    """Iterative deepening from the root's h: each bound is the previous minimum overshoot.

    bounds[i], nodes[i] receive each iteration's bound and nodes generated; events the
    nodes generated while rows are left (see above).
    Returns (status, length, expanded, generated, iterations, events recorded).
    """
    literally(kind)
    stacks = np.empty((3, MAX_DEPTH + 2), dtype=np.int64)
    bound = hs[0, 0]
    expanded, generated, n = 0, 0, 0
    i = 0
    while True:
        if bound > MAX_DEPTH:  # the stacks are sized for MAX_DEPTH moves
            return BUDGET, 0, expanded, generated, i, n
        left = -1  # no limit
        if budget >= 0:
            if generated >= budget:
                return BUDGET, 0, expanded, generated, i, n
            left = budget - generated
        status, nb, e, g, length, n = dfs_loop(kind, H, s, board, pos, moves, nmoves, fsm, hs,
                                               blank, 0, 0, bound, left, stop, counters, path,
                                               stacks, events, n, i)
        expanded += e
        generated += g
        if i < bounds.shape[0]:
            bounds[i] = bound
            nodes[i] = g
        i += 1
        if status != NOT_FOUND or nb >= INF:
            return status, length, expanded, generated, i, n
        bound = nb


@njit(cache=True, nogil=True)
def path_violation(kind, H, s, board, pos, rows, path, length, consistent):
    """Check a solution against the heuristic that found it: the first step i at which
    h(s_i) exceeds the moves left, or (``consistent``) differs from h(s_{i-1}) by more
    than one; -1 if none. A violation proves the heuristic wrong (a damaged table). The
    board is left at the goal."""
    literally(kind)
    h_prev = rows[0, 0]
    if h_prev > length:
        return 0
    b = pos[0]
    for i in range(length):
        c = path[i]
        t = board[c]
        board[b] = t
        board[c] = 0
        pos[t] = b
        pos[0] = c
        h = h_update(kind, H, s, board, pos, rows[i], rows[i + 1], t, c, b, INF)
        if h > length - i - 1 or (consistent and abs(h - h_prev) > 1):
            return i + 1
        h_prev = h
        b = c
    return -1


# Entry points for Python. Calling a kernel that demands a literal from Python makes numba
# retry its dispatch on every call (about 10 ms); these take the kind as a plain int and
# call the specialised kernels with constants, so each kind is compiled (and cached) once.

@njit(cache=True, nogil=True)
def run_dfs(kind, H, s, board, pos, moves, nmoves, fsm, hs, root_blank, root_state, g0, bound, budget, stop, counters, path):
    if kind == 0:
        return dfs(0, H, s, board, pos, moves, nmoves, fsm, hs, root_blank, root_state, g0, bound, budget, stop, counters, path)
    if kind == 1:
        return dfs(1, H, s, board, pos, moves, nmoves, fsm, hs, root_blank, root_state, g0, bound, budget, stop, counters, path)
    if kind == 2:
        return dfs(2, H, s, board, pos, moves, nmoves, fsm, hs, root_blank, root_state, g0, bound, budget, stop, counters, path)
    if kind == 3:
        return dfs(3, H, s, board, pos, moves, nmoves, fsm, hs, root_blank, root_state, g0, bound, budget, stop, counters, path)
    return dfs(4, H, s, board, pos, moves, nmoves, fsm, hs, root_blank, root_state, g0, bound, budget, stop, counters, path)


@njit(cache=True, nogil=True)
def run_ida(kind, H, s, board, pos, moves, nmoves, fsm, hs, blank, budget, stop, counters, path, bounds, nodes, events):
    if kind == 0:
        return ida(0, H, s, board, pos, moves, nmoves, fsm, hs, blank, budget, stop, counters, path, bounds, nodes, events)
    if kind == 1:
        return ida(1, H, s, board, pos, moves, nmoves, fsm, hs, blank, budget, stop, counters, path, bounds, nodes, events)
    if kind == 2:
        return ida(2, H, s, board, pos, moves, nmoves, fsm, hs, blank, budget, stop, counters, path, bounds, nodes, events)
    if kind == 3:
        return ida(3, H, s, board, pos, moves, nmoves, fsm, hs, blank, budget, stop, counters, path, bounds, nodes, events)
    return ida(4, H, s, board, pos, moves, nmoves, fsm, hs, blank, budget, stop, counters, path, bounds, nodes, events)


@njit(cache=True, nogil=True)
def run_path_violation(kind, H, s, board, pos, rows, path, length, consistent):
    if kind == 0:
        return path_violation(0, H, s, board, pos, rows, path, length, consistent)
    if kind == 1:
        return path_violation(1, H, s, board, pos, rows, path, length, consistent)
    if kind == 2:
        return path_violation(2, H, s, board, pos, rows, path, length, consistent)
    if kind == 3:
        return path_violation(3, H, s, board, pos, rows, path, length, consistent)
    return path_violation(4, H, s, board, pos, rows, path, length, consistent)
