"""A served table file's identity (issue 40): device, inode, size, mtime and the content,
not ctime. The rollout (copy, verify, rename over), chmod, ln and touch change nothing that
is served; a rewrite in place with other bytes is refused, with a read lease or without."""

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from pdbd.client import ServerUnavailable, SolverClient
from pdbd.server import reload_tables
from pdbtool.errors import ArtifactError
from pdbtool.loading import open_trusted
from pdbtool.search.control import SearchControl
from pdbtool.selection import load_directory
from pdbtool.tables import artifact, lease, trust
from serving import EASY8, EASY15, held_for_writing, running_daemon, wait_for

PDBTOOL = str(Path(sys.executable).with_name("pdbtool"))


def _serving(pin) -> bool:
    try:
        pin.check()
        return True
    except trust.TableChanged:
        return False


def _flip_a_table_byte(path) -> None:
    """Rewrite one byte of the table data in place (same size, other content)."""
    meta = artifact.read_meta(path)
    with open(path, "r+b") as f:
        f.seek(meta.data_offset + 100)
        b = f.read(1)
        f.seek(meta.data_offset + 100)
        f.write(bytes([b[0] ^ 0x01]))


@pytest.mark.parametrize("leased", [True, False], ids=["lease", "no-lease"])
def test_metadata_changes_and_a_rename_over_are_harmless(served_dir, monkeypatch, leased):
    if not leased:
        monkeypatch.setattr(lease, "hold", lambda *a: "leases off for this test")
    path = served_dir / "8-full.h5"
    opened = open_trusted(path)
    pin = opened.pin
    assert (pin.unleased is None) == leased
    try:
        os.chmod(path, 0o640)
        os.link(path, served_dir / "hard-link")
        pin.check()
        subprocess.run(["touch", str(path)], check=True)  # opens it for writing: breaks a lease
        assert wait_for(lambda: _serving(pin), 15)
        os.utime(path, (1, 1))  # the mtime set anywhere, the bytes the same
        assert wait_for(lambda: _serving(pin), 15)
        # The rollout: a copy, verified, renamed over the path. The open inode is intact.
        shutil.copy(path, served_dir / "new.tmp")
        assert subprocess.run([PDBTOOL, "verify", str(served_dir / "new.tmp")],
                              capture_output=True).returncode == 0
        os.replace(served_dir / "new.tmp", path)
        pin.check()
        artifact.check_checksums(opened.meta, opened.data)  # the mapping still reads the file
    finally:
        pin.release()


def test_a_refused_load_keeps_nothing_open(art_dir, tmp_path):
    """A directory with a good file and a damaged one is refused; what it had opened is
    let go (each refusal kept every file it had opened, its mappings and leases: a
    daemon sent SIGHUP again and again over a bad file grew without bound)."""
    import gc

    from pdbtool.errors import PdbError

    d = tmp_path / "tables"
    d.mkdir()
    shutil.copy(art_dir / "8-full.h5", d / "a-8-full.h5")  # opened first, then the bad one
    shutil.copy(art_dir / "15-5-5-5.h5", d / "b-15-5-5-5.h5")
    _flip_a_table_byte(d / "b-15-5-5-5.h5")

    def held() -> tuple[int, int]:
        fds = sum(os.readlink(f"/proc/self/fd/{fd}").startswith(str(d))
                  for fd in os.listdir("/proc/self/fd") if os.path.islink(f"/proc/self/fd/{fd}"))
        maps = sum(str(d) in line for line in Path("/proc/self/maps").read_text().splitlines())
        return fds, maps

    for _ in range(3):
        with pytest.raises(PdbError, match="b-15-5-5-5.h5"):
            load_directory(d, require=True)
        gc.collect()
        assert held() == (0, 0)


def test_every_touch_is_heard_not_only_the_first(served_dir):
    """After a touch the lease is taken again on a short-lived thread; its signal went to
    that thread, gone by the next break: a second touch was not heard (the kernel broke the
    lease after lease-break-time, and a later truncation could fault a search's read)."""
    path = served_dir / "8-full.h5"
    pin = open_trusted(path).pin
    if pin.unleased is not None:
        pytest.skip(f"no lease here: {pin.unleased}")
    try:
        for touches in (1, 2, 3):
            subprocess.run(["touch", str(path)], check=True)
            assert wait_for(lambda: pin._breaks == touches, 15), (touches, pin._breaks)
            assert wait_for(lambda: _serving(pin) and pin._restored == touches, 15)
    finally:
        pin.release()


@pytest.mark.parametrize("leased", [True, False], ids=["lease", "no-lease"])
def test_a_rewrite_in_place_with_other_bytes_is_refused(served_dir, monkeypatch, leased):
    if not leased:
        monkeypatch.setattr(lease, "hold", lambda *a: "leases off for this test")
    path = served_dir / "8-full.h5"
    pin = open_trusted(path).pin
    try:
        _flip_a_table_byte(path)
        with pytest.raises(trust.TableChanged, match="8-full.h5 changed on disk"):
            pin.check()
        # Still refused once the writer is gone and whatever the mtime says.
        os.utime(path, ns=(pin.identity.mtime_ns, pin.identity.mtime_ns))
        for _ in range(20):
            with pytest.raises(trust.TableChanged):
                pin.check()
    finally:
        pin.release()


def test_released_pins_refuse(served_dir):
    pin = open_trusted(served_dir / "8-full.h5").pin
    pin.release()
    with pytest.raises(trust.TableChanged, match="released"):
        pin.check()


@pytest.mark.process
def test_rollout_keeps_every_size_serving_until_and_after_sighup(served_dir, tmp_path):
    """The README's rollout against the daemon, queries between each step; a refused
    reload keeps both sizes answering."""
    daemon = running_daemon(load_directory(served_dir), threads=1)
    try:
        with SolverClient(daemon.address) as client:
            for round_ in range(3):
                for name in ("8-full.h5", "15-5-5-5.h5"):
                    shutil.copy(served_dir / name, tmp_path / "new.tmp")
                    assert subprocess.run([PDBTOOL, "verify", str(tmp_path / "new.tmp")],
                                          capture_output=True).returncode == 0
                    shutil.move(tmp_path / "new.tmp", served_dir / "new.tmp")
                    os.replace(served_dir / "new.tmp", served_dir / name)
                    assert client.solve(EASY8).length == 2
                    assert client.solve(EASY15).length == 2
                reload_tables(daemon, served_dir)  # what SIGHUP runs
                assert client.solve(EASY8).length == 2 and client.solve(EASY15).length == 2
            subprocess.run(["chmod", "644", str(served_dir / "8-full.h5")], check=True)
            subprocess.run(["touch", str(served_dir / "15-5-5-5.h5")], check=True)
            assert wait_for(lambda: _answers(client, EASY15), 15)
            # A reload that fails keeps every size serving.
            (served_dir / "bad.h5").write_bytes(b"not an artifact")
            served = daemon.servicer.served
            reload_tables(daemon, served_dir)
            assert daemon.servicer.served is served
            assert client.solve(EASY8).length == 2 and client.solve(EASY15).length == 2
    finally:
        daemon.stop(grace=1)


def _answers(client, board) -> bool:
    try:
        return client.solve(board).length == 2
    except ServerUnavailable:
        return False


def test_a_search_on_a_touched_file_still_answers_after(served_dir):
    """A search started after a touch (once the file is found unchanged) reads the file."""
    h = load_directory(served_dir).heuristics[3, 3]
    from pdbtool.search.solver import Solver

    subprocess.run(["touch", str(served_dir / "8-full.h5")], check=True)
    assert wait_for(lambda: _serving(h.source), 15)
    assert Solver(h).solve(EASY8, control=SearchControl()).length == 2
    assert signal.getsignal(lease.SIGNAL) is lease._on_signal  # the lease's handler stays
    h.source.release()


@pytest.mark.parametrize("stamped_by", ["verify", "open_trusted"])
def test_a_touch_while_the_checks_read_the_file_checks_it_again(art_dir, tmp_path, monkeypatch,
                                                                stamped_by):
    """A touch breaks the lease: the mapping is dropped (zero pages) until the file is found
    unchanged. Checks that ran meanwhile read zeros: `pdbtool verify` said the file FAILED
    ("the metadata was edited"), and a solve from a file without a stamp refused it. The
    checks run again once the file is found unchanged."""
    from pdbtool import verification

    path = tmp_path / "8-full.h5"
    shutil.copy(art_dir / "8-full.h5", path)
    original = verification.check_checksums
    touched = []

    def touch_then_check(meta, data):
        if touched:
            return original(meta, data)
        touched.append(True)  # the first pass: the file held open for writing meanwhile
        with held_for_writing(path):  # (the mapping dropped; the recovery waits for the
            return original(meta, data)  # close): the checksums read zeros

    monkeypatch.setattr(verification, "check_checksums", touch_then_check)
    if stamped_by == "verify":
        report = verification.verify(path)
        assert report.ok, report.failed
        assert trust.is_recorded(artifact.read_meta(path))
    else:
        opened = open_trusted(path)
        try:
            assert "checksums" in opened.checks and opened.pin.broken is None
        finally:
            opened.pin.release()
    assert touched


def test_a_break_before_the_checks_begin_is_waited_for(art_dir, tmp_path):
    """The file opened for writing after it was pinned but before the checks mapped it
    (as its metadata was read): the checks mapped zero pages, saw no break during them and
    said FAILED. They wait for the file to be found unchanged first."""
    import threading

    from pdbtool.verification import verify

    path = tmp_path / "8-full.h5"
    shutil.copy(art_dir / "8-full.h5", path)
    pin = trust.Pinned(path)
    try:
        with held_for_writing(path) as writer:
            assert pin.broken
            threading.Timer(0.5, lambda: Path(f"{path}.close-{os.getpid()}").touch()).start()
            report = verify(path, pin=pin, stamp=False)  # begins while the writer holds it
        assert writer.returncode == 0
        assert report.ok, report.failed
    finally:
        pin.release()


def test_a_break_while_the_lease_is_taken_is_not_lost(art_dir, tmp_path, monkeypatch):
    """A writer's open that broke the lease before `hold` had noted the file found no entry
    in the handler: the writer waited out the lease-break time (45 s) and then changed a
    file still mapped. `hold` looks once the entry is there."""
    import fcntl

    path = tmp_path / "8-full.h5"
    shutil.copy(art_dir / "8-full.h5", path)
    writers = []

    class Late(dict):  # the break begins just before the entry is noted
        def __setitem__(self, fd, held):
            if not writers:
                writers.append(subprocess.Popen([sys.executable, "-c", "import sys; "
                                                 "open(sys.argv[1], 'r+b').close()", str(path)]))
                assert wait_for(lambda: fcntl.fcntl(fd, fcntl.F_GETLEASE) != fcntl.F_RDLCK, 10)
            super().__setitem__(fd, held)

    monkeypatch.setattr(lease, "_held", Late(lease._held))
    pin = trust.Pinned(path)
    try:
        assert pin.unleased is None
        assert wait_for(lambda: writers[0].poll() is not None, 10), "the break was lost"
        assert pin.breaks == 1
    finally:
        pin.release()
        if writers[0].poll() is None:
            writers[0].kill()


def test_the_content_check_reads_the_file_and_never_faults(art_dir, tmp_path, monkeypatch):
    """After a break the recovery compared the file with what was loaded through a new
    mapping: a writer that truncated the file meanwhile killed the process (SIGBUS). The
    file is read: a short read says it changed. In a child: the old failure kills it."""
    path = tmp_path / "8-full.h5"
    shutil.copy(art_dir / "8-full.h5", path)
    child = (f"import os, sys\nsys.path.insert(0, {os.path.dirname(__file__)!r})\n"
             "from pdbtool.tables import lease, trust\n"
             "lease.hold = lambda *a: 'no leases here'\n"  # (a truncation at once)
             f"pin = trust.Pinned({str(path)!r})\n"
             "pin._content = pin._read_content()\n"
             "meta = pin._content[1]\n"
             "from pdbtool.tables import artifact\n"
             "def truncated(real):\n"  # the file truncated as the tables' bytes are hashed
             "    def first_truncate(*a):\n"  # (read with pread, or through a mapping)
             f"        os.truncate({str(path)!r}, meta.data_offset + meta.data_length // 2)\n"
             "        return real(*a)\n"
             "    return first_truncate\n"
             "os.pread = truncated(os.pread)\n"
             "artifact.sha256_of = truncated(artifact.sha256_of)\n"
             "print(pin._same_content())\n")
    p = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, (p.returncode, p.stderr[-2000:])
    assert p.stdout.strip() == "False"


def test_a_file_rewritten_as_it_loads_is_refused_a_touch_is_not(art_dir, tmp_path, monkeypatch):
    """Opened for writing between the metadata's read and the mapping's guard: after a
    touch the file holds what was read and loads; after a rewrite its metadata may be
    another table's (the loader returned the metadata read before): refused, to be loaded
    again."""
    from pdbtool.tables import artifact as artifact_module

    path = tmp_path / "8-full.h5"
    shutil.copy(art_dir / "8-full.h5", path)
    real_map = artifact_module.map_tables
    writers = []

    def map_after_a_writer(meta):
        if not writers:  # the loader's own mapping (not the checks' after it)
            writers.append(1)
            with held_for_writing(path):
                pass
        return real_map(meta)

    monkeypatch.setattr(artifact_module, "map_tables", map_after_a_writer)
    opened = open_trusted(path)  # a touch: loads
    assert opened.pin.broken is None and opened.pin.breaks == 1
    opened.pin.release()
    writers.clear()
    monkeypatch.setattr(trust.Pinned, "holds", lambda self, meta: False)  # as after a rewrite
    with pytest.raises(ArtifactError, match="changed while it was being loaded; try again"):
        open_trusted(path)
