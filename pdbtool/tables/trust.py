"""When to trust a table file: verification stamps, and opening a file with its checks.

Hashing 600 MB costs about a second, so after a file's checksums have been checked
(`pdbtool verify`, a build re-read from disk, an unpack that ran every check) a stamp
``<artifact>.verified`` records its fingerprint. Loaders skip the hash while the file
still matches it. The fingerprint includes the inode, size, mtime and ctime: a copy,
a rewrite or an edit with the mtime set back all change at least the ctime or the inode,
and so void the stamp.

A file without a valid stamp is not trusted on its checksums alone: ``open_trusted``
(loading.py) runs every check ``pdbtool verify`` runs (checksums, ranking, completeness,
consistency, admissibility), since a table edited with its checksums recomputed passes the
hashes. It logs which checks ran. It does not stamp: loaders never write; `pdbtool verify`
does.

A loaded file stays open (``Pinned``): its identity (device, inode, size, mtime) is
compared before answering from it, so a file copied over or truncated in place is refused
instead of read (``TableChanged``). Not ctime: renaming another file over the served one
(the rollout), ``chmod`` and ``ln`` change only the ctime of the open inode, never its bytes.
An mtime that moved with the same inode and size is either a rewrite in place or a ``touch``:
the bytes the mapping reads are then checked again (the content version and every table's
checksum, against what was read at load) and the file keeps serving if they are unchanged.
Where the system allows it, a read lease on the open file
(pdbtool.tables.lease) tells the process before anyone may write to it: the file's mappings are then
replaced by zero pages (residency.detach; a later truncation cannot fault a search with
SIGBUS), the searches reading it are halted (``guarding``) and end with TableChanged. Once no
writer holds it open (the lease can be taken again, so any later writer is heard of too), the
file is checked the same way: unchanged (a ``touch`` opens it for writing and writes
nothing), its pages are mapped back and it serves again; changed, it stays refused until it is
loaded again. ``Pinned.unleased`` says why a file got no lease; ``release`` unmaps and closes
(pdbd, when the last search on tables replaced by a reload ends).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import logging
import os
import stat
import threading
import time
from pathlib import Path
from typing import NamedTuple

from pdbtool.errors import ArtifactError, NotAFile
from pdbtool.tables import artifact, lease, residency
from pdbtool.tables.files import file_problem, partial_name

log = logging.getLogger("pdbtool")

RECOVER_SECONDS = 10.0  # after a lease break, how long to wait for the writer to close it
RECOVER_POLL = 0.02
READ_STEP = 8 << 20  # bytes a content check reads at a time


def stamp_path(path) -> Path:
    return Path(str(path) + artifact.STAMP_SUFFIX)


def fingerprint(meta: artifact.ArtifactMeta, st: os.stat_result | None = None) -> dict:
    st = st or Path(meta.path).stat()
    return {"version": meta.version, "device": st.st_dev, "inode": st.st_ino, "bytes": st.st_size,
            "mtime_ns": st.st_mtime_ns, "ctime_ns": st.st_ctime_ns,
            "sha256": [t.sha256 for t in meta.tables]}


class StampNotWritten(ArtifactError):
    """The file passed its checks but its stamp could not be written (a full disk): the
    artifact is whole and usable, only unstamped. ``meta`` is the file's."""

    def __init__(self, message: str, meta: artifact.ArtifactMeta):
        super().__init__(message)
        self.meta = meta


def record(meta: artifact.ArtifactMeta, checked: Identity | None = None) -> None:
    """Stamp a file whose checks have just passed: the stamp appears whole or not at all.
    ``checked``: the identity of the file the checks read (Pinned.identity); if the path
    names another file now (renamed over it meanwhile) or it changed, TableChanged and no
    stamp (the stamp's fingerprint is of what the path names). StampNotWritten if it
    cannot be written."""
    st = Path(meta.path).stat()
    if checked is not None and Identity.of(st) != checked:
        raise TableChanged(f"{meta.path} was replaced or changed while it was checked: not "
                           "stamped; verify it again")
    stamp = stamp_path(meta.path)
    tmp = partial_name(stamp)
    try:
        tmp.write_text(json.dumps(fingerprint(meta, st)) + "\n")
        os.replace(tmp, stamp)
    except OSError as e:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise StampNotWritten(
            f"{meta.path} is complete and passed its checks, but its verification stamp "
            f"{stamp} could not be written ({e.strerror or e}): loaders will run every check "
            f"on it until it is stamped (`pdbtool verify {meta.path}` once the stamp can be "
            "written there)", meta) from None


def forget(path) -> str | None:
    """Remove ``path``'s stamp, if it has one (the file failed a check: loaders must not
    skip its checksums on an older stamp's word); None, or why it could not be removed."""
    stamp = stamp_path(path)
    try:
        stamp.unlink()
    except FileNotFoundError:
        return None
    except OSError as e:
        trusted = ("loaders still trust it" if _names_this_file(stamp, path) else
                   "it no longer matches the file, so loaders do not trust it")
        return (f"its verification stamp {stamp} could not be removed ({e.strerror or e}): "
                f"{trusted}; remove it")
    return None


def _names_this_file(stamp: Path, path) -> bool:
    """Whether ``stamp`` names the file now at ``path`` (its device, inode, size and times:
    a file edited since has other times, and loaders skip no check on such a stamp)."""
    try:
        doc, st = json.loads(stamp.read_text()), Path(path).stat()
        return isinstance(doc, dict) and all(doc.get(k) == v for k, v in (
            ("device", st.st_dev), ("inode", st.st_ino), ("bytes", st.st_size),
            ("mtime_ns", st.st_mtime_ns), ("ctime_ns", st.st_ctime_ns)))
    except (OSError, ValueError):
        return False


def is_recorded(meta: artifact.ArtifactMeta) -> bool:
    try:
        return json.loads(stamp_path(meta.path).read_text()) == fingerprint(meta)
    except (OSError, ValueError):
        return False


class Identity(NamedTuple):
    """What changes when a file is replaced, rewritten, truncated or edited in place. No
    ctime: it moves on a rename over the path, a chmod or a link, none of which touches the
    bytes. An mtime change alone (same inode and size) is checked against the content
    (``Pinned.check``): a ``touch`` passes, a rewrite in place with other bytes does not."""

    device: int
    inode: int
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, st: os.stat_result) -> Identity:
        return cls(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


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
            raise NotAFile(f"{self.path}: {problem}")
        self._fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
        st = os.fstat(self._fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(self._fd)
            self._fd = -1
            raise ArtifactError(f"{self.path}: not a regular file")
        self.identity = Identity.of(st)
        # Lease breaks (counted by the signal handler) and the count the file was found
        # unchanged at: broken while breaks > restored. Plain ints: the handler takes no lock.
        self._breaks = self._restored = 0
        self._why = ""  # what the last break or content check found
        self._attaching = False  # the recovery is mapping the file back (the handler waits)
        self._decided = 0  # the breaks a recovery has decided (settle waits for the rest)
        self._releasing = False  # release() began: never map the file back
        self._content = None  # (version, offset, length, sha256s) read at load, if an artifact
        self._mapped: list = []  # the arrays mapped from the file (detached on a break)
        self._lock = threading.Lock()
        self._recheck = threading.Lock()  # one content check or recovery at a time
        self._searches: dict[int, object] = {}  # id -> SearchControl of a search reading it
        self._watchers: list = []  # called when the file is refused or serves again (watch)
        self.unleased = lease.hold(self._fd, self._detach, self._stop_searches)

    def watch(self, callback) -> None:
        """``callback()`` (no arguments, on whatever thread found it) whenever the file is
        refused (``broken`` set) or found unchanged and serving again: a daemon's health."""
        self._watchers.append(callback)

    def _tell(self) -> None:
        for callback in list(self._watchers):
            try:
                callback()
            except Exception:  # a watcher's failure is said, never the file's handling
                log.exception("a watcher of %s failed", self.path)

    @property
    def breaks(self) -> int:
        """How many times the file was opened for writing while held (its mapping dropped
        each time until found unchanged): a reader that saw the count change read zero
        pages meanwhile."""
        return self._breaks

    def settle(self, timeout: float = RECOVER_SECONDS + 5.0) -> bool:
        """After a break, wait (up to ``timeout`` seconds) until a recovery has decided on
        every break so far; True if the file serves (found unchanged: a ``touch``), False
        if it is refused."""
        end = time.monotonic() + timeout
        while self._fd >= 0 and self._breaks > self._decided and time.monotonic() < end:
            time.sleep(RECOVER_POLL)
        return self.broken is None

    @property
    def broken(self) -> str | None:
        """What happened to the file, while it is refused; None while it serves."""
        if self._fd < 0:
            return "released"
        return self._why if self._breaks > self._restored else None

    def protect(self, data, meta: artifact.ArtifactMeta | None = None) -> None:
        """Detach ``data`` (mapped from this file) if anyone opens the file for writing.
        ``meta``: the file's metadata as the caller read it (else read again here, through
        the descriptor), whose content version later checks are held against."""
        self._mapped.append(data)
        if self._content is None:
            self._content = self._read_content() if meta is None else self._content_of(meta)
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
        broken = self.broken
        now = self.identity if broken else Identity.of(os.fstat(self._fd))
        if not broken and now != self.identity and now._replace(mtime_ns=0) == \
                self.identity._replace(mtime_ns=0):
            with self._recheck:  # only the mtime moved: a touch, or a rewrite in place
                if self._same_content():
                    self.identity = now
        if broken or now != self.identity:
            what = (broken if broken else
                    f"truncated from {self.identity.size:,} to {now.size:,} bytes"
                    if now.size < self.identity.size else
                    "rewritten in place" if now.size == self.identity.size else
                    f"grown to {now.size:,} bytes")
            if not broken:  # refused from now on, whatever the file looks like later
                self._why = what
                self._breaks += 1
                self._decided = self._breaks  # no recovery: refused until loaded again
                self._tell()
            raise TableChanged(f"table file {self.path.name} changed on disk since it was "
                               f"loaded ({what}); refusing to answer from it until it is "
                               "loaded again")

    def replaced(self) -> bool:
        """Whether the path now names another file (renamed over: the mapped one is intact)."""
        try:
            return Identity.of(os.stat(self.path)) != self.identity
        except OSError:
            return True

    # -- content: what the mapping reads -----------------------------------------------------

    def _read_content(self):
        """The content version and checksums of the open file (its metadata read through
        the descriptor: the path may name another file by now); None if not an artifact."""
        try:
            return self._content_of(artifact.read_meta(f"/proc/self/fd/{self._fd}"))
        except (ArtifactError, OSError):
            return None

    def holds(self, meta: artifact.ArtifactMeta) -> bool:
        """Whether the open file's metadata is ``meta``'s now (its content version, layout
        and checksums): what a loader read before a writer came is still what is there."""
        now = self._read_content()
        return now is not None and now[0] == self._content_of(meta)[0]

    @staticmethod
    def _content_of(meta: artifact.ArtifactMeta):
        return (meta.version, meta.data_offset, meta.data_length,
                tuple(t.sha256 for t in meta.tables)), meta

    def _same_content(self) -> bool:
        """Whether the open file still holds the bytes read at load: the same content
        version and layout, and every mapped table's checksum (read from the file)."""
        if self._content is None:  # nothing mapped from it yet (opened for writing as its
            return True  # metadata was read): whatever it holds is what the caller maps
        now = self._read_content()
        if now is None or now[0] != self._content[0]:
            return False
        meta = now[1]
        try:  # read, not mapped: a writer that truncates it meanwhile makes a short read,
            return all(_sha256_at(self._fd, meta.data_offset + t.offset, t.bytes) == t.sha256
                       for t in meta.tables)  # where a mapping's page would fault (SIGBUS)
        except OSError:
            return False

    # -- the lease ---------------------------------------------------------------------------

    def _detach(self) -> None:
        """The lease is being broken (in the signal handler: no locks). Before the writer
        goes on, the mapped pages become zero pages: no search can fault on the file."""
        self._why = "opened for writing by another process while in use"
        self._breaks += 1
        while self._attaching:  # the recovery is mapping the file back: detach after it
            time.sleep(0.001)
        for data in list(self._mapped):
            with contextlib.suppress(OSError):
                residency.detach(data)

    def _stop_searches(self) -> None:
        """After a break (on the lease watcher thread): halt every search reading it, then
        wait on a thread of its own for the writer to close the file (``_recover``)."""
        with self._lock:
            searches = list(self._searches.values())
        for control in searches:
            control.halt("table-changed")
        log.warning("%s was opened for writing while in use: its tables were dropped from "
                    "memory, %d search(es) on it stopped; refused until it is found unchanged "
                    "or loaded again", self.path, len(searches))
        self._tell()
        threading.Thread(target=self._recover, name="pdbtool-lease-recover", daemon=True).start()

    def _recover(self) -> None:
        """Take the lease again once no writer holds the file open (from then on, any
        writer is heard of first); if the bytes are those loaded (a ``touch``), map the file
        back and serve it again; otherwise it stays refused until loaded again."""
        decided = 0
        try:
            decided = self._recover_once()
        except Exception:  # (the file closed meanwhile, say): refused, and decided so
            log.exception("recovering %s after a writer", self.path)
            decided = self._breaks
        finally:  # (a recovery given up for a later break: that break's recovery decides)
            self._decided = max(self._decided, decided)

    def _recover_once(self) -> int:
        """The recovery of the breaks so far; returns their count if it decided on them,
        less if a later break came meanwhile (its own recovery decides)."""
        with self._recheck:
            breaks = self._breaks
            if self._fd < 0 or breaks <= self._restored:
                return breaks
            end = time.monotonic() + RECOVER_SECONDS
            while True:
                if self._fd < 0:
                    return breaks
                why = lease.hold(self._fd, self._detach, self._stop_searches)
                if why is None:
                    break
                if "open for writing" not in why or time.monotonic() > end:
                    return breaks  # still written to, or no lease to be had: refused until
                time.sleep(RECOVER_POLL)  # loaded again
            st = os.fstat(self._fd)
            if st.st_size != self.identity.size or not self._same_content():
                self._why = ("opened for writing by another process while in use, and "
                             "its content changed")
                lease.release(self._fd)  # nothing more to protect: refused until reloaded
                log.warning("%s changed while in use: refused until loaded again", self.path)
                return breaks
            self._attaching = True
            try:
                if self._breaks != breaks or self._releasing:
                    return breaks  # broken again meanwhile (that break's recovery decides),
                    # or done
                for data in self._mapped:
                    residency.attach(data, self._fd)
            finally:
                self._attaching = False
            self.identity = Identity.of(st)
            self._restored = breaks
        log.info("%s was opened for writing but its content is unchanged: serving it again",
                 self.path)
        self._tell()
        return breaks

    def release(self) -> None:
        """No search will read the file again: unmap its tables (zero pages at the same
        addresses: a view still held reads zeros, never the file) and close it."""
        self._releasing = True
        while self._attaching:  # a recovery mapping the file back: detach after it
            time.sleep(0.001)
        for data in self._mapped:
            with contextlib.suppress(OSError):
                residency.detach(data)
        self._mapped = []
        self.close()

    def close(self) -> None:
        if self._fd >= 0:
            lease.release(self._fd)
            os.close(self._fd)
            self._fd = -1

    def __del__(self):
        try:
            self.close()
        except Exception:  # at interpreter exit the modules it uses may be gone
            pass


def _sha256_at(fd: int, offset: int, length: int) -> str:
    """sha256 of ``length`` bytes of ``fd`` from ``offset``, read (OSError if it ends
    before them)."""
    digest = hashlib.sha256()
    end = offset + length
    while offset < end:
        chunk = os.pread(fd, min(READ_STEP, end - offset), offset)
        if not chunk:
            raise OSError(errno.EIO, "the file ends before its tables")
        digest.update(chunk)
        offset += len(chunk)
    return digest.hexdigest()


@contextlib.contextmanager
def said_if_written(path):
    """Within it, an interruption (Ctrl-C, SIGTERM: an exception that is no Exception)
    that comes once ``path`` has taken its new file says so in a note on the exception,
    with whether it was stamped: the command's last line names the file. (A build stopped
    between its rename and its stamp said only "interrupted", exit 130, and the next run
    was refused: the file "exists".)"""
    before = _file_id(path)
    try:
        yield
    except BaseException as e:
        if not isinstance(e, Exception) and _file_id(path) not in (None, before):
            e.add_note(written_note(path))
        raise


def _file_id(path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def written_note(path) -> str:
    """What a stop after ``path`` was written leaves: the file whole, stamped or not."""
    try:
        stamped = is_recorded(artifact.read_meta(path))
    except (ArtifactError, OSError):
        return f"{path} was written whole before it stopped"
    if stamped:
        return f"{path} was written whole and stamped as verified before it stopped"
    return (f"{path} was written whole before it stopped, but not stamped as verified: "
            f"`pdbtool verify {path}` checks it and stamps it")


def confirm(meta: artifact.ArtifactMeta) -> artifact.ArtifactMeta:
    """Re-read a freshly written file's tables from disk, check them, and stamp it."""
    artifact.check_checksums(meta, artifact.map_tables(meta))
    record(meta)
    return meta
