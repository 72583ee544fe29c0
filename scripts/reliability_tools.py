"""The reliability cases of the library and the command lines (findings 6 and 7 of the second probe,
and the unclear messages of item 7): the cluster cache, signals, limits, TLS handshake
logging, verify's seed and --exhaustive, full and read-only disks, closed outputs,
unreadable files and homes. scripts/reliability.py runs them."""

from __future__ import annotations

import contextlib
import functools
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from reliability_harness import (
    BIN,
    TABLE,
    Case,
    Log,
    alive,
    descendants,
    in_dir,
    pdbd,
    pdbtool,
    served_dir,
    spawn,
    stop,
    table_source,
    unprivileged,
    within,
)

from pdbd.client import SolverClient

KORF88 = "15 2 12 11 14 13 9 5 1 3 8 7 0 10 6 4"  # 6.0e9 nodes with Manhattan distance
KORF1 = "14 13 15 7 11 12 9 5 6 0 2 1 4 8 10 3"


def last_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[-1] if lines else "(nothing)"


# -- finding 6: the cluster cache ----------------------------------------------------------------

def cluster_cache(tmp: Path) -> tuple[str, bool]:
    from pdbtool.errors import ArtifactError
    from pdbtool.tables.files import private_directory

    outcome = {}
    shared = tmp / "open"
    shared.mkdir(mode=0o777)
    os.chmod(shared, 0o777)
    (tmp / "target").mkdir()
    os.symlink(tmp / "target", tmp / "link")
    cases = {"mode 777": shared, "a symbolic link": tmp / "link"}
    if os.geteuid() == 0:
        other = tmp / "other"
        other.mkdir(mode=0o700)
        os.chown(other, 65534, 65534)
        cases["another user's"] = other
    for what, path in cases.items():
        try:
            private_directory(path)
            outcome[what] = "used"
        except ArtifactError:
            outcome[what] = "refused"
    fresh = private_directory(tmp / "fresh")
    mode = oct(fresh.stat().st_mode & 0o777)
    return (", ".join(f"{k}: {v}" for k, v in outcome.items()) + f"; a new one made {mode}",
            set(outcome.values()) == {"refused"} and mode == "0o700")


# -- finding 7: signals, limits, TLS, verify ---------------------------------------------------

def solve_cluster_sigterm(tmp: Path) -> tuple[str, bool]:
    env = {**os.environ, "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
    proc = spawn(BIN / "pdbtool", "solve", "--cluster", "local", "--heuristic", "manhattan",
                 "--goal", "blank-first", *KORF88.split(), env=env)
    log = Log(proc)
    if not log.wait_for("searching: bound", 180):
        stop(proc)
        return f"never searched: {last_line(log.text())}", False
    ray = descendants(proc.pid)
    proc.send_signal(signal.SIGTERM)
    code = proc.wait(120)
    log.thread.join(10)
    gone = within(lambda: not any(alive(p) for p in ray), 30)
    err = log.text()
    clean = "Traceback" not in err and "SIGTERM received" not in err
    return (f"exit {code}, last line '{last_line(err)}', "
            f"{'no stack dump' if clean else 'a stack dump'}, Ray's {len(ray)} processes "
            f"{'gone' if gone is not None else 'LEFT'}"), code == 143 and clean and gone is not None


def serve_cluster_sigterm(tmp: Path) -> tuple[str, bool]:
    with pdbd(served_dir(tmp), "--cluster", "local", "--drain", "5", wait=180) as d:
        with SolverClient(d.address) as c:
            c.solve(KORF1, goal="blank-first", deadline=120)
        ray = descendants(d.pid)
        d.proc.send_signal(signal.SIGTERM)
        try:
            code = d.proc.wait(60)
        except subprocess.TimeoutExpired:
            code = None
        d.log.thread.join(10)
        err = d.log.text()
    gone = within(lambda: not any(alive(p) for p in ray), 30)
    clean = "Traceback" not in err and "SIGTERM received" not in err
    return (f"exit {code}, {'no stack dump' if clean else 'a stack dump'}, last line "
            f"'{last_line(err)[-90:]}', Ray's processes {'gone' if gone is not None else 'LEFT'}"),\
        code == 0 and clean and gone is not None


def build_orphans(tmp: Path, sig: int) -> tuple[str, bool]:
    proc = spawn(BIN / "pdbtool", "build", "15/6-6-3", "--out", tmp, "--workers", "2",
                 "--processes", "2")
    within(lambda: len(descendants(proc.pid)) >= 3, 60, 0.1)  # 2 workers and the manager
    time.sleep(1)
    workers = descendants(proc.pid)
    proc.send_signal(sig)
    proc.wait(30)
    gone = within(lambda: not any(alive(p) for p in workers), 10)
    left = [p for p in workers if alive(p)]
    for p in left:
        os.kill(p, signal.SIGKILL)
    return (f"{len(workers)} worker processes; {len(left)} left "
            + (f"({gone:.1f} s)" if gone is not None else "after 10 s")), \
        bool(workers) and not left


def limits(tmp: Path) -> tuple[str, bool]:
    proc = spawn(BIN / "pdbd", "serve", "--artifacts", served_dir(tmp), "--listen",
                 "127.0.0.1:0", "--max-search-seconds", "3000000")
    try:
        _, err = proc.communicate(timeout=60)
    finally:
        stop(proc)
    p = pdbtool("solve", "--timeout", "1e7", "1 2 3 4 5 6 0 7 8")
    return (f"pdbd serve --max-search-seconds 3e6: exit {proc.returncode} "
            f"('{last_line(err)[:80]}...'); pdbtool solve --timeout 1e7: exit {p.returncode}"), \
        proc.returncode == 2 and p.returncode == 2 and "Traceback" not in err


def tls_log(tmp: Path) -> tuple[str, bool]:
    key, cert = tmp / "key.pem", tmp / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out", cert,
                    "-days", "1", "-subj", "/CN=localhost", "-addext",
                    "subjectAltName=IP:127.0.0.1,DNS:localhost"], check=True,
                   capture_output=True, timeout=60)
    d = served_dir(tmp)
    from reference import free_port

    port = free_port()
    proc = spawn(BIN / "pdbd", "serve", "--artifacts", d, "--listen", f"127.0.0.1:{port}",
                 "--tls-cert", cert, "--tls-key", key)
    log = Log(proc)
    try:
        if not log.wait_for("serving on", 120):
            return f"did not start: {last_line(log.text())}", False
        mark = len(log.lines)
        start = time.monotonic()
        for _ in range(300):
            with contextlib.suppress(OSError), \
                    socket.create_connection(("127.0.0.1", port), timeout=2) as s:
                s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
                s.recv(100)
        seconds = time.monotonic() - start
        time.sleep(1)
        logged = log.lines[mark:]
        size = sum(len(x) for x in logged)
    finally:
        stop(proc)
    named = [x for x in logged if "TLS handshake from 127.0.0.1 failed" in x]
    return (f"300 failed handshakes in {seconds:.0f} s: {len(logged)} log lines "
            f"({size:,} bytes), {len(named)} naming the peer"
            + (f": '{named[0][:90]}...'" if named else "")), len(logged) == len(named) == 1


def verify_seed(tmp: Path) -> tuple[str, bool]:
    from pdbtool.verification import verify

    path = table_source()
    seeds = [verify(path, stamp=False).seed for _ in range(2)]
    again = verify(path, stamp=False, seed=seeds[0])
    return (f"two runs: seeds {seeds[0]} and {seeds[1]}; --seed {seeds[0]} again: "
            f"{'passes' if again.ok else 'fails'} with seed {again.seed}"), \
        seeds[0] != seeds[1] and again.seed == seeds[0] and again.ok


def edited_copy(tmp: Path, change) -> Path:
    """A copy of the 15/6-6-3 artifact with its 4-bit entries changed by ``change(table
    index, entries)`` and its checksums, version and histograms made to match (a careful
    forger's copy)."""
    import numpy as np

    from pdbtool.tables import artifact
    from pdbtool.verification import audit_table

    meta, data = artifact.open_tables(table_source())
    tables = []
    for k, t in enumerate(meta.tables):
        packed = np.array(artifact.table_view(data, t))
        entries = np.empty(packed.size * 2, np.uint8)
        entries[0::2], entries[1::2] = packed & 15, packed >> 4
        change(k, entries)
        tables.append(artifact.TableData(t.name, t.tiles, t.cells, t.entries,
                                         (entries[0::2] | (entries[1::2] << 4)).astype(np.uint8),
                                         t.histogram, t.unset))
    out = tmp / "edited.h5"
    for _ in range(2):  # the second time with the histograms the entries give
        written = artifact.write_artifact(out, partition=meta.partition, size=meta.size,
                                          goal=meta.goal, zero_aware=meta.zero_aware,
                                          tables=tables, groups=meta.groups, build={},
                                          builder_version="forged")
        view = artifact.map_tables(written)
        tables = [t._replace(histogram=audit_table(written, view, w, moves=False).histogram)
                  for t, w in zip(tables, written.tables)]
        del view
    return out


def verify_exhaustive(tmp: Path) -> tuple[str, bool]:
    from pdbtool.kernels.ranking import entry_of

    cells = [9, 1, 2, 3, 7, 6]  # tiles 1 2 3 5 6 7 of the first table
    e = entry_of(cells, 0, 4)

    def lower(k, t):
        if k == 0:
            t[e] -= 1

    path = edited_copy(tmp, lower)
    sampled = pdbtool("verify", "--seed", "1", path)
    full = pdbtool("verify", "--exhaustive", path)
    named = f"entry {e:,} (" in full.stderr
    return (f"one entry lowered by 2, histograms and checksums recomputed: sampled verify "
            f"exit {sampled.returncode}; --exhaustive exit {full.returncode}: "
            f"'{last_line(full.stderr)[:150]}...'"), full.returncode == 1 and named


# -- item 7: messages -----------------------------------------------------------------------------

def fallback_note(tmp: Path) -> tuple[str, bool]:
    p = pdbtool("solve", "--artifacts", tmp, "--goal", "blank-first", "--budget", "100000",
                KORF1)
    first = p.stderr.splitlines()[0] if p.stderr else ""
    return f"exit {p.returncode} (budget); stderr starts '{first}'", \
        "fell back to" in first and p.returncode == 4


def edited_histogram(tmp: Path) -> tuple[str, bool]:
    import json

    import h5py

    from pdbtool.tables import seal

    path = tmp / TABLE
    shutil.copy(table_source(), path)
    with h5py.File(path, "r+") as f:
        tables = json.loads(f.attrs["tables"])
        tables[0]["histogram"][10] += 7
        f.attrs["tables"] = json.dumps(tables, sort_keys=True, separators=(",", ":"))
    seal.reseal(path)  # as a forger would: the recount, not the seal, is what is probed
    p = pdbtool("verify", path)
    return f"exit {p.returncode}: '{last_line(p.stderr)[:160]}'", \
        p.returncode == 1 and "check histogram failed" in p.stderr


def damaged_heap(tmp: Path) -> tuple[str, bool]:
    """The third probe's finding: one flipped bit in an artifact's attribute heap hung
    HDF5 (another crashed it) in info, list, solve and a pdbd reload. A fresh 8/full table
    (sealed) with that bit flipped: info refuses it at once, naming the seal."""
    p = pdbtool("build", "8/full", "--out", tmp, "--quiet")
    if p.returncode:
        return f"build exit {p.returncode}: {last_line(p.stderr)}", False
    path = tmp / "8-full.h5"
    data = bytearray(path.read_bytes())
    data[data.index(b"GCOL") + 24] ^= 0x40  # the first heap object's size
    path.write_bytes(bytes(data))
    p = pdbtool("info", path, timeout=60)
    return f"exit {p.returncode}: '{last_line(p.stderr)[:160]}'", \
        p.returncode == 1 and "do not match its seal" in p.stderr


def trace_onto_table(tmp: Path) -> tuple[str, bool]:
    """The third probe's finding: `solve --trace` wrote over the table it had just read."""
    path = tmp / TABLE
    path.symlink_to(table_source())
    before = table_source().stat()
    p = pdbtool("solve", "--artifacts", tmp, "--trace", table_source(), "--force",
                "1 2 3 4 5 6 7 8 9 10 11 12 13 14 0 15")
    after = table_source().stat()
    return f"exit {p.returncode}: '{last_line(p.stderr)[:160]}'", \
        p.returncode == 2 and "is the input" in p.stderr and \
        (before.st_ino, before.st_mtime_ns) == (after.st_ino, after.st_mtime_ns)


@contextlib.contextmanager
def small_disk(tmp: Path, size: str = "2m", read_only: bool = False):
    """A tmpfs of ``size`` mounted at tmp/disk (root only); None where it cannot be."""
    disk = tmp / "disk"
    disk.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}",
                                            "tmpfs", disk], capture_output=True,
                                           check=False).returncode:
        yield None
        return
    try:
        if read_only:
            subprocess.run(["mount", "-o", "remount,ro", disk], check=True, capture_output=True)
        yield disk
    finally:
        subprocess.run(["umount", "-l", disk], capture_output=True, check=False)


def fill(disk: Path, leave_pages: int) -> None:
    free = os.statvfs(disk).f_bavail
    with open(disk / "fill", "wb") as f:
        f.write(b"\0" * max(0, free - leave_pages) * os.statvfs(disk).f_frsize)


def full_disk(tmp: Path) -> tuple[str, bool]:
    with small_disk(tmp) as disk:
        if disk is None:  # a file-size limit fails the write the same way
            def small():
                resource.setrlimit(resource.RLIMIT_FSIZE, (64 << 10, 64 << 10))
            out = tmp / "out"
            out.mkdir()
            p = pdbtool("build", "8/full", "--out", out, "--quiet", preexec_fn=small)
            left = os.listdir(out)
            how = "RLIMIT_FSIZE 64 KiB"
        else:
            fill(disk, 4)
            p = pdbtool("pack", table_source(), "-o", disk / "x.pdbpack")
            left = [x for x in os.listdir(disk) if x != "fill"]
            how = "a full 2 MiB tmpfs"
    msg = last_line(p.stderr)
    return f"{how}: exit {p.returncode}: '{msg}'; files left: {left}", (
        p.returncode == 1 and "cannot write it in" in msg and "errno" not in msg and not left)


def read_only_disk(tmp: Path) -> tuple[str, bool]:
    with small_disk(tmp, read_only=True) as disk:
        if disk is None:
            prefix = unprivileged()
            if prefix is None:
                return "no read-only place to write to (not root, no setpriv)", False
            disk = tmp / "closed"
            disk.mkdir(mode=0o555)
        else:
            prefix = []
        p = pdbtool("build", "8/full", "--out", disk, "--quiet", prefix=prefix)
    msg = last_line(p.stderr)
    # Said before the build (files.check_directory) or by the write (files.not_written).
    cause = "Read-only file system" in msg or "Permission denied" in msg
    return f"exit {p.returncode}: '{msg}'", (p.returncode == 1 and "8-full.h5" in msg
                                             and "cannot write" in msg and cause
                                             and "errno" not in msg)


def stamp_on_full_disk(tmp: Path) -> tuple[str, bool]:
    with small_disk(tmp) as disk:
        if disk is None:
            disk = tmp
            (disk / "8-full.h5.verified").mkdir()  # the stamp cannot be written there
            how = "a directory in the stamp's place"
        else:  # room for the 8/full artifact (built aside to learn its size), not its stamp
            (tmp / "aside").mkdir()
            pdbtool("build", "8/full", "--out", tmp / "aside", "--quiet")
            size = (tmp / "aside" / "8-full.h5").stat().st_size
            fill(disk, -(-size // os.statvfs(disk).f_frsize))
            how = "a tmpfs with room for the artifact only"
        p = pdbtool("build", "8/full", "--out", disk, "--quiet")
        whole = (disk / "8-full.h5").exists()
    return (f"{how}: exit {p.returncode}, artifact {'complete' if whole else 'MISSING'}; "
            f"'{last_line(p.stderr)[:140]}...'"), (p.returncode == 0 and whole
                                                    and "stamp" in p.stderr)


def stdout_closed(tmp: Path) -> tuple[str, bool]:
    p = subprocess.run(["sh", "-c", 'exec "$@" >&-', "sh", BIN / "pdbtool", "solve", "--heuristic",
                        "manhattan", "1 2 3 4 5 6 0 7 8"], stderr=subprocess.PIPE, text=True,
                       timeout=120, check=False)
    with open("/dev/full", "w") as full:
        q = pdbtool("solve", "--heuristic", "manhattan", "1 2 3 4 5 6 0 7 8", stdout=full)
    return (f"closed: exit {p.returncode} '{last_line(p.stderr)[:60]}...'; /dev/full: exit "
            f"{q.returncode} '{last_line(q.stderr)}'"), p.returncode == 1 and q.returncode == 1 \
        and "stdout" in p.stderr and "stdout" in q.stderr


def unreadable(tmp: Path) -> tuple[str, bool]:
    prefix = unprivileged()
    if prefix is None:
        return "cannot make a file unreadable here (root without setpriv)", False
    shutil.copy(table_source(), tmp / TABLE)
    os.chmod(tmp / TABLE, 0)
    info = pdbtool("info", tmp / TABLE, prefix=prefix)
    listing = pdbtool("list", tmp, prefix=prefix)
    row = last_line(listing.stdout).split("  ")[-1]
    return (f"info: exit {info.returncode} '{last_line(info.stderr)}'; list: exit "
            f"{listing.returncode}, row '{row.strip()}'"), (
        info.returncode == 1 and "cannot be read: Permission denied" in info.stderr
        and listing.returncode == 1 and "unreadable" in listing.stdout)  # listed, and said


def home_unreadable(tmp: Path) -> tuple[str, bool]:
    prefix = unprivileged()
    if prefix is None:
        return "cannot make a home unreadable here (root without setpriv)", False
    home = tmp / "home"
    home.mkdir(mode=0)
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "XDG_CACHE_HOME")}
    env["HOME"] = str(home)
    p = pdbtool("solve", "--heuristic", "manhattan", "1 2 3 4 5 6 0 7 8", prefix=prefix,
                env=env, timeout=600)
    return f"exit {p.returncode}, {'a traceback' if 'Traceback' in p.stderr else 'no traceback'}", \
        p.returncode == 0 and "Traceback" not in p.stderr


def cases(tmp: Path) -> list[Case]:
    c = functools.partial(in_dir, tmp)

    return [
        c("cluster-cache", "6", "a cache directory of mode 777, a link or another user's is "
          "refused; a new one is made 0700", cluster_cache),
        c("solve-cluster-sigterm", "7", "pdbtool solve --cluster local, SIGTERM: exit 143, one "
          "line, no stack dump, Ray gone", solve_cluster_sigterm),
        c("serve-cluster-sigterm", "7", "pdbd serve --cluster local, SIGTERM: drains, exit 0, "
          "no stack dump, Ray gone", serve_cluster_sigterm),
        c("build-sigkill", "7", "pdbtool build killed (SIGKILL): its workers end too",
          lambda d: build_orphans(d, signal.SIGKILL)),
        c("build-sighup", "7", "pdbtool build hung up (SIGHUP): its workers end too",
          lambda d: build_orphans(d, signal.SIGHUP)),
        c("limits", "7", "limits beyond what gRPC holds (> 2e6 s) refused at the command line "
          "(exit 2)", limits),
        c("tls-handshake-log", "7", "300 failed TLS handshakes from one peer: one log line "
          "naming the peer within the minute", tls_log),
        c("verify-seed", "7", "verify samples with a fresh seed each run; --seed repeats it",
          verify_seed),
        c("verify-exhaustive", "7", "an entry lowered by 2 (checksums, histograms forged): "
          "verify --exhaustive refuses it, naming the entry", verify_exhaustive),
        c("fallback-note", "7-msg", "solve says it falls back to a table-free heuristic "
          "before searching", fallback_note),
        c("edited-histogram", "7-msg", "an edited histogram is refused by verify",
          edited_histogram),
        c("damaged-heap", "3rd", "a bit flipped in a table's attribute heap (HDF5 hung or "
          "crashed on it): info refuses it by its seal, exit 1", damaged_heap),
        c("trace-onto-table", "3rd", "solve --trace onto the table it reads, even with "
          "--force: refused (exit 2), the table untouched", trace_onto_table),
        c("full-disk", "7-msg", "a full disk: one line naming the file and the cause, nothing "
          "left behind", full_disk),
        c("read-only-disk", "7-msg", "a read-only disk: one line naming the file and the cause",
          read_only_disk),
        c("stamp-full-disk", "7-msg", "a disk full after a complete artifact: exit 0, a "
          "warning naming the stamp", stamp_on_full_disk),
        c("stdout-closed", "7-msg", "a closed or full stdout: exit 1 naming stdout",
          stdout_closed),
        c("unreadable-file", "7-msg", "info and list name an unreadable file (list goes on)",
          unreadable),
        c("home-unreadable", "7-msg", "an unreadable HOME: no traceback at import",
          home_unreadable, 600),
    ]


if __name__ == "__main__":
    sys.exit("run scripts/reliability.py")
