"""Assembling the daemon: warm-up, gRPC server, health checking, reflection, TLS, tables
kept in memory, reload, shutdown; ``serve(ServeConfig(...))``, what `pdbd serve` runs.

Every service goes through pdbd.rpc (requests parsed by us, a small budget per client for
calls still waiting for their request, admission per class of call once it arrived), so
neither undecodable bytes nor calls that never send their request, nor Solve traffic, can
starve health checks. Connections: idle ones close after --idle-timeout, ones that never
finish their handshake after the request timeout, and at most a budget of them at once
(from the open-file limit, raised to its hard limit at start).
"""

from __future__ import annotations

import contextlib
import functools
import gc
import logging
import os
import resource
import stat
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import grpc
from grpc_health.v1 import health, health_pb2
from grpc_reflection.v1alpha import reflection, reflection_pb2

from pdbtool.cli.console import plural
from pdbtool.errors import BadInput, PdbError
from pdbtool.geometry import as_shape
from pdbtool.selection import TableSet, load_directory, release
from pdbtool.progress import fmt_bytes

from .address import parse_target
from .connections import ConnectionWatch, open_files, tcp_peers, unix_peers
from .defaults import (DEFAULT_CLUSTER_ABOVE, DEFAULT_CONNECTION_AGE, DEFAULT_IDLE_SECONDS,
                       DEFAULT_LISTEN, DEFAULT_MAX_NODES, DEFAULT_MAX_QUEUE,
                       DEFAULT_MAX_SEARCH_MEMORY, DEFAULT_MAX_SEARCH_SECONDS,
                       DEFAULT_REQUEST_TIMEOUT, default_per_client)
from . import logs, notify
from .jobs import Delegation, Lane, WorkerPool
from .listening import (ListenError, Tls, check_exposure, check_listen, check_metrics,
                        check_unix, owner_only)
from .metrics import Metrics
from .peers import TrustedProxies
from .pidfile import PidFile
from .rpc import Admission, Cap, RateLimitedLog, Reading, Receiver, service_handler
from .serve_signals import ServeSignals, StoppedStarting
from .servicer import SEARCHES, Limits, Served, SolverServicer
from .v1 import solver_pb2 as pb
from .warming import lock_tables, prefault_tables, warm_up
from .wire import SERVICE_NAME

log = logging.getLogger("pdbd")

# A board is at most a few hundred bytes; up to 1 MiB a request still reaches validation and
# gets INVALID_ARGUMENT naming the problem; beyond that it is refused, RESOURCE_EXHAUSTED
# (pdbd.rpc.Receiver: counted and logged as too large). gRPC's own limit is set above it,
# at gRPC's default, for a request gRPC refuses never reaches the handler (which sees a
# call that ended, and counts it CANCELLED): beyond TRANSPORT_MESSAGE_BYTES that is still
# so. A request up to that limit is held whole in memory before it is refused; 8 MiB
# doubled the peak of 4 MiB under many such calls at once (docs/architecture.md).
MAX_MESSAGE_BYTES = 1 << 20
TRANSPORT_MESSAGE_BYTES = 4 << 20
SPARE_SOLVES = 8     # solve calls beyond threads + queue: bad boards are answered too
STREAM_SECONDS = 300.0  # a Watch or reflection stream is ended after this (the client reopens)


def call_caps(stream_seconds: float) -> dict[str, Cap]:
    """Calls in progress per class but solve, once their request arrived; health has no
    cap (never refused while the process lives)."""
    return {"info": Cap(total=8, per_client=4),
            "watch": Cap(total=32, per_client=4, expires=stream_seconds),
            "reflection": Cap(total=8, per_client=4, expires=stream_seconds)}


READING_PER_CLIENT, READING_TOTAL = 16, 64  # calls still waiting for their request
HEALTH_THREADS = 16  # threads beyond every cap: health checks (and refusals) run on them
FD_RESERVE = 128     # open files kept for the tables, logs and the rest, not connections
KEEPALIVE_MS, KEEPALIVE_TIMEOUT_MS = 60_000, 20_000
DRAIN_POLL = 0.05    # seconds between looks at the searches in flight while draining


@dataclass(frozen=True)
class Connections:
    """How long a request may take to arrive, a connection and a stream may live (seconds),
    and how many connections are taken at once."""

    request_timeout: float = DEFAULT_REQUEST_TIMEOUT
    idle: float = DEFAULT_IDLE_SECONDS
    max_age: float = DEFAULT_CONNECTION_AGE
    max_connections: int | None = None  # None: from the open-file limit (connection_budget)
    stream_seconds: float = STREAM_SECONDS  # Watch and reflection streams end after this
    watch_every: float = 1.0  # seconds between looks at the connections open (the budget)


def raise_file_limit() -> int:
    """Raise the soft limit on open files to the hard limit (as far as allowed); the soft
    limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            pass
    return soft


def connection_budget() -> int:
    """Connections to accept at once: the open-file limit less a reserve (each connection
    is a file descriptor: beyond the limit, accept() fails and every new client times out,
    health checks included)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        soft = 1 << 20
    return max(16, min(soft, 1 << 20) - FD_RESERVE)


class Daemon:
    """A configured server, warmed up and bound, not yet serving until start()."""

    def __init__(self, tables: TableSet, listen: str = DEFAULT_LISTEN, threads: int | None = None,
                 max_queue: int = DEFAULT_MAX_QUEUE, warm: bool = True, *,
                 limits: Limits | None = None, connections: Connections = Connections(),
                 reflection_on: bool = True, tls: Tls | None = None, insecure: bool = False,
                 mlock: bool = False, prefault: bool = True, delegation: Delegation | None = None,
                 metrics: Metrics | None = None, proxies: TrustedProxies = TrustedProxies(),
                 lane: Lane | None = None, stopping: threading.Event | None = None):
        check_exposure(listen, tls, insecure)
        threads = threads or os.cpu_count() or 1
        self.metrics = metrics = metrics or Metrics()  # served over HTTP only if asked
        self.pool = WorkerPool(threads, max_queue, on_change=self._update_health,
                               on_finish=self._search_done)
        self.servicer = SolverServicer(tables, self.pool, limits or Limits(), delegation, metrics,
                                       proxies, lane)
        metrics.watch(self.servicer)
        self.delegation = delegation
        self.health = health.HealthServicer()
        notes = RateLimitedLog()
        caps = {"solve": Cap(total=threads + max_queue + SPARE_SOLVES),
                **call_caps(connections.stream_seconds)}
        self.admission = Admission(caps, on_busy=metrics.reject, notes=notes)
        self.reading = Reading(READING_PER_CLIENT, READING_TOTAL, notes, on_evict=metrics.reject)
        receiver = Receiver(connections.request_timeout, notes, on_bad=self.servicer.undecodable,
                            reading=self.reading, max_bytes=MAX_MESSAGE_BYTES,
                            on_large=self._too_large)
        limits = self.servicer.limits
        grace = (limits.max_search_seconds or 3600) + 30  # old connections finish their search
        self.max_connections = connections.max_connections or connection_budget()
        handlers = self.admission.total + READING_TOTAL + HEALTH_THREADS
        handshake = min(connections.request_timeout, connections.idle)
        self.server = grpc.server(
            ThreadPoolExecutor(handlers, thread_name_prefix="pdbd-rpc"),
            maximum_concurrent_rpcs=handlers,  # beyond: refused at once, never queued
            options=[("grpc.max_receive_message_length", TRANSPORT_MESSAGE_BYTES),
                     ("grpc.so_reuseport", 0),  # a second daemon on a busy port must fail
                     ("grpc.max_connection_idle_ms", int(connections.idle * 1000)),
                     ("grpc.max_connection_age_ms", int(connections.max_age * 1000)),
                     ("grpc.max_connection_age_grace_ms", int(grace * 1000)),
                     ("grpc.server_handshake_timeout_ms", int(handshake * 1000)),
                     ("grpc.max_allowed_incoming_connections", self.max_connections),
                     ("grpc.keepalive_time_ms", KEEPALIVE_MS),
                     ("grpc.keepalive_timeout_ms", KEEPALIVE_TIMEOUT_MS)])
        services = [(pb.DESCRIPTOR.services_by_name["Solver"], self.servicer,
                     {"Info": "info", "*": "solve"}),
                    (health_pb2.DESCRIPTOR.services_by_name["Health"], self.health,
                     {"Watch": "watch", "*": "health"})]
        if reflection_on:
            names = (SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME)
            services.append((reflection_pb2.DESCRIPTOR.services_by_name["ServerReflection"],
                             reflection.ReflectionServicer(names), {"*": "reflection"}))
        self.server.add_generic_rpc_handlers(tuple(
            service_handler(service, impl, classes, self.admission, receiver, metrics.call,
                            self.servicer.proxies.client)
            for service, impl, classes in services))
        for name in ("", SERVICE_NAME):
            self.health.set(name, health_pb2.HealthCheckResponse.NOT_SERVING)
        self._solver_status = health_pb2.HealthCheckResponse.NOT_SERVING
        self._health_lock = threading.Lock()
        self._serving = False
        self._stop = threading.Event()
        self.prefault_on = prefault
        target = parse_target(listen, "--listen")
        if target.kind == "unix":
            check_unix(target.path, listen)
        try:
            with owner_only():
                if tls:
                    self.port = self.server.add_secure_port(listen, tls.credentials())
                else:
                    self.port = self.server.add_insecure_port(listen)
        except RuntimeError as e:  # taken since check_listen? say so, not gRPC's words
            check_listen(listen)
            raise ListenError(f"cannot listen on {listen}: {e}") from None
        if not self.port:
            raise ListenError(f"cannot listen on {listen} (address in use or invalid)")
        self.socket_path = target.path if target.kind == "unix" else None
        if target.kind == "unix":
            os.chmod(target.path, 0o600)  # the owner only: read and write is all a socket needs
            self.address = listen
            peers = functools.partial(unix_peers, target.path)
        else:
            self.address = str(target.address._replace(port=self.port))
            peers = functools.partial(tcp_peers, self.port)
        self.watch = ConnectionWatch(peers, self.max_connections, connections.watch_every,
                                     files=open_files)
        # After binding (a busy port fails fast), before serving (no query pays for it);
        # ``stopping`` set (SIGTERM during start-up) skips the sizes not yet warm.
        if warm:
            warm_up(self.servicer.solvers, stopping)
        if mlock and not (stopping is not None and stopping.is_set()):  # (gigabytes read
            lock_tables(tables)  # in: not for a daemon that will never serve)
            self.servicer.locked = True
        self._watch_tables(tables)

    def _watch_tables(self, tables: TableSet) -> None:
        """Health follows each table's file: refused (changed on disk while served), the
        daemon is NOT_SERVING until a reload or the file found unchanged (a touch)."""
        for loaded in tables.loaded:
            loaded.pin.watch(self._update_health)

    def start(self) -> None:
        self.server.start()
        self.watch.start()
        self._serving = True
        self.health.set("", health_pb2.HealthCheckResponse.SERVING)
        self._update_health()
        self._prefault(self.servicer.tables)

    def reload(self, tables: TableSet) -> None:
        """Serve ``tables`` (loaded and checked by the caller) from now on: warmed up first,
        then swapped in at once; searches running on the old tables finish on them."""
        try:
            served = Served.of(tables)
            warm_up(served.solvers)
            if self.servicer.locked:
                lock_tables(tables)
        except BaseException:  # refused: the new tables are let go, the old ones serve
            release(tables.loaded)
            raise
        self._watch_tables(tables)
        self.servicer.swap(served)
        self._update_health()  # a refused table replaced: serving again
        self._prefault(tables)

    def stop(self, grace: float = 5.0, drain: float = 0.0,
             cut: threading.Event | None = None) -> None:
        """Graceful: NOT_SERVING and no new search (UNAVAILABLE, marked as the server's
        refusal: a client retries elsewhere); the searches in flight may finish for up to
        ``drain`` seconds, or until ``cut`` is set (Info and health still answer
        meanwhile); then every search left is stopped, gRPC accepts no new call and lets
        the calls end for up to ``grace``."""
        self._stop.set()
        self.watch.stop()
        self._serving = False
        self.health.enter_graceful_shutdown()
        self.servicer.refuse_new()
        if drain > 0:
            self._drain(drain, cut or threading.Event())
        self.servicer.close()
        self.server.stop(grace).wait()
        self._remove_socket()
        self.pool.shutdown()
        if self.delegation is not None:  # the cluster's actors free the nodes' CPUs
            self.delegation.cluster.close()

    def _remove_socket(self) -> None:
        """A unix socket's file, gone with the server (gRPC removes it only if the server
        was started: a daemon stopped while it started left it)."""
        path = self.socket_path
        with contextlib.suppress(OSError):
            if path and stat.S_ISSOCK(os.lstat(path).st_mode):
                os.unlink(path)

    def _drain(self, seconds: float, cut: threading.Event) -> None:
        """Wait up to ``seconds`` for the searches in flight to finish, or until ``cut``."""
        end = time.monotonic() + seconds

        def in_flight() -> int:  # the pool's and the fast lane's
            return self.pool.in_flight + self.servicer.fast.in_flight

        left = in_flight()
        if left:
            log.info("draining: %s in flight, up to %g s", plural(left, "search", "searches"), seconds)
        while left and time.monotonic() < end and not cut.is_set():
            cut.wait(min(DRAIN_POLL, max(end - time.monotonic(), 0)))
            left = in_flight()
        if left and cut.is_set():
            log.warning("drain cut short (a second SIGTERM or SIGINT): stopping %s",
                        plural(left, "search", "searches"))
        elif left:
            log.warning("drain time over: stopping %s", plural(left, "search", "searches"))
        else:
            log.info("drained: no search in flight")

    def _too_large(self, method: str) -> None:
        """A request refused for its size (pdbd.rpc): a rejection in the metrics
        (``request-too-large``); in Info's counters, as an undecodable one, a request that
        failed if it was a search's (Info's ``rejected`` are refusals for load)."""
        if method.rsplit("/", 1)[-1] in SEARCHES:
            self.servicer.counters.add("requests")
            self.servicer.counters.add("failed")
        self.metrics.reject("request-too-large")

    def _search_done(self, job) -> None:
        if job.started is not None or job.lane_seconds:  # it ran (the fast lane's part too)
            self.metrics.search_done(job.solver.shape, job.search_seconds, job.control.generated)

    def _update_health(self) -> None:
        """pdbd.v1.Solver is NOT_SERVING while no search can be admitted (overload) or a
        table serving is refused (its file changed on disk: every search on it would be
        refused, until a reload); the server's own status ("") stays SERVING: it is alive,
        and a liveness probe must not restart a busy daemon."""
        if not self._serving:
            return
        # The pool read under the lock: read before it, a full pool's status could be
        # published after a later call had seen the pool free, for good (the pool calls
        # this outside its own lock, so the two locks are never taken the other way).
        with self._health_lock:  # set only on a change: twice a query otherwise
            refused = any(t.pin.broken for t in self.servicer.served.tables.serving)
            status = (health_pb2.HealthCheckResponse.NOT_SERVING if self.pool.full or refused
                      else health_pb2.HealthCheckResponse.SERVING)
            if status != self._solver_status:
                self._solver_status = status
                self.health.set(SERVICE_NAME, status)

    def _prefault(self, tables: TableSet) -> None:
        """Read the tables into memory in the background, after SERVING."""
        if not self.prefault_on or not tables.loaded:
            return
        threading.Thread(target=prefault_tables, args=(tables, self._stop),
                         name="pdbd-prefault", daemon=True).start()


# -- serve ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class ServeConfig:
    """What ``serve`` runs with: the options of ``pdbd serve`` (pdbd/cli.py builds it from
    them; its help says what each does), with the same defaults. Only ``artifacts``, the
    directory of tables, has none. None for a limit: none (``max_per_client`` None: an
    eighth of threads + queue, 0: none); ``threads`` None: one per core; ``metrics`` and
    ``pid_file`` None: not served, not written."""

    artifacts: str
    listen: str = DEFAULT_LISTEN
    metrics: str | None = None
    pid_file: str | None = None
    threads: int | None = None
    max_queue: int = DEFAULT_MAX_QUEUE
    max_search_seconds: float | None = DEFAULT_MAX_SEARCH_SECONDS
    max_nodes: int | None = DEFAULT_MAX_NODES
    max_search_memory: int | None = DEFAULT_MAX_SEARCH_MEMORY
    max_per_client: int | None = None
    trusted_proxies: tuple[str, ...] = ()
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT
    idle_timeout: float = DEFAULT_IDLE_SECONDS
    max_connection_age: float = DEFAULT_CONNECTION_AGE
    reflection: bool = True
    tls_cert: str | None = None
    tls_key: str | None = None
    client_ca: str | None = None
    insecure: bool = False
    mlock: bool = False
    prefault: bool = True
    grace: float = 5.0
    drain: float = 0.0
    cluster: str | None = None
    cluster_above: int = DEFAULT_CLUSTER_ABOVE
    cluster_shared: str | None = None
    cluster_cache: str | None = None
    log_format: str = "text"
    log_level: str = "info"


def serve(config: ServeConfig, signals: ServeSignals | None = None) -> int:
    """``pdbd serve``: check what fails fast, load and check the tables, start the daemon,
    serve until SIGTERM or SIGINT (SIGHUP reloads the tables); on the main thread (it
    handles those signals: ``signals``, or its own from here). A stop while it starts ends
    it at once, exit 0 (serve_signals). Its errors name the options of ``pdbd serve``.
    Returns the exit code."""
    signals = signals or ServeSignals()
    logs.setup(config.log_format, config.log_level)
    try:
        return checked_serve(config, signals)
    except StoppedStarting:
        notify.stopping()
        log.info("stopping before serving: a SIGTERM or SIGINT came while it started")
        return 0


def checked_serve(config: ServeConfig, signals: ServeSignals) -> int:
    """``serve`` once its log is set up."""
    if bool(config.tls_cert) != bool(config.tls_key) or (config.client_ca
                                                         and not config.tls_cert):
        raise BadInput("give --tls-cert and --tls-key together (and --client-ca only with them)")
    tls = Tls(config.tls_cert, config.tls_key, config.client_ca) if config.tls_cert else None
    # What fails fast fails before the slow steps (loading and checking the tables).
    if tls:
        tls.credentials()  # reads the files: one missing is said now
    check_exposure(config.listen, tls, config.insecure)
    check_listen(config.listen)
    proxies = TrustedProxies(config.trusted_proxies)  # a malformed one is said now
    pid_file = PidFile(config.pid_file) if config.pid_file else None
    if pid_file:
        pid_file.check()  # a daemon running already is said now, not after the tables
    if config.cluster:
        from pdbtool.cluster.messages import RECONNECT_SECONDS, ray_module

        # Ray ends a driver whose cluster's head has been unreachable for a minute (its own
        # line, "The program will terminate", and exit 1): the daemon serves on without
        # the cluster instead (Info says it is unreachable, a search for it is refused).
        # Read when Ray is imported (just below); the operator's setting wins.
        os.environ.setdefault("RAY_gcs_rpc_server_reconnect_timeout_s", str(RECONNECT_SECONDS))
        ray_module(config.cluster)  # Ray missing is said now, not after the tables
        logs.take_ray_lines()  # before ray.init: its error listener prints from its start
    elif config.cluster_shared or config.cluster_cache:
        raise BadInput("--cluster-shared and --cluster-cache need --cluster")
    metrics = Metrics()
    if config.metrics:
        address = check_metrics(config.metrics, config.insecure)
        listen = parse_target(config.listen, "--listen").address
        if address.port and listen is not None and address == listen:
            raise ListenError(f"--metrics {config.metrics} is --listen's address: give the "
                              "metrics a port of their own")
        port = metrics.serve(address.host, address.port)
        log.info("metrics on http://%s/metrics", address._replace(port=port))
    try:
        if config.metrics:
            check_listen(config.listen)  # again: the metrics may hold it under another name
            # of the host (0.0.0.0 and 127.0.0.1)
        return serve_with(config, tls, metrics, pid_file, proxies, signals)
    finally:
        metrics.close()
        if pid_file:
            pid_file.remove()


def serve_with(config: ServeConfig, tls: Tls | None, metrics: Metrics,
               pid_file: PidFile | None, proxies: TrustedProxies, signals: ServeSignals) -> int:
    """The rest of ``serve``, once what fails fast has passed and the metrics are served."""
    stop, reload = signals.stop, signals.reload
    loaded = load_directory(config.artifacts, require=True)  # a stop meanwhile: at once
    signals.serving()  # from here a stop is graceful (the tables are the daemon's below)
    log_tables(loaded)
    cluster = delegation = None
    try:  # until the daemon holds the cluster (Daemon.stop closes it), a failure closes it
        if config.cluster:
            from pdbtool.cluster.driver import Cluster

            cluster = Cluster(config.cluster, cache_dir=config.cluster_cache,
                              shared=config.cluster_shared, notify=log.warning)
            delegation = Delegation(cluster, config.cluster_above)
            info = cluster.info()
            log.info("searches above %s nodes go to the Ray cluster at %s: %d nodes, %d CPUs",
                     f"{config.cluster_above:,}", info.address, info.nodes, info.cpus)
        files = raise_file_limit()
        threads = config.threads or os.cpu_count() or 1
        per_client = (default_per_client(threads, config.max_queue)
                      if config.max_per_client is None else config.max_per_client or None)
        limits = Limits(config.max_search_seconds, config.max_nodes, per_client,
                        config.max_search_memory)
        daemon = Daemon(loaded, config.listen, threads, config.max_queue, limits=limits,
                        connections=Connections(config.request_timeout, config.idle_timeout,
                                                config.max_connection_age),
                        reflection_on=config.reflection, tls=tls, insecure=config.insecure,
                        mlock=config.mlock, prefault=config.prefault, delegation=delegation,
                        metrics=metrics, proxies=proxies, stopping=stop)
    except BaseException:
        if cluster is not None:
            with contextlib.suppress(Exception):  # (the failure is the one to say)
                cluster.close()
        raise
    sizes = sizes_text(loaded)
    del loaded  # the daemon's now: a reload releases them, and nothing here may keep them
    # (this frame lives as long as the process: it held the start's files open for good)
    if stop.is_set():  # SIGTERM or SIGINT while it started: never served, cleaned up
        notify.stopping()
        log.info("stopping before serving: a SIGTERM or SIGINT came while it started")
        daemon.stop(grace=0)
        log.info("stopped")
        return 0
    settle_heap()
    try:
        daemon.start()
    except BaseException:  # (a port taken meanwhile): the cluster closed, as at any stop
        daemon.stop(grace=0)
        raise
    try:
        if pid_file:
            pid_file.write()
        notify.ready()  # systemd's Type=notify: started now, not when the process began
        log.info("serving on %s (%s) with %s, queue %d, limits: %s s, %s nodes and %s "
                 "of memory per search, %s searches per client: %s", daemon.address,
                 "TLS" if tls else "plaintext", plural(daemon.pool.threads, "thread"),
                 daemon.pool.max_queue,
                 limits.max_search_seconds or "no",
                 f"{limits.max_nodes:,}" if limits.max_nodes else "no",
                 fmt_bytes(limits.max_search_memory) if limits.max_search_memory else "no limit",
                 per_client or "any", sizes)
        log.info("at most %d connections at once (open-file limit %d); more are closed as "
                 "they arrive", daemon.max_connections, files)
        while not stop.wait(0.5):
            if reload.is_set():
                reload.clear()
                notify.reloading()
                reload_tables(daemon, config.artifacts)
                notify.ready()  # the new tables, or (refused) the ones before
    finally:
        notify.stopping()
        log.info("shutting down")
        stop.clear()  # set again by a second SIGTERM or SIGINT: the drain ends at once
        daemon.stop(config.grace, config.drain, cut=stop)
        log.info("stopped")
    return 0


def settle_heap() -> None:
    """Once started: what the process holds by now (the modules of gRPC, numba, protobuf
    and pdbtool, the tables' metadata, compiled kernels: some 150,000 objects) is moved out
    of the cyclic garbage collector's sight (``gc.freeze``), since it lives as long as the
    process. Each full collection then looks only at what the calls made since, a few
    milliseconds where it took 30-40 ms; they come every one to few thousand batch boards
    (the results held for their reply outlive the young generations),
    docs/bench-history/2026-11-26-solve-batch-overhead-2.md. Reference counting frees
    these objects as before; only a cycle among them would no longer be collected."""
    gc.collect()
    gc.freeze()


def sizes_text(tables) -> str:
    """What the tables serve, by shape: "4x4 (pdb 15/7-8 + reflection, artifact ...)"."""
    return ", ".join(f"{as_shape(s)} ({h.name}, artifact {h.artifact})"
                     for s, h in sorted(tables.heuristics.items()))


def log_tables(tables) -> None:
    serving = {id(t) for t in tables.serving}
    for t in tables.loaded:
        m = t.meta
        how = ("stamp matched, checksums not re-read" if t.checks == ("stamp",)
               else "checked: " + ", ".join(t.checks))
        log.info("loaded %s: %s %s version %s (%s)", m.path, m.partition, m.shape,
                 m.version, how)
        if id(t) not in serving:
            log.info("%s serves nothing (a stronger table serves %s): not read into memory",
                     m.path, as_shape(m.shape))


def reload_tables(daemon, directory) -> None:
    """SIGHUP: load and check the directory again; serve it if every file passes, else
    keep serving what was loaded."""
    log.info("SIGHUP: reloading %s", directory)
    before = set(daemon.servicer.served.tables.shapes)
    try:
        tables = load_directory(directory, require=True)
        log_tables(tables)
        daemon.reload(tables)
    except PdbError as e:
        broken = [t.pin.path for t in daemon.servicer.served.tables.serving if t.pin.broken]
        log.error("reload refused, still serving the tables loaded before%s: %s",
                  f" (of which {', '.join(map(str, broken))} stays refused: changed on disk)"
                  if broken else "", e)
        return
    except Exception:  # a bug, not the files: the daemon still serves what it had
        log.exception("reload refused (an internal error), still serving the tables loaded "
                      "before")
        return
    log.info("reloaded: serving %s", sizes_text(tables))
    dropped = sorted(before - set(tables.shapes))
    if dropped:  # (a table removed, or renamed over by another size's)
        log.warning("reloaded without a table for %s boards, served before: they are refused "
                    "from now on", ", ".join(map(str, dropped)))
