"""Conversions between the wire messages (pdbd.v1) and pdbtool's objects and JSON dicts.

The client turns a SolveResult message back into pdbtool's own SolveResult, so a remote
solve returns what a local one does, and `pdbd query --json` prints exactly the fields of
`pdbtool solve --json`.
"""

from __future__ import annotations

import numbers
from pathlib import Path

from pdbtool.errors import BadInput
from pdbtool.geometry import Shape
from pdbtool.result import SolveResult

from .v1 import solver_pb2 as pb

DEFAULT_GOAL = "blank-last"


def solve_request(tiles, goal: str | None = None, budget: int | None = None,
                  progress_ms: int | None = None, algorithm=None, shape=None) -> pb.SolveRequest:
    """``algorithm``: a name, a pdbtool.search.algorithms.Algorithm (or anything with its fields),
    or None (IDA*). The options must fit their fields (client.checked_algorithm). ``shape``:
    as ``shape_fields`` takes it."""
    a = algorithm
    name = a if isinstance(a, str) else getattr(a, "name", "")
    rows, cols = shape_fields(shape)
    return pb.SolveRequest(tiles=list(tiles), goal=goal or "", node_budget=budget or 0,
                           progress_ms=progress_ms or 0, algorithm=name or "",
                           weight=getattr(a, "weight", None) or 0.0,
                           tt_size=getattr(a, "tt_size", None) or 0,
                           max_memory=getattr(a, "max_memory", None) or 0, rows=rows, cols=cols)


def shape_fields(shape) -> tuple[int, int]:
    """A request's (rows, cols) for ``shape``: ROWSxCOLS text ("3x4", as --shape takes it),
    a (rows, cols) pair (a pdbtool Shape too), or None, (0, 0): a square, whose side the
    server takes from the count. BadInput for anything else (the server checks the sizes)."""
    if shape is None:
        return 0, 0
    pair = Shape.parse(shape) if isinstance(shape, str) else shape
    if isinstance(pair, (tuple, list)) and len(pair) == 2 and all(
            isinstance(n, numbers.Integral) and not isinstance(n, bool) and n > 0 for n in pair):
        return Shape(*map(int, pair))  # (numpy's integers too, as the library takes them)
    raise BadInput(f"shape must be ROWSxCOLS text (e.g. \"3x4\"), a (rows, cols) pair of "
                   f"positive whole numbers or None (a square), not {shape!r:.60}")


def request_shape(m: pb.SolveRequest) -> Shape | None:
    """The shape a request names, None when it names none (a square); BadInput when it
    gives one of rows and cols only."""
    if not m.rows and not m.cols:
        return None
    if not m.rows or not m.cols:
        raise BadInput(f"the request gives rows={m.rows} and cols={m.cols}: give both (the "
                       "board's shape) or neither (a square)")
    return Shape(m.rows, m.cols)


def algorithm_fields(m: pb.SolveRequest) -> dict:
    """The request's algorithm and options as Algorithm's keyword arguments (0 = unset)."""
    return {"name": m.algorithm or "ida", "weight": m.weight or None, "tt_size": m.tt_size or None,
            "max_memory": m.max_memory or None}


def result_message(r: SolveResult, queue_seconds: float = 0.0) -> pb.SolveResult:
    """A pdbtool SolveResult as a wire message."""
    return pb.SolveResult(**result_fields(r, queue_seconds))


def result_fields(r: SolveResult, queue_seconds: float = 0.0) -> dict:
    """The fields of ``result_message``, as a dict: a message's submessage made from it is
    built in place (``reply.results.add(result=...)``), where a message would be copied."""
    rows, cols = r.shape
    # The board, moves and h along the path as they are (sequences of ints, which the
    # message copies in): a list made of each first was a copy more, every result.
    return dict(
        board=r.board, size=rows if rows == cols else 0, rows=rows, cols=cols, goal=r.goal,
        length=r.length, moves=r.moves, blank_moves=r.blank_moves, nodes_expanded=r.nodes_expanded,
        nodes_generated=r.nodes_generated, seconds=r.seconds, initial_h=r.initial_h,
        heuristic=r.heuristic, artifact_version=r.artifact or "",
        # dicts, not pb.Iteration messages: the constructor builds them in place, where
        # each message made here would be built and then copied (half the cost a result)
        iterations=[{"bound": i["bound"], "nodes": i["nodes"]} for i in r.iterations],
        threads=r.threads, note=r.note, queue_seconds=queue_seconds, path_h=r.path_h,
        algorithm=r.algorithm, optimal=r.optimal, bound=r.bound or 0.0,
        peak_memory_bytes=r.peak_memory_bytes,
        **({"dropped": r.dropped, "reexpanded": r.reexpanded} if r.dropped is not None else {}))


def result_from_message(m: pb.SolveResult) -> SolveResult:
    """A result message as pdbtool's SolveResult (its lists taken by slicing, which copies
    a repeated field in one step where ``list()`` iterates it: a client of SolveBatch
    converts every board's)."""
    return SolveResult(
        board=tuple(m.board), goal=m.goal, shape=(m.rows, m.cols) if m.rows else m.size,
        length=m.length, moves=m.moves[:],
        blank_moves=m.blank_moves, nodes_expanded=m.nodes_expanded,
        nodes_generated=m.nodes_generated, seconds=m.seconds, heuristic=m.heuristic,
        initial_h=m.initial_h,
        iterations=[{"bound": i.bound, "nodes": i.nodes} for i in m.iterations],
        artifact=m.artifact_version or None, threads=m.threads, note=m.note,
        path_h=m.path_h[:], algorithm=m.algorithm or "ida", optimal=m.optimal,
        bound=m.bound or None, peak_memory_bytes=m.peak_memory_bytes,
        dropped=m.dropped if m.HasField("dropped") else None,
        reexpanded=m.reexpanded if m.HasField("reexpanded") else None)


def progress_message(control, elapsed: float, queued: bool) -> pb.Progress:
    """A snapshot of a running search's live counters (a pdbtool SearchControl)."""
    generated = control.generated
    rate = generated / elapsed if elapsed > 0 else 0.0
    return pb.Progress(bound=control.bound, nodes_generated=generated,
                       nodes_expanded=control.expanded, nodes_per_second=rate,
                       elapsed_seconds=elapsed, queued=queued)


def progress_dict(m: pb.Progress) -> dict:
    return {"event": "progress", "bound": m.bound, "nodes_generated": m.nodes_generated,
            "nodes_expanded": m.nodes_expanded, "nodes_per_second": round(m.nodes_per_second),
            "elapsed_seconds": round(m.elapsed_seconds, 3), "queued": m.queued}


def artifact_message(loaded, locked: bool = False) -> pb.Artifact:
    """A loaded artifact (pdbtool.loading.Trusted) as listed by Info: the file's name, never
    the server's directories; how much of it is in memory."""
    from pdbtool.tables.residency import resident_bytes

    meta, data = loaded.meta, loaded.data
    return pb.Artifact(
        path=Path(meta.path).name, partition=meta.partition, size=meta.size,
        cols=meta.shape.cols, version=meta.version,
        tables=[pb.Table(name=t.name, sha256=t.sha256, entries=t.entries) for t in meta.tables],
        bytes=data.nbytes, resident_bytes=resident_bytes(data), locked=locked,
        refused=loaded.pin.broken or "")


def info_dict(m: pb.InfoReply) -> dict:
    c = m.counters
    return {
        "version": m.version,
        "threads": m.threads,
        "max_queue": m.max_queue,
        "uptime_seconds": round(m.uptime_seconds, 3),
        "limits": {"max_search_seconds": m.max_search_seconds or None,
                   "max_nodes": m.max_nodes or None, "per_client": m.per_client or None,
                   "max_search_memory": m.max_search_memory or None},
        "overloaded": m.overloaded,
        "sizes": [{"size": s.size or None, "rows": s.rows or s.size, "cols": s.cols or s.size,
                   "heuristic": s.heuristic, "artifact": s.artifact_version or None}
                  for s in m.sizes],
        "artifacts": [{"path": a.path, "partition": a.partition,  # "size": a square's side
                       "size": a.size if a.cols in (0, a.size) else None,  # as under sizes
                       "rows": a.size, "cols": a.cols or a.size,
                       "version": a.version, "bytes": a.bytes,
                       "resident_bytes": a.resident_bytes, "locked": a.locked,
                       "refused": a.refused or None,
                       "tables": [{"name": t.name, "sha256": t.sha256, "entries": t.entries}
                                  for t in a.tables]} for a in m.artifacts],
        "cluster": ({"address": m.cluster.address, "nodes": m.cluster.nodes,
                     "cpus": m.cluster.cpus, "busy": m.cluster.busy, "above": m.cluster.above,
                     "delegated": m.cluster.delegated, "error": m.cluster.error or None}
                    if m.HasField("cluster") else None),
        "counters": {"requests": c.requests, "solved": c.solved, "failed": c.failed,
                     "cancelled": c.cancelled, "rejected": c.rejected,
                     "in_flight": c.in_flight, "running": c.running,
                     "undecodable": c.undecodable, "abandoned": c.abandoned},
    }
