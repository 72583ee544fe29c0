"""Rectangular boards: per shape, the build of its strongest catalogue (time, peak
memory, size on disk) and solve times on held-out boards with it, beside Manhattan-only IDA*
on the same boards (an independent solver: every length must agree, every solution replays).

Each run is one `pdbtool solve --shape RxC --json --file -` process for all of a shape's
boards (the tables loaded and the kernels compiled once; the figures are the searches'
own seconds, the JSON's "seconds"). Boards: uniformly random solvable ones (3x4, 4x3, 2x6);
4x5 boards scrambled by random walks (--walk moves); the 100 uniformly random 4x5 boards of
scripts/bench-state/4x5-uniform.txt (a fixed set, so each run measures the same boards),
each within --max-4x5-seconds; 4x6 and 6x4 boards scrambled by --walk-4x6 moves (24/4x6
serves both), each within --max-4x6-seconds. A board not answered in its time is recorded
as stopped, with the bound its search had proven (the length is at least that), never a
guessed length. Each answer is checked by an independent solver, IDA* without tables
(Manhattan; --oracle-4x5 on the uniformly random 4x5 boards; linear conflict on 4x6 and
6x4), on the answered boards, within its own timeout per board; boards it does not finish
in time are counted, not compared. The uniformly random 4x5 boards' outcomes, board by
board, go to scripts/bench-state/4x5-uniform.json.

Rewrites the `shapes` section of BENCHMARKS.md. Usage: scripts/bench shapes
"""

from __future__ import annotations

import json
import random
import re
import statistics
import subprocess
import time
from dataclasses import dataclass

import numpy as np
from benchlib import PY, ROOT, ensure_artifact, machine, record_bar, run, table
from reference import assert_replays

from pdbtool import puzzle
from pdbtool.geometry import Shape
from pdbtool.heuristics import table_free as tf
from pdbtool.tables import artifact

SECTION = "shapes"
SEED = 3804  # held out: the tests use other seeds
UNIFORM_4X5 = ROOT / "scripts" / "bench-state" / "4x5-uniform.txt"
OUTCOMES_4X5 = UNIFORM_4X5.with_suffix(".json")


@dataclass(frozen=True)
class Run:
    """One row: a shape's boards through its catalogue, beside an independent solver."""

    shape: Shape
    catalogue: str
    boards: list[tuple[int, ...]]
    kind: str  # how the boards were drawn
    limit: float | None = None  # seconds per board for the table's search; None: none
    oracle: str = "manhattan"  # the independent solver's heuristic (IDA* without tables)
    oracle_timeout: float = 5.0


def board_file(path) -> list[tuple[int, ...]]:
    """The boards of a text file, one per line ('#' starts a comment)."""
    lines = (line.split("#")[0].split() for line in path.read_text().splitlines())
    return [tuple(map(int, tiles)) for tiles in lines if tiles]


def boards_of(shape: Shape, count: int, walk: int | None, seed: int) -> list[tuple[int, ...]]:
    rng = random.Random(seed)
    if walk:
        return [puzzle.random_walk(shape, walk, "blank-last", rng) for _ in range(count)]
    return [puzzle.random_board(shape, "blank-last", rng) for _ in range(count)]


def solve_all(shape: Shape, boards, *options, timeout: float | None = None) -> list[dict]:
    """One pdbtool process for every board; each board's JSON: an answer (with "length"),
    or the error of a board stopped by --timeout (exit 4; "error" says its last bound)."""
    args = [PY, "-m", "pdbtool", "solve", "--shape", str(shape), "--json", "--quiet",
            "--file", "-", *options] + (["--timeout", str(timeout)] if timeout else [])
    p = subprocess.run(args, input="\n".join(" ".join(map(str, b)) for b in boards),
                       capture_output=True, text=True, cwd=ROOT, check=False)
    assert p.returncode in (0, 4), p.stderr[-2000:]
    out = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    assert len(out) == len(boards), (len(out), p.stderr[-2000:])
    assert all("length" in r or r["exit_code"] == 4 for r in out), p.stderr[-2000:]
    return out


def proven_bound(stopped: dict) -> int:
    """The bound a stopped search was working on: every shorter length was ruled out."""
    return int(re.search(r"last bound (\d+)", stopped["error"]).group(1))


def ms(x: float) -> str:
    return f"{x * 1000:.2f} ms" if x < 1 else f"{x:.2f} s"


def runs_of(count: int, count_2x6: int, count_4x5: int, walk: int, max_4x5_seconds: float,
            manhattan_timeout: float, oracle_4x5: str, oracle_4x5_timeout: float, count_4x6: int,
            walk_4x6: int, max_4x6_seconds: float) -> list[Run]:
    """The rows, in order; each draw its own seed (the uniformly random 4x5 boards, drawn
    with SEED + 4, are kept in UNIFORM_4X5). 4x6 and 6x4 (24/4x6 serves both): scrambled
    boards, each within max_4x6_seconds, checked by linear-conflict IDA* (walking distance
    refuses 4x6)."""
    md = manhattan_timeout
    return [Run(Shape(3, 4), "12/3x4", boards_of(Shape(3, 4), count, None, SEED), "uniformly random",
                oracle_timeout=md),
            Run(Shape(4, 3), "12/3x4", boards_of(Shape(4, 3), count, None, SEED + 1), "uniformly random",
                oracle_timeout=md),
            Run(Shape(2, 6), "12/2x6", boards_of(Shape(2, 6), count_2x6, None, SEED + 2), "uniformly random",
                oracle_timeout=md),
            Run(Shape(4, 5), "20/4x5", boards_of(Shape(4, 5), count_4x5, walk, SEED + 3),
                f"scrambled by {walk} moves", oracle_timeout=md),
            Run(Shape(4, 5), "20/4x5", board_file(UNIFORM_4X5), "uniformly random", max_4x5_seconds,
                oracle_4x5, oracle_4x5_timeout)] + [
            Run(shape, "24/4x6", boards_of(shape, count_4x6, walk_4x6, SEED + 7 + k), f"scrambled by {walk_4x6} moves",
                max_4x6_seconds, "linear-conflict", md)
            for k, shape in enumerate([Shape(4, 6), Shape(6, 4)]) if count_4x6]


def measure_run(r: Run, threads: int) -> tuple[list, list[dict], list[dict | None]]:
    """The run's row, its answers (or stops) and the independent solver's answers (None:
    not run, or stopped), every solution replayed and every length compared."""
    path = ensure_artifact(r.catalogue)
    pdb = solve_all(r.shape, r.boards, "--artifact", str(path), "--threads", str(threads), timeout=r.limit)
    answered = [i for i, a in enumerate(pdb) if "length" in a]
    checked = solve_all(r.shape, [r.boards[i] for i in answered], "--heuristic", r.oracle,
                        "--threads", str(threads), timeout=r.oracle_timeout)
    oracle: list[dict | None] = [None] * len(r.boards)
    for i, m in zip(answered, checked):
        oracle[i] = m if "length" in m else None
    for b, a, m in zip(r.boards, pdb, oracle):
        if "length" in a:
            assert_replays(a, b, "blank-last")
        if m is not None:
            assert a["length"] == m["length"], (b, a["length"], m["length"])
    done = [pdb[i] for i in answered]
    secs = [a["seconds"] for a in done]
    both = [(a, m) for a, m in zip(pdb, oracle) if m is not None]
    stopped = len(r.boards) - len(done)
    row = [str(r.shape), r.catalogue, f"{len(r.boards)} {r.kind}",
           f"{len(done)}" + (f" ({stopped} stopped at {r.limit:g} s)" if stopped else ""),
           f"{statistics.median(a['length'] for a in done):.0f}" if done else "-",
           ms(statistics.median(secs)) if secs else "-", ms(max(secs)) if secs else "-",
           f"{statistics.median(a['nodes_generated'] for a in done):,.0f}" if done else "-",
           f"{r.oracle} ({r.oracle_timeout:g} s)", f"{len(both)}",
           ms(statistics.median(m["seconds"] for _, m in both)) if both else "-",
           f"{statistics.median(m['nodes_generated'] / a['nodes_generated'] for a, m in both):,.0f}x"
           if both else "-"]
    return row, pdb, oracle


def keep_outcomes(r: Run, pdb: list[dict], oracle: list[dict | None], threads: int) -> None:
    """Each uniformly random 4x5 board's outcome, in the order of the board file."""
    rows = []
    for b, a, m in zip(r.boards, pdb, oracle):
        out = {"board": list(b)}
        if "length" in a:
            out.update(length=a["length"], seconds=a["seconds"], nodes_generated=a["nodes_generated"],
                       checked_by=f"IDA* {r.oracle}" if m is not None else None)
        else:
            out.update(stopped_after_seconds=r.limit, length_at_least=proven_bound(a))
        rows.append(out)
    head = json.dumps({"machine": machine(), "catalogue": r.catalogue, "threads": threads,
                       "limit_seconds": r.limit})
    OUTCOMES_4X5.write_text(head[:-1] + ', "boards": [\n' + ",\n".join(" " + json.dumps(x) for x in rows)
                            + "\n]}\n")  # one board a line


def walking_4x5(boards: list[tuple[int, ...]], walk: int, timeout: float, threads: int) -> str:
    """Walking distance on 4x5 beside Manhattan and linear conflict: the table's size, its
    build and its load from the cache, mean h over 1,000 uniformly random boards, and IDA*
    on the same scrambled boards with each, within ``timeout`` s a board."""
    t0 = time.perf_counter()
    parts = [tf.build_walking_part(4, 5), tf.build_walking_part(5, 4)]
    build = time.perf_counter() - t0
    tf.walking_part(4, 5), tf.walking_part(5, 4)  # kept in the cache, if it was not
    t0 = time.perf_counter()
    for lines, k in ((4, 5), (5, 4)):
        with np.load(tf.walking_cache(lines, k)) as f:
            [f[name] for name in ("codes", "trans", "dist")]
    load = time.perf_counter() - t0
    states = sum(len(p[0]) for p in parts)
    size = sum(a.nbytes for p in parts for a in p)
    rng = random.Random(SEED + 5)
    sample = [puzzle.random_board(Shape(4, 5), "blank-first", rng) for _ in range(1000)]
    names = ("manhattan", "linear-conflict", "walking-distance")
    means = {n: statistics.mean(map(tf.table_free(n, Shape(4, 5)).value, sample)) for n in names}
    runs = {n: solve_all(Shape(4, 5), boards, "--heuristic", n, "--threads", str(threads), timeout=timeout)
            for n in names}
    every = [i for i in range(len(boards)) if all("length" in runs[n][i] for n in names)]
    for i in every:
        assert len({runs[n][i]["length"] for n in names}) == 1, boards[i]
    rows = [[n, f"{means[n]:.2f}", f"{sum('length' in r for r in runs[n])}",
             f"{statistics.median(runs[n][i]['nodes_generated'] for i in every):,.0f}",
             ms(statistics.median(runs[n][i]['seconds'] for i in every)),
             ms(sum(runs[n][i]['seconds'] for i in every))] for n in names]
    record_bar(SECTION, "walking distance on 4x5 (table cost, mean h, nodes beside Manhattan)",
               f"{states / 1e6:.1f} M states, {size / 2**20:,.0f} MiB, built in {build:.1f} s; mean h "
               f"{means['walking-distance']:.2f} against Manhattan {means['manhattan']:.2f}", "recorded")
    return "\n".join([
        (f"Walking distance on 4x5: {states:,} states (rows 107,712, columns 5,977,015), "
         f"{size / 2**20:,.0f} MiB in memory; built in {build:.1f} s on first use, then loaded from "
         f"the kernels' cache directory in {load:.1f} s. Mean h over 1,000 uniformly random 4x5 "
         f"boards, and IDA* (one `pdbtool solve` process each, {threads} thread(s)) on {len(boards)} "
         f"4x5 boards scrambled by {walk} moves within {timeout:g} s each; nodes and seconds over the "
         f"{len(every)} boards all three solved (their lengths agree):"), "",
        table(["heuristic", "mean h", "solved", "median nodes", "median", "total"], rows)])


def measure(count: int, count_2x6: int, count_4x5: int, walk: int, threads: int,
            manhattan_timeout: float, max_4x5_seconds: float, oracle_4x5: str,
            oracle_4x5_timeout: float, walking_boards: int, walking_walk: int, count_4x6: int,
            walk_4x6: int, max_4x6_seconds: float) -> str:
    runs = runs_of(count, count_2x6, count_4x5, walk, max_4x5_seconds, manhattan_timeout,
                   oracle_4x5, oracle_4x5_timeout, count_4x6, walk_4x6, max_4x6_seconds)
    builds, rows, notes = {}, [], []
    for r in runs:
        builds[r.catalogue] = artifact.read_meta(ensure_artifact(r.catalogue))
        row, pdb, oracle = measure_run(r, threads)
        rows.append(row)
        secs = [a["seconds"] for a in pdb if "length" in a]
        if r.shape in ((3, 4), (4, 3)):
            record_bar(SECTION, f"every {r.shape} board in milliseconds (12/3x4, uniformly random)",
                       f"max {ms(max(secs))}, median {ms(statistics.median(secs))} over {len(secs)} "
                       f"boards; lengths = {r.oracle} IDA* on {row[9]}", max(secs) < 0.1)
        if r.catalogue == "24/4x6":
            record_bar(SECTION, f"{r.shape} boards (24/4x6, {threads} threads) measured and recorded",
                       f"{len(secs)} of {len(pdb)} boards {r.kind} within {r.limit:g} s each: median "
                       f"{ms(statistics.median(secs))}, max {ms(max(secs))}" if secs else "none answered",
                       "recorded")
        elif r.limit is not None:
            keep_outcomes(r, pdb, oracle, threads)
            bounds = sorted(proven_bound(a) for a in pdb if "length" not in a)
            record_bar(SECTION, f"4x5 boards (20/4x5, {threads} threads) measured and recorded",
                       f"{len(secs)} of {len(pdb)} uniformly random boards within {r.limit:g} s each: "
                       f"median {ms(statistics.median(secs))}, max {ms(max(secs))}", "recorded")
            notes.append(
                f"Uniformly random 4x5 boards: {len(secs)} of {len(pdb)} answered within {r.limit:g} s each "
                f"(median {ms(statistics.median(secs))}, max {ms(max(secs))} over those)"
                + (f"; {len(bounds)} stopped, at bounds {', '.join(map(str, bounds))} (each of those "
                   "boards needs at least that many moves)" if bounds else "")
                + f". {row[9]} of the answers confirmed by IDA* with {r.oracle} within "
                f"{r.oracle_timeout:g} s each; board by board: scripts/bench-state/4x5-uniform.json.")
    build_rows = [[cat, str(meta.shape), f"{meta.build.get('seconds', 0):.0f} s",
                   f"{max(meta.build.get('peak_worker_memory_bytes') or 0, meta.build.get('peak_memory_bytes') or 0) / 2**30:.1f} GiB",
                   f"{meta.file_size / 2**20:,.0f} MiB", f"{meta.total_entries:,}"]
                  for cat, meta in builds.items()]
    return "\n".join([
        f"Rectangular boards ({machine()}).", "",
        "Builds (`pdbtool build`, all cores; figures from each artifact's `build` attribute):", "",
        table(["catalogue", "shape", "build", "peak memory", "size", "entries"], build_rows), "",
        (f"Solves: held-out boards, one `pdbtool solve --shape RxC --json --file -` process per "
         f"shape and heuristic, {threads} thread(s); search seconds per board (the JSON's "
         f"`seconds`); the uniformly random 4x5 boards (scripts/bench-state/4x5-uniform.txt) "
         f"within {max_4x5_seconds:g} s each, 4x6 and 6x4 boards within {max_4x6_seconds:g} s each. Each answer is replayed and its length compared "
         "with an independent solver's, IDA* without tables, on the answered boards, within "
         "the timeout shown per board: every length agrees where both finished."), "",
        table(["shape", "catalogue", "boards", "answered", "median length", "median", "max",
               "median nodes", "independent solver", "lengths agree", "its median",
               "node ratio (median)"], rows), "", *notes, "",
        walking_4x5(boards_of(Shape(4, 5), walking_boards, walking_walk, SEED + 6), walking_walk,
                    manhattan_timeout, threads)])


def options(p):
    p.add_argument("--count", type=int, default=200, help="3x4 and 4x3 boards (default 200)")
    p.add_argument("--count-2x6", type=int, default=100, help="2x6 boards (default 100)")
    p.add_argument("--count-4x5", type=int, default=100, help="scrambled 4x5 boards (default 100)")
    p.add_argument("--walk", type=int, default=100, help="random moves of a scrambled 4x5 board")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--manhattan-timeout", type=float, default=5.0)
    p.add_argument("--max-4x5-seconds", type=float, default=120.0,
                   help="per uniformly random 4x5 board (default 120)")
    p.add_argument("--oracle-4x5", default="walking-distance",
                   help="the independent solver's heuristic on the uniformly random 4x5 boards")
    p.add_argument("--oracle-4x5-timeout", type=float, default=6.0)
    p.add_argument("--walking-boards", type=int, default=50,
                   help="scrambled 4x5 boards for walking distance beside Manhattan")
    p.add_argument("--walking-walk", type=int, default=60, help="their random moves")
    p.add_argument("--count-4x6", type=int, default=20, help="scrambled 4x6 boards, and as many 6x4")
    p.add_argument("--walk-4x6", type=int, default=100, help="random moves of a scrambled 4x6 board")
    p.add_argument("--max-4x6-seconds", type=float, default=60.0, help="per 4x6 or 6x4 board")


if __name__ == "__main__":
    run(SECTION, measure, __doc__, options)
