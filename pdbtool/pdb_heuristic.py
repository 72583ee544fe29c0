"""Pattern databases as a heuristic: lookups over memory-mapped tables, with reflection.

A lookup reads one table: the cells of its tiles, each mapped through its cell map, ranked.
A partition's groups are the direct lookups; the same groups on the board reflected about
the main diagonal are the reflected ones. Reflecting the board maps tile t at cell c to
tile T(t) at cell T(c) (T = transpose; the blank-first goal is symmetric under it), so the
reflected lookup of a group reads tiles T(g_i) through the cell map sigma(T(c)).
h = max(direct sum, reflected sum).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import artifact, heuristic_kernels as hk
from .errors import ArtifactError
from .geometry import transpose
from .heuristics import Heuristic
from .ranking import RANK_SCHEME, RANK_VERSION, weights
from .trust import open_trusted


class Lookup(NamedTuple):
    tiles: tuple[int, ...]      # the tiles read, in the table's order
    cell_map: tuple[int, ...]   # board cell -> cell in the table's frame
    offset: int                 # of the table inside the flat table data
    reflected: bool             # which sum it belongs to


def lookups(meta: artifact.ArtifactMeta, reflect: bool = True) -> list[Lookup]:
    """Every lookup of the artifact's groups, direct and (with ``reflect``) reflected."""
    side = meta.size
    T = transpose(side)
    out = []
    for g in meta.groups:
        offset = meta.tables[g.table].offset
        out.append(Lookup(g.tiles, g.cell_map, offset, False))
        if reflect:
            out.append(Lookup(tuple(T[t] for t in g.tiles),
                              tuple(g.cell_map[T[c]] for c in range(side * side)), offset, True))
    return out


def check_layout(meta: artifact.ArtifactMeta) -> None:
    """Refuse an artifact this solver cannot read correctly (never guess)."""
    where = meta.path
    if meta.rank_scheme != RANK_SCHEME or meta.rank_version != RANK_VERSION:
        raise ArtifactError(f"{where}: rank scheme {meta.rank_scheme} v{meta.rank_version}, "
                            f"this pdbtool ranks with {RANK_SCHEME} v{RANK_VERSION}")
    if meta.goal != "blank-first":
        raise ArtifactError(f"{where}: tables for goal {meta.goal!r}, expected 'blank-first'")
    n = meta.size * meta.size
    tiles = sorted(t for g in meta.groups for t in g.tiles)
    if tiles != list(range(1, n)):
        raise ArtifactError(f"{where}: groups do not partition tiles 1..{n - 1} (got {tiles})")
    for g in meta.groups:
        if meta.tables[g.table].cells != n or len(meta.tables[g.table].tiles) != len(g.tiles):
            raise ArtifactError(f"{where}: group {list(g.tiles)} does not fit its table")


def heuristic_from(meta: artifact.ArtifactMeta, data: np.ndarray, reflect: bool = True) -> Heuristic:
    """The additive heuristic of an artifact's groups over its (mapped) table data."""
    check_layout(meta)
    side = meta.size
    n = side * side
    lk = lookups(meta, reflect)
    mmax = max(len(x.tiles) for x in lk)
    tiles = np.zeros((len(lk), mmax), np.int64)
    w = np.zeros((len(lk), mmax), np.int64)
    tile_lk = np.full((n, 2), -1, np.int64)
    for l, x in enumerate(lk):
        tiles[l, :len(x.tiles)] = x.tiles
        w[l, :len(x.tiles)] = weights(n, len(x.tiles))
        tile_lk[list(x.tiles), int(x.reflected)] = l
    H = hk.HeuristicArrays(**{
        **hk.placeholder_arrays(hk.PDB),
        "lk_tiles": tiles, "lk_w": w,
        "lk_m": np.array([len(x.tiles) for x in lk], np.int64),
        "lk_cmap": np.array([x.cell_map for x in lk], np.int64),
        "lk_off": np.array([x.offset for x in lk], np.int64),
        "lk_set": np.array([int(x.reflected) for x in lk], np.int64),
        "tile_lk": tile_lk,
        "table": np.asarray(data),
    })
    name = f"pdb {meta.partition}" + (" + reflection" if reflect else "")
    return Heuristic(name, side, H, hk.state_width(hk.PDB, side, len(lk)), artifact=meta.version)


def load_heuristic(path, *, reflect: bool = True) -> Heuristic:
    """Memory-map an artifact as a heuristic, checked as trust.open_trusted checks it."""
    meta, data = open_trusted(path)
    return heuristic_from(meta, data, reflect)
