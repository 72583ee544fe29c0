"""The pdbd.v1.Solver service: validation, admission, waiting, and status codes.

Handlers run on gRPC's own threads and only validate and wait; the searches run on the
WorkerPool. Cancellation and deadlines reach the kernel through the job's stop flag:
``context.add_callback`` fires when the RPC ends early (client cancel, deadline), and the
handler itself halts the job when ``context.time_remaining()`` runs out.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import CancelledError, wait

import grpc

import pdbtool
from pdbtool import puzzle
from pdbtool.algorithms import Algorithm
from pdbtool.errors import BadInput, LimitReached, PdbError, Unsolvable
from pdbtool.search import Solver
from pdbtool.selection import Solvers, TableSet

from . import convert
from .jobs import Job, QueueFull, WorkerPool
from .v1 import solver_pb2 as pb, solver_pb2_grpc as pb_grpc

log = logging.getLogger("pdbd")

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["Solver"].full_name
LIMIT_KEY = "pdbd-limit"  # trailing metadata telling the two RESOURCE_EXHAUSTED cases apart
DEFAULT_PROGRESS_MS = 250
MIN_PROGRESS_MS = 10
MAX_DETAILS = 400  # status details travel in a header: never echo a huge input back
NO_DEADLINE = 1e8  # time_remaining() of a call without a deadline is huge, not None

HALT_STATUS = {
    "deadline": (grpc.StatusCode.DEADLINE_EXCEEDED, "deadline exceeded"),
    "cancelled": (grpc.StatusCode.CANCELLED, "cancelled by the client"),
    "shutdown": (grpc.StatusCode.UNAVAILABLE, "the server is shutting down"),
}


def short(message: str) -> str:
    return message if len(message) <= MAX_DETAILS else message[:MAX_DETAILS - 3] + "..."


def time_left(context) -> float | None:
    left = context.time_remaining()
    return None if left is None or left > NO_DEADLINE else max(left, 0.0)


class Counters:
    NAMES = ("requests", "solved", "failed", "cancelled", "rejected")

    def __init__(self):
        self._lock = threading.Lock()
        self._n = dict.fromkeys(self.NAMES, 0)

    def add(self, name: str) -> None:
        with self._lock:
            self._n[name] += 1

    def snapshot(self) -> dict:
        with self._lock:
            return dict(self._n)


class SolverServicer(pb_grpc.SolverServicer):
    def __init__(self, tables: TableSet, pool: WorkerPool):
        self.tables = tables
        self.pool = pool
        self.solvers = {side: Solver(h) for side, h in tables.heuristics.items()}
        self.table_free = Solvers(tables=TableSet({}))  # goals off the corners; greedy
        self.counters = Counters()
        self.started = time.monotonic()
        self._closing = False

    # -- RPCs --------------------------------------------------------------------------------

    def Solve(self, request, context):
        job = self._admit(request, context)
        while not self._wait(job, context, None):
            pass
        return self._outcome(job, context)

    def SolveStream(self, request, context):
        job = self._admit(request, context)
        tick = max(request.progress_ms or DEFAULT_PROGRESS_MS, MIN_PROGRESS_MS) / 1000
        while not self._wait(job, context, tick):
            queued = job.started is None
            yield pb.SolveEvent(progress=convert.progress_message(
                job.control, job.search_seconds, queued))
        yield pb.SolveEvent(result=self._outcome(job, context))

    def Info(self, request, context):
        c = self.counters.snapshot()
        return pb.InfoReply(
            version=pdbtool.__version__,
            artifacts=[convert.artifact_message(m) for m in self.tables.artifacts],
            sizes=[pb.SizeServed(size=s, heuristic=h.name, artifact_version=h.artifact or "")
                   for s, h in sorted(self.tables.heuristics.items())],
            counters=pb.Counters(in_flight=self.pool.in_flight, running=self.pool.running, **c),
            threads=self.pool.threads, max_queue=self.pool.max_queue,
            uptime_seconds=time.monotonic() - self.started)

    # -- shutdown ----------------------------------------------------------------------------

    def close(self) -> None:
        """Refuse new searches and stop every running or queued one."""
        self._closing = True
        self.pool.halt_all("shutdown")

    # -- steps -------------------------------------------------------------------------------

    def _admit(self, request, context) -> Job:
        """Validate (no search for bad or unsolvable boards) and queue; or abort the RPC."""
        self.counters.add("requests")
        if self._closing:
            context.abort(grpc.StatusCode.UNAVAILABLE, "the server is shutting down")
        try:
            algorithm = Algorithm(**convert.algorithm_fields(request))
            solver, prepared = self._prepare(request, algorithm)
        except BadInput as e:
            self.counters.add("failed")
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, short(str(e)))
        except Unsolvable as e:
            self.counters.add("failed")
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, short(str(e)))
        job = Job(solver, prepared, request.node_budget or None, algorithm)
        if not context.add_callback(lambda: job.halt(self._why_ended(context))):
            job.halt(self._why_ended(context))  # the RPC is over already
        try:
            self.pool.submit(job)
        except QueueFull as e:
            self.counters.add("rejected")
            context.set_trailing_metadata(((LIMIT_KEY, "queue-full"),))
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, f"queue full: {e}; retry later")
        except RuntimeError:
            context.abort(grpc.StatusCode.UNAVAILABLE, "the server is shutting down")
        return job

    def _prepare(self, request, algorithm):
        """The solver for the board's size and goal, and the board validated (once) for it.
        Goals whose blank is not in a corner, and greedy solves of sizes no table serves,
        get a table-free solver (pdbtool.selection.Solvers decides)."""
        tiles = request.tiles
        if not tiles:
            raise BadInput("empty board: give the tiles row by row, 0 for the blank")
        side = puzzle.side_of(tiles)
        goal = puzzle.check_goal(request.goal or convert.DEFAULT_GOAL)
        solver = None
        if side * side == len(tiles):
            puzzle.validate(tiles)
            if algorithm.name == "greedy" or (side in self.solvers and puzzle.frame(side, goal).goal_blank):
                solver = self.table_free.for_goal(side, goal, algorithm)
            else:
                solver = self.solvers.get(side)
        if solver is None:
            puzzle.validate(tiles)  # names what is wrong with a malformed board
            served = ", ".join(f"{s}x{s} ({s * s} tiles)" for s in sorted(self.solvers))
            raise BadInput(f"no loaded table serves {side}x{side} boards ({len(tiles)} tiles); "
                           f"this server serves {served}")
        algorithm.check_side(side)
        return solver, solver.prepare(tiles, goal)

    @staticmethod
    def _why_ended(context) -> str:
        left = time_left(context)
        return "deadline" if left is not None and left <= 0 else "cancelled"

    @staticmethod
    def _wait(job: Job, context, tick: float | None) -> bool:
        """Wait up to ``tick`` seconds (None: until done) but never past the deadline."""
        left = time_left(context)
        if left is not None:
            if left <= 0:
                job.halt("deadline")
                tick = None  # the kernel returns within about a millisecond
            else:
                tick = left if tick is None else min(tick, left)
        done, _ = wait([job.future], timeout=tick)
        return bool(done)

    def _outcome(self, job: Job, context) -> pb.SolveResult:
        """The finished job as a result message, or abort with the status that explains it."""
        side = job.solver.side
        try:
            result = job.future.result()
        except (LimitReached, CancelledError) as e:
            code, what = HALT_STATUS.get(job.reason, (None, None))
            nodes = job.control.generated
            log.info("solve %dx%d stopped: %s nodes=%d seconds=%.3f artifact=%s", side, side,
                     job.reason or "node budget", nodes, job.search_seconds,
                     job.solver.heuristic.artifact)
            if code is None:  # not halted by us: the node budget or A*'s memory
                self.counters.add("failed")
                context.set_trailing_metadata(((LIMIT_KEY, getattr(e, "limit", "node-budget")),))
                context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, short(str(e)))
            self.counters.add("cancelled")
            context.abort(code, f"{what}: search stopped after {nodes:,} nodes")
        except PdbError as e:  # prepared already, so not expected; still a clear answer
            self.counters.add("failed")
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, short(str(e)))
        except Exception as e:
            self.counters.add("failed")
            log.exception("solve %dx%d failed", side, side)
            context.abort(grpc.StatusCode.INTERNAL, short(f"internal error: {e}"))
        self.counters.add("solved")
        log.info("solve %dx%d length=%d nodes=%d seconds=%.3f artifact=%s", side, side,
                 result.length, result.nodes_generated, result.seconds, result.artifact)
        return convert.result_message(result, job.queue_seconds)
