"""An artifact's HDF5 metadata as HDF5 reads it: the root's attributes and the layout of
its "tables" dataset (``parse``), and the guard for a file written before seals
(``parse_apart``).

HDF5 trusts its own metadata: a damaged byte in it can crash the process that parses it
(SIGSEGV) or hang it, which no check after the parse can turn into a clear refusal. A
sealed file's metadata is hashed before HDF5 reads a byte of it (seal.py); a file without
a seal is parsed first in a child process, whose crash or hang becomes this file's
ArtifactError here (the table review found bytes of an unsealed 8-puzzle table that
crashed `verify`, `solve`, `list`, `pdbd serve` and `pdbtool seal` itself)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import h5py

from pdbtool.errors import ArtifactError

DATASET = "tables"
APART_SECONDS = 60  # a parse takes milliseconds; a child still parsing after this hangs
CHILD = "import sys; from pdbtool.tables.metadata import parse; parse(sys.argv[1])"


def parse(path) -> tuple[dict, dict | None]:
    """The root's attributes and the "tables" dataset's layout (None if there is none);
    ArtifactError for a file HDF5 cannot read."""
    try:
        with h5py.File(str(path), "r") as f:
            attrs = {k: f.attrs[k] for k in f.attrs}
            ds = f.get(DATASET)
            return attrs, (layout(ds) if isinstance(ds, h5py.Dataset) else None)
    except Exception as e:  # noqa: BLE001 (HDF5 raises many kinds on a damaged file)
        raise ArtifactError(f"{path}: unreadable HDF5 file, truncated or corrupted ({e})") \
            from None


def layout(ds) -> dict:
    plist = ds.id.get_create_plist()
    return {
        "shape": ds.shape,
        "dtype": ds.dtype,
        "layout": plist.get_layout(),
        "filters": [plist.get_filter(i)[0] for i in range(plist.get_nfilters())],
        "offset": ds.id.get_offset(),
    }


def parse_apart(path) -> None:
    """Parse ``path`` in a child process first: ArtifactError if HDF5 crashes or hangs
    there (a damaged file without a seal); any other failure is left to ``parse``, here,
    to say in its own words."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    try:
        child = subprocess.run([sys.executable, "-c", CHILD, str(path)], env=env,
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, timeout=APART_SECONDS)
    except subprocess.TimeoutExpired:
        raise ArtifactError(damaged(path, f"reading its metadata did not end in "
                                          f"{APART_SECONDS} s")) from None
    if child.returncode < 0:
        name = signal.Signals(-child.returncode).name
        raise ArtifactError(damaged(path, f"reading its metadata crashed HDF5 ({name})"))


def damaged(path, what: str) -> str:
    return (f"{path}: {what}: the file is damaged (written before seals, so nothing checks "
            "its metadata before HDF5 reads it); rebuild it, or unpack a good copy")
