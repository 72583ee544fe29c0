"""Which heuristic serves a board size: the policy both tools share.

The strongest artifact per board side wins (``Catalogue.strength``, zero-aware tables
before min-over-blank ones of the same catalogue); every artifact of a
directory is opened and checked, not only the chosen ones, so a damaged file is an error
and never silently skipped; so is an entry named like an artifact that is no regular file
(a dangling symbolic link, a directory, a FIFO). With no table for a size, the table-free fallback is said in
the heuristic's note, which every answer carries.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from pdbtool import puzzle
from pdbtool.errors import ArtifactError, BadInput, not_a_directory
from pdbtool.heuristics.pattern_db import heuristic_from
from pdbtool.heuristics.table_free import Heuristic, table_free
from pdbtool.loading import load_heuristic
from pdbtool.loading import Trusted, open_trusted
from pdbtool.search.solver import Solver
from pdbtool.tables import artifact, catalogue

DEFAULT_ARTIFACTS = "artifacts"
FALLBACK = {4: "walking-distance"}  # per side; linear conflict otherwise


@dataclass(frozen=True)
class TableSet:
    """The strongest heuristic per board side in a directory, and every artifact read."""

    heuristics: dict[int, Heuristic]
    loaded: tuple[Trusted, ...] = ()  # every artifact opened, in name order

    @property
    def sides(self) -> list[int]:
        return sorted(self.heuristics)

    @property
    def artifacts(self) -> tuple[artifact.ArtifactMeta, ...]:
        return tuple(t.meta for t in self.loaded)


def strength(meta: artifact.ArtifactMeta) -> int:
    known = catalogue.catalogues().get(meta.partition)
    return 2 * (known.strength if known else 0) + int(meta.zero_aware)


def load_directory(directory, *, reflect: bool = True, require: bool = False) -> TableSet:
    """One pass over the directory: each artifact's HDF5 file is opened once (its
    metadata), its tables mapped and checked (loading.open_trusted). With ``require``, a
    directory without artifacts is an error."""
    d = Path(directory)
    if not d.is_dir():
        raise ArtifactError(not_a_directory(d))
    entries = artifact.scan_artifacts(d)
    bad = [f"{p.name} is {problem}" for p, problem in entries if problem]
    if bad:
        raise ArtifactError(f"{d}: entries named like artifacts that cannot be read: "
                            f"{'; '.join(bad)}; remove or fix them")
    best: dict[int, tuple[int, Heuristic]] = {}
    loaded = []
    for path, _ in entries:
        opened = open_trusted(path)
        h = heuristic_from(opened.meta, opened.data, reflect, opened.pin)
        loaded.append(opened)
        if h.side not in best or strength(opened.meta) > best[h.side][0]:
            best[h.side] = (strength(opened.meta), h)
    if require and not loaded:
        raise ArtifactError(f"{d}: no artifacts (*.h5) to serve; build one with "
                            f"`pdbtool build 15/5-5-5 --out {d}`")
    return TableSet({side: h for side, (_, h) in best.items()}, tuple(loaded))


def fallback(side: int, why: str) -> Heuristic:
    name = FALLBACK.get(side, "linear-conflict")
    return dataclasses.replace(table_free(name, side), note=f"{why}: fell back to {name}")


class Solvers:
    """One Solver per board side, chosen once: ``heuristic`` (table-free, by name), else
    ``artifact`` (one file), else the strongest table in ``directory`` (default
    ./artifacts when it exists), else the announced fallback."""

    def __init__(self, *, heuristic: str | None = None, artifact_path=None, directory=None,
                 reflect: bool = True, prune: bool = True, tables: TableSet | None = None):
        if heuristic and (artifact_path or directory):
            raise BadInput(f"--heuristic {heuristic} uses no table: leave out "
                           f"{'--artifact' if artifact_path else '--artifacts'}")
        self.heuristic, self.artifact_path = heuristic, artifact_path
        self.directory = Path(directory) if directory else None
        self.reflect, self.prune = reflect, prune
        self._tables: TableSet | None = tables  # given: loaded already (the daemon's)
        self._solvers: dict[int, Solver] = {}

    def for_side(self, side: int) -> Solver:
        if side not in self._solvers:
            self._solvers[side] = Solver(self._choose(side), prune=self.prune)
        return self._solvers[side]

    def for_goal(self, side: int, goal="blank-last", algorithm=None) -> Solver:
        """The Solver for boards of this side towards ``goal``. A goal with the blank in a
        corner maps onto blank-first (puzzle.Frame): the side's Solver serves it. Any
        other goal is served by a per-tile heuristic towards its image (the one named, or
        Manhattan, announced as a fallback). The greedy solver needs no heuristic to
        search: it gets Hamming (which goes to 20x20), for the answer's check."""
        gb = puzzle.frame(side, goal).goal_blank
        if getattr(algorithm, "name", algorithm) == "greedy":
            key = ("greedy", side, gb)
            if key not in self._solvers:
                self._solvers[key] = Solver(table_free("hamming", side, gb), prune=self.prune)
            return self._solvers[key]
        if gb == 0:
            return self.for_side(side)
        key = (side, gb)
        if key not in self._solvers:
            if self.heuristic:
                h = table_free(self.heuristic, side, gb)
            else:
                h = dataclasses.replace(
                    table_free("manhattan", side, gb),
                    note="the goal's blank is not in a corner, and the tables (and linear conflict, "
                         "walking distance) measure towards a corner blank: fell back to manhattan")
            self._solvers[key] = Solver(h, prune=self.prune)
        return self._solvers[key]

    def _choose(self, side: int) -> Heuristic:
        if self.heuristic:
            return table_free(self.heuristic, side)
        if self.artifact_path:
            h = load_heuristic(self.artifact_path, reflect=self.reflect)
            if h.side != side:
                raise BadInput(f"{self.artifact_path} serves {h.side}x{h.side} boards, "
                               f"the board is {side}x{side}")
            return h
        directory = self.directory or Path(DEFAULT_ARTIFACTS)
        if self._tables is None:
            explicit = self.directory is not None
            self._tables = (load_directory(directory, reflect=self.reflect)
                            if explicit or directory.is_dir() else TableSet({}))
        if side in self._tables.heuristics:
            return self._tables.heuristics[side]
        return fallback(side, f"no table for {side}x{side} boards in {directory}/")


class Warmed(NamedTuple):
    side: int
    heuristic: str
    seconds: float  # compiling, or loading from numba's cache when it holds them already


def warm(directory=None, *, threads: int = 2, report=None) -> list[Warmed]:
    """Compile (or load from numba's cache) the kernels an IDA* search on ``threads``
    threads needs with the strongest table of each board side in ``directory`` (default
    ./artifacts), or with the fallback heuristics of 3x3 and 4x4 boards when it holds no
    table: ``pdbtool warm``, for images and CI. ``report(Warmed)`` after each side."""
    tables = (load_directory(directory) if directory is not None or
              Path(DEFAULT_ARTIFACTS).is_dir() else TableSet({}))
    solvers = Solvers(directory=directory, tables=tables)
    done = []
    for side in tables.sides or [3, 4]:
        solver = solvers.for_side(side)
        start = time.perf_counter()
        solver.compile_kernels(shared="shared" in solver.kernel_parts(threads))
        done.append(Warmed(side, solver.heuristic.name, time.perf_counter() - start))
        if report:
            report(done[-1])
    return done
