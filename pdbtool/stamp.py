"""Verified stamps: hash a big table once, trust it while the file is untouched.

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


def stamp_path(path) -> Path:
    return Path(str(path) + ".verified")


def fingerprint(meta) -> dict:
    st = Path(meta.path).stat()
    return {"version": meta.version, "device": st.st_dev, "inode": st.st_ino, "bytes": st.st_size,
            "mtime_ns": st.st_mtime_ns, "ctime_ns": st.st_ctime_ns,
            "sha256": [t.sha256 for t in meta.tables]}


def record(meta) -> None:
    stamp_path(meta.path).write_text(json.dumps(fingerprint(meta)) + "\n")


def is_recorded(meta) -> bool:
    try:
        return json.loads(stamp_path(meta.path).read_text()) == fingerprint(meta)
    except (OSError, ValueError):
        return False
