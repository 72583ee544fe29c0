"""A writable cache directory for numba's compiled kernels, whoever runs the tools, and one
that is never stale.

numba keys a cached kernel on its own source file only (its modification time and size),
not on the functions it inlines from other modules: after an edit of
``heuristic_kernels.py`` alone (a ``git pull``, an editable install), ``search_kernel``'s
cached IDA* loop would go on running the old heuristic code inlined into it, against
freshly compiled ``h_init`` of the new one. So every cache lives in a directory named for
a digest of all of the package's numba sources (``kernels-<digest>``): any change of any
of them starts an empty cache, and the kernels compile afresh once.

``ensure_numba_cache`` runs before any kernel module is imported (from
``pdbtool/__init__``) and points NUMBA_CACHE_DIR at that directory, under a
NUMBA_CACHE_DIR the user set, else the first writable of: the package's ``__pycache__``,
the user's cache directory, a private directory under the system's temporary directory (an
unprivileged user, a read-only install, no home: numba would otherwise refuse to import
a kernel at all). Directories of other digests unused for a day are removed.
Loads no numba.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import sys
import tempfile
import time
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
PREFIX = "kernels-"  # kernels-<digest of the numba sources>
STALE_AFTER = 86400  # seconds: another digest's directory unused this long is removed


def writable(directory: Path) -> bool:
    """Whether a cache could be written in ``directory`` (created if missing)."""
    d = directory
    while not d.exists():
        if d.parent == d:
            return False
        d = d.parent
    return d.is_dir() and os.access(d, os.W_OK | os.X_OK)


def user_cache() -> Path | None:
    base = os.environ.get("XDG_CACHE_HOME")
    try:
        return Path(base) / "numba" if base else Path.home() / ".cache" / "numba"
    except (RuntimeError, KeyError):  # no home directory at all
        return None


def private_temp_dir() -> Path:
    """``<tmp>/pdbtool-numba-<uid>``, owned by this user and private; if someone else
    holds that name, a fresh temporary directory."""
    d = Path(tempfile.gettempdir()) / f"pdbtool-numba-{os.getuid()}"
    try:
        d.mkdir(mode=0o700, exist_ok=True)
        st = os.lstat(d)
        if stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and os.access(d, os.W_OK):
            return d
    except OSError:
        pass
    return Path(tempfile.mkdtemp(prefix="pdbtool-numba-"))


def kernel_digest(package: Path = PACKAGE) -> str:
    """A digest of every module of the package that uses numba (names and contents)."""
    h = hashlib.blake2b(digest_size=8)
    for path in sorted(package.glob("*.py")):
        text = path.read_bytes()
        if b"numba" in text:
            h.update(path.name.encode() + b"\0" + text + b"\0")
    return h.hexdigest()


def ensure_numba_cache(package: Path = PACKAGE) -> str | None:
    """Point NUMBA_CACHE_DIR at ``<base>/kernels-<digest>`` (see above) and return it; None
    if it already points there (a child process of one that set it)."""
    name = PREFIX + kernel_digest(package)
    given = os.environ.get("NUMBA_CACHE_DIR")
    if given and Path(given).name == name:
        return None
    if given:
        base = Path(given)
    elif writable(package / "__pycache__"):
        base = package / "__pycache__"
    elif (home := user_cache()) is not None and writable(home):
        base = home
    else:
        base = private_temp_dir()
    chosen = str(base / name)
    os.environ["NUMBA_CACHE_DIR"] = chosen
    if "numba" in sys.modules:  # imported already: its config has read the environment
        sys.modules["numba"].config.CACHE_DIR = chosen
    try:  # its time is its last use (remove_stale)
        Path(chosen).mkdir(parents=True, exist_ok=True)
        os.utime(chosen)
    except OSError:
        pass
    remove_stale(base, name)
    return chosen


def remove_stale(base: Path, keep: str) -> None:
    """Remove the kernel caches of other digests in ``base`` unused for STALE_AFTER seconds
    (best effort: another process may be removing them too)."""
    try:
        others = [d for d in base.glob(PREFIX + "*") if d.name != keep and d.is_dir()]
        for d in others:
            if time.time() - d.stat().st_mtime > STALE_AFTER:
                shutil.rmtree(d, ignore_errors=True)
    except OSError:
        pass
