"""First run: a 3x3 solve with a table on a machine whose kernel cache is empty, as after a
fresh install, beside the code before this wave's first-run work (an older commit, run from
`git archive` with the same interpreter and packages); the second solve; and what each
kernel cost to compile in the solving process (numba's compile events; the new code also
compiles IDA*'s loop in a child process meanwhile, which the wall time includes).

Rewrites the `first_run` section of BENCHMARKS.md. Usage: scripts/bench first_run [--old REV]
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

from benchlib import PY, ROOT, machine, record_bar, run, table

SECTION = "first_run"
BOARD = "8 6 7 2 5 4 3 0 1"
OLD = "df49235"  # the last commit before the first-run work (the compile of a first solve)
BAR = 10.0  # seconds: the first 3x3 solve with a table on a fresh install, 2 cores

PROFILE = r"""
import collections, json, sys, time
from numba.core import event
own, stack = collections.defaultdict(float), []
class Listener(event.Listener):
    def on_start(self, ev):
        stack.append((ev.data["dispatcher"].py_func.__name__, time.perf_counter()))
    def on_end(self, ev):
        name, t0 = stack.pop()
        dt = time.perf_counter() - t0
        own[name] += dt
        if stack:
            own[stack[-1][0]] -= dt
event.register("numba:compile", Listener())
sys.argv = ["pdbtool", *sys.argv[1:]]
main = __import__(MAIN, fromlist=["main"]).main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print("PROFILE " + json.dumps(dict(own)), file=sys.stderr)
"""


def export(rev: str, dest: Path) -> Path:
    """The packages of ``rev`` (pdbtool, pdbd) in ``dest``."""
    archive = subprocess.run(["git", "archive", rev, "pdbtool", "pdbd"], cwd=ROOT, check=True,
                             capture_output=True).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(dest, filter="data")
    return dest


def cli_module(tree: Path) -> str:
    return "pdbtool.cli.main" if (tree / "pdbtool" / "cli" / "main.py").exists() else "pdbtool.cli"


def solve(tree: Path, cache: Path, art: Path, profile: bool = False) -> tuple[float, dict]:
    """Wall seconds of one `pdbtool solve` from ``tree`` with the kernel cache ``cache``,
    and (``profile``) each kernel's own compile seconds in that process."""
    check = f"import pdbtool; assert pdbtool.__file__.startswith({str(tree)!r}), pdbtool.__file__\n"
    code = check + (f"MAIN = {cli_module(tree)!r}\n" + PROFILE if profile else
                    f"import sys; from {cli_module(tree)} import main; sys.exit(main(sys.argv[1:]))")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tree), "NUMBA_CACHE_DIR": str(cache),
           "HOME": str(cache.parent)}
    start = time.perf_counter()
    p = subprocess.run([PY, "-c", code, "solve", "--quiet", "--artifacts", str(art), "--json",
                        BOARD], capture_output=True, text=True, env=env, cwd=cache.parent)
    seconds = time.perf_counter() - start
    assert p.returncode in (0, 1) and json.loads(p.stdout.splitlines()[-1])["length"] == 31, p.stderr
    kernels = {}
    for line in p.stderr.splitlines():
        if line.startswith("PROFILE "):
            kernels = json.loads(line[len("PROFILE "):])
    return seconds, kernels


def measure(old: str, runs: int) -> str:
    with tempfile.TemporaryDirectory(prefix="pdbtool-first-run-") as tmp:
        tmp = Path(tmp)
        trees = {"before": export(old, tmp / "old"), "now": export("HEAD", tmp / "new")}
        art = tmp / "art"
        art.mkdir()
        subprocess.run([PY, "-m", "pdbtool", "build", "8/full", "--out", str(art)], check=True,
                       capture_output=True, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp),
                                                 "NUMBA_CACHE_DIR": str(tmp / "build-cache"),
                                                 "PYTHONPATH": str(trees["now"])})
        firsts = {k: [] for k in trees}
        seconds = {k: [] for k in trees}
        for i in range(runs):  # old and new in turn, each from an empty cache
            for name, tree in trees.items():
                cache = tmp / f"cache-{name}-{i}"
                firsts[name].append(solve(tree, cache, art)[0])
                seconds[name].append(solve(tree, cache, art)[0])
        profiles = {name: solve(tree, tmp / f"profile-{name}", art, profile=True)[1]
                    for name, tree in trees.items()}
    rows = [[name, f"{statistics.median(firsts[name]):.1f} s",
             " / ".join(f"{s:.1f}" for s in firsts[name]),
             f"{statistics.median(seconds[name]):.2f} s"] for name in trees]
    ratio = statistics.median(firsts["before"]) / statistics.median(firsts["now"])
    names = sorted(set(profiles["before"]) | set(profiles["now"]),
                   key=lambda n: -max(profiles["before"].get(n, 0), profiles["now"].get(n, 0)))
    kernel_rows = [[n, f"{profiles['before'].get(n, 0):.2f}", f"{profiles['now'].get(n, 0):.2f}"]
                   for n in names if max(profiles["before"].get(n, 0), profiles["now"].get(n, 0)) >= 0.1]
    first = statistics.median(firsts["now"])
    record_bar(SECTION, f"first 3x3 solve with a table, empty kernel cache: <= {BAR:g} s",
               f"{first:.1f} s (was {statistics.median(firsts['before']):.1f} s at {old}; "
               f"second {statistics.median(seconds['now']):.2f} s)", first <= BAR)
    return "\n".join([
        f"First run ({machine()}; `pdbtool solve {BOARD}` with 8/full, a fresh kernel cache each "
        f"time, {runs} runs each, old and new in turn; the code before is {old}):", "",
        table(["code", "first solve (median)", "each run", "second solve"], rows), "",
        f"First solve {ratio:.1f}x faster. Each kernel's own compile seconds in the solving "
        "process (kernels of at least 0.1 s; the new code compiles ida, dfs_loop and h_update "
        "in a child process at the same time, not listed):", "",
        table(["kernel", "before", "now"], kernel_rows)])


def options(p):
    p.add_argument("--old", default=OLD, help=f"the commit to measure beside (default {OLD})")
    p.add_argument("--runs", type=int, default=3, help="first runs of each (default 3)")


if __name__ == "__main__":
    run(SECTION, measure, __doc__, options, sys.argv[1:])
