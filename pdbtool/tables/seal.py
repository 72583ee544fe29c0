"""The seal: a digest of an artifact's HDF5 metadata, checked before HDF5 parses any of it.

HDF5 trusts its own metadata: a flipped byte in an attribute's heap can send the library
into an endless loop or a segmentation fault (found by flipping bytes of an 8-puzzle
table: `pdbtool info` spun for minutes on one, died with SIGSEGV on another), which no
check after the parse can turn into a clear refusal. So every artifact pdbtool writes
starts with a user block of SEAL_BYTES (HDF5's superblock follows it; HDF5 tools read the
file as before) that holds, as one line of JSON after the magic line:

* ``bytes``: the file's size;
* ``data``: [offset, length] of the "tables" data of an installed file, which the tables'
  own sha256 checksums cover ([0, 0] for a packed file: all of it is metadata here);
* ``sha256``: of every byte after the user block but those data.

The rest of the block is zeros, and ``check`` says so of any byte that is not. ``check``
reads the block and hashes those bytes (a few KiB for an installed file, the
whole file for a packed one) before any HDF5 call; a file whose bytes differ is refused
with a message that says so. A file without a user block was written before seals: it is
read as before (``check`` returns None) and its metadata is parsed unchecked. The seal
finds corruption, not forgery: whoever rewrites the metadata can rewrite the seal, which
is why the loader's other checks (version, checksums, ranking, consistency) stay.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import NamedTuple

from pdbtool.errors import ArtifactError

SEAL_BYTES = 4096  # the user block: a power of two >= 512 (HDF5), and the tables' alignment
MAGIC = b"pdbtool-seal 1\n"
HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
READ_CHUNK = 8 << 20


class Seal(NamedTuple):
    """What a file's seal says: its size, where its table data lie (offset, length) and
    the digest of the rest."""

    file_size: int
    data_offset: int
    data_length: int
    sha256: str


def write(path, data_offset: int = 0, data_length: int = 0) -> None:
    """Seal the file at ``path`` (written with a user block of SEAL_BYTES, its data in
    place): the digest of every byte after the block but the table data's. Writers call
    it last, on the temporary file, before it takes its name."""
    size = os.path.getsize(path)
    _check_region(path, size, data_offset, data_length)
    with open(path, "r+b") as f:
        digest = _digest(f, size, data_offset, data_length)
        line = json.dumps({"bytes": size, "data": [data_offset, data_length],
                           "sha256": digest}, sort_keys=True, separators=(",", ":"))
        block = MAGIC + line.encode() + b"\n"
        f.seek(0)
        f.write(block + bytes(SEAL_BYTES - len(block)))


def check(path) -> Seal | None:
    """The seal of the file at ``path`` once its bytes match it; None for a file written
    before seals (HDF5's signature at its first byte). ArtifactError for a damaged seal,
    a size or digest that differs, or a user block that is not a seal."""
    with open(path, "rb") as f:
        head = f.read(SEAL_BYTES)
        if head.startswith(HDF5_SIGNATURE):
            return None
        if not head.startswith(MAGIC):
            raise ArtifactError(f"{path}: not an HDF5 file (no HDF5 signature at its first "
                                "byte, and no pdbtool seal)")
        seal = _parse(path, head)
        if head[head.index(b"\n", len(MAGIC)) + 1:].strip(b"\0"):
            raise ArtifactError(f"{path}: the block of its seal (the first {SEAL_BYTES} bytes) "
                                "holds bytes after the seal where zeros were written: the file "
                                "is corrupted or was edited; refused")
        size = os.fstat(f.fileno()).st_size
        if size != seal.file_size:
            raise ArtifactError(f"{path}: {size:,} bytes where its seal says "
                                f"{seal.file_size:,}: truncated, appended to or rewritten; refused")
        digest = _digest(f, size, seal.data_offset, seal.data_length)
    if digest != seal.sha256:
        where = " outside the tables" if seal.data_length else ""
        raise ArtifactError(f"{path}: its bytes do not match its seal (their sha256{where} is "
                            f"{digest}, the seal says {seal.sha256}): the file is corrupted "
                            "or was edited; refused before HDF5 reads it")
    return seal


def declared(path) -> Seal | None:
    """What the seal at the start of the file ``path`` says, read without checking the file
    against it (``check`` does): its data [0, 0] tell a packed file from an installed one
    before either is hashed. None for a file without a seal, or with one that does not
    parse (``check`` then says what is wrong)."""
    try:
        with open(path, "rb") as f:
            head = f.read(SEAL_BYTES)
        return _parse(path, head) if head.startswith(MAGIC) else None
    except (OSError, ArtifactError):
        return None


def _parse(path, head: bytes) -> Seal:
    try:
        doc = json.loads(head[len(MAGIC):].split(b"\n", 1)[0])
        size, (offset, length), digest = doc["bytes"], doc["data"], doc["sha256"]
        if not all(type(v) is int for v in (size, offset, length)):
            raise TypeError("sizes that are not whole numbers")
        if not isinstance(digest, str) or len(digest) != 64:
            raise ValueError("no sha256")
        _check_region(path, size, offset, length)
    except (ValueError, TypeError, KeyError, ArtifactError) as e:
        raise ArtifactError(f"{path}: its seal (the first {SEAL_BYTES} bytes) is damaged "
                            f"({e}); refused") from None
    return Seal(size, offset, length, digest)


def _check_region(path, size: int, offset: int, length: int) -> None:
    if length == 0 and offset == 0:
        return
    if not (SEAL_BYTES <= offset and 0 < length and offset + length <= size):
        raise ArtifactError(f"{path}: table data at {offset}+{length} is not within the file "
                            f"after its seal ({size} bytes)")


def _digest(f, size: int, offset: int, length: int) -> str:
    """sha256 of bytes [SEAL_BYTES, size) of the open file ``f`` but [offset, offset+length)."""
    sha = hashlib.sha256()
    spans = [(SEAL_BYTES, offset), (offset + length, size)] if length else [(SEAL_BYTES, size)]
    for start, end in spans:
        f.seek(start)
        while start < end:
            piece = f.read(min(READ_CHUNK, end - start))
            if not piece:
                raise ArtifactError(f"{f.name}: ends at byte {start}, before {end}")
            sha.update(piece)
            start += len(piece)
    return sha.hexdigest()


def reseal(path) -> None:
    """Seal a sealed file again over what it holds now, its table data where the old seal
    put them: for tests and tools that edit a file's metadata on purpose (as a forger
    would), so that the checks after the seal's are the ones they meet."""
    with open(path, "rb") as f:
        head = f.read(SEAL_BYTES)
    if head.startswith(HDF5_SIGNATURE):  # written before seals: there is none to rewrite
        return
    old = _parse(path, head)
    write(path, old.data_offset, old.data_length)
