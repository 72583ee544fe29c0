"""The current-results table that opens BENCHMARKS.md: one row a bar, the latest measurement
of each (bar | figure | met | machine | commit | date).

The rows live in scripts/bench-results.json, keyed by bar, in the table's order. A benchmark
program records its bars with ``record(section, bar, figure, met)`` (benchlib.record_bar),
which stamps this machine, the commit and the date; after each section scripts/bench
rewrites the table between ``<!-- bench:results -->`` and ``<!-- /bench:results -->``.
``scripts/bench table`` (this file run as a program) only rewrites the table. Standard
library only: it runs without the project installed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "scripts" / "bench-results.json"
BENCHMARKS = ROOT / "BENCHMARKS.md"
START, END = "<!-- bench:results -->", "<!-- /bench:results -->"
COLUMNS = ("bar", "figure", "met", "machine", "commit", "date")


def load(path: Path = RESULTS) -> dict[str, dict]:
    return json.loads(path.read_text()) if path.exists() else {}


def machine() -> str:
    """This machine in a few words: 'Intel Xeon, 2 cores'."""
    cpu = "unknown cpu"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1]
                break
    except OSError:
        pass
    cpu = re.sub(r"\((R|TM)\)|\bProcessor\b|\bCPU\b|@.*|\b\d+-Core\b", " ", cpu)
    return f"{' '.join(cpu.split())}, {os.cpu_count()} cores"


def commit() -> str:
    """The checked-out commit, '-dirty' when the measured code (pdbtool, pdbd) differs from it."""
    def git(*args):
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
    head = git("rev-parse", "--short", "HEAD").stdout.strip() or "unknown"
    return head + ("-dirty" if git("status", "--porcelain", "--", "pdbtool", "pdbd").stdout.strip() else "")


def record(section: str, bar: str, figure: str, met, path: Path = RESULTS) -> None:
    """Set ``bar``'s row (a new bar goes last). ``met``: True, False or a word ('partly')."""
    rows = load(path)
    rows[bar] = {"section": section, "figure": figure,
                 "met": ("yes" if met else "no") if isinstance(met, bool) else met,
                 "machine": machine(), "commit": commit(), "date": time.strftime("%Y-%m-%d")}
    path.write_text(json.dumps(rows, indent=1, ensure_ascii=False) + "\n")


def wrap_long(text: str, limit: int = 400, width: int = 100) -> str:
    """Prose lines over ``limit`` characters re-wrapped at ``width`` (tables, headings and
    markers as they are): no line of BENCHMARKS.md is over 400 characters."""
    out = []
    for line in text.split("\n"):
        keep = len(line) <= limit or line.startswith(("|", "#", "<!--"))
        out.append(line if keep else textwrap.fill(line, width, break_long_words=False,
                                                   break_on_hyphens=False))
    return "\n".join(out)


def render(rows: dict[str, dict]) -> str:
    def cell(s) -> str:
        return str(s).replace("|", "\\|")
    out = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    out += ["| " + " | ".join(cell(bar if c == "bar" else row[c]) for c in COLUMNS) + " |"
            for bar, row in rows.items()]
    return "\n".join(out)


def write(markdown: Path = BENCHMARKS, path: Path = RESULTS) -> str:
    """Rewrite the table between the markers of ``markdown``; the table."""
    text = markdown.read_text()
    if START not in text or END not in text:
        raise SystemExit(f"{markdown.name}: no {START} ... {END} block for the table")
    body = render(load(path))
    text = text[:text.index(START) + len(START)] + "\n" + body + "\n" + text[text.index(END):]
    markdown.write_text(text)
    return body


if __name__ == "__main__":
    if sys.argv[1:] not in ([], ["table"]):
        raise SystemExit("usage: scripts/benchresults.py [table]")
    print(write())
