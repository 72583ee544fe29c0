"""The reliability section: every case of the second probe's report, re-run.

Findings 1-7 and the issue's bar: idle calls against health, Solve and Watch, idle and
surplus connections; rollouts by rename, metadata changes, a refused reload; reload leaks
and A*'s memory at 256M; `pdbd web`'s door (bind, body limit, cross-origin POST, Host,
frames, per-client cap); fairness; the cluster cache; signals (solve and serve with
--cluster, a killed build), limits, TLS handshake logging, verify's seed and --exhaustive;
and each message of item 7. Each case runs on loopback against processes it starts itself
(`pdbd serve` with the 15/6-6-3 table, `pdbd web`, `pdbtool`), with bounded loops and a
timeout of its own, and prints one row: case, expected, observed, pass or FAIL.

Usage: .venv/bin/python scripts/reliability.py [--json] [--only NAME ...] [--list] [--record]
--record writes the table (with the date, the machine and the commit) into
docs/reliability.md. Exit 0 when every case passes, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import NamedTuple

import reliability_daemon
import reliability_tools
from reliability_harness import ROOT, STARTED, Case, table_source


class Row(NamedTuple):
    case: str
    finding: str
    expected: str
    observed: str
    ok: bool
    seconds: float = 0.0


# -- running ------------------------------------------------------------------------------

def run_case(case: Case) -> Row:
    """One case on a thread, bounded by its timeout; an exception is a failure row."""
    box: list = []

    def body():
        try:
            box.append(case.run())
        except Exception as e:  # noqa: BLE001 (a case that breaks is a row; the others run)
            box.append((f"error: {type(e).__name__}: {e}", False))
        except SystemExit as e:  # a helper's sys.exit(message): the message, not a timeout
            box.append((f"error: {e}", False))

    start = time.monotonic()
    t = threading.Thread(target=body, daemon=True)
    t.start()
    t.join(case.seconds)
    seconds = time.monotonic() - start
    if not box:
        observed, ok = f"no result within {case.seconds:.0f} s", False
    else:
        observed, ok = box[0]
    return Row(case.name, case.finding, case.expected, " ".join(observed.split()), ok, seconds)


def all_cases(tmp: Path) -> list[Case]:
    return reliability_daemon.cases(tmp) + reliability_tools.cases(tmp)


def commit() -> str:
    try:
        return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def markdown(rows: list[Row], machine: str) -> str:
    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    passed = sum(r.ok for r in rows)
    lines = [(f"Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on commit "
              f"{commit()}, {machine}: **{passed} of {len(rows)} cases pass**."), "",
             "| case | finding | expected | observed | result | s |", "|---|---|---|---|---|---|"]
    lines += [f"| {r.case} | {r.finding} | {cell(r.expected)} | {cell(r.observed)} | "
              f"{'pass' if r.ok else '**FAIL**'} | {r.seconds:.0f} |" for r in rows]
    return "\n".join(lines) + "\n"


DOC = ROOT / "docs" / "reliability.md"
BLOCK = ("<!-- reliability:table -->\n", "<!-- /reliability:table -->")


def record(table: str) -> None:
    text = DOC.read_text()
    head, rest = text.split(BLOCK[0], 1)
    DOC.write_text(head + BLOCK[0] + table + rest[rest.index(BLOCK[1]):])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--json", action="store_true", help="one JSON object: the rows")
    p.add_argument("--only", nargs="+", metavar="NAME", help="run only these cases")
    p.add_argument("--list", action="store_true", help="list the cases and exit")
    p.add_argument("--record", action="store_true",
                   help="write the table into docs/reliability.md (a run of every case)")
    args = p.parse_args(argv)
    os.environ.setdefault("NUMBA_CACHE_DIR", str(Path(tempfile.gettempdir()) / "numba-cache"))
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]  # cases open many sockets
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="reliability-") as tmp:
        cases = all_cases(Path(tmp))
        if args.list:
            for c in cases:
                print(f"{c.name:28s} finding {c.finding:6s} {c.expected}")
            return 0
        if args.record and args.only:
            p.error("--record records a run of every case: not with --only")
        unknown = set(args.only or ()) - {c.name for c in cases}
        if unknown:
            p.error(f"unknown case(s): {', '.join(sorted(unknown))} (see --list)")
        table_source()  # most cases serve this table: without it, say so once and stop
        for case in cases:
            if args.only and case.name not in args.only:
                continue
            row = run_case(case)
            rows.append(row)
            if not args.json:
                print(f"{'pass' if row.ok else 'FAIL'}  {row.case:28s} {row.seconds:5.0f} s  "
                      f"expected: {row.expected}\n      observed: {row.observed}", flush=True)
        for proc in STARTED:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    from benchlib import machine

    if args.json:
        print(json.dumps({"machine": machine(), "commit": commit(),
                          "rows": [r._asdict() for r in rows]}, indent=1))
    else:
        print(f"{sum(r.ok for r in rows)} of {len(rows)} cases pass")
    if args.record:
        record(markdown(rows, machine().rsplit(", ", 1)[0]))  # the date is in the run line
    return 0 if all(r.ok for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
