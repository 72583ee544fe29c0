"""The signals of ``pdbd serve``, handled from its first moment (pdbd.cli.serve, before the
server's imports): SIGHUP asks for a reload (``reload``; its default action killed a daemon
in its first second); SIGTERM or SIGINT asks for a stop (``stop``). While the daemon starts
(its imports, the tables' checks: minutes for a large table without a stamp) a stop is
also raised where the start is, as ``StoppedStarting``, and the daemon ends at once, exit 0,
never having served; once it serves (``serving``) a stop is graceful: the drain, the grace
(pdbd.server.serve_with)."""

from __future__ import annotations

import signal
import threading


class StoppedStarting(BaseException):
    """SIGTERM or SIGINT while the daemon started (a BaseException, as KeyboardInterrupt is:
    the start's cleanups run, nothing catches it as an error)."""


class ServeSignals:
    """SIGTERM, SIGINT and SIGHUP for one daemon (main thread)."""

    def __init__(self):
        self.stop, self.reload = threading.Event(), threading.Event()
        self._starting = True
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._stopped)
        signal.signal(signal.SIGHUP, lambda *_: self.reload.set())

    def serving(self) -> None:
        """From here on a stop only sets ``stop``: the daemon stops gracefully."""
        self._starting = False

    def _stopped(self, signum, frame) -> None:
        self.stop.set()
        if self._starting:
            raise StoppedStarting(signal.Signals(signum).name)
