"""The pdbd.v1.Solver service: validation, admission, waiting, limits, and status codes.

Handlers run on gRPC's own threads: they validate, try the search in the fast lane (on the
handler's thread, within a small node budget: pdbd.jobs.FastLane), and otherwise wait for
it on the WorkerPool. Requests arrive parsed (pdbd.rpc parses the bytes and answers the
undecodable ones). Cancellation and deadlines reach the kernel through the job's stop flag:
``context.add_callback`` fires when the RPC ends early (client cancel, deadline), and the
handler itself halts the job when ``context.time_remaining()`` runs out. The server's own
limits (``Limits``) cap every search's nodes, seconds and memory and each client's searches in
flight. Before a search and before its answer is returned, the table file is checked to be
the one loaded, and a search whose file is opened for writing meanwhile is halted (trust.Pinned,
through the Solver); ``swap`` replaces the tables for new requests while running searches
finish on the old mappings, which are released (unmapped, closed) when the last of them ends.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import CancelledError
from dataclasses import dataclass
from pathlib import Path

import grpc

import pdbtool
from pdbtool import limits
from pdbtool.cluster.messages import ClusterError
from pdbtool.errors import ArtifactError, BadInput, LimitReached, PdbError, Unsolvable
from pdbtool.geometry import Shape
from pdbtool.progress import fmt_bytes
from pdbtool.search.algorithms import Algorithm
from pdbtool.search.solver import Solver
from pdbtool.selection import TableSet
from pdbtool.tables.trust import TableChanged

from . import convert
from .defaults import DEFAULT_MAX_NODES, DEFAULT_MAX_SEARCH_MEMORY, DEFAULT_MAX_SEARCH_SECONDS
from .batch import SHUTDOWN, Settled, solve_batch
from .choices import choose
from .jobs import POOL_WAIT_SECONDS, Delegation, FastLane, Job, Lane, QueueFull, WorkerPool
from .logs import artifact_text, request_fields
from .peers import PeerCounts, TrustedProxies
from .rpc import DEADLINE_SLACK, RateLimitedLog, time_left
from .v1 import solver_pb2 as pb
from .wire import LIMIT_KEY, REFUSED_KEY, SERVICE_NAME

log = logging.getLogger("pdbd")

DEFAULT_PROGRESS_MS = 250
MIN_PROGRESS_MS = 10
MAX_DETAILS = 400  # status details travel in a header: never echo a huge input back

SEARCHES = ("Solve", "SolveStream", "SolveBatch")  # the methods whose requests are searches
LATE = ("deadline", "cancelled")  # a search that answers after these has nobody to answer
SHUTTING_DOWN = "the server is shutting down"
HALT_STATUS = {
    "deadline": (grpc.StatusCode.DEADLINE_EXCEEDED, "deadline exceeded"),
    "cancelled": (grpc.StatusCode.CANCELLED, "cancelled by the client"),
    "shutdown": (grpc.StatusCode.UNAVAILABLE, SHUTTING_DOWN),
}


@dataclass(frozen=True)
class Limits:
    """The server's limits per search (None: none) and per client (searches in flight)."""

    max_search_seconds: float | None = DEFAULT_MAX_SEARCH_SECONDS
    max_nodes: int | None = DEFAULT_MAX_NODES
    per_client: int | None = None
    max_search_memory: int | None = DEFAULT_MAX_SEARCH_MEMORY

    def budget(self, asked: int) -> tuple[int | None, bool]:
        """The node budget of a search whose client asked for ``asked`` (0: none), and
        whether the server's limit is the one that binds."""
        if asked > limits.MAX_BUDGET:  # (0: none, on the wire)
            raise BadInput(f"node_budget must be at most {limits.MAX_BUDGET:,} (2^63 - 1; 0: "
                           f"no limit), not {asked:,}")
        if self.max_nodes and (not asked or asked > self.max_nodes):
            return self.max_nodes, True
        return asked or None, False

    def algorithm(self, fields: dict) -> tuple[Algorithm, bool]:
        """The algorithm a request asks for (checked as pdbtool solve checks it), its memory
        lowered to the server's limit per search, and whether that limit binds."""
        return Algorithm(**fields).within(self.max_search_memory)


class Served:
    """The tables in use and a Solver per size: replaced whole on reload (``swap``). Each
    search admitted on them holds them (``hold``/``leave``); once replaced (``retire``) and
    the last search on them ended, their files are released: mappings detached, files
    closed and their leases given up (a reload no longer keeps every old table open)."""

    def __init__(self, tables: TableSet, solvers: dict[Shape, Solver]):
        self.tables = tables
        self.solvers = solvers
        self._lock = threading.Lock()
        self._holders = 0
        self._retired = False
        self._releasing = False  # decided: no search may hold them again (then released)

    @classmethod
    def of(cls, tables: TableSet) -> Served:
        return cls(tables, {side: Solver(h) for side, h in tables.heuristics.items()})

    def hold(self) -> bool:
        """One more search on these tables; False once they were released."""
        with self._lock:
            if self._releasing:
                return False
            self._holders += 1
            return True

    def leave(self) -> None:
        with self._lock:
            self._holders -= 1
            last = self._retired and self._holders == 0 and not self._releasing
            if last:
                self._releasing = True
        if last:
            self._release()

    def retire(self) -> None:
        """Replaced by a reload: released now if no search holds them, else after the last."""
        with self._lock:
            self._retired = True
            last = self._holders == 0 and not self._releasing
            if last:
                self._releasing = True
        if last:
            self._release()

    def _release(self) -> None:
        for loaded in self.tables.loaded:
            try:
                loaded.pin.release()
            except Exception:  # on a search's done callback: say it, release the others
                log.exception("releasing %s", loaded.meta.path)
        log.info("released the tables replaced by a reload: %s",
                 ", ".join(Path(t.meta.path).name for t in self.tables.loaded) or "none")


def short(message: str) -> str:
    return message if len(message) <= MAX_DETAILS else message[:MAX_DETAILS - 3] + "..."


def abort(context, code: grpc.StatusCode, details: str):
    """End the call with ``code``; pdbd's own UNAVAILABLE is marked (REFUSED_KEY), so the
    client tells the server's refusal from a channel that could not connect."""
    if code == grpc.StatusCode.UNAVAILABLE:
        context.set_trailing_metadata(((REFUSED_KEY, "unavailable"),))
    context.abort(code, details)


class Counters:
    NAMES = ("requests", "solved", "failed", "cancelled", "rejected", "undecodable", "abandoned")

    def __init__(self):
        self._lock = threading.Lock()
        self._n = dict.fromkeys(self.NAMES, 0)

    def add(self, name: str) -> None:
        with self._lock:
            self._n[name] += 1

    def snapshot(self) -> dict:
        with self._lock:
            return dict(self._n)


class SolverServicer:
    """The RPCs of pdbd.v1.Solver over parsed requests (registered by pdbd.rpc)."""

    def __init__(self, tables: TableSet, pool: WorkerPool, limits: Limits = Limits(),
                 delegation: Delegation | None = None, metrics=None,
                 proxies: TrustedProxies = TrustedProxies(), lane: Lane | None = None):
        self.served = Served.of(tables)
        self.proxies = proxies
        self.metrics = metrics  # pdbd.metrics.Metrics, or None
        self.pool = pool
        default = Lane(slots=pool.threads, per_client=pool.threads if limits.per_client is None
                       else max(1, pool.threads // 2))  # (--max-per-client 0: no share)
        self.fast = FastLane(lane or default, on_finish=pool.on_finish, pool_idle=pool.idle)
        self.delegation, self.limits = delegation, limits
        self.peers = PeerCounts(limits.per_client)
        self.counters = Counters()
        self.notes = RateLimitedLog()
        self.started = time.monotonic()
        self.locked = False  # tables pinned in memory (set by the server)
        self.closing = False  # refusing new searches (a shutdown or a drain began)
        self._swap_lock = threading.Lock()
        self.batches: set = set()  # each SolveBatch call's queue of answers (batch.py)

    @property
    def solvers(self) -> dict[Shape, Solver]:
        return self.served.solvers

    @property
    def tables(self) -> TableSet:
        return self.served.tables

    @property
    def overloaded(self) -> bool:
        return self.pool.full

    # -- RPCs --------------------------------------------------------------------------------

    def Solve(self, request, context):
        job = self.admit(request, context)
        while not self._wait(job, context, None):
            pass
        return self.outcome(job, context)

    def SolveStream(self, request, context):
        job = self.admit(request, context, stream=True)
        tick = max(request.progress_ms or DEFAULT_PROGRESS_MS, MIN_PROGRESS_MS) / 1000
        answered = False
        try:
            while not self._wait(job, context, tick):
                queued = job.started is None
                yield pb.SolveEvent(progress=convert.progress_message(
                    job.control, job.search_seconds, queued))
            answered = True
            yield pb.SolveEvent(result=self.outcome(job, context, stream=True))
        finally:
            if not answered:  # the client went away between two progress messages, or
                job.halt(self._why_ended(context))  # its deadline passed there
                self._abandoned(job, context)

    def SolveBatch(self, requests, context):
        yield from solve_batch(self, requests, context)

    def Info(self, request, context):
        c = self.counters.snapshot()
        served, limits_ = self.served, self.limits
        return pb.InfoReply(
            version=pdbtool.__version__,
            artifacts=[convert.artifact_message(t, self.locked) for t in served.tables.loaded],
            sizes=[pb.SizeServed(size=s.rows if s.square else 0, rows=s.rows, cols=s.cols,
                                 heuristic=h.name, artifact_version=h.artifact or "")
                   for s, h in sorted(served.tables.heuristics.items())],
            counters=pb.Counters(in_flight=self.pool.in_flight, running=self.pool.running, **c),
            threads=self.pool.threads, max_queue=self.pool.max_queue,
            uptime_seconds=time.monotonic() - self.started,
            max_search_seconds=limits_.max_search_seconds or 0,
            max_nodes=limits_.max_nodes or 0, per_client=limits_.per_client or 0,
            overloaded=self.overloaded, max_search_memory=limits_.max_search_memory or 0,
            cluster=self._cluster_info())

    def _cluster_info(self) -> pb.ClusterInfo | None:
        d = self.delegation
        if d is None:
            return None
        try:
            c = d.info()
        except PdbError as e:
            return pb.ClusterInfo(address=d.cluster.named, above=d.above,
                                  delegated=d.delegated, error=short(str(e)))
        return pb.ClusterInfo(address=c.address, nodes=c.nodes, cpus=c.cpus, busy=c.busy,
                              above=d.above, delegated=d.delegated)

    def undecodable(self, method: str) -> None:
        """Count a request whose bytes did not decode (pdbd.rpc calls it, for every
        service's methods): a search request of the Solver's (``requests`` counts Solve,
        SolveStream and the boards of batches) is also a request that failed."""
        if method.rsplit("/", 1)[-1] in SEARCHES:
            self.counters.add("requests")
            self.counters.add("failed")
        self.counters.add("undecodable")

    # -- tables and shutdown -----------------------------------------------------------------

    def swap(self, served: Served) -> None:
        """Serve new requests from ``served``; running searches finish on the old tables,
        which are released when the last of them ends."""
        with self._swap_lock:
            old, self.served = self.served, served
        if old is not served:
            old.retire()

    def _hold(self) -> Served:
        """The tables served now, held for one search (released by ``Served.leave``)."""
        while True:
            with self._swap_lock:
                served = self.served
                if served.hold():
                    return served

    def refuse_new(self) -> None:
        """Refuse new searches (UNAVAILABLE); running and queued ones go on (a drain). A
        SolveBatch call ends once its boards in flight are answered, even while its reader
        waits for the client's next message (batch.SHUTDOWN)."""
        self.closing = True
        for answers in list(self.batches):
            answers.put([(SHUTDOWN, 0, None)])

    def close(self) -> None:
        """Refuse new searches and stop every running or queued one, in the pool and in
        the fast lane (whose searches would otherwise have gone on to the pool)."""
        self.closing = True
        self.pool.close()
        self.fast.halt_all("shutdown")
        self.pool.halt_all("shutdown")

    # -- steps -------------------------------------------------------------------------------

    def admit(self, request, context, deferring: bool = False,
              batch: Settled | None = None, stream: bool = False) -> Job:
        """Validate (no search for bad or unsolvable boards), check the table and the
        client's limit, and search in the fast lane or queue; or abort the RPC. A batch's
        board (``deferring``) takes the lane only when a slot is free at once and no other
        call waits for one (FastLane.run): else, or past the lane's nodes, the pool.

        A batch's board comes with its ``batch.ItemContext`` and with ``batch``, what the
        call settled once for all its boards (pdbd.batch.Settled): the ``client`` it counts
        against, the ``choices`` of the boards before it, the table files ``checked`` for
        its message; a unary call gives none (its client found from its context, its
        choice made and its table file checked for it alone)."""
        self.counters.add("requests")
        if self.closing:
            self._reject("shutdown", SHUTTING_DOWN, context)
            abort(context, grpc.StatusCode.UNAVAILABLE, SHUTTING_DOWN)
        served = self._hold()
        try:
            job = self._admit_on(served, request, context, deferring, batch, stream)
        except BaseException:
            served.leave()
            raise
        job.future.add_done_callback(lambda _: served.leave())
        return job

    def _admit_on(self, served: Served, request, context, deferring: bool = False,
                  batch: Settled | None = None, stream: bool = False) -> Job:
        """``admit`` with the tables held for the search."""
        # A batch's boards that ask alike take the choice made for the first (``batch.
        # choices``): their size, goal and algorithm are not checked again.
        choices = None if batch is None else batch.choices
        try:
            choice = (choose(served, request, self.limits) if choices is None
                      else choices.get(served, request, self.limits))
            solver, algorithm = choice.solver, choice.algorithm
            # The tiles as a list (one copy in C): validating reads them one by one, which
            # on the message's repeated field itself took a microsecond or two more a board.
            prepared = solver.prepare(request.tiles[:], choice.goal)
            budget, server_budget = self.limits.budget(request.node_budget)
        except BadInput as e:
            self._refuse_input(context, grpc.StatusCode.INVALID_ARGUMENT, e, batch, stream)
        except Unsolvable as e:
            self._refuse_input(context, grpc.StatusCode.FAILED_PRECONDITION, e, batch, stream)
        # The table file (the search checks it again, before and after: no answer comes
        # from a changed file either way). A batch checks it once a request message
        # (``batch.checked``: the files checked for this message), not once a board.
        source, checked = solver.heuristic.source, None if batch is None else batch.checked
        try:
            if source and (checked is None or source not in checked):
                source.check()
                if checked is not None:
                    checked.add(source)
        except TableChanged as e:
            self._refuse_changed(e, context)
        client = self.proxies.client(context) if batch is None else batch.client
        if not self.peers.enter(client):
            said = (f"the client address {client} has {self.limits.per_client} searches in "
                    "flight, the server's limit per client address; retry when one has finished")
            self._reject("per-client", said, context)
            context.set_trailing_metadata(((LIMIT_KEY, "per-client"),))
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, said)
        job = Job(solver, prepared, budget, self.limits.max_search_seconds, algorithm,
                  self.delegation)
        job.client, job.peer = client, context.peer()
        job.server_budget, job.server_memory = server_budget, choice.server_memory
        if not context.add_callback(lambda: job.halt(self._why_ended(context))):
            job.halt(self._why_ended(context))  # the RPC is over already
        try:
            if not self.fast.run(job, client, deferring):
                self._to_pool(job, context, deferring)
        except QueueFull as e:
            self.peers.leave(client)
            self._reject("queue-full", f"queue full: {e}; retry later", context)
            context.set_trailing_metadata(((LIMIT_KEY, "queue-full"),))
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, f"queue full: {e}; retry later")
        except RuntimeError:
            self.peers.leave(client)
            self._reject("shutdown", SHUTTING_DOWN, context)
            abort(context, grpc.StatusCode.UNAVAILABLE, SHUTTING_DOWN)
        job.on_end(lambda: self.peers.leave(client))  # before the answer: it may ask again
        return job

    def _refuse_input(self, context, code: grpc.StatusCode, e: PdbError, batch: Settled | None,
                      stream: bool) -> None:
        """A board refused before any search (bad, or unsolvable): counted, said in the log
        (an operator sees why clients get errors), and the call ended with ``code``."""
        self.counters.add("failed")
        peer = context.peer()
        method = (batch.method if batch is not None
                  else f"{SERVICE_NAME}/{'SolveStream' if stream else 'Solve'}")
        log.info("solve refused (%s): %s peer=%s", code.name, short(str(e)), peer,
                 extra=request_fields(method, peer, code.name, 0.0, 0))
        context.abort(code, short(str(e)))

    def _to_pool(self, job: Job, context, deferring: bool) -> None:
        """``job`` into the pool's queue. A batch's board (``deferring``: its reader saw
        room before admitting it; its context a batch.ItemContext) waits while another
        call takes the last slot first, rather than being refused, or admitted again with
        its fast lane's search lost and counted twice; as long as its call is live and the
        server not closing, the batch's answers sent meanwhile."""
        while True:
            try:
                self.pool.submit(job)
                return
            except QueueFull:
                if not deferring or self.closing or not context.is_active():
                    raise
            context.waiting_for_pool()
            time.sleep(POOL_WAIT_SECONDS)

    def _reject(self, reason: str, said: str, context) -> None:
        """A search refused for the limits or the shutdown: counted, in the metrics and in
        the log (WARNING, a line a reason every 10 s, the next counting those held back)."""
        self.counters.add("rejected")
        if self.metrics is not None:
            self.metrics.reject(reason)
        self.notes.warning(f"rejected:{reason}", "search refused (%s): %s; peer=%s", reason,
                           said, context.peer())

    def _abandoned(self, job: Job, context) -> None:
        """A stream that ended before its result: its deadline passed (as a Solve's would,
        DEADLINE_EXCEEDED in the log and the metrics), or its client left (abandoned);
        counted and logged, every one."""
        self.counters.add("cancelled")
        if job.reason == "deadline":  # (as the search was halted: the status says the same)
            context.set_code(grpc.StatusCode.DEADLINE_EXCEEDED)  # how the call ended
            log.info("stream %s stopped: deadline nodes=%d seconds=%.3f%s peer=%s",
                     self._what(job), job.control.generated, job.search_seconds,
                     artifact_text(job.solver.heuristic.artifact), job.peer,
                     extra=self._fields(job, True, "DEADLINE_EXCEEDED", stopped="deadline"))
            return
        self.counters.add("abandoned")
        log.info("stream %s abandoned by %s after %d nodes", self._what(job), job.peer,
                 job.control.generated, extra=self._fields(job, True, "CANCELLED",
                                                           stopped="abandoned"))

    def _refuse_changed(self, e: TableChanged, context) -> None:
        self.counters.add("failed")
        self.notes.warning(f"changed:{e}", "refusing to answer: %s (reload with SIGHUP after "
                           "installing the new file under a new name and renaming it)", e)
        abort(context, grpc.StatusCode.UNAVAILABLE, short(str(e)))

    @staticmethod
    def _what(job: Job) -> str:
        return str(job.solver.shape)

    @staticmethod
    def _why_ended(context) -> str:
        """Why a call ended before its answer: its deadline, or the client cancelled. A
        client ends the call at its own deadline, a little before the server's copy of it
        (which counts from the request's arrival): an end within DEADLINE_SLACK of the
        deadline is the deadline's (it was taken for a cancel: CANCELLED in the log and
        the metrics, a stream 'abandoned')."""
        left = time_left(context)
        return "deadline" if left is not None and left <= DEADLINE_SLACK else "cancelled"

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
        # Not concurrent.futures.wait: it takes a future cancelled in the queue for done only
        # once the executor dequeues it, which a pool shut down meanwhile never does (the
        # handler then waited for good). The future's own wait wakes on a cancel.
        try:
            job.future.exception(timeout=tick)
        except CancelledError:
            pass
        except TimeoutError:
            return False
        return True

    def outcome(self, job: Job, context, stream: bool = False, fields: bool = False,
                batch: Settled | None = None):
        """The finished job as a result message (``fields``: its fields, as a dict), or
        abort with the status that explains it; ``batch``: a batch's board (its log lines
        name the batch's method), as ``admit`` took it."""
        try:
            return self._outcome_of(job, context, stream, fields, batch)
        finally:
            # Raised here by result(), the search's exception (kept in the future) got
            # this frame, which holds the job, which holds the future: a cycle keeping the
            # job's tables, and their files, until Python's cyclic collector runs.
            future = job.future
            if future is not None and future.done() and not future.cancelled():
                error = future.exception()
                if error is not None:
                    error.__traceback__ = None

    def _outcome_of(self, job: Job, context, stream: bool, fields: bool = False,
                    batch: Settled | None = None):
        shape = job.solver.shape
        try:
            result = job.future.result()
            if job.reason in LATE:  # halted as it finished (a first search's compile does
                raise CancelledError  # not look at the stop flag): the caller has gone
        except TableChanged as e:
            self._refuse_changed(e, context)
        except (LimitReached, CancelledError) as e:
            code, what = HALT_STATUS.get(job.reason, (  # any other halt (a table found
                grpc.StatusCode.UNAVAILABLE, f"stopped ({job.reason or 'no reason given'})"))
            # changed, then whole again) is the server's: never UNKNOWN, nor a batch broken
            nodes = job.control.generated
            limit = self._limit_hit(job, e)
            if stream and job.reason == "cancelled":
                self._abandoned(job, context)
                abort(context, code, f"{what}: search stopped after {nodes:,} nodes")
            self.counters.add("failed" if limit else "cancelled")  # counted as it is said
            log.info("solve %s stopped: %s nodes=%d seconds=%.3f%s peer=%s", shape,
                     limit or job.reason, nodes, job.search_seconds,
                     artifact_text(job.solver.heuristic.artifact), job.peer,
                     extra=self._fields(job, stream,
                                        "RESOURCE_EXHAUSTED" if limit else code.name,
                                        stopped=limit or job.reason, batch=batch))
            if limit:  # not halted by the client: a limit of the client's or the server's
                context.set_trailing_metadata(((LIMIT_KEY, limit),))
                context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, short(self._limit_text(limit, e)))
            abort(context, code, f"{what}: search stopped after {nodes:,} nodes")
        except (ClusterError, ArtifactError) as e:  # the cluster lost its nodes, or a
            # table was refused (a node's copy, or the search found its entries wrong)
            self.counters.add("failed")
            log.error("solve %s failed%s: %s", shape,
                      " on the cluster" if isinstance(e, ClusterError) else "", e,
                      extra=self._fields(job, stream, "UNAVAILABLE", batch=batch))
            abort(context, grpc.StatusCode.UNAVAILABLE, short(str(e)))
        except PdbError as e:  # prepared already, so not expected; still a clear answer
            self.counters.add("failed")
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, short(str(e)))
        except Exception as e:
            self.counters.add("failed")
            log.exception("solve %s failed", shape,
                          extra=self._fields(job, stream, "INTERNAL", batch=batch))
            context.abort(grpc.StatusCode.INTERNAL, short(f"internal error: {e}"))
        self.counters.add("solved")
        if log.isEnabledFor(logging.INFO):  # its fields cost more than the line's check
            log.info("solve %s length=%d nodes=%d seconds=%.3f%s peer=%s", shape,
                     result.length, result.nodes_generated, result.seconds,
                     artifact_text(result.artifact), job.peer,
                     extra=self._fields(job, stream, "OK", result.seconds,
                                        length=result.length, batch=batch))
        if fields:
            return convert.result_fields(result, job.queue_seconds)
        return convert.result_message(result, job.queue_seconds)

    @staticmethod
    def _fields(job: Job, stream: bool, code: str, seconds: float | None = None, *,
                batch: Settled | None = None, **more) -> dict:
        """The JSON fields of a solve's log line (pdbd.logs.request_fields); ``seconds``:
        the search's, as its result says them (the line's text says the same); the method
        a batch's (``batch``), SolveStream's (``stream``) or Solve's."""
        method = (batch.method if batch is not None
                  else f"{SERVICE_NAME}/{'SolveStream' if stream else 'Solve'}")
        return request_fields(method, job.peer, code,
                              job.search_seconds if seconds is None else seconds,
                              job.control.generated,
                              size=str(job.solver.shape),  # RxC, as the metrics' label
                              queue_seconds=round(job.queue_seconds, 6),
                              artifact=job.solver.heuristic.artifact,
                              client=job.client, **more)

    @staticmethod
    def _limit_hit(job: Job, e: Exception) -> str | None:
        """Which limit stopped a search that neither the client nor a shutdown halted."""
        if job.reason == "time-limit":
            return "max-search-seconds"
        if job.reason is None:
            if getattr(e, "limit", None) == "memory":  # A*'s states filled its memory
                return "max-search-memory" if job.server_memory else "memory"
            return "max-nodes" if job.server_budget else "node-budget"
        return None

    def _limit_text(self, limit: str, e: Exception) -> str:
        if limit == "max-search-seconds":
            return (f"the server's time limit of {self.limits.max_search_seconds:g} s per search "
                    f"(pdbd serve --max-search-seconds) was reached: {e}")
        if limit == "max-search-memory":
            return (f"the server's memory limit of {fmt_bytes(self.limits.max_search_memory)} "
                    f"per search (pdbd serve --max-search-memory) was reached: {e}")
        if limit == "max-nodes":
            return (f"the server's limit of {self.limits.max_nodes:,} nodes per search "
                    f"(pdbd serve --max-nodes) was reached: {e}")
        return str(e)
