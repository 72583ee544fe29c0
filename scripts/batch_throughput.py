"""Throughput of pdbd on many boards: 1,000 random 15-puzzles (seeded) with the 7-8 tables,
solved in-process (as `pdbtool solve --file` does, one thread), over gRPC one Solve at a
time, and on one SolveBatch call; the daemon on one search thread, on loopback. The
overhead per board is the wall time beyond the searches' own time (the `seconds` each
result reports). Prints a table (Markdown) for BENCHMARKS.md.

Usage: .venv/bin/python scripts/batch_throughput.py ARTIFACT_DIR [BOARDS]
(not a section of scripts/bench: it needs the 7-8 tables built and writes no file)
"""

from __future__ import annotations

import random
import subprocess
import sys
import time
from pathlib import Path

from pdbd.client import SolverClient
from pdbtool import puzzle
from pdbtool.selection import load_directory

SEED = 37


def boards(n: int) -> list[tuple[int, ...]]:
    rng = random.Random(SEED)
    return [tuple(puzzle.random_board(4, "blank-last", rng)) for _ in range(n)]


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(directory: str, n: int = 1000) -> None:
    todo = boards(n)
    solver = load_directory(directory, require=True).heuristics[4]
    from pdbtool.search.solver import Solver

    solver = Solver(solver)
    solver.solve(todo[0])  # compiled or loaded from the cache before the clock starts
    start = time.perf_counter()
    local = [solver.solve(b) for b in todo]
    local_wall = time.perf_counter() - start
    local_search = sum(r.seconds for r in local)

    address = f"127.0.0.1:{free_port()}"
    pdbd = Path(sys.executable).with_name("pdbd")
    proc = subprocess.Popen([str(pdbd), "serve", "--artifacts", directory, "--listen", address,
                             "--threads", "1", "--log-level", "warning", "--no-prefault"])
    try:
        with SolverClient(address) as c:
            c.wait_serving(600)
            for b in todo[:20]:  # the tables' pages in memory, the connection up
                c.solve(b)
            start = time.perf_counter()
            unary = [c.solve(b) for b in todo]
            unary_wall = time.perf_counter() - start
            start = time.perf_counter()
            batch = dict(c.solve_batch(todo))
            batch_wall = time.perf_counter() - start
    finally:
        proc.terminate()
        proc.wait(60)
    assert [r.length for r in unary] == [r.length for r in local]
    assert [batch[i].length for i in range(n)] == [r.length for r in local]
    unary_search = sum(r.seconds for r in unary)
    batch_search = sum(r.seconds for r in batch.values())
    rows = [("in-process (`pdbtool solve --file`)", local_wall, local_search),
            ("gRPC, one Solve at a time", unary_wall, unary_search),
            ("gRPC, one SolveBatch call", batch_wall, batch_search)]
    lengths = sorted(r.length for r in local)
    print(f"{n} random 15-puzzles (seed {SEED}, lengths {lengths[0]}..{lengths[-1]}, median "
          f"{lengths[n // 2]}), 15/7-8 tables, one search thread\n")
    print("| how | wall s | boards/s | searches s | overhead per board ms |")
    print("|---|---:|---:|---:|---:|")
    for name, wall, search in rows:
        print(f"| {name} | {wall:.2f} | {n / wall:,.0f} | {search:.2f} | "
              f"{(wall - search) / n * 1000:.3f} |")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1000)
