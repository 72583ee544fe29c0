"""A writable cache directory for numba's compiled kernels, whoever runs the tools, and one
that is never stale.

numba keys a cached kernel on its own source file only (its modification time and size),
not on the functions it inlines from other modules: after an edit of ``heuristic.py``
alone (a ``git pull``, an editable install), ``ida``'s cached loop would go on running the
old heuristic code inlined into it, against freshly compiled ``h_init`` of the new one. So
every cache lives in a directory named for a digest of the kernels' sources (every module
of this folder, ``kernels-<digest>``): any change of any of them starts an empty cache, and
the kernels compile afresh once. An edit elsewhere in the package compiles nothing.

``use_kernel_cache`` runs from ``pdbtool/kernels/__init__`` before any kernel module is
imported and gives numba that directory in its configuration (``numba.config.CACHE_DIR``):
the caller's environment is left as it was. The directory is under a NUMBA_CACHE_DIR the
user set, else the first writable of: this folder's ``__pycache__``, the user's cache
directory, a private directory under the system's temporary directory (an unprivileged
user, a read-only install, no home: numba would otherwise refuse to import a kernel at
all). A child process (the builder's workers, search.warm's compiler, a Ray node) imports
this package and finds the same directory by the same rules. Directories of other digests
unused for a day are removed.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
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
    """A digest of every module of the kernels (names and contents)."""
    h = hashlib.blake2b(digest_size=8)
    for path in sorted(package.glob("*.py")):
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def choose(package: Path = PACKAGE) -> Path:
    """``<base>/kernels-<digest>``, the base chosen by the rules above."""
    given = os.environ.get("NUMBA_CACHE_DIR")
    if given:
        base = Path(given)
    elif writable(package / "__pycache__"):
        base = package / "__pycache__"
    elif (home := user_cache()) is not None and writable(home):
        base = home
    else:
        base = private_temp_dir()
    return base / (PREFIX + kernel_digest(package))


def use_kernel_cache(package: Path = PACKAGE) -> Path:
    """Give numba the cache directory (``choose``) and return it. The environment is not
    changed; numba reads its configuration, which no NUMBA_* variable set later undoes
    (it reloads the variables only when one of them changes)."""
    import numba

    chosen = choose(package)
    numba.config.CACHE_DIR = str(chosen)
    try:  # its time is its last use (remove_stale)
        chosen.mkdir(parents=True, exist_ok=True)
        os.utime(chosen)
    except OSError:
        pass
    remove_stale(chosen.parent, chosen.name)
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
