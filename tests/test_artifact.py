"""The installed HDF5 artifact: round trips, mapping, versions, refusals."""

import json
import os

import h5py
import numpy as np
import pytest

from pdbtool.errors import ArtifactError
from pdbtool.kernels.ranking import UNSET
from pdbtool.tables import artifact, seal
from pdbtool.tables.artifact import (FORMAT_VERSION, GroupInfo, TableData, artifact_filename,
                                     find_artifacts, open_tables, read_meta, table_checksums_ok,
                                     write_artifact)
from pdbtool.tables.files import atomic_output
from reference import flip_byte


def make_tables(seed=0, entries=(10000, 140001)):
    """Two tables of random 4-bit entries (the artifact stores bytes; it does not decode)."""
    rng = np.random.default_rng(seed)
    small = rng.integers(0, 256, (entries[0] + 1) // 2, dtype=np.uint8)
    big = rng.integers(0, 256, (entries[1] + 1) // 2, dtype=np.uint8)
    return [TableData("g7", range(1, 8), 16, entries[0], small, (1, 5, 9), 0),
            TableData("g8", range(8, 16), 16, entries[1], big, (1, 2, 3, 4), 71)]


GROUPS = [GroupInfo(range(1, 8), 0, range(16), 0), GroupInfo(range(8, 16), 1, range(16), 0)]


def write(path, tables=None, build=None):
    return write_artifact(path, partition="15/7-8", size=4, goal="blank-first", zero_aware=True,
                          tables=tables or make_tables(), groups=GROUPS,
                          build=build or {"seconds": 1.5, "workers": 2},
                          builder_version="0.1.0")


def test_round_trip(tmp_path):
    tables = make_tables()
    path = tmp_path / "15-7-8.h5"
    written = write(path, tables)
    meta = read_meta(path)
    assert meta == written
    assert (meta.format_version, meta.form, meta.partition) == (FORMAT_VERSION, "installed",
                                                               "15/7-8")
    assert (meta.size, meta.goal, meta.rank_scheme, meta.rank_version) == (
        4, "blank-first", "lexicographic+regions", 3)
    assert meta.zero_aware and meta.encoding == "md-nibble"
    assert meta.builder_version == "0.1.0"
    assert meta.build == {"seconds": 1.5, "workers": 2}
    assert [t.name for t in meta.tables] == ["g7", "g8"]
    assert meta.tables[1].tiles == tuple(range(8, 16))
    assert meta.tables[1].offset == 5000
    assert meta.total_entries == 150001 and meta.total_bytes == meta.data_length == 75001
    assert meta.groups[1] == artifact.GroupInfo(tuple(range(8, 16)), 1, tuple(range(16)), 0)
    assert meta.file_size == os.path.getsize(path)
    json.dumps(meta.to_dict())  # --json output must serialise

    meta, data = open_tables(path)
    for t, info in zip(tables, meta.tables):
        assert np.array_equal(artifact.table_view(data, info), t.packed)
        assert (info.histogram, info.unset) == (t.histogram, t.unset)


def test_value_histogram_counts_distances_and_unset():
    rng = np.random.default_rng(3)
    dist = rng.integers(0, 40, 70001, dtype=np.uint8)
    dist[::1000] = UNSET
    counts = np.bincount(dist, minlength=256)
    top = max(v for v in range(UNSET) if counts[v])
    assert artifact.value_histogram(dist) == (tuple(counts[:top + 1]), 71)


def test_data_is_aligned_and_mapped_read_only(tmp_path):
    tables = make_tables()
    meta, data = open_tables(write(tmp_path / "a.h5", tables).path)
    assert meta.data_offset % 4096 == 0
    with h5py.File(meta.path, "r") as f:
        plist = f["tables"].id.get_create_plist()
        assert plist.get_layout() == h5py.h5d.CONTIGUOUS
        assert f["tables"].id.get_offset() == meta.data_offset
        assert np.array_equal(f["tables"][:], data)
    assert isinstance(data, np.memmap) and not data.flags.writeable
    assert np.array_equal(data, np.concatenate([t.packed for t in tables]))


def test_equal_tables_give_equal_files_and_version(tmp_path):
    a = write(tmp_path / "a.h5")
    b = write(tmp_path / "b.h5")
    assert a.version == b.version and len(a.version) == 12
    assert (tmp_path / "a.h5").read_bytes() == (tmp_path / "b.h5").read_bytes()
    # How it was built is not content: the version stays.
    assert write(tmp_path / "c.h5", build={"seconds": 99}).version == a.version


def test_one_changed_byte_changes_version(tmp_path):
    tables = make_tables()
    a = write(tmp_path / "a.h5", tables)
    big = tables[1].packed
    big[12345] ^= 1
    b = write(tmp_path / "b.h5", tables)
    assert a.version != b.version
    assert a.tables[0].sha256 == b.tables[0].sha256
    assert a.tables[1].sha256 != b.tables[1].sha256


def test_flipped_byte_is_refused_naming_the_table(tmp_path):
    path = tmp_path / "15-7-8.h5"
    meta = write(path)
    flip_byte(path, meta.data_offset + meta.tables[1].offset + 777)
    with pytest.raises(ArtifactError, match=r"15-7-8\.h5: table 'g8' checksum mismatch"):
        open_tables(path)
    meta, data = open_tables(path, verify=False)  # mapping alone does not hash
    assert table_checksums_ok(meta, data) == [("g7", True), ("g8", False)]


@pytest.mark.parametrize("keep", ["half_data", "header_only"])
def test_truncated_file_is_refused(tmp_path, keep):
    path = tmp_path / "a.h5"
    meta = write(path)
    size = meta.data_offset + meta.data_length // 2 if keep == "half_data" else 2048
    os.truncate(path, size)
    with pytest.raises(ArtifactError, match=r"a\.h5: .*truncated"):
        open_tables(path)


DELETE = object()


@pytest.mark.parametrize("key, value, reader, message", [
    ("format_version", 7, read_meta, rf"format version 7, this pdbtool reads {FORMAT_VERSION}"),
    ("format_version", 1, read_meta, r"format version 1 .* rebuild it with `pdbtool build 15/7-8`"),
    ("format_version", 2, read_meta, r"format version 2 .*map x order.* rebuild it with `pdbtool "
                                     r"build 15/7-8`"),
    ("groups", DELETE, read_meta, r"missing attribute.*groups"),
    ("goal", "blank-last", read_meta, r"version attribute"),  # would misread every table
], ids=["unknown format version", "format 1", "format 2", "missing attribute", "tampered metadata"])
def test_damaged_attributes_are_refused(tmp_path, key, value, reader, message):
    path = tmp_path / "a.h5"
    write(path)
    with h5py.File(path, "r+") as f:
        if value is DELETE:
            del f.attrs[key]
        else:
            f.attrs[key] = value
    seal.reseal(path)  # edited as a forger would, seal and all: the reader's own checks speak
    with pytest.raises(ArtifactError, match=r"a\.h5: " + message):
        reader(path)


def test_a_packed_form_attribute_under_an_installed_seal_is_refused(tmp_path):
    """The seal's first line says installed, the attribute packed (edited, seal and all):
    refused as a pack, by its attribute."""
    path = tmp_path / "a.h5"
    write(path)
    with h5py.File(path, "r+") as f:
        f.attrs["form"] = "packed"
    seal.reseal(path)
    with pytest.raises(ArtifactError, match=r"a\.h5 is a packed table: unpack it first"):
        open_tables(path)


def test_not_hdf5_and_missing_files_are_refused(tmp_path):
    junk = tmp_path / "junk.h5"
    junk.write_bytes(b"not an hdf5 file at all" * 100)
    with pytest.raises(ArtifactError, match=r"junk\.h5: not an HDF5 file"):
        read_meta(junk)
    with pytest.raises(ArtifactError, match=r"nope\.h5: no such file"):
        open_tables(tmp_path / "nope.h5")
    with h5py.File(tmp_path / "other.h5", "w") as f:
        f["x"] = np.arange(3)
    with pytest.raises(ArtifactError, match=r"other\.h5: missing attribute 'format_version'"):
        read_meta(tmp_path / "other.h5")


def test_bad_input_is_rejected_before_writing(tmp_path):
    tables = make_tables()
    with pytest.raises(ValueError, match="uint8"):
        write(tmp_path / "a.h5", [tables[0]._replace(packed=tables[0].packed.astype(np.int16)),
                                  tables[1]])
    with pytest.raises(ValueError, match="bytes for"):
        write(tmp_path / "a.h5", [tables[0]._replace(entries=3), tables[1]])
    with pytest.raises(ValueError, match="does not fit"):
        write_artifact(tmp_path / "a.h5", partition="15/7-8", size=4, goal="blank-first",
                       zero_aware=True, tables=tables,
                       groups=[GroupInfo(range(1, 8), 0, range(9), 0)], build={},
                       builder_version="0")
    assert list(tmp_path.iterdir()) == []


def test_atomic_output_leaves_nothing_on_failure(tmp_path):
    dst = tmp_path / "a.h5"
    dst.write_bytes(b"old")
    with pytest.raises(RuntimeError):
        with atomic_output(dst) as tmp:
            assert tmp.name.endswith(".partial") and tmp.parent == tmp_path
            tmp.write_bytes(b"half")
            raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == [dst] and dst.read_bytes() == b"old"
    with atomic_output(dst) as tmp:
        tmp.write_bytes(b"new")
    assert list(tmp_path.iterdir()) == [dst] and dst.read_bytes() == b"new"


def test_a_replaced_file_keeps_its_permissions(tmp_path):
    """A checkpoint made read-only (0444) came back 0644 at its next save."""
    import stat

    dst = tmp_path / "search.json"
    dst.write_text("old")
    for mode in (0o444, 0o600):
        os.chmod(dst, mode)
        with atomic_output(dst) as tmp:
            tmp.write_text("new")
        assert stat.S_IMODE(dst.stat().st_mode) == mode and dst.read_text() == "new"


def test_temporary_files_of_another_machine_are_judged_by_their_age(tmp_path):
    """A directory shared between machines (a cluster's, over NFS) or containers: a writer's
    temporary file was judged by its pid alone, asked of this machine, so another machine's
    live write was deleted under it. The name now carries the machine (host and pid
    namespace): another machine's is left alone until untouched for a day."""
    import time

    from pdbtool.tables.files import (LEFT_ELSEWHERE_SECONDS, machine_tag, partial_name,
                                      remove_stale_partials, writer_name)

    dst = tmp_path / "a.h5"
    here, gone = machine_tag(), 4_000_000  # (above any pid this machine has given)
    other = "0123abcd" if here != "0123abcd" else "fedc4321"
    assert partial_name(dst).name == f"a.h5.{os.getpid()}.{here}.partial"
    assert writer_name(dst, "unverified").name == f"a.h5.{os.getpid()}.{here}.unverified"
    fresh_elsewhere = tmp_path / f"a.h5.{gone}.{other}.partial"
    old_elsewhere = tmp_path / f"a.h5.{gone}.{other}.unverified"
    killed_here = [tmp_path / f"a.h5.{gone}.{here}.partial", tmp_path / f"a.h5.{gone}.partial",
                   tmp_path / f"a.h5.{gone}.{here}.unverified.{gone}.{here}.partial"]
    alive_here = tmp_path / f"a.h5.1.{here}.partial"
    for p in (fresh_elsewhere, old_elsewhere, *killed_here, alive_here):
        p.write_text("left")
    past = time.time() - LEFT_ELSEWHERE_SECONDS - 60
    os.utime(old_elsewhere, (past, past))
    removed = remove_stale_partials(dst)
    assert sorted(removed) == sorted([old_elsewhere, *killed_here])
    assert fresh_elsewhere.exists() and alive_here.exists()


def test_a_file_that_appears_while_it_is_written_is_kept_unless_replacing(tmp_path,
                                                                         monkeypatch):
    """`build` and `pack` checked an existing output only at their start: a file made at
    that name meanwhile (another build, by hand) was replaced without --force. Also where
    the file system has no hard links (a check, then the rename)."""
    from pdbtool.errors import BadInput

    dst = tmp_path / "a.h5"
    for links in (True, False):
        if not links:
            def no_link(*_):
                raise PermissionError(1, "Operation not permitted")
            monkeypatch.setattr("os.link", no_link)
        dst.unlink(missing_ok=True)
        with pytest.raises(BadInput, match="appeared while it was being written"):
            with atomic_output(dst, replace=False) as tmp:
                tmp.write_bytes(b"new")
                dst.write_bytes(b"theirs")
        assert list(tmp_path.iterdir()) == [dst] and dst.read_bytes() == b"theirs"
        dst.unlink()
        with atomic_output(dst, replace=False) as tmp:
            tmp.write_bytes(b"new")
        assert list(tmp_path.iterdir()) == [dst] and dst.read_bytes() == b"new"


def test_file_names(tmp_path):
    assert artifact_filename("15/7-8") == "15-7-8.h5"
    assert artifact_filename("24/6-6-6-6") == "24-6-6-6-6.h5"
    with pytest.raises(ValueError):
        artifact_filename("../x")
    for name in ("b.h5", "a.h5", "notes.txt"):
        (tmp_path / name).write_bytes(b"")
    assert find_artifacts(tmp_path) == [tmp_path / "a.h5", tmp_path / "b.h5"]


def test_a_read_only_file_system_is_said_as_such(tmp_path, monkeypatch):
    """The review's tmpfs mounted read-only: "Permission denied" was said (the directory's
    mode was never the problem). The reason is the system's, found by trying."""
    import errno

    from pdbtool.errors import ArtifactError
    from pdbtool.tables.files import check_directory

    real_open = os.open

    def read_only(path, *args):
        if str(path).startswith(str(tmp_path)):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        return real_open(path, *args)

    monkeypatch.setattr(os, "access", lambda *a, **k: False)
    monkeypatch.setattr(os, "open", read_only)
    with pytest.raises(ArtifactError, match=f"cannot write in {tmp_path}: Read-only file system"):
        check_directory(tmp_path)
