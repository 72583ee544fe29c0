"""pack / unpack / install: the zstd shipping form round-trips exactly and refuses damage."""

import os
import stat

import re

import h5py
import numpy as np
import pytest

from pdbtool.errors import ArtifactError, BadInput, WrongForm
from pdbtool.loading import install
from pdbtool.tables import seal, trust
from pdbtool.tables.artifact import (FORMAT_VERSION, ZSTD_FILTER, GroupInfo, TableData, open_tables,
                                     read_meta, read_packed_meta, write_artifact)
from pdbtool.tables.packing import pack, unpack
from pdbtool.verification import verify
from reference import flip_byte

CHUNK = 8192  # small, so the tables span many chunks; the total is not a multiple


def make_installed(path, sizes=(5000, 70001)):
    """An artifact of random bytes (sizes in bytes: two 4-bit entries each)."""
    rng = np.random.default_rng(7)
    tables = [TableData(f"t{i}", range(1 + 4 * i, 5 + 4 * i), 16, 2 * n,
                        rng.integers(0, 256, n, dtype=np.uint8), (1, 2), 0)
              for i, n in enumerate(sizes)]
    groups = [GroupInfo(t.tiles, i, range(16), 0) for i, t in enumerate(tables)]
    return write_artifact(path, partition="15/4-4", size=4, goal="blank-first", zero_aware=True,
                          tables=tables, groups=groups, build={"seconds": 0.1},
                          builder_version="test")


@pytest.fixture
def packed(tmp_path):
    src = tmp_path / "15-4-4.h5"
    make_installed(src)
    dst = tmp_path / "15-4-4.pdbpack"
    pack(src, dst, chunk_bytes=CHUNK, threads=3)
    return src, dst


def chunk_location(path, index):
    with h5py.File(path, "r") as f:
        info = f["tables"].id.get_chunk_info_by_coord((index * CHUNK,))
    return info.byte_offset, info.size


def test_round_trip_is_exact(tmp_path):
    src, dst, back = tmp_path / "a.h5", tmp_path / "a.pdbpack", tmp_path / "b.h5"
    original = make_installed(src)
    stats = pack(src, dst, chunk_bytes=CHUNK, threads=3)
    assert stats["raw_bytes"] == original.data_length == 75001
    assert stats["chunks"] == 10 and stats["chunk_bytes"] == CHUNK
    assert stats["packed_bytes"] == os.path.getsize(dst) < original.file_size

    meta = unpack(dst, back, threads=2)
    assert meta.form == "installed" and meta.path == str(back)
    assert meta.version == original.version and meta.tables == original.tables
    _, a = open_tables(src)
    _, b = open_tables(back)
    assert np.array_equal(a, b)
    # Same attributes, same layout: the installed file comes back byte for byte.
    assert src.read_bytes() == back.read_bytes()


def test_pack_and_unpack_report_their_bytes_as_they_go(tmp_path, capsys, monkeypatch, art_dir):
    """pack and unpack said nothing until they ended (two minutes for a 12-cell table on a
    busy machine); their progress(done, total) is called after each chunk, and the
    command's line comes once a second has passed (here at once)."""
    from pdbtool.cli import tables as cli_tables
    from pdbtool.cli.main import main

    src, dst, back = tmp_path / "a.h5", tmp_path / "a.pdbpack", tmp_path / "b.h5"
    make_installed(src)
    said = {"pack": [], "unpack": []}
    pack(src, dst, chunk_bytes=CHUNK, progress=lambda d, t: said["pack"].append((d, t)))
    unpack(dst, back, progress=lambda d, t: said["unpack"].append((d, t)))
    for steps in said.values():
        assert len(steps) == 10 and steps[-1] == (75001, 75001)
        assert [d for d, _ in steps] == sorted(d for d, _ in steps)
    made = cli_tables.bytes_progress
    monkeypatch.setattr(cli_tables, "bytes_progress", lambda label: made(label, after=0))
    capsys.readouterr()
    table = art_dir / "8-full.h5"
    assert main(["pack", str(table), "-o", str(tmp_path / "c.pdbpack")]) == 0
    assert f"packing {table}: 100.0% " in capsys.readouterr().err
    assert main(["unpack", str(tmp_path / "c.pdbpack"), "-o", str(tmp_path / "8-full.h5")]) == 0
    assert f"unpacking {tmp_path / 'c.pdbpack'}: 100.0% " in capsys.readouterr().err


def test_packed_layout(packed):
    src, dst = packed
    meta = read_packed_meta(dst)
    assert meta.form == "packed" and meta.data_offset is None
    assert meta.version == read_meta(src).version
    with h5py.File(dst, "r") as f:
        ds = f["tables"]
        plist = ds.id.get_create_plist()
        assert plist.get_layout() == h5py.h5d.CHUNKED and ds.chunks == (CHUNK,)
        assert plist.get_filter(0)[0] == ZSTD_FILTER
        assert ds.id.get_num_chunks() == 10


def test_thread_count_does_not_change_the_file(tmp_path, packed):
    src, dst = packed
    other = tmp_path / "one.pdbpack"
    pack(src, other, chunk_bytes=CHUNK, threads=1)
    assert other.read_bytes() == dst.read_bytes()


def test_single_chunk_and_one_byte_tables(tmp_path):
    src, dst, back = tmp_path / "a.h5", tmp_path / "a.pdbpack", tmp_path / "b.h5"
    make_installed(src, sizes=(1, 3))
    assert pack(src, dst)["chunks"] == 1  # the chunk shrinks to the data
    unpack(dst, back)
    assert src.read_bytes() == back.read_bytes()


def test_other_hdf5_tools_read_the_packed_file(packed):
    """HDF5 itself decodes the packed chunks through its zstd filter plugin (hdf5plugin, a
    test dependency), as any HDF5 tool with that plugin does: not pdbtool's unpack."""
    import hdf5plugin  # noqa: F401  (importing it registers the zstd filter with HDF5)

    src, dst = packed
    with h5py.File(src, "r") as a, h5py.File(dst, "r") as b:
        assert np.array_equal(a["tables"][:], b["tables"][:])


def test_flipped_byte_in_a_chunk_is_refused(tmp_path, packed):
    _, dst = packed
    offset, size = chunk_location(dst, 3)
    flip_byte(dst, offset + size // 2)
    with pytest.raises(ArtifactError, match=r"15-4-4\.pdbpack: its bytes do not match its seal"):
        unpack(dst, tmp_path / "out.h5")
    seal.reseal(dst)  # the damage sealed in (a forger's): the chunk's own checksum finds it
    with pytest.raises(ArtifactError, match=r"15-4-4\.pdbpack: chunk 3 "):
        unpack(dst, tmp_path / "out.h5")


def test_truncated_packed_file_is_refused(tmp_path, packed):
    _, dst = packed
    os.truncate(dst, os.path.getsize(dst) - 1000)
    with pytest.raises(ArtifactError, match=r"15-4-4\.pdbpack: .*truncated"):
        unpack(dst, tmp_path / "out.h5")


def test_corrupted_source_is_not_packed(tmp_path):
    src, dst = tmp_path / "a.h5", tmp_path / "a.pdbpack"
    meta = make_installed(src)
    flip_byte(src, meta.data_offset + 6000)
    with pytest.raises(ArtifactError, match=r"a\.h5: table 't1' checksum mismatch"):
        pack(src, dst, chunk_bytes=CHUNK)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.h5"]


def test_unknown_format_version_is_refused(tmp_path, packed):
    _, dst = packed
    with h5py.File(dst, "r+") as f:
        f.attrs["format_version"] = 7
    seal.reseal(dst)
    with pytest.raises(ArtifactError,
                       match=rf"pdbpack: format version 7, this pdbtool reads {FORMAT_VERSION}"):
        unpack(dst, tmp_path / "out.h5")


def test_wrong_forms_are_refused(tmp_path, packed):
    src, dst = packed
    with pytest.raises(WrongForm, match=r"15-4-4\.h5 is an installed table, not a packed one: "
                                        r"nothing to unpack \(pdbtool verify .*15-4-4\.h5"):
        unpack(src, tmp_path / "out.h5")
    with pytest.raises(WrongForm, match=r"pdbpack is a packed table: unpack it first "
                                        r"\(pdbtool unpack .*15-4-4\.pdbpack -o TABLE\.h5\)"):
        open_tables(dst)
    with pytest.raises(WrongForm, match=r"pdbpack is a packed table"):
        pack(dst, tmp_path / "again.pdbpack")
    with pytest.raises(WrongForm, match=r"pdbpack is a packed table"):
        verify(dst)  # no check failed: the wrong command was run
    assert WrongForm.exit_code == 2


def test_a_pack_or_a_table_is_never_written_to_a_file_named_dash(tmp_path, packed, monkeypatch):
    """pack -o - wrote a file named '-' (standard output was meant)."""
    src, dst = packed
    monkeypatch.chdir(tmp_path)
    with pytest.raises(BadInput, match="not standard output"):
        pack(src, "-")
    with pytest.raises(BadInput, match="not standard output"):
        unpack(dst, "-")
    assert not (tmp_path / "-").exists()


def test_a_stamp_given_as_a_table_names_its_table(tmp_path, packed):
    """A table's .verified stamp given where a table is wanted is the user's slip (exit 2),
    said as such: it was "not an HDF5 file", exit 1 as for a damaged table, and verify
    reported a failed check."""
    src, _ = packed
    stamp = trust.stamp_path(src)
    stamp.write_text("{}")  # what is in it does not matter: the name says whose it is
    for use in (read_meta, open_tables, verify, lambda p: pack(p, tmp_path / "x.pdbpack"),
                lambda p: unpack(p, tmp_path / "x.h5")):
        with pytest.raises(WrongForm, match=rf"the verification stamp of the table {re.escape(str(src))}, "
                                            r"not a table or a pack$"):
            use(stamp)


def test_a_pack_is_told_by_its_first_bytes_before_it_is_hashed(tmp_path, packed, monkeypatch):
    """A pack given where a table is wanted is said at once, from its seal's first line,
    not after hashing all of it (gigabytes for 24/small); a file without a seal by its
    form attribute."""
    src, dst = packed
    monkeypatch.setattr(seal, "_digest", lambda *a: pytest.fail("hashed"))
    with pytest.raises(WrongForm, match="is a packed table"):
        read_meta(dst)
    with pytest.raises(WrongForm, match="is an installed table"):
        read_packed_meta(src)
    monkeypatch.undo()
    old = tmp_path / "old.pdbpack"
    with monkeypatch.context() as m:  # a pack as pdbtool wrote them before seals
        m.setattr(seal, "SEAL_BYTES", 0)
        m.setattr(seal, "write", lambda *args: None)
        m.setattr(seal, "check", lambda path: None)
        pack(src, old, chunk_bytes=CHUNK)
    assert old.read_bytes().startswith(seal.HDF5_SIGNATURE)
    with pytest.raises(WrongForm, match="old.pdbpack is a packed table"):
        read_meta(old)


def test_failed_unpack_leaves_nothing_behind(tmp_path, packed):
    _, dst = packed
    out = tmp_path / "out.h5"
    last, size = chunk_location(dst, 9)
    flip_byte(dst, last + size - 2)  # late damage: most of the output is already written
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(ArtifactError):
        unpack(dst, out)
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert not out.exists()
    out.write_bytes(b"previous install")  # an existing install survives a failed update
    with pytest.raises(ArtifactError):
        unpack(dst, out, force=True)
    assert out.read_bytes() == b"previous install"
    assert not any(p.name.endswith(".partial") for p in tmp_path.iterdir())


def test_install_verifies_before_taking_the_name(tmp_path, packed, art_dir):
    # Random tables pass their checksums but not verify: nothing is installed.
    _, dst = packed
    out = tmp_path / "installed" / "15-4-4.h5"
    out.parent.mkdir()
    with pytest.raises(ArtifactError, match=r"pdbpack: unpacked tables fail check"):
        install(dst, out)
    assert list(out.parent.iterdir()) == []
    # A real table is unpacked, verified, renamed and stamped.
    real = tmp_path / "8-full.pdbpack"
    pack(art_dir / "8-full.h5", real)
    report = install(real, out.parent / "8-full.h5")
    assert report.ok and report.meta.path == str(out.parent / "8-full.h5")
    assert trust.is_recorded(report.meta)
    assert sorted(p.name for p in out.parent.iterdir()) == ["8-full.h5", "8-full.h5.verified"]


def test_an_install_that_cannot_be_written_names_the_file_asked_for(tmp_path, packed,
                                                                    monkeypatch):
    """A disk full named the staging file (small/y.h5.20969.unverified), not the output."""
    from pdbtool import loading

    def disk_full(src, staging, **kw):
        raise ArtifactError(f"{staging}: cannot write it (No space left on device); nothing "
                            f"was left at {staging}")

    monkeypatch.setattr(loading, "unpack", disk_full)
    out = tmp_path / "y.h5"
    with pytest.raises(ArtifactError) as refused:
        install(packed[1], out)
    assert str(refused.value) == (f"{out}: cannot write it (No space left on device); nothing "
                                  f"was left at {out}")
    # its kind kept: a source that is no file is bad input (exit 2), as before
    from pdbtool.errors import NotAFile

    def no_file(src, staging, **kw):
        raise NotAFile(f"{src}: no such file")

    monkeypatch.setattr(loading, "unpack", no_file)
    with pytest.raises(NotAFile) as refused:
        install(tmp_path / "missing.pdbpack", out)
    assert refused.value.exit_code == 2


# -- issue 13: no data loss -----------------------------------------------------------------

def test_existing_outputs_are_replaced_only_with_force(tmp_path, packed):
    src, dst = packed
    before = dst.read_bytes()
    with pytest.raises(BadInput, match="exists: give --force"):
        pack(src, dst, chunk_bytes=CHUNK)
    assert dst.read_bytes() == before
    pack(src, dst, chunk_bytes=CHUNK * 2, force=True)
    assert dst.read_bytes() != before
    out = tmp_path / "installed.h5"
    out.write_bytes(b"someone's file")
    for fn in (unpack, install):
        with pytest.raises(BadInput, match="exists"):
            fn(dst, out)
        assert out.read_bytes() == b"someone's file"
    unpack(dst, out, force=True)
    assert read_meta(out).version == read_meta(src).version


def test_never_onto_the_input(tmp_path, packed):
    src, dst = packed
    link = tmp_path / "link.pdbpack"
    os.link(dst, link)
    for fn, a, b in ((pack, src, src), (unpack, dst, dst), (install, dst, dst), (unpack, dst, link)):
        before = b.read_bytes()
        with pytest.raises(BadInput, match="is the input"):
            fn(a, b, force=True)
        assert b.read_bytes() == before


def test_never_replaces_a_non_regular_file(tmp_path, packed):
    src, dst = packed
    fifo = tmp_path / "fifo.h5"
    os.mkfifo(fifo)
    targets = [fifo]
    if os.geteuid() == 0:  # a /dev/null of our own
        null = tmp_path / "null"
        os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        targets.append(null)
    link = tmp_path / "elsewhere.h5"
    link.symlink_to(tmp_path / "missing.h5")
    targets.append(link)
    for target in targets:
        mode = os.lstat(target).st_mode
        for fn, a in ((pack, src), (unpack, dst), (install, dst)):
            with pytest.raises(BadInput, match="refusing to replace"):
                fn(a, target, force=True)
            assert os.lstat(target).st_mode == mode
    from pdbtool.tables.builder import build
    with pytest.raises(BadInput, match="refusing to replace"):
        os.mkfifo(tmp_path / "8-full.h5")
        build("8/full", tmp_path, progress=False)


@pytest.mark.process
def test_stale_partial_files_are_removed(tmp_path, packed):
    import subprocess
    import sys

    src, dst = packed
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    stale = [tmp_path / f"{dst.name}.{gone}.partial",
             tmp_path / f"x.h5.{gone}.unverified", tmp_path / f"x.h5.{gone}.unverified.{gone}.partial"]
    alive = tmp_path / f"{dst.name}.1.partial"  # pid 1 is alive: not ours to remove
    for p in (*stale, alive):
        p.write_bytes(b"left by a killed run")
    pack(src, dst, chunk_bytes=CHUNK, force=True)
    with pytest.raises(ArtifactError, match="fail check"):  # random tables: cleaned up first
        install(dst, tmp_path / "x.h5")
    assert not any(p.exists() for p in stale) and alive.exists()


def test_a_private_directory_refuses_one_it_does_not_own_alone(tmp_path):
    """The cluster's table cache in the shared temporary directory: another user who made it
    first (or a link planted there) could feed root's nodes tables or writes."""
    import os

    from pdbtool.errors import ArtifactError
    from pdbtool.tables.files import private_directory

    made = private_directory(tmp_path / "cache")
    assert made.is_dir() and (made.stat().st_mode & 0o777) == 0o700
    assert private_directory(made) == made  # already there and private: taken as it is
    open_one = tmp_path / "open"
    open_one.mkdir(mode=0o777)
    os.chmod(open_one, 0o777)
    with pytest.raises(ArtifactError, match="open to other users"):
        private_directory(open_one)
    (tmp_path / "link").symlink_to(made)
    with pytest.raises(ArtifactError, match="symbolic link"):
        private_directory(tmp_path / "link")
    (tmp_path / "file").write_text("")
    with pytest.raises(ArtifactError, match="not a directory"):
        private_directory(tmp_path / "file")


def test_an_interrupted_pack_stops_its_compressors_within_a_step(tmp_path, monkeypatch):
    """Ctrl-C during a pack (a KeyboardInterrupt in the thread that writes the chunks)
    ends it within a step of each compressing thread: they compressed their chunks whole
    first, seconds each at high levels (11 s for a 12 MB table at level 19). Counted in
    bytes compressed after the interrupt: within a few steps a thread."""
    import threading

    import zstandard

    from pdbtool.tables import packing

    src = tmp_path / "big.h5"
    make_installed(src, sizes=(4 << 20, 4 << 20))
    monkeypatch.setattr(packing, "STEP", 64 << 10)
    interrupted, after, lock = threading.Event(), [0], threading.Lock()

    def note(n):
        if interrupted.is_set():
            with lock:
                after[0] += n

    class Frame:
        def __init__(self, real):
            self.real = real

        def compress(self, data):
            out = self.real.compress(data)
            note(len(data))
            return out

        def flush(self):
            return self.real.flush()

    real_compressor = zstandard.ZstdCompressor

    class Compressor:  # zstandard's, counting what it compresses
        def __init__(self, **kw):
            self.real = real_compressor(**kw)

        def compress(self, data):
            out = self.real.compress(data)
            note(len(data))
            return out

        def compressobj(self, size=-1):
            return Frame(self.real.compressobj(size=size))

    def ctrl_c(self, buf):
        interrupted.set()
        raise KeyboardInterrupt

    monkeypatch.setattr(packing.zstandard, "ZstdCompressor", Compressor)
    monkeypatch.setattr(packing._TableHasher, "update", ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        pack(src, tmp_path / "big.pdbpack", chunk_bytes=1 << 20, threads=2, level=19)
    assert after[0] <= 4 * 2 * packing.STEP, after  # (whole chunks: up to 2 MiB)
    assert not (tmp_path / "big.pdbpack").exists()


def test_a_source_truncated_while_packed_is_refused_without_a_fault(tmp_path):
    """A source truncated as the pack reads it (the writer's open breaks the pack's read
    lease: the mapping becomes zero pages first) is refused by name, nothing written; the
    pack died of SIGBUS. In a child: the old failure kills its process."""
    import subprocess
    import sys

    src, dst = tmp_path / "a.h5", tmp_path / "a.pdbpack"
    make_installed(src, sizes=(300_000, 300_000))
    child = f"""
import sys
sys.path.insert(0, {os.path.dirname(__file__)!r})
from pdbtool.errors import ArtifactError
from pdbtool.tables import packing
real, seen = packing._TableHasher.update, []
def update(self, buf):  # the second chunk: the file truncated to half, as the pack reads it
    seen.append(1)
    if len(seen) == 2:  # by another process: this one's main thread runs the lease's handler,
        import subprocess, time  # so it waits in short sleeps, never blocked in a call
        writer = subprocess.Popen([sys.executable, "-c", "import os, sys; "
                                   "os.truncate(sys.argv[1], int(sys.argv[2]))",
                                   {str(src)!r}, "{os.path.getsize(src) // 2}"])
        while writer.poll() is None:
            time.sleep(0.005)
    return real(self, buf)
packing._TableHasher.update = update
try:
    packing.pack({str(src)!r}, {str(dst)!r}, chunk_bytes={CHUNK}, threads=1)
except ArtifactError as e:
    print("refused:", e)
"""
    p = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, (p.returncode, p.stderr[-2000:])
    assert "opened for writing by another process while being packed" in p.stdout
    assert sorted(x.name for x in tmp_path.iterdir()) == ["a.h5"]  # no pack, no partial


def test_a_pack_never_replaces_an_installed_table_even_with_force(tmp_path, packed):
    """`pdbtool pack a.h5 -o artifacts/b.h5 --force` replaced an installed table with a pack:
    every later solve in that directory was refused ("is a packed file"). An older pack is
    replaced with --force as before."""
    src, old_pack = packed
    other = tmp_path / "other.h5"
    make_installed(other, sizes=(100, 200))
    before = other.read_bytes()
    with pytest.raises(BadInput, match="is an installed table: refusing to replace it with a pack"):
        pack(src, other, chunk_bytes=CHUNK, force=True)
    assert other.read_bytes() == before
    pack(src, old_pack, chunk_bytes=CHUNK, force=True)
    assert read_packed_meta(old_pack).form == "packed"


def test_a_pack_is_never_named_h5(tmp_path, packed):
    """`pdbtool pack a.h5 -o elsewhere/p.h5` wrote a pack that every later solve or pdbd serve
    of that directory refused ("is a packed table: unpack it first"), its tables too."""
    src, _ = packed
    dst = tmp_path / "elsewhere" / "p.h5"
    dst.parent.mkdir()
    with pytest.raises(BadInput, match=r"p\.h5: a pack is not named \.h5 .* ending \.pdbpack"):
        pack(src, dst, chunk_bytes=CHUNK)
    assert list(dst.parent.iterdir()) == []
