"""When to trust a table file: verification stamps, and opening a file with its checks.

Hashing 600 MB costs about a second, so after a file's checksums have been checked
(`pdbtool verify`, a build re-read from disk, an unpack that ran every check) a stamp
``<artifact>.verified`` records its fingerprint. Loaders skip the hash while the file
still matches it. The fingerprint includes the inode, size, mtime and ctime: a copy,
a rewrite or an edit with the mtime set back all change at least the ctime or the inode,
and so void the stamp.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from . import artifact


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


def open_trusted(path) -> tuple[artifact.ArtifactMeta, np.ndarray]:
    """Map an installed artifact's tables; check every checksum unless a stamp says this
    very file passed already. Raises ArtifactError naming the file and the problem."""
    meta = artifact.read_meta(path)
    data = artifact.map_tables(meta)
    if not is_recorded(meta):
        artifact.check_checksums(meta, data)
    return meta, data


def confirm(meta: artifact.ArtifactMeta) -> artifact.ArtifactMeta:
    """Re-read a freshly written file's tables from disk, check them, and stamp it."""
    artifact.check_checksums(meta, artifact.map_tables(meta))
    record(meta)
    return meta
