"""What the benchmark programs (scripts/bench_*.py) share: the machine line, the instance
files, Markdown tables, BENCHMARKS.md sections, artifacts, ports and memory.

Each program measures one subject and rewrites its own block of BENCHMARKS.md, between
``<!-- bench:NAME -->`` and ``<!-- /bench:NAME -->``; scripts/bench NAME runs it. It records
the figure of each bar it measures with ``record_bar``; the table of current results that
opens BENCHMARKS.md is then rendered from them (scripts/benchresults.py).
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ART = ROOT / "artifacts"
PY = sys.executable
WARM_24 = tuple([1, 0] + list(range(2, 25)))  # one move from the goal: compiles the kernels

# The instance files (copies of shared/bench) and their reader live with the tests.
sys.path.insert(0, str(ROOT / "tests"))
from reference import data_rows, free_port, instances  # noqa: E402
from serving import rss_kib  # noqa: E402

import benchresults  # noqa: E402

__all__ = ["ROOT", "ART", "PY", "WARM_24", "data_rows", "free_port", "instances", "korf24", "machine",
           "table", "write_section", "ensure_artifact", "geometric_mean", "record_bar", "rss_kib", "run"]


def machine() -> str:
    import numba

    cpu = "unknown cpu"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (f"{cpu}, {os.cpu_count()} cores, {mem:.0f} GiB, Python {platform.python_version()}, "
            f"numba {numba.__version__}, {time.strftime('%Y-%m-%d')}")


def korf24() -> tuple[dict, dict]:
    """Korf & Felner's 50 24-puzzle instances, by id: {id: (optimal, board)}, and the node
    counts they published: {id: nodes}."""
    boards = {k: (opt, b) for k, opt, b in instances("korf24_50.txt")}
    return boards, {row[0]: row[2] for row in data_rows("korf24_50_nodes.txt")}


def table(headers, rows) -> str:
    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def write_section(name: str, body: str) -> None:
    """Replace (or append) the block of BENCHMARKS.md between the section's markers."""
    path = ROOT / "BENCHMARKS.md"
    text = path.read_text() if path.exists() else "# Benchmarks\n"
    start, end = f"<!-- bench:{name} -->", f"<!-- /bench:{name} -->"
    block = f"{start}\n{benchresults.wrap_long(body.strip())}\n{end}"
    if start in text:
        text = text[:text.index(start)] + block + text[text.index(end) + len(end):]
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    path.write_text(text)
    print(body)


def record_bar(section: str, bar: str, figure: str, met) -> None:
    """Record ``bar``'s latest figure (with this machine, commit and date) for the table of
    current results; ``met``: True, False or a word ('partly', 'recorded')."""
    benchresults.record(section, bar, figure, met)


def ensure_artifact(catalogue: str, zero_aware: bool = True) -> Path:
    """The artifact in artifacts/, built (timed by the builder itself) if missing."""
    from pdbtool.tables.artifact import artifact_filename

    path = ART / artifact_filename(catalogue + ("" if zero_aware else "-min"))
    if not path.exists():
        subprocess.run([PY, "-m", "pdbtool", "build", catalogue, "--out", str(ART)]
                       + ([] if zero_aware else ["--min-over-blank"]), check=True)
    return path


def geometric_mean(xs) -> float:
    import math

    xs = list(xs)
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def run(section: str, measure, doc: str, options=None, argv=None) -> None:
    """A benchmark program's main: parse its options (``options(parser)`` adds any; the
    docstring ``doc`` is the help), measure, and rewrite its section of BENCHMARKS.md.
    ``measure`` takes the options as keyword arguments."""
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    if options:
        options(p)
    write_section(section, measure(**vars(p.parse_args(argv))))
    benchresults.write()
