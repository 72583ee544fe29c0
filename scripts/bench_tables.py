"""Pattern databases: build time and memory (as recorded in the artifacts) and served
memory of each catalogue, thread scaling of the builder, verify / pack / unpack of 15/7-8,
mean heuristic values of the zero-aware and the min-over-blank 7-8.

Builds 15/7-8 (both kinds), 24/6-6-6-6 and 24/small into artifacts/ when missing
(minutes, GiBs). Rewrites the `tables` section of BENCHMARKS.md. Usage: scripts/bench tables
"""

from __future__ import annotations

import random
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numba

from benchlib import ART, PY, ensure_artifact, instances, machine, record_bar, run, table
from pdbtool import puzzle
from pdbtool.loading import load_heuristic
from pdbtool.tables import artifact
from pdbtool.tables.builder import distance_table
from pdbtool.tables.packing import pack, unpack

SECTION = "tables"


BUILDS = (("15/7-8", True, "10 min, 10 GiB"), ("15/7-8", False, ""), ("24/6-6-6-6", True, "20 min"),
          ("24/small", True, "90 min, 20 GiB; serve <= 8 GiB"))


def builds() -> list[str]:
    rows = []
    for name, zero_aware, bar in BUILDS:
        meta = artifact.read_meta(ensure_artifact(name, zero_aware))
        b = meta.build
        peak = max(b["peak_memory_bytes"], b.get("peak_worker_memory_bytes") or 0)
        rows.append((name + ("" if zero_aware else " (min over blank)"), len(meta.tables),
                     f"{meta.total_entries:,}", f"{meta.file_size / 2**20:,.0f} MiB",
                     f"{b.get('processes', 1)} x {b.get('threads', b['workers'])}",
                     f"{b['seconds'] / 60:.1f} min", f"{peak / 2**30:.2f} GiB", bar))
        if name == "15/7-8" and zero_aware:
            record_bar(SECTION, "build `15/7-8`: <= 10 min, <= 10 GiB",
                       f"{b['seconds'] / 60:.1f} min, {peak / 2**30:.2f} GiB (zero-aware, "
                       f"{meta.total_entries / 1e9:.2f} G entries)", b["seconds"] <= 600 and peak <= 10 * 2**30)
        if name == "24/6-6-6-6":
            record_bar(SECTION, "build `24/6-6-6-6`: <= 20 min", f"{b['seconds'] / 60:.1f} min, "
                       f"{peak / 2**30:.2f} GiB (as recorded in the artifact)", b["seconds"] <= 1200)
    return ["Build figures as recorded by `pdbtool build` in each artifact (wall time; peak RSS of "
            "the largest process). A served artifact is memory-mapped whole: its file size is what "
            "the daemon serves, plus a few MiB of region index.\n",
            table(("catalogue", "tables", "entries", "file (served)", "processes x threads",
                   "build time", "peak memory", "bar"), rows)]


def thread_scaling() -> str:
    """One real table (the 7-tile group of 15/7-8) on 1 and 2 threads."""
    times = {}
    for w in (1, 2):
        numba.set_num_threads(w)
        distance_table((1, 2, 3, 5, 6, 7), 4, progress=False)  # warm
        t0 = time.perf_counter()
        distance_table((1, 2, 3, 4, 5, 6, 7), 4, progress=False)
        times[w] = time.perf_counter() - t0
    record_bar(SECTION, "builder, 2 threads against 1: >= 1.6x",
               f"{times[1] / times[2]:.2f}x (7-tile table {times[1]:.1f} s / {times[2]:.1f} s)",
               times[1] / times[2] >= 1.6)
    return (f"\n**Workers:** the 7-tile table (57.7M entries) in {times[1]:.1f} s with 1 thread, "
            f"{times[2]:.1f} s with 2: **{times[1] / times[2]:.2f}x** (bar 1.6x).\n")


def shipping(path: Path) -> str:
    """`pdbtool verify` as a process, pack, and unpack (which checks every checksum)."""
    t0 = time.perf_counter()
    v = subprocess.run([PY, "-m", "pdbtool", "verify", str(path)], capture_output=True, text=True)
    verify_s = time.perf_counter() - t0
    with tempfile.TemporaryDirectory(dir=ART) as tmp:
        packed = Path(tmp) / "15-7-8.pdbpack"
        st = pack(path, packed)
        t0 = time.perf_counter()
        unpack(packed, Path(tmp) / "15-7-8.h5")
        unpack_s = time.perf_counter() - t0
    raw = st["raw_bytes"]
    return table(("15/7-8", "figure"), [
        ("raw table bytes", f"{raw:,} ({raw / 2**20:.0f} MiB)"),
        ("packed bytes (zstd 10)", f"{st['packed_bytes']:,} ({st['packed_bytes'] / 2**20:.0f} MiB, {raw / st['packed_bytes']:.2f}x)"),
        ("pack", f"{st['seconds']:.1f} s, {raw / st['seconds'] / 2**20:.0f} MiB/s"),
        ("unpack + verify checksums", f"{unpack_s:.1f} s, {raw / unpack_s / 2**20:.0f} MiB/s"),
        ("`pdbtool verify` (whole process)", f"{verify_s:.1f} s, {'passed' if v.returncode == 0 else 'FAILED'}"),
    ])


def mean_values() -> list[str]:
    """Mean heuristic value over Korf's 100 starts and random states."""
    korf = [b for _, _, b in instances("korf100.txt")]
    rng = random.Random(1)
    rand = [puzzle.random_board(4, "blank-first", rng) for _ in range(10000)]
    rows = []
    for zero_aware in (False, True):
        for reflect in (False, True):
            h = load_heuristic(ensure_artifact("15/7-8", zero_aware), reflect=reflect)
            rows.append((("zero-aware " if zero_aware else "min over blank ") + "7-8"
                         + (" + reflection" if reflect else ""),
                         f"{statistics.mean(h.value(b) for b in korf):.2f}",
                         f"{statistics.mean(h.value(b) for b in rand):.2f}",
                         {(False, False): "45.63", (True, True): "46.43 (rebuild here)"}.get(
                             (zero_aware, reflect), "-")))
    return ["\n### Mean heuristic value\n",
            table(("heuristic", "Korf's 100 starts", "10,000 random states", "published (Korf & Felner)"), rows)]


def measure() -> str:
    out = [f"## Pattern databases: build, verify, ship\n\nMachine: {machine()}\n"]
    out += builds()
    out.append(thread_scaling())
    path = ensure_artifact("15/7-8")
    out.append(shipping(path))
    out += mean_values()
    return "\n".join(out)


if __name__ == "__main__":
    run(SECTION, measure, __doc__)
