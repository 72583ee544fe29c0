"""Pattern databases as a heuristic: lookups over memory-mapped tables, with reflection.

A lookup is (table, tiles in the table's order, cell map): the table value of the cells of
those tiles, each mapped through the cell map, ranked. A partition's groups are the
direct lookups; the same groups on the board reflected about the main diagonal are the
reflected ones. Reflecting the board maps tile t at cell c to tile T(t) at cell T(c)
(T = transpose; the blank-first goal is symmetric under it), so the reflected lookup of a
group reads tiles T(g_i) through the cell map sigma(T(c)). h = max(direct sum, reflected sum).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from . import artifact, heuristic_kernels as hk
from .errors import ArtifactError
from .heuristics import Heuristic, empty_parts
from .partitions import STRENGTH, transpose
from .ranking import RANK_SCHEME, RANK_VERSION, weights
from .stamp import is_recorded


def lookups(meta: artifact.ArtifactMeta, reflect: bool = True):
    """(tiles, cell map, table offset, set) for every lookup of the artifact's groups."""
    side = meta.size
    T = transpose(side)
    out = []
    for g in meta.groups:
        table = meta.tables[g.table]
        out.append((list(g.tiles), list(g.cell_map), table.offset, 0))
        if reflect:
            out.append(([T[t] for t in g.tiles], [g.cell_map[T[c]] for c in range(side * side)],
                        table.offset, 1))
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
    check_layout(meta)
    side = meta.size
    n = side * side
    lk = lookups(meta, reflect)
    mmax = max(len(t) for t, _, _, _ in lk)
    parts = empty_parts()
    parts[hk.KIND] = np.int64(hk.PDB)
    parts[hk.LK_TILES] = np.zeros((len(lk), mmax), np.int64)
    parts[hk.LK_W] = np.zeros((len(lk), mmax), np.int64)
    parts[hk.LK_M] = np.array([len(t) for t, _, _, _ in lk], np.int64)
    parts[hk.LK_CMAP] = np.array([c for _, c, _, _ in lk], np.int64)
    parts[hk.LK_OFF] = np.array([o for _, _, o, _ in lk], np.int64)
    parts[hk.LK_SET] = np.array([s for _, _, _, s in lk], np.int64)
    tile_lk = np.full((n, 2), -1, np.int64)
    for l, (tiles, _, _, s) in enumerate(lk):
        parts[hk.LK_TILES][l, :len(tiles)] = tiles
        parts[hk.LK_W][l, :len(tiles)] = weights(n, len(tiles))
        tile_lk[tiles, s] = l
    parts[hk.TILE_LK] = tile_lk
    parts[hk.TABLE] = np.asarray(data)
    name = f"pdb {meta.partition}" + (" + reflection" if reflect else "")
    return Heuristic(name, side, tuple(parts), hk.state_width(hk.PDB, side, len(lk)),
                     artifact=meta.version)


def load_heuristic(path, *, verify: bool = True, reflect: bool = True) -> Heuristic:
    """Memory-map an artifact as a heuristic. With ``verify``, the checksums are checked
    unless a stamp records that this very file already passed (see below)."""
    meta = artifact.read_meta(path)
    meta, data = artifact.open_tables(path, verify=verify and not is_recorded(meta))
    return heuristic_from(meta, data, reflect)


def load_directory(directory, *, verify: bool = True, reflect: bool = True) -> dict[int, Heuristic]:
    """The strongest heuristic per board side among the artifacts in a directory.

    Every artifact is checked, not only the chosen ones: a damaged file is an error.
    """
    d = Path(directory)
    if not d.is_dir():
        raise ArtifactError(f"{d}: no such directory")
    best: dict[int, tuple[int, Heuristic]] = {}
    for path in artifact.find_artifacts(d):
        h = load_heuristic(path, verify=verify, reflect=reflect)
        rank = STRENGTH.get(artifact.read_meta(path).partition, 0)
        if h.side not in best or rank > best[h.side][0]:
            best[h.side] = (rank, h)
    return {side: h for side, (_, h) in best.items()}

