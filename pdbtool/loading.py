"""Trust on load: the verbs that open a table for use, install one or seal an old one, and
decide when the verifier runs (a valid stamp makes it unneeded). They stand above both the
table types (tables/) and the verifier (verification.py): the table types never call the
verifier, which reads and stamps tables through them.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np

from pdbtool.errors import ArtifactError, BadInput, not_a_directory
from pdbtool.geometry import as_shape
from pdbtool.heuristics.pattern_db import heuristic_from
from pdbtool.heuristics.table_free import Heuristic
from pdbtool.tables import artifact, trust
from pdbtool.tables.files import check_output, remove_stale_partials, writer_name
from pdbtool.tables.packing import unpack
from pdbtool.verification import verify

log = logging.getLogger("pdbtool")


class Trusted(NamedTuple):
    """An installed artifact opened for use: its metadata, its mapped tables, the file
    held open, and the checks that ran ("stamp" when a valid stamp made them unneeded)."""

    meta: artifact.ArtifactMeta
    data: np.ndarray
    pin: trust.Pinned
    checks: tuple[str, ...]


def open_trusted(path) -> Trusted:
    """Map an installed artifact's tables. With a valid stamp for this very file nothing
    is re-checked; without one, every verify check runs. Raises ArtifactError naming the
    file and the problem."""
    pin = trust.Pinned(path)
    if pin.unleased:
        log.warning("%s: no read lease (%s): changing the file in place while a search reads "
                    "it (truncate, cp over it) can kill the process with SIGBUS; roll out a "
                    "new version by renaming it over the old", path, pin.unleased)
    try:
        breaks = pin.breaks  # opened for writing as it loads: loaded again, by the caller
        meta = artifact.read_meta(path)
        data = artifact.map_tables(meta)
        pin.protect(data, meta)
        if trust.is_recorded(meta):
            checks = ("stamp",)
        else:
            try:
                checks = run_checks(path, pin)
            except ArtifactError:
                pin.check()  # opened for writing during the checks: say that instead
                raise
        if pin.replaced() or (pin.breaks != breaks and not (pin.settle() and pin.holds(meta))):
            # (opened for writing as it loaded: a touch is harmless, but the metadata read
            # before another write would describe someone else's tables)
            raise ArtifactError(f"{path}: changed while it was being loaded; try again")
        pin.check()
    except BaseException:  # refused: nothing kept open, mapped or leased (a daemon that
        pin.release()  # is sent SIGHUP again and again over a bad file would grow)
        raise
    return Trusted(meta, data, pin, checks)


def run_checks(path, pin: trust.Pinned | None = None) -> tuple[str, ...]:
    """Every verify check on a file without a valid stamp (held open as ``pin``);
    ArtifactError on a failure."""
    log.warning("%s: no valid verification stamp (new here, or copied, linked or touched "
                "since `pdbtool verify`): every check runs first, seconds to minutes for a "
                "large table; `pdbtool verify %s` stamps it", path, path)
    start = time.perf_counter()
    report = verify(path, stamp=False, pin=pin)
    if not report.ok:
        failed = report.failed
        raise ArtifactError(f"{path}: check {failed.name} failed: {failed.detail} "
                            "(no valid verification stamp, so every check ran)")
    names = tuple(c.name for c in report.checks)
    log.info("%s: no valid verification stamp; ran %s in %.1f s (`pdbtool verify %s` "
             "stamps it)", path, ", ".join(names), time.perf_counter() - start, path)
    return names


def load_heuristic(path, *, reflect: bool = True, shape=None) -> Heuristic:
    """Memory-map an artifact as a heuristic, checked as open_trusted checks it, for boards
    of ``shape`` (default: the artifact's; a rectangle's serves its transpose too), in any
    form geometry.as_shape takes ("3x4", (3, 4), a square's side; BadInput otherwise,
    before the file is opened)."""
    shape = None if shape is None else as_shape(shape)
    opened = open_trusted(path)
    return heuristic_from(opened.meta, opened.data, reflect, opened.pin, shape)


def seal(path) -> artifact.ArtifactMeta:
    """Seal an installed artifact written before seals, in place (artifact.rewrite_sealed);
    a file that had a valid stamp is read back from disk and stamped again (trust.confirm),
    one without stays without."""
    stamped = trust.is_recorded(artifact.read_meta(path))
    meta = artifact.rewrite_sealed(path)
    return trust.confirm(meta) if stamped else meta


def install(src, dst, *, threads=None, force=False, accept=None, progress=None):
    """Unpack ``src`` beside ``dst`` (checksums checked on the way), run every verify
    check, and only then take the name ``dst`` (an atomic rename: a daemon serving the
    old file keeps its mapping) and stamp it; a failed check leaves nothing behind. An
    existing ``dst`` is replaced only with ``force``. ``accept(meta)``, given the pack's
    metadata before anything is unpacked, may refuse it by raising (a name that is
    another table's). ``progress``: unpack's. Returns the verify report."""
    dst = Path(dst)
    if dst.is_dir():
        raise BadInput(f"{dst} is a directory: give the artifact's file name, e.g. {dst}/name.h5")
    if not dst.parent.is_dir():  # said of the name given, not of the staging file's
        raise BadInput(f"{dst}: {not_a_directory(dst.parent)}")
    check_output(dst, inputs=(src,), force=force)
    if accept is not None:
        accept(artifact.read_packed_meta(src))
    remove_stale_partials(dst)
    staging = writer_name(dst, "unverified")
    with trust.said_if_written(dst):
        return _install(src, dst, staging, threads, force, progress)


def _install(src, dst: Path, staging: Path, threads, force, progress):
    try:
        try:
            unpack(src, staging, threads=threads, force=True, progress=progress)
        except ArtifactError as e:  # said of the name asked for (a disk full named the
            # staging file: small/y.h5.20969.1a2b3c4d.unverified), its kind and exit code kept
            e.args = (str(e).replace(str(staging), str(dst)), *e.args[1:])
            raise
        pin = trust.Pinned(staging)
        try:
            report = verify(staging, stamp=False, pin=pin)
            checked = pin.identity  # the file the checks read (kept by the rename)
        finally:
            pin.close()
        if not report.ok:
            raise ArtifactError(f"{src}: unpacked tables fail check {report.failed.name}: "
                                f"{report.failed.detail}")
        check_output(dst, inputs=(src,), force=force)  # again: time has passed
        os.replace(staging, dst)
    finally:
        with contextlib.suppress(OSError):  # renamed, never made, or a read-only disk
            staging.unlink()
    meta = artifact.read_meta(dst)
    try:  # (rewritten since the checks read it: TableChanged, and no stamp)
        trust.record(meta, checked=checked)
    except trust.StampNotWritten as e:  # installed and checked all the same
        return report._replace(meta=meta, note=str(e))
    return report._replace(meta=meta)
