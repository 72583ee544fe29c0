"""Damage that checksums cannot see: tables rewritten with valid checksums but wrong
entries, stale trust stamps, a wrong rank scheme, an interrupted write."""

import json
import logging
import os
import re
import shutil

import h5py
import numpy as np
import pytest

from pdbtool import puzzle
from pdbtool.errors import ArtifactError
from pdbtool.loading import load_heuristic, open_trusted
from pdbtool.search.solver import Solver
from pdbtool.selection import load_directory
from pdbtool.tables import artifact, seal, trust
from pdbtool.tables.builder import build
from pdbtool.verification import audit_table, verify
from reference import flip_byte, table_entry

UNREACHED = artifact.NIBBLE_UNSET


def rewrite(src, dst, change, *, histograms: bool = True):
    """Write a copy of an artifact whose 4-bit entries went through ``change`` (an array of
    one entry per element, changed in place), with new checksums and, with ``histograms``,
    the value histograms recounted from the new entries (as a careful forger would)."""
    meta, data = artifact.open_tables(src)
    tables = []
    for t in meta.tables:
        packed = np.array(artifact.table_view(data, t))
        entries = np.empty(packed.size * 2, np.uint8)
        entries[0::2], entries[1::2] = packed & 15, packed >> 4
        change(entries)
        packed = (entries[0::2] | (entries[1::2] << 4)).astype(np.uint8)
        tables.append(artifact.TableData(t.name, t.tiles, t.cells, t.entries, packed,
                                         t.histogram, t.unset))

    def write(tables):
        return artifact.write_artifact(dst, partition=meta.partition, size=meta.size,
                                       goal=meta.goal, zero_aware=meta.zero_aware,
                                       tables=tables, groups=meta.groups, build={},
                                       builder_version="test")

    written = write(tables)
    if not histograms:
        return written
    data = artifact.map_tables(written)
    counted = [audit_table(written, data, t, moves=False).histogram for t in written.tables]
    del data
    return write([t._replace(histogram=h) for t, h in zip(tables, counted)])


def failed(path):
    report = verify(path)
    names = [c.name for c in report.checks if not c.ok]
    assert report.ok == (not names)
    assert trust.is_recorded(report.meta) == report.ok  # stamped only when every check passed
    return names


def test_verify_catches_wrong_entries_with_valid_checksums(art_dir, tmp_path):
    def inflate(t):
        t[(t != UNREACHED) & (t > 3)] = 14  # md + 28: far too much

    rewrite(art_dir / "8-full.h5", tmp_path / "inflated.h5", inflate)
    assert set(failed(tmp_path / "inflated.h5")) & {"consistency", "admissibility"}

    def unset(t):
        t[np.flatnonzero(t != UNREACHED)[1000]] = UNREACHED

    rewrite(art_dir / "8-full.h5", tmp_path / "holes.h5", unset)
    assert failed(tmp_path / "holes.h5") == ["completeness"]


def test_solver_refuses_a_table_its_search_proves_wrong(art_dir, tmp_path):
    board = (8, 6, 7, 2, 5, 4, 3, 0, 1)  # 31 moves to the blank-last goal
    image = puzzle.rotate_relabel(board)  # what the tables see (blank-first)
    cells = [image.index(t) for t in range(1, 9)]

    def boost(t):
        t[table_entry(cells, image.index(0), 3)] = 14  # the start's entry now overestimates

    trust.record(rewrite(art_dir / "8-full.h5", tmp_path / "boosted.h5", boost))  # stamped:
    # the loader's sampled checks, which might hit the entry, do not run (damage behind a
    # valid stamp is what the search's own checks are for)
    solver = Solver(load_heuristic(tmp_path / "boosted.h5"))
    # every move of the search would inherit the entry (moved_entry): refused at the root
    with pytest.raises(ArtifactError, match="is wrong: its entries at the start and at a "
                                            "neighbour.*run pdbtool verify"):
        solver.solve(board)


def test_solver_refuses_an_answer_whose_path_the_table_contradicts(art_dir, tmp_path):
    """Damage below the root that keeps the entry's lowest bit: the search, which reads
    only that bit after a move, finds the path it finds on the intact table, and the
    answer check, which reads whole entries along it, refuses the answer."""
    board = (8, 6, 7, 2, 5, 4, 3, 0, 1)  # 31 moves to the blank-last goal
    path = Solver(load_heuristic(art_dir / "8-full.h5")).solve(board).moves
    step = 10  # far from the root, whose neighbours' entries the search checks
    image = puzzle.rotate_relabel(puzzle.apply_tile_moves(board, path[:step]))
    cells = [image.index(t) for t in range(1, 9)]

    def boost(t):
        e = table_entry(cells, image.index(0), 3)
        t[e] = 14 - (t[e] & 1)  # at least 26 moves more than md, the same parity

    trust.record(rewrite(art_dir / "8-full.h5", tmp_path / "boosted.h5", boost))  # (as above)
    with pytest.raises(ArtifactError, match="is wrong: it overestimates at step"):
        Solver(load_heuristic(tmp_path / "boosted.h5")).solve(board)


def test_an_answer_that_does_not_replay_is_refused(monkeypatch):
    """Every answer is replayed to its goal before it is returned: a path turned into
    moves wrongly (here its last move dropped) is an internal error, never an answer."""
    from pdbtool.errors import PdbError
    from pdbtool.heuristics.table_free import table_free

    real = puzzle.blank_path_to_moves

    def one_short(board, cells, shape=None):
        moves, letters = real(board, cells, shape)
        return moves[:-1], letters[:-1]

    monkeypatch.setattr(puzzle, "blank_path_to_moves", one_short)
    with pytest.raises(PdbError, match="does not replay to the goal"):
        Solver(table_free("manhattan", 3)).solve((8, 6, 7, 2, 5, 4, 3, 0, 1))


@pytest.mark.parametrize("edit, check", [("every entry but the goal's", "admissibility"),
                                         ("every other entry", "consistency")])
def test_the_sampled_checks_refuse_what_they_check(art_dir, tmp_path, edit, check):
    """The checks that sample (those a table over EXHAUSTIVE_UP_TO entries gets: 15/7-8,
    the 24-puzzle's) each refuse a forgery the checks before them pass: every entry but the
    goal's two moves higher keeps every move's step but the goal's neighbours' (h 3 one
    move from the goal: the admissibility check's optimal paths end there; the sampled
    boards never come near it); every other entry two moves higher makes steps of 3. No
    test table is big enough to be sampled unasked, so without this the sampled checks
    could say yes to anything unseen."""
    goal = table_entry(list(range(1, 9)), 0, 3)

    def raise_(t):
        step = 1 if check == "admissibility" else 2
        keep = t[goal]
        t[0::step] = np.where(t[0::step] <= 13, t[0::step] + 1, t[0::step])
        t[goal] = keep

    path = tmp_path / "8-full.h5"
    rewrite(art_dir / "8-full.h5", path, raise_)
    report = verify(path, stamp=False, seed=1, exhaustive=False)
    names = [c.name for c in report.checks]
    assert not report.ok and report.failed.name == check, report.failed  # the first failed
    assert names[:names.index(check)] == ["metadata", "checksums", "ranking", "completeness",
                                          "histogram", "consistency"][:names.index(check)]
    assert not verify(path, stamp=False).ok  # every entry read: refused too


def test_stamp_is_void_after_an_edit_even_with_mtime_restored(art_dir, tmp_path):
    path = tmp_path / "8-full.h5"
    shutil.copy(art_dir / "8-full.h5", path)
    meta = artifact.read_meta(path)
    trust.record(meta)
    assert trust.is_recorded(meta)
    st = os.stat(path)
    flip_byte(path, meta.data_offset + 12345)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert not trust.is_recorded(meta)
    with pytest.raises(ArtifactError, match="checksum"):
        load_heuristic(path)


def test_a_failed_verify_takes_the_stamp_away(art_dir, tmp_path):
    """Damage behind a valid stamp (bits rotted, the fingerprint the same: here stamped
    after the damage): verify fails and the stamp goes, so loaders check the file whole
    again and refuse it. The stamp stayed: `list` said verified, solve and pdbd loaded the
    file unchecked."""
    path = tmp_path / "8-full.h5"
    shutil.copy(art_dir / "8-full.h5", path)
    meta = artifact.read_meta(path)
    flip_byte(path, meta.data_offset + 12345)
    trust.record(artifact.read_meta(path))
    assert trust.is_recorded(artifact.read_meta(path))
    report = verify(path)
    assert not report.ok and report.failed.name == "checksums" and report.note is None
    assert not trust.stamp_path(path).exists()
    with pytest.raises(ArtifactError, match="checksum"):
        load_heuristic(path)


def test_a_stamp_that_cannot_be_removed_is_said_as_loaders_see_it(art_dir, tmp_path,
                                                                   monkeypatch):
    """A stamp that names the file as it is (bits rotted under it) is trusted by loaders;
    one of an edit before (other times) is not: the warning said "loaders still trust it"
    of both."""
    path = tmp_path / "8-full.h5"
    shutil.copy(art_dir / "8-full.h5", path)
    flip_byte(path, artifact.read_meta(path).data_offset + 12345)
    trust.record(artifact.read_meta(path))

    def refused(self, *args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(type(path), "unlink", refused)
    assert trust.forget(path).endswith("(Permission denied): loaders still trust it; remove it")
    os.utime(path, ns=(1, 1))  # an edit since the stamp, as far as the stamp can tell
    assert trust.forget(path).endswith("(Permission denied): it no longer matches the file, "
                                       "so loaders do not trust it; remove it")
    assert not trust.is_recorded(artifact.read_meta(path))


def test_unknown_rank_scheme_is_refused(art_dir, tmp_path):
    """A well-formed artifact ranked by another scheme version is refused by the solver's
    layout check (its content version rewritten to match, so that the metadata check
    passes and only the rank scheme is left to refuse it)."""
    path = tmp_path / "8-full.h5"
    shutil.copy(art_dir / "8-full.h5", path)
    m = artifact.read_meta(path)
    with h5py.File(path, "r+") as f:
        f.attrs["rank_version"] = 1
        f.attrs["version"] = artifact.content_version(
            m.partition, m.size, m.goal, m.rank_scheme, 1, m.zero_aware, m.encoding, m.tables,
            m.groups, m.cols)
    seal.reseal(path)
    assert artifact.read_meta(path).rank_version == 1
    with pytest.raises(ArtifactError, match="rank scheme"):
        load_heuristic(path)


def test_interrupted_write_leaves_nothing_and_says_nothing_of_a_file(tmp_path, monkeypatch):
    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(artifact.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt) as stop:
        build("8/full", tmp_path, progress=False)
    assert list(tmp_path.iterdir()) == [] and not getattr(stop.value, "__notes__", None)


@pytest.mark.parametrize("stamped", [False, True])
def test_a_build_stopped_once_its_file_is_in_place_says_so(tmp_path, monkeypatch, capsys,
                                                           stamped):
    """Stopped between the rename and the stamp (or after it), `pdbtool build` said only
    "interrupted" (exit 130): a caller took it for nothing written, and the next run was
    refused ("exists: give --force")."""
    from pdbtool.cli import main as cli

    real = trust.record

    def stop_while_stamping(meta, *args):
        if stamped:
            real(meta, *args)
        raise KeyboardInterrupt

    monkeypatch.setattr(trust, "record", stop_while_stamping)
    assert cli.main(["build", "8/full", "--out", str(tmp_path), "--quiet"]) == 130
    path = tmp_path / "8-full.h5"
    said = ("and stamped as verified before it stopped" if stamped else
            f"before it stopped, but not stamped as verified: `pdbtool verify {path}`")
    assert capsys.readouterr().err == f"pdbtool: interrupted; {path} was written whole {said}" \
        + ("\n" if stamped else " checks it and stamps it\n")


def test_an_unpack_stopped_once_its_file_is_in_place_says_so(art_dir, tmp_path, monkeypatch,
                                                             capsys):
    from pdbtool.cli import main as cli
    from pdbtool.cli.console import Terminated

    packed = tmp_path / "8.pdbpack"
    assert cli.main(["pack", str(art_dir / "8-full.h5"), "-o", str(packed)]) == 0

    def terminated(meta, *args, **kwargs):
        raise Terminated

    monkeypatch.setattr(trust, "record", terminated)
    capsys.readouterr()
    out = tmp_path / "8.h5"
    assert cli.main(["unpack", str(packed), "-o", str(out)]) == 143
    assert capsys.readouterr().err.startswith(
        f"pdbtool: terminated; {out} was written whole before it stopped, but not stamped")


# -- issue 13: loaders check what verify checks ---------------------------------------------

def test_loading_an_unstamped_file_runs_every_verify_check(art_dir, tmp_path, caplog):
    def inflate(t):
        t[(t != UNREACHED) & (t > 3)] = 14

    bad = tmp_path / "bad" / "8-full.h5"
    bad.parent.mkdir()
    rewrite(art_dir / "8-full.h5", bad, inflate)  # checksums and version recomputed
    assert not trust.is_recorded(artifact.read_meta(bad))
    with pytest.raises(ArtifactError, match="consistency|admissibility"):
        load_heuristic(bad)
    with pytest.raises(ArtifactError, match="consistency|admissibility"):
        load_directory(bad.parent)
    good = tmp_path / "good" / "8-full.h5"
    good.parent.mkdir()
    shutil.copy(art_dir / "8-full.h5", good)  # a copy: no stamp of its own
    with caplog.at_level(logging.INFO, logger="pdbtool"):
        opened = open_trusted(good)
    assert opened.checks == ("metadata", "checksums", "ranking", "completeness",  # every
                             "histogram", "consistency", "exactness", "admissibility")  # entry
    assert "no valid verification stamp; ran metadata, checksums" in caplog.text
    assert open_trusted(art_dir / "8-full.h5").checks == ("stamp",)


def test_a_file_changed_while_verify_reads_it_is_not_stamped(art_dir, tmp_path, monkeypatch):
    """verify stamped whatever the file was when its checks ended: a table edited after its
    checksums were checked got a valid stamp, and loaders then trusted it unchecked."""
    from pdbtool import verification

    path = tmp_path / "8-full.h5"
    shutil.copy(art_dir / "8-full.h5", path)
    meta = artifact.read_meta(path)
    last = verification.check_admissibility

    def edited_meanwhile(*args):
        flip_byte(path, meta.data_offset + 12345)  # after the checksums were checked
        return last(*args)

    monkeypatch.setattr(verification, "check_admissibility", edited_meanwhile)
    report = verify(path)
    assert not report.ok and report.checks[-1].name == "unchanged"
    assert "changed on disk" in report.checks[-1].detail
    assert not trust.is_recorded(artifact.read_meta(path))


def test_a_file_renamed_over_the_path_while_verify_reads_it_is_not_stamped(art_dir, tmp_path,
                                                                           monkeypatch):
    """A rollout renames another copy of the same version over the path while verify
    checks the old one: the stamp took the path's file (its metadata the same, a table
    byte flipped: the seal leaves the tables to their checksums), and loaders then trusted
    it unchecked."""
    from pdbtool import verification

    path, other = tmp_path / "8-full.h5", tmp_path / "copy.h5"
    shutil.copy(art_dir / "8-full.h5", path)
    meta = artifact.read_meta(path)
    shutil.copy(path, other)
    flip_byte(other, meta.data_offset + 1000)
    checks = verification._run_checks

    def renamed_meanwhile(*args):
        out = checks(*args)
        if other.exists():  # once: after every check of verify's read the old file
            os.replace(other, path)
        return out

    monkeypatch.setattr(verification, "_run_checks", renamed_meanwhile)
    report = verify(path)
    assert not report.ok and report.checks[-1].name == "unchanged"
    assert "replaced or changed while it was checked" in report.checks[-1].detail
    assert not trust.stamp_path(path).exists()
    with pytest.raises(ArtifactError, match="checksum"):  # what the stamp would have hidden
        open_trusted(path)


def test_a_failed_verify_leaves_the_stamp_of_a_file_renamed_over_the_path(art_dir, tmp_path,
                                                                          monkeypatch):
    """A verify that fails "unchanged" because a good, stamped table was renamed over the
    path while it ran (a rollout) keeps that table's stamp: it is not the file that failed
    (every later load would have run every check again: minutes for 15/7-8)."""
    from pdbtool import verification

    path, new = tmp_path / "8-full.h5", tmp_path / "new.h5"
    shutil.copy(art_dir / "8-full.h5", path)
    shutil.copy(art_dir / "8-full.h5", new)
    checks = verification._run_checks

    def rolled_out_meanwhile(*args):
        out = checks(*args)
        if new.exists():  # once, as `pdbtool unpack --force` would: renamed, then stamped
            os.replace(new, path)
            trust.record(artifact.read_meta(path))
        return out

    monkeypatch.setattr(verification, "_run_checks", rolled_out_meanwhile)
    report = verify(path)
    assert not report.ok and report.checks[-1].name == "unchanged"
    assert trust.is_recorded(artifact.read_meta(path))


def forge_groups(src, dst, edit):
    """A copy of ``src`` whose groups ``edit(groups)`` rewrote, its content version and
    seal made again as a forger would: only the reader's own checks can refuse it."""
    shutil.copy(src, dst)
    m = artifact.read_meta(dst)
    groups = [dict(tiles=list(g.tiles), table=g.table, cell_map=list(g.cell_map),
                   partition=g.partition) for g in m.groups]
    edit(groups)
    infos = [artifact.GroupInfo(tuple(g["tiles"]), g["table"], tuple(g["cell_map"]),
                                g["partition"]) for g in groups]
    with h5py.File(dst, "r+") as f:
        f.attrs["groups"] = json.dumps(groups)
        f.attrs["version"] = artifact.content_version(
            m.partition, m.size, m.goal, m.rank_scheme, m.rank_version, m.zero_aware,
            m.encoding, m.tables, infos, m.cols)
    seal.reseal(dst)


def swap_outside(g):
    """The group's map with two cells outside its tiles swapped: still a permutation that
    takes the tiles where the table has them, but no symmetry of the board."""
    free = [c for c in range(len(g["cell_map"])) if c not in g["tiles"] and c != 0]
    a, b = free[0], free[1]
    g["cell_map"][a], g["cell_map"][b] = g["cell_map"][b], g["cell_map"][a]


@pytest.mark.parametrize("edit, says", [
    (lambda gs: gs[0]["cell_map"].__setitem__(3, 40), "cell map is not a permutation"),
    (lambda gs: gs.clear(), "no groups"),
    (lambda gs: gs[1].__setitem__("partition", -1), "is in partition -1"),
    (lambda gs: gs[2].__setitem__("partition", 2), "not numbered 0, 1, ... without a gap"),
    (lambda gs: swap_outside(gs[0]), "cell map is not a symmetry"),
    (lambda gs: gs[0].__setitem__("cell_map", list(range(16))[::-1]), "does not take its tiles"),
], ids=["map out of range", "no groups", "negative partition", "partition gap",
        "not a symmetry", "tiles elsewhere"])
def test_forged_groups_are_refused_never_crash(art_dir, tmp_path, edit, says):
    """Groups rewritten with the version and seal made again: the kernels index by the
    cell maps without bounds checks (a map with cell 40 crashed verify with SIGSEGV, no
    groups or a negative partition gave tracebacks); each is refused, naming it."""
    path = tmp_path / "15-5-5-5.h5"
    forge_groups(art_dir / "15-5-5-5.h5", path, edit)
    report = verify(path)
    assert not report.ok and report.failed.name == "metadata" and says in report.failed.detail
    with pytest.raises(ArtifactError, match=says):
        load_heuristic(path)


@pytest.mark.parametrize("placements", [None, 1000])
def test_completeness_places_the_unreachable_entries_of_a_table_of_every_tile(
        art_dir, monkeypatch, placements):
    """In a table of every tile half the placements are unreachable (parity); completeness
    counted them only, so a reachable entry set to 15 and its unreachable partner given
    its value kept the count (and, with the histogram made again, every check but a lucky
    sample). Each unreachable entry is checked against its placement's parity now, in
    slices of placements (one kernel call took 18 s on 12/3x4, deaf to Ctrl-C): the same
    count and first entry in slices of 1,000."""
    from pdbtool import verification
    from pdbtool.verification import check_completeness

    if placements:
        monkeypatch.setattr(verification, "AUDIT_SLICE", placements)

    meta = artifact.read_meta(art_dir / "8-full.h5")
    data = np.array(artifact.map_tables(meta), copy=True)
    assert check_completeness(meta, data)[0]
    t = meta.tables[0]
    table = data[t.offset:t.offset + t.bytes]
    e = 1000 if table[500] & 15 != 15 else 1001  # a reachable entry; e ^ 1 its partner
    value = (table[e >> 1] >> (4 * (e & 1))) & 15
    table[500] = (15 << 4 * (e & 1)) | (value << 4 * (1 - (e & 1)))
    ok, detail = check_completeness(meta, data)
    assert not ok and f"entry {min(e, e ^ 1):,}" in detail and "parity says otherwise" in detail
    assert detail.startswith(f"table {t.name}: 2 entries where")


def test_each_run_samples_with_a_fresh_seed_it_reports(art_dir):
    """A fixed seed let a table forged around it pass every run; the seed is reported, and
    giving it repeats the run."""
    path = art_dir / "8-full.h5"
    seeds = {verify(path, stamp=False).seed for _ in range(3)}
    assert len(seeds) == 3 and None not in seeds
    seed = seeds.pop()
    again = verify(path, stamp=False, seed=seed)
    assert again.seed == seed and again.ok


# -- issue 40: every entry checked, and the histograms ---------------------------------------

def test_exhaustive_refuses_one_edited_entry_that_the_sample_misses(art_dir, tmp_path, capsys):
    """One entry of 15/5-5-5 two moves too low, histograms recounted: still admissible, so
    no exact solve can show it, and the sampled consistency check reads a few thousand of
    the table's 1.5M entries. The exhaustive check reads them all and names the entry."""
    from pdbtool.cli.main import main

    path = tmp_path / "15-5-5-5.h5"
    cells = [8, 9, 2, 7, 14]  # tiles 1, 2, 3, 6, 7 away from home
    e = table_entry(cells, 0, 4)
    tables = []

    def lower(t):
        tables.append(t)
        if len(tables) == 1:  # the first table (tiles 1 2 3 6 7)
            assert 0 < t[e] < UNREACHED
            t[e] -= 1

    rewrite(art_dir / "15-5-5-5.h5", path, lower)
    sampled = verify(path, stamp=False, seed=1, exhaustive=False)
    assert sampled.ok, sampled.failed  # the sample misses it (this seed; most do)
    report = verify(path, stamp=False)  # a table this small: every entry, unasked
    assert report.exhaustive
    assert not report.ok and report.failed.name in ("consistency", "exactness")
    assert f"entry {e:,} (tiles 1 at 8, 2 at 9, 3 at 2, 6 at 7, 7 at 14;" in report.failed.detail
    assert "table t0_1-2-3-6-7" in report.failed.detail
    assert not trust.is_recorded(artifact.read_meta(path))
    capsys.readouterr()
    assert main(["verify", "--exhaustive", "--json", str(path)]) == 1
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert doc["exhaustive"] is True and doc["ok"] is False
    assert doc["checks"][-1]["check"] in ("consistency", "exactness")
    assert f"check {doc['checks'][-1]['check']} failed: table t0_1-2-3-6-7" in err


def test_exhaustive_passes_every_table_kind_with_progress(art_dir, tmp_path):
    """Zero-aware (15/5-5-5, with the blank's pockets), a full group with its unreachable
    parity half (8/full) and min over the blank (15/5-5-5 --min-over-blank) pass; the
    progress callback sees every table to its end."""
    build("15/5-5-5", tmp_path, zero_aware=False, progress=False)
    for path in (art_dir / "15-5-5-5.h5", art_dir / "8-full.h5", tmp_path / "15-5-5-5-min.h5"):
        seen = {}
        report = verify(path, stamp=False, exhaustive=True,
                        progress=lambda label, done, total, seen=seen: seen.__setitem__(
                            label, (done, total)))
        assert report.ok, report.failed
        assert [c.name for c in report.checks][4:] == ["histogram", "consistency", "exactness",
                                                       "admissibility"]
        meta = artifact.read_meta(path)
        assert len(seen) == len(meta.tables) and all(d == t for d, t in seen.values())


def test_an_edited_histogram_is_refused(art_dir, tmp_path):
    """The histograms (read by info and predict) are metadata, outside the checksums and
    the version: verify recounts them from the entries."""
    path = tmp_path / "8-full.h5"
    shutil.copy(art_dir / "8-full.h5", path)
    with h5py.File(path, "r+") as f:
        tables = json.loads(f.attrs["tables"])
        tables[0]["histogram"][20] += 5
        f.attrs["tables"] = json.dumps(tables, sort_keys=True, separators=(",", ":"))
    seal.reseal(path)
    for exhaustive in (False, True):
        report = verify(path, stamp=False, exhaustive=exhaustive)
        assert report.failed.name == "histogram"
        assert report.failed.detail.startswith(
            "table t0_1-2-3-4-5-6-7-8: the metadata's histogram says 16,998 entries at "
            "distance 20, the entries hold 16,993")
    with pytest.raises(ArtifactError, match="check histogram failed"):
        load_heuristic(path)


def forged(src, dst, how: str):
    """``src`` with its entries edited and every hash made to match again: checksums,
    histograms, content version and seal, as whoever edits a table can (the table review's
    forgery). ``how``: raise 50 entries of the first table by one, or every entry to 0
    (Manhattan distance: a weaker heuristic in a valid-looking file)."""
    meta, data = artifact.open_tables(src, verify=False)
    data = np.array(data)
    tables = [np.array(artifact.table_view(data, t)) for t in meta.tables]
    if how == "raised":
        a = tables[0]
        for i in np.random.default_rng(0).choice(a.size, 50, replace=False):
            if a[i] & 15 < 13:
                a[i] += 1
    else:
        for a in tables:
            a[:] = np.where(a >> 4 == 15, 0xF0, 0) | np.where(a & 15 == 15, 15, 0)

    def write(histograms):
        artifact.write_artifact(
            dst, partition=meta.partition, size=meta.size, goal=meta.goal,
            zero_aware=meta.zero_aware, builder_version=meta.builder_version, build={},
            groups=meta.groups, tables=[artifact.TableData(t.name, t.tiles, t.cells, t.entries,
                                                           tables[i], histograms[i], t.unset)
                                        for i, t in enumerate(meta.tables)])
    write([t.histogram for t in meta.tables])
    written, entries = artifact.open_tables(dst, verify=False)
    write([audit_table(written, entries, t, moves=False).histogram for t in written.tables])


@pytest.mark.parametrize("how", ["raised", "lowered"])
def test_a_forged_small_table_is_refused_by_every_reader(art_dir, tmp_path, how):
    """Entries edited and the hashes made to match (checksums, histograms, version, seal):
    the sampled checks let 50 raised entries of 8/full pass 7 of 10 seeds (and the table
    answered 24 moves where 22 is optimal), and Manhattan distance in a table's clothes
    passed every one. A table of at most EXHAUSTIVE_UP_TO entries is checked on every entry
    by verify, unpack and a loader alike."""
    from pdbtool.loading import install
    from pdbtool.tables.packing import pack

    path = tmp_path / "8-full.h5"
    forged(art_dir / "8-full.h5", path, how)
    assert artifact.read_meta(path).sealed
    report = verify(path, stamp=False, seed=1)
    assert report.exhaustive and not report.ok
    assert report.failed.name in ("consistency", "exactness"), report.failed
    with pytest.raises(ArtifactError, match=f"check {report.failed.name} failed"):
        load_heuristic(path)
    pack(path, tmp_path / "8-full.pdbpack")
    with pytest.raises(ArtifactError, match=f"fail check {report.failed.name}"):
        install(tmp_path / "8-full.pdbpack", tmp_path / "arrived.h5")
    assert not (tmp_path / "arrived.h5").exists()


def test_verify_names_a_seed_only_when_it_sampled(art_dir, tmp_path, capsys):
    """A file refused at its metadata (a pack, an empty or foreign file) ran no sampled
    check: no seed to repeat them by (it said one)."""
    from pdbtool.cli.main import main

    foreign = tmp_path / "x.h5"
    foreign.write_text("not a table\n")
    assert main(["verify", str(foreign)]) == 1
    assert "sampled with seed" not in capsys.readouterr().out
    assert main(["verify", "--json", str(foreign)]) == 1
    assert json.loads(capsys.readouterr().out)["seed"] is None  # (it gave one)
    assert main(["verify", str(art_dir / "8-full.h5"), "--seed", "7"]) == 0
    assert "sampled with seed 7 (--seed 7 repeats them)" in capsys.readouterr().out


def relabel(src, dst, partition: str):
    """A copy of ``src`` labelled ``partition``, its content version and seal made again."""
    shutil.copy(src, dst)
    m = artifact.read_meta(dst)
    with h5py.File(dst, "r+") as f:
        f.attrs["partition"] = partition
        f.attrs["version"] = artifact.content_version(
            partition, m.size, m.goal, m.rank_scheme, m.rank_version, m.zero_aware,
            m.encoding, m.tables, m.groups, m.cols)
    seal.reseal(dst)


@pytest.mark.parametrize("table, label, says", [
    ("15-5-5-5.h5", "15/7-8", r"labelled '15/7-8' \(4x4, groups 1-2-3-4-5-6-7 8-9-10-11-12-13-14-15\)"
                              r", but it holds 4x4 tables of groups 1-2-3-6-7 4-5-8-9-12 10-11-13-14-15: mislabelled"),
    ("8-full.h5", "24/small", r"labelled '24/small' \(5x5, .*but it holds 3x3 tables"),
])
def test_a_table_labelled_as_another_catalogue_is_refused(art_dir, tmp_path, table, label, says):
    """The label edited and sealed again: `list`, `info` and every answer named a 15/7-8 of
    0.2 MiB. A catalogue this pdbtool ships is checked against the groups held."""
    path = tmp_path / table
    relabel(art_dir / table, path, label)
    report = verify(path)
    assert not report.ok and report.failed.name == "metadata"
    assert re.search(says, report.failed.detail), report.failed.detail
    with pytest.raises(ArtifactError, match="mislabelled"):
        load_heuristic(path)
    relabel(art_dir / table, path, "15/from-a-newer-pdbtool")  # a name it does not know
    assert verify(path).ok


def test_the_ranking_check_says_all_when_every_rank_was_checked(art_dir):
    """8/full's tables are smaller than the samples: every rank and map is checked, and the
    line said "(sampled)"; 15/5-5-5's are sampled."""
    checks = {c.name: c.detail for c in verify(art_dir / "8-full.h5", stamp=False).checks}
    assert "for 362,880 ranks (all)" in checks["ranking"]
    checks = {c.name: c.detail for c in verify(art_dir / "15-5-5-5.h5", stamp=False).checks}
    assert "ranks (sampled)" in checks["ranking"]
