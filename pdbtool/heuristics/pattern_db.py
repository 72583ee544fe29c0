"""Pattern databases as a heuristic: lookups over memory-mapped 4-bit tables.

A lookup reads one table: the cells of its tiles and the blank's cell, each mapped through
its cell map, ranked as kernels/ranking.py lays a table out (lexicographic placement rank, or
(map, blank's region, order) for a blank outside region 0). Each additive partition
of the catalogue gives one sum of lookups; with reflection, the same groups on the board
reflected about the main diagonal give another. Reflecting the board maps tile t at cell c
to tile T(t) at cell T(c) (T = transpose; the blank-first goal is symmetric under it), so
the reflected lookup of a group reads tiles T(g_i) through the cell map sigma(T(c)); the
blank, tile 0 = T(0), reads through the same map.

A rectangle has no such reflection (its transpose is another shape), but the same formula
serves the transposed shape from the rectangle's tables: a 4x3 board is read as the 3x4
board it transposes to (``heuristic_from(..., shape=meta.shape.transposed)``), so one
artifact serves both shapes.

A group's table value is its Manhattan distance plus twice the 4-bit entry, and the groups
of a sum hold every tile once, so every sum is md + 2 * (sum of its entries) and
h = md + 2 * max over the sums (kernels.heuristic.h_init / h_update).
"""

from __future__ import annotations

from math import comb, factorial
from typing import NamedTuple

import numpy as np

from pdbtool.errors import ArtifactError, BadInput
from pdbtool import geometry
from pdbtool.geometry import manhattan_table, transpose
from pdbtool.heuristics.table_free import Heuristic
from pdbtool.kernels import heuristic as hk
from pdbtool.kernels.lookups import parity_bits
from pdbtool.kernels.ranking import (MAX_OUTSIDE_CELLS, RANK_SCHEME, RANK_VERSION, colex_tables,
                                     lex_weights, order_weights, outside_cells, regions)
from pdbtool.tables import artifact, catalogue


class Lookup(NamedTuple):
    tiles: tuple[int, ...]      # the tiles read, in the table's order
    cell_map: tuple[int, ...]   # board cell -> cell in the table's frame
    offset: int                 # byte offset of the table inside the flat table data
    sum: int                    # which sum it adds to: 2 * partition + reflected with
    # reflection, else the partition (one sum a partition: no reflection, or transposed)


def lookups(meta: artifact.ArtifactMeta, reflect: bool = True, transposed: bool = False
            ) -> list[Lookup]:
    """Every lookup of the artifact's groups, direct and (with ``reflect``, squares only)
    reflected; ``transposed``: only the reflected ones, for boards of the transposed shape
    (T maps their cells onto the artifact's)."""
    shape = meta.shape
    T = transpose(shape.transposed)  # cells of the transposed board -> the artifact's
    per = 2 if reflect and not transposed else 1
    out = []
    for g in meta.groups:
        offset = meta.tables[g.table].offset
        if not transposed:
            out.append(Lookup(g.tiles, g.cell_map, offset, per * g.partition))
        if reflect or transposed:
            back = {a: c for c, a in enumerate(T)}  # the artifact's cells -> the board's
            out.append(Lookup(tuple(back[t] for t in g.tiles),
                              tuple(g.cell_map[T[c]] for c in range(shape.cells)), offset,
                              per * g.partition + (per - 1)))
    return out


def check_layout(meta: artifact.ArtifactMeta) -> None:
    """Refuse an artifact this solver cannot read correctly (never guess)."""
    where = meta.path
    if meta.rank_scheme != RANK_SCHEME or meta.rank_version != RANK_VERSION:
        raise ArtifactError(f"{where}: rank scheme {meta.rank_scheme} v{meta.rank_version}, "
                            f"this pdbtool ranks with {RANK_SCHEME} v{RANK_VERSION}")
    if meta.encoding != artifact.ENCODING:
        raise ArtifactError(f"{where}: entries encoded as {meta.encoding!r}, expected "
                            f"{artifact.ENCODING!r}")
    if meta.goal != "blank-first":
        raise ArtifactError(f"{where}: tables for goal {meta.goal!r}, expected 'blank-first'")
    n = meta.shape.cells
    if meta.zero_aware and n > MAX_OUTSIDE_CELLS:  # a lookup keeps a map's cells in a word
        raise ArtifactError(f"{where}: zero-aware tables of a {meta.shape} board; "
                            f"this pdbtool reads them for at most {MAX_OUTSIDE_CELLS} cells")
    for p in range(meta.partitions):
        tiles = sorted(t for g in meta.groups if g.partition == p for t in g.tiles)
        if tiles != list(range(1, n)):
            raise ArtifactError(f"{where}: the groups of partition {p} do not partition "
                                f"tiles 1..{n - 1} (got {tiles})")
    for t in meta.tables:
        expected = regions(meta.shape, len(t.tiles), meta.zero_aware).entries
        if t.cells != n or t.entries != expected:
            raise ArtifactError(f"{where}: table {t.name!r} has {t.entries:,} entries, "
                                f"{len(t.tiles)} tiles on {n} cells need {expected:,}")
        if t.entries >= 2**31:  # h_update keeps entry indices in the int32 state row
            raise ArtifactError(f"{where}: table {t.name!r} has {t.entries:,} entries; "
                                "this pdbtool reads tables of fewer than 2^31")
    check_label(meta)
    symmetries = set(geometry.symmetries(meta.shape))
    for g in meta.groups:
        if len(meta.tables[g.table].tiles) != len(g.tiles):
            raise ArtifactError(f"{where}: group {list(g.tiles)} does not fit its table")
        if tuple(g.cell_map) not in symmetries:  # moves on the board must be moves there
            raise ArtifactError(f"{where}: group {list(g.tiles)}'s cell map is not a "
                                f"symmetry of the {meta.shape} board")


def check_label(meta: artifact.ArtifactMeta) -> None:
    """An artifact labelled with a catalogue this pdbtool ships holds that catalogue's
    groups on its board (a label edited and sealed again named another table in `list`,
    `info` and every answer); a name it does not know (a newer pdbtool's) is not checked."""
    known = catalogue.catalogues().get(meta.partition)
    if known is None:
        return

    def split(partitions):
        return sorted(sorted(tuple(sorted(g)) for g in p) for p in partitions)

    held = split([g.tiles for g in meta.groups if g.partition == p]
                 for p in range(meta.partitions))
    if known.shape != meta.shape or held != split(known.partitions):
        raise ArtifactError(f"{meta.path}: labelled {meta.partition!r} ({known.shape}, groups "
                            f"{_groups_text(split(known.partitions))}), but it holds "
                            f"{meta.shape} tables of groups {_groups_text(held)}: mislabelled")


def _groups_text(partitions) -> str:
    text = " | ".join(" ".join("-".join(map(str, g)) for g in p) for p in partitions)
    return text if len(text) <= 120 else text[:117] + "..."


SCATTERED_BYTES = 64 << 20  # see scattered


def scattered(reg, cells: int, m: int) -> bool:
    """Whether a zero-aware table of m tiles on a board of ``cells`` cells is read far
    from where its last read was, so that the search should look ahead at its children's
    first reads (kernels.ida.look_ahead; arrays of class kernels.heuristic.PDB_AHEAD): its
    parity bits (what a move reads) exceed SCATTERED_BYTES and most of its entries are a
    blank's outside region 0 (kept in map x order, while region 0's lexicographic order
    keeps a parent's and a child's entries close). Measured beside the search without it: 15/7-8 (the 8-tile table's 178 MB
    of bits, 64% outside region 0) 0.90x the time on one thread; 15/6-6-3 (small
    tables) 1.15x, 24/6-6-6-6 (30% outside) 1.12x, 24/small 1.02x
    (docs/bench-history/2026-11-26-looking-ahead.md)."""
    entries = int(reg.secondary[-1])
    placements = comb(cells, m) * factorial(m)
    return entries // 8 >= SCATTERED_BYTES and 2 * (entries - placements) > entries


def heuristic_from(meta: artifact.ArtifactMeta, data: np.ndarray, reflect: bool = True,
                   source=None, shape=None) -> Heuristic:
    """The max-of-additive heuristic of an artifact's catalogue over its table data, for
    boards of ``shape``: the artifact's (default) or its transpose. ``reflect`` adds the
    reflected lookups of a square. ``source`` is the open file it was mapped from
    (trust.Pinned), guarded at each search."""
    check_layout(meta)
    shape = meta.shape if shape is None else shape
    if shape not in (meta.shape, meta.shape.transposed):
        raise BadInput(f"{meta.path} serves {meta.shape} boards"
                       + ("" if meta.shape.square else f" and {meta.shape.transposed} ones")
                       + f", the board is {shape}")
    transposed = not meta.shape.square and shape == meta.shape.transposed
    reflect = reflect and meta.shape.square
    n = shape.cells
    every = lookups(meta, reflect, transposed)
    sums = 1 + max(x.sum for x in every)
    if sums > 64:  # h_update keeps a bit per lookup of a tile, at most one per sum
        raise ArtifactError(f"{meta.path}: {sums} sums of lookups; this pdbtool reads at most 64")
    # Sums that hold the same tiles in a group read the same value: one lookup serves them.
    # (Catalogues share groups between partitions, and a group's reflection may be another
    # group: 24/small's 56 lookups are 28 tile sets.)
    first = {}
    for x in every:
        first.setdefault(frozenset(x.tiles), x)
    lk = list(first.values())
    number = {frozenset(x.tiles): l for l, x in enumerate(lk)}
    mmax = max(len(x.tiles) for x in lk)
    # Region arrays per tile count, concatenated; each lookup points at its count's.
    index_parts, offset_parts, outside_parts, rbase, obase, mbase = [], [], [], {}, {}, {}
    ahead = False
    for m in sorted({len(x.tiles) for x in lk}):
        reg = regions(meta.shape, m, meta.zero_aware)
        ahead |= meta.zero_aware and scattered(reg, n, m)
        rbase[m] = sum(a.size for a in index_parts)
        obase[m] = sum(a.size for a in offset_parts)
        mbase[m] = sum(a.size for a in outside_parts)
        index_parts.append(reg.index.ravel())
        offset_parts.append(reg.secondary)
        outside_parts.append(outside_cells(reg.index, reg.count))
    colex_lo, colex_hi = colex_tables(n, mmax)
    tiles = np.zeros((len(lk), mmax), np.int64)
    pw = np.zeros((len(lk), mmax), np.int64)
    lw = np.zeros((len(lk), mmax), np.int64)
    tile_lk = np.full((n, sums), -1, np.int64)
    for l, x in enumerate(lk):
        m = len(x.tiles)
        tiles[l, :m] = x.tiles
        pw[l, :m] = order_weights(m)
        lw[l, :m] = lex_weights(n, m)
    for x in every:
        tile_lk[list(x.tiles), x.sum] = number[frozenset(x.tiles)]
    # Each tile's distinct lookups, numbered per tile (the bits of h_update's ``read``).
    tile_lk_slot = np.zeros((n, sums), np.int64)
    for t in range(1, n):
        slots = {l: k for k, l in enumerate(dict.fromkeys(tile_lk[t].tolist()))}
        tile_lk_slot[t] = [slots[l] for l in tile_lk[t]]
    digit = np.full((len(lk), n), -1, np.int64)
    for l, x in enumerate(lk):
        digit[l, list(x.tiles)] = range(len(x.tiles))
    cell = np.argsort(np.array([x.cell_map for x in lk], np.int64), axis=1)
    H = hk.heuristic_arrays(
        hk.PDB, ahead,
        tile_tab=manhattan_table(shape),
        lk_tiles=tiles, lk_pw=pw, lk_lw=lw,
        lk_m=np.array([len(x.tiles) for x in lk], np.int64),
        lk_cmap=np.array([x.cell_map for x in lk], np.int64),
        lk_off=np.array([x.offset for x in lk], np.int64),
        lk_rbase=np.array([rbase[len(x.tiles)] for x in lk], np.int64),
        lk_obase=np.array([obase[len(x.tiles)] for x in lk], np.int64),
        tile_lk=tile_lk, tile_lk_slot=tile_lk_slot,
        table=hk.read_only(np.asarray(data)),
        colex_lo=colex_lo.copy(), colex_hi=colex_hi.copy(),
        reg_index=np.concatenate(index_parts),
        reg_secondary=np.concatenate(offset_parts),
        zero_aware=np.int64(meta.zero_aware),
        reg_outside=np.concatenate(outside_parts),
        lk_mbase=np.array([mbase[len(x.tiles)] for x in lk], np.int64),
        lk_digit=digit, lk_cell=cell,
        parity=hk.read_only(parity_of(data) if meta.zero_aware else np.zeros(1, np.uint8)),
    )
    name = f"pdb {meta.partition}" + ("" if meta.zero_aware else " (min over blank)") + \
        (" + reflection" if reflect else "") + (" transposed" if transposed else "")
    # Zero-aware entries are exact abstract distances: each group's value, so each sum and
    # their max, changes by at most 1 per move.
    return Heuristic(name, shape, H, hk.state_width(hk.PDB, shape, len(lk), sums),
                     artifact=meta.version, consistent=meta.zero_aware, source=source,
                     artifact_path=str(meta.path), reflected=reflect)


def parity_of(data: np.ndarray) -> np.ndarray:
    """The lowest bit of every 4-bit entry of the table data, eight a byte: what a search
    reads after a move (kernels.lookups.moved_entry), a quarter of the tables. Derived
    at load, on one thread (fork-safe): about 0.2 s for 24/small's 995 MB once its pages
    are cached (0.1 s on two cores in parallel, which a forked child could not load after)."""
    data = np.asarray(data)
    whole = data.shape[0] // 4 * 4
    out = np.zeros((data.shape[0] + 3) // 4, np.uint8)
    parity_bits(data[:whole], out[:whole // 4])
    if whole < data.shape[0]:
        tail = np.zeros(4, np.uint8)
        tail[:data.shape[0] - whole] = data[whole:]
        parity_bits(tail, out[-1:])
    return out
