"""Building a partition's pattern databases and writing them as one artifact.

Orchestration only: the BFS itself is in build_kernel.py. Tables are built one after the
other, each on ``workers`` threads (numba prange over the placements); a partition's
groups that are symmetric images of an earlier group reuse its table (partitions.plan_tables).
"""

from __future__ import annotations

import os
import resource
import sys
import time
from pathlib import Path

import numba
import numpy as np

from . import __version__, artifact, build_kernel, trust
from .console import Progress, fmt_seconds
from .geometry import neighbour_arrays
from .catalogue import Catalogue, get, plan_tables
from .ranking import UNSET, binomials, order_weights, reachable_entries, regions, table_size

BUILDER_VERSION = f"{__version__}/layered-region-bfs-2"


def mask_dtype(cells: int):
    """Smallest unsigned type with a bit per cell."""
    for dt in (np.uint16, np.uint32, np.uint64):
        if cells <= np.iinfo(dt).bits - (dt is np.uint64):
            return dt
    raise ValueError(f"{cells} cells do not fit a bit mask")


def distance_table(tiles, side: int, *, zero_aware: bool = True, label: str = "",
                   progress: bool = True) -> np.ndarray:
    """Distances of every (placement, region of the blank) of ``tiles`` (blank-first goal
    cells) to the goal, counting only the tiles' own moves; one entry per placement (the
    minimum over the blank's regions) without ``zero_aware``. uint8, indexed as
    ranking.region_entry says; UNSET where no move sequence reaches."""
    n, m = side * side, len(tiles)
    size = table_size(n, m)
    binom, pw = binomials(n, m), order_weights(m)
    reg = regions(side, m, zero_aware)
    nbr, nnbr = neighbour_arrays(side)
    dt = mask_dtype(n)
    visited = np.zeros(size, dtype=dt)
    cur = np.zeros(size, dtype=dt)
    nxt = np.zeros(size, dtype=dt)
    dist = np.full(reg.entries, UNSET, dtype=np.uint8)
    goal_cells = np.asarray(tiles, dtype=np.int64)
    build_kernel.seed(cur, visited, dist, goal_cells, 0, n, m, binom, pw, reg.index, reg.offset, side)
    bar = Progress(label or f"{m} tiles", reachable_entries(side, m, zero_aware), progress,
                   unit="entries")
    done, layer = 1, 0
    while True:
        build_kernel.expand(cur, nxt, visited, n, m, binom, pw, nbr, nnbr)
        layer += 1
        new, frontier = build_kernel.close(cur, nxt, visited, dist, layer, n, m, binom, pw,
                                           reg.index, reg.offset, side)
        done += int(new)
        bar.update(done, f"layer {layer}")
        if frontier == 0:
            break
        if layer >= UNSET:
            raise RuntimeError("distance does not fit a byte")
    bar.close()
    return dist


def compact_table(dist: np.ndarray, tiles, side: int, zero_aware: bool = True) -> np.ndarray:
    """The 4-bit form of a distance table (build_kernel.compact); refuses a table whose
    entries do not fit, naming the count, rather than store a wrong value."""
    m = len(tiles)
    reg = regions(side, m, zero_aware)
    packed = np.zeros((dist.size + 1) // 2, np.uint8)
    too_large, bad = build_kernel.compact(dist, packed, np.asarray(tiles, np.int64), side,
                                          binomials(side * side, m), order_weights(m),
                                          reg.count, reg.offset)
    if bad:
        raise RuntimeError(f"table {list(tiles)}: {bad} entries below the group's Manhattan "
                           "distance or of the other parity (builder error)")
    if too_large:
        raise RuntimeError(f"table {list(tiles)}: {too_large} entries exceed Manhattan + 28, "
                           "more than 4 bits hold")
    return packed


def build_table(tiles, side: int, name: str, *, zero_aware: bool = True, label: str = "",
                progress: bool = True) -> artifact.TableData:
    """One table, built, counted and packed, ready to be written."""
    dist = distance_table(tiles, side, zero_aware=zero_aware, label=label, progress=progress)
    histogram, unset = artifact.value_histogram(dist)
    return artifact.TableData(name, tuple(tiles), side * side, dist.size,
                              compact_table(dist, tiles, side, zero_aware), histogram, unset)


def peak_memory_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def build(catalogue: str | Catalogue, out_dir, *, zero_aware: bool = True,
          workers: int | None = None, progress: bool = True) -> artifact.ArtifactMeta:
    """Build every table of the catalogue, write ``out_dir/<name>.h5`` atomically (with
    ``-min`` in the name without ``zero_aware``), re-read it from disk and stamp it as
    verified (trust.confirm)."""
    cat = get(catalogue) if isinstance(catalogue, str) else catalogue
    workers = min(workers or os.cpu_count() or 1, numba.config.NUMBA_NUM_THREADS)
    numba.set_num_threads(workers)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    plan = plan_tables(cat)
    t0 = time.perf_counter()
    tables = []
    for i, tiles in enumerate(plan.tables):
        label = f"{cat.name} table {i + 1}/{len(plan.tables)} ({len(tiles)} tiles)"
        ts = time.perf_counter()
        table = build_table(tiles, cat.side, f"t{i}_" + "-".join(map(str, tiles)),
                            zero_aware=zero_aware, label=label, progress=progress)
        if progress:
            print(f"{label}: {table.entries:,} entries in {fmt_seconds(time.perf_counter() - ts)}",
                  file=sys.stderr, flush=True)
        tables.append(table)
    seconds = time.perf_counter() - t0
    params = {"workers": workers, "seconds": round(seconds, 3),
              "peak_memory_bytes": peak_memory_bytes(), "numba": numba.__version__}
    name = artifact.artifact_filename(cat.name + ("" if zero_aware else "-min"))
    meta = artifact.write_artifact(
        out / name, partition=cat.name, size=cat.side, goal="blank-first",
        zero_aware=zero_aware, tables=tables, groups=plan.groups,
        build=params, builder_version=BUILDER_VERSION)
    return trust.confirm(meta)
