"""Search traces: what `pdbtool solve --trace` writes and the animation (animate.py) reads.

A trace is the answer of one solve (the JSON of `pdbtool solve --json`: the solution, the
iterations with their bound and node count, ``path_h``, the h of each board along the
solution) plus, for a search on one thread, the nodes the search generated, recorded by
the search kernel itself (kernels/ida.py: its events) during the search, up to a cap.

The nodes are columns of equal length in ``events``: ``iteration``, ``g``, ``h``, ``f``,
``blank`` (the blank's cell after the move, on the board as the user gave it) and
``outcome`` (an index into ``outcomes``: expanded, pruned, goal). The bound of a node is
its iteration's. Nodes come in the order the depth-first search generates them, so a
node's parent is the last expanded node one level up in the same iteration (the root at
g = 1). With a PDB heuristic the h of a pruned node is where the lazy evaluation stopped:
a lower bound already above ``bound - g``.

Loads no numba until a search is recorded (``record``), so the web page can use it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from pdbtool import puzzle
from pdbtool.errors import BadInput, PdbError
from pdbtool.result import SolveResult
from pdbtool.tables.files import atomic_output, file_problem

TRACE_FORMAT = "pdbtool-trace"
TRACE_VERSION = 1
DEFAULT_CAP = 100_000  # nodes recorded at most: the 8-puzzle and easy 15-puzzles fit
MAX_CAP = 10_000_000  # 200 MB of memory, a JSON file about as large: more no page shows
COLUMNS = ("iteration", "g", "h", "f", "blank", "outcome")
OUTCOME_NAMES = ("expanded", "pruned", "goal")  # kernels.ida's EXPANDED_NODE, PRUNED_NODE, GOAL_NODE


@dataclass
class Trace:
    """A solve and, if recorded, its nodes (columns as described in the module)."""

    result: dict                 # SolveResult.to_dict()
    events: dict | None = None   # column -> list, or None when not recorded
    cap: int = DEFAULT_CAP
    note: str = ""               # why nodes are missing or incomplete, if they are

    @property
    def recorded(self) -> int:
        return len(self.events["g"]) if self.events else 0

    @property
    def complete(self) -> bool:
        """Every node the search generated is recorded."""
        return self.events is not None and self.recorded == self.result["nodes_generated"]

    @property
    def summary(self) -> str:
        """What the trace holds of the search's nodes, in a few words."""
        return f"all {self.recorded:,} nodes recorded" if self.complete else self.note

    def to_dict(self) -> dict:
        return {"format": TRACE_FORMAT, "version": TRACE_VERSION, "result": self.result,
                "events": self.events, "outcomes": list(OUTCOME_NAMES), "events_cap": self.cap,
                "events_recorded": self.recorded, "events_complete": self.complete,
                "note": self.note}

    def save(self, path) -> None:
        """Write the trace as JSON to ``path``, whole or not at all."""
        with atomic_output(path) as tmp:
            Path(tmp).write_text(json.dumps(self.to_dict(), separators=(",", ":")) + "\n",
                                 encoding="utf-8")


def from_result(result: SolveResult | dict, note: str = "") -> Trace:
    """A trace without nodes: the solution, the iterations and h along the path."""
    d = result.to_dict() if isinstance(result, SolveResult) else dict(result)
    return Trace(d, None, 0, note)


def from_dict(d: dict, source: str = "trace") -> Trace:
    """A trace read back from its JSON; a file that is not one is refused by name."""
    if not isinstance(d, dict) or d.get("format") != TRACE_FORMAT:
        raise BadInput(f"{source}: not a pdbtool trace (write one with pdbtool solve --trace FILE)")
    if d.get("version") != TRACE_VERSION:
        raise BadInput(f"{source}: trace version {d.get('version')!r}; this pdbtool reads "
                       f"version {TRACE_VERSION}")
    result, events = d.get("result"), d.get("events")
    if not isinstance(result, dict) or not {"board", "blank_moves", "iterations"} <= set(result):
        raise BadInput(f"{source}: the trace has no solve result")
    if events is not None and (not isinstance(events, dict) or set(events) != set(COLUMNS)
                               or not all(isinstance(events[c], list) for c in COLUMNS)
                               or len({len(events[c]) for c in COLUMNS}) != 1):
        raise BadInput(f"{source}: the trace's events are not columns {', '.join(COLUMNS)} "
                       "of equal length")
    check_replays(result, source)
    cap = d.get("events_cap", 0)
    damaged = [name for name, ok in (
        ("result.nodes_generated", whole(result.get("nodes_generated"))),
        ("result.iterations", isinstance(result["iterations"], list) and all(
            isinstance(i, dict) and whole(i.get("bound")) and whole(i.get("nodes"))
            for i in result["iterations"])),
        ("events_cap", whole(cap)),
        ("events", events is None or all(all(map(whole, events[c])) for c in COLUMNS)))
        if not ok]
    if damaged:
        raise BadInput(f"{source}: the trace is damaged (not whole numbers where they "
                       f"belong: {', '.join(damaged)})")
    wrong = out_of_range(result, events)
    if wrong:
        raise BadInput(f"{source}: the trace is damaged ({wrong})")
    return Trace(result, events, cap, str(d.get("note", "")))


def out_of_range(result: dict, events: dict | None) -> str | None:
    """What of a trace's whole numbers lies outside what its search can have written (an
    edited trace passed, and its page failed in the browser), or None."""
    cells = len(result["board"])
    path_h = result.get("path_h", [])
    if not (isinstance(path_h, list) and all(map(whole, path_h))
            and len(path_h) in (0, len(result["blank_moves"]) + 1)):
        return "path_h is not the h of each board along the solution"
    if events is None or not events["outcome"]:
        return None
    for column, limit in (("outcome", len(OUTCOME_NAMES)), ("blank", cells),
                          ("iteration", len(result["iterations"]))):
        if max(events[column]) >= limit:
            return f"events' {column} reaches {max(events[column])}, beyond {limit - 1}"
    if len(events["outcome"]) > result["nodes_generated"]:
        return (f"{len(events['outcome']):,} events of a search that generated "
                f"{result['nodes_generated']:,} nodes")
    return None


def whole(x) -> bool:
    """A whole number >= 0 (JSON's integers; not a boolean)."""
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


def check_replays(result: dict, source: str) -> None:
    """BadInput unless the trace's result is a board whose moves take it to its goal in
    its length: a damaged or edited trace is refused, never animated."""
    try:
        shape = (result["rows"], result["cols"]) if result.get("rows") else None
        board = puzzle.validate(result["board"], shape)
        shape = puzzle.shape_of(board, shape)
        target = puzzle.frame(shape, puzzle.check_goal(result["goal"], shape)).target
        letters = result["blank_moves"]
        ok = isinstance(letters, str) and len(letters) == result["length"] \
            and puzzle.apply_blank_moves(board, letters, shape) == target \
            and result.get("moves") == tiles_moved(board, letters, shape)  # the page's labels
    except (PdbError, KeyError, TypeError, ValueError, AttributeError) as e:
        raise BadInput(f"{source}: the trace's result is damaged ({e})") from None
    if not ok:
        raise BadInput(f"{source}: the trace's moves do not take its board to its goal in its "
                       "length, or its tiles moved are not those moves; the trace is damaged")


def tiles_moved(board, letters: str, shape) -> list[int]:
    """The tile each of the blank's moves slides (SolveResult.moves)."""
    tiles, cells = [], tuple(board)
    for letter in letters:
        blank = cells.index(0)
        cells = puzzle.apply_blank_moves(cells, letter, shape)
        tiles.append(cells[blank])
    return tiles


def load(path) -> Trace:
    """The trace in the file ``path``: BadInput for a file that is not a regular one (a
    FIFO waited for a writer for good), not JSON (nested past Python's limit too), or not
    a whole, consistent trace (``from_dict``)."""
    problem = file_problem(path)
    if problem:
        raise BadInput(f"{path}: {problem}")
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise BadInput(f"cannot read {path}: {e.strerror}") from None
    except UnicodeDecodeError:
        raise BadInput(f"{path}: not a pdbtool trace (not UTF-8 text)") from None
    try:
        d = json.loads(text)
    except json.JSONDecodeError as e:
        raise BadInput(f"{path}: not JSON ({e.msg}: line {e.lineno}, column {e.colno})") from None
    except RecursionError:
        raise BadInput(f"{path}: not a pdbtool trace (lists or objects nested too deep)") from None
    return from_dict(d, str(path))


def record(solver, board, goal: str = "blank-last", threads: int = 1, control=None,
           cap: int = DEFAULT_CAP, algorithm=None) -> Trace:
    """Solve ``board`` with ``solver`` (a search.solver.Solver) and trace it. On one thread the
    tracing kernel records the first ``cap`` nodes generated by IDA*; on more threads (the
    parallel search), with cap 0 or with another ``algorithm`` (algorithms.Algorithm or
    its name), only the solution, iterations and h along the path."""
    if cap > MAX_CAP:
        raise BadInput(f"--trace-cap {cap:,}: a trace records at most {MAX_CAP:,} nodes")
    prepared = solver.prepare(board, goal)
    name = getattr(algorithm, "name", algorithm) or "ida"
    if threads > 1 or cap <= 0 or name != "ida":
        why = (f"nodes not recorded: the search ran on {threads} threads and the tracing "
               "kernel is serial" if threads > 1 else "nodes not recorded (cap 0)" if cap <= 0
               else f"nodes not recorded: the tracing kernel is IDA*'s, the search ran {name}")
        return from_result(solver.search(prepared, control, threads=threads, algorithm=algorithm), why)
    import numpy as np

    from pdbtool.kernels.ida import EVENT_FIELDS, EV_CELL, EV_G, EV_H, EV_ITERATION, EV_OUTCOME

    rows = np.zeros((cap, EVENT_FIELDS), dtype=np.int32)
    result = solver.search(prepared, control, events=rows)
    result.peak_memory_bytes += rows.nbytes  # the recorded nodes are the search's memory too
    rows = rows[:min(cap, result.nodes_generated)]
    # The kernel searched the goal's image (puzzle.Frame): map its cells back to the user's.
    cells = np.argsort(np.asarray(prepared.frame.cells))[rows[:, EV_CELL]]
    g, h = rows[:, EV_G], rows[:, EV_H]
    events = {"iteration": rows[:, EV_ITERATION].tolist(), "g": g.tolist(), "h": h.tolist(),
              "f": (g + h).tolist(), "blank": cells.tolist(), "outcome": rows[:, EV_OUTCOME].tolist()}
    trace = Trace(result.to_dict(), events, cap)
    if not trace.complete:
        trace.note = (f"the first {trace.recorded:,} of {result.nodes_generated:,} nodes "
                      f"recorded (cap {cap:,}); the search went on unrecorded")
    return trace
