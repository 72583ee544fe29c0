"""What a Solve request asks for besides its tiles, checked and decided once: the algorithm,
the goal and the solver for the board's size and goal (``Choice``); and the last choice of a
batch, which the next board that asks alike takes as it is (``Choices``).

Everything here depends on the request's fields other than the tiles (their number aside),
and on the tables served: a batch's boards nearly always ask alike, and checking the size,
the goal and the algorithm again for each cost about 15 us a board, more than the rest of
its admission (docs/bench-history/2026-11-26-solve-batch-overhead.md). The board itself is
validated for each (``Solver.prepare``), as in-process solving validates it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from pdbtool import puzzle
from pdbtool.errors import BadInput
from pdbtool.search.algorithms import Algorithm
from pdbtool.search.solver import Solver
from pdbtool.selection import Solvers, TableSet

from . import convert
from .wire import EMPTY_BOARD

if TYPE_CHECKING:
    from .servicer import Limits, Served


class Choice(NamedTuple):
    """A request's algorithm (lowered to the server's memory limit, and whether that limit
    binds), its goal's canonical text and the solver for its size and goal, on the tables
    ``served``."""

    served: Served
    algorithm: Algorithm
    server_memory: bool
    goal: str
    solver: Solver


def choice_key(request) -> tuple:
    """The fields of ``request`` (a SolveRequest) that a Choice depends on: all but the
    tiles and the node budget, and the number of tiles."""
    r = request
    return (len(r.tiles), r.rows, r.cols, r.goal, r.algorithm, r.weight, r.tt_size,
            r.max_memory)


def choose(served: Served, request, limits: Limits) -> Choice:
    """The Choice for ``request`` on the tables ``served``; BadInput (the algorithm, the
    shape, the goal, or no table for the size) as Solve has always said it."""
    algorithm, server_memory = limits.algorithm(convert.algorithm_fields(request))
    goal, solver = solver_for(served, request, algorithm)
    return Choice(served, algorithm, server_memory, goal, solver)


def solver_for(served: Served, request, algorithm: Algorithm) -> tuple[str, Solver]:
    """The goal's canonical text and the solver for the board's size and goal. Goals whose
    blank is not in a corner (of a size the tables serve), and greedy solves of any size,
    get a table-free solver (pdbtool.selection.Solvers decides; made per choice, so no
    request grows what the server holds). The tiles are looked at only to name what is
    wrong with a board no solver serves."""
    tiles = request.tiles
    if not tiles:
        raise BadInput(EMPTY_BOARD)
    given = convert.request_shape(request)
    shape = puzzle.shape_of(tiles, given)
    goal = puzzle.check_goal(request.goal or convert.DEFAULT_GOAL, given)
    solver = None
    if shape.cells == len(tiles) and puzzle.MIN_SIDE <= min(shape) and max(shape) <= puzzle.MAX_SIDE:
        if algorithm.name == "greedy" or (shape in served.solvers
                                          and puzzle.frame(shape, goal).goal_blank):
            solver = Solvers(tables=TableSet({})).for_goal(shape, goal, algorithm)
        else:
            solver = served.solvers.get(shape)
    if solver is None:
        puzzle.validate(tiles, given)  # names what is wrong with a malformed board
        sizes = ", ".join(f"{s} ({s.cells} tiles)" for s in sorted(served.solvers))
        raise BadInput(f"no loaded table serves {shape} boards ({len(tiles)} tiles); "
                       f"this server serves {sizes}")
    algorithm.check_shape(shape)
    return goal, solver


class Choices:
    """The last Choice of a batch and the key it was made for (``choice_key``): a board
    that asks alike, on the same tables, takes it (``get``); another key, or a reload
    (other tables held for the board), chooses anew. One entry: a call whose boards ask in
    turn for many things holds no more than one of them. Used by the batch's reader
    thread only."""

    def __init__(self):
        self._key: tuple | None = None
        self._choice: Choice | None = None

    def get(self, served: Served, request, limits: Limits) -> Choice:
        key = choice_key(request)
        choice = self._choice
        if choice is not None and choice.served is served and key == self._key:
            return choice
        choice = choose(served, request, limits)  # a failure is not kept: each says its own
        self._key, self._choice = key, choice
        return choice
