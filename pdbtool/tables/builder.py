"""Building a catalogue's pattern databases and writing them as one artifact.

Orchestration only: the BFS itself is in kernels/build.py. Groups that are symmetric images
of an earlier group reuse its table (catalogue.plan_tables). The distinct tables are built
in worker processes, one table each, with numba threads inside each (processes x threads
<= workers); when one table is most of the work, a single process runs them in turn on
every thread instead. The BFS is a sequence of set operations, so the bytes do not depend
on the layout. Workers report progress through a queue; the parent draws it.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import resource
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import resource_tracker
from multiprocessing.managers import SyncManager
from pathlib import Path
from typing import NamedTuple

import numba
import numpy as np

from pdbtool import __version__, signals
from pdbtool.errors import BadInput, not_a_directory
from pdbtool.geometry import Shape, as_shape, manhattan_table, neighbour_arrays
from pdbtool.kernels import build as build_kernel
from pdbtool.kernels.ranking import (UNSET, binomials, lex_weights, order_table, order_weights,
                                     reachable_entries, regions, table_size)
from pdbtool.progress import Progress, fmt_bytes, fmt_seconds
from pdbtool.tables import artifact, trust
from pdbtool.tables.catalogue import Catalogue, get, plan_tables
from pdbtool.tables.files import directory_made

BUILDER_VERSION = f"{__version__}/layered-region-bfs-2"


def mask_dtype(cells: int):
    """Smallest unsigned type with a bit per cell."""
    for dt in (np.uint16, np.uint32, np.uint64):
        if cells <= np.iinfo(dt).bits - (dt is np.uint64):
            return dt
    raise ValueError(f"{cells} cells do not fit a bit mask")


class TableJob(NamedTuple):
    """One table to build, as a worker process receives it."""

    index: int
    tiles: tuple[int, ...]
    shape: Shape
    name: str
    zero_aware: bool
    threads: int


class Layout(NamedTuple):
    processes: int
    threads: int  # numba threads in each process


def choose_layout(plan, shape, workers: int, processes: int | None = None) -> Layout:
    """Processes x threads for a catalogue's tables: a process per table up to
    ``workers``, unless one table is more than half the work (then one process)."""
    sizes = [table_size(as_shape(shape).cells, len(t)) for t in plan.tables]
    if processes is None:
        processes = (1 if max(sizes) * 2 > sum(sizes) or not can_spawn()
                     else min(workers, len(sizes)))
    processes = max(1, min(processes, workers, len(sizes)))
    return Layout(processes, max(1, workers // processes))


def can_spawn() -> bool:
    """Whether worker processes can be spawned here: a spawned process runs the parent's
    main script again, and a script read from stdin (``python - <<EOF``) has none to run
    (the workers died at their start, and the build with an EOFError's traceback)."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    return path is None or getattr(main, "__spec__", None) is not None or os.path.exists(path)


def distance_table(tiles, shape, *, zero_aware: bool = True, label: str = "",
                   progress: bool = True, report=None) -> np.ndarray:
    """Distances of every (placement, region of the blank) of ``tiles`` (blank-first goal
    cells) to the goal, counting only the tiles' own moves; one entry per placement (the
    minimum over the blank's regions) without ``zero_aware``. uint8, indexed as
    ranking.region_entry says; UNSET where no move sequence reaches. Progress goes to a
    bar on stderr, or to ``report(done, total, text)`` when given. ``shape``: the board's
    (a Shape, or a square's side)."""
    shape = as_shape(shape)
    n, m = shape.cells, len(tiles)
    size = table_size(n, m)
    binom, pw, lw = binomials(n, m), order_weights(m), lex_weights(n, m)
    orders = order_table(m)
    reg = regions(shape, m, zero_aware)
    nbr, nnbr = neighbour_arrays(shape)
    dt = mask_dtype(n)
    cur = np.zeros(size, dtype=dt)
    seen = np.zeros(size, dtype=mask_dtype(2 * n))  # visited | seeds << half (build_kernel)
    half = np.iinfo(seen.dtype).bits // 2
    dist = np.full(reg.entries, UNSET, dtype=np.uint8)
    goal_cells = np.asarray(tiles, dtype=np.int64)
    live_cur = np.zeros(build_kernel.CHUNKS, np.uint8)  # chunks holding frontier / seeds
    live_nxt = np.zeros(build_kernel.CHUNKS, np.uint8)
    build_kernel.seed(cur, seen, live_cur, dist, goal_cells, 0, n, m, binom, pw, lw,
                      reg.index, reg.secondary, shape.cols)
    total = reachable_entries(shape, m, zero_aware)
    bar = Progress(label or f"{m} tiles", total, progress and report is None, unit="entries")
    done, layer = 1, 0
    while True:
        build_kernel.expand(cur, seen, half, live_cur, live_nxt, n, m, binom, pw, orders, nbr,
                            nnbr)
        layer += 1
        new, frontier = build_kernel.close(cur, seen, half, live_cur, live_nxt, dist, layer,
                                           n, m, binom, pw, lw, orders, reg.index,
                                           reg.secondary, shape.cols)
        done += int(new)
        bar.update(done, f"layer {layer}")
        if report is not None:
            report(done, total, f"layer {layer}")
        if frontier == 0:
            break
        if layer >= UNSET:
            raise RuntimeError("distance does not fit a byte")
    bar.close()
    return dist


def compact_table(dist: np.ndarray, tiles, shape, zero_aware: bool = True) -> np.ndarray:
    """The 4-bit form of a distance table (kernels.build.compact); refuses a table whose
    entries do not fit, naming the count, rather than store a wrong value."""
    return pack_table(dist, tiles, shape, zero_aware)[0]


def pack_table(dist: np.ndarray, tiles, shape, zero_aware: bool = True,
               saturate: bool = False) -> tuple[np.ndarray, int]:
    """compact_table, and how many entries were saturated: with ``saturate``, distances
    beyond Manhattan + 28 are stored as Manhattan + 28 (admissible and consistent, no
    longer exact, and so written back into ``dist``) instead of refused. Only a table of
    every tile saturates (build_table):
    it is the exact table of the board, and 3x4's has 133 such placements of 239.5 M."""
    m, n = len(tiles), as_shape(shape).cells
    reg = regions(shape, m, zero_aware)
    packed = np.zeros((dist.size + 1) // 2, np.uint8)
    too_large, bad = build_kernel.compact(dist, packed, manhattan_table(shape)[list(tiles)],
                                          binomials(n, m), order_weights(m),
                                          lex_weights(n, m), reg.count, reg.secondary,
                                          saturate)
    if bad:
        raise RuntimeError(f"table {list(tiles)}: {bad} entries below the group's Manhattan "
                           "distance or of the other parity (builder error)")
    if too_large and not saturate:
        raise RuntimeError(f"table {list(tiles)}: {too_large} entries exceed Manhattan + 28, "
                           "more than 4 bits hold")
    return packed, int(too_large)


def build_table(tiles, shape, name: str, *, zero_aware: bool = True, label: str = "",
                progress: bool = True, report=None) -> artifact.TableData:
    """One table, built, counted and packed, ready to be written."""
    dist = distance_table(tiles, shape, zero_aware=zero_aware, label=label, progress=progress,
                          report=report)
    every_tile = len(tiles) == as_shape(shape).cells - 1
    packed, saturated = pack_table(dist, tiles, shape, zero_aware, saturate=every_tile)
    histogram, unset = artifact.value_histogram(dist)  # the values held (saturated too)
    return artifact.TableData(name, tuple(tiles), as_shape(shape).cells, dist.size, packed,
                              histogram, unset, saturated)


def _build_job(job: TableJob, queue) -> artifact.TableData:
    """A worker process's task: one table on ``job.threads`` threads."""
    numba.set_num_threads(job.threads)
    return build_table(job.tiles, job.shape, job.name, zero_aware=job.zero_aware,
                       report=lambda done, total, text: queue.put((job.index, done, total, text)))


def _draw(queue, labels: dict, enabled: bool) -> None:
    """The parent's side of the workers' progress: one bar or line per table."""
    bars: dict[int, Progress] = {}
    with contextlib.suppress(EOFError, OSError):  # the queue's process gone: the build ends
        while (msg := queue.get()) is not None:
            index, done, total, text = msg
            if index not in bars:
                bars[index] = Progress(labels[index], total, enabled, unit="entries")
            bars[index].update(done, text)
    for bar in bars.values():
        bar.close()


def _stop_drawing(queue, drawer: threading.Thread) -> None:
    with contextlib.suppress(EOFError, OSError):  # (the queue's process gone: so is the drawer)
        queue.put(None)
    drawer.join()


def build_tables(jobs: list[TableJob], layout: Layout, labels: dict,
                 progress: bool) -> list[artifact.TableData]:
    """Every job's table, in job order: in this process, or in ``layout.processes``
    worker processes (spawned: numba's threads do not survive a fork)."""
    if layout.processes == 1:
        numba.set_num_threads(layout.threads)
        out = []
        for job in jobs:
            ts = time.perf_counter()
            out.append(build_table(job.tiles, job.shape, job.name, zero_aware=job.zero_aware,
                                   label=labels[job.index], progress=progress))
            if progress:
                print(f"{labels[job.index]}: {out[-1].entries:,} entries in "
                      f"{fmt_seconds(time.perf_counter() - ts)}", file=sys.stderr, flush=True)
        return out
    ctx = multiprocessing.get_context("spawn")
    with contextlib.ExitStack() as stack:
        manager = SyncManager(ctx=ctx)
        with signals_held():
            manager.start(signals.die_with_parent, (os.getpid(),))  # the progress queue's process
            stack.callback(manager.shutdown)  # before a Ctrl-C held back is raised
        queue = manager.Queue()
        drawer = threading.Thread(target=_draw, args=(queue, labels, progress), daemon=True)
        drawer.start()
        stack.callback(_stop_drawing, queue, drawer)
        pool = ProcessPoolExecutor(layout.processes, mp_context=ctx, initializer=signals.die_with_parent,
                                   initargs=(os.getpid(),))
        stack.callback(pool.shutdown, wait=True, cancel_futures=True)
        try:
            with signals_held():  # the workers are spawned as the jobs are submitted
                tables = pool.map(_build_job, jobs, [queue] * len(jobs))
            return list(tables)
        except BaseException:  # a Ctrl-C, or a worker's failure: the others stop now, not
            stop_workers(pool)  # once their tables are built (they never see the Ctrl-C)
            raise


@contextlib.contextmanager
def signals_held():
    """Ctrl-C and SIGTERM held while worker processes start (pdbtool.signals.held): both go
    to the whole process group (the terminal's Ctrl-C; systemd's stop, a closed session),
    and a worker still importing printed its own traceback, the progress queue's process
    died under the parent's cleanup (whose error then replaced "terminated"), and a signal
    between a process's start and its shutdown's registration left it running (the
    interpreter's exit then waited for it for good). The workers inherit the signals
    blocked; the parent stops them (stop_workers). Multiprocessing's resource tracker is
    started first: starting it unblocks SIGINT and SIGTERM."""
    resource_tracker.ensure_running()
    with signals.held():
        yield


def stop_workers(pool: ProcessPoolExecutor) -> None:
    """End a process pool's workers now (Python 3.14's kill_workers, where it exists)."""
    if hasattr(pool, "kill_workers"):
        pool.kill_workers()
        return
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        process.kill()  # (SIGTERM: blocked in them, signals_held)


def peak_memory_bytes() -> tuple[int, int]:
    """Peak resident memory of this process and of its largest child process (the largest
    worker's, when the build had workers)."""
    return (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)


def check_memory(cat: Catalogue, zero_aware: bool = True, processes: int = 1) -> None:
    """BadInput, before any work, when building ``cat`` here needs more memory (about
    Catalogue.build_bytes, ``processes`` tables at once) than this machine has, or than
    one process may take (``ulimit -v``, which each worker process has for its own table):
    the build died of a MemoryError's traceback a while in, or took the machine's memory
    (a custom catalogue with one group of 15 tiles needs 160 TiB)."""
    one = cat.build_bytes(zero_aware)
    limits = [("this machine has", os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"),
               cat.build_bytes(zero_aware, processes))]
    soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    if soft != resource.RLIM_INFINITY:  # a worker keeps its own table, not the packed ones
        per_process = one if processes == 1 else one - cat.table_bytes(zero_aware)
        limits.append(("this process may take (ulimit -v)", soft, per_process))
    for what, have, need in limits:
        if need > have:
            fewer = (f" ({processes} tables at once: give fewer --processes)"
                     if processes > 1 and one <= have else "")
            raise BadInput(f"building {cat.name} needs about {fmt_bytes(need)} of memory"
                           f"{fewer}; {what} {fmt_bytes(have)} (`pdbtool partitions` lists "
                           "what each catalogue needs)")


def build(catalogue: str | Catalogue, out_dir, *, zero_aware: bool = True,
          workers: int | None = None, processes: int | None = None,
          progress: bool = True, cluster=None, replace: bool = True) -> artifact.ArtifactMeta:
    """Build every table of the catalogue, write ``out_dir/<name>.h5`` atomically (with
    ``-min`` in the name without ``zero_aware``), re-read it from disk and stamp it as
    verified (trust.confirm). ``workers`` cores (default all) are shared out as
    choose_layout says, or as ``processes`` asks; with ``cluster`` (a pdbtool.cluster.driver
    Cluster) each table is a task on some node of it instead. The tables, and so the
    content version, do not depend on where they were built. Without ``replace``, a file
    of that name that appeared while it built is kept (and the build refused)."""
    cat = get(catalogue) if isinstance(catalogue, str) else catalogue
    workers = min(workers or os.cpu_count() or 1, numba.config.NUMBA_NUM_THREADS)
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise BadInput(f"output directory {not_a_directory(out)}")
    plan = plan_tables(cat)
    if cluster is None:
        layout = choose_layout(plan, cat.shape, workers, processes)
        if layout.processes > 1 and not can_spawn():
            raise BadInput(f"{layout.processes} worker processes cannot be started from a "
                           "script read from stdin (each would run it again): give "
                           "processes=1, or run the script from a file")
        check_memory(cat, zero_aware, layout.processes)
    else:
        layout = Layout(len(plan.tables), cluster.build_threads(len(plan.tables)))
    with directory_made(out):  # (removed again if the build fails: nothing left)
        jobs = [TableJob(i, tiles, cat.shape, f"t{i}_" + "-".join(map(str, tiles)), zero_aware,
                         layout.threads) for i, tiles in enumerate(plan.tables)]
        labels = {j.index: f"{cat.name} table {j.index + 1}/{len(jobs)} ({len(j.tiles)} tiles)"
                  for j in jobs}
        t0 = time.perf_counter()
        if cluster is None:
            tables = build_tables(jobs, layout, labels, progress)
        else:
            tables = cluster.build_tables(jobs, labels, progress)
        seconds = time.perf_counter() - t0
        own, worker = peak_memory_bytes()
        params = {"workers": workers, "processes": layout.processes, "threads": layout.threads,
                  "seconds": round(seconds, 3), "peak_memory_bytes": own,
                  "peak_worker_memory_bytes": worker if layout.processes > 1 else None,
                  "numba": numba.__version__}
        if cluster is not None:
            params.update(workers=None, cluster=cluster.address, peak_worker_memory_bytes=None)
        if any(t.saturated for t in tables):  # said where it happened; not in the content version
            params["saturated_entries"] = {t.name: t.saturated for t in tables if t.saturated}
        name = artifact.artifact_filename(cat.name + ("" if zero_aware else "-min"))
        with trust.said_if_written(out / name):
            meta = artifact.write_artifact(
                out / name, partition=cat.name, size=cat.shape, goal="blank-first",
                zero_aware=zero_aware, tables=tables, groups=plan.groups,
                build=params, builder_version=BUILDER_VERSION, replace=replace)
            return trust.confirm(meta)
