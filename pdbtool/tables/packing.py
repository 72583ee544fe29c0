"""pack / unpack (zstd) for shipping artifacts to other machines.

The packed form is also HDF5 with the same root attributes (form="packed"):
"tables" is chunked with the zstd filter (id 32015) in its pipeline, so any
HDF5 tool with the zstd plugin reads it. We need no plugin ourselves: chunks are
compressed with the `zstandard` package on all cores and stored with
write_direct_chunk, and read back with read_direct_chunk. Every frame carries
its content size and a checksum; unpack also checks every table's sha256.
"""

import hashlib
import os
import threading
import time
from pathlib import Path
from collections import deque
from contextlib import closing
from concurrent.futures import ThreadPoolExecutor

import h5py
import zstandard

from pdbtool.errors import ArtifactError, BadInput
from pdbtool.tables import seal, trust
from pdbtool.tables.artifact import (DATASET, INSTALLED, PACKED, ZSTD_FILTER, create_installed_file,
                                     open_tables, read_attrs, read_meta, read_packed_meta,
                                     write_attrs)
from pdbtool.tables.files import atomic_output, check_output

DEFAULT_CHUNK = 16 << 20
MAX_CHUNK = (4 << 30) - 1  # HDF5 chunks must stay under 4 GiB
STEP = 1 << 20  # bytes a chunk's compressor takes at a time: an interrupt (Ctrl-C) ends
# the pack within a step of each thread (whole 16 MiB chunks took seconds at level 19)


class Stopped(Exception):
    """A chunk's compression given up: the pack was interrupted."""


def pack(src, dst, *, threads=None, level=10, chunk_bytes=DEFAULT_CHUNK, force=False,
         progress=None) -> dict:
    """Write a zstd-chunked copy of installed artifact `src` to `dst` (atomically),
    checking the source tables' checksums on the way. An existing `dst` is replaced only
    with ``force`` (files.check_output), and never an installed table; a `dst` named .h5 is
    refused (a directory's tables are its *.h5). The source is held as the searches hold a
    table (trust.Pinned): a source opened for writing meanwhile (truncated, say) is read as zero
    pages, never faults the pack, and the pack is refused with nothing written.
    ``progress(done, total)``: the table's bytes packed so far, after each chunk."""
    if not 1 <= chunk_bytes <= MAX_CHUNK:
        raise ValueError(f"chunk_bytes must be in 1..{MAX_CHUNK}")
    check_output(dst, inputs=(src,), force=force)
    if force and _installed_table(dst):
        raise BadInput(f"{dst} is an installed table: refusing to replace it with a pack, even "
                       "with --force (solves would find a pack where the table was); give "
                       "another output name"
                       + ("" if str(dst).endswith(".pdbpack") else ", e.g. one ending .pdbpack"))
    if Path(dst).suffix == ".h5":  # a directory's tables are its *.h5: a pack there would
        # refuse every solve and pdbd serve of the directory ("is a packed table")
        raise BadInput(f"{dst}: a pack is not named .h5 (the tables of a directory are its "
                       "*.h5 files, and a pack among them is refused); give a name ending "
                       ".pdbpack")
    pin = trust.Pinned(src)
    try:
        with trust.said_if_written(dst):
            return _pack(src, dst, pin, threads, level, chunk_bytes, force, progress)
    finally:
        pin.release()


def _pack(src, dst, pin, threads, level, chunk_bytes, force, progress) -> dict:
    start = time.perf_counter()
    meta, data = open_tables(src, verify=False)  # verified while streaming below
    pin.protect(data, meta)
    attrs = read_attrs(src)
    attrs["form"] = PACKED
    total = meta.data_length
    chunk = min(chunk_bytes, total)  # a fixed-size dataset cannot have a bigger chunk
    offsets = range(0, total, chunk)
    local = threading.local()  # a zstd context is not safe to share between threads
    stop = threading.Event()  # set as the pack ends, an interrupt's end too

    def compress(offset):
        if not hasattr(local, "cctx"):
            local.cctx = zstandard.ZstdCompressor(level=level, write_content_size=True,
                                                  write_checksum=True)
        piece = memoryview(data[offset:offset + chunk])
        if len(piece) < chunk:  # HDF5 stores edge chunks full size: pad with zeros
            piece = memoryview(bytes(piece) + bytes(chunk - len(piece)))
        frame = local.cctx.compressobj(size=len(piece))  # one frame, fed a step at a time
        parts = []
        for start in range(0, len(piece), STEP):
            if stop.is_set():
                raise Stopped
            parts.append(frame.compress(piece[start:start + STEP]))
        parts.append(frame.flush())
        return b"".join(parts)

    hasher = _TableHasher(meta.tables)
    with atomic_output(dst, replace=force) as tmp:
        with h5py.File(tmp, "w", userblock_size=seal.SEAL_BYTES) as f:
            write_attrs(f, attrs)
            dsid = _create_packed_dataset(f, total, chunk, level)
            with closing(_ordered_map(compress, offsets, threads, stop)) as frames:
                for offset, frame in zip(offsets, frames):
                    hasher.update(data[offset:offset + chunk])
                    dsid.write_direct_chunk((offset,), frame)
                    if progress is not None:
                        progress(min(total, offset + chunk), total)
        if pin.breaks:  # what the pack read may be the zero pages of the dropped mapping
            raise ArtifactError(f"{src}: opened for writing by another process while being "
                                "packed; nothing was written (pack it again once it is whole)")
        hasher.check(src, "source")
        seal.write(tmp)  # a pack is hashed whole, its compressed chunks too
    return {
        "partition": meta.partition,
        "version": meta.version,
        "raw_bytes": total,
        "packed_bytes": os.path.getsize(dst),
        "chunks": len(offsets),
        "chunk_bytes": chunk,
        "seconds": time.perf_counter() - start,
    }


def _installed_table(path) -> bool:
    """Whether ``path`` holds an installed artifact (read as one)."""
    try:
        return os.path.isfile(path) and read_meta(path) is not None
    except (ArtifactError, OSError):
        return False


def unpack(src, dst, *, threads=None, force=False, progress=None):
    """Expand packed artifact `src` into installed artifact `dst` (atomically),
    verifying every table's sha256; returns the new ArtifactMeta. ``progress(done,
    total)``: the table's bytes unpacked so far, after each chunk."""
    check_output(dst, inputs=(src,), force=force)
    meta = read_packed_meta(src)
    attrs = read_attrs(src)
    attrs["form"] = INSTALLED
    total = meta.data_length
    local = threading.local()

    def decompress(item):
        index, frame, size = item
        if not hasattr(local, "dctx"):
            local.dctx = zstandard.ZstdDecompressor()
        try:
            declared = zstandard.frame_content_size(frame)
            if declared != size:
                raise ArtifactError(f"{src}: chunk {index} declares {declared} bytes, "
                                    f"expected {size}; corrupted")
            raw = local.dctx.decompress(frame)
        except zstandard.ZstdError as e:
            raise ArtifactError(f"{src}: chunk {index} is corrupted ({e})") from None
        if len(raw) != size:
            raise ArtifactError(f"{src}: chunk {index} holds {len(raw)} bytes, "
                                f"expected {size}")
        return raw

    hasher = _TableHasher(meta.tables)
    with atomic_output(dst, replace=force) as tmp:
        data_offset = create_installed_file(tmp, attrs, total)
        with h5py.File(src, "r") as f, open(tmp, "r+b") as out:
            ds = f[DATASET]
            chunk = ds.chunks[0]
            offsets = range(0, total, chunk)
            frames = ((i, _read_chunk(src, ds, i, off), chunk)
                      for i, off in enumerate(offsets))
            with closing(_ordered_map(decompress, frames, threads)) as raws:
                for offset, raw in zip(offsets, raws):
                    piece = memoryview(raw)[:min(chunk, total - offset)]  # drop padding
                    hasher.update(piece)
                    out.seek(data_offset + offset)
                    out.write(piece)
                    if progress is not None:
                        progress(offset + len(piece), total)
        hasher.check(src, "packed")
        seal.write(tmp, data_offset, total)
    return read_meta(dst)


def _create_packed_dataset(f, total, chunk, level):
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_chunk((chunk,))
    # Optional: HDF5 refuses to create a dataset with a mandatory filter it has
    # no plugin for, and we never need HDF5 to run it (direct chunk I/O).
    dcpl.set_filter(ZSTD_FILTER, h5py.h5z.FLAG_OPTIONAL, (level,))
    dcpl.set_obj_track_times(False)
    space = h5py.h5s.create_simple((total,))
    return h5py.h5d.create(f.id, DATASET.encode(), h5py.h5t.NATIVE_UINT8, space,
                           dcpl=dcpl)


def _read_chunk(src, ds, index, offset) -> bytes:
    try:
        mask, frame = ds.id.read_direct_chunk((offset,))
    except (OSError, ValueError, KeyError) as e:
        raise ArtifactError(f"{src}: chunk {index} is missing or unreadable, "
                            f"truncated? ({e})") from None
    if mask:
        raise ArtifactError(f"{src}: chunk {index} was stored without zstd "
                            f"(filter mask {mask})")
    return frame


def _ordered_map(fn, items, threads, stop: threading.Event | None = None):
    """Like ThreadPoolExecutor.map, but with at most 2 * threads items in flight,
    so memory stays bounded however large the table is. ``stop`` is set when the map
    ends (its caller done, or interrupted), before it waits for the items running: ``fn``
    may look at it to end early."""
    threads = threads or os.cpu_count() or 1
    pool = ThreadPoolExecutor(threads)
    pending = deque()
    try:
        for item in items:
            pending.append(pool.submit(fn, item))
            if len(pending) >= 2 * threads:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        if stop is not None:
            stop.set()
        pool.shutdown(wait=True, cancel_futures=True)


class _TableHasher:
    """sha256 of each table, fed the flat data in order, chunk by chunk."""

    def __init__(self, tables):
        self.tables = tables
        self.digests = []
        self._sha = hashlib.sha256()
        self._left = tables[0].bytes

    def update(self, buf):
        view = memoryview(buf).cast("B")
        while view:
            if self._left == 0:
                raise ValueError("more data than the tables hold")
            take = min(len(view), self._left)
            self._sha.update(view[:take])
            view, self._left = view[take:], self._left - take
            if self._left == 0:
                self.digests.append(self._sha.hexdigest())
                self._sha = hashlib.sha256()
                done = len(self.digests)
                self._left = self.tables[done].bytes if done < len(self.tables) else 0

    def check(self, path, what):
        for t, got in zip(self.tables, self.digests):
            if got != t.sha256:
                raise ArtifactError(
                    f"{path}: table {t.name!r} checksum mismatch in the {what} data "
                    f"(sha256 {got[:16]}..., expected {t.sha256[:16]}...)")
        if len(self.digests) != len(self.tables):
            raise ArtifactError(f"{path}: table data ended early")
