"""The threads' shares of an IDA* iteration: the subtrees at a split depth, in an order.

The nodes at depth ``split`` below the root that the move-pruning automaton allows are
the roots of an iteration's subtrees, its tasks (``split_nodes`` lists them once a
search, in the depth-first order of the search: the blank's cells from the root and the
automaton's state there). Every thread runs ``search_tasks`` on its own copy of the root:
it claims the next task of ``order`` from a counter the threads share, walks to it from
the task it searched last (moves back to the two paths' common prefix, then forward,
each node tested against the bound exactly as the search tests it: a node above the
split depth with f over the bound cuts every task below it) and searches the subtree
with kernels.ida.dfs_loop. So each task is searched by exactly one thread, and the
first bound at which any thread reaches the goal is optimal, as in serial IDA*.

For each task the kernel writes down how close it came to the goal: the smallest h of a
node expanded in it (``closest``). The goal's subtree at the last bound is nearly always
among those that came closest at the bound before (on 16 of Korf & Felner's 24-puzzles at
most 42 of 1,800-4,400 subtrees came closer, in 12 of them at most 3), so the parallel
search (search/threads.py) searches the next iteration's tasks in that order; the iterations
before the last are complete, and only the last one ends sooner.
"""

import numpy as np
from numba import njit

from pdbtool.kernels.heuristic import h_update, no_first
from pdbtool.kernels.ida import (ALL_CLAIMED, BUDGET, EXPANDED, FOUND, GENERATED, INF,
                                 MAX_DEPTH, NOT_FOUND, SHARED_BUDGET, SPENT, STACKS, STOPPED,
                                 dfs_loop, halted, no_events, slide, undo, unwind)
from pdbtool.kernels.intrinsics import atomic_add, atomic_max, ix

FAR = INF  # closest[i] of a task not expanded at the bound (its root or an ancestor over it)
RESULT_BOUND, RESULT_EXPANDED, RESULT_GENERATED = 0, 1, 2  # columns of ``results``
RESULT_FIELDS = 3


@njit(cache=True, nogil=True, inline="always")
def finish(results, i, next_bound, expanded, generated):
    """Write down task i's result: its nodes first, its bound (the mark of a finished task)
    last."""
    results[ix(i), RESULT_EXPANDED] = expanded
    results[ix(i), RESULT_GENERATED] = generated
    results[ix(i), RESULT_BOUND] = next_bound


@njit(cache=True, nogil=True)
def closest_first_order(closest, order):
    """order[:] = the tasks in the order of ``closest`` (the smallest h each expanded, FAR
    for none), ties in their own order: a stable counting sort (h is small), the next
    iteration's order for the threads and the cluster (search.control.closest_first).
    numpy's stable sort took 30 us for the 900 tasks of a one-thread 15-puzzle search
    (this sort made Korf's 100 on one thread 0.974x as long). Every h a search writes is at most MAX_DEPTH (an expanded node's
    g + h is within the bound); a larger one raises ValueError rather than sizing the
    buckets by it."""
    top = 0
    for v in closest:
        if v < FAR and v > top:
            top = v
    if top > MAX_DEPTH:
        raise ValueError("closest_first_order: an h above MAX_DEPTH")
    starts = np.zeros(top + 3, np.int64)  # a bucket per h up to top, one for FAR
    for v in closest:
        starts[min(v, top + 1) + 1] += 1
    for k in range(1, starts.shape[0]):
        starts[k] += starts[k - 1]
    for i in range(closest.shape[0]):
        k = min(closest[i], top + 1)
        order[starts[k]] = i
        starts[k] += 1


@njit(cache=True, nogil=True)
def split_nodes(moves, nmoves, fsm, root_blank, split, cells, ends, states):
    """The nodes at depth ``split`` below a root whose blank is at ``root_blank``, in the
    search's depth-first order: cells[i, :split] the blank's cells after the root,
    ends[i, d] the last node below the same node at depth d + 1 as node i (those from i to
    it share cells[i, :d + 1]), states[i] the automaton's state there. Returns their number;
    once the arrays are full it only counts (call it again with arrays of that size). The
    blank's moves and the automaton do not depend on the tiles, so neither does this."""
    path = np.empty(split + 1, np.int64)
    state = np.empty(split + 1, np.int64)
    it = np.zeros(split + 1, np.int64)
    path[0], state[0] = root_blank, 0
    depth, n = 0, 0
    while depth >= 0:
        b, k = path[depth], it[depth]
        if depth == split or k == nmoves[b]:
            if depth == split:
                if n < cells.shape[0]:
                    cells[n, :] = path[1:]
                    states[n] = state[depth]
                n += 1
            depth -= 1
            continue
        it[depth] = k + 1
        move = moves[b, k]
        nstate = fsm[state[depth], move & 3]
        if nstate >= 0:
            depth += 1
            path[depth], state[depth], it[depth] = move >> 2, nstate, 0
    if n <= cells.shape[0]:
        for i in range(n - 1, -1, -1):
            common = 0  # the depth of the deepest node above both i and i + 1
            while i + 1 < n and common < split and cells[i, common] == cells[i + 1, common]:
                common += 1
            for d in range(split):
                ends[i, d] = ends[i + 1, d] if d < common else i
    return n


@njit(cache=True, nogil=True)
def search_tasks(H, s, board, pos, moves, nmoves, fsm, hs, root_blank, cells, ends, states,
                 order, bound, budget, stop, counters, path, claims, closest, results, extras):
    """Search the tasks of ``order`` (indices into cells, ends and states, see split_nodes)
    that this thread claims from ``claims[0]`` (kernels.ida.new_claims: zero at the start
    of the iteration, shared by the threads, as is their node budget), each under
    ``bound``, from the root whose state row is hs[0] (hs has a row for every depth).
    Writes closest[i] for every task i it walks to and FAR for the tasks it skips.
    ``extras`` is kernels.ida_tt.no_extras() (the tasks are plain IDA*).

    ``results`` (int64[tasks, RESULT_FIELDS]) holds what each finished task gave: its next
    bound, then expanded and generated nodes; -1 in every field of a task not finished. A
    thread writes a task's row when it has searched it (or cut it at the walk) to the end
    of the bound, the nodes before the bound (a reader that finds the bound set finds the
    nodes), and skips a task whose row is set when it claims it: a search resumed from a
    checkpoint (search/checkpoint.py) searches only what was left.

    ``order`` is the depth-first order, or closest-first as search/threads.py makes it from the
    iteration before (ties and the FAR tasks in depth-first order). In either, the tasks
    below a node over the bound are consecutive (a node over this bound was over the one
    before, so its tasks were all FAR), and a thread that finds one skips them all: the
    early iterations of a search have thousands of tasks and few nodes, and most of the
    tasks lie below nodes over the bound.

    Stops when every task is claimed, at the goal (FOUND: it sets claims[0] to ALL_CLAIMED,
    and the other threads stop within kernels.ida.SHARE_POLL expansions), at the stop
    flag or at the node budget (budget < 0: none; the threads' shared budget, see
    kernels.ida.dfs, is looked at before each task and at the polls below it). Returns
    (status, next bound, expanded, generated, length); on FOUND path[:length] holds the
    blank's cells after the root, otherwise board and pos are back at the root. The
    walks' nodes (the search's nodes above the split depth) are counted as serial IDA*
    counts them, once an iteration, in whatever order the tasks are searched: each belongs
    to the first task below it in depth-first order (``fresh``), which counts it in its row
    of ``results`` when it is generated or expanded on the way to that task. So an
    iteration counts the same nodes whatever the order, the threads and the sittings (a
    resumed search): serial IDA*'s but for the root's expansion and the rare nodes above
    the split depth with no task below them (every way on pruned by the automaton)."""
    stacks = np.empty((STACKS, MAX_DEPTH + 2), np.int64)
    blanks = np.empty(cells.shape[1] + 1, np.int64)
    return tasks_loop(H, s, board, pos, moves, nmoves, fsm, hs, root_blank, cells, ends, states,
                      order, bound, budget, stop, counters, path, claims, closest, results,
                      extras, stacks, blanks, no_events())


@njit(cache=True, nogil=True, _nrt=False)
def tasks_loop(H, s, board, pos, moves, nmoves, fsm, hs, root_blank, cells, ends, states,
               order, bound, budget, stop, counters, path, claims, closest, results, extras, stacks,
               blanks, events):
    """search_tasks over its arrays: the stacks of dfs_loop, ``blanks`` (int64[split + 1],
    the blank's cells down to the board's depth) and no events. Compiled without numba's
    reference counting, as dfs_loop is: the walks call h_update, which would otherwise
    count references to each of the heuristic's arrays at every call."""
    split = cells.shape[1]
    zero = np.int64(0)  # not the literal 0: see kernels.ida.dfs_loop
    blanks[0] = root_blank
    at = 0  # the board's depth: the node at blanks[at]
    status, next_bound, expanded, generated, length = NOT_FOUND, INF, 0, 0, 0
    while status == NOT_FOUND:
        status = halted(stop, budget, generated)
        if status == NOT_FOUND and 0 <= claims[SHARED_BUDGET] < claims[SPENT]:
            status = BUDGET  # the threads together are past their budget
        if status != NOT_FOUND:
            break
        j = atomic_add(claims, 0, 1)
        if j >= order.shape[0]:
            break  # every task claimed, or another thread found the goal (ALL_CLAIMED)
        i = order[j]
        if results[ix(i), RESULT_BOUND] >= 0:
            continue  # finished before this search was resumed: its row says how
        closest[i] = FAR
        fresh = 0  # the nodes deeper than this on the way to task i are its own to count
        if i > 0:  # (those above were counted by an earlier task in depth-first order)
            while fresh < split and cells[i - 1, fresh] == cells[i, fresh]:
                fresh += 1
        walk_e, walk_g = zero, zero
        common = 0
        while common < at and cells[i, common] == blanks[common + 1]:
            common += 1
        while at > common:  # back to the common prefix
            undo(board, pos, blanks, at)
            at -= 1
        while at < split:  # forward to the task, as the search would go
            c, b = cells[i, at], blanks[at]
            t = slide(board, pos, c, b)
            h = h_update(H, s, board, pos, hs[ix(at)], hs[ix(at + 1)], t, c, b,
                         bound - at - 1, no_first())
            if at + 1 + h > bound:
                next_bound = min(next_bound, at + 1 + h)
                slide(board, pos, b, c)
                walk_e, walk_g = max(zero, at - fresh), max(zero, at + 1 - fresh)
                finish(results, i, at + 1 + h, walk_e, walk_g)
                if at < split - 1:  # every task below this node: past them at once
                    for k in range(i + 1, ends[i, at] + 1):
                        closest[k] = FAR
                        finish(results, k, at + 1 + h, zero, zero)
                    atomic_max(claims, 0, j + 1 + ends[i, at] - i)
                break
            at += 1
            blanks[at] = c
            if h == 0:  # the goal, above the split depth or at it
                status = FOUND
                walk_e, walk_g = max(zero, at - 1 - fresh), max(zero, at - fresh)
                break
        if at == split:  # its own nodes on the way: depths fresh + 1 to split
            walk_e, walk_g = max(zero, split - 1 - fresh), max(zero, split - fresh)
        expanded += walk_e
        generated += walk_g
        counters[EXPANDED] += walk_e
        counters[GENERATED] += walk_g
        if claims[SHARED_BUDGET] >= 0:
            atomic_add(claims, SPENT, walk_g)
        if status == FOUND:
            length = at
            break
        if at < split:
            continue  # the task's node or an ancestor is over the bound
        left = -1 if budget < 0 else max(0, budget - generated)
        st, nb, e, g, below, _, _, near = dfs_loop(
            H, s, board, pos, moves, nmoves, fsm, hs[split:], blanks[split], states[i],
            split, bound, left, stop, counters, path[split:], stacks, events, zero, zero,
            extras, claims)
        expanded += e
        generated += g
        next_bound = min(next_bound, nb)
        closest[i] = near
        if st == NOT_FOUND:
            finish(results, i, nb, walk_e + e, walk_g + g)
        if st == FOUND:
            status, length = FOUND, split + below
        elif st != NOT_FOUND:
            status = st
    if status == FOUND:
        claims[0] = ALL_CLAIMED
        for d in range(at):  # the path down to the task (the rest is below it)
            path[d] = blanks[d + 1]
    else:
        if status == NOT_FOUND and claims[0] >= ALL_CLAIMED:
            status = STOPPED  # another thread found the goal
        unwind(board, pos, blanks, at)
    return status, next_bound, expanded, generated, length
