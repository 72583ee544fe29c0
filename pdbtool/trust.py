"""When to trust a table file: verification stamps, and opening a file with its checks.

Hashing 600 MB costs about a second, so after a file's checksums have been checked
(`pdbtool verify`, a build re-read from disk, an unpack that ran every check) a stamp
``<artifact>.verified`` records its fingerprint. Loaders skip the hash while the file
still matches it. The fingerprint includes the inode, size, mtime and ctime: a copy,
a rewrite or an edit with the mtime set back all change at least the ctime or the inode,
and so void the stamp.

A file without a valid stamp is not trusted on its checksums alone: ``open_trusted`` runs
every check ``pdbtool verify`` runs (checksums, ranking, completeness, consistency,
admissibility), since a table edited with its checksums recomputed passes the hashes. It
logs which checks ran. It does not stamp: loaders never write; `pdbtool verify` does.

A loaded file stays open (``Pinned``): its identity (device, inode, size, ctime) is
compared before answering from it, so a file copied over or truncated in place is refused
instead of read (``TableChanged``).
"""

from __future__ import annotations

import json
import logging
import os
import stat
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np

from . import artifact
from .errors import ArtifactError

log = logging.getLogger("pdbtool")


def stamp_path(path) -> Path:
    return Path(str(path) + ".verified")


def fingerprint(meta: artifact.ArtifactMeta) -> dict:
    st = Path(meta.path).stat()
    return {"version": meta.version, "device": st.st_dev, "inode": st.st_ino, "bytes": st.st_size,
            "mtime_ns": st.st_mtime_ns, "ctime_ns": st.st_ctime_ns,
            "sha256": [t.sha256 for t in meta.tables]}


def record(meta: artifact.ArtifactMeta) -> None:
    """Stamp a file whose checks have just passed."""
    stamp_path(meta.path).write_text(json.dumps(fingerprint(meta)) + "\n")


def is_recorded(meta: artifact.ArtifactMeta) -> bool:
    try:
        return json.loads(stamp_path(meta.path).read_text()) == fingerprint(meta)
    except (OSError, ValueError):
        return False


class Identity(NamedTuple):
    """What changes when a file is replaced, rewritten, truncated or edited in place."""

    device: int
    inode: int
    size: int
    ctime_ns: int

    @classmethod
    def of(cls, st: os.stat_result) -> Identity:
        return cls(st.st_dev, st.st_ino, st.st_size, st.st_ctime_ns)


class TableChanged(ArtifactError):
    """A loaded table's file changed on disk: answering from its mapping is refused."""


class Pinned:
    """An artifact file held open while its tables are mapped, with its identity at load."""

    def __init__(self, path):
        self.path = Path(path)
        problem = artifact.file_problem(self.path)
        if problem:  # before opening: a FIFO would block
            raise ArtifactError(f"{self.path}: {problem}")
        self._fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
        st = os.fstat(self._fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(self._fd)
            raise ArtifactError(f"{self.path}: not a regular file")
        self.identity = Identity.of(st)

    def check(self) -> None:
        """Raise TableChanged if the open file is no longer what was loaded. The message
        names the file, not its directory: it may be shown to remote clients."""
        now = Identity.of(os.fstat(self._fd))
        if now != self.identity:
            what = (f"truncated from {self.identity.size:,} to {now.size:,} bytes"
                    if now.size < self.identity.size else
                    "rewritten in place" if now.size == self.identity.size else
                    f"grown to {now.size:,} bytes")
            raise TableChanged(f"table file {self.path.name} changed on disk since it was "
                               f"loaded ({what}); refusing to answer from it until it is "
                               "loaded again")

    def replaced(self) -> bool:
        """Whether the path now names another file (renamed over: the mapped one is intact)."""
        try:
            return Identity.of(os.stat(self.path)) != self.identity
        except OSError:
            return True

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __del__(self):
        self.close()


class Trusted(NamedTuple):
    """An installed artifact opened for use: its metadata, its mapped tables, the file
    held open, and the checks that ran ("stamp" when a valid stamp made them unneeded)."""

    meta: artifact.ArtifactMeta
    data: np.ndarray
    pin: Pinned
    checks: tuple[str, ...]


def open_trusted(path) -> Trusted:
    """Map an installed artifact's tables. With a valid stamp for this very file nothing
    is re-checked; without one, every verify check runs. Raises ArtifactError naming the
    file and the problem."""
    pin = Pinned(path)
    meta = artifact.read_meta(path)
    data = artifact.map_tables(meta)
    if is_recorded(meta):
        checks = ("stamp",)
    else:
        checks = run_checks(path)
    if pin.replaced():
        raise ArtifactError(f"{path}: changed while it was being loaded; try again")
    pin.check()
    return Trusted(meta, data, pin, checks)


def run_checks(path) -> tuple[str, ...]:
    """Every verify check on a file without a valid stamp; ArtifactError on a failure."""
    from .verification import verify  # verification uses this module: import on use

    start = time.perf_counter()
    report = verify(path, stamp=False)
    if not report.ok:
        failed = report.failed
        raise ArtifactError(f"{path}: check {failed.name} failed: {failed.detail} "
                            "(no valid verification stamp, so every check ran)")
    names = tuple(c.name for c in report.checks)
    log.info("%s: no valid verification stamp; ran %s in %.1f s (`pdbtool verify %s` "
             "stamps it)", path, ", ".join(names), time.perf_counter() - start, path)
    return names


def confirm(meta: artifact.ArtifactMeta) -> artifact.ArtifactMeta:
    """Re-read a freshly written file's tables from disk, check them, and stamp it."""
    artifact.check_checksums(meta, artifact.map_tables(meta))
    record(meta)
    return meta
