"""Resumable searches: Korf & Felner's 24-puzzle #1 with 24/6-6-6-6 on 2 threads, straight,
and killed with SIGKILL half way through (at half the straight run's median wall time)
then resumed from its checkpoint: the resumed run's wall time against the straight run's
(the bar: at most three quarters), the same optimal length.

Rewrites the `checkpoint` section of BENCHMARKS.md. Usage: scripts/bench checkpoint
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from benchlib import PY, ROOT, ensure_artifact, korf24, machine, record_bar, run, table

SECTION = "checkpoint"
INSTANCE = 1
EVERY = 0.25  # seconds between saves (a short search: the default is a minute)
BAR = 0.75  # the resumed run's wall time over the straight run's, at most


def solve(art: Path, board: str, *extra) -> tuple[float, dict, subprocess.Popen]:
    start = time.perf_counter()
    p = subprocess.run([PY, "-m", "pdbtool", "solve", "--artifact", str(art), "--goal",
                        "blank-first", "--threads", "2", "--json", "--quiet", *extra, board],
                       capture_output=True, text=True, cwd=ROOT)
    seconds = time.perf_counter() - start
    assert p.returncode == 0, p.stderr
    return seconds, json.loads(p.stdout)


def measure(runs: int) -> str:
    art = ensure_artifact("24/6-6-6-6")
    instances, _ = korf24()
    length, tiles = instances[INSTANCE]
    board = " ".join(map(str, tiles))
    solve(art, board)  # kernels compiled, pages read
    t = statistics.median(solve(art, board)[0] for _ in range(2))  # where to kill: half of it
    straight, rows = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(runs):  # straight and resumed in turn, so that both see the same machine
            straight.append(solve(art, board))
            path = Path(tmp) / f"run{i}.json"
            p = subprocess.Popen([PY, "-m", "pdbtool", "solve", "--artifact", str(art), "--goal",
                                  "blank-first", "--threads", "2", "--quiet", "--checkpoint",
                                  str(path), "--checkpoint-every", str(EVERY), board],
                                 cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(t / 2)
            os.kill(p.pid, signal.SIGKILL)
            p.wait()
            saved = json.loads(path.read_text())
            seconds, answer = solve(art, board, "--checkpoint", str(path))
            assert answer["length"] == length and not path.exists()
            rows.append((seconds, saved, answer))
    t = statistics.median(s for s, _ in straight)
    r = statistics.median(s for s, _, _ in rows)
    ratio = r / t
    straight_nodes = statistics.median(a["nodes_generated"] for _, a in straight)
    record_bar(SECTION, f"24-puzzle #{INSTANCE} (24/6-6-6-6, 2 threads) killed half way resumes "
               f"in <= {BAR:g} of the straight run's time",
               f"{ratio:.2f} ({r:.1f} s against {t:.1f} s; length {length} both ways)",
               ratio <= BAR)
    return "\n".join([
        f"Resumed searches ({machine()}): Korf & Felner's #{INSTANCE} ({length} moves) with "
        f"24/6-6-6-6 on 2 threads, whole `pdbtool solve` processes (start-up and loading "
        f"included), {runs} times in turn: straight, then killed with SIGKILL at half the "
        f"straight time measured before (checkpoints every {EVERY:g} s) and resumed:", "",
        table(["run", "wall s", "nodes generated", "saved at bound", "tasks finished there"],
              [[f"straight {k + 1}", f"{s:.2f}", f"{a['nodes_generated']:,}", "", ""]
               for k, (s, a) in enumerate(straight)] +
              [[f"resumed {k + 1}", f"{s:.2f}", f"{a['nodes_generated']:,}", saved["bound"],
                f"{len(saved['finished'])} of {len(saved['order'])}"]
               for k, (s, saved, a) in enumerate(rows)]), "",
        f"Resumed / straight: {ratio:.2f} (medians; the bar: <= {BAR:g}). Nodes generated, "
        f"straight median {straight_nodes:,.0f}; on two threads the last iteration's count "
        "varies a little from run to run either way (which thread reaches the goal first)."])


def options(p):
    p.add_argument("--runs", type=int, default=3, help="runs of each (default 3)")


if __name__ == "__main__":
    run(SECTION, measure, __doc__, options)
