"""Verification of a built artifact: the checks `pdbtool verify` runs.

Each check returns a ``Check``; a failed one names the table and what is wrong. The sampled
checks draw a fresh seed each run unless one is given (the report says which, so a run can
be repeated): a table forged around a fixed seed would pass every run of it. ``full`` makes
the ranking check exhaustive and samples more boards; ``exhaustive`` checks consistency and
admissibility on every entry and every move (kernels.audit) instead of sampling. The value
histogram of the metadata is recounted from the entries on every run.
"""

from __future__ import annotations

import logging
import random
import time
from dataclasses import dataclass
from math import factorial
from typing import NamedTuple

import numpy as np

from pdbtool import geometry, puzzle
from pdbtool.errors import PdbError, WrongForm
from pdbtool.heuristics.pattern_db import check_layout, heuristic_from
from pdbtool.heuristics.table_free import Heuristic, table_free
from pdbtool.geometry import manhattan_table, neighbour_arrays
from pdbtool.kernels import audit as audit_kernel
from pdbtool.kernels import heuristic as hk
from pdbtool.kernels.ranking import (binomials, entry_of, lex_unrank, lex_weights,
                                     order_table, order_weights, rank_of, reachable_entries,
                                     regions, round_trip_errors, table_size, unrank_of)
from pdbtool.search.solver import Solver
from pdbtool.tables import artifact, trust

log = logging.getLogger("pdbtool")


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    seconds: float = 0.0

    def to_dict(self):
        return {"check": self.name, "ok": self.ok, "detail": self.detail, "seconds": round(self.seconds, 3)}


def timed(name, fn, *args):
    t0 = time.perf_counter()
    try:
        ok, detail = fn(*args)
    except PdbError as e:
        ok, detail = False, str(e)
    return Check(name, ok, detail, time.perf_counter() - t0)


def check_checksums(meta, data):
    bad = [name for name, ok in artifact.table_checksums_ok(meta, data) if not ok]
    if bad:
        return False, f"sha256 mismatch in table(s) {', '.join(bad)}"
    return True, f"{len(meta.tables)} table(s) match their sha256"


def check_ranking(meta, full: bool, samples: int):
    """rank(unrank(i)) == i over the placements, in both rankings, and the region index of
    sampled maps numbers exactly the blank's connected regions (by lowest cell): the
    zero-aware index round trip."""
    done = maps_done = 0
    whole = True  # every rank and map checked (full, or tables smaller than the samples)
    shape = meta.shape
    for t in meta.tables:
        n, m = t.cells, len(t.tiles)
        size = table_size(n, m)
        step = 1 if full else max(1, size // samples)
        whole = whole and step == 1
        bad = round_trip_errors(n, m, binomials(n, m), order_weights(m), lex_weights(n, m),
                                0, size, step)
        done += len(range(0, size, step))
        if bad:
            return False, f"table {t.name}: rank(unrank(i)) != i for {bad} sampled ranks"
        reg = regions(shape, m, meta.zero_aware)
        maps = reg.count.size
        map_step = 1 if full else max(1, maps // (samples // 100))
        whole = whole and map_step == 1
        for r in range(0, maps, map_step):
            occupied = set(unrank_of(r * factorial(m), n, m))
            free = [c for c in range(n) if c not in occupied]
            expected = {c: 0 for c in free}  # min over blank: one region
            if meta.zero_aware:  # regions numbered by their lowest cell
                components = []
                for c in free:
                    if not any(c in comp for comp in components):
                        components.append(geometry.blank_region(shape, occupied, c))
                expected = {c: k for k, comp in enumerate(components) for c in comp}
            got = {c: int(reg.index[r, c]) for c in free}
            if got != expected or int(reg.count[r]) != len(set(expected.values())):
                return False, f"table {t.name}: map {r}: region index {got}, expected {expected}"
            maps_done += 1
    return True, (f"rank(unrank(i)) == i for {done:,} ranks" + (" (all)" if whole else " (sampled)")
                  + f"; region index right on {maps_done:,} maps")


def nibbles(packed: np.ndarray) -> np.ndarray:
    """The 4-bit entries of a table's bytes (low nibble first)."""
    out = np.empty(packed.size * 2, np.uint8)
    out[0::2] = packed & 15
    out[1::2] = packed >> 4
    return out


def check_completeness(meta, data):
    """Unreachable entries (15) are as many as recorded and as expected: none, or half
    when a group holds every tile (parity), and then each where its placement's parity
    puts it (a reachable entry set to 15 and an unreachable one given a value, checksums,
    histogram, version and seal made again, kept the count: kernels.audit.misplaced_unset);
    the goal's entry is 0."""
    shape = meta.shape
    for t in meta.tables:
        m = len(t.tiles)
        unset = 0
        for start in range(0, t.bytes, 1 << 24):
            chunk = np.asarray(artifact.table_view(data, t)[start:start + (1 << 24)])
            unset += int(np.count_nonzero((chunk & 15) == artifact.NIBBLE_UNSET))
            unset += int(np.count_nonzero((chunk >> 4) == artifact.NIBBLE_UNSET))
        unset -= t.bytes * 2 - t.entries  # the pad nibble of an odd count is 0, not 15
        expected = t.entries - reachable_entries(shape, m, meta.zero_aware)
        if unset != expected or unset != t.unset:
            return False, (f"table {t.name}: {unset:,} unreachable entries, expected {expected:,} "
                           f"(recorded {t.unset:,})")
        e = entry_of(t.tiles, 0, shape, meta.zero_aware)
        goal = int(nibbles(np.asarray(artifact.table_view(data, t)[e // 2:e // 2 + 1]))[e % 2])
        if goal != 0:
            return False, f"table {t.name}: goal entry is {goal}, expected 0"
        if m == t.cells - 1 and m >= 2:  # every tile: the unreachable ones are placed too
            bad, first = misplaced_unset(t, data, shape)
            if bad:
                return False, (f"table {t.name}: {bad:,} entries where the placement's parity "
                               f"says otherwise (the first: entry {first:,} is 15 on a "
                               "reachable placement, or a value on an unreachable one)")
    return True, "no unreachable entry (beyond unreachable parity, each where its parity puts it), goal entries 0"


def misplaced_unset(t, data, shape) -> tuple[int, int]:
    """kernels.audit.misplaced_unset over a table of every tile, AUDIT_SLICE placements a
    call (one call took 18 s on 12/3x4, deaf to Ctrl-C): how many entries are misplaced,
    and the first (-1 if none)."""
    m = len(t.tiles)
    packed = np.asarray(artifact.table_view(data, t))
    tiles, lw = np.array(t.tiles, np.int64), lex_weights(t.cells, m - 1)
    prefixes = t.cells * int(lw[0])  # n! / 2: the placements of the first m - 1 tiles
    bad, first = 0, -1
    for start in range(0, prefixes, AUDIT_SLICE):
        firsts = np.full(audit_kernel.CHUNKS, -1, np.int64)
        bad += audit_kernel.misplaced_unset(packed, t.cells, shape.cols, tiles, lw, firsts,
                                            start, min(prefixes, start + AUDIT_SLICE))
        if first < 0 and (firsts >= 0).any():
            first = int(firsts[firsts >= 0][0])
    return bad, first


class Audit(NamedTuple):
    """What kernels.audit found in one table."""

    histogram: tuple[int, ...]  # count of each distance, as the metadata records it
    failures: int  # entries that fail a check of moves (0 without them)
    first: tuple[int, int, int] | None  # (entry, kind, entry across the move or -1)


AUDIT_SLICE = 1 << 21  # placements a kernel call checks: the progress step of long runs


def audit_table(meta, data, t, moves: bool, progress=None) -> Audit:
    """Every entry of table ``t``: its value counted and, with ``moves``, checked against
    every move out of it (kernels.audit). ``progress(done, total)`` after each slice."""
    shape, n, m = meta.shape, t.cells, len(t.tiles)
    reg = regions(shape, m, meta.zero_aware)
    md_tab = np.ascontiguousarray(manhattan_table(shape)[list(t.tiles)])
    width = int(md_tab.max(axis=1).sum()) + 2 * (artifact.NIBBLE_UNSET - 1) + 1
    hist = np.zeros((audit_kernel.CHUNKS, width), np.int64)
    packed = np.asarray(artifact.table_view(data, t))
    ranks = binomials(n, m), order_weights(m), lex_weights(n, m)
    if not moves:  # an entry past the width is left out: the histogram then differs
        audit_kernel.histogram(packed, n, ranks[0], lex_weights(n, m - 1), md_tab, reg.count,
                               reg.secondary, order_table(m), hist)
        return Audit(counted(hist), 0, None)
    whole = (np.ones(reg.count.size, np.bool_) if meta.zero_aware
             else regions(shape, m, True).count == 1)
    first_bad = np.zeros((audit_kernel.CHUNKS, 3), np.int64)
    goal = entry_of(t.tiles, 0, shape, meta.zero_aware)
    failures, first = 0, None
    placements = table_size(n, m)
    for lo in range(0, placements, AUDIT_SLICE):
        hi = min(placements, lo + AUDIT_SLICE)
        first_bad[:] = 0
        failures += audit_kernel.audit(packed, lo, hi, goal, n, *ranks, order_table(m),
                                       md_tab, reg.index, reg.count, reg.secondary, whole,
                                       *neighbour_arrays(shape), hist, first_bad)
        if first is None and first_bad[:, 1].any():
            first = tuple(int(x) for x in first_bad[np.flatnonzero(first_bad[:, 1])[0]])
        if progress is not None:
            progress(hi, placements)
    return Audit(counted(hist), failures, first)


def counted(hist: np.ndarray) -> tuple[int, ...]:
    """The histogram the kernels counted (a row per chunk), as the metadata records it:
    count of each distance 0..max."""
    counts = hist.sum(axis=0)
    top = int(np.flatnonzero(counts)[-1]) + 1 if counts.any() else 0
    return tuple(int(c) for c in counts[:top])


def describe_entry(meta, t, e: int) -> str:
    """Entry ``e`` of table ``t`` in words: the tiles' cells and the blank's region."""
    shape, n, m = meta.shape, t.cells, len(t.tiles)
    reg = regions(shape, m, meta.zero_aware)
    if e < table_size(n, m):  # region 0, in lexicographic order
        pos = np.empty(m, np.int64)
        lex_unrank(e, n, m, lex_weights(n, m), pos)
        cells, k = pos.tolist(), 0
    else:
        r = int(np.searchsorted(reg.secondary, e, side="right")) - 1
        k, order = divmod(e - int(reg.secondary[r]), factorial(m))
        k += 1
        cells = unrank_of(r * factorial(m) + order, n, m)
    map_r = rank_of(cells, n) // factorial(m)
    region = [c for c in range(n) if int(reg.index[map_r, c]) == k]
    where = ", ".join(f"{tile} at {cell}" for tile, cell in zip(t.tiles, cells))
    return f"entry {e:,} (tiles {where}; blank in cells {region})"


def check_histogram(meta, data):
    """The metadata's value histogram (read by `info` and `predict`, not covered by the
    checksums) is the one the entries give."""
    for t in meta.tables:
        got = audit_table(meta, data, t, moves=False).histogram
        if got != tuple(t.histogram):
            return False, histogram_mismatch(t, got)
    return True, f"value histograms of {len(meta.tables)} table(s) match their entries"


def histogram_mismatch(t, got) -> str:
    wrong = [v for v in range(max(len(got), len(t.histogram)))
             if (got[v] if v < len(got) else 0) != (t.histogram[v] if v < len(t.histogram) else 0)]
    v = wrong[0]
    recorded = t.histogram[v] if v < len(t.histogram) else 0
    counted = got[v] if v < len(got) else 0
    return (f"table {t.name}: the metadata's histogram says {recorded:,} entries at distance "
            f"{v}, the entries hold {counted:,} ({len(wrong)} distance(s) differ): the "
            "metadata was edited")


AUDIT_FAILURES = {
    audit_kernel.JUMP: "consistency",
    audit_kernel.TO_UNREACHED: "consistency",
    audit_kernel.NO_DESCENT: "exactness",
    audit_kernel.FALSE_GOAL: "exactness",
    audit_kernel.TOO_LARGE: "exactness",
}


def audit_failure(meta, t, first) -> str:
    e, kind, other = first
    here = describe_entry(meta, t, e)
    there = describe_entry(meta, t, other) if other >= 0 else ""
    return {
        audit_kernel.JUMP: f"table {t.name}: {here} and {there}, one move apart, differ by "
                           "more than 1",
        audit_kernel.TO_UNREACHED: f"table {t.name}: {here} is reachable but a move leads to "
                                   f"{there}, marked unreachable",
        audit_kernel.NO_DESCENT: f"table {t.name}: {here} has no move to an entry one less: "
                                 "not its true distance (a true distance above 0 has a move "
                                 "one closer), or its neighbours' are wrong",
        audit_kernel.FALSE_GOAL: f"table {t.name}: {here} is 0 away from the goal",
        audit_kernel.TOO_LARGE: f"table {t.name}: {here} is out of range",
    }[kind]


def exhaustive_checks(meta, data, progress=None) -> list[Check]:
    """histogram, consistency and exactness on every entry and every move, in one pass per
    table (kernels.audit): the checks of ``verify(exhaustive=True)``."""
    t0 = time.perf_counter()
    entries = 0
    for t in meta.tables:
        label = f"table {t.name}"
        found = audit_table(meta, data, t, moves=True,
                            progress=progress and (lambda done, total, label=label:
                                                   progress(label, done, total)))
        entries += t.entries - t.unset
        if found.histogram != tuple(t.histogram):
            return [Check("histogram", False, histogram_mismatch(t, found.histogram),
                          time.perf_counter() - t0)]
        if found.failures:
            name = AUDIT_FAILURES[found.first[1]]
            detail = (f"{audit_failure(meta, t, found.first)} "
                      f"({found.failures:,} failing entries in the table)")
            return [Check("histogram", True, f"{t.name} and the tables before match their "
                                             "entries"),
                    Check(name, False, detail, time.perf_counter() - t0)]
    seconds = time.perf_counter() - t0
    kind = ("every move" if meta.zero_aware
            else "every move between placements that leave the blank one region (min over blank)")
    return [Check("histogram", True, f"value histograms match all {entries:,} reachable entries"),
            Check("consistency", True, f"|h(a) - h(b)| <= 1 across {kind}, on every entry of "
                                       f"{len(meta.tables)} table(s); no move leaves the "
                                       "reachable entries", seconds),
            Check("exactness", True, "every entry above 0 has a move to one 1 closer, 0 only "
                                     "at the goal" + (": entries are the exact abstract "
                                     "distances, so admissible" if meta.zero_aware else
                                     " (min over blank: admissibility is sampled)"))]


def check_consistency(h: Heuristic, samples: int, rng: random.Random, zero_aware: bool):
    """Across one move, the value of the moved tile's group changes by at most 1.

    A zero-aware entry is the exact distance of its abstract state (placement and the
    blank's region), which one move changes by at most one step, so this holds on every
    move. A min-over-blank entry is exact only where the group's tiles leave the blank one
    region, before and after the move; elsewhere the stored minimum may jump further, so
    there only that rate is reported, not failed. How often h as a whole changes by more
    than 1 is reported too (the max over sums need not be consistent).
    """
    shape = h.shape
    H = h.H
    nsums = H.tile_lk.shape[1]
    md = H.tile_tab
    nbrs = geometry.neighbours(shape)
    checked = jumps = moves = 0
    for _ in range(samples):
        board = puzzle.random_board(shape, "blank-first", rng)
        before = h.state(board)
        b = board.index(0)
        for c in nbrs[b]:
            cells = list(board)
            t = cells[c]
            cells[b], cells[c] = t, 0
            after = h.state(cells)
            moves += 1
            jumps += abs(int(after[hk.ROW_H]) - int(before[hk.ROW_H])) > 1
            for j in range(nsums):
                l = H.tile_lk[t, j]
                group = H.lk_tiles[l, :H.lk_m[l]].tolist()
                if not zero_aware:
                    free = shape.cells - len(group)
                    occupied = [{x for x, u in enumerate(bd) if u in group} for bd in (board, cells)]
                    if not all(len(geometry.blank_region(shape, occ, bd.index(0))) == free
                               for occ, bd in zip(occupied, (board, cells))):
                        continue
                checked += 1
                col = hk.PDB_SUMS + nsums + l
                value = [sum(int(md[u, bd.index(u)]) for u in group) + 2 * int(row[col])
                         for bd, row in ((board, before), (cells, after))]
                if abs(value[1] - value[0]) > 1:
                    return False, (f"group {sorted(group)} value changes by {abs(value[1] - value[0])} "
                                   f"across one move on board {list(board)} (tile {t})")
    kind = "zero-aware" if zero_aware else "min-over-blank, where the blank's region is whole"
    return True, (f"group values change by <= 1 on {checked:,} group moves ({kind}); "
                  f"h changes by > 1 on {jumps}/{moves} sampled moves")


def check_admissibility(h: Heuristic, samples: int, rng: random.Random, walk: int):
    """h <= true distance at every state of optimal paths found with linear conflict
    (an independent heuristic), from random walks of ``walk`` moves."""
    oracle = Solver(table_free("linear-conflict", h.shape))
    states = 0
    for _ in range(samples):
        board = puzzle.random_walk(h.shape, walk, "blank-first", rng)
        result = oracle.solve(board, "blank-first")
        cells = list(board)
        for i, letter in enumerate(result.blank_moves + " "):
            remaining = result.length - i
            hv = h.value(cells)
            states += 1
            if hv > remaining:
                return False, f"h = {hv} > true distance {remaining} on board {cells}"
            if letter != " ":
                cells = list(puzzle.apply_blank_moves(cells, letter, h.shape))
    return True, f"h <= true distance on {states:,} states of {samples} optimal paths"


EXHAUSTIVE_UP_TO = 32_000_000  # entries: a table this small is checked entry by entry unless
# said otherwise (15/6-6-3's 23.6 M in about 2.5 s, 8/full's faster than its samples), where
# samples can miss a few entries edited with the checksums and version recomputed (the
# table review: 50 raised entries of 8/full passed 7 of 10 seeds, and answered 24 for 22)


class Report(NamedTuple):
    meta: artifact.ArtifactMeta | None  # None when the metadata could not be read
    checks: list[Check]
    seed: int | None = None  # of the sampled checks
    note: str | None = None  # passed, but not stamped: why (trust.StampNotWritten)
    exhaustive: bool = False  # consistency and exactness checked on every entry

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    @property
    def failed(self) -> Check | None:
        return next((c for c in self.checks if not c.ok), None)


def verify(path, *, full: bool = False, seed: int | None = None, stamp: bool = True,
           pin: trust.Pinned | None = None, exhaustive: bool | None = None,
           progress=None) -> Report:
    """Run every check (stopping after a failure of one the others depend on); with
    ``exhaustive``, consistency and exactness on every entry instead of sampled
    consistency (``progress(label, done, total)`` as the tables go by; None: for tables
    of at most EXHAUSTIVE_UP_TO entries); with
    ``stamp``, a file that passes them all is stamped as verified (trust.record), and one
    that fails any loses a stamp it had (trust.forget; not if the path names another file
    by now); a
    packed file raises WrongForm (no check failed: it is to be unpacked, which checks it).
    The file is held open (``pin``, or one of its own) while the checks read it: a file
    changed meanwhile fails the check "unchanged" and is never stamped, and its mapping
    is dropped before a truncation could fault the checks (trust.Pinned's lease); a file
    renamed over the path meanwhile is not the one checked, and is not stamped either; a
    file opened for writing while the checks read it (they read zero pages meanwhile) and
    found unchanged after, as after a ``touch``, is checked again, once."""
    if seed is None:
        seed = random.SystemRandom().randrange(1 << 32)
    own = pin is None
    if own:
        try:
            pin = trust.Pinned(path)
        except PdbError as e:
            return Report(None, [Check("metadata", False, str(e))], seed)
        except OSError as e:  # as the loaders say it (files.read_problem)
            return Report(None, [Check("metadata", False, f"{path}: cannot be read: "
                                       f"{e.strerror or e} (check its mode and owner, and "
                                       "its directory's)")], seed)
    try:
        for attempt in (1, 2):
            if pin.broken:  # opened for writing before the checks began (as its metadata
                pin.settle()  # was read): the file found unchanged, or refused, first
            breaks = pin.breaks
            meta, checks, exhaustive = _run_checks(path, full, seed, pin.protect, exhaustive,
                                                   progress)
            if pin.breaks == breaks or attempt == 2 or not pin.settle():
                break
            # opened for writing while the checks read it (they read zero pages meanwhile)
            # and found unchanged since, as after a touch: checked again, over the file
            log.info("%s was opened for writing during the checks and is unchanged: checking "
                     "it again", path)
        try:
            pin.check()
        except trust.TableChanged as e:
            checks.append(Check("unchanged", False, str(e)))
        report = Report(meta, checks, seed, exhaustive=exhaustive)
        if not report.ok:  # a stamp from before would have loaders skip what just failed
            if stamp and not pin.replaced():  # (never a newer file's, renamed over the path)
                return report._replace(note=trust.forget(path))
            return report
        if stamp:
            try:  # only the file the checks read (the path may name another by now)
                trust.record(report.meta, checked=pin.identity)
            except trust.TableChanged as e:
                return report._replace(checks=checks + [Check("unchanged", False, str(e))])
            except trust.StampNotWritten as e:
                return report._replace(note=str(e))
        return report
    finally:
        if own:
            pin.close()


def _run_checks(path, full: bool, seed: int, protect, exhaustive: bool | None = None,
                progress=None) -> tuple[artifact.ArtifactMeta | None, list[Check], bool]:
    """The checks, and whether they were exhaustive (decided by the size when None)."""
    try:
        meta = artifact.read_meta(path)
        data = artifact.map_tables(meta)
        protect(data, meta)
        check_layout(meta)
    except WrongForm:  # a pack: no check of a table failed, the wrong command was run
        raise
    except PdbError as e:
        return None, [Check("metadata", False, str(e))], bool(exhaustive)
    if exhaustive is None:
        exhaustive = meta.total_entries <= EXHAUSTIVE_UP_TO
    return meta, _checks(meta, data, full, seed, exhaustive, progress), exhaustive


def _checks(meta, data, full: bool, seed: int, exhaustive: bool, progress) -> list[Check]:
    checks = [Check("metadata", True, f"{meta.partition}, format {meta.format_version}, version {meta.version}")]
    rng = random.Random(seed)
    for name, fn, args in (
        ("checksums", check_checksums, (meta, data)),
        ("ranking", check_ranking, (meta, full, 200_000)),
        ("completeness", check_completeness, (meta, data)),
    ):
        checks.append(timed(name, fn, *args))
        if not checks[-1].ok:
            return checks
    if exhaustive:
        checks += exhaustive_checks(meta, data, progress)
        if not checks[-1].ok:
            return checks
    else:
        checks.append(timed("histogram", check_histogram, meta, data))
        if not checks[-1].ok:
            return checks
    h = heuristic_from(meta, data, reflect=True)
    walk = {9: 40, 16: 40, 25: 30}.get(meta.shape.cells, 30 if meta.shape.cells < 25 else 20)
    if not exhaustive:
        checks.append(timed("consistency", check_consistency, h, 20000 if full else 2000, rng,
                            meta.zero_aware))
    checks.append(timed("admissibility", check_admissibility, h, 40 if full else 8, rng, walk))
    return checks
