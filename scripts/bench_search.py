"""Optimal search with pattern databases: Korf's 100 with 15/7-8 + reflection, zero-aware
and min over the blank side by side, on 1 and 2 threads (and without move-sequence
pruning); the ten longest of Korf's 100 on 1 and 2 threads; the two easiest of Korf &
Felner's 24-puzzle instances with 6-6-6-6 and 24/small on 1 and 2 threads; how soon a
halt (a cancel), a deadline and Ctrl-C stop a search (tests/test_search.py and
tests/test_cli.py test that they stop it, not how soon).

Builds the tables into artifacts/ when missing. Rewrites the `search` section of
BENCHMARKS.md. Usage: scripts/bench search
"""

from __future__ import annotations

import signal
import statistics
import subprocess
import threading
import time

from benchlib import PY, WARM_24, ensure_artifact, instances, korf24, machine, record_bar, run, table
from pdbtool.errors import LimitReached
from pdbtool.heuristics.table_free import table_free
from pdbtool.loading import load_heuristic
from pdbtool.search.control import SearchControl
from pdbtool.search.solver import Solver
from reference import interruptible
from serving import HARD

SECTION = "search"


def korf100_runs(solver, threads, runs=3):
    """Korf's 100 ``runs`` times (after a warm run): the results of the median run by
    total time, and that total."""
    korf = instances("korf100.txt")
    for _, _, b in korf:
        solver.solve(b, "blank-first", threads=threads)  # compile, touch the pages
    results = [[solver.solve(b, "blank-first", threads=threads) for _, _, b in korf]
               for _ in range(runs)]
    totals = [sum(r.seconds for r in res) for res in results]
    return results[totals.index(statistics.median(totals))], statistics.median(totals)


def korf100() -> list[str]:
    korf = instances("korf100.txt")
    tables = {"zero-aware": ensure_artifact("15/7-8"),
              "min over blank": ensure_artifact("15/7-8", zero_aware=False)}
    rows, zero_aware = [], {}
    for name, path in tables.items():
        solver = Solver(load_heuristic(path))
        for threads in (1, 2):
            res, total = korf100_runs(solver, threads)
            ok = sum(r.length == opt for (_, opt, _), r in zip(korf, res))
            if name == "zero-aware":
                zero_aware[threads] = (ok, total, statistics.median(r.seconds for r in res))
            nodes = [r.nodes_generated for r in res]
            rows.append((name, threads, f"{ok}/100", f"{statistics.mean(nodes):,.0f}",
                         f"{statistics.mean(r.nodes_expanded for r in res):,.0f}",
                         f"{statistics.mean(r.initial_h for r in res):.2f}",
                         f"**{total:.3f}**", f"{statistics.median(r.seconds for r in res) * 1e3:.2f}",
                         f"{sum(nodes) / total / 1e6:.1f}"))
        if name == "zero-aware":
            plain, plain_total = korf100_runs(Solver(solver.heuristic, prune=False), 1, runs=1)
            rows.append((name + ", parent pruning only", 1, "", f"{statistics.mean(r.nodes_generated for r in plain):,.0f}",
                         "", "", f"{plain_total:.3f}", "", ""))
    ok, total, median = zero_aware[1]
    record_bar(SECTION, "Korf's 100, 7-8 + reflection: all optimal, <= 0.5 s, median <= 3 ms",
               f"{ok}/100, {total:.3f} s, median {median * 1e3:.2f} ms (1 thread); "
               f"{zero_aware[2][1]:.3f} s on 2", ok == 100 and total <= 0.5 and median <= 0.003)
    return ["Korf's 100 (blank-first), 15/7-8 + reflection; medians of 3 runs after a warm one:\n",
            table(("tables", "threads", "optimal", "mean generated", "mean expanded", "mean h0",
                   "total s", "median ms", "M nodes/s"), rows),
            "\nPublished (Korf & Felner, 1,000 random instances, generated nodes): 7-8 + reflection "
            "36,710; with two more dual lookups 18,601. An independent zero-aware rebuild here: about "
            "20,900 with parent pruning only, mean h 46.43. Bars: total <= 0.5 s, median <= 3 ms "
            "(C++ peer: 11.4 s, 25 ms).\n"]


def hardest15() -> list[str]:
    """The ten longest of Korf's 100, zero-aware 7-8, 1 thread against 2 (medians of 3)."""
    solver = Solver(load_heuristic(ensure_artifact("15/7-8")))
    rows, ups = [], []
    for k, opt, b in sorted(instances("korf100.txt"), key=lambda r: -r[1])[:10]:
        t = {}
        for threads in (1, 2):
            solver.solve(b, "blank-first", threads=threads)
            t[threads] = statistics.median(solver.solve(b, "blank-first", threads=threads).seconds
                                           for _ in range(3))
        rows.append((f"#{k}", opt, f"{t[1] * 1e3:.1f}", f"{t[2] * 1e3:.1f}", f"{t[1] / t[2]:.2f}x"))
        ups.append(t[1] / t[2])
    record_bar(SECTION, "Korf's 100, ten longest: 2 threads never lose to 1, near 1.8x",
               f"{min(ups):.2f}x-{max(ups):.2f}x", min(ups) >= 1.0)
    return ["\n### The ten longest of Korf's 100: 1 thread against 2 (zero-aware 7-8, medians of 3)\n",
            table(("instance", "optimal", "1 thread ms", "2 threads ms", "speed-up"), rows),
            "\nBar: two threads never lose to one, and approach 1.8x where a search takes more than a "
            "few milliseconds.\n"]


def parallel_24() -> list[str]:
    """The easiest of Korf & Felner's 50, serial and on 2 threads (medians of 3 runs)."""
    k24, published = korf24()
    rows, ups, ones_s = [], {}, {}
    for catalogue, k in (("24/6-6-6-6", 40), ("24/6-6-6-6", 25), ("24/small", 40), ("24/small", 25)):
        s24 = Solver(load_heuristic(ensure_artifact(catalogue)))
        s24.solve(WARM_24, "blank-first")  # compile both paths before timing them
        s24.solve(WARM_24, "blank-first", threads=2)
        opt, b = k24[k]
        ones = [s24.solve(b, "blank-first") for _ in range(3)]
        twos = [s24.solve(b, "blank-first", threads=2) for _ in range(3)]
        t1 = statistics.median(r.seconds for r in ones)
        t2 = statistics.median(r.seconds for r in twos)
        r1 = ones[0]
        ups.setdefault(catalogue, []).append(t1 / t2)
        ones_s.setdefault(catalogue, []).append(t1)
        rows.append((catalogue, f"#{k}", opt, r1.length, "/".join(str(r.length) for r in twos), f"{r1.nodes_generated:,}",
                     f"{published[k]:,}", f"{t1:.2f}", f"{t2:.2f}", f"**{t1 / t2:.2f}x**",
                     f"{r1.nodes_generated / t1 / 1e6:.1f}"))
    speed_ups = [x for v in ups.values() for x in v]
    record_bar(SECTION, "24-puzzle #40 / #25, 2 threads against 1: >= 1.6x",
               "; ".join(f"{c} {a:.2f}x / {b:.2f}x" for c, (a, b) in ups.items()),
               True if min(speed_ups) >= 1.6 else "partly" if max(speed_ups) >= 1.6 else False)
    record_bar(SECTION, "24-puzzle #40 / #25, 1 thread: the Rust peer's 4.9 s / 18.4 s",
               "; ".join(f"{c} {a:.2f} s / {b:.2f} s" for c, (a, b) in ones_s.items()),
               all(a <= 4.9 and b <= 18.4 for a, b in ones_s.values()))
    return ["\n### 24-puzzle, zero-aware tables + reflection: 1 thread against 2 (medians of 3 runs each)\n",
            table(("tables", "instance", "optimal", "length 1T", "length 2T", "nodes 1T", "K&F nodes",
                   "1T s", "2T s", "speed-up", "M nodes/s 1T"), rows),
            "\nRust peer on this machine (one core): #40 4.9 s, #25 18.4 s. Bar: 2 threads >= 1.6x.\n"]


STOP_AFTER = 0.5  # seconds of search before the halt, the deadline or Ctrl-C
STOP_BAR, CTRL_C_BAR = 0.1, 0.5  # seconds from the halt (deadline) to the error; to the exit


def stop_latency(runs: int = 5) -> list[str]:
    """serving.HARD (an hour or more with Manhattan distance) halted after STOP_AFTER
    seconds, or given that deadline, on 1 and 2 threads: seconds from the halt to the
    search's error (max of ``runs``); then `pdbtool solve` sent SIGINT while searching:
    seconds to its exit."""
    solver = Solver(table_free("manhattan", 4))
    solver.compile_kernels()
    rows, worst = [], 0.0
    for threads in (1, 2):
        for how in ("halt", "deadline"):
            lags = []
            for _ in range(runs):
                control = SearchControl(timeout=STOP_AFTER if how == "deadline" else None)
                halted = []
                if how == "halt":
                    threading.Timer(STOP_AFTER, lambda c=control: (halted.append(
                        time.perf_counter()), c.halt())).start()
                t0 = time.perf_counter()
                try:
                    solver.solve(HARD, "blank-first", threads=threads, control=control)
                except LimitReached:
                    pass
                end = time.perf_counter()
                lags.append(end - (halted[0] if halted else t0 + STOP_AFTER))
            worst = max(worst, max(lags))
            rows.append((f"{how}, {threads} thread{'s' * (threads > 1)}",
                         f"{statistics.median(lags) * 1e3:.1f} ms", f"{max(lags) * 1e3:.1f} ms"))
    exits = []
    for _ in range(3):
        p = subprocess.Popen([PY, "-m", "pdbtool", "solve", "--heuristic", "manhattan",
                              "--goal", "blank-first", " ".join(map(str, HARD))],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             preexec_fn=interruptible)  # (a bench run in the background
        time.sleep(3 + STOP_AFTER)  # ignores SIGINT, and so would the command)  # started (about 1 s, kernels cached) and searching
        t = time.perf_counter()
        p.send_signal(signal.SIGINT)
        code = p.wait(60)
        exits.append(time.perf_counter() - t)
        assert code == 130, f"pdbtool solve ended {code} on SIGINT, not 130"
    rows.append(("Ctrl-C (SIGINT) to the exit of `pdbtool solve` (130)",
                 f"{statistics.median(exits) * 1e3:.0f} ms", f"{max(exits) * 1e3:.0f} ms"))
    record_bar(SECTION, f"a halt or a deadline stops IDA*: within {STOP_BAR * 1e3:.0f} ms; "
               f"Ctrl-C ends `pdbtool solve` within {CTRL_C_BAR * 1e3:.0f} ms",
               f"halt/deadline max {worst * 1e3:.1f} ms (1 and 2 threads, {runs} runs each); "
               f"Ctrl-C max {max(exits) * 1e3:.0f} ms", worst <= STOP_BAR and max(exits) <= CTRL_C_BAR)
    return ["\n### How soon a search stops (serving.HARD, Manhattan distance, halted after "
            f"{STOP_AFTER:g} s)\n", table(("how", "median", "max"), rows),
            f"\nBars: {STOP_BAR * 1e3:.0f} ms from a halt or a deadline to the search's error, "
            f"{CTRL_C_BAR * 1e3:.0f} ms from Ctrl-C to the exit.\n"]


def measure() -> str:
    out = [f"## Optimal search with pattern databases\n\nMachine: {machine()}\n"]
    out += korf100() + hardest15() + parallel_24() + stop_latency()
    return "\n".join(out)


if __name__ == "__main__":
    run(SECTION, measure, __doc__)
