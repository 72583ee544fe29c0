"""Making the daemon ready to answer at once: the search kernels compiled before it serves
(``warm_up``), the tables read into memory (``prefault_tables``, in the background once
serving) or locked there (``lock_tables``, ``--mlock``)."""

from __future__ import annotations

import logging
import threading
import time

from pdbtool import puzzle
from pdbtool.errors import PdbError
from pdbtool.selection import TableSet
from pdbtool.tables import residency

log = logging.getLogger("pdbd")


def prefault_tables(tables: TableSet, stop: threading.Event | None = None) -> None:
    """Read the tables that serve into memory (a table that serves nothing is left to the
    page cache: a weaker one beside a stronger of its shape)."""
    for loaded in tables.serving:
        residency.prefault(loaded.data, stop)
        log.info("%s in memory: %.1f of %.1f MiB", loaded.meta.path,
                 residency.resident_bytes(loaded.data) / 2**20, loaded.data.nbytes / 2**20)


def lock_tables(tables: TableSet) -> None:
    for loaded in tables.serving:
        try:
            residency.lock(loaded.data)
        except OSError as e:
            raise PdbError(f"{loaded.meta.path}: {e.strerror}") from None
        log.info("%s locked in memory (%.1f MiB)", loaded.meta.path, loaded.data.nbytes / 2**20)


def warm_up(solvers, stopping: threading.Event | None = None) -> None:
    """Compile (or load from numba's cache) each kernel with a one-move board per shape,
    after the server binds (a busy port fails first) and before it answers (calls wait),
    so the first real query does not pay for compilation; a compile (the first start on a
    machine) is announced in the log, with its time. Once ``stopping`` is set (SIGTERM
    during start-up), it returns at once: a compile under way cannot be cut short, so each
    shape is warmed on a thread of its own, left to end with the process (its compile
    child dies with it: ``signals.die_with_parent``), and nothing compiled is lost but
    the unfinished kernels (numba writes each one whole)."""
    from pdbtool.search import warm

    for shape, solver in sorted(solvers.items()):
        if stopping is not None and stopping.is_set():
            return
        board = puzzle.apply_blank_moves(puzzle.goal_board(shape, "blank-last"), "L", shape)
        pending = warm.pending(type(solver.heuristic.H), solver.kernel_parts(1))
        if pending:
            log.info("compiling the search kernels for %s (%s) on this machine, once, before "
                     "answering (the port is bound already: calls wait): about %.0f s "
                     "('pdbtool warm' does it ahead of time)", shape, solver.heuristic.name,
                     pending)
        start = time.perf_counter()
        if not _solved_unless(stopping, solver, board):
            log.info("stopping: the compile for %s left unfinished", shape)
            return
        log.log(logging.INFO if pending else logging.DEBUG, "kernels ready for %s (%s) in "
                "%.1f s", shape, solver.heuristic.name, time.perf_counter() - start)


def _solved_unless(stopping: threading.Event | None, solver, board) -> bool:
    """Solve ``board`` (a warm-up), unless ``stopping`` is set first: False then, the
    solve left running on a daemon thread. A solve's error is raised here."""
    if stopping is None:
        solver.solve(board, "blank-last")
        return True
    failed: list[BaseException] = []

    def run() -> None:
        try:
            solver.solve(board, "blank-last")
        except BaseException as e:  # noqa: BLE001 (raised again by the caller's thread)
            failed.append(e)

    thread = threading.Thread(target=run, name="pdbd-warm-up", daemon=True)
    thread.start()
    while thread.is_alive():
        thread.join(0.1)
        if stopping.is_set() and thread.is_alive():
            return False
    if failed:
        raise failed[0]
    return True
