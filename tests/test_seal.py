"""The seal: an artifact's HDF5 metadata is checked against the digest in its user block
before HDF5 parses a byte of it (a damaged attribute heap hangs or crashes HDF5 itself)."""

import json
import os
import re

import h5py
import pytest

from pdbtool import loading
from pdbtool.errors import ArtifactError
from pdbtool.tables import artifact, seal, trust
from pdbtool.tables.artifact import open_tables, read_meta, read_packed_meta
from pdbtool.tables.packing import pack
from reference import flip_byte
from test_artifact import write

HEAP = b"GCOL"  # HDF5's global heap collection: the variable-length strings of the attributes


@pytest.fixture
def no_hdf5(monkeypatch):
    """Called once the file is written: from then on any h5py.File or is_hdf5 call fails
    the test (HDF5 must not open a file whose seal does not match)."""
    def refuse(*args, **kwargs):
        raise AssertionError("HDF5 opened a file whose seal does not match")

    def arm():
        monkeypatch.setattr(h5py, "File", refuse)
        monkeypatch.setattr(h5py, "is_hdf5", refuse)
    return arm


def heap_object_size(path) -> int:
    """The byte offset of the first global heap object's size field (its collection's
    16-byte header, then the object's index, count and reserved bytes): bits flipped here
    sent HDF5 into an endless loop in one file and a segmentation fault in another."""
    at = open(path, "rb").read().index(HEAP)
    return at + 16 + 8


def test_a_written_artifact_is_sealed_and_its_data_aligned(tmp_path):
    path = tmp_path / "a.h5"
    meta = write(path)
    assert meta.sealed and read_meta(path).sealed
    head = open(path, "rb").read(seal.SEAL_BYTES)
    assert head.startswith(seal.MAGIC)
    assert meta.data_offset % artifact.ALIGNMENT == 0 and meta.data_offset >= seal.SEAL_BYTES
    assert seal.check(path) == (os.path.getsize(path), meta.data_offset, meta.data_length,
                                seal.check(path).sha256)
    with h5py.File(path, "r") as f:  # HDF5 tools read it as before, past the user block
        assert f.userblock_size == seal.SEAL_BYTES and f.attrs["partition"] == "15/7-8"


def test_damage_to_the_attribute_heap_is_refused_before_hdf5_reads_it(tmp_path, no_hdf5):
    path = tmp_path / "a.h5"
    write(path)
    flip_byte(path, heap_object_size(path))
    no_hdf5()
    with pytest.raises(ArtifactError, match=r"a\.h5: its bytes do not match its seal .*"
                                            r"corrupted or was edited; refused before HDF5"):
        read_meta(path)


@pytest.mark.parametrize("where", ["superblock", "before the tables", "seal digest",
                                   "seal size"])
def test_any_byte_outside_the_tables_is_covered(tmp_path, where, no_hdf5):
    path = tmp_path / "a.h5"
    meta = write(path)
    head = open(path, "rb").read(seal.SEAL_BYTES)
    position = {"superblock": seal.SEAL_BYTES + 20, "before the tables": meta.data_offset - 1,
                "seal digest": head.index(b'"sha256":"') + 12,
                "seal size": head.index(b'"bytes":') + 8}[where]
    flip_byte(path, position)
    no_hdf5()
    with pytest.raises(ArtifactError, match=r"a\.h5: its (bytes do not match its seal|seal "
                                            r"\(the first 4096 bytes\) is damaged)") as e:
        read_meta(path)
    if "do not match" in str(e.value):  # the two digests shown whole, where they differ
        import re  # (their first 16 digits, the same for a flip late in the seal's digest)
        shown = re.findall(r"\b[0-9a-f]{64}\b", str(e.value))
        assert len(shown) == 2 and shown[0] != shown[1], str(e.value)


@pytest.mark.parametrize("offset", [-1, 500, 3000, seal.SEAL_BYTES - 1])
def test_a_byte_in_the_seal_s_padding_is_refused(tmp_path, offset, no_hdf5):
    """The block's zeros after the seal's line were covered by nothing: a file with a byte
    flipped there was verified and stamped, bit-different from what was written."""
    path = tmp_path / "a.h5"
    write(path)
    head = open(path, "rb").read(seal.SEAL_BYTES)
    flip_byte(path, head.index(b"\n", len(seal.MAGIC)) + 1 if offset < 0 else offset)
    no_hdf5()
    with pytest.raises(ArtifactError, match=r"a\.h5: the block of its seal \(the first 4096 "
                                            r"bytes\) holds bytes after the seal"):
        read_meta(path)


def test_a_truncated_or_extended_file_is_refused_by_its_size(tmp_path, no_hdf5):
    path = tmp_path / "a.h5"
    write(path)
    size = os.path.getsize(path)
    with open(path, "ab") as f:
        f.write(b"\0")
    no_hdf5()
    with pytest.raises(ArtifactError, match=rf"{size + 1:,} bytes where its seal says "
                                            rf"{size:,}: truncated, appended to or rewritten"):
        read_meta(path)
    os.truncate(path, size - 10)
    with pytest.raises(ArtifactError, match=r"truncated, appended to or rewritten"):
        open_tables(path)


def test_a_damaged_seal_magic_is_not_read_as_an_unsealed_file(tmp_path, no_hdf5):
    path = tmp_path / "a.h5"
    write(path)
    flip_byte(path, 3)
    no_hdf5()
    with pytest.raises(ArtifactError, match=r"a\.h5: not an HDF5 file \(no HDF5 signature at "
                                            r"its first byte, and no pdbtool seal\)"):
        read_meta(path)


def test_the_tables_themselves_are_left_to_their_checksums(tmp_path):
    path = tmp_path / "a.h5"
    meta = write(path)
    flip_byte(path, meta.data_offset + 7)
    assert read_meta(path).sealed  # the seal does not hash the tables: their sha256 does
    with pytest.raises(ArtifactError, match=r"table 'g7' checksum mismatch"):
        open_tables(path)


def write_unsealed(path, monkeypatch):
    """An artifact as pdbtool wrote them before seals."""
    with monkeypatch.context() as m:
        m.setattr(seal, "SEAL_BYTES", 0)
        m.setattr(seal, "write", lambda *args: None)
        m.setattr(seal, "check", lambda path: None)
        write(path)


def test_a_file_written_before_seals_is_read_as_before(tmp_path, monkeypatch):
    path = tmp_path / "a.h5"
    write_unsealed(path, monkeypatch)
    assert open(path, "rb").read(8) == seal.HDF5_SIGNATURE
    meta, _ = open_tables(path)
    assert not meta.sealed and meta.partition == "15/7-8"
    seal.reseal(path)  # nothing to rewrite
    assert open(path, "rb").read(8) == seal.HDF5_SIGNATURE


def test_a_packed_file_is_sealed_whole(tmp_path):
    src, dst = tmp_path / "a.h5", tmp_path / "a.pdbpack"
    write(src)
    pack(src, dst)
    assert read_packed_meta(dst).sealed
    flip_byte(dst, os.path.getsize(dst) // 2)  # inside a compressed chunk
    with pytest.raises(ArtifactError, match=r"a\.pdbpack: its bytes do not match its seal"):
        read_packed_meta(dst)


def test_either_form_is_read_with_one_pass_over_its_bytes(tmp_path, monkeypatch):
    """read_any_meta (pdbtool info, list) checks a seal once: a pack's covers the whole
    file, which was hashed twice (as an installed file, then as a pack)."""
    src, dst = tmp_path / "a.h5", tmp_path / "a.pdbpack"
    write(src)
    pack(src, dst)
    checks = []
    real = seal.check
    monkeypatch.setattr(seal, "check", lambda path: checks.append(path) or real(path))
    for path, form in ((src, artifact.INSTALLED), (dst, artifact.PACKED)):
        checks.clear()
        assert artifact.read_any_meta(path).form == form and len(checks) == 1


def test_hdf5_errors_on_a_damaged_unsealed_file_are_refusals(tmp_path, monkeypatch):
    """An unsealed file's damage reaches HDF5, whose errors come as RuntimeError, TypeError
    and others: each is an ArtifactError naming the file, never a traceback."""
    path = tmp_path / "a.h5"
    write(path)

    def broken(*args, **kwargs):
        raise TypeError("Unknown string encoding (value 3)")
    monkeypatch.setattr(h5py, "File", broken)
    monkeypatch.setattr(seal, "check", lambda p: None)
    with pytest.raises(ArtifactError, match=r"a\.h5: unreadable HDF5 file, truncated or "
                                            r"corrupted \(Unknown string encoding"):
        read_meta(path)
    with pytest.raises(ArtifactError, match=r"a\.h5: unreadable HDF5 file \(Unknown string"):
        artifact.read_attrs(path)


def test_pdbtool_seal_rewrites_a_file_from_before_seals_in_place(tmp_path, monkeypatch):
    path = tmp_path / "a.h5"
    write_unsealed(path, monkeypatch)
    before, old = open_tables(path)
    old_tables = bytes(old)
    trust.record(before)  # stamped: it is stamped again
    meta = loading.seal(path)
    assert meta.sealed and trust.is_recorded(meta)
    assert (meta.version, meta.tables, meta.groups) == (before.version, before.tables,
                                                        before.groups)
    assert bytes(open_tables(path)[1]) == old_tables
    with pytest.raises(ArtifactError, match=r"a\.h5: sealed already"):
        artifact.rewrite_sealed(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.h5", "a.h5.verified"]


def test_pdbtool_seal_refuses_damaged_tables_and_leaves_the_file(tmp_path, monkeypatch):
    path = tmp_path / "a.h5"
    write_unsealed(path, monkeypatch)
    flip_byte(path, read_meta(path).data_offset + 3)
    damaged = path.read_bytes()
    with pytest.raises(ArtifactError, match=r"table 'g7' checksum mismatch"):
        loading.seal(path)
    assert path.read_bytes() == damaged and [p.name for p in tmp_path.iterdir()] == ["a.h5"]


def test_the_seal_command(tmp_path, monkeypatch, capsys):
    from pdbtool.cli.main import main

    a, b = tmp_path / "a.h5", tmp_path / "b.h5"
    write_unsealed(a, monkeypatch)
    write(b)
    assert main(["list", str(tmp_path), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["artifacts"]
    assert [(r["path"], r["sealed"]) for r in rows] == [(str(a), False), (str(b), True)]
    assert main(["seal", str(a), str(b)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"sealed {a}: 15/7-8 version ") and "not stamped" in out[0]
    assert out[1] == f"{b}: sealed already"
    assert main(["seal", "--json", str(a)]) == 0
    d = json.loads(capsys.readouterr().out)  # "sealed" a boolean, as info and list give it
    assert (d["path"], d["sealed"], d["already"], d["partition"], d["stamped"]) == (
        str(a), True, True, "15/7-8", False)  # the keys of a file sealed now
    assert main(["info", str(a)]) == 0 and "metadata sealed" in capsys.readouterr().out
    # a file refused among them is said, and the ones after it are still done
    c, missing = tmp_path / "c.h5", tmp_path / "none.h5"
    write_unsealed(c, monkeypatch)
    assert main(["seal", str(missing), str(c)]) == 2
    captured = capsys.readouterr()
    assert "none.h5" in captured.err and captured.out.startswith(f"sealed {c}: "), captured


@pytest.mark.parametrize("child, said", [
    ("import os, signal; os.kill(os.getpid(), signal.SIGSEGV)", "crashed HDF5 (SIGSEGV)"),
    ("import time; time.sleep(60)", "did not end in 0.5 s")])
def test_an_unsealed_file_that_crashes_or_hangs_hdf5_is_refused(tmp_path, monkeypatch, child,
                                                                said):
    """A file without a seal is parsed in a child process first: HDF5 crashing (SIGSEGV)
    or hanging there is this file's refusal, not this process's end."""
    from pdbtool.tables import metadata

    path = tmp_path / "a.h5"
    write_unsealed(path, monkeypatch)
    monkeypatch.setattr(metadata, "CHILD", child)
    monkeypatch.setattr(metadata, "APART_SECONDS", 0.5)
    with pytest.raises(ArtifactError, match=rf"a\.h5: reading its metadata {re.escape(said)}: "
                                            r"the file is damaged \(written before seals"):
        read_meta(path)


def test_a_sealed_file_is_parsed_here_alone(tmp_path, monkeypatch):
    """Its seal checks the metadata before HDF5: no child process (it costs a Python)."""
    import subprocess

    path = tmp_path / "a.h5"
    write(path)
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: pytest.fail("a child parsed it"))
    assert read_meta(path).sealed


@pytest.mark.process
def test_a_damaged_unsealed_table_is_one_line_not_a_crash(art_dir, tmp_path):
    """The table review's file: 8/full rewritten without a seal (as h5py writes with its
    earliest format), one byte of its metadata changed; HDF5 died on it with SIGSEGV in
    verify, solve, list, pdbd serve and pdbtool seal alike. Whatever HDF5 does with it,
    the command ends with one line and exit 1."""
    import subprocess
    import sys

    import numpy as np

    path = tmp_path / "8-full.h5"
    with h5py.File(art_dir / "8-full.h5", "r") as f, h5py.File(path, "w", libver="earliest") as g:
        g.create_dataset("tables", data=np.asarray(f["tables"]))
        for key in f.attrs:
            g.attrs[key] = f.attrs[key]
    data = bytearray(path.read_bytes())
    data[1529] ^= 0x5A
    path.write_bytes(bytes(data))
    for command in (["verify", str(path)], ["seal", str(path)], ["list", str(tmp_path)]):
        p = subprocess.run([sys.executable, "-m", "pdbtool", *command], capture_output=True,
                           text=True, timeout=120)
        assert "Fatal Python error" not in p.stderr and "Traceback" not in p.stderr, p.stderr
        if command[0] == "list":  # the directory listed, the file with what is wrong
            assert p.returncode == 1 and "8-full.h5" in p.stdout and "damaged" in p.stdout
        else:
            assert p.returncode == 1, (command, p.stderr)
