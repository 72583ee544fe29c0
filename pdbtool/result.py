"""The answer to a solve: plain data, importable without numba (gRPC clients use it)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class SolveResult:
    """One board's answer, replayed to its goal before it is returned. ``moves`` are the
    tiles slid, ``blank_moves`` the blank's steps (U, D, L, R); ``heuristic`` names what
    guided the search ("none" for the searches without one), ``initial_h`` its value at
    the start and ``artifact`` the table's content version (None without a table).
    ``to_dict()`` is the JSON of `pdbtool solve --json`, `pdbd query --json` and pdbd
    web: the same fields, with ``shape`` as size/rows/cols/tiles and ``ebf`` as
    effective_branching_factor."""

    board: tuple
    goal: str
    shape: tuple  # the board's (rows, cols): a geometry.Shape (a square's side becomes one)
    length: int
    moves: list
    blank_moves: str
    nodes_expanded: int
    nodes_generated: int
    seconds: float
    heuristic: str
    initial_h: int
    iterations: list = field(default_factory=list)  # [{"bound": b, "nodes": n}, ...]
    artifact: str | None = None
    threads: int = 1
    note: str = ""
    path_h: list = field(default_factory=list)  # h of each board along the solution
    algorithm: str = "ida"
    optimal: bool = True  # False: bounded-suboptimal (wida) or constructive (greedy)
    bound: float | None = None  # wida: the length is at most bound x optimal
    peak_memory_bytes: int = 0  # what the search itself held at its largest (not the tables)
    dropped: int | None = None     # sma: states dropped to stay within its memory
    reexpanded: int | None = None  # sma: forgotten states generated again

    def __post_init__(self):
        if isinstance(self.shape, int):
            self.shape = (self.shape, self.shape)

    def add_note(self, text: str) -> None:
        """Append ``text`` to the note ("; " between; an empty text adds nothing)."""
        if text:
            self.note = f"{self.note}; {text}" if self.note else text

    @property
    def ebf(self) -> float:
        """Effective branching factor: b with b**length = nodes generated."""
        if self.length == 0 or self.nodes_generated <= 1:
            return 0.0
        return self.nodes_generated ** (1.0 / self.length)

    def to_dict(self) -> dict:
        return {
            "board": list(self.board),
            "size": self.shape[0] if self.shape[0] == self.shape[1] else None,  # a square's side
            "rows": self.shape[0],
            "cols": self.shape[1],
            "tiles": self.shape[0] * self.shape[1] - 1,
            "goal": self.goal,
            "length": self.length,
            "moves": self.moves,
            "blank_moves": self.blank_moves,
            "nodes_expanded": self.nodes_expanded,
            "nodes_generated": self.nodes_generated,
            "seconds": round(self.seconds, 6),
            "nodes_per_second": round(self.nodes_generated / self.seconds) if self.seconds > 0 else 0,
            "heuristic": self.heuristic,
            "artifact": self.artifact,
            "initial_h": self.initial_h,
            "iterations": self.iterations,
            "effective_branching_factor": round(self.ebf, 4),
            "threads": self.threads,
            "note": self.note,
            "path_h": self.path_h,
            "algorithm": self.algorithm,
            "optimal": self.optimal,
            "bound": self.bound,
            "peak_memory_bytes": self.peak_memory_bytes,
            **({"dropped": self.dropped, "reexpanded": self.reexpanded}
               if self.dropped is not None else {}),
        }
