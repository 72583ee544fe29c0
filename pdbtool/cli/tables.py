"""The table commands of pdbtool: build, verify, info, list, pack, unpack, warm, partitions.
Parsing is in main.py; the decisions are the library's (tables/, loading, verification,
selection)."""

from __future__ import annotations

import os
import sys
import time
from contextlib import nullcontext
from pathlib import Path

from pdbtool.cli import PROG
from pdbtool.cli.cluster import open_cluster
from pdbtool.cli.console import batch_exit_code, emit, memory_text, plural, report_error
from pdbtool.errors import BadInput, NotAFile, PdbError, not_a_directory
from pdbtool.progress import Progress
from pdbtool.signals import outcome_out
from pdbtool.tables import artifact, catalogue, files, trust
from pdbtool.tables.files import file_problem


def peaks(build: dict) -> str:
    """The build's peak memory: this process's, and its largest worker's if it had some."""
    own = f"{build.get('peak_memory_bytes', 0) / 2**30:.2f} GiB"
    worker = build.get("peak_worker_memory_bytes")
    return f"{own} (a worker {worker / 2**30:.2f} GiB)" if worker else own


def cmd_build(args) -> int:
    from pdbtool.tables.builder import build
    from pdbtool.tables.catalogue import get

    cat = get(args.partition)  # an unknown name is bad input before the cluster is contacted
    if args.cluster and (args.workers is not None or args.processes is not None):
        raise BadInput("--workers and --processes are for a build on this machine; with "
                       "--cluster each table is a task that takes its node's cores")
    name = artifact.artifact_filename(cat.name + ("-min" if args.min_over_blank else ""))
    target = Path(args.out) / name
    if Path(args.out).suffix == ".h5" and not Path(args.out).is_dir():
        raise BadInput(f"--out {args.out}: --out is the directory the artifact goes in (its "
                       f"file is named after the catalogue: {name}); give the directory")
    files.refuse_special(target)  # before minutes (or hours) of building, not after:
    if os.path.lexists(target) and not args.force:  # a link or a directory, even with --force
        raise BadInput(f"{target} exists: give --force to build it again (the old file is "
                       "replaced only once the new one is whole)")
    if Path(args.out).is_dir():  # (made by the build if it is not there yet)
        files.check_directory(args.out, f"{target}: ")
    else:  # made with its parents, as mkdir -p: never through a file
        through = next((p for p in Path(args.out).absolute().parents
                        if os.path.lexists(p) and not p.is_dir()), None)
        if os.path.lexists(args.out) or through is not None:
            raise BadInput(f"--out {args.out}: {not_a_directory(through or Path(args.out))}")
    with open_cluster(args) if args.cluster else nullcontext() as cluster:
        try:
            meta = build(args.partition, args.out, zero_aware=not args.min_over_blank,
                         workers=args.workers, processes=args.processes,
                         progress=not args.quiet, cluster=cluster, replace=args.force)
            warnings = []
        except trust.StampNotWritten as e:  # the artifact is whole: say so, and succeed
            warn(str(e))
            meta, warnings = e.meta, [str(e)]
        emit(args, {**meta.to_dict(), "stamped": not warnings, "warnings": warnings},
             f"wrote {meta.path}  version {meta.version}  {meta.total_entries:,} entries  "
             f"{meta.build.get('seconds', 0):.1f} s  peak memory {peaks(meta.build)}",
             wrote=meta.path)
        outcome_out()  # written and said before Ray is closed, which a stop no longer interrupts
    return 0


def cmd_verify(args) -> int:
    from pdbtool.verification import verify

    problem = file_problem(args.path)
    if problem:  # the user's path names no file: bad input (2), not a failed check (1)
        raise NotAFile(f"{args.path}: {problem}")
    bars: dict[str, Progress] = {}

    def progress(label: str, done: int, total: int) -> None:
        if label not in bars:
            bars[label] = Progress(f"exhaustive check, {label}", total, unit="placements")
        bar = bars[label]
        bar.update(done)
        if done >= total:
            bar.close()

    report = verify(args.path, full=args.full, seed=args.seed, exhaustive=args.exhaustive,
                    progress=progress)
    lines = [f"{'ok ' if c.ok else 'FAIL'} {c.name:13s} {c.detail} ({c.seconds:.2f} s)" for c in report.checks]
    sampled = report.meta is not None  # (a file refused at its metadata: nothing was sampled)
    if sampled:
        lines.append(f"sampled with seed {report.seed} (--seed {report.seed} repeats them)")
    lines.append(f"{args.path}: {'verified' if report.ok else 'FAILED'}"
                 + (" (exhaustive)" if report.exhaustive and report.ok else ""))
    emit(args, {"path": str(args.path), "ok": report.ok, "seed": report.seed if sampled else None,
                "exhaustive": report.exhaustive, "stamped": report.ok and not report.note,
                "warnings": [report.note] if report.note else [],
                "checks": [c.to_dict() for c in report.checks]}, "\n".join(lines))
    if not report.ok:
        failed = report.failed
        print(f"{PROG}: {args.path}: check {failed.name} failed: {failed.detail}", file=sys.stderr)
    if report.note:
        warn(report.note)
    return 0 if report.ok else 1


def warn(text: str) -> None:
    print(f"{PROG}: warning: {text}", file=sys.stderr, flush=True)


def checksum_state(meta: artifact.ArtifactMeta) -> str:
    """Whether an artifact's checksums were checked: 'verified' (a stamp of this very file
    from `pdbtool verify`, build or unpack), 'unverified' or 'packed'."""
    if meta.form != "installed":
        return "packed"
    return "verified" if trust.is_recorded(meta) else "unverified"


def cmd_info(args) -> int:
    meta = artifact.read_any_meta(args.path)
    state = checksum_state(meta)
    checks = {"verified": "checksums verified (stamp of this file)",
              "unverified": f"checksums not verified here (no valid stamp beside it): pdbtool verify {meta.path}",
              "packed": "packed: pdbtool unpack verifies its checksums"}[state]
    sealed = ("metadata sealed (checked before HDF5 read it)" if meta.sealed else
              "no seal (written before seals: " + (f"pdbtool seal {meta.path})"
                                                   if meta.form == "installed" else
                                                   "unpack it and pack it again)"))
    lines = [f"{meta.path}: {meta.partition} ({meta.form}), {meta.shape}, goal {meta.goal}",
             f"{checks}; {sealed}",
             f"version {meta.version}, format {meta.format_version}, builder {meta.builder_version}, "
             f"rank {meta.rank_scheme} v{meta.rank_version}",
             f"build {meta.build}"]
    for t in meta.tables:
        mean = sum(v * c for v, c in enumerate(t.histogram)) / max(1, sum(t.histogram))
        lines.append(f"  table {t.name}: tiles {list(t.tiles)}, {t.entries:,} entries, mean {mean:.2f}, "
                     f"max {len(t.histogram) - 1}, unset {t.unset:,}, sha256 {t.sha256[:16]}...")
    for g in meta.groups:
        lines.append(f"  group {list(g.tiles)} -> table {g.table}")
    emit(args, {**meta.to_dict(), "state": state}, "\n".join(lines))
    return 0


def cmd_list(args) -> int:
    directory = Path(args.dir)
    if not directory.is_dir():
        raise BadInput(not_a_directory(directory))
    rows = []
    for path, problem in artifact.scan_artifacts(directory, ("*.h5", "*.pdbpack")):
        row = {"path": str(path), "partition": None, "zero_aware": None, "version": None,
               "bytes": None if problem else path.stat().st_size, "sealed": None}
        if problem:
            row["state"] = f"not an artifact: {problem}"
            rows.append(row)
            continue
        try:
            meta = artifact.read_any_meta(path)
            row.update(partition=meta.partition, zero_aware=meta.zero_aware, version=meta.version,
                       state=checksum_state(meta), sealed=meta.sealed)
        except artifact.UnreadableFile as e:
            row["state"] = f"unreadable: {str(e).removeprefix(f'{path}: ')}"
        except PdbError as e:
            row["state"] = f"damaged: {e}"
        rows.append(row)
    text = "\n".join(f"{r['path']:40s} {kind(r):12s} {r['version'] or '-':14s} "
                     f"{size_text(r['bytes'])}  {r['state']}"
                     + (", no seal" if r["sealed"] is False else "")
                     for r in rows) or f"no artifacts in {directory}"
    emit(args, {"artifacts": rows}, text)
    bad = sum(r["partition"] is None for r in rows)
    if bad:  # listed all the same; a script checking a shipment sees it in the exit code
        print(f"{PROG}: {directory}: {plural(bad, 'file')} damaged, unreadable or not an "
              "artifact (each named in the list)", file=sys.stderr, flush=True)
    return 1 if bad else 0


def kind(row: dict) -> str:
    """A listed table's partition, ``-min`` after it for a table of the minimum over the
    blank's regions (as its file is named), or '-'."""
    return (row["partition"] or "-") + ("-min" if row["zero_aware"] is False else "")


def size_text(n: int | None) -> str:
    return f"{'-':>13s}" if n is None else f"{n / 2**20:9.1f} MiB"


def cmd_pack(args) -> int:
    from pdbtool.tables.packing import pack

    stats = pack(args.path, args.output, threads=args.threads, level=args.level, force=args.force,
                 progress=bytes_progress(f"packing {args.path}"))
    emit(args, {"path": str(args.output), "source": str(args.path), **stats},
         f"packed {args.path} -> {args.output}: {stats['raw_bytes']:,} bytes of tables in a pack of {stats['packed_bytes']:,} bytes "
         f"in {stats['seconds']:.1f} s", wrote=args.output)
    return 0


def cmd_unpack(args) -> int:
    from pdbtool.loading import install

    report = install(args.path, args.output, threads=args.threads, force=args.force,
                     accept=lambda meta: refuse_another_tables_name(args.output, meta),
                     progress=bytes_progress(f"unpacking {args.path}"))
    meta = report.meta
    warnings = [report.note] if report.note else []
    if not str(args.output).endswith(".h5"):
        warnings.append(f"{args.output}: a name not ending .h5 is not found in a directory "
                        "(pdbtool solve --artifacts, pdbd serve); give it with --artifact, or "
                        "rename it")
    for text in warnings:
        warn(text)
    emit(args, {**meta.to_dict(), "source": str(args.path), "stamped": not report.note,
                "warnings": warnings},
         f"unpacked {args.path} -> {meta.path}: {meta.partition} version {meta.version}, "
         f"checksums and all {len(report.checks)} verify checks passed", wrote=meta.path)
    return 0


def bytes_progress(label: str, after: float = 1.0):
    """A ``progress(done, total)`` of bytes for pack and unpack: a Progress on stderr once
    the work has taken ``after`` seconds (a small table's says nothing)."""
    start, bar = time.perf_counter(), None

    def progress(done: int, total: int) -> None:
        nonlocal bar
        if bar is None and time.perf_counter() - start >= after:
            bar = Progress(label, total, unit="B")
        if bar is not None:
            bar.update(done)
            if done >= total:
                bar.close()
    return progress


def refuse_another_tables_name(path, meta) -> None:
    """BadInput if ``path``'s name is another table's: another catalogue's, or the other
    variant of its own (zero-aware, or -min over the blank). With --force it replaced that
    table (a 15-puzzle's by the 8-puzzle's, a zero-aware one by its weaker variant), and a
    daemon's reload then served one size fewer or a weaker table, with only a warning."""
    name = Path(path).name
    own = artifact.artifact_filename(meta.partition + ("" if meta.zero_aware else "-min"))
    if catalogue_named(name) and name != own:
        held = meta.partition + ("" if meta.zero_aware else " (min over the blank)")
        raise BadInput(f"{path}: that is another table's name, but the pack holds {held}, "
                       f"named {own}; a directory's tables are found by what they hold, and "
                       f"this name would replace or pass for that table: unpack it as {own} "
                       "(or under a name of your own)")


def catalogue_named(filename: str) -> str | None:
    """The catalogue whose table's file name (or its -min variant's) ``filename`` is."""
    for name in catalogue.catalogues():
        if filename in (artifact.artifact_filename(name), artifact.artifact_filename(name + "-min")):
            return name
    return None


def cmd_seal(args) -> int:
    from pdbtool.loading import seal

    codes = []
    for path in args.paths:  # one line (or JSON object) a file, as each is sealed; a file
        try:  # refused is said, and the others are sealed (the exit code says the worst)
            if (known := artifact.read_meta(path)).sealed:
                emit(args, {"path": str(path), "sealed": True, "already": True,
                            "partition": known.partition, "version": known.version,
                            "stamped": checksum_state(known) == "verified"},
                     f"{path}: sealed already")
                codes.append(0)
                continue
            meta = seal(path)
        except PdbError as e:
            report_error(PROG, args, str(e), e.exit_code)
            codes.append(e.exit_code)
            continue
        codes.append(0)
        stamped = checksum_state(meta) == "verified"
        emit(args, {"path": str(path), "sealed": True, "already": False, "partition": meta.partition,
                    "version": meta.version, "stamped": stamped},
             f"sealed {path}: {meta.partition} version {meta.version}, checksums checked"
             + ("; stamped again" if stamped else "; not stamped (it had no stamp): "
                f"pdbtool verify {path}"))
    return batch_exit_code(codes)


def cmd_warm(args) -> int:
    from pdbtool.search.warm import tight_for_compiling
    from pdbtool.selection import warm

    def starting(shape, heuristic, pending: float):
        if not args.json and pending:
            print(f"{PROG}: compiling the search kernels for {shape} with {heuristic} on this "
                  f"machine, once (numba keeps them in its cache): about {pending:.0f} s",
                  file=sys.stderr, flush=True)
            if tight := tight_for_compiling():
                print(f"{PROG}: warning: {tight}", file=sys.stderr, flush=True)

    def report(w):
        if not args.json:
            print(f"{w.shape} with {w.heuristic}: kernels ready in {w.seconds:.1f} s",
                  file=sys.stderr, flush=True)

    done = warm(args.artifacts, threads=args.threads, starting=starting, report=report)
    emit(args, {"warmed": [{"rows": w.shape.rows, "cols": w.shape.cols, "heuristic": w.heuristic,
                            "seconds": w.seconds} for w in done]},  # (rows, cols as solve's)
         f"kernels ready for {plural(len(done), 'board shape')}")
    return 0


def cmd_partitions(args) -> int:
    rows = []
    for c in catalogue.catalogues().values():
        plan = catalogue.plan_tables(c)
        rows.append({"name": c.name, "side": c.shape.rows if c.shape.square else None,
                     "rows": c.shape.rows, "cols": c.shape.cols,
                     "strength": c.strength, "note": c.note,
                     "partitions": [[list(g) for g in p] for p in c.partitions],
                     "tables_built": len(plan.tables), "table_bytes": c.table_bytes(),
                     "table_bytes_min_over_blank": c.table_bytes(zero_aware=False),
                     "served_bytes": c.served_bytes(),
                     "build_bytes": c.build_bytes()})
    text = "\n".join(
        f"{r['name']:11s} {r['rows']}x{r['cols']}, {plural(len(r['partitions']), 'partition')}, "
        f"groups {r['partitions'][0]}"
        + (" ..." if len(r["partitions"]) > 1 else "")
        + f"\n            {plural(r['tables_built'], 'table')} to build, "
          f"{memory_text(r['table_bytes'])} zero-aware, {memory_text(r['served_bytes'])} in "
          f"memory with its parity bits ({memory_text(r['table_bytes_min_over_blank'])} min "
          "over blank), "
          f"about {memory_text(r['build_bytes'])} to build: {r['note']}" for r in rows)
    emit(args, {"catalogues": rows}, text)
    return 0


