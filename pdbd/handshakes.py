"""Failed TLS handshakes, logged per peer at most once a minute.

gRPC Python shows a server nothing of a connection whose handshake fails: it never becomes
a call, and there is no hook. Only the C core's handshaker trace names the peer
(``grpc.internal.endpoint_peer_address=...`` in the record of the failure), and the core
writes it straight to file descriptor 2. So a TLS server turns the trace on and reads it
back in a process of its own (``capture``, before gRPC loads):

* gRPC loads with ``GRPC_VERBOSITY=DEBUG`` and ``GRPC_TRACE=handshaker`` (taken out of the
  environment again once it has read them: the daemon's children do not trace), and the
  daemon's file descriptor 2 becomes a pipe, its write end non-blocking: the core never
  waits for the reader; a line the reader cannot take in time is lost, not the call
  (children inherit the pipe as their stderr, non-blocking too);
* the reader, ``python -m pdbd.handshakes``, keeps the daemon's real stderr. It logs the
  core's errors (what ``GRPC_VERBOSITY=ERROR`` showed before: ``pdbd.grpc``, ERROR, in the
  daemon's log format, one line a place in the core's source a minute, ``Repeats``: a
  client could otherwise write a line a connection, as a TLS server name the certificate
  does not carry does), and passes on its fatal records and every line that is
  not the core's (a child's output, a fatal error's trace: the reader outlives the daemon
  until the pipe's last writer is gone), and drops the rest of the trace (about 5 KB a
  connection, nothing a call); what passes is held to 1 MiB a minute (``Passing``: should
  the core's format change so that its trace no longer reads as its own, the flood stops
  there, counted in one line). A reader that ends while the daemon lives is started
  again (``Capture``), three times in a row at most, each time said on the real stderr;
* each failure of the server's side is a ``Failure`` (peer, reason; the daemon's own
  outgoing connections do not count), and ``Throttle`` lets one line a peer address
  through a minute (``pdbd.tls``, WARNING, in the daemon's log format; ``pdbd serve
  --tls-log-every``), then one line with the count of those it held back (at the end too);
  at most ``BURST`` lines a minute in all, the rest counted in one line.

The reasons are the core's words: a handshake that timed out reads "Handshake read failed
(Endpoint closing)", one still running when the daemon stops too. The trace's format is
the core's internal one, read as grpcio 1.85 writes it (tests/data/grpc-handshaker-
trace.txt; older cores' "handshake_manager 0x..: error=" also matched, untested). The
daemon's own log lines go to the real stderr directly (``sys.stderr``); they never pass
through the pipe. An operator who sets ``GRPC_VERBOSITY`` or ``GRPC_TRACE`` gets the core's
lines as they asked, and no capture. The reader loads neither numba nor grpc.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import faulthandler
import fcntl
import logging
import os
import re
import select
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
from dataclasses import dataclass
from typing import Iterator, NamedTuple

from . import logs

INTERVAL = 60.0   # seconds between two lines about one peer
BURST = 20        # lines about failures in any one interval, all peers together
MAX_PEERS = 4096  # peers remembered; the oldest forgotten first
RECORD_WAIT = 0.2  # seconds a core record waits for more lines before it is sorted
PIPE_BYTES = 1 << 20  # the pipe's buffer: about 200 connections' trace
MAX_LINE = 1 << 16  # a longer line is passed on in pieces, not gathered without end
RESTARTS = 3  # readers started again in a row before the core's lines go to /dev/null
PASS_BYTES = 1 << 20  # bytes passed on a minute at most (a crash's trace is a few KB)

log = logging.getLogger("pdbd.tls")
core_log = logging.getLogger("pdbd.grpc")

# An absl log line of the core: level, date, time (or, before absl is set up, 0000 and
# 00:00:SECONDS), thread, file:line] text.
_CORE = re.compile(rb"^([IWEF])\d{4} [\d:.]+ +\d+ ([^ \]]+:\d+)\] ")
# A handshake that ended in an error (grpcio 1.85; older cores say "handshake_manager 0x..:
# error=..."), and the server's side of it (the client's side has no server credentials).
_FAILED = re.compile(rb"(?:CallNextHandshakerLocked|handshake_manager 0x[0-9a-f]+): "
                     rb"error=(?!OK )(.*?)(?:: OK)?\s*$", re.M)
_SERVER = b"grpc.internal.server_credentials="
# The lines a core record goes on with: an error's source trace, the handshaker's arguments
# after its error. Any other line is not the core's, and passes, whatever came before it.
_CONTINUED = re.compile(rb"^(=== Source Location Trace|[\w./-]+\.(cc|h|c):\d+\s*$| shutdown=|\s*$)")
_PEER = re.compile(rb"endpoint_peer_address=([a-z0-9]+:[^,}\s]+)")


class Failure(NamedTuple):
    peer: str    # the client's address without its port, or "unknown"
    reason: str  # the core's error, e.g. "... SSL_ERROR_SSL: ... WRONG_VERSION_NUMBER"


class CoreError(NamedTuple):
    """An error record of the core's that is no failed handshake (e.g. "No match found for
    server name: ...", a client's SNI the certificate does not carry)."""

    where: str  # its place in the core's source, e.g. "ssl_transport_security.cc:3238"
    text: str   # its first line, without the core's prefix


def peer_host(address: str) -> str:
    """``ipv4:127.0.0.1:5000`` -> ``127.0.0.1``; ``ipv6:%5B::1%5D:5000`` -> ``::1``;
    ``unix:/path`` -> ``unix:/path``."""
    scheme, _, rest = urllib.parse.unquote(address).partition(":")
    if scheme == "ipv4":
        return rest.rpartition(":")[0] or rest
    if scheme == "ipv6":
        host = rest.rpartition(":")[0] if "]" in rest else rest
        return host.strip("[]")
    return f"{scheme}:{rest}"


class Trace:
    """Split what the core writes into records (a core line and the lines it goes on with)
    and sort them: ``feed`` yields each failed handshake as a ``Failure`` and what is to
    pass on as bytes (the core's F records, and every line that is not the core's), and
    each of the core's E records as a ``CoreError``;
    the rest of the trace is dropped."""

    def __init__(self):
        self._partial = b""
        self._record: list[bytes] = []  # the current core record's lines

    def feed(self, chunk: bytes) -> Iterator[Failure | bytes]:
        lines = (self._partial + chunk).split(b"\n")
        self._partial = lines.pop()
        for line in lines:
            yield from self._line(line + b"\n")
        if len(self._partial) > MAX_LINE:  # no line of the core's: passed on as it comes
            yield from self.close()
            yield self._partial
            self._partial = b""

    @property
    def open(self) -> bool:
        """A core record is waiting for lines that may go on with it."""
        return bool(self._record)

    def flush(self) -> Iterator[Failure | bytes]:
        """What is left at the end of the stream."""
        if self._partial:
            yield from self._line(self._partial + b"\n")
            self._partial = b""
        yield from self.close()

    def _line(self, line: bytes) -> Iterator[Failure | bytes]:
        if _CORE.match(line):
            yield from self.close()
            self._record = [line]
        elif self._record and _CONTINUED.match(line):
            self._record.append(line)
        else:  # not the core's (a child's, a fatal error's): passed on as it is, after
            if self._record[:1] and self._record[0][:1] in b"EF":  # a core error before it
                yield from self.close()
            yield line

    def close(self) -> Iterator[Failure | bytes]:
        """Sort the record open now (the reader's, when the core goes quiet)."""
        record, self._record = b"".join(self._record), []
        if not record:
            return
        level = record[:1]
        failed = _FAILED.search(record) if _SERVER in record else None
        if failed:
            peer = _PEER.search(record)
            yield Failure(peer_host(peer.group(1).decode()) if peer else "unknown",
                          failed.group(1).strip().decode(errors="replace") or "unknown error")
        elif level == b"E":  # what the core showed at GRPC_VERBOSITY=ERROR: logged in the
            head = _CORE.match(record)  # daemon's format, throttled (Repeats)
            yield CoreError(head.group(2).decode(errors="replace"),
                            record[head.end():].split(b"\n", 1)[0].strip()
                            .decode(errors="replace"))
        elif level == b"F":  # the core's last words: passed on whole
            yield record


@dataclass
class _Peer:
    since: float  # when its last line was logged
    held: int = 0  # failures since, not logged one by one
    reason: str = ""  # the last of them


class Throttle:
    """At most one line a peer an ``interval``, and ``burst`` lines an interval in all."""

    def __init__(self, interval: float = INTERVAL, burst: int = BURST,
                 max_peers: int = MAX_PEERS):
        self.interval, self.burst, self.max_peers = interval, burst, max_peers
        self._peers: collections.OrderedDict[str, _Peer] = collections.OrderedDict()
        self._holding: set[str] = set()  # the peers with failures held back
        self._window, self._lines, self._dropped = 0.0, 0, 0  # all peers' budget
        self._next_look = 0.0  # when ``due`` looks at the peers held back again

    def note(self, failure: Failure, now: float) -> list[str]:
        """The lines to log for one failure (none while its peer is held back)."""
        lines = self.due(now)
        name, peer = failure.peer, self._peers.get(failure.peer)
        line = f"TLS handshake from {name} failed: {failure.reason}"
        if peer is not None:
            self._peers.move_to_end(name)
            if now - peer.since < self.interval:
                peer.held += 1
                peer.reason = failure.reason
                self._holding.add(name)
                return lines
            if peer.held:  # its minute is over, and ``due`` has not said so yet
                line += f" ({peer.held} more from it in the {now - peer.since:.0f} s before)"
            self._holding.discard(name)
        while len(self._peers) >= self.max_peers:
            self._holding.discard(self._peers.popitem(last=False)[0])
        self._peers[name] = _Peer(now)
        return lines + self._spend(line, now)

    def due(self, now: float, final: bool = False) -> list[str]:
        """Lines for peers held back whose interval is over (``final``: every one held
        back), and the count of the lines the burst limit dropped."""
        lines = []
        if not final and now < self._next_look:  # a look at most every quarter interval
            return lines
        self._next_look = now + self.interval / 4
        for name in sorted(self._holding, key=lambda n: (self._peers[n].since, n)):  # oldest
            peer = self._peers[name]
            if final or now - peer.since >= self.interval:
                lines += self._spend(f"TLS handshakes from {name}: {peer.held} more failed "
                                     f"in the last {now - peer.since:.0f} s: {peer.reason}",
                                     now)
                peer.since, peer.held = now, 0
                self._holding.discard(name)
        if self._dropped and (final or now - self._window >= self.interval):
            lines.append(f"{self._dropped} more lines about failed TLS handshakes dropped in "
                         f"the last {now - self._window:.0f} s (at most {self.burst} a "
                         f"{self.interval:.0f} s)")
            self._dropped = 0
        return lines

    def _spend(self, line: str, now: float) -> list[str]:
        if now - self._window >= self.interval:
            self._window, self._lines = now, 0
        if self._lines >= self.burst:
            self._dropped += 1
            return []
        self._lines += 1
        return [line]


class Repeats:
    """The core's errors (``CoreError``), one line a place in its source an ``interval``,
    the ones held back counted in a line once the interval is over."""

    def __init__(self, interval: float = INTERVAL, max_places: int = MAX_PEERS):
        self.interval, self.max_places = interval, max_places
        self._since: collections.OrderedDict[str, float] = collections.OrderedDict()
        self._held: dict[str, tuple[int, str]] = {}  # place -> (count, its last text)

    def note(self, error: CoreError, now: float) -> list[str]:
        lines = self.due(now)
        since = self._since.get(error.where)
        if since is not None and now - since < self.interval:
            count, _ = self._held.get(error.where, (0, ""))
            self._held[error.where] = (count + 1, error.text)
            return lines
        while len(self._since) >= self.max_places:
            self._held.pop(self._since.popitem(last=False)[0], None)
        self._since[error.where] = now
        self._since.move_to_end(error.where)
        return lines + [f"gRPC: {error.text}"]

    def due(self, now: float, final: bool = False) -> list[str]:
        """Lines for the places whose errors were held back, once their interval is over
        (``final``: all)."""
        lines = []
        for where, (count, text) in list(self._held.items()):
            since = self._since[where]
            if final or now - since >= self.interval:
                lines.append(f"gRPC: {count} more like it from {where} in the last "
                             f"{now - since:.0f} s: {text}")
                self._since[where] = now
                del self._held[where]
        return lines


def read(stream, out, throttle: Throttle, clock=time.monotonic) -> None:
    """The reader: ``stream`` (the pipe, raw) until its end, the failures through
    ``throttle`` to the log (pdbd.tls), the core's other errors through a ``Repeats`` to
    the log (pdbd.grpc), what else passes to ``out`` (raw, through a ``Passing``)."""
    trace, passing, repeats = Trace(), Passing(throttle.interval), Repeats(throttle.interval)
    fd = stream.fileno()
    while True:
        # A record still open goes out once the core is quiet for a moment (its next line
        # would have closed it); otherwise wake now and then for the lines held back.
        wait = RECORD_WAIT if trace.open else throttle.interval / 4
        ready, _, _ = select.select([fd], [], [], wait)
        chunk = os.read(fd, 1 << 16) if ready else None
        items = trace.close() if chunk is None else trace.feed(chunk) if chunk else trace.flush()
        lines, errors, now = [], [], clock()
        for item in items:
            if isinstance(item, Failure):
                lines += throttle.note(item, now)
            elif isinstance(item, CoreError):
                errors += repeats.note(item, now)
            elif passing.take(len(item), now):
                out.write(item)
                out.flush()
        lines += throttle.due(now, final=chunk == b"") + passing.said(now, final=chunk == b"")
        errors += repeats.due(now, final=chunk == b"")
        for line in lines:
            log.warning(line)
        for line in errors:
            core_log.error(line)
        if chunk == b"":
            return


class Passing:
    """What passes on (the core's fatal records, other lines): at most ``limit`` bytes an
    ``interval``, the rest dropped and counted in one line (should the core's format change
    so that its trace no longer reads as its own, a flood is held to this)."""

    def __init__(self, interval: float = INTERVAL, limit: int = PASS_BYTES):
        self.interval, self.limit = interval, limit
        self._window, self._bytes, self._dropped = 0.0, 0, 0

    def take(self, size: int, now: float) -> bool:
        if now - self._window >= self.interval and not self._dropped:
            self._window, self._bytes = now, 0
        if self._bytes + size > self.limit:
            self._dropped += 1
            return False
        self._bytes += size
        return True

    def said(self, now: float, final: bool = False) -> list[str]:
        """The line about what was dropped, once its interval is over."""
        if not self._dropped or not (final or now - self._window >= self.interval):
            return []
        line = (f"{self._dropped} lines of stderr (gRPC's errors, the daemon's children's) "
                f"dropped in the last {now - self._window:.0f} s: at most "
                f"{self.limit:,} bytes pass a {self.interval:.0f} s")
        self._window, self._bytes, self._dropped = now, 0, 0
        return [line]


def capture(log_format: str, log_level: str, interval: float = INTERVAL) -> bool:
    """In the daemon, before gRPC loads: file descriptor 2 a pipe to a reader process
    (``Capture``), ``sys.stderr`` (and faulthandler) the real stderr, and gRPC loaded with
    the handshaker trace on (its two variables then taken out of the environment again,
    so the daemon's children, Ray's among them, do not trace). False, and nothing done,
    where gRPC is loaded already, the operator set its log variables, or there is no
    stderr to keep."""
    if "grpc" in sys.modules or {"GRPC_VERBOSITY", "GRPC_TRACE"} & set(os.environ):
        return False
    try:
        sys.stderr.flush()
        real = os.dup(2)
    except (AttributeError, OSError, ValueError):  # no stderr to keep: nothing to read back
        return False
    argv = [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []),  # -P: not
            "-m", "pdbd.handshakes", "--log-format", log_format, "--log-level", log_level,
            "--interval", str(interval)]  # a pdbd/ in the working directory
    try:
        Capture(real, argv).start()
    except OSError:
        os.close(real)
        return False
    sys.stderr = os.fdopen(real, "w", buffering=1, errors="backslashreplace")
    faulthandler.enable(sys.stderr)
    os.environ.update(GRPC_VERBOSITY="DEBUG", GRPC_TRACE="handshaker")
    try:
        import grpc  # noqa: F401 (the core reads its log settings as it loads)
    finally:
        del os.environ["GRPC_VERBOSITY"], os.environ["GRPC_TRACE"]
    return True


class Capture:
    """The daemon's side of the reader: file descriptor 2 a pipe to ``python -m
    pdbd.handshakes`` (``argv``), whose stderr is ``real``; a reader that ends while the
    daemon lives is started again, RESTARTS times in a row at most (a reader that ran a
    minute starts the count afresh), then the core's lines go to /dev/null; each said on
    the real stderr."""

    def __init__(self, real: int, argv: list[str]):
        self.real, self.argv = real, argv
        self._restarts = 0

    def start(self) -> None:
        """Start a reader and point file descriptor 2 at it; a thread watches it."""
        read_end, write_end = os.pipe()
        try:
            proc = subprocess.Popen(self.argv, stdin=read_end, stdout=subprocess.DEVNULL,
                                    stderr=self.real, close_fds=True, start_new_session=True)
        except OSError:
            os.close(write_end)
            raise
        finally:
            os.close(read_end)
        with contextlib.suppress(OSError):  # room for bursts (Linux; up to pipe-max-size)
            fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
        fcntl.fcntl(write_end, fcntl.F_SETFL,
                    fcntl.fcntl(write_end, fcntl.F_GETFL) | os.O_NONBLOCK)
        os.dup2(write_end, 2)
        os.close(write_end)
        threading.Thread(target=self._watch, args=(proc, time.monotonic()),
                         name="pdbd-tls-reader", daemon=True).start()

    def _watch(self, proc: subprocess.Popen, started: float) -> None:
        code = proc.wait()
        if time.monotonic() - started > 60:
            self._restarts = 0
        daemon = logging.getLogger("pdbd")
        if self._restarts < RESTARTS:
            self._restarts += 1
            daemon.warning("the reader of gRPC's handshake trace ended (exit %s): starting "
                           "another", code)
            with contextlib.suppress(OSError):
                self.start()
                return
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 2)
        os.close(null)
        daemon.error("the reader of gRPC's handshake trace ended (exit %s) and could not be "
                     "kept: failed TLS handshakes and gRPC's own errors are no longer "
                     "logged", code)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m pdbd.handshakes",
                                description="pdbd serve's reader of gRPC's handshaker trace "
                                            "(stdin): failed TLS handshakes logged per peer")
    p.add_argument("--log-format", choices=logs.FORMATS, default="text")
    p.add_argument("--log-level", choices=logs.LEVELS, default="info")
    p.add_argument("--interval", type=float, default=INTERVAL,
                   help=f"seconds between two lines about one peer (default {INTERVAL:g})")
    args = p.parse_args(argv)
    # The daemon's signals are not this process's: it ends when the daemon's pipe does.
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    logs.setup(args.log_format, args.log_level)
    read(sys.stdin.buffer, sys.stderr.buffer, Throttle(args.interval))
    return 0


if __name__ == "__main__":
    sys.exit(main())
