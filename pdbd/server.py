"""Assembling the daemon: warm-up, gRPC server, health checking, reflection, shutdown."""

from __future__ import annotations

import logging
import os
from concurrent.futures import ThreadPoolExecutor

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from pdbtool import puzzle
from pdbtool.errors import PdbError
from pdbtool.selection import TableSet

from .defaults import DEFAULT_LISTEN, DEFAULT_MAX_QUEUE
from .jobs import WorkerPool
from .servicer import SERVICE_NAME, SolverServicer
from .v1 import solver_pb2_grpc as pb_grpc

log = logging.getLogger("pdbd")

# A board is at most a few hundred bytes; up to 1 MiB a request still reaches validation and
# gets INVALID_ARGUMENT naming the problem; beyond that gRPC refuses it unread.
MAX_MESSAGE_BYTES = 1 << 20
SPARE_HANDLERS = 16  # handler threads beyond the solves: Info, health checks and watches


class ListenError(PdbError):
    exit_code = 1


class Daemon:
    """A configured server, warmed up and bound, not yet serving until start()."""

    def __init__(self, tables: TableSet, listen: str = DEFAULT_LISTEN, threads: int | None = None,
                 max_queue: int = DEFAULT_MAX_QUEUE, warm: bool = True):
        threads = threads or os.cpu_count() or 1
        self.pool = WorkerPool(threads, max_queue)
        self.servicer = SolverServicer(tables, self.pool)
        # Solves beyond threads + max_queue are refused by the pool; the handler pool is
        # bounded too, so a burst never queues without limit inside gRPC.
        handlers = threads + max_queue + SPARE_HANDLERS
        self.server = grpc.server(
            ThreadPoolExecutor(handlers, thread_name_prefix="pdbd-rpc"),
            maximum_concurrent_rpcs=handlers,
            options=[("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                     ("grpc.so_reuseport", 0)])  # a second daemon on a busy port must fail
        pb_grpc.add_SolverServicer_to_server(self.servicer, self.server)
        self.health = health.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self.server)
        reflection.enable_server_reflection(
            (SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME), self.server)
        for name in ("", SERVICE_NAME):
            self.health.set(name, health_pb2.HealthCheckResponse.NOT_SERVING)
        try:
            self.port = self.server.add_insecure_port(listen)
        except RuntimeError as e:
            raise ListenError(f"cannot listen on {listen}: {e}") from None
        if not self.port:
            raise ListenError(f"cannot listen on {listen} (address in use or invalid)")
        host = listen.rsplit(":", 1)[0]
        self.address = f"{host}:{self.port}"
        # After binding (a busy port fails fast), before serving (no query pays for it).
        if warm:
            warm_up(self.servicer.solvers)

    def start(self) -> None:
        self.server.start()
        for name in ("", SERVICE_NAME):
            self.health.set(name, health_pb2.HealthCheckResponse.SERVING)

    def stop(self, grace: float = 5.0) -> None:
        """Graceful: NOT_SERVING, refuse new work, stop every search, drain, close."""
        self.health.enter_graceful_shutdown()
        self.servicer.close()
        self.server.stop(grace).wait()
        self.pool.shutdown()


def warm_up(solvers) -> None:
    """Compile (or load from numba's cache) each kernel with a one-move board per size,
    so the first real query does not pay for compilation."""
    for side, solver in sorted(solvers.items()):
        board = puzzle.apply_blank_moves(puzzle.goal_board(side, "blank-last"), "L")
        solver.solve(board, "blank-last")
        log.debug("warmed up %dx%d (%s)", side, side, solver.heuristic.name)
