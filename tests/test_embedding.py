"""What an app embedding the library relies on: searches on its threads independent of one
another, its process's exit never held by a search."""

import gc
import os
import random
import signal
import subprocess
import sys
import threading

import pytest

from pdbtool import puzzle
from pdbtool.errors import LimitReached
from pdbtool.heuristics.table_free import table_free
from pdbtool.loading import load_heuristic
from pdbtool.search import threads as search_threads
from pdbtool.search.checkpoint import Checkpointing
from pdbtool.search.control import SearchControl
from pdbtool.search.solver import Solver
from pdbtool.selection import Solvers
from reference import ROOT, korf100
from serving import HARD

KORF1 = korf100()[0][2]  # 57 moves


def held(solver: Solver):
    """Make ``solver``'s shared iterations wait, each thread's share on entering it, until
    ``release`` is set; ``entered`` counts the shares waiting."""
    solver.compile_kernels()  # which calls it
    entered, release = threading.Semaphore(0), threading.Event()
    search_tasks = solver.search_tasks

    def waiting(*args):
        entered.release()
        release.wait()
        return search_tasks(*args)

    solver.search_tasks = waiting
    return entered, release


@pytest.mark.parametrize("threads, checkpointed", [(2, False), (1, True)])
@pytest.mark.parametrize("ending", ["answer", "halt"])
def test_a_search_never_waits_for_another_searchs_threads(monkeypatch, tmp_path, threads,
                                                           checkpointed, ending):
    """Every thread of one search is held inside its shared iteration (as a long search's
    are, for hours on a hard board); another search, on its own thread, still ends: with its
    answer, or at once once halted mid-iteration. One checkpointed thread searches apart from
    its caller too. (All shared iterations hand off: POLLED_AFTER 0, a long search's case.)"""
    monkeypatch.setattr(search_threads, "POLLED_AFTER", 0)

    def control(name):
        return SearchControl(checkpoint=Checkpointing(tmp_path / name) if checkpointed else None)

    busy, busy_control = Solver(table_free("manhattan", 4)), control("busy.json")
    entered, release = held(busy)
    long = threading.Thread(target=pytest.raises, args=(LimitReached, busy.solve, HARD,
                                                       "blank-first", busy_control),
                            kwargs=dict(threads=threads))
    long.start()
    try:
        for _ in range(threads):
            assert entered.acquire(timeout=120)  # every one of its threads is held
        other, other_control = Solver(table_free("manhattan", 4)), control("other.json")
        board = puzzle.random_walk(4, 50, "blank-first", random.Random(3))
        if ending == "halt":
            other.compile_kernels()
            board, search_tasks = HARD, other.search_tasks
            other.search_tasks = lambda *a: (other_control.halt(), search_tasks(*a))[1]
        outcome = []

        def run():
            try:
                outcome.append(other.solve(board, "blank-first", other_control,
                                           threads=threads))
            except LimitReached as e:
                outcome.append(e)

        searching = threading.Thread(target=run, daemon=True)
        searching.start()
        searching.join(60)  # seconds to spare: it ends in milliseconds, or never before
        assert outcome, "the search waited for the other search's threads"
        if ending == "halt":
            assert isinstance(outcome[0], LimitReached) and "stopped" in str(outcome[0])
        else:
            alone = Solver(table_free("manhattan", 4)).solve(board, "blank-first")
            assert outcome[0].length == alone.length
            assert alone.iterations[-2]["nodes"] > search_threads.SHARE_BELOW  # the last shared
    finally:
        busy_control.halt()
        release.set()
        long.join()


def test_a_search_on_a_daemon_thread_never_holds_the_exit():
    """The process ends at the end of its main thread while an app's daemon thread searches
    on two threads, as it does with one: the search's threads are daemon threads too. (Here
    they are held in their iteration forever: a pool's thread would hold the exit as long.)"""
    code = f"""if True:
        import threading
        from pdbtool.heuristics.table_free import table_free
        from pdbtool.search.solver import Solver

        solver = Solver(table_free("manhattan", 4))
        solver.compile_kernels()
        entered = threading.Semaphore(0)

        def forever(*args):
            entered.release()
            threading.Event().wait()

        solver.search_tasks = forever
        threading.Thread(target=solver.solve, args=({HARD!r}, "blank-first"),
                         kwargs=dict(threads=2), daemon=True).start()
        assert entered.acquire(timeout=60) and entered.acquire(timeout=60)  # both searching
        print("main ends", flush=True)
        """
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert p.returncode == 0 and p.stdout == "main ends\n", p.stderr[-2000:]


def test_controls_and_heuristics_are_compared_by_identity():
    """An app keeps its running searches' controls in a set or a list: each equals itself
    only (their == compared numpy arrays: 'truth value of an array is ambiguous')."""
    a, b = SearchControl(), SearchControl()
    running = {a, b}
    running.discard(a)
    assert running == {b} and a != b and a == a and a not in [b]
    listed = [b, a]
    listed.remove(a)
    assert listed == [b]
    h, same = table_free("manhattan", 4), table_free("manhattan", 4)
    assert len({h, same}) == 2 and h != same and Solver(h).heuristic == h


def test_solvers_chooses_a_shapes_solver_once_for_threads_asking_at_once(monkeypatch):
    """Four threads ask a Solvers for the same shape at once: one choice (one load of its
    table), one Solver for all. The first choice waits for the others to begin theirs (up
    to 2 s: with the lock none can, and it goes on alone)."""
    choose, together = Solvers._choose, threading.Barrier(4, timeout=2)

    def waiting(self, shape):
        try:
            together.wait()
        except threading.BrokenBarrierError:
            pass
        return choose(self, shape)

    monkeypatch.setattr(Solvers, "_choose", waiting)
    solvers, got = Solvers(heuristic="manhattan"), []
    asking = [threading.Thread(target=lambda: got.append(solvers.for_shape(4))) for _ in range(4)]
    for t in asking:
        t.start()
    for t in asking:
        t.join()
    assert len(got) == 4 and len({id(s) for s in got}) == 1


def held_open(path) -> tuple[int, int]:
    """This process's descriptors and mappings of the file ``path``."""
    path = os.path.realpath(path)
    fds = sum(os.path.realpath(f"/proc/self/fd/{fd}") == path for fd in os.listdir("/proc/self/fd"))
    with open("/proc/self/maps") as maps:
        return fds, sum(line.rstrip().endswith(path) for line in maps)


def test_a_table_the_app_drops_is_closed_and_unmapped(served_dir):
    """Loaded on the main thread (leased), solved with, dropped: its file is closed and
    unmapped, as one loaded on another thread always was (the lease registry kept every
    loaded file open and mapped for good: a rolled-out file's disk space never freed)."""
    path = served_dir / "8-full.h5"
    heuristic = load_heuristic(path)
    assert heuristic.source.unleased is None
    assert Solver(heuristic).solve("8 6 7 2 5 4 3 0 1").length == 31
    assert all(held_open(path))
    del heuristic
    gc.collect()
    assert held_open(path) == (0, 0)


def test_a_table_dropped_after_a_search_on_threads_is_closed_and_unmapped(served_dir,
                                                                           monkeypatch):
    """The same after a search on two threads: the crew's threads, idle for the next search,
    each kept the closure of its last job, and through it the solver and the table."""
    hired, hire = [], search_threads.Crew.hire.__func__
    monkeypatch.setattr(search_threads.Crew, "hire",
                        classmethod(lambda cls, size: hired.append(size) or hire(cls, size)))
    path = served_dir / "15-5-5-5.h5"
    solver = Solver(load_heuristic(path))
    _, optimum, board = korf100()[0]
    assert solver.solve(board, "blank-first", threads=2).length == optimum
    assert hired == [2]  # past the serial iterations: the crew searched
    assert all(held_open(path))
    del solver
    gc.collect()
    assert held_open(path) == (0, 0)


def test_an_apps_own_ctrl_c_handler_runs_once_and_the_search_goes_on():
    """An app with its own SIGINT handler (one that counts presses, say) searches on its main
    thread; Ctrl-C comes during the search (raised as its shared iterations begin). The
    handler decides: it runs once, and the search goes on, here to its budget. (pdbtool
    halted the search, then raised the signal again: the handler ran twice.)"""
    solver = Solver(table_free("manhattan", 4))
    solver.compile_kernels()
    presses, search_tasks = [], solver.search_tasks

    def pressed(*args):
        if not presses:
            signal.raise_signal(signal.SIGINT)
        return search_tasks(*args)

    solver.search_tasks = pressed
    control = SearchControl(budget=20_000_000)  # about a second here
    previous = signal.signal(signal.SIGINT, lambda *_: presses.append(True))
    try:
        with pytest.raises(LimitReached, match="budget"):
            solver.solve(HARD, "blank-first", control)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert presses == [True] and not control.halted


def test_a_forked_childs_ctrl_c_halts_its_searches_not_its_parents():
    """Fork while a search runs on the main thread (held open here: the searches' halting
    context, as in a search): in the child, Ctrl-C halts the child's search, and the
    parent's is left alone. (They shared the wakeup socket: the child's signal went to the
    parent's watcher, halting the parent's search and never the child's.)"""
    code = """if True:
        import os, signal, sys, time
        from pdbtool.search.control import SearchControl
        from pdbtool.search.interrupts import MAIN_THREAD_SEARCHES

        # Python's Ctrl-C, as under a terminal: a process started in the background of a
        # shell without job control (a CI runner's) inherits SIGINT ignored, and keeps it so.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        parents = SearchControl()
        with MAIN_THREAD_SEARCHES.halting(parents):
            pid = os.fork()
            if pid == 0:
                childs = SearchControl()
                with MAIN_THREAD_SEARCHES.halting(childs):
                    signalled, end = False, time.monotonic() + 60
                    while not childs.halted and time.monotonic() < end:
                        try:  # (its KeyboardInterrupt dropped: the halt is what counts)
                            if not signalled:
                                signalled = True
                                os.kill(os.getpid(), signal.SIGINT)
                            time.sleep(0.01)
                        except KeyboardInterrupt:
                            pass
                os._exit(0 if childs.halted else 3)
            _, status = os.waitpid(pid, 0)
            print(os.waitstatus_to_exitcode(status), parents.halted)
        """
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert p.stdout == "0 False\n", p.stdout + p.stderr[-2000:]


def test_a_process_that_loaded_a_table_forks_a_child_that_loads_one(served_dir):
    """A stamped zero-aware table's load derives its parity bits (no check runs): in a
    forked child after it, a load and a search work (a parallel kernel there, numba's
    GNU OpenMP layer, aborted such a child: "fork() called from a process already using
    GNU OpenMP", and hung a fork Pool)."""
    path = served_dir / "15-5-5-5.h5"
    code = f"""if True:
        import os
        from pdbtool.loading import load_heuristic
        from pdbtool.search.solver import Solver

        assert load_heuristic({str(path)!r}).H.zero_aware  # its parity bits derived
        pid = os.fork()
        if pid == 0:
            solver = Solver(load_heuristic({str(path)!r}))
            os._exit(0 if solver.solve({KORF1!r}, "blank-first").length == 57 else 3)
        print(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
        """
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert p.stdout == "0\n", p.stdout + p.stderr[-2000:]


def test_a_table_loaded_first_off_the_main_thread_says_it_has_no_lease(served_dir):
    """The first lease needs the main thread (its signal handler): a table an app's thread
    loads first gets none, and a warning says why (it got none silently: a truncation then
    killed the process with SIGBUS)."""
    code = f"""if True:
        import logging, threading
        from pdbtool.loading import load_heuristic

        logging.basicConfig(format="%(levelname)s %(message)s")
        threading.Thread(target=load_heuristic, args=({str(served_dir / "8-full.h5")!r},)).start()
        """
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert p.returncode == 0 and "WARNING" in p.stderr and "no read lease (the first lease " \
        "must be taken on the main thread" in p.stderr and "SIGBUS" in p.stderr, p.stderr


def test_a_search_s_crew_serves_the_next_search_unless_it_left_a_job_running(monkeypatch):
    """Starting a crew's threads for every search cost Korf's 100 on two threads 0.146 ->
    0.180 s: a crew given back idle serves the next search of its size; one that still runs
    a job of its search (ended by an exception) is not shared, its threads end after it."""
    import threading

    from pdbtool.search.threads import Crew

    monkeypatch.setattr(Crew, "_idle", {})
    crew = Crew.hire(2)
    assert crew.submit(lambda: 7).result(timeout=10) == 7
    crew.close()
    assert Crew.hire(2) is crew
    held = threading.Event()
    running = crew.submit(held.wait, 10)
    crew.close()
    other = Crew.hire(2)
    assert other is not crew
    held.set()
    assert running.result(timeout=10) is True
    assert other.submit(lambda: 8).result(timeout=10) == 8
