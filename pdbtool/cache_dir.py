"""A writable cache directory for numba's compiled kernels, whoever runs the tools.

numba caches a kernel next to its source (``pdbtool/__pycache__``) or else in the user's
cache directory; when neither is writable (an unprivileged user, a read-only install, no
home) it refuses to import the kernel at all. ``ensure_numba_cache`` runs before any
kernel module is imported (from ``pdbtool/__init__``): in that case it points
NUMBA_CACHE_DIR at a private directory under the system's temporary directory.
Loads no numba.
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent


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


def ensure_numba_cache(package: Path = PACKAGE) -> str | None:
    """Set NUMBA_CACHE_DIR when numba would find no writable cache; returns it, or None
    when nothing needed changing (already set, or a default location is writable)."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return None
    home_cache = user_cache()
    if writable(package / "__pycache__") or (home_cache is not None and writable(home_cache)):
        return None
    chosen = str(private_temp_dir())
    os.environ["NUMBA_CACHE_DIR"] = chosen
    if "numba" in sys.modules:  # imported already: its config has read the environment
        sys.modules["numba"].config.CACHE_DIR = chosen
    return chosen
