"""Catalogues of tile partitions, read from the data files in ``catalogues/``.

A catalogue is several additive partitions of the tiles; each partition is a set of
disjoint groups. The heuristic is the maximum over the partitions of the sum of their
groups' table values (each partition also on the reflected board). A plain partition
such as Korf & Felner's 6-6-6-6 is a catalogue of one partition.

File format (``NAME.cat``): ``# name: 24/small``, ``# strength: N`` (to choose among the
artifacts for one board shape: the larger wins), ``# note: ...`` and, for a board that is
not square, ``# shape: ROWSxCOLS`` header lines (without it the board is the smallest
square that holds the tiles); then one
group per line (tiles separated by commas), a blank line between partitions; other lines
starting with ``#`` are comments. Tiles are named in the blank-first convention (tile t's
goal cell is t, blank in cell 0); tables serve blank-last boards through the isomorphism in
puzzle.py.
"""

from __future__ import annotations

import math

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import NamedTuple

from pdbtool.errors import BadInput
from pdbtool.geometry import Shape, blank_region, symmetries
from pdbtool.puzzle import MIN_SIDE, SEARCH_MAX_SIDE
from pdbtool.kernels.ranking import regions, table_size

DATA = Path(__file__).with_name("catalogues")


class GroupPlan(NamedTuple):
    """How one group of a catalogue reads its table."""

    tiles: tuple[int, ...]     # the group's tiles, in the order of the table's tiles
    table: int                 # index of the table in the plan
    cell_map: tuple[int, ...]  # board cell -> cell in the table's frame
    partition: int             # which additive partition of the catalogue it belongs to


class TablePlan(NamedTuple):
    """The tables a catalogue needs (goal cell = tile) and how each group reads one."""

    tables: list[tuple[int, ...]]
    groups: list[GroupPlan]


@dataclass(frozen=True)
class Catalogue:
    name: str
    shape: Shape
    partitions: tuple[tuple[tuple[int, ...], ...], ...]
    note: str
    strength: int

    @property
    def cells(self) -> int:
        return self.shape.cells

    @property
    def groups(self) -> list[tuple[int, ...]]:
        return [g for p in self.partitions for g in p]

    def table_bytes(self, zero_aware: bool = True) -> int:
        """Bytes of the artifact's tables: 4 bits per entry of each distinct table."""
        return sum((regions(self.shape, len(t), zero_aware).entries + 1) // 2
                   for t in plan_tables(self).tables)

    def served_bytes(self, zero_aware: bool = True) -> int:
        """Memory a search reads of the artifact: the mapped tables and, zero-aware, their
        parity bits (a bit an entry, derived at load: pattern_db.parity_of)."""
        tables = self.table_bytes(zero_aware)
        return tables + ((tables + 3) // 4 if zero_aware else 0)

    def build_bytes(self, zero_aware: bool = True, at_once: int = 1) -> int:
        """Peak memory of building ``at_once`` tables at a time (the builder's worker
        processes), about: each of the largest tables' three cell masks, its distance bytes
        and its packed form, and its m! orders of m bytes (ranking.order_table: 439 MB for
        11 tiles), plus the packed tables kept."""
        mask = 2 if self.cells <= 16 else 4 if self.cells <= 32 else 8
        largest = sorted((len(t) for t in plan_tables(self).tables), reverse=True)
        working = sum(table_size(self.cells, m) * 3 * mask
                      + regions(self.shape, m, zero_aware).entries + math.factorial(m) * m
                      for m in largest[:max(1, at_once)])
        return working + self.table_bytes(zero_aware)


def parse(text: str, where: str = "catalogue") -> Catalogue:
    """A catalogue from the text of a .cat file; BadInput names what is wrong."""
    head: dict[str, str] = {}
    partitions: list[list[tuple[int, ...]]] = [[]]
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if line.startswith("#"):
            key, sep, value = line[1:].partition(":")
            if sep and key.strip() in ("name", "strength", "note", "shape"):
                head[key.strip()] = value.strip()
            continue
        if not line:
            if partitions[-1]:
                partitions.append([])
            continue
        try:
            partitions[-1].append(tuple(int(t) for t in line.split(",")))
        except ValueError:
            raise BadInput(f"{where}:{lineno}: not a group of tile numbers: {line!r}") from None
    partitions = [p for p in partitions if p]
    if "name" not in head or not partitions:
        raise BadInput(f"{where}: needs a '# name:' line and at least one group")
    if "shape" in head:
        shape = Shape.parse(head["shape"])
    else:
        n = max(t for p in partitions for g in p for t in g) + 1
        side = round(n ** 0.5)
        while side * side < n:
            side += 1
        shape = Shape(side, side)
    if not (MIN_SIDE <= shape.rows <= SEARCH_MAX_SIDE
            and MIN_SIDE <= shape.cols <= SEARCH_MAX_SIDE):  # what the searches take
        raise BadInput(f"{where}: shape {shape}: tables are for boards of {MIN_SIDE} to "
                       f"{SEARCH_MAX_SIDE} rows and columns")
    for i, p in enumerate(partitions):
        tiles = sorted(t for g in p for t in g)
        if tiles != list(range(1, shape.cells)):
            raise BadInput(f"{where}: partition {i} does not split tiles 1..{shape.cells - 1} "
                           f"into disjoint groups")
    try:
        strength = int(head.get("strength", "0"))
    except ValueError:
        raise BadInput(f"{where}: strength {head['strength']!r} is not a whole number") from None
    return Catalogue(head["name"], shape, tuple(tuple(p) for p in partitions),
                     head.get("note", ""), strength)


@cache
def catalogues() -> dict[str, Catalogue]:
    """Every catalogue shipped in catalogues/, by name."""
    out = {}
    for path in sorted(DATA.glob("*.cat")):
        c = parse(path.read_text(), path.name)
        out[c.name] = c
    return dict(sorted(out.items(), key=lambda kv: (kv[1].cells, kv[1].shape, kv[1].strength,
                                                    kv[0])))


def get(name: str) -> Catalogue:
    try:
        return catalogues()[name]
    except KeyError:
        raise BadInput(f"unknown catalogue {name!r}: choose one of {', '.join(catalogues())}") from None


def plan_tables(catalogue: Catalogue) -> TablePlan:
    """Decide which tables to build and how each group reads one.

    A group reuses an earlier table when a board symmetry maps its goal cells and the
    blank's goal region onto that table's: with the blank's moves free, the distances are
    then the same (for every region of the blank, since the symmetry maps regions too).
    """
    shape = catalogue.shape
    tables: list[tuple[int, ...]] = []
    groups: list[GroupPlan] = []
    identity = tuple(range(shape.cells))
    for pi, partition in enumerate(catalogue.partitions):
        for g in partition:
            groups.append(_reuse(shape, g, tables, pi) or _new_table(g, tables, identity, pi))
    return TablePlan(tables, groups)


def _reuse(shape, g, tables, pi) -> GroupPlan | None:
    region = blank_region(shape, set(g))
    for ti, t in enumerate(tables):
        if len(t) != len(g):
            continue
        t_region = blank_region(shape, set(t))
        for sigma in symmetries(shape):
            if {sigma[c] for c in g} == set(t) and frozenset(sigma[c] for c in region) == t_region:
                inverse = {sigma[c]: c for c in g}
                return GroupPlan(tuple(inverse[h] for h in t), ti, sigma, pi)
    return None


def _new_table(g, tables, identity, pi) -> GroupPlan:
    tables.append(tuple(sorted(g)))
    return GroupPlan(tables[-1], len(tables) - 1, identity, pi)

