"""Writing files safely, and telling what a path is: outputs appear whole under their name
or not at all (``atomic_output``), are never written over an input, a special file or an
existing file unasked (``check_output``), and what a killed writer left is cleaned up
(``remove_stale_partials``). Used by every command that writes a table or a pack."""

from __future__ import annotations

import contextlib
import errno
import functools
import glob
import hashlib
import os
import re
import socket
import stat
import time
from pathlib import Path

from pdbtool.errors import ArtifactError, BadInput


@contextlib.contextmanager
def atomic_output(path, replace: bool = True):
    """Yield a temporary path beside `path`; on success fsync it and rename it
    over `path`, on any failure delete it, so no half-written file is ever seen
    under the final name; a file it replaces keeps its permissions (a checkpoint made
    read-only stays so). Without ``replace``, a file that appeared at `path` meanwhile
    (another writer; it was checked absent before the work) is kept and the new one
    refused (BadInput)."""
    path = Path(path)
    if not path.parent.is_dir():
        raise ArtifactError(f"{path}: directory {path.parent} does not exist")
    if path.is_dir():
        raise ArtifactError(f"{path} is a directory: give a file name")
    refuse_special(path)
    remove_stale_partials(path)
    tmp = partial_name(path)
    try:
        yield tmp
        _fsync(tmp)
        if replace:
            _keep_mode(path, tmp)
            os.replace(tmp, path)
        else:
            _rename_new(tmp, path)
    except BaseException as e:
        with contextlib.suppress(OSError):  # never made, or a read-only disk
            os.unlink(tmp)
        code = write_errno(e)
        if code in WRITE_ERRORS:
            raise ArtifactError(not_written(path, code)) from None
        raise
    with contextlib.suppress(OSError):  # make the rename durable; not every fs allows it
        _fsync(path.parent)


def _keep_mode(path: Path, tmp: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.chmod(tmp, stat.S_IMODE(os.stat(path).st_mode))


NO_LINKS = {errno.EPERM, errno.EOPNOTSUPP, errno.EMLINK}  # a file system without hard links


def _rename_new(tmp: Path, path: Path) -> None:
    """Rename ``tmp`` to ``path``, which must not exist: a hard link (which fails on an
    existing name, atomically), then the temporary name removed; where the file system
    has no hard links, a check and a rename."""
    try:
        os.link(tmp, path)
    except OSError as e:
        if e.errno == errno.EEXIST or (e.errno in NO_LINKS and os.path.lexists(path)):
            raise BadInput(f"{path} appeared while it was being written (another writer?): "
                           "kept, and the new file dropped; give --force to replace it") \
                from None
        if e.errno not in NO_LINKS:
            raise
        os.rename(tmp, path)
        return
    os.unlink(tmp)


LEFT_ELSEWHERE_SECONDS = 24 * 3600  # another machine's temporary file untouched this long is
# a killed writer's (a shared directory: its pid cannot be asked about here)


@functools.cache
def machine_tag() -> str:
    """Eight hex digits naming this machine and its process-id namespace (a container's
    pids are not the host's): a writer's temporary file carries it beside its pid, so a
    pid is only ever asked about where it means that process."""
    try:
        namespace = os.readlink("/proc/self/ns/pid")
    except OSError:
        namespace = ""
    return hashlib.sha1(f"{socket.gethostname()}|{namespace}".encode()).hexdigest()[:8]


def writer_name(path, kind: str = "partial") -> Path:
    """``<name>.<pid>.<machine>.<kind>`` beside ``path``: this process's temporary name
    for it (``partial`` while written, ``unverified`` while an install checks it)."""
    path = Path(path)
    return path.with_name(f"{path.name}.{os.getpid()}.{machine_tag()}.{kind}")


def partial_name(path) -> Path:
    """The name atomic_output writes ``path`` under first, in this process."""
    return writer_name(path, "partial")


# What the disk or the system refuses a writer (HDF5 reports them as errno in a long text).
WRITE_ERRORS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM,
                errno.EFBIG, errno.EIO}


def write_errno(e: BaseException) -> int | None:
    """The errno of a failed write: an OSError's, or the one in the text of the
    RuntimeError h5py raises when HDF5 fails to close or extend a file."""
    if isinstance(e, OSError):
        return e.errno
    found = re.search(r"errno = (\d+)", str(e)) if isinstance(e, RuntimeError) else None
    return int(found.group(1)) if found else None


def not_written(path, code: int) -> str:
    """Why ``path`` could not be written, from the errno (HDF5's own text carries it
    among a dozen fields), for a one-line error."""
    reason = os.strerror(code)
    hint = ("free some space there or write elsewhere"
            if code in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
            else "write to a directory you may write to")
    return (f"{path}: cannot write it in {Path(path).parent}: {reason}; nothing was left "
            f"behind ({hint}, then run the command again)")


def read_problem(path) -> str | None:
    """Why a regular file cannot be opened for reading (its mode, its directory's), or
    None: said before HDF5 tries and reports it in its own words."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as e:
        return f"cannot be read: {e.strerror}"
    os.close(fd)
    return None


def refuse_special(path) -> None:
    """Never replace anything but a regular file (a device, a FIFO, a symbolic link)."""
    path = Path(path)
    if os.path.lexists(path) and (path.is_symlink() or file_problem(path)):
        what = "a symbolic link" if path.is_symlink() else file_problem(path)
        raise BadInput(f"{path} exists and is {what.removeprefix('not a regular file: ')}: "
                            "refusing to replace it; give the path of a regular file")


def check_output(path, *, inputs=(), force: bool = False) -> None:
    """May ``path`` be written? Into a directory that exists and may be written (said
    before the work that makes the file, not after it), never onto an input (even with
    ``force``), never over a non-regular file, over an existing file only with ``force``,
    and never to "-" (a file named so, where standard output was meant)."""
    if str(path) == "-":
        raise BadInput("'-': this output is a file, not standard output; give a file name")
    path = Path(path)
    check_directory(path.parent, f"{path}: ")
    if not os.path.lexists(path):
        return
    for src in inputs:
        with contextlib.suppress(OSError):
            if os.path.samefile(src, path):
                raise BadInput(f"{path} is the input {src}: refusing to write over it; "
                               "give another output name")
    refuse_special(path)
    if not force:
        raise BadInput(f"{path} exists: give --force to replace it")


@contextlib.contextmanager
def directory_made(path):
    """``path`` made with its missing parents (as mkdir -p) for the work in the block; if
    the block fails, the directories it made are removed again, those still empty (a
    failed build said "nothing was left behind" and left them)."""
    path = Path(path)
    made, p = [], path.absolute()
    while not os.path.lexists(p):
        made.append(p)  # deepest first
        p = p.parent
    path.mkdir(parents=True, exist_ok=True)
    try:
        yield path
    except BaseException:
        for d in made:
            with contextlib.suppress(OSError):  # (not empty: someone else's files now)
                d.rmdir()
        raise


def check_directory(directory, what: str = "") -> None:
    """``directory`` exists and this process may make files in it: BadInput if it is not a
    directory, ArtifactError if it may not be written (as the write itself would say)."""
    directory = Path(directory)
    if not directory.is_dir():
        raise BadInput(f"{what}no such directory {directory}" if not os.path.lexists(directory)
                       else f"{what}{directory} is not a directory")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise ArtifactError(f"{what}cannot write in {directory}: {why_unwritable(directory)} "
                            "(write to a directory you may write to)")


def why_unwritable(directory) -> str:
    """The system's own reason a file cannot be made in ``directory`` (a read-only file
    system is not a permission: EROFS, not EACCES), found by trying."""
    probe = Path(directory) / f".pdbtool-probe.{os.getpid()}"
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except OSError as e:
        return e.strerror or os.strerror(errno.EACCES)
    os.unlink(probe)
    return os.strerror(errno.EACCES)


def remove_stale_partials(path) -> list[Path]:
    """Delete the temporary files beside ``path`` (see writer_name; an install's
    ``unverified`` staging file, and its own ``partial``) that killed writers left: of this
    machine, when their process no longer exists; of another machine sharing the
    directory, when untouched for a day. Names without a machine (written before it was
    part of them) count as this machine's. Returns what was removed."""
    path = Path(path)
    removed = []
    writer = r"\.(\d+)(?:\.([0-9a-f]{8}))?"
    pattern = re.compile(re.escape(path.name) + writer + r"\.(partial|unverified)"
                         + r"(" + writer + r"\.partial)?$")
    for p in path.parent.glob(f"{glob.escape(path.name)}.*"):
        m = pattern.match(p.name)
        if m and _left_behind(p, int(m.group(1)), m.group(2)):
            with contextlib.suppress(FileNotFoundError):
                p.unlink()
                removed.append(p)
    return removed


def _left_behind(p: Path, pid: int, machine: str | None) -> bool:
    if machine is None or machine == machine_tag():
        return not process_alive(pid)
    try:
        return time.time() - p.stat().st_mtime > LEFT_ELSEWHERE_SECONDS
    except FileNotFoundError:
        return False


def process_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's live process
    return True


def _fsync(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


FILE_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
              (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
              (stat.S_ISSOCK, "a socket"))


def file_problem(path) -> str | None:
    """Why ``path`` cannot be an artifact file (missing, a dangling symbolic link, a
    directory, a FIFO, a device...), or None for a regular file (or a link to one)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return ("a symbolic link to a missing file" if os.path.islink(path)
                else "no such file")
    except OSError as e:
        return f"cannot be read ({e.strerror})"
    if stat.S_ISREG(mode):
        return None
    kind = next((name for test, name in FILE_KINDS if test(mode)), "not a regular file")
    return f"not a regular file: {kind}"


def private_directory(path) -> Path:
    """``path`` as a directory only this user can enter: created owner-only (0700) if it is
    missing, else refused unless it is a real directory (not a symbolic link), owned by
    this user and closed to others. A cache in a shared place (the system's temporary
    directory) is otherwise a door: another user who makes it first can plant files the
    owner's processes trust, or a link that makes them write elsewhere."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    st = os.lstat(path)
    problem = ("is a symbolic link" if stat.S_ISLNK(st.st_mode) else
               "is not a directory" if not stat.S_ISDIR(st.st_mode) else
               f"belongs to user {st.st_uid}, not {os.getuid()}" if st.st_uid != os.getuid() else
               f"is open to other users (mode {stat.S_IMODE(st.st_mode):o})"
               if st.st_mode & 0o077 else None)
    if problem:
        raise ArtifactError(f"{path} {problem}: refusing to keep tables there; remove it, or "
                            "give a directory of your own")
    return path
