"""`pdbd serve --pid-file PATH`: the daemon's process id for `kill -HUP "$(cat PATH)"`,
written once the daemon is bound and serving, removed at exit; a file naming a live
pdbd is never overwritten (another daemon may be using it; a daemon holds a lock on the
file it wrote while it lives); one naming a process that is gone or is another program
(its number taken again) is replaced, with a warning."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import stat
from pathlib import Path

from pdbtool.errors import PdbError

log = logging.getLogger("pdbd")


class PidFileError(PdbError):
    exit_code = 1


def _read(path: Path) -> str | None:
    """The file's text; None if there is none. Never blocks: a FIFO or a device is not
    read (check refuses them)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        return path.read_text()
    except FileNotFoundError:
        return None


def command_of(pid: int) -> str | None:
    """The command line of process ``pid`` (/proc); None where it cannot be read, or is
    empty (a process not yet exec'd, a zombie, a kernel thread: nothing to tell by)."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return " ".join(a.decode(errors="replace") for a in raw.split(b"\0") if a) or None


def live_pid(path: Path) -> int | None:
    """The process id in ``path`` if that process is alive; None if there is no file, it
    holds no number, or its process is gone (a stale file left by a crash)."""
    try:
        pid = int((_read(path) or "").strip())
    except (OSError, ValueError):
        return None
    if pid <= 0:
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        return pid  # alive, another user's
    return pid


def locked(path: Path) -> bool:
    """Whether a daemon holds the file's lock (``PidFile.write`` takes it for the
    daemon's life: gone with the process, however it ends)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def other_pdbd(path: Path) -> int | None:
    """The live process ``path`` names if it is not this one and is a pdbd: it holds the
    file's lock (a daemon started from Python too, whatever its command line), or, for a
    daemon of an older pdbd that took none, its command line names pdbd. A process that
    took the number of one gone (after an OOM kill or a reboot) is not in the way."""
    pid = live_pid(path)
    if pid is None:
        return None
    if locked(path):  # first: another daemon's number may be this one's (pid namespaces)
        return pid
    if pid == os.getpid():
        return None
    command = command_of(pid)
    return None if command is not None and "pdbd" not in command else pid


def stale(path: Path) -> str | None:
    """Why a pid file that is there names no live pdbd (for the log when it is replaced),
    or None if there is none."""
    try:
        text = _read(path)
    except OSError as e:
        return f"it could not be read ({e.strerror})"
    if text is None:
        return None
    text = text.strip()
    if not text.isdigit() or int(text) <= 0:
        return f"it held no process id ({text[:20]!r})"
    pid = int(text)
    if live_pid(path) is None:
        return f"process {pid} is gone"
    if pid != os.getpid() and other_pdbd(path) is None:
        return f"process {pid} is not a pdbd ({(command_of(pid) or '')[:60]})"
    return None


@contextlib.contextmanager
def _directory_locked(directory: Path):
    """An exclusive lock on ``directory`` (flock; held for microseconds) while the block
    runs; none where the directory cannot be opened (the write then says why)."""
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        yield
        return
    try:
        with contextlib.suppress(OSError):  # a file system without flock: as before
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # the lock with it


class PidFile:
    def __init__(self, path):
        self.path = Path(path)
        self._written = False
        self._lock_fd = -1  # the written file, locked (``locked``) while the daemon lives

    def check(self) -> None:
        """Refuse (PidFileError) if the file names a live process other than this one, or
        its directory is missing or not writable: said at start-up, before the tables."""
        pid = other_pdbd(self.path)
        if pid is not None:
            raise PidFileError(f"{self.path} names process {pid}, which is running: another "
                               "pdbd? Stop it, or give another --pid-file")
        parent = self.path.parent
        if self.path.is_dir():
            raise PidFileError(f"cannot write the pid file {self.path}: it is a directory")
        if self.path.exists() and not self.path.is_file():  # a FIFO blocked the start
            raise PidFileError(f"cannot write the pid file {self.path}: it is not a regular "
                               "file")
        if parent.exists() and not parent.is_dir():
            raise PidFileError(f"cannot write the pid file {self.path}: {parent} is not a "
                               "directory")
        if not parent.is_dir():
            raise PidFileError(f"cannot write the pid file {self.path}: no such directory "
                               f"{parent}")
        if not os.access(parent, os.W_OK | os.X_OK):  # a read-only disk too (EROFS)
            raise PidFileError(f"cannot write the pid file {self.path}: its directory "
                               f"{parent} is not writable")
        probe = self._temporary()  # what write() will do: a file there (root may have
        try:  # write access to a directory where no file can be made, /proc's)
            os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
        except FileExistsError:
            pass  # another probe of this process's (a reload's check)
        except OSError as e:
            raise PidFileError(f"cannot write the pid file {self.path}: a file cannot be "
                               f"made in {parent} ({e.strerror})") from None
        else:
            with contextlib.suppress(OSError):
                os.unlink(probe)

    def _temporary(self) -> Path:
        """The name the file is written under before it is renamed into place."""
        return self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")

    def write(self) -> None:
        """Write this process's id (checked again first; atomic: a reader sees the old
        file or the whole new one). The check and the rename are one step for the daemons
        that start beside each other (``_directory_locked``): of two that start at once,
        the second finds the first's file and is refused, not both written."""
        with _directory_locked(self.path.parent):
            self._write()

    def _write(self) -> None:
        self.check()
        replaced = stale(self.path)
        tmp = self._temporary()
        fd = -1
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.write(fd, f"{os.getpid()}\n".encode())
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held while the daemon lives
            os.replace(tmp, self.path)  # (the lock goes with the file: taken before)
        except OSError as e:
            if fd >= 0:
                os.close(fd)
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise PidFileError(f"cannot write the pid file {self.path}: {e.strerror}") from None
        self._lock_fd = fd
        self._written = True
        if replaced:
            log.warning("replaced the pid file %s: %s", self.path, replaced)

    def remove(self) -> None:
        """Remove the file if this process wrote it and it still names this process."""
        if self._written and live_pid(self.path) == os.getpid():
            with contextlib.suppress(OSError):
                self.path.unlink()
        self._written = False
        if self._lock_fd >= 0:
            os.close(self._lock_fd)
            self._lock_fd = -1
