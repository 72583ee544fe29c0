"""pdbd's worker pool (pdbd.jobs.WorkerPool) on its own: admission, its queue, shutdown.
The jobs are stand-ins whose run waits for the test, so every order here is certain."""

import threading
import weakref

import pytest

from pdbd.jobs import QueueFull, WorkerPool
from serving import wait_for


class Waiting:
    """A job whose search waits for ``go`` and returns ``value``; ``halt`` as Job's (it
    cancels the future while the job waits in the queue)."""

    def __init__(self, value=None):
        self.value, self.future = value, None
        self.started, self.go = threading.Event(), threading.Event()
        self.reason = None
        self.ended = 0  # how many times the pool said it ended (Job.end): once

    def end(self):
        self.ended += 1

    def run(self):
        self.started.set()
        self.go.wait(timeout=30)
        return self.value

    def halt(self, reason):
        self.reason = reason
        self.go.set()
        if self.future is not None:
            self.future.cancel()


def test_a_job_cancelled_in_the_queue_leaves_it_at_once():
    pool = WorkerPool(threads=1, max_queue=2)
    busy = Waiting("busy")
    pool.submit(busy)
    assert busy.started.wait(timeout=10)
    for i in range(50):  # a client whose deadlines pass while the worker is busy
        job = Waiting(i)
        future = pool.submit(job)
        assert pool.waiting == 1 and pool.in_flight == 2
        job.halt("deadline")
        assert future.cancelled() and pool.waiting == 0 and pool.in_flight == 1
        assert job.ended == 1
        gone = weakref.ref(job)
        del job, future
        assert gone() is None, "a cancelled job is still held by the pool"
    queued = [Waiting(v) for v in ("a", "b")]
    futures = [pool.submit(job) for job in queued]
    with pytest.raises(QueueFull, match=r"^1 search running and 2 waiting$"):  # not '1 searches'
        pool.submit(Waiting())
    busy.go.set()
    for job in queued:
        job.go.set()
    assert [f.result(timeout=10) for f in futures] == ["a", "b"]
    pool.shutdown()


def test_shutdown_halts_running_and_waiting_jobs_and_refuses_new_ones():
    pool = WorkerPool(threads=1, max_queue=1)
    running, waiting = Waiting("running"), Waiting("waiting")
    first, second = pool.submit(running), pool.submit(waiting)
    assert running.started.wait(timeout=10)
    pool.shutdown()
    assert running.reason == "shutdown" and waiting.reason == "shutdown"
    assert first.result(timeout=0) == "running" and second.cancelled()
    assert not waiting.started.is_set() and pool.in_flight == 0
    with pytest.raises(RuntimeError, match="closed"):
        pool.submit(Waiting())


def test_a_failed_search_is_the_futures_exception_and_frees_its_slot():
    class Failing(Waiting):
        def run(self):
            raise ValueError("no such board")

    pool = WorkerPool(threads=1, max_queue=0)
    failing = Failing()
    with pytest.raises(ValueError, match="no such board"):
        pool.submit(failing).result(timeout=10)
    assert pool.in_flight == 0 and failing.ended == 1  # before the outcome is visible
    ok = Waiting(7)
    ok.go.set()
    assert pool.submit(ok).result(timeout=10) == 7
    pool.shutdown()


def test_a_failing_report_after_a_search_ends_neither_the_worker_nor_the_answer(caplog):
    def report(job):
        raise RuntimeError("the metrics broke")

    pool = WorkerPool(threads=1, max_queue=0, on_finish=report)
    for value in (1, 2):  # the second on the same worker
        job = Waiting(value)
        job.go.set()
        assert pool.submit(job).result(timeout=10) == value
    assert pool.in_flight == 0 and "after a search" in caplog.text
    pool.shutdown()


def test_the_fast_lanes_search_is_search_time_not_queue_time(monkeypatch):
    """A search past the fast lane's nodes goes to the pool: its lane seconds were counted
    as waiting (queue_seconds, in the result and the log line) and missed from its search
    seconds (the log line's and the duration histogram's). A clock of the test's own."""
    from pdbd import jobs
    from pdbd.jobs import FastLane, Job, Lane
    from pdbtool.errors import LimitReached

    now = [100.0]
    monkeypatch.setattr(jobs.time, "monotonic", lambda: now[0])

    class Solver:  # searches 5 s in the lane, to its budget; then 2 s in the pool
        def search(self, prepared, control=None, algorithm=None):
            now[0] += 5.0 if control.checkpoint is not None else 2.0
            if control.checkpoint is not None:
                raise LimitReached("the lane's nodes")
            return "answer"

    job = Job(Solver(), None, None)
    assert not FastLane(Lane(slots=1)).run(job, "client")  # handed to the pool
    assert job.lane_seconds == 5.0 and job.started is None and job.search_seconds == 5.0
    now[0] += 0.25  # waits for a worker
    assert job.run() == "answer"
    assert job.queue_seconds == 0.25 and job.search_seconds == 7.0


def test_the_clusters_info_is_waited_for_a_few_seconds_at_most():
    """Ray's calls block while its head is unreachable: `pdbd info` of a daemon whose
    cluster had gone waited out its deadline (exit 4, "deadline exceeded"). Info says the
    cluster did not answer instead; the call under way is asked once, not once an Info."""
    import threading

    from pdbd.jobs import Delegation
    from pdbtool.errors import PdbError

    answer, calls = threading.Event(), []

    class Unreachable:
        address = "127.0.0.1:6379"
        lost = None  # Cluster.lost: its head not yet found gone by a TCP connection

        def info(self):
            calls.append(1)
            answer.wait(30)
            return "figures"

    d = Delegation(Unreachable(), 1000)
    for _ in range(2):
        with pytest.raises(PdbError, match="127.0.0.1:6379 did not answer within 0.2 s"):
            d.info(timeout=0.2)
    # once (its thread may start late on a busy machine: waited for), not once an Info
    assert wait_for(lambda: calls, 30) and len(calls) == 1
    answer.set()
    assert d.info(timeout=5) == "figures"


def test_a_search_for_a_cluster_that_does_not_answer_is_refused_at_once():
    """A cluster whose head is gone: the search handed to it blocked in Ray's calls past its
    deadline, its worker lost (and before that the whole daemon ended with Ray's driver, a
    minute after the head: serve sets RAY_gcs_rpc_server_reconnect_timeout_s). The hand-over
    asks the cluster first (Delegation.info, a few seconds at most)."""
    from pdbd.jobs import Delegation
    from pdbtool.cluster.messages import ClusterError

    class Gone:
        address = "127.0.0.1:6379"
        lost = None

        def info(self):
            raise ClusterError("cannot reach the Ray cluster at 127.0.0.1:6379")

    d = Delegation(Gone(), 1000)
    with pytest.raises(ClusterError, match="cannot reach"):
        d._count()  # (search_here_then_on's on_cluster, before the cluster's search)
    assert d.delegated == 0
