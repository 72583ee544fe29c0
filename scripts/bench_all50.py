"""All of Korf & Felner's 50 24-puzzles, across as many sittings as it takes.

Each instance is one `pdbtool solve --checkpoint` process on 2 threads with the given
catalogue (default 24/small): the search saves its progress every minute to
scripts/bench-state/24-NN.checkpoint, so a run stopped by the end of a session, a reboot or
Ctrl-C resumes where it was at the next `scripts/bench all50`. What each finished instance
gave (length, nodes, CPU and wall seconds over all its sittings, the table, the machine)
is kept in scripts/bench-state/all50.json, and the instance running now with the CPU and
wall time of its earlier sittings; both files are small and committed until the run ends.
Each answer is checked here too: its length against the published optimum, its moves
replayed to the goal.

The instances go in the order of Korf & Felner's published node counts (easiest first)
among those without a row. Rows taken over from the one-hour run of section `24` say so
(its figures are wall seconds inside that run; its CPU seconds were not recorded).

Rewrites the `all50` section of BENCHMARKS.md after each instance. Usage:
  scripts/bench all50                        run until every instance has a row
  .venv/bin/python scripts/bench_all50.py --hours 2 --idle   stop (resumably) after 2 h;
                                             search at idle priority (SCHED_IDLE), for a
                                             machine that is doing other work meanwhile
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

from benchlib import PY, ROOT, data_rows, ensure_artifact, korf24, machine, record_bar, run, table
from pdbtool import puzzle
from pdbtool.tables.files import atomic_output

SECTION = "all50"
STATE = ROOT / "scripts" / "bench-state"
RECORD = STATE / "all50.json"
SAMPLE_SECONDS = 30.0  # how often the running instance's CPU time is written down
TICKS = os.sysconf("SC_CLK_TCK")


def load_record() -> dict:
    if RECORD.exists():
        return json.loads(RECORD.read_text())
    return {"rows": {}, "running": None}


def save_record(record: dict) -> None:
    STATE.mkdir(parents=True, exist_ok=True)
    with atomic_output(RECORD) as tmp:
        Path(tmp).write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")


def cpu_seconds(pid: int) -> float:
    """User and system time of a running process, all its threads."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def commit() -> str:
    p = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                       cwd=ROOT)
    return p.stdout.strip() or "unknown"


def solve_one(k: int, board, art: Path, running: dict, deadline: float, idle: bool,
              record: dict) -> dict | None:
    """Run (or resume) instance ``k`` until it is answered (its row) or the deadline
    passes (None: saved, to be resumed)."""
    ckpt = STATE / f"24-{k:02d}.checkpoint"
    cmd = [PY, "-m", "pdbtool", "solve", "--artifact", str(art), "--goal", "blank-first",
           "--threads", "2", "--json", "--quiet", "--checkpoint", str(ckpt),
           "--checkpoint-every", "60", " ".join(map(str, board))]
    if idle:
        cmd = ["chrt", "--idle", "0", *cmd]
    start, before_cpu, before_wall = time.monotonic(), running["cpu_seconds"], running["wall_seconds"]
    p = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    used = 0.0
    try:
        while p.poll() is None:
            try:
                p.wait(timeout=SAMPLE_SECONDS)
            except subprocess.TimeoutExpired:
                pass
            try:
                used = cpu_seconds(p.pid)
            except (OSError, IndexError):
                pass  # it has just ended
            running["cpu_seconds"] = before_cpu + used
            running["wall_seconds"] = before_wall + time.monotonic() - start
            save_record(record)
            if time.monotonic() > deadline and p.poll() is None:
                p.send_signal(signal.SIGTERM)  # the search saves its progress and stops
    except KeyboardInterrupt:  # (SIGTERM, not SIGINT: a runner started in the background
        p.send_signal(signal.SIGTERM)  # passes SIGINT on ignored, and the search ignored it)
        raise
    finally:
        out, err = p.communicate()
        running["wall_seconds"] = before_wall + time.monotonic() - start
        save_record(record)
    if p.returncode != 0:
        if ckpt.exists():
            return None  # stopped and saved: resumed at the next sitting
        raise SystemExit(f"#{k}: pdbtool solve failed ({p.returncode}): {err.strip()}")
    return json.loads(out)


def measure(hours: float, catalogue: str, idle: bool) -> str:
    art = ensure_artifact(catalogue)
    boards, _ = korf24()
    published = {row[0]: tuple(row[2:4]) for row in data_rows("korf24_50_clausecker.txt")}
    record = load_record()
    deadline = time.monotonic() + hours * 3600 if hours else float("inf")
    for k in sorted(published, key=lambda k: published[k][0]):
        if str(k) in record["rows"] or time.monotonic() > deadline:
            continue
        opt, board = boards[k]
        running = record["running"]
        if not running or running["instance"] != k:
            running = record["running"] = {"instance": k, "cpu_seconds": 0.0,
                                           "wall_seconds": 0.0, "sittings": 0}
        running["sittings"] += 1
        answer = solve_one(k, board, art, running, deadline, idle, record)
        if answer is None:
            break
        replayed = puzzle.apply_tile_moves(tuple(board), answer["moves"])
        if answer["length"] != opt or replayed != tuple(range(25)):
            raise SystemExit(f"#{k}: length {answer['length']} (published {opt}), replays to "
                             f"the goal: {replayed == tuple(range(25))}")
        record["rows"][str(k)] = {
            "length": answer["length"], "expanded": answer["nodes_expanded"],
            "generated": answer["nodes_generated"], "cpu_seconds": round(running["cpu_seconds"], 1),
            "wall_seconds": round(running["wall_seconds"], 1),
            "search_seconds": answer["seconds"], "sittings": running["sittings"],
            "table": answer["heuristic"], "artifact": answer["artifact"], "machine": machine(),
            "commit": commit(), "idle_priority": idle, "source": "scripts/bench all50"}
        record["running"] = None
        save_record(record)
        write_report(record, published)
    return report(record, published)


def write_report(record: dict, published: dict) -> None:
    from benchlib import write_section

    write_section(SECTION, report(record, published))


def report(record: dict, published: dict) -> str:
    rows, wall, cpu, timed = [], 0.0, 0.0, 0
    for k in sorted(published, key=lambda k: published[k][0]):
        r = record["rows"].get(str(k))
        kf, cr = published[k]
        if r is None:
            running = record["running"] or {}
            sittings = running.get("sittings", 0)
            note = (f"running: {running.get('cpu_seconds', 0) / 3600:.1f} CPU h in "
                    f"{sittings} sitting{'' if sittings == 1 else 's'} so far"
                    if running.get("instance") == k else "not yet")
            rows.append([f"#{k}", "", "", "", "", "", "", f"{kf:,}", "", f"{cr:,}", note])
            continue
        wall += r["wall_seconds"]
        if r["cpu_seconds"]:
            cpu, timed = cpu + r["cpu_seconds"], timed + 1
        rows.append([f"#{k}", r["length"], f"{r['expanded']:,}", f"{r['generated']:,}",
                     f"{r['cpu_seconds']:,.1f}" if r["cpu_seconds"] else "n/r",
                     f"{r['wall_seconds']:,.1f}", r["sittings"], f"{kf:,}",
                     f"{r['expanded'] / kf:.4f}", f"{cr:,}", f"{r['source']}, {r['commit']}, "
                     f"{r['machine'].split(',')[0]}, {r['machine'].rsplit(', ', 1)[-1]}"
                     + (", idle priority" if r.get("idle_priority") else "")])
    solved = len(record["rows"])
    record_bar(SECTION, "all 50 solved optimally, each replayed; total wall time on 2 threads <= 8 h",
               f"{solved} of 50; {wall / 3600:.1f} h of wall time over them", solved == 50 and wall <= 8 * 3600)
    return "\n".join([
        "## 24-puzzle: all of Korf & Felner's 50, across sittings", "",
        f"`scripts/bench all50` (resumable: scripts/bench-state/). **{solved} of 50 solved "
        f"optimally** (each length the published optimum, each answer replayed), "
        f"{wall / 3600:.2f} h of wall time over them on 2 threads, and {cpu / 3600:.2f} CPU h "
        f"over the {timed} rows that record it (not the rows taken over from the one-hour "
        "run). Rows run at "
        "idle priority shared the machine with other work: their wall time is longer than a "
        "quiet machine's, their CPU time and node counts are not affected.", "",
        table(["instance", "length", "expanded", "generated", "CPU s", "wall s", "sittings",
               "K&F expanded", "ratio", "C&R small (zero-aware)", "run"], rows)])


def options(p) -> None:
    p.add_argument("--hours", type=float, default=0.0,
                   help="stop after this long (the running instance saved, resumable); 0: no limit")
    p.add_argument("--catalogue", default="24/small")
    p.add_argument("--idle", action="store_true",
                   help="search at idle priority (chrt --idle): for a machine doing other work")


if __name__ == "__main__":
    run(SECTION, measure, __doc__, options)
