"""HDF5 artifact format: write, open (mmap), verify, versions, checksums.

One HDF5 file per catalogue. Every table is stored in its 4-bit form (two
entries a byte: (distance - the group's Manhattan distance) / 2, see
kernels.build.compact) and all tables are concatenated into one flat uint8
dataset "tables" (the search kernel takes one array plus offsets); everything
else is a root attribute: scalars natively, structured lists as JSON strings.

The installed form keeps "tables" contiguous, uncompressed, allocated early and
4096-aligned, so a reader maps it with np.memmap: zero-copy, shared by every
thread and process through the page cache. The packed (zstd) form lives in
packing.py and shares the metadata code here. Both begin with a seal (seal.py): the
digest of the file's HDF5 metadata, checked before HDF5 parses any of it.
"""

import dataclasses
import hashlib
import json
import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import h5py
import numpy as np

from pdbtool.errors import ArtifactError, NotAFile, WrongForm
from pdbtool.geometry import Shape, as_shape
from pdbtool.kernels.ranking import RANK_SCHEME, RANK_VERSION, UNSET
from pdbtool.tables import metadata, seal
from pdbtool.tables.files import atomic_output, file_problem, read_problem

FORMAT_VERSION = 3
FORMAT_HOLDS = "4-bit zero-aware tables, placements in lexicographic order"
# What the earlier formats held: this pdbtool refuses them with a rebuild command.
OLD_FORMATS = {1: "byte tables", 2: "4-bit tables, placements in map x order"}
ENCODING = "md-nibble"  # entry = (distance - md) / 2 in 4 bits; 15 = unreachable
NIBBLE_UNSET = 15
DATASET = metadata.DATASET  # the one dataset: every table's bytes, back to back
ALIGNMENT = 4096
INSTALLED = "installed"
PACKED = "packed"
ZSTD_FILTER = 32015  # the registered HDF5 filter id of zstd

HASH_CHUNK = 64 << 20  # hash in big slices: fast, and a memmap is never copied
STATS_CHUNK = 4 << 20  # np.bincount widens to intp: keep its temporary small

# Root attributes in the order they are written (same order -> same bytes).
ATTR_ORDER = (
    "format_version", "form", "partition", "size", "goal", "rank_scheme",
    "rank_version", "zero_aware", "encoding", "builder_version", "build", "tables", "groups",
    "version",
)
# A rectangle's artifact also has "cols" ("size" is then its rows); a square's has none, so
# its bytes and content version are what they were before rectangles.


class UnreadableFile(ArtifactError):
    """An artifact's file exists but cannot be opened for reading (its mode, owner)."""


class TableData(NamedTuple):
    """A built table, ready to be written."""

    name: str
    tiles: tuple[int, ...]
    cells: int
    entries: int                # (placement, region) entries, two to a byte
    packed: np.ndarray          # 1-D uint8, the 4-bit entries
    histogram: tuple[int, ...]  # count of each distance 0..max, unset entries excluded
    unset: int                  # count of unreachable entries
    saturated: int = 0          # entries stored as Manhattan + 28, below their distance


@dataclass(frozen=True)
class TableInfo:
    name: str
    tiles: tuple[int, ...]
    cells: int
    entries: int  # (placement, region) entries
    offset: int  # byte offset of the table inside the flat "tables" dataset
    sha256: str  # of the table's bytes
    histogram: tuple[int, ...]  # count of each distance 0..max, unset entries excluded
    unset: int  # count of unreachable entries

    @property
    def bytes(self) -> int:
        return (self.entries + 1) // 2


@dataclass(frozen=True)
class GroupInfo:
    tiles: tuple[int, ...]
    table: int  # index into ArtifactMeta.tables
    cell_map: tuple[int, ...]
    partition: int  # the additive partition of the catalogue it belongs to


@dataclass(frozen=True)
class ArtifactMeta:
    path: str
    format_version: int
    form: str
    partition: str
    size: int
    goal: str
    rank_scheme: str
    rank_version: int
    zero_aware: bool
    encoding: str
    builder_version: str
    build: dict
    tables: tuple[TableInfo, ...]
    groups: tuple[GroupInfo, ...]
    version: str
    data_offset: int | None  # byte offset of "tables" in the file; None when packed
    data_length: int  # bytes in "tables" (= total_bytes)
    file_size: int
    cols: int | None = None  # a rectangle's columns ("size" its rows); None: a square
    sealed: bool = False  # its metadata checked against its seal; False: written before seals

    @property
    def shape(self) -> Shape:
        return Shape(self.size, self.cols or self.size)

    @property
    def total_entries(self) -> int:
        return sum(t.entries for t in self.tables)

    @property
    def total_bytes(self) -> int:
        return sum(t.bytes for t in self.tables)

    @property
    def partitions(self) -> int:
        return 1 + max(g.partition for g in self.groups)

    def to_dict(self) -> dict:
        """The metadata for --json: the fields, and the board's ``rows`` and ``cols`` for
        every table (``size`` is the file's attribute: a rectangle's rows, read alone as a
        square's side)."""
        d = dataclasses.asdict(self)
        d["total_entries"] = self.total_entries
        d["rows"], d["cols"] = self.shape.rows, self.shape.cols
        return d


# ---------------------------------------------------------------- writing


def write_artifact(path, *, partition, size, goal, zero_aware, tables, groups, build,
                   builder_version, replace: bool = True) -> ArtifactMeta:
    """Write an installed artifact atomically and return its metadata; without ``replace``
    a file that appeared at ``path`` meanwhile is kept (files.atomic_output).

    size: the board's shape (a Shape, or a square's side); tables: TableData each; groups: anything with .tiles, .table, .cell_map and
    .partition (a catalogue.GroupPlan or a GroupInfo).
    """
    arrays = [_check_array(t.name, t.packed) for t in tables]
    infos, offset = [], 0
    for t, a in zip(tables, arrays):
        if a.size != (t.entries + 1) // 2:
            raise ValueError(f"table {t.name!r}: {a.size} bytes for {t.entries} entries")
        infos.append(TableInfo(str(t.name), _ints(t.tiles), int(t.cells), int(t.entries),
                               offset, sha256_of(a), _ints(t.histogram), int(t.unset)))
        offset += a.size
    ginfos = [GroupInfo(_ints(g.tiles), int(g.table), _ints(g.cell_map), int(g.partition))
              for g in groups]
    problem = _layout_problem(infos, ginfos)
    if problem:
        raise ValueError(problem)
    attrs = {
        "format_version": FORMAT_VERSION,
        "form": INSTALLED,
        "partition": str(partition),
        "size": int(as_shape(size).rows),
        "goal": str(goal),
        "rank_scheme": RANK_SCHEME,
        "rank_version": RANK_VERSION,
        "zero_aware": bool(zero_aware),
        "encoding": ENCODING,
        "builder_version": str(builder_version),
        "build": _to_json(build),
        "tables": _to_json([dataclasses.asdict(t) for t in infos]),
        "groups": _to_json([dataclasses.asdict(g) for g in ginfos]),
    }
    if not as_shape(size).square:
        attrs["cols"] = int(as_shape(size).cols)
    attrs["version"] = content_version(attrs["partition"], attrs["size"], attrs["goal"],
                                       RANK_SCHEME, RANK_VERSION, bool(zero_aware), ENCODING,
                                       infos, ginfos, attrs.get("cols"))
    with atomic_output(path, replace=replace) as tmp:
        data_offset = create_installed_file(tmp, attrs, offset)
        with open(tmp, "r+b") as out:
            for info, a in zip(infos, arrays):
                out.seek(data_offset + info.offset)
                out.write(memoryview(a))  # straight from the caller's array, no copy
        seal.write(tmp, data_offset, offset)
    return read_meta(path)


def create_installed_file(path, attrs, length) -> int:
    """Create an installed-form file: `attrs` on the root and an uninitialised
    contiguous "tables" dataset of `length` bytes; return its byte offset.

    The caller then writes the data with plain file I/O at that offset: the
    layout is fixed and allocated, so this is exactly where HDF5 would put it;
    and then seals the file (seal.write), whose user block is left for it here.
    """
    with h5py.File(path, "w", alignment_threshold=ALIGNMENT, alignment_interval=ALIGNMENT,
                   userblock_size=seal.SEAL_BYTES) as f:
        write_attrs(f, attrs)
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_layout(h5py.h5d.CONTIGUOUS)
        dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
        dcpl.set_fill_time(h5py.h5d.FILL_TIME_NEVER)  # we overwrite every byte anyway
        dcpl.set_obj_track_times(False)  # no timestamps: equal content, equal bytes
        space = h5py.h5s.create_simple((length,))
        ds = h5py.h5d.create(f.id, DATASET.encode(), h5py.h5t.NATIVE_UINT8, space,
                             dcpl=dcpl)
        return ds.get_offset()


def rewrite_sealed(path) -> ArtifactMeta:
    """Write an installed artifact from before seals again with one (`pdbtool seal`): the
    same attributes and table bytes in a new file that begins with its seal, every
    table's checksum checked first, renamed over ``path`` (a process that has the old
    file open keeps its mapping). ArtifactError for a file sealed already."""
    meta, data = open_tables(path, verify=True)
    if meta.sealed:
        raise ArtifactError(f"{path}: sealed already")
    attrs = read_attrs(path)
    with atomic_output(path) as tmp:
        offset = create_installed_file(tmp, attrs, meta.data_length)
        with open(tmp, "r+b") as out:
            out.seek(offset)
            for start in range(0, meta.data_length, HASH_CHUNK):
                out.write(memoryview(data[start:start + HASH_CHUNK]))
        seal.write(tmp, offset, meta.data_length)
    return read_meta(path)


def write_attrs(h5file, attrs):
    """Write root attributes in a fixed order so equal metadata gives equal bytes."""
    for key in ordered_keys(attrs):
        h5file.attrs[key] = attrs[key]


def ordered_keys(attrs):
    known = [k for k in ATTR_ORDER if k in attrs]
    return known + sorted(k for k in attrs if k not in ATTR_ORDER)


def read_attrs(path) -> dict:
    """All root attributes of an artifact, in write order (for copying them)."""
    try:
        with h5py.File(path, "r") as f:
            attrs = {k: f.attrs[k] for k in f.attrs}
    except Exception as e:  # noqa: BLE001 (HDF5 raises many kinds on a damaged file)
        raise ArtifactError(f"{path}: unreadable HDF5 file ({e})") from None
    return {k: attrs[k] for k in ordered_keys(attrs)}


def value_histogram(dist) -> tuple[tuple[int, ...], int]:
    """(count of each distance 0..max, count of UNSET) of a distance table."""
    counts = np.zeros(256, np.int64)
    for start in range(0, dist.size, STATS_CHUNK):
        counts += np.bincount(dist[start:start + STATS_CHUNK], minlength=256)
    values = np.flatnonzero(counts[:UNSET])
    top = int(values[-1]) + 1 if values.size else 0
    return tuple(int(c) for c in counts[:top]), int(counts[UNSET])


def sha256_of(a) -> str:
    view = memoryview(a)
    sha = hashlib.sha256()
    for start in range(0, len(view), HASH_CHUNK):
        sha.update(view[start:start + HASH_CHUNK])
    return sha.hexdigest()


def content_version(partition, size, goal, rank_scheme, rank_version, zero_aware, encoding,
                    tables, groups, cols=None) -> str:
    """Short content hash: what the tables hold and how they are looked up,
    never when or how they were built. Same tables -> same version. ``cols``: a
    rectangle's columns (None for a square, whose hash does not name it)."""
    doc = {
        "partition": partition, "size": size, "goal": goal,
        **({} if cols is None else {"cols": cols}),
        "rank_scheme": rank_scheme, "rank_version": rank_version,
        "zero_aware": zero_aware, "encoding": encoding,
        "tables": [[t.name, t.tiles, t.cells, t.entries, t.sha256] for t in tables],
        "groups": [dataclasses.asdict(g) for g in groups],
    }
    return hashlib.sha256(_to_json(doc).encode()).hexdigest()[:12]


def _check_array(name, a):
    if not isinstance(a, np.ndarray) or a.dtype != np.uint8 or a.ndim != 1:
        raise ValueError(f"table {name!r}: need a 1-D uint8 numpy array")
    if a.size == 0:
        raise ValueError(f"table {name!r} is empty")
    return np.ascontiguousarray(a)  # copies only if the caller passed a strided view


def _ints(values) -> tuple[int, ...]:
    return tuple(int(v) for v in values)


def _to_json(obj) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=_json_default)


def _json_default(obj):
    if isinstance(obj, (np.generic, np.ndarray)):  # numpy numbers in build parameters
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"cannot store {type(obj).__name__} in artifact metadata")


# ---------------------------------------------------------------- reading


def read_meta(path) -> ArtifactMeta:
    """Metadata of an installed artifact; refuses anything else with ArtifactError."""
    return _read_meta(path, INSTALLED)


def read_packed_meta(path) -> ArtifactMeta:
    """Metadata of a packed (shipping) artifact; data_offset is None."""
    return _read_meta(path, PACKED)


def map_tables(meta: ArtifactMeta) -> np.ndarray:
    """The flat table data of an installed artifact, memory-mapped read-only (no copy)."""
    return np.memmap(meta.path, np.uint8, mode="r", offset=meta.data_offset,
                     shape=(meta.data_length,))


def check_checksums(meta: ArtifactMeta, data) -> None:
    """Raise ArtifactError naming the first table whose sha256 does not match."""
    for t in meta.tables:
        got = table_sha256(data, t)
        if got != t.sha256:
            raise ArtifactError(
                f"{meta.path}: table {t.name!r} checksum mismatch (sha256 {got[:16]}..., "
                f"expected {t.sha256[:16]}...); the file is corrupted")


def read_any_meta(path) -> ArtifactMeta:
    """Metadata of an installed or a packed artifact (the file read and its seal checked
    once: a pack's seal covers the whole file)."""
    return _read_meta(path, None)


def open_tables(path, *, verify=True) -> tuple[ArtifactMeta, np.ndarray]:
    """Map the flat table data read-only; with verify, check every table's sha256."""
    meta = read_meta(path)
    data = map_tables(meta)
    if verify:
        check_checksums(meta, data)
    return meta, data


def table_view(data, table: TableInfo) -> np.ndarray:
    """One table's bytes inside the flat data (a view, no copy)."""
    return data[table.offset:table.offset + table.bytes]


def table_sha256(data, table: TableInfo) -> str:
    return sha256_of(table_view(data, table))


def table_checksums_ok(meta, data) -> list[tuple[str, bool]]:
    return [(t.name, table_sha256(data, t) == t.sha256) for t in meta.tables]


def scan_artifacts(directory, patterns=("*.h5",)) -> list[tuple[Path, str | None]]:
    """Every entry of a directory named like an artifact, sorted by name, each with the
    reason it cannot be one (file_problem) or None: nothing is skipped in silence."""
    d = Path(directory)
    paths = sorted({p for pattern in patterns for p in d.glob(pattern)})
    return [(p, file_problem(p)) for p in paths]


def find_artifacts(directory) -> list[Path]:
    """Installed artifacts (*.h5, regular files) in a directory, sorted by name."""
    return [p for p, problem in scan_artifacts(directory) if problem is None]


def is_hdf5(path) -> bool:
    """Whether ``path`` holds an HDF5 file (a table or a pack, sealed or not)."""
    try:
        return bool(h5py.is_hdf5(str(path)))
    except OSError:
        return False


STAMP_SUFFIX = ".verified"  # a table's verification stamp: the table's name and this


def stamp_of(path) -> Path | None:
    """The table whose verification stamp ``path`` is (an HDF5 file beside it), else None."""
    table = Path(str(path).removesuffix(STAMP_SUFFIX))
    if str(path).endswith(STAMP_SUFFIX) and table.is_file() and is_hdf5(table):
        return table
    return None


def artifact_filename(partition) -> str:
    """'15/7-8' -> '15-7-8.h5'."""
    name = str(partition).replace("/", "-")
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
        raise ValueError(f"partition {partition!r} does not make a file name")
    return name + ".h5"


def _read_meta(path, form: str | None) -> ArtifactMeta:
    """The metadata of the file ``path``, which must be of ``form`` (None: either)."""
    path = str(path)
    problem = file_problem(path)
    if problem:  # before any open: opening a FIFO would block
        raise NotAFile(f"{path}: {problem}")
    problem = read_problem(path)
    if problem:
        raise UnreadableFile(f"{path}: {problem} (check its mode and owner, and its "
                             "directory's)")
    if (table := stamp_of(path)) and not is_hdf5(path):
        raise WrongForm(f"{path}: the verification stamp of the table {table}, not a table "
                        "or a pack")
    said = seal.declared(path) if form is not None else None
    if said is not None:  # a table of the other form, told by its first bytes before hashing
        _check_form(path, form, INSTALLED if said.data_length else PACKED)
    sealed = seal.check(path)  # before HDF5 reads a byte of it
    if sealed is None and not h5py.is_hdf5(path):
        raise ArtifactError(f"{path}: not an HDF5 file")
    if sealed is None:  # its metadata unchecked: a damaged one may crash HDF5
        metadata.parse_apart(path)
    attrs, layout = metadata.parse(path)
    meta = _meta_from_attrs(path, attrs, layout)
    if form is not None:  # (a file without a seal: by its attribute) before the layout
        _check_form(path, form, meta.form)  # check: the form explains it
    _check_layout(meta, layout)
    if sealed is None:
        return meta
    data = (meta.data_offset, meta.data_length) if meta.form == INSTALLED else (0, 0)
    if data != (sealed.data_offset, sealed.data_length):
        raise ArtifactError(f"{path}: its seal puts the table data at {sealed.data_offset}"
                            f"+{sealed.data_length}, the file at {data[0]}+{data[1]}; refused")
    return dataclasses.replace(meta, sealed=True)


def _check_form(path: str, wanted: str, found: str) -> None:
    """WrongForm (exit 2) when the file is a table of the other form than ``wanted``."""
    if found == wanted:
        return
    if found == PACKED:
        raise WrongForm(f"{path} is a packed table: unpack it first (pdbtool unpack "
                        f"{shlex.quote(path)} -o TABLE.h5)")
    raise WrongForm(f"{path} is an installed table, not a packed one: nothing to unpack "
                    f"(pdbtool verify {shlex.quote(path)} checks it)")


def _meta_from_attrs(path, attrs, layout) -> ArtifactMeta:
    if "format_version" not in attrs:
        raise ArtifactError(f"{path}: missing attribute 'format_version' "
                            "(not a pdbtool artifact)")
    try:
        version = int(attrs["format_version"])
    except (TypeError, ValueError):
        raise ArtifactError(f"{path}: format_version {attrs['format_version']!r} "
                            "is not a number") from None
    if version in OLD_FORMATS:
        name = _text(attrs.get("partition", "CATALOGUE"))
        raise ArtifactError(f"{path}: format version {version} ({OLD_FORMATS[version]}), this "
                            f"pdbtool reads format {FORMAT_VERSION} ({FORMAT_HOLDS}): rebuild "
                            f"it with `pdbtool build {name}`")
    if version != FORMAT_VERSION:
        raise ArtifactError(f"{path}: format version {version}, "
                            f"this pdbtool reads {FORMAT_VERSION}")
    missing = [k for k in ATTR_ORDER if k not in attrs]
    if missing:
        raise ArtifactError(f"{path}: missing attribute(s) {', '.join(missing)}")
    text = {k: _text(attrs[k]) for k in ATTR_ORDER if k not in ("size", "rank_version",
                                                               "format_version", "zero_aware")}
    if text["form"] not in (INSTALLED, PACKED):
        raise ArtifactError(f"{path}: unknown form {text['form']!r}")
    try:
        size, rank_version = int(attrs["size"]), int(attrs["rank_version"])
        cols = int(attrs["cols"]) if "cols" in attrs else None
        build = json.loads(text["build"])
        tables = tuple(_table_info(d) for d in json.loads(text["tables"]))
        zero_aware = bool(attrs["zero_aware"])
        groups = tuple(GroupInfo(_ints(d["tiles"]), int(d["table"]), _ints(d["cell_map"]),
                                 int(d["partition"]))
                       for d in json.loads(text["groups"]))
    except (ValueError, KeyError, TypeError) as e:
        raise ArtifactError(f"{path}: malformed metadata ({e!r})") from None
    problem = _layout_problem(tables, groups)
    if problem:
        raise ArtifactError(f"{path}: {problem}")
    meta = ArtifactMeta(
        path=path, format_version=version, form=text["form"],
        partition=text["partition"], size=size, goal=text["goal"],
        rank_scheme=text["rank_scheme"], rank_version=rank_version,
        zero_aware=zero_aware, encoding=text["encoding"],
        builder_version=text["builder_version"], build=build, tables=tables,
        groups=groups, version=text["version"],
        data_offset=layout["offset"] if layout else None,
        data_length=int(layout["shape"][0]) if layout and layout["shape"] else 0,
        file_size=os.path.getsize(path), cols=cols,
    )
    expected = content_version(meta.partition, meta.size, meta.goal, meta.rank_scheme,
                               meta.rank_version, meta.zero_aware, meta.encoding, tables, groups,
                               cols)
    if meta.version != expected:
        raise ArtifactError(f"{path}: version attribute {meta.version!r} does not match "
                            f"the metadata ({expected!r}); the file is corrupted")
    return meta


def _table_info(d) -> TableInfo:
    return TableInfo(str(d["name"]), _ints(d["tiles"]), int(d["cells"]), int(d["entries"]),
                     int(d["offset"]), str(d["sha256"]), _ints(d["histogram"]),
                     int(d["unset"]))


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _layout_problem(tables, groups) -> str | None:
    """What is inconsistent in the tables/groups description, or None."""
    if not tables:
        return "no tables"
    if not groups:
        return "no groups"
    offset = 0
    for t in tables:
        if t.entries <= 0:
            return f"table {t.name!r} is empty"
        if t.offset != offset:
            return f"table {t.name!r} has offset {t.offset}, expected {offset}"
        if len(set(t.tiles)) != len(t.tiles) or not all(0 < x < t.cells for x in t.tiles):
            return f"table {t.name!r}'s tiles {list(t.tiles)} are not distinct tiles of its board"
        offset += t.bytes
    # (the kernels index arrays by these without bounds checks: a forged map crashed them)
    for g in groups:
        if not 0 <= g.table < len(tables):
            return f"group {list(g.tiles)} refers to missing table {g.table}"
        t = tables[g.table]
        if len(g.tiles) != len(t.tiles) or len(g.cell_map) != t.cells:
            return f"group {list(g.tiles)} does not fit table {t.name!r}"
        if sorted(g.cell_map) != list(range(t.cells)):
            return f"group {list(g.tiles)}'s cell map is not a permutation of its board's cells"
        if tuple(g.cell_map[x] if 0 <= x < t.cells else -1 for x in g.tiles) != tuple(t.tiles):
            return (f"group {list(g.tiles)}'s cell map does not take its tiles to table "
                    f"{t.name!r}'s {list(t.tiles)}")
        if g.partition < 0:
            return f"group {list(g.tiles)} is in partition {g.partition}"
    if sorted({g.partition for g in groups}) != list(range(1 + max(g.partition for g in groups))):
        return "the groups' partitions are not numbered 0, 1, ... without a gap"
    return None


def _check_layout(meta, layout):
    path, total = meta.path, meta.total_bytes
    if layout is None:
        raise ArtifactError(f"{path}: no '{DATASET}' dataset")
    if layout["dtype"] != np.uint8 or len(layout["shape"]) != 1:
        raise ArtifactError(f"{path}: '{DATASET}' is not a flat uint8 dataset")
    if meta.data_length != total:
        raise ArtifactError(f"{path}: '{DATASET}' holds {meta.data_length} bytes, "
                            f"the tables need {total}")
    if meta.form == PACKED:
        if layout["layout"] != h5py.h5d.CHUNKED or ZSTD_FILTER not in layout["filters"]:
            raise ArtifactError(f"{path}: packed '{DATASET}' is not zstd-chunked")
        return
    if layout["layout"] != h5py.h5d.CONTIGUOUS or meta.data_offset is None:
        raise ArtifactError(f"{path}: '{DATASET}' is not contiguous and allocated, "
                            "cannot be memory-mapped")
    end = meta.data_offset + meta.data_length
    if meta.file_size < end:
        raise ArtifactError(f"{path}: truncated: table data ends at byte {end} "
                            f"but the file has {meta.file_size} bytes")
