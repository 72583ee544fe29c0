"""Ctrl-C and SIGTERM held back over a step that must finish (``held``): a search's last
save when it is stopped, the start of a build's worker processes. A signal that comes
meanwhile is raised as it would have been, once the step is done; processes started
within never see one (they inherit the signals blocked)."""

from __future__ import annotations

import contextlib
import signal
import threading

STOPS = (signal.SIGINT, signal.SIGTERM)  # what the terminal's Ctrl-C and a service stop send


@contextlib.contextmanager
def held(signals=STOPS):
    """Hold ``signals`` for the block: blocked on this thread (a mask that processes
    started within inherit, through exec too), and on the main thread their handlers
    replaced by a note, so that a signal another thread takes waits as well; each one
    noted is raised again at the end, to the handler it would have met."""
    noted: list[int] = []
    here = threading.current_thread() is threading.main_thread()  # (handlers: main only)
    previous = {sig: signal.signal(sig, lambda number, _: noted.append(number))
                for sig in signals} if here else {}
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, signals)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        for sig in dict.fromkeys(noted):
            signal.raise_signal(sig)
