"""Which heuristic serves a board size (pdbtool.selection), and what loading a directory costs."""

import collections
import shutil
from pathlib import Path

import h5py
import pytest

from pdbtool.errors import ArtifactError, BadInput
from pdbtool.geometry import Shape
from pdbtool.heuristics.table_free import table_free
from pdbtool.search.solver import Solver
from pdbtool.selection import Solvers, load_directory
from pdbtool.tables import artifact
from reference import flip_byte


def test_loading_a_directory_opens_each_hdf5_file_at_most_twice(art_dir, monkeypatch):
    opens = collections.Counter()
    file_class, is_hdf5 = h5py.File, h5py.is_hdf5

    def counted_file(name, *args, **kwargs):
        opens[Path(name).resolve()] += 1
        return file_class(name, *args, **kwargs)

    def counted_is_hdf5(name):
        opens[Path(name).resolve()] += 1
        return is_hdf5(name)

    monkeypatch.setattr(h5py, "File", counted_file)
    monkeypatch.setattr(h5py, "is_hdf5", counted_is_hdf5)
    tables = load_directory(art_dir, require=True)
    paths = {p.resolve() for p in artifact.find_artifacts(art_dir)}
    assert len(paths) == 2 and len(tables.artifacts) == 2
    assert set(opens) == paths, opens  # each file is read, and nothing else
    assert all(n <= 2 for n in opens.values()), opens


def test_directory_serves_the_sizes_of_its_artifacts(art_dir):
    tables = load_directory(art_dir)
    assert tables.shapes == [(3, 3), (4, 4)]
    assert tables.heuristics[4, 4].name == "pdb 15/5-5-5 + reflection"
    assert {m.partition for m in tables.artifacts} == {"8/full", "15/5-5-5"}
    assert load_directory(art_dir, reflect=False).heuristics[4, 4].name == "pdb 15/5-5-5"


def test_a_directory_of_packed_tables_only_says_to_unpack_them(tmp_path):
    """pdbd serve on a directory holding only a shipped pack said "build one with
    `pdbtool build 15/5-5-5`", as if it held nothing."""
    (tmp_path / "15-7-8.pdbpack").write_bytes(b"a pack")
    with pytest.raises(ArtifactError) as e:
        load_directory(tmp_path, require=True)
    assert str(e.value) == (f"{tmp_path}: no artifacts (*.h5) to serve; it holds packed tables "
                            f"(15-7-8.pdbpack): unpack them first, e.g. `pdbtool unpack "
                            f"{tmp_path / '15-7-8.pdbpack'} -o {tmp_path / '15-7-8.h5'}`")
    # a solve from that directory falls back, and its note says why and what to do
    note = Solvers(directory=tmp_path).for_shape(4).heuristic.note
    assert note.startswith(f"no table for 4x4 boards in {tmp_path}/ (it holds packed tables "
                           "(15-7-8.pdbpack): unpack them first"), note


def test_empty_missing_and_damaged_directories_are_errors(art_dir, tmp_path):
    assert load_directory(tmp_path).heuristics == {}
    with pytest.raises(ArtifactError, match="no artifacts"):
        load_directory(tmp_path, require=True)
    with pytest.raises(ArtifactError, match="no such directory"):
        load_directory(tmp_path / "nope")
    with pytest.raises(ArtifactError, match="8-full.h5: not a directory"):
        load_directory(art_dir / "8-full.h5")
    # A damaged file is an error even beside a good one: never silently skipped.
    shutil.copy(art_dir / "15-5-5-5.h5", tmp_path)
    shutil.copy(art_dir / "8-full.h5", tmp_path)
    flip_byte(tmp_path / "8-full.h5", artifact.read_meta(tmp_path / "8-full.h5").data_offset + 99)
    with pytest.raises(ArtifactError, match=r"8-full\.h5: .*checksum.* mismatch"):
        load_directory(tmp_path)


def test_solvers_policy(art_dir, tmp_path):
    named = Solvers(heuristic="manhattan")
    assert named.for_shape(4).heuristic.name == "manhattan"
    assert named.for_shape(4) is named.for_shape(4)  # one Solver per side
    one = Solvers(artifact_path=art_dir / "8-full.h5")
    assert one.for_shape(3).heuristic.name == "pdb 8/full + reflection"
    with pytest.raises(BadInput, match="serves 3x3 boards, the board is 4x4"):
        one.for_shape(4)
    directory = Solvers(directory=art_dir, prune=False)
    assert directory.for_shape(4).heuristic.artifact == artifact.read_meta(art_dir / "15-5-5-5.h5").version
    assert directory.for_shape(4).prune is False
    fallback = directory.for_shape(5).heuristic
    assert fallback.name == "linear-conflict" and "no table for 5x5 boards" in fallback.note
    assert Solvers(directory=tmp_path).for_shape(4).heuristic.name == "walking-distance"
    with pytest.raises(BadInput, match="heuristic manhattan uses no table: give no artifact"):
        Solvers(heuristic="manhattan", artifact_path=art_dir / "8-full.h5")


def test_entries_that_are_not_files_are_refused_and_listed(art_dir, tmp_path, capsys):
    import json
    import os

    from pdbtool.cli import main as cli

    shutil.copy(art_dir / "8-full.h5", tmp_path)
    from pdbtool.tables import trust
    trust.record(artifact.read_meta(tmp_path / "8-full.h5"))
    (tmp_path / "dangling.h5").symlink_to(tmp_path / "gone.h5")
    (tmp_path / "dir.h5").mkdir()
    os.mkfifo(tmp_path / "fifo.h5")
    (tmp_path / "loop.h5").symlink_to(tmp_path / "loop.h5")
    with pytest.raises(ArtifactError) as e:
        load_directory(tmp_path)  # used to serve without them, in silence
    for words in ("dangling.h5: a symbolic link to a missing file",  # ("loop.h5 is cannot
                  "dir.h5: not a regular file: a directory",  # be read" before)
                  "fifo.h5: not a regular file: a FIFO",
                  "loop.h5: cannot be read (Too many levels of symbolic links)"):
        assert words in str(e.value)
    assert cli.main(["list", str(tmp_path), "--json"]) == 1  # listed, and said in the status
    rows = {Path(r["path"]).name: r["state"] for r in json.loads(capsys.readouterr().out)["artifacts"]}
    assert rows["8-full.h5"] == "verified"
    assert rows["fifo.h5"] == "not an artifact: not a regular file: a FIFO"
    assert rows["dangling.h5"].startswith("not an artifact: a symbolic link")
    assert rows["dir.h5"] == "not an artifact: not a regular file: a directory"


def test_a_board_loads_only_the_tables_of_its_shape(art_dir, tmp_path, caplog):
    """pdbtool solve maps and checks only the tables that serve its board's shape: a 3x3
    board is not held up (minutes for an unstamped 15/7-8) nor refused by a 4x4 table;
    that table is refused for a 4x4 board."""
    shutil.copy(art_dir / "15-5-5-5.h5", tmp_path)  # (copies: no stamp, every check runs)
    shutil.copy(art_dir / "8-full.h5", tmp_path)
    damaged = tmp_path / "15-5-5-5.h5"
    flip_byte(damaged, artifact.read_meta(damaged).data_offset + 99)
    solvers = Solvers(directory=tmp_path)
    with caplog.at_level("WARNING", logger="pdbtool"):
        assert solvers.for_shape(3).heuristic.name == "pdb 8/full + reflection"
    assert not any("15-5-5-5" in r.getMessage() for r in caplog.records)  # not even checked
    with pytest.raises(ArtifactError, match=r"15-5-5-5\.h5: .*checksum.* mismatch"):
        solvers.for_shape(4)


def test_a_rectangle_s_tables_load_once_for_both_of_its_shapes(tmp_path, monkeypatch):
    """A rectangle's file serves its transpose too: a 3x4 board and then a 4x3 one load
    the directory once (each loaded it for its own shape: a file mapped, and checked when
    it has no stamp, twice)."""
    from pdbtool import selection
    from pdbtool.geometry import Shape
    from pdbtool.heuristics.table_free import table_free

    calls = []

    def loaded(directory, reflect=True, shapes=None):
        calls.append(shapes)
        return selection.TableSet({s: table_free("manhattan", s) for s in shapes})

    monkeypatch.setattr(selection, "load_directory", loaded)
    solvers = selection.Solvers(directory=tmp_path)
    assert solvers.for_shape(Shape(3, 4)).shape == Shape(3, 4)
    assert solvers.for_shape(Shape(4, 3)).shape == Shape(4, 3)
    assert calls == [{Shape(3, 4), Shape(4, 3)}], calls


def test_a_refused_table_is_refused_for_every_later_board_without_loading_again(tmp_path,
                                                                               monkeypatch):
    """A batch's boards against a damaged table: each is refused as the first was, and the
    table's checks (seconds to minutes) ran once, not once a line."""
    from pdbtool import selection
    from pdbtool.errors import ArtifactError

    loads = []

    def refused(directory, reflect=True, shapes=None):
        loads.append(directory)
        raise ArtifactError(f"{directory}/a.h5: check checksums failed")

    monkeypatch.setattr(selection, "load_directory", refused)
    solvers = selection.Solvers(directory=tmp_path)
    for _ in range(3):
        with pytest.raises(ArtifactError, match="check checksums failed"):
            solvers.for_shape(4)
    assert loads == [tmp_path]


def test_what_an_app_passes_for_shapes_is_read_or_refused_in_words(art_dir, tmp_path):
    """load_directory's ``shapes``: one shape alone is that shape ("3x3" was read as the
    shapes '3', 'x' and '3'; 3 raised TypeError); a shape below 2 is refused by Solvers and
    table_free at once (not at the first solve); a board of another size says both counts,
    not that a rectangle needs its shape; a checkpoint's bad interval or name is BadInput."""
    from pdbtool.search.checkpoint import Checkpointing

    for one in (3, "3x3", Shape(3, 3), (3, 3)):  # a pair is one shape, as as_shape reads it
        assert load_directory(art_dir, shapes=one).shapes == [Shape(3, 3)]
    assert load_directory(art_dir, shapes=[3, (4, 4)]).shapes == [Shape(3, 3), Shape(4, 4)]
    with pytest.raises(BadInput, match="shapes is a list of shapes"):
        load_directory(art_dir, shapes=3.5)
    with pytest.raises(BadInput, match="board side 1 is not supported"):
        Solvers(heuristic="manhattan").for_shape(1)
    with pytest.raises(BadInput, match="a 1x1 board is not supported"):
        table_free("manhattan", 1)
    for blank in (9, -1, 3.5, "0"):  # (9: an IndexError; -1 wrapped to the last cell)
        with pytest.raises(BadInput, match=r"goal_blank is the goal's blank cell: 0 to 8 on a "
                           r"3x3 board, not"):
            table_free("manhattan", 3, blank)
    import pdbtool  # the errors the README names are the package's
    assert pdbtool.BadInput is BadInput and issubclass(pdbtool.LimitReached, pdbtool.PdbError)
    with pytest.raises(BadInput, match=r"board is 8 tiles but .* serves 2x3 boards \(6 tiles\)"):
        Solver(table_free("manhattan", (2, 3))).solve([1, 2, 3, 4, 5, 6, 7, 0])
    with pytest.raises(BadInput, match="a board is a sequence of whole numbers, its rows in one"):
        Solver(table_free("manhattan", 3)).solve([[1, 2, 3], [4, 5, 6], [7, 0, 8]])
    for every in ("a", 0, True, None):
        with pytest.raises(BadInput, match="interval .* must be a positive number of seconds"):
            Checkpointing(tmp_path / "c.json", every=every)
    with pytest.raises(BadInput, match="give its name, not None"):
        Checkpointing(None)
