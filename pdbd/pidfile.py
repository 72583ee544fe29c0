"""`pdbd serve --pid-file PATH`: the daemon's process id for `kill -HUP "$(cat PATH)"`,
written once the daemon is bound and serving, removed at exit; a file naming a live
process is never overwritten (another daemon may be using it)."""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path

from pdbtool.errors import PdbError

log = logging.getLogger("pdbd")


class PidFileError(PdbError):
    exit_code = 1


def live_pid(path: Path) -> int | None:
    """The process id in ``path`` if that process is alive; None if there is no file, it
    holds no number, or its process is gone (a stale file left by a crash)."""
    try:
        pid = int(path.read_text().strip())
    except FileNotFoundError:
        return None
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


def stale(path: Path) -> str | None:
    """Why a pid file that is there names no live process (for the log when it is
    replaced), or None if there is none."""
    try:
        text = path.read_text().strip()
    except FileNotFoundError:
        return None
    except OSError as e:
        return f"it could not be read ({e.strerror})"
    if not text.isdigit() or int(text) <= 0:
        return f"it held no process id ({text[:20]!r})"
    return f"process {int(text)} is gone" if live_pid(path) is None else None


class PidFile:
    def __init__(self, path):
        self.path = Path(path)
        self._written = False

    def check(self) -> None:
        """Refuse (PidFileError) if the file names a live process other than this one, or
        its directory is missing or not writable: said at start-up, before the tables."""
        pid = live_pid(self.path)
        if pid is not None and pid != os.getpid():
            raise PidFileError(f"{self.path} names process {pid}, which is running: another "
                               "pdbd? Stop it, or give another --pid-file")
        parent = self.path.parent
        if self.path.is_dir():
            raise PidFileError(f"cannot write the pid file {self.path}: it is a directory")
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
        file or the whole new one)."""
        self.check()
        replaced = stale(self.path)
        tmp = self._temporary()
        try:
            tmp.write_text(f"{os.getpid()}\n")
            os.replace(tmp, self.path)
        except OSError as e:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise PidFileError(f"cannot write the pid file {self.path}: {e.strerror}") from None
        self._written = True
        if replaced:
            log.warning("replaced the pid file %s: %s", self.path, replaced)

    def remove(self) -> None:
        """Remove the file if this process wrote it and it still names this process."""
        if self._written and live_pid(self.path) == os.getpid():
            with contextlib.suppress(OSError):
                self.path.unlink()
        self._written = False
