"""The shared alarm thread: alarms ring once, in time order, not when cancelled, and a
failing alarm does not stop the others."""

import threading
import time

from pdbtool.search.alarms import Alarms


def test_alarms_ring_in_time_order_and_cancelled_ones_do_not():
    """The alarms' thread is held in a first alarm until the others are set and one is
    cancelled: however long this thread stalls, the cancelled one cannot ring first."""
    alarms, rang, done, gate = Alarms("test-alarms"), [], threading.Event(), threading.Event()
    alarms.after(0, gate.wait, 10)
    cancelled = alarms.after(0.05, rang.append, "cancelled")
    alarms.after(0.3, rang.append, "late")
    alarms.after(0.2, rang.append, "middle")
    alarms.after(0.01, rang.append, "early")
    alarms.after(0.4, done.set)
    cancelled.cancel()
    gate.set()
    assert done.wait(15)
    assert rang == ["early", "middle", "late"]


def test_an_earlier_alarm_wakes_the_thread_and_a_failure_does_not_stop_it():
    alarms, done = Alarms("test-alarms"), threading.Event()
    alarms.after(30, done.set)  # the thread sleeps until this one...
    alarms.after(0.01, lambda: 1 / 0)  # ...unless woken; this one fails
    t = time.monotonic()
    alarms.after(0.05, done.set)
    assert done.wait(5)
    assert time.monotonic() - t < 5


def test_many_cancelled_alarms_are_dropped_from_the_heap():
    alarms = Alarms("test-alarms")
    for _ in range(10_000):
        alarms.after(60, print).cancel()
    assert len(alarms._heap) < 200


def test_a_cancelled_alarm_lets_go_of_what_it_would_have_called():
    """A cancelled alarm waits in the heap until it comes up or the heap is compacted: it
    must not keep its function (a search's control) alive meanwhile."""
    import gc
    import weakref

    class Control:
        def halt(self, reason):
            raise AssertionError("a cancelled alarm rang")

    alarms, control = Alarms("test-alarms"), Control()
    gone = weakref.ref(control)
    alarms.after(30, print)  # the heap's first: the thread sleeps until it is due
    alarm = alarms.after(60, control.halt, "time-limit")
    alarm.cancel()
    del control
    gc.collect()
    assert gone() is None and alarm in [e[2] for e in alarms._heap]
