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
instead of read (``TableChanged``). Where the system allows it, a read lease on the open file
(pdbtool.tables.lease) tells the process before anyone may write to it: the file's mappings are then
replaced by zero pages (residency.detach; a later truncation cannot fault a search with
SIGBUS), the searches reading it are halted (``guarding``) and end with TableChanged, and the
file stays refused until it is loaded again. ``Pinned.unleased`` says why a file got no lease.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import stat
import threading
from pathlib import Path
from typing import NamedTuple


from pdbtool.errors import ArtifactError
from pdbtool.tables import artifact, lease, residency
from pdbtool.tables.files import file_problem

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
    """An artifact file held open while its tables are mapped, with its identity at load,
    and a read lease on it where one can be had (``unleased``: why not)."""

    unleased: str | None = "not opened"
    _fd = -1

    def __init__(self, path):
        self.path = Path(path)
        problem = file_problem(self.path)
        if problem:  # before opening: a FIFO would block
            raise ArtifactError(f"{self.path}: {problem}")
        self._fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
        st = os.fstat(self._fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(self._fd)
            self._fd = -1
            raise ArtifactError(f"{self.path}: not a regular file")
        self.identity = Identity.of(st)
        self.broken: str | None = None  # set when the lease was broken: what happened
        self._mapped: list = []  # the arrays mapped from the file (detached on a break)
        self._lock = threading.Lock()
        self._searches: dict[int, object] = {}  # id -> SearchControl of a search reading it
        self.unleased = lease.hold(self._fd, self._detach, self._stop_searches)

    def protect(self, data) -> None:
        """Detach ``data`` (mapped from this file) if anyone opens the file for writing."""
        self._mapped.append(data)
        if self.broken:
            residency.detach(data)

    @contextlib.contextmanager
    def guarding(self, control):
        """Around a search reading the file: checked before and after (TableChanged), and
        halted with reason "table-changed" if the file is opened for writing meanwhile."""
        self.check()
        with self._lock:
            self._searches[id(control)] = control
        try:
            yield
        except BaseException as e:
            self._leave(control)
            if isinstance(e, Exception):
                self.check()  # a change explains the failure (replaces LimitReached)
            raise
        self._leave(control)
        self.check()  # changed during the search: the answer may be wrong

    def _leave(self, control) -> None:
        with self._lock:
            self._searches.pop(id(control), None)

    def check(self) -> None:
        """Raise TableChanged if the open file is no longer what was loaded. The message
        names the file, not its directory: it may be shown to remote clients."""
        now = Identity.of(os.fstat(self._fd))
        if self.broken or now != self.identity:
            what = (self.broken if self.broken else
                    f"truncated from {self.identity.size:,} to {now.size:,} bytes"
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

    def _detach(self) -> None:
        """The lease is being broken (in the signal handler: no locks). Before the writer
        goes on, the mapped pages become zero pages: no search can fault on the file."""
        self.broken = "opened for writing by another process while in use"
        for data in list(self._mapped):
            with contextlib.suppress(OSError):
                residency.detach(data)

    def _stop_searches(self) -> None:
        """After a break (on the lease watcher thread): halt every search reading it."""
        with self._lock:
            searches = list(self._searches.values())
        for control in searches:
            control.halt("table-changed")
        log.warning("%s was opened for writing while in use: its tables were dropped from "
                    "memory, %d search(es) on it stopped, and it is refused until loaded again",
                    self.path, len(searches))

    def close(self) -> None:
        if self._fd >= 0:
            if self.unleased is None:
                lease.release(self._fd)
            os.close(self._fd)
            self._fd = -1

    def __del__(self):
        try:
            self.close()
        except Exception:  # at interpreter exit the modules it uses may be gone
            pass


def confirm(meta: artifact.ArtifactMeta) -> artifact.ArtifactMeta:
    """Re-read a freshly written file's tables from disk, check them, and stamp it."""
    artifact.check_checksums(meta, artifact.map_tables(meta))
    record(meta)
    return meta
