"""Which heuristic serves a board shape: the policy both tools share.

The strongest artifact per board shape wins (an artifact of a rectangle serves its
transpose too: a 3x4 table serves 4x3 boards) (``Catalogue.strength``, zero-aware tables
before min-over-blank ones of the same catalogue). The daemon opens and checks every
artifact of its directory, not only the chosen ones, so a damaged file is an error and
never silently skipped; `pdbtool solve` (``Solvers``) every artifact that serves the
board's shape (the others' metadata read). An entry named like an artifact that is no
regular file (a dangling symbolic link, a directory, a FIFO) is an error either way. With
no table for a size, the table-free fallback is said in the heuristic's note, which every
answer carries.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np

from pdbtool import puzzle
from pdbtool.errors import (ArtifactError, BadInput, NotAFile, PdbError, WrongForm,
                            not_a_directory)
from pdbtool.geometry import SHAPE_FORMS, Shape, as_shape
from pdbtool.heuristics.pattern_db import heuristic_from
from pdbtool.heuristics.table_free import WALKING_MAX_CELLS, Heuristic, table_free
from pdbtool.loading import load_heuristic
from pdbtool.loading import Trusted, open_trusted
from pdbtool.search.solver import Solver
from pdbtool.search.warm import pending
from pdbtool.tables import artifact, catalogue

DEFAULT_ARTIFACTS = "artifacts"
def fallback_name(shape: Shape) -> str:
    """The table-free heuristic a shape falls back to: walking distance on 4x4 and on
    rectangles of up to WALKING_MAX_CELLS cells, linear conflict otherwise."""
    if shape == (4, 4) or (not shape.square and shape.cells <= WALKING_MAX_CELLS):
        return "walking-distance"
    return "linear-conflict"


@dataclass(frozen=True)
class TableSet:
    """The strongest heuristic per board shape in a directory, and every artifact read."""

    heuristics: dict[Shape, Heuristic]  # a square's side as a key is read as its Shape
    loaded: tuple[Trusted, ...] = ()  # every artifact opened, in name order

    def __post_init__(self):
        object.__setattr__(self, "heuristics",
                           {as_shape(k): h for k, h in self.heuristics.items()})

    @property
    def shapes(self) -> list[Shape]:
        return sorted(self.heuristics)

    @property
    def artifacts(self) -> tuple[artifact.ArtifactMeta, ...]:
        return tuple(t.meta for t in self.loaded)

    @property
    def serving(self) -> tuple[Trusted, ...]:
        """The artifacts read that some shape's heuristic reads (a weaker table beside a
        stronger one of its shape is loaded and checked, and then serves nothing)."""
        read = {h.artifact_path for h in self.heuristics.values()}
        return tuple(t for t in self.loaded if str(t.meta.path) in read)


def strength(meta: artifact.ArtifactMeta) -> int:
    known = catalogue.catalogues().get(meta.partition)
    return 2 * (known.strength if known else 0) + int(meta.zero_aware)


def load_directory(directory, *, reflect: bool = True, require: bool = False,
                   shapes=None) -> TableSet:
    """One pass over the directory: each artifact's HDF5 file is opened once (its
    metadata), its tables mapped and checked (loading.open_trusted). With ``require``, a
    directory without artifacts is an error. ``shapes``: only the artifacts that serve one
    of these shapes are mapped and checked, the others' metadata read (a file without a
    stamp is checked whole, minutes for 15/7-8: not for a 3x3 board)."""
    d = Path(directory)
    if not d.is_dir():  # the user's input, exit 2, as a path that names no file
        raise NotAFile(not_a_directory(d))
    if shapes is not None:  # each in any form as_shape takes ("4x4", (3, 4), 4), or one
        if isinstance(shapes, (str, int, np.integer, Shape)) or (  # one shape alone ("3x3"
                isinstance(shapes, tuple) and len(shapes) == 2  # is not three shapes, nor
                and all(isinstance(n, (int, np.integer)) for n in shapes)):  # (3, 4) two)
            shapes = [shapes]
        if not isinstance(shapes, Iterable):
            raise BadInput(f"shapes is a list of shapes ({SHAPE_FORMS}), not {shapes!r:.60}")
        shapes = {as_shape(s) for s in shapes}
    entries = artifact.scan_artifacts(d)
    bad = [f"{p.name}: {problem}" for p, problem in entries if problem]
    if bad:
        raise ArtifactError(f"{d}: entries named like artifacts that cannot be read: "
                            f"{'; '.join(bad)}; remove or fix them")
    best: dict[Shape, tuple[int, Heuristic]] = {}
    loaded = []
    try:
        for path, _ in entries:
            if shapes is not None and not serves(artifact.read_meta(path).shape, shapes):
                continue
            opened = open_trusted(path)
            loaded.append(opened)
            shape = opened.meta.shape
            served = [heuristic_from(opened.meta, opened.data, reflect, opened.pin)]
            if not shape.square:  # its transpose too
                served.append(heuristic_from(opened.meta, opened.data, reflect, opened.pin,
                                             shape.transposed))
            for h in served:
                if h.shape not in best or strength(opened.meta) > best[h.shape][0]:
                    best[h.shape] = (strength(opened.meta), h)
        if require and not loaded:
            raise ArtifactError(f"{d}: no artifacts (*.h5) to serve; {packed_or_build(d)}")
    except BaseException as e:  # one file refused: the others opened so far are let go too
        release(loaded)
        if isinstance(e, WrongForm):  # an entry of the directory, not a path given: exit 1,
            raise ArtifactError(str(e)) from None  # as the entries that cannot be read
        raise
    return TableSet({shape: h for shape, (_, h) in best.items()}, tuple(loaded))


def packed_or_build(d: Path) -> str:
    """What gives a directory without installed tables one: unpacking the packed tables
    it holds (*.pdbpack, which nothing serves as they are), else a build."""
    return packed_hint(d) or f"build one with `pdbtool build 15/5-5-5 --out {d}`"


def packed_hint(d: Path) -> str:
    """If the directory holds packed tables (*.pdbpack, which nothing serves as they are):
    the advice to unpack them; else ''."""
    packs = [p for p, problem in artifact.scan_artifacts(d, ("*.pdbpack",)) if problem is None]
    if not packs:
        return ""
    return (f"it holds packed tables ({', '.join(p.name for p in packs)}): unpack them first, "
            f"e.g. `pdbtool unpack {packs[0]} -o {d / packs[0].stem}.h5`")


def serves(shape: Shape, shapes) -> bool:
    """Whether a table of ``shape`` serves one of ``shapes`` (itself, or its transpose)."""
    return shape in shapes or (not shape.square and shape.transposed in shapes)


def release(loaded) -> None:
    """Let go of artifacts opened (Trusted): their files closed, mappings and leases gone."""
    for opened in loaded:
        opened.pin.release()


def fallback(shape, why: str) -> Heuristic:
    shape = as_shape(shape)
    name = fallback_name(shape)
    return dataclasses.replace(table_free(name, shape), note=f"{why}: fell back to {name}")


class Solvers:
    """One Solver per board shape (a Shape, or a square's side), chosen once: ``heuristic``
    (table-free, by name), else ``artifact_path`` (one file), else the strongest table in ``directory`` (default
    ./artifacts when it exists), else the announced fallback. Safe to share across threads:
    threads asking for a shape at once wait for its one load."""

    def __init__(self, *, heuristic: str | None = None, artifact_path=None, directory=None,
                 reflect: bool = True, prune: bool = True, tables: TableSet | None = None):
        if heuristic and (artifact_path or directory):  # (the options of the same names)
            raise BadInput(f"heuristic {heuristic} uses no table: give no "
                           f"{'artifact' if artifact_path else 'artifacts directory'}")
        self.heuristic, self.artifact_path = heuristic, artifact_path
        self.directory = Path(directory) if directory else None
        self.reflect, self.prune = reflect, prune
        self._tables: TableSet | None = tables  # given: loaded already (the daemon's)
        self._loaded: dict[Shape, TableSet] = {}  # else loaded here, a shape at a time (and
        # its transpose: a rectangle's file serves both)
        self._solvers: dict = {}
        self._refused: dict = {}  # shape -> the PdbError its table was refused with
        self._lock = threading.RLock()  # around choosing a Solver (and loading its table)

    def for_shape(self, shape) -> Solver:
        """The Solver of boards of ``shape`` (a Shape, or a square's side) towards a corner.
        A table refused (damaged, unreadable) is refused again for the shape's later boards,
        as it was the first time, without every check run again (a batch's lines)."""
        shape = puzzle.check_shape(shape)
        if (solver := self._solvers.get(shape)) is not None:
            return solver
        with self._lock:  # one load of a table, however many threads ask for it at once
            if shape in self._refused:
                raise self._refused[shape].with_traceback(None)
            if shape not in self._solvers:
                try:
                    self._solvers[shape] = Solver(self._choose(shape), prune=self.prune)
                except PdbError as e:
                    self._refused[shape] = e
                    raise
            return self._solvers[shape]

    def for_goal(self, shape, goal="blank-last", algorithm=None) -> Solver:
        """The Solver for boards of this shape towards ``goal``. A goal with the blank in a
        corner maps onto blank-first (puzzle.Frame): the shape's Solver serves it. Any
        other goal is served by a per-tile heuristic towards its image (the one named, or
        Manhattan, announced as a fallback). The greedy solver needs no heuristic to
        search: it gets Hamming (which goes to 20x20), for the answer's check."""
        shape = puzzle.check_shape(shape)
        gb = puzzle.frame(shape, goal).goal_blank
        with self._lock:
            if getattr(algorithm, "name", algorithm) == "greedy":
                key = ("greedy", shape, gb)
                if key not in self._solvers:
                    self._solvers[key] = Solver(table_free("hamming", shape, gb),
                                                prune=self.prune)
                return self._solvers[key]
            if gb == 0:
                return self.for_shape(shape)
            key = (shape, gb)
            if key not in self._solvers:
                if self.heuristic:
                    h = table_free(self.heuristic, shape, gb)
                else:
                    h = dataclasses.replace(
                        table_free("manhattan", shape, gb),
                        note="the goal's blank is not in a corner, and the tables (and linear "
                             "conflict, walking distance) measure towards a corner blank: fell "
                             "back to manhattan")
                self._solvers[key] = Solver(h, prune=self.prune)
            return self._solvers[key]

    def _choose(self, shape: Shape) -> Heuristic:
        if self.heuristic:
            return table_free(self.heuristic, shape)
        if self.artifact_path:
            return load_heuristic(self.artifact_path, reflect=self.reflect, shape=shape)
        directory = self.directory or Path(DEFAULT_ARTIFACTS)
        tables = self._tables if self._tables is not None else self._loaded.get(shape)
        if tables is None:  # the directory's tables for this shape only (load_directory)
            explicit = self.directory is not None
            shapes = {shape, shape.transposed}
            tables = (load_directory(directory, reflect=self.reflect, shapes=shapes)
                      if explicit or directory.is_dir() else TableSet({}))
            self._loaded.update(dict.fromkeys(shapes, tables))
        if shape in tables.heuristics:
            return tables.heuristics[shape]
        if not directory.is_dir():  # (only the default may be missing: load_directory)
            return fallback(shape, f"no table for {shape} boards (no ./{directory}/ directory "
                                   "here; --artifacts DIR names another)")
        hint = packed_hint(directory)
        return fallback(shape, f"no table for {shape} boards in {directory}/"
                               + (f" ({hint})" if hint else ""))


class Warmed(NamedTuple):
    shape: Shape
    heuristic: str
    seconds: float  # compiling, or loading from numba's cache when it holds them already


def warm(directory=None, *, threads: int = 2, starting=None, report=None) -> list[Warmed]:
    """Compile (or load from numba's cache) the kernels an IDA* search on ``threads``
    threads needs with the strongest table of each board shape in ``directory`` (default
    ./artifacts), or with the fallback heuristics of 3x3 and 4x4 boards when it holds no
    table: ``pdbtool warm``, for images and CI. ``starting(shape, heuristic name, seconds
    of compiling ahead, 0 if numba's cache holds them: warm.pending)`` before each shape's
    kernels (the tables loaded and checked by then), ``report(Warmed)`` after."""
    if directory is None and Path(DEFAULT_ARTIFACTS).is_dir():
        directory = Path(DEFAULT_ARTIFACTS)
    tables = load_directory(directory) if directory is not None else TableSet({})
    solvers = Solvers(directory=directory, tables=tables)
    done = []
    for shape in tables.shapes or [Shape(3, 3), Shape(4, 4)]:
        solver = solvers.for_shape(shape)
        parts = solver.kernel_parts(threads)
        if starting:
            starting(shape, solver.heuristic.name, pending(type(solver.heuristic.H), parts))
        start = time.perf_counter()
        solver.compile_kernels(shared="shared" in parts)
        done.append(Warmed(shape, solver.heuristic.name, time.perf_counter() - start))
        if report:
            report(done[-1])
    return done
