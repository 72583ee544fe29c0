"""Rectangular boards: per shape, the build of its strongest catalogue (time, peak
memory, size on disk) and solve times on held-out boards with it, beside Manhattan-only IDA*
on the same boards (an independent solver: every length must agree, every solution replays).

Each run is one `pdbtool solve --shape RxC --json --file -` process for all of a shape's
boards (the tables loaded and the kernels compiled once; the figures are the searches'
own seconds, the JSON's "seconds"). Boards: uniformly random solvable ones (3x4, 4x3, 2x6,
and 4x5 ones within --max-4x5-seconds each), and 4x5 boards scrambled by random walks
(--walk moves). Manhattan-only IDA* runs with --manhattan-timeout per board; boards it does
not finish in time are counted, not compared.

Rewrites the `shapes` section of BENCHMARKS.md. Usage: scripts/bench shapes
"""

from __future__ import annotations

import json
import random
import statistics
import subprocess

from benchlib import PY, ROOT, ensure_artifact, machine, record_bar, run, table
from reference import assert_replays

from pdbtool import puzzle
from pdbtool.geometry import Shape
from pdbtool.tables import artifact

SECTION = "shapes"
SEED = 3804  # held out: the tests use other seeds


def boards_of(shape: Shape, count: int, walk: int | None, seed: int) -> list[tuple[int, ...]]:
    rng = random.Random(seed)
    if walk:
        return [puzzle.random_walk(shape, walk, "blank-last", rng) for _ in range(count)]
    return [puzzle.random_board(shape, "blank-last", rng) for _ in range(count)]


def solve_all(shape: Shape, boards, *options, timeout: float | None = None) -> list[dict | None]:
    """One pdbtool process for every board; each board's JSON, or None where it stopped
    (exit 4: the --timeout of one board)."""
    args = [PY, "-m", "pdbtool", "solve", "--shape", str(shape), "--json", "--quiet",
            "--file", "-", *options] + (["--timeout", str(timeout)] if timeout else [])
    p = subprocess.run(args, input="\n".join(" ".join(map(str, b)) for b in boards),
                       capture_output=True, text=True, cwd=ROOT, check=False)
    assert p.returncode in (0, 4), p.stderr[-2000:]
    out = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    results: list[dict | None] = []
    for r in out:
        results.append(r if "length" in r else None)
    assert len(results) == len(boards), (len(results), p.stderr[-2000:])
    return results


def ms(x: float) -> str:
    return f"{x * 1000:.2f} ms" if x < 1 else f"{x:.2f} s"


def measure(count: int, count_2x6: int, count_4x5: int, walk: int, uniform_4x5: int,
            threads: int, manhattan_timeout: float, max_4x5_seconds: float) -> str:
    runs = [(Shape(3, 4), "12/3x4", count, None), (Shape(4, 3), "12/3x4", count, None),
            (Shape(2, 6), "12/2x6", count_2x6, None),
            (Shape(4, 5), "20/4x5", count_4x5, walk), (Shape(4, 5), "20/4x5", uniform_4x5, None)]
    builds, rows, notes = {}, [], []
    for k, (shape, cat, n, scramble) in enumerate(runs):
        path = ensure_artifact(cat)
        meta = artifact.read_meta(path)
        builds[cat] = meta
        boards = boards_of(shape, n, scramble, SEED + k)
        timeout = max_4x5_seconds if shape == (4, 5) and not scramble else None
        pdb = solve_all(shape, boards, "--artifact", str(path), "--threads", str(threads),
                        timeout=timeout)
        md = solve_all(shape, boards, "--heuristic", "manhattan", "--threads", str(threads),
                       timeout=manhattan_timeout)
        agree = 0
        for b, a, m in zip(boards, pdb, md):
            if a is not None:
                assert_replays(a, b, "blank-last")
            if a is not None and m is not None:
                assert a["length"] == m["length"], (b, a["length"], m["length"])
                agree += 1
        done = [r for r in pdb if r is not None]
        secs = [r["seconds"] for r in done]
        nodes = [r["nodes_generated"] for r in done]
        md_done = [m for m in md if m is not None]
        kind = f"scrambled by {scramble} moves" if scramble else "uniformly random"
        both = [(a, m) for a, m in zip(pdb, md) if a is not None and m is not None]
        rows.append([str(shape), cat, f"{len(boards)} {kind}",
                     f"{len(done)}" + ("" if len(done) == len(boards) else f" (of {len(boards)})"),
                     f"{statistics.median(r['length'] for r in done):.0f}" if done else "-",
                     ms(statistics.median(secs)) if secs else "-", ms(max(secs)) if secs else "-",
                     f"{statistics.median(nodes):,.0f}" if nodes else "-",
                     f"{len(md_done)}", ms(statistics.median(m['seconds'] for m in md_done)) if md_done else "-",
                     f"{statistics.median(m['nodes_generated'] / a['nodes_generated'] for a, m in both):,.0f}x"
                     if both else "-", f"{agree}"])
        if shape in ((3, 4), (4, 3)) and not scramble:
            record_bar(SECTION, f"every {shape} board in milliseconds (12/3x4, uniformly random)",
                       f"max {ms(max(secs))}, median {ms(statistics.median(secs))} over {len(secs)} "
                       f"boards; lengths = Manhattan IDA* on {agree}", max(secs) < 0.1)
        if shape == (4, 5) and scramble:
            record_bar(SECTION, f"4x5 boards (20/4x5, {threads} threads) measured and recorded",
                       f"median {ms(statistics.median(secs))}, max {ms(max(secs))} over {len(secs)} "
                       f"boards scrambled by {scramble} moves", "recorded")
        if timeout and len(done) < len(boards):
            notes.append(f"{len(boards) - len(done)} of the {len(boards)} uniformly random 4x5 boards "
                         f"did not finish within {timeout:g} s each with 20/4x5 on {threads} threads.")
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
         f"`seconds`); Manhattan-only IDA* on the same boards with --timeout "
         f"{manhattan_timeout:g} s per board (uniformly random 4x5 boards: the table's search "
         f"with --timeout {max_4x5_seconds:g} s). Every solution replays; every length agrees "
         "with Manhattan IDA* where both finished."), "",
        table(["shape", "catalogue", "boards", "solved", "median length", "median", "max",
               "median nodes", "Manhattan solved", "Manhattan median", "node ratio (median)",
               "lengths agree"], rows), "", *notes])


def options(p):
    p.add_argument("--count", type=int, default=200, help="3x4 and 4x3 boards (default 200)")
    p.add_argument("--count-2x6", type=int, default=100, help="2x6 boards (default 100)")
    p.add_argument("--count-4x5", type=int, default=100, help="scrambled 4x5 boards (default 100)")
    p.add_argument("--walk", type=int, default=100, help="random moves of a scrambled 4x5 board")
    p.add_argument("--uniform-4x5", type=int, default=20, help="uniformly random 4x5 boards")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--manhattan-timeout", type=float, default=5.0)
    p.add_argument("--max-4x5-seconds", type=float, default=30.0,
                   help="per uniformly random 4x5 board")


if __name__ == "__main__":
    run(SECTION, measure, __doc__, options)
