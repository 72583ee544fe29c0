"""Verification of a built artifact: the checks `pdbtool verify` runs.

Each check returns a ``Check``; a failed one names the table and what is wrong. Sampled
checks are seeded, so a run is repeatable; ``full`` makes the ranking check exhaustive and
samples more boards.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from . import artifact, geometry, heuristic_kernels as hk, puzzle, trust
from .errors import PdbError
from .heuristics import Heuristic, table_free
from .pdb_heuristic import check_layout, heuristic_from
from .ranking import UNSET, rank_of, reachable_placements, round_trip_errors, table_size
from .search import Solver


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
    done = 0
    for t in meta.tables:
        size = table_size(t.cells, len(t.tiles))
        if size != t.entries:
            return False, f"table {t.name}: {t.entries} entries, but {size} placements of {len(t.tiles)} tiles on {t.cells} cells"
        step = 1 if full else max(1, size // samples)
        bad = round_trip_errors(t.cells, len(t.tiles), 0, size, step)
        done += len(range(0, size, step))
        if bad:
            return False, f"table {t.name}: rank(unrank(i)) != i for {bad} sampled ranks"
    return True, f"rank(unrank(i)) == i for {done:,} ranks" + (" (all)" if full else " (sampled)")


def check_completeness(meta, data):
    for t in meta.tables:
        table = artifact.table_view(data, t)
        unset = int(np.count_nonzero(table == UNSET))
        expected = t.entries - reachable_placements(t.cells, len(t.tiles))
        if unset != expected:
            return False, f"table {t.name}: {unset:,} unset entries, expected {expected:,}"
        goal = table[rank_of(list(t.tiles), t.cells)]
        if goal != 0:
            return False, f"table {t.name}: goal entry is {goal}, expected 0"
    return True, "no unset entry (beyond unreachable parity), goal entries 0"


def check_consistency(h: Heuristic, samples: int, rng: random.Random):
    """Across one move, the moved tile's group value changes by at most 1 wherever the
    group's tiles leave the blank one region before and after the move.

    That is where a min-over-blank table equals the exact abstract distance, which changes
    by at most 1 per move. Where the tiles split the free cells the stored minimum may
    jump further (the blank's region is not part of the index), so h as a whole is not
    consistent; how often that happens is reported, not failed.
    """
    side = h.side
    tiles_of, m_of, tile_lk = h.H.lk_tiles, h.H.lk_m, h.H.tile_lk
    nbrs = geometry.neighbours(side)
    checked = jumps = moves = 0
    for _ in range(samples):
        board = puzzle.random_board(side, "blank-first", rng)
        before = h.state(board)
        b = board.index(0)
        for c in nbrs[b]:
            cells = list(board)
            t = cells[c]
            cells[b], cells[c] = t, 0
            after = h.state(cells)
            moves += 1
            jumps += abs(int(after[hk.ROW_H]) - int(before[hk.ROW_H])) > 1
            l = tile_lk[t, 0]
            group = set(tiles_of[l, :m_of[l]].tolist())
            free = side * side - len(group)
            whole = all(len(geometry.blank_region(side, {x for x, u in enumerate(bd) if u in group}, bd.index(0))) == free
                        for bd in (board, cells))
            if whole:
                checked += 1
                d = abs(int(after[hk.PDB_VALUES + l]) - int(before[hk.PDB_VALUES + l]))
                if d > 1:
                    return False, (f"group {sorted(group)} value changes by {d} across one move on board "
                                   f"{list(board)} (tile {t}) with the blank's region whole")
    return True, (f"group values change by <= 1 on {checked:,} moves with a whole blank region; "
                  f"h changes by > 1 on {jumps}/{moves} sampled moves (min-over-blank tables)")


def check_admissibility(h: Heuristic, samples: int, rng: random.Random, walk: int):
    """h <= true distance at every state of optimal paths found with linear conflict
    (an independent heuristic), from random walks of ``walk`` moves."""
    oracle = Solver(table_free("linear-conflict", h.side))
    states = 0
    for _ in range(samples):
        board = puzzle.random_walk(h.side, walk, "blank-first", rng)
        result = oracle.solve(board, "blank-first")
        cells = list(board)
        for i, letter in enumerate(result.blank_moves + " "):
            remaining = result.length - i
            hv = h.value(cells)
            states += 1
            if hv > remaining:
                return False, f"h = {hv} > true distance {remaining} on board {cells}"
            if letter != " ":
                cells = list(puzzle.apply_blank_moves(cells, letter))
    return True, f"h <= true distance on {states:,} states of {samples} optimal paths"


class Report(NamedTuple):
    meta: artifact.ArtifactMeta | None  # None when the metadata could not be read
    checks: list[Check]

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    @property
    def failed(self) -> Check | None:
        return next((c for c in self.checks if not c.ok), None)


def verify(path, *, full: bool = False, seed: int = 1, stamp: bool = True) -> Report:
    """Run every check (stopping after a failure of one the others depend on); with
    ``stamp``, a file that passes them all is stamped as verified (trust.record)."""
    report = Report(*_run_checks(path, full, seed))
    if stamp and report.ok:
        trust.record(report.meta)
    return report


def _run_checks(path, full: bool, seed: int) -> tuple[artifact.ArtifactMeta | None, list[Check]]:
    checks = []
    try:
        meta = artifact.read_meta(path)
        data = artifact.map_tables(meta)
        check_layout(meta)
    except PdbError as e:
        return None, [Check("metadata", False, str(e))]
    checks.append(Check("metadata", True, f"{meta.partition}, format {meta.format_version}, version {meta.version}"))
    rng = random.Random(seed)
    for name, fn, args in (
        ("checksums", check_checksums, (meta, data)),
        ("ranking", check_ranking, (meta, full, 200_000)),
        ("completeness", check_completeness, (meta, data)),
    ):
        checks.append(timed(name, fn, *args))
        if not checks[-1].ok:
            return meta, checks
    h = heuristic_from(meta, data, reflect=True)
    walk = {3: 40, 4: 40, 5: 30}.get(meta.size, 20)
    checks.append(timed("consistency", check_consistency, h, 20000 if full else 2000, rng))
    checks.append(timed("admissibility", check_admissibility, h, 40 if full else 8, rng, walk))
    return meta, checks
