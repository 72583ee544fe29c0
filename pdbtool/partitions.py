"""The catalogue of tile partitions, by name, and the geometry that goes with them.

Tiles are named in the blank-first convention (tile t's goal cell is t, blank in cell 0);
tables serve blank-last boards through the isomorphism in puzzle.py. Groups are compact
blocks of goal cells, since tiles that interact belong in the same group.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from .errors import BadInput
from .geometry import blank_region, symmetries
from .ranking import table_size


class GroupPlan(NamedTuple):
    """How one group of a partition reads its table."""

    tiles: tuple[int, ...]     # the group's tiles, in the order of the table's tiles
    table: int                 # index of the table in the plan
    cell_map: tuple[int, ...]  # board cell -> cell in the table's frame


class TablePlan(NamedTuple):
    """The tables a partition needs (goal cell = tile) and how each group reads one."""

    tables: list[tuple[int, ...]]
    groups: list[GroupPlan]


@dataclass(frozen=True)
class Partition:
    name: str
    side: int
    groups: tuple[tuple[int, ...], ...]
    note: str
    strength: int  # to choose among the artifacts for one board size: the larger wins

    @property
    def cells(self) -> int:
        return self.side * self.side

    def group_sizes(self) -> list[int]:
        return [table_size(self.cells, len(g)) for g in self.groups]

    def table_bytes(self) -> int:
        """Bytes of the artifact's tables: one per entry of each table actually built."""
        return sum(table_size(self.cells, len(t)) for t in plan_tables(self).tables)

    def build_bytes(self) -> int:
        """Peak memory of the build, about: the largest table's three cell masks and its
        distance byte, plus the finished tables kept for writing."""
        mask = 2 if self.cells <= 16 else 4
        largest = max(table_size(self.cells, len(g)) for g in self.groups)
        return largest * (3 * mask + 1) + self.table_bytes()


CATALOGUE = {p.name: p for p in [
    Partition("8/full", 3, ((1, 2, 3, 4, 5, 6, 7, 8),),
              "all eight tiles: the exact 8-puzzle distances (half the placements are unreachable)",
              100),
    Partition("15/5-5-5", 4, ((1, 2, 3, 6, 7), (4, 5, 8, 9, 12), (10, 11, 13, 14, 15)),
              "top row with 6-7, left block, bottom-right block", 10),
    Partition("15/6-6-3", 4, ((1, 2, 3, 5, 6, 7), (4, 8, 9, 12, 13, 14), (10, 11, 15)),
              "top two rows, bottom-left block, the three at the right", 20),
    Partition("15/7-8", 4, ((1, 2, 3, 4, 5, 6, 7), (8, 9, 10, 11, 12, 13, 14, 15)),
              "Korf & Felner (2002): top two rows and bottom two rows", 30),
    Partition("24/6-6-6-6", 5, ((1, 5, 6, 10, 11, 12), (2, 3, 4, 7, 8, 9),
                                (13, 14, 18, 19, 23, 24), (15, 16, 17, 20, 21, 22)),
              "Korf & Felner (2002) Figure 5; the last three groups are rotations of one shape", 10),
]}

def get(name: str) -> Partition:
    try:
        return CATALOGUE[name]
    except KeyError:
        raise BadInput(f"unknown partition {name!r}: choose one of {', '.join(CATALOGUE)}") from None


def plan_tables(partition: Partition) -> TablePlan:
    """Decide which tables to build and how each group reads one.

    A group reuses an earlier table when a board symmetry maps its goal cells and the
    blank's goal region onto that table's: with the blank's moves free, the distances are
    then the same.
    """
    side = partition.side
    tables: list[tuple[int, ...]] = []
    groups: list[GroupPlan] = []
    identity = tuple(range(side * side))
    for g in partition.groups:
        region = blank_region(side, set(g))
        use = None
        for ti, t in enumerate(tables):
            t_region = blank_region(side, set(t))
            for sigma in symmetries(side):
                if {sigma[c] for c in g} == set(t) and frozenset(sigma[c] for c in region) == t_region:
                    inverse = {sigma[c]: c for c in g}
                    use = GroupPlan(tuple(inverse[h] for h in t), ti, sigma)
                    break
            if use:
                break
        if use is None:
            tables.append(tuple(sorted(g)))
            use = GroupPlan(tables[-1], len(tables) - 1, identity)
        groups.append(use)
    return TablePlan(tables, groups)
