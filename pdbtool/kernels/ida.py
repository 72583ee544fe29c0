"""The IDA* kernel: a cost-bounded depth-first search with an explicit stack.

Plain numba over arrays, no Python objects: the board and the tile positions are changed
in place (make/undo), a move is generated only if the move-pruning automaton allows it
(heuristics/move_pruning.py: no move back to the parent, no duplicate move sequences), and the
heuristic is updated from the parent's state row (kernels.heuristic.h_update). ``dfs_loop``
searches one subtree under one bound, so the same loop serves serial IDA* (``ida`` below),
the threads (kernels/tasks.py) and the cluster (``dfs``, search/threads.py).

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
from numba import njit
from numba.extending import overload

from pdbtool.kernels.heuristic import PDB, first_read, h_init, h_update, kind_of, looks_ahead
from pdbtool.kernels.ida_tt import active, tt_seen
from pdbtool.kernels.intrinsics import atomic_add, ix, prefetch
from pdbtool.kernels.state_key import key_moved, key_of, slot_of

NOT_FOUND, FOUND, STOPPED, BUDGET = 0, 1, 2, 3  # outcomes of a search
GENERATED, EXPANDED, BOUND = 0, 1, 2  # slots of the counters array
COUNTERS = 3
INF = 1 << 30
MAX_DEPTH = 255
POLL = 4096
EV_ITERATION, EV_G, EV_H, EV_CELL, EV_OUTCOME = 0, 1, 2, 3, 4
EVENT_FIELDS = 5
EXPANDED_NODE, PRUNED_NODE, GOAL_NODE = 0, 1, 2
FIRST = 5  # stacks[FIRST + READ k + i, depth]: the k-th move's first_read, its READ words
READ = 4   # (i: rank, mask, order rank, entry index)
STACKS = FIRST + READ * 4  # rows of a search's stacks (dfs_loop)
ALL_CLAIMED = 1 << 62  # claims[0] once a thread found the goal: the others stop at a poll
SHARE_POLL = 256  # expansions between a sharing thread's looks at claims[0]
# claims (int64[CLAIMS]), shared by the searches of one iteration: the next task to claim
# (or ALL_CLAIMED), the nodes they have generated (added at each one's polls), and the node
# budget they share (-1: none; a search alone has none, its own budget binds)
CLAIMS = 3
TASK, SPENT, SHARED_BUDGET = 0, 1, 2


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
    t = board[ix(c)]
    board[ix(b)] = t
    board[ix(c)] = 0
    pos[ix(t)] = b
    return t


@njit(cache=True, nogil=True, inline="always")
def undo(board, pos, blanks, depth):
    """Take back the move into the node at ``depth``: the tile returns to the blank's cell."""
    slide(board, pos, blanks[ix(depth - 1)], blanks[ix(depth)])


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
def next_child(board, pos, moves, nmoves, fsm, blanks, it, automaton, depth):
    """The depth-first step shared by the searches: the next move of the node at ``depth``
    that the automaton allows, as (depth, cell the blank moves to, automaton state). A node
    with no move left is backed out of (its move taken back): (depth - 1, -1, 0), or
    (-1, -1, 0) at the root."""
    b = blanks[ix(depth)]
    while True:
        k = it[ix(depth)]
        if k == nmoves[ix(b)]:
            if depth == 0:
                return -1, -1, 0
            undo(board, pos, blanks, depth)
            return depth - 1, -1, 0
        it[ix(depth)] = k + 1
        move = moves[ix(b), ix(k)]
        state = fsm[ix(automaton[ix(depth)]), ix(move & 3)]
        if state >= 0:
            return depth, move >> 2, state


def look_ahead(H, board, pos, moves, nmoves, fsm, row, stacks, depth, b, state):
    """For each move the automaton allows from the node at ``depth`` (blank at b,
    automaton state ``state``, heuristic row ``row``): the first read of its child
    (kernels.heuristic.first_read), started now and kept in stacks[FIRST + READ k:, depth]
    for h_update. Only for the tables that look ahead (kernels.heuristic.PDB_AHEAD): the
    children's reads then wait for memory together. For the others a kernel calls a
    function that does nothing (chosen by the arrays' class when numba types the call,
    below), so that their kernels do not compile first_read at all: every first solve on a
    machine waits for what the search loop compiles."""
    raise TypeError("look_ahead is called from kernels only")


@overload(look_ahead, jit_options={"nogil": True, "_nrt": False})
def _look_ahead_by_class(H, board, pos, moves, nmoves, fsm, row, stacks, depth, b, state):
    cls = H.instance_class
    if cls.KIND != PDB or not cls.AHEAD:
        return lambda H, board, pos, moves, nmoves, fsm, row, stacks, depth, b, state: None

    def ahead(H, board, pos, moves, nmoves, fsm, row, stacks, depth, b, state):
        for k in range(nmoves[ix(b)]):
            move = moves[ix(b), ix(k)]
            if fsm[ix(state), ix(move & 3)] >= 0:
                c = move >> 2
                r = FIRST + READ * k
                stacks[ix(r), ix(depth)], stacks[ix(r + 1), ix(depth)], \
                    stacks[ix(r + 2), ix(depth)], stacks[ix(r + 3), ix(depth)] = \
                    first_read(H, board, pos, row, board[ix(c)], c, b)
    return ahead


@njit(cache=True, nogil=True, inline="always")
def looked_ahead(H, stacks, it, depth):
    """The first read look_ahead kept for the move just taken from the node at ``depth``."""
    if kind_of(H) != PDB or not looks_ahead(H):
        none = np.int64(-1)
        return none, none, none, none
    r = FIRST + READ * (it[ix(depth)] - 1)
    return (stacks[ix(r), ix(depth)], stacks[ix(r + 1), ix(depth)],
            stacks[ix(r + 2), ix(depth)], stacks[ix(r + 3), ix(depth)])


@njit(cache=True, nogil=True, inline="always")
def poll(counters, stop, budget, generated, expanded, reported_g, reported_e):
    """Every POLL expansions, publish the counters and see whether to stop (halted);
    returns (status, reported_g, reported_e)."""
    if expanded & (POLL - 1) != 0:
        return NOT_FOUND, reported_g, reported_e
    reported_g, reported_e = publish(counters, generated, expanded, reported_g, reported_e)
    return halted(stop, budget, generated), reported_g, reported_e


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
def spend(claims, generated, spent):
    """A search sharing its iteration's node budget adds the nodes generated since it last
    did (``spent`` of its ``generated`` are added already) to claims[SPENT]; returns (BUDGET
    if the searches together are past the budget, else NOT_FOUND; the new ``spent``)."""
    if claims[SHARED_BUDGET] < 0:
        return NOT_FOUND, generated
    total = atomic_add(claims, SPENT, generated - spent) + generated - spent
    return (BUDGET if total > claims[SHARED_BUDGET] else NOT_FOUND), generated


def new_claims(budget: int = -1) -> np.ndarray:
    """The claims of an iteration's searches (CLAIMS), sharing ``budget`` nodes (-1: none)."""
    return np.array([0, 0, budget], np.int64)


@njit(cache=True, nogil=True, inline="always")
def path_to(path, blanks, depth, c):
    """The blank's cells after the root, ending in c (a goal found below ``depth``);
    returns the length."""
    for i in range(depth):
        path[i] = blanks[i + 1]
    path[depth] = c
    return depth + 1


@njit(cache=True, nogil=True)
def dfs(H, s, board, pos, moves, nmoves, fsm, hs, root_blank, root_state, g0, bound,
        budget, stop, counters, path, extras, claims):
    """Search below the root (whose state row is hs[0]) with f = g0 + g + h <= bound.

    moves[c, i] for i < nmoves[c] is (cell << 2) | direction of the blank's moves from c
    (directions 0-3 are U, D, L, R); fsm[state, direction] is the automaton's next state,
    or -1 if that move is pruned there. ``extras`` is kernels.ida_tt.no_extras() (a parallel
    search's subtrees are plain IDA*). ``claims`` (new_claims()) is shared with the other
    searches of the same iteration: once one of them finds the goal it sets ``claims[0]``
    to ALL_CLAIMED, and this one stops (STOPPED) within SHARE_POLL expansions; with a
    shared budget (claims[SHARED_BUDGET] >= 0) it adds its nodes to claims[SPENT] at each
    poll and stops (BUDGET) once they all are past it. A search alone passes new_claims().

    Returns (status, next bound, expanded, generated, length, closest: the smallest h
    expanded, INF if the root was over the bound). On FOUND, path[:length] holds the cells
    the blank visits after the root; otherwise board and pos are restored.
    budget < 0 means no node limit.
    """
    stacks = np.empty((STACKS, MAX_DEPTH + 2), dtype=np.int64)
    zero = np.int64(0)  # not the literal 0: see dfs_loop
    status, next_bound, expanded, generated, length, _, _, closest = dfs_loop(
        H, s, board, pos, moves, nmoves, fsm, hs, root_blank, root_state, g0, bound,
        budget, stop, counters, path, stacks, no_events(), zero, zero, extras, claims)
    return status, next_bound, expanded, generated, length, closest


@njit(cache=True, nogil=True, _nrt=False)
def dfs_loop(H, s, board, pos, moves, nmoves, fsm, hs, root_blank, root_state, g0, bound,
             budget, stop, counters, path, stacks, events, n, iteration, extras, claims):
    """dfs over its stacks (int64[STACKS, depth limit + 2]: blank cells, child iterators,
    automaton states, the two words of each node's state key), recording events[n:] as
    IDA* iteration ``iteration``, with the extras of kernels.ida_tt if they are active (the
    weights and the depth limit, and a transposition table if it has slots; then g0 = 0
    and root_state = 0). Returns dfs's tuple, the rows of events used, the nodes the
    table cut and the smallest h of a node expanded (INF if none: how close the search
    came to the goal, by which the threads order the next iteration's subtrees,
    kernels/tasks.py). ``claims``: see dfs.

    Compiled without numba's reference counting: the arrays live as long as the caller's,
    and an inlined function that takes HeuristicArrays would otherwise incref and decref
    each of its arrays at every call (atomic operations that took over 40% of the time of
    a 24-puzzle search).

    Callers pass its integers as int64 variables (``np.int64(0)``), never a literal 0:
    numba compiles a callee for every signature it meets while it infers the caller's
    types, literal ones included, and each of this loop's specialisations costs half a
    minute of compiling (three callers passing literals made 26 of them where 10 serve)."""
    on = active(extras)
    use_tt = on and extras.tt.shape[0] > 0
    mask = extras.tt.shape[0] - 1
    blanks, it, automaton, k0s, k1s = stacks[0], stacks[1], stacks[2], stacks[3], stacks[4]
    counters[BOUND] = bound // extras.gw if on else bound  # wida: g + W x h, in moves
    h0 = hs[0, 0]
    f0 = extras.gw * g0 + extras.hw * h0 if on else g0 + h0
    if f0 > bound:
        return NOT_FOUND, f0, 0, 0, 0, n, 0, INF
    if h0 == 0:
        return FOUND, bound, 0, 0, 0, n, 0, 0
    next_bound = INF
    expanded, generated, cuts = 1, 0, 0
    closest = h0
    reported_e, reported_g = 0, 0
    spent = np.int64(0)  # of ``generated``, added to claims[SPENT] (spend)
    depth = 0
    blanks[0] = root_blank
    automaton[0] = root_state
    it[0] = 0
    for k in range(4):  # the root's children are ranked by h_update: look_ahead runs
        stacks[FIRST + READ * k + READ - 1, 0] = -1  # where a node is expanded, its one call site
    if use_tt:
        k0s[0], k1s[0] = key_of(board, board.shape[0], extras.bits, extras.per)
        tt_seen(extras.tt, slot_of(k0s[0], k1s[0], mask), k0s[0], k1s[0], 0, iteration + 1)
    status = NOT_FOUND
    length = 0
    while True:
        depth, c, next_state = next_child(board, pos, moves, nmoves, fsm, blanks, it, automaton,
                                          depth)
        if c < 0:
            if depth < 0:
                break
            continue
        b = blanks[ix(depth)]
        t = slide(board, pos, c, b)
        generated += 1
        g = g0 + depth + 1
        if use_tt:  # its slot loads while the heuristic is evaluated
            c0, c1 = key_moved(k0s[depth], k1s[depth], t, c, b, board.shape[0], extras.bits, extras.per)
            slot = slot_of(c0, c1, mask)
            prefetch(extras.tt, slot)
        # One call of the inlined h_update, not one per branch: each inlined copy costs
        # seconds of compiling (the first solve on a machine waits for them).
        limit = (bound - extras.gw * g) // extras.hw if on else bound - g
        h = h_update(H, s, board, pos, hs[ix(depth)], hs[ix(depth + 1)], t, c, b, limit,
                     looked_ahead(H, stacks, it, depth))
        f = extras.gw * g + extras.hw * h if on else g + h
        if f > bound or (on and h > 0 and g >= extras.max_depth):
            n = record(events, n, iteration, g, h, c, PRUNED_NODE)
            if bound < f < next_bound:
                next_bound = f
            slide(board, pos, b, c)
            continue
        if h == 0:
            n = record(events, n, iteration, g, h, c, GOAL_NODE)
            status = FOUND
            length = path_to(path, blanks, depth, c)
            break
        if use_tt:
            if tt_seen(extras.tt, slot, c0, c1, g, iteration + 1):
                cuts += 1
                slide(board, pos, b, c)
                continue
            k0s[depth + 1], k1s[depth + 1] = c0, c1
        n = record(events, n, iteration, g, h, c, EXPANDED_NODE)
        depth += 1
        blanks[ix(depth)] = c
        automaton[ix(depth)] = next_state
        it[ix(depth)] = 0
        look_ahead(H, board, pos, moves, nmoves, fsm, hs[ix(depth)], stacks, depth, c, next_state)
        expanded += 1
        if h < closest:
            closest = h
        status, reported_g, reported_e = poll(counters, stop, budget, generated, expanded,
                                              reported_g, reported_e)
        if expanded & (SHARE_POLL - 1) == 0:  # (POLL is a multiple of SHARE_POLL)
            if claims[0] >= ALL_CLAIMED:
                status = STOPPED  # another search of this iteration found the goal
            elif status == NOT_FOUND and expanded & (POLL - 1) == 0 and claims[SHARED_BUDGET] >= 0:
                status, spent = spend(claims, generated, spent)
        if status != NOT_FOUND:
            break
    if status == STOPPED or status == BUDGET:
        unwind(board, pos, blanks, depth)  # so the caller's board is intact
    if claims[SHARED_BUDGET] >= 0:
        spend(claims, generated, spent)
    publish(counters, generated, expanded, reported_g, reported_e)
    return status, next_bound, expanded, generated, length, n, cuts, closest


@njit(cache=True, nogil=True)
def ida(H, s, board, pos, moves, nmoves, fsm, hs, blank, budget, stop, counters, path, bounds,
        nodes, events, extras, hand_off):
    """Iterative deepening from the root's f: each bound is the previous minimum overshoot.

    bounds[i], nodes[i] receive each iteration's bound and nodes generated; events the
    nodes generated while rows are left (see above); ``extras`` those of kernels.ida_tt
    (IDA*+TT, WIDA*) or no_extras() (IDA*). ``hand_off`` >= 0: return (NOT_FOUND) after
    the first iteration that generates at least that many nodes, with the bound to go on
    at (the threads take the larger iterations over); -1: go on to the end.
    Returns (status, length, expanded, generated, iterations, events recorded, cuts,
    next bound).
    """
    on = active(extras)
    depth_limit = extras.max_depth if on else MAX_DEPTH
    stacks = np.empty((STACKS, depth_limit + 2), dtype=np.int64)
    claims = np.zeros(CLAIMS, np.int64)  # no other search shares this one's iteration
    claims[SHARED_BUDGET] = -1
    bound = extras.hw * hs[0, 0] if on else hs[0, 0]
    expanded, generated, cuts = 0, 0, 0
    zero = n = i = np.int64(0)  # not literals: see dfs_loop
    while True:
        if not on and bound > MAX_DEPTH:  # the stacks are sized for MAX_DEPTH moves
            return BUDGET, 0, expanded, generated, i, n, cuts, bound
        left = -1  # no limit
        if budget >= 0:
            if generated >= budget:
                return BUDGET, 0, expanded, generated, i, n, cuts, bound
            left = budget - generated
        status, nb, e, g, length, n, cut, _ = dfs_loop(H, s, board, pos, moves, nmoves, fsm,
                                                       hs, blank, zero, zero, bound, left, stop,
                                                       counters, path, stacks, events, n, i,
                                                       extras, claims)
        expanded += e
        generated += g
        cuts += cut
        if i < bounds.shape[0]:
            bounds[i] = bound
            nodes[i] = g
        i += 1
        if status != NOT_FOUND or nb >= INF:
            if on and status == NOT_FOUND:  # only the depth limit stopped it
                status = BUDGET
            return status, length, expanded, generated, i, n, cuts, nb
        bound = nb
        if 0 <= hand_off <= g:
            return NOT_FOUND, 0, expanded, generated, i, n, cuts, bound


@njit(cache=True, nogil=True)
def path_violation(H, s, board, pos, rows, path, length, consistent):
    """Check a solution against the heuristic that found it: the first step i at which
    h(s_i) exceeds the moves left, or (``consistent``) differs from h(s_{i-1}) by more
    than one; -1 if none. A violation proves the heuristic wrong (a damaged table). Each
    h is computed afresh (h_init), not derived from the step before as the search derives
    it: a zero-aware search reads one bit of an entry after a move (moved_entry), so only
    whole entries can contradict it. The board is left at the goal."""
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
        h = h_init(H, s, board, pos, rows[i + 1])
        if h > length - i - 1 or (consistent and abs(h - h_prev) > 1):
            return i + 1
        h_prev = h
        b = c
    return -1
