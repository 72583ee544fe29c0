"""The catalogue of tile partitions, by name, and the geometry that goes with them.

Tiles are named in the blank-first convention (tile t's goal cell is t, blank in cell 0);
tables serve blank-last boards through the isomorphism in puzzle.py. Groups are compact
blocks of goal cells, since tiles that interact belong in the same group.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import BadInput
from .ranking import table_size


@dataclass(frozen=True)
class Partition:
    name: str
    side: int
    groups: tuple[tuple[int, ...], ...]
    note: str

    @property
    def cells(self) -> int:
        return self.side * self.side

    def group_sizes(self) -> list[int]:
        return [table_size(self.cells, len(g)) for g in self.groups]

    def table_bytes(self) -> int:
        """Bytes of the artifact's tables: one per entry of each table actually built."""
        plan, _ = plan_tables(self)
        return sum(table_size(self.cells, len(t)) for t in plan)

    def build_bytes(self) -> int:
        """Peak memory of the build, about: the largest table's three cell masks and its
        distance byte, plus the finished tables kept for writing."""
        mask = 2 if self.cells <= 16 else 4
        largest = max(table_size(self.cells, len(g)) for g in self.groups)
        return largest * (3 * mask + 1) + self.table_bytes()


CATALOGUE = {p.name: p for p in [
    Partition("8/full", 3, ((1, 2, 3, 4, 5, 6, 7, 8),),
              "all eight tiles: the exact 8-puzzle distances (half the placements are unreachable)"),
    Partition("15/5-5-5", 4, ((1, 2, 3, 6, 7), (4, 5, 8, 9, 12), (10, 11, 13, 14, 15)),
              "top row with 6-7, left block, bottom-right block"),
    Partition("15/6-6-3", 4, ((1, 2, 3, 5, 6, 7), (4, 8, 9, 12, 13, 14), (10, 11, 15)),
              "top two rows, bottom-left block, the three at the right"),
    Partition("15/7-8", 4, ((1, 2, 3, 4, 5, 6, 7), (8, 9, 10, 11, 12, 13, 14, 15)),
              "Korf & Felner (2002): top two rows and bottom two rows"),
    Partition("24/6-6-6-6", 5, ((1, 5, 6, 10, 11, 12), (2, 3, 4, 7, 8, 9),
                                (13, 14, 18, 19, 23, 24), (15, 16, 17, 20, 21, 22)),
              "Korf & Felner (2002) Figure 5; the last three groups are rotations of one shape"),
]}

# How strong each partition is, for choosing among artifacts of one size (bigger wins).
STRENGTH = {"8/full": 100, "15/7-8": 30, "15/6-6-3": 20, "15/5-5-5": 10, "24/6-6-6-6": 10}


def get(name: str) -> Partition:
    try:
        return CATALOGUE[name]
    except KeyError:
        raise BadInput(f"unknown partition {name!r}: choose one of {', '.join(CATALOGUE)}") from None


# --- board symmetries ---------------------------------------------------------------------

def symmetries(side: int) -> list[tuple[int, ...]]:
    """The 8 symmetries of the square as cell permutations sigma[c]."""
    out = []
    for k in range(8):
        perm = []
        for c in range(side * side):
            r, col = divmod(c, side)
            if k & 4:
                r, col = col, r
            for _ in range(k & 3):
                r, col = col, side - 1 - r
            perm.append(r * side + col)
        out.append(tuple(perm))
    return sorted(set(out))


def transpose(side: int) -> tuple[int, ...]:
    """Reflection about the main diagonal, as a cell permutation."""
    return tuple((c % side) * side + c // side for c in range(side * side))


def blank_region(side: int, occupied: set[int], start: int = 0) -> frozenset[int]:
    """Cells reachable by the blank from ``start`` without crossing occupied cells."""
    seen = {start}
    stack = [start]
    while stack:
        c = stack.pop()
        r, col = divmod(c, side)
        for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1)):
            if 0 <= r + dr < side and 0 <= col + dc < side:
                nb = (r + dr) * side + col + dc
                if nb not in occupied and nb not in seen:
                    seen.add(nb)
                    stack.append(nb)
    return frozenset(seen)


def plan_tables(partition: Partition):
    """Decide which tables to build and how each group reads one.

    Returns (tables, groups): tables is a list of tile tuples to build (goal cells = tiles),
    groups a list of (tiles in table order, table index, cell map). A group reuses an
    earlier table when a board symmetry maps its goal cells and the blank's goal region
    onto that table's: with the blank's moves free, the distances are then the same.
    """
    side = partition.side
    tables: list[tuple[int, ...]] = []
    groups = []
    identity = tuple(range(side * side))
    for g in partition.groups:
        region = blank_region(side, set(g))
        use = None
        for ti, t in enumerate(tables):
            t_region = blank_region(side, set(t))
            for sigma in symmetries(side):
                if {sigma[c] for c in g} == set(t) and frozenset(sigma[c] for c in region) == t_region:
                    inverse = {sigma[c]: c for c in g}
                    use = (tuple(inverse[h] for h in t), ti, sigma)
                    break
            if use:
                break
        if use is None:
            tables.append(tuple(sorted(g)))
            use = (tables[-1], len(tables) - 1, identity)
        groups.append(use)
    return tables, groups
