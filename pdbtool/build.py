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
from .partitions import Partition, get, plan_tables
from .ranking import UNSET, reachable_placements, table_size, weights

BUILDER_VERSION = f"{__version__}/layered-region-bfs-1"


def mask_dtype(cells: int):
    """Smallest unsigned type with a bit per cell."""
    for dt in (np.uint16, np.uint32, np.uint64):
        if cells <= np.iinfo(dt).bits - (dt is np.uint64):
            return dt
    raise ValueError(f"{cells} cells do not fit a bit mask")


def build_table(tiles, side: int, *, label: str = "", progress: bool = True) -> np.ndarray:
    """Distances of every placement of ``tiles`` (blank-first goal cells) to the goal,
    counting only the tiles' own moves. Returns a uint8 table indexed by ranking.rank."""
    n, m = side * side, len(tiles)
    size = table_size(n, m)
    w = weights(n, m)
    nbr, nnbr = neighbour_arrays(side)
    dt = mask_dtype(n)
    visited = np.zeros(size, dtype=dt)
    cur = np.zeros(size, dtype=dt)
    nxt = np.zeros(size, dtype=dt)
    dist = np.full(size, UNSET, dtype=np.uint8)
    goal_cells = np.asarray(tiles, dtype=np.int64)
    build_kernel.seed(cur, visited, dist, goal_cells, 0, n, m, w, side)
    bar = Progress(label or f"{m} tiles", reachable_placements(n, m), progress, unit="placements")
    done, layer = 1, 0
    while True:
        build_kernel.expand(cur, nxt, visited, n, m, w, nbr, nnbr)
        layer += 1
        new, regions = build_kernel.close(cur, nxt, visited, dist, layer, n, m, w, side)
        done += int(new)
        bar.update(done, f"layer {layer}")
        if regions == 0:
            break
        if layer >= UNSET:
            raise RuntimeError("distance does not fit a byte")
    bar.close()
    return dist


def peak_memory_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def build(partition: str | Partition, out_dir, *, workers: int | None = None,
          progress: bool = True) -> artifact.ArtifactMeta:
    """Build every table of the partition, write ``out_dir/<name>.h5`` atomically, re-read
    it from disk and stamp it as verified (trust.confirm)."""
    part = get(partition) if isinstance(partition, str) else partition
    workers = min(workers or os.cpu_count() or 1, numba.config.NUMBA_NUM_THREADS)
    numba.set_num_threads(workers)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    plan = plan_tables(part)
    t0 = time.perf_counter()
    tables = []
    for i, tiles in enumerate(plan.tables):
        label = f"{part.name} table {i + 1}/{len(plan.tables)} ({len(tiles)} tiles)"
        ts = time.perf_counter()
        dist = build_table(tiles, part.side, label=label, progress=progress)
        if progress:
            print(f"{label}: {dist.size:,} entries in {fmt_seconds(time.perf_counter() - ts)}",
                  file=sys.stderr, flush=True)
        tables.append(artifact.TableData(f"t{i}_" + "-".join(map(str, tiles)), tiles,
                                         part.cells, dist))
    seconds = time.perf_counter() - t0
    params = {"workers": workers, "seconds": round(seconds, 3),
              "peak_memory_bytes": peak_memory_bytes(), "numba": numba.__version__}
    meta = artifact.write_artifact(
        out / artifact.artifact_filename(part.name), partition=part.name, size=part.side,
        goal="blank-first", tables=tables, groups=plan.groups,
        build=params, builder_version=BUILDER_VERSION)
    return trust.confirm(meta)
