"""The search's data types: what a caller shares with a running search (SearchControl),
a validated board (PreparedBoard), a root's kernel arrays (Root), and what the searches
return (Iterations, DfsOutcome, IterationOutcome, Tally). The solver, the threads, the
other algorithms and the cluster all speak these; none of them imports another for them.
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from pdbtool import limits, puzzle
from pdbtool.errors import BadInput, LimitReached, PdbError
from pdbtool.geometry import Shape
from pdbtool.kernels.heuristic import ROW_H
from pdbtool.kernels.ida import (BOUND, BUDGET, COUNTERS, EXPANDED, FOUND, GENERATED, INF,
                                 NOT_FOUND, STOPPED)
from pdbtool.kernels.tasks import FAR, RESULT_FIELDS, closest_first_order
from pdbtool.search import alarms
from pdbtool.search.interrupts import MAIN_THREAD_SEARCHES


LIMIT_REASONS = {STOPPED: "search stopped", BUDGET: "node budget exhausted"}  # see why_stopped


def limit_reached(status: int, generated: int, seconds: float, control, *,
                  last_bound: int | None = None, name: str = "") -> LimitReached:
    """The error of a search that ended without an answer (status STOPPED or BUDGET): the
    algorithm's ``name`` if given, why (``control.why_stopped``), the nodes, the time and
    the last bound an IDA* searched; its ``reason`` "budget", or the one the search was
    halted for."""
    where = "" if last_bound is None else f", last bound {last_bound}"
    keeper = control.checkpoint  # resumed from a file: its counts are all its sittings',
    before = control.earlier.seconds if keeper is not None and keeper.watching else 0.0
    spent = (f"{seconds:.3f} s in all, {seconds - before:.3f} s in this sitting" if before
             else f"{seconds:.3f} s")  # its timeout this sitting's (pdbd's hand-off: one)
    return LimitReached(f"{name + ': ' if name else ''}{control.why_stopped(status)} after "
                        f"{generated:,} nodes ({spent}{where})",
                        reason="budget" if status == BUDGET else control.reason or "stopped")


class PreparedBoard(NamedTuple):
    """A validated, solvable board, and its image (puzzle.Frame): what the kernels search,
    towards blank-first (any corner goal) or the goal's image."""

    board: tuple[int, ...]  # as the user gave it
    goal: str               # a goal name, or the goal board's tiles joined by commas
    image: tuple[int, ...]  # what the kernels search
    frame: puzzle.Frame
    shape: Shape | None = None  # of the solver that prepared it (Solver.search checks it)


class Root(NamedTuple):
    """Kernel arrays of a search root: cells -> tiles, tiles -> cells, heuristic rows."""

    board: np.ndarray
    pos: np.ndarray
    rows: np.ndarray  # one heuristic state row per depth; row 0 is the root's

    @property
    def h(self) -> int:
        return int(self.rows[0, ROW_H])

    def copy(self) -> Root:
        """Another search's root on the same board: its own arrays, row 0 the same."""
        rows = np.zeros_like(self.rows)
        rows[0] = self.rows[0]
        return Root(self.board.copy(), self.pos.copy(), rows)


class Iterations(NamedTuple):
    """What IDA*'s iterations from a root did in one kernel call (Solver.iterate)."""

    status: int         # FOUND, or NOT_FOUND (handed off, or no solution), STOPPED, BUDGET
    path: np.ndarray    # the blank's cells after the root (FOUND)
    expanded: int
    generated: int
    iterations: list    # {"bound", "nodes"} of each iteration
    next_bound: int     # the bound to go on at (NOT_FOUND; INF: no solution)


class SplitNodes(NamedTuple):
    """The nodes at one depth below a root, in the search's depth-first order: the roots of
    an iteration's tasks (kernels.tasks.split_nodes)."""

    cells: np.ndarray   # int64[n, depth]: the blank's cells after the root
    ends: np.ndarray    # int64[n, depth]: [i, d] the last node below node i's at depth d + 1
    states: np.ndarray  # int64[n]: the move-pruning automaton's state at the node


class DfsOutcome(NamedTuple):
    """What one bounded depth-first search of a subtree (or a thread's tasks) returns."""

    status: int       # NOT_FOUND, FOUND, STOPPED or BUDGET
    next_bound: int   # the smallest f above the bound seen (NOT_FOUND)
    expanded: int
    generated: int
    length: int       # moves of the path below the root (FOUND)
    closest: int = FAR  # the smallest h expanded (one subtree's search: Solver.dfs)


class Earlier(NamedTuple):
    """What a resumed search's earlier sittings counted: nodes generated, seconds."""

    generated: int
    seconds: float


@dataclass(eq=False)  # one search's: equal to itself only, hashable (an app's set of them)
class SearchControl:
    """What a caller shares with a running search.

    ``stop`` (int64[1]) is polled by the kernel every few thousand nodes: ``halt`` sets it.
    ``counters`` (int64[COUNTERS]: generated, expanded, bound) are published while it runs.
    ``budget`` caps the nodes generated, checked as the kernels poll ``stop`` (every
    kernels.ida.POLL, 4,096, expansions): a search may generate up to a poll's nodes past
    it (each thread, on threads), and one that finds the goal first answers whatever the
    budget (budget=1 answers an easy board); ``timeout`` (seconds) halts it with reason
    ``timeout_reason`` (default "deadline"). The first reason given to ``halt`` is kept.
    Both limits are checked as every tool checks them (pdbtool.limits). ``checkpoint``
    (checkpoint.Checkpointing): IDA* on threads saves its progress there now and then and
    resumes from it (search/checkpoint.py).

    A control serves one search: its counters add up across searches given it, and once
    halted it stops the next within a poll (an easy board may be answered before it).
    A resumed search counts across its sittings; ``earlier`` is what the sittings before
    this one counted (set when it resumes), so that a rate is this sitting's.
    """

    budget: int | None = None
    timeout: float | None = None
    stop: np.ndarray = field(default_factory=lambda: np.zeros(1, np.int64))
    counters: np.ndarray = field(default_factory=lambda: np.zeros(COUNTERS, np.int64))
    reason: str | None = None
    timeout_reason: str = "deadline"
    checkpoint: object = None  # checkpoint.Checkpointing, or None

    def __post_init__(self):
        self._lock = threading.Lock()
        self.earlier = Earlier(0, 0.0)
        if self.budget is not None:
            self.budget = limits.budget(self.budget)
        if self.checkpoint is not None and not hasattr(self.checkpoint, "watching"):
            raise BadInput(f"checkpoint must be a Checkpointing (e.g. Checkpointing(path)), "
                           f"not {self.checkpoint!r:.60}")
        if self.timeout is not None:
            self.timeout = limits.seconds(self.timeout)

    def halt(self, reason: str = "cancelled") -> None:
        with self._lock:
            if self.reason is None:
                self.reason = reason
        self.stop[0] = 1

    @property
    def halted(self) -> bool:
        return bool(self.stop[0])

    @property
    def generated(self) -> int:
        return int(self.counters[GENERATED])

    @property
    def expanded(self) -> int:
        return int(self.counters[EXPANDED])

    @property
    def bound(self) -> int:
        return int(self.counters[BOUND])

    @property
    def kernel_budget(self) -> int:
        """The budget as the kernels take it: -1 for none."""
        return -1 if self.budget is None else int(self.budget)

    def why_stopped(self, status: int) -> str:
        """Why a search under this control ended without an answer (a kernel's STOPPED or
        BUDGET), in a few words: the timeout when it halted the search, else the reason
        given to ``halt`` (it said "cancelled or deadline" whatever the reason)."""
        if status != STOPPED:
            return LIMIT_REASONS.get(status, "search limit reached")
        if self.reason is not None and self.reason == self.timeout_reason and self.timeout:
            return f"deadline reached (timeout {self.timeout:g} s)"
        return f"search stopped ({self.reason})" if self.reason else "search stopped"

    def timer(self) -> alarms.Alarm | None:
        """A set alarm that halts the search after ``timeout`` seconds, or None."""
        if self.timeout is None:
            return None
        return alarms.after(self.timeout, self.halt, self.timeout_reason)


class FrontierNode(NamedTuple):
    """A node of the root's breadth-first expansion: the root of one subtree."""

    board: tuple[int, ...]   # blank-first
    blank: int
    automaton_state: int
    path: tuple[int, ...]    # the blank's cells from the search root


class IterationOutcome(NamedTuple):
    found: list | None  # the blank's cells from the root, if the goal was reached
    next_bound: int
    expanded: int
    generated: int
    status: int         # NOT_FOUND, STOPPED or BUDGET when nothing was found


def subtree_outcome(node: FrontierNode, o: DfsOutcome, out: np.ndarray) -> IterationOutcome:
    """One subtree's search as an iteration's share: the path from the root if it found
    the goal (``out[:length]`` holds the part below the node)."""
    found = list(node.path) + out[:o.length].tolist() if o.status == FOUND else None
    status = o.status if o.status in (STOPPED, BUDGET) else NOT_FOUND
    return IterationOutcome(found, o.next_bound, o.expanded, o.generated, status)


class Tally:
    """Shares of one iteration (subtrees, or batches of them) combined as they arrive:
    the first goal found (any is optimal at this bound), the smallest overshoot, the nodes,
    and why the iteration stopped short (``stopped``: the caller's stop flag was set)."""

    def __init__(self):
        self.found, self.next_bound, self.expanded, self.generated = None, INF, 0, 0
        self.status = NOT_FOUND

    def add(self, share: IterationOutcome, stopped: bool = False) -> None:
        self.expanded += share.expanded
        self.generated += share.generated
        if share.found is not None and self.found is None:
            self.found = share.found
        elif share.status in (STOPPED, BUDGET) and self.found is None:
            self.status = STOPPED if stopped else share.status
        self.next_bound = min(self.next_bound, share.next_bound)

    def outcome(self) -> IterationOutcome:
        return IterationOutcome(self.found, self.next_bound, self.expanded, self.generated,
                                self.status)


class Tasks(NamedTuple):
    """The tasks of a search (kernels/tasks.py): the nodes at the split depth, the
    order the threads claim them in (positions into ``nodes``), how close each came to
    the goal in the last iteration (the smallest h expanded in it, or FAR), and what each
    finished task of the current iteration gave (``results``: next bound, expanded,
    generated; -1 while unfinished)."""

    nodes: SplitNodes
    order: np.ndarray
    closest: np.ndarray
    results: np.ndarray

    @classmethod
    def below(cls, solver, blank: int, split: int) -> Tasks:
        nodes = solver.split_nodes(blank, split)
        n = len(nodes.states)
        return cls(nodes, np.arange(n), np.full(n, FAR, np.int64),
                   np.full((n, RESULT_FIELDS), -1, np.int64))

    def reorder(self) -> None:
        """The next iteration's order: closest first, ties in depth-first order."""
        self.order[:] = closest_first(self.closest)


def closest_first(closest: np.ndarray) -> np.ndarray:
    """Subtrees in the order of the smallest h their search expanded (ties in their own
    order): the next iteration's order, for the threads' tasks and the cluster's frontier."""
    order = np.empty(len(closest), np.int64)
    closest_first_order(np.ascontiguousarray(closest, np.int64), order)
    return order


@contextlib.contextmanager
def envelope(control: SearchControl, source=None):
    """What surrounds every search of a prepared board, whatever runs it (one thread,
    threads, another algorithm, a cluster): the control's timeout, the table file's guard
    (``source``, trust.Pinned: a file changed meanwhile raises TableChanged), Ctrl-C on the
    main thread halting it, its checkpoint file held (Checkpointing.holding: another search
    given the same file meanwhile is refused). A search that ends with anything but an
    answer or PdbError (Ctrl-C, SIGTERM, a failure) halts the control first, so that every
    thread, kernel and cluster task of it stops (within about a millisecond) before the
    error goes on."""
    timer = control.timer()
    try:
        keeper = control.checkpoint
        with (keeper.holding() if keeper else contextlib.nullcontext(),
              source.guarding(control) if source else contextlib.nullcontext(),
              MAIN_THREAD_SEARCHES.halting(control)):
            yield
    except BaseException as e:
        if not isinstance(e, PdbError):
            control.halt("cancelled" if not isinstance(e, Exception) else "failed")
        raise
    finally:
        if timer:
            timer.cancel()
