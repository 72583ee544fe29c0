"""A small client for programs that embed pdbd, and the error mapping the CLI shares.

Failures raise pdbtool's own errors, so callers handle a remote solve like a local one:
BadInput (INVALID_ARGUMENT), Unsolvable (FAILED_PRECONDITION), LimitReached (deadline,
cancellation, and every RESOURCE_EXHAUSTED: the node budget, a memory limit, the server's
limits, a full queue, the per-client limit, busy; ``limit`` names which), and
ServerUnavailable (cannot reach the server, or it refused or failed).
"""

from __future__ import annotations

import contextlib
import itertools
import operator
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import grpc
import numpy as np
from grpc_health.v1 import health_pb2, health_pb2_grpc

from pdbtool import limits, puzzle
from pdbtool.errors import BadInput, LimitReached, PdbError, Unsolvable
from pdbtool.result import SolveResult

from . import convert
from .address import parse_target
from .defaults import DEFAULT_SERVER
from .pem import check_pem
from .runs import CallTurn, Chunks, Runs
from .v1 import solver_pb2 as pb, solver_pb2_grpc as pb_grpc
from .wire import CLIENT_KEY, EMPTY_BOARD, LIMIT_KEY, REFUSED_KEY, SERVICE_NAME

UINT32_MAX = (1 << 32) - 1
PER_MESSAGE = 64  # boards at most in one SolveBatch message, by default
MAX_PER_MESSAGE = 1024  # far within the server's 1 MiB a message (a 5x5 board: about 40 B)


class ServerUnavailable(PdbError):
    """The server cannot be reached, is shutting down, or failed internally."""

    exit_code = 1


ERRORS = {
    grpc.StatusCode.INVALID_ARGUMENT: BadInput,
    grpc.StatusCode.FAILED_PRECONDITION: Unsolvable,
    grpc.StatusCode.RESOURCE_EXHAUSTED: LimitReached,
    grpc.StatusCode.DEADLINE_EXCEEDED: LimitReached,
    grpc.StatusCode.CANCELLED: LimitReached,
}


def deadline_details(err: grpc.RpcError) -> str:
    """What the server said of a search it stopped at its deadline (the nodes), or '' if
    the channel's own deadline came first: "Deadline Exceeded" (a stream's: "Stream
    removed (Deadline Exceeded)")."""
    said = (err.details() or "").removeprefix("deadline exceeded: ")
    return "" if "deadline exceeded" in said.lower() else said


def translate(err: grpc.RpcError, address: str, tls: bool = False,
              streamed: bool = False) -> PdbError:
    """A gRPC failure as the pdbtool error with the same meaning (and exit code); ``tls``:
    the call was made over TLS (which says what a closed socket means); ``streamed``: it
    streamed its progress (a deadline's advice then does not suggest it)."""
    code, details = err.code(), err.details() or ""
    cls = ERRORS.get(code)
    if code == grpc.StatusCode.RESOURCE_EXHAUSTED and "larger than max" in details:
        cls = BadInput  # the request itself is too big: no board is that large
    if cls is None:
        if code == grpc.StatusCode.UNAVAILABLE and refused(err):
            message = f"pdbd at {address} refused: {details}"
        elif code == grpc.StatusCode.UNAVAILABLE and nobody_there(details):
            message = (f"cannot reach pdbd at {address}: nothing listens there "
                       f"({nobody_there(details)}); is pdbd running, and is that its --listen "
                       f"address? (gRPC: {details})")
        elif code == grpc.StatusCode.UNAVAILABLE:
            message = f"cannot reach pdbd at {address}: {details}"
            if "Socket closed" in details and tls:  # a TLS call without a certificate it takes
                message += (" (the connection was closed: the daemon stopped, or it requires "
                            "client certificates and closes connections without one it trusts: "
                            "give --tls-cert and --tls-key, signed by its --client-ca)")
            elif "Socket closed" in details:  # what a plaintext call to a TLS server gets
                message += (" (the connection was closed: the daemon stopped, or it serves TLS "
                            "and closes plaintext connections: give --tls-ca)")
            elif "Hostname Verification" in details:  # a name its certificate lacks
                message += (" (the server's certificate does not carry the name connected "
                            "to, or given by --tls-server-name: connect by a name it carries)")
            elif "CERTIFICATE_VERIFY_FAILED" in details and ("expired" in details
                                                             or "not yet valid" in details):
                message += (" (the server's certificate is out of its dates: renew it, or "
                            "check this machine's clock)")
            elif "CERTIFICATE_VERIFY_FAILED" in details:
                message += (" (the server's certificate is not signed by a CA of --tls-ca, "
                            "or by the system's CAs if it is not given)")
            elif "WRONG_VERSION_NUMBER" in details and tls:  # TLS to a plaintext server
                message += (" (the server did not answer TLS: it may serve plaintext; give no "
                            "--tls-ca, or check that its --listen is the port connected to)")
            elif "Failed parsing HTTP/2" in details:  # an HTTP/1 server (metrics, pdbd web)
                message += (" (what answers there does not speak gRPC: an HTTP server, "
                            "perhaps pdbd's --metrics or `pdbd web`; give pdbd's --listen "
                            "address)")
            elif "before receiving SETTINGS" in details:  # a bound port, no gRPC answer yet
                message += (" (something holds the port but has not answered yet: a pdbd "
                            "compiling its kernels on its first start on this machine "
                            "answers within a minute or two, `pdbd health` says when; "
                            "'pdbtool warm' compiles them ahead of time)")
        else:
            message = f"pdbd at {address} failed: {code.name}: {details}"
        cls = ServerUnavailable
    elif code == grpc.StatusCode.DEADLINE_EXCEEDED:
        said = deadline_details(err)
        said = f": {said}" if said else ""
        message = (f"deadline exceeded{said} (the search was stopped; give a longer deadline"
                   + (")" if streamed else ", or stream its progress to see how far it got)"))
    else:
        message = details
    error = cls(message)
    error.code = code
    error.refused = code == grpc.StatusCode.UNAVAILABLE and refused(err)  # pdbd's own, up
    # which limit refused or stopped it (pdbd-limit: per-client, queue-full, max-nodes, ...)
    error.limit = next((v for k, v in err.trailing_metadata() or () if k == LIMIT_KEY), None)
    return error


def nobody_there(details: str) -> str:
    """What a channel's failure to connect says of the address, in a few words: "" when
    it is not that (a connection made and then lost, TLS, ...)."""
    if "Connection refused" in details:
        return "connection refused"
    if "No such file or directory" in details:  # a unix socket's path
        return "no such socket"
    return ""


def refused(err: grpc.RpcError) -> bool:
    """The server itself answered UNAVAILABLE (shutting down, a table changed on disk, the
    cluster lost): it marks those, unlike the channel's own failures to connect."""
    return any(key == REFUSED_KEY for key, _ in err.trailing_metadata() or ())


MAX_TILES = puzzle.MAX_SIDE ** 2


def goal_text(goal) -> str:
    """A request's goal: blank-last (also None), blank-first, or a goal board's tiles (as
    text, or as a list, tuple or numpy array of whole numbers, sent as text); BadInput
    otherwise, an empty one too (which the server would take for blank-last)."""
    if goal is None:
        return "blank-last"
    if isinstance(goal, np.ndarray):
        goal = goal.tolist()
    if isinstance(goal, str) and goal.strip():
        return goal
    if isinstance(goal, (list, tuple)) and goal:
        return " ".join(map(str, board_tiles(goal)))
    raise BadInput("goal must be blank-last, blank-first or a goal board's tiles, "
                   f"not {goal!r:.60}")


def board_tiles(board) -> list[int]:
    """Tiles from text ("1 2 3, 4 ...") or a sequence of ints; the server validates the rest."""
    if isinstance(board, (list, tuple)) and board and len(board) <= MAX_TILES:
        tiles = list(board)  # the usual case, checked whole (type is int: never a bool)
        if all(type(t) is int for t in tiles) and 0 <= min(tiles) and max(tiles) <= UINT32_MAX:
            return tiles
    if isinstance(board, str):  # as pdbtool reads a board's text: never '1_5' or '１'
        board = puzzle.numbers(board)
    try:
        board = iter(board)
    except TypeError:
        raise BadInput(f"not a board: {board!r:.60} (a board is a text of tiles or a sequence "
                       "of whole numbers)") from None
    tiles = []
    for t in board:
        try:  # a text's digits or an integer; never a float or a bool, which int() would
            v = puzzle.number(t) if isinstance(t, str) else operator.index(t)  # round or
            if isinstance(t, bool):  # take as 0/1
                raise TypeError
        except (TypeError, ValueError):
            raise BadInput(f"not an integer: {t!r} (tiles are whole numbers, 0 is the blank)") from None
        if not 0 <= v <= UINT32_MAX:
            raise BadInput(f"tile {v} out of range: tiles are whole numbers from 0 (the blank) "
                           "to the number of cells less one")
        tiles.append(v)
    if not tiles:
        raise BadInput(EMPTY_BOARD)
    if len(tiles) > MAX_TILES:  # the server would refuse the whole call's message for it
        raise BadInput(f"{len(tiles):,} tiles: a board has at most {MAX_TILES} "
                       f"({puzzle.MAX_SIDE}x{puzzle.MAX_SIDE})")
    return tiles


@dataclass(frozen=True)
class ClientTls:
    """TLS for the client: the CA that signed the server's certificate (None: the
    system's roots), and for mutual TLS the client's certificate chain and key (PEM
    files); ``server_name`` overrides the name the server's certificate must carry."""

    ca: str | None = None
    cert: str | None = None
    key: str | None = None
    server_name: str | None = None

    def credentials(self) -> grpc.ChannelCredentials:
        if bool(self.cert) != bool(self.key):
            raise BadInput("give the client certificate and its key together")
        try:
            read = {k: Path(v).read_bytes() if v else None
                    for k, v in (("ca", self.ca), ("cert", self.cert), ("key", self.key))}
        except OSError as e:
            raise BadInput(f"cannot read TLS file {e.filename}: {e.strerror}") from None
        check_pem(self.cert, self.key, self.ca)
        return grpc.ssl_channel_credentials(root_certificates=read["ca"],
                                            private_key=read["key"],
                                            certificate_chain=read["cert"])


def checked_limits(deadline, budget) -> tuple[float | None, int | None]:
    """Deadline and budget validated as pdbtool validates them (BadInput)."""
    return (None if deadline is None else limits.seconds(deadline, "deadline"),
            None if budget is None else limits.budget(budget))


def checked_algorithm(algorithm):
    """The algorithm's options checked to fit their wire fields (BadInput); the server
    checks the rest (names, ranges, which options go with which algorithm)."""
    if algorithm is None or isinstance(algorithm, str):
        return algorithm
    weight = getattr(algorithm, "weight", None)
    if weight is not None:
        try:
            weight = float(weight)
        except (TypeError, ValueError):
            raise BadInput(f"weight must be a number, not {weight!r}") from None
    tt_size, max_memory = (getattr(algorithm, k, None) for k in ("tt_size", "max_memory"))
    return SimpleNamespace(
        name=getattr(algorithm, "name", None), weight=weight,
        tt_size=None if tt_size is None else limits.budget(tt_size, "tt_size"),
        max_memory=None if max_memory is None else limits.budget(max_memory, "max_memory"))


class _Failed:
    """A BatchError in the shape of a grpc.RpcError, so ``translate`` maps it as Solve's."""

    def __init__(self, error: pb.BatchError):
        self._error = error

    def code(self):
        return grpc.StatusCode[self._error.code]

    def details(self):
        return self._error.message

    def trailing_metadata(self):
        return ((REFUSED_KEY, "unavailable"),) if self._error.refused else ()


def batch_error(error: pb.BatchError, address: str) -> PdbError:
    """One board's failure in a batch, as the PdbError Solve would have raised."""
    e = translate(_Failed(error), address)
    e.limit = error.limit or None
    return e


def behalf(client: str | None):
    """The metadata naming the client a proxy calls for (pdbd.peers), if any."""
    return ((CLIENT_KEY, client),) if client else None


# A channel that found no server tries again after 0.1 s, then backs off to at most 2 s
# (gRPC's defaults: 1 s, up to 120 s). wait_serving polls a daemon that is starting: with 1 s
# then 1.6 s it saw a daemon SERVING after 1.7 s only at about 2.6 s.
RECONNECT = [("grpc.initial_reconnect_backoff_ms", 100), ("grpc.max_reconnect_backoff_ms", 2000)]
SILENCE_CHECK = 1.0  # seconds a health check has, after a search's deadline passed unanswered


class SolverClient:
    """Talks to one pdbd server. ``with SolverClient(addr) as c: c.solve(board)``.
    With ``tls`` (ClientTls) the channel is encrypted and the server authenticated."""

    def __init__(self, address: str = DEFAULT_SERVER, tls: ClientTls | None = None):
        parse_target(address, "server address", dial=True)
        self.address, self.tls = address, tls is not None
        if tls is None:
            self._channel = grpc.insecure_channel(address, RECONNECT)
        else:
            options = ([("grpc.ssl_target_name_override", tls.server_name)]
                       if tls.server_name else [])
            self._channel = grpc.secure_channel(address, tls.credentials(), RECONNECT + options)
        self._stub = pb_grpc.SolverStub(self._channel)
        self._health = health_pb2_grpc.HealthStub(self._channel)

    def solve(self, board, goal: str = "blank-last", *, deadline: float | None = None,
              budget: int | None = None, algorithm=None, on_behalf: str | None = None,
              shape=None) -> SolveResult:
        """Solve, as Solver.solve does locally. ``deadline`` is in seconds from now;
        ``budget`` caps the nodes generated; ``algorithm`` is a name or has the fields of
        pdbtool.search.algorithms.Algorithm (name, weight, tt_size, max_memory); None is IDA*.
        ``on_behalf``: a proxy's client (counted as that client by a daemon that trusts the
        proxy: --trusted-proxy). ``shape``: the board's, "3x4" or (3, 4); None: a square."""
        deadline, budget = checked_limits(deadline, budget)
        request = convert.solve_request(board_tiles(board), goal_text(goal), budget,
                                        algorithm=checked_algorithm(algorithm), shape=shape)
        try:
            reply = self._stub.Solve(request, timeout=deadline, metadata=behalf(on_behalf))
        except grpc.RpcError as e:
            raise self.failed(e) from None
        return convert.result_from_message(reply)

    def solve_stream(self, board, goal: str = "blank-last", *, deadline: float | None = None,
                     budget: int | None = None, progress_ms: int | None = None, algorithm=None,
                     on_behalf: str | None = None, shape=None):
        """Yield progress dicts ({"event": "progress", "bound", "nodes_generated", ...}) while
        the search runs, then the SolveResult. Stopping the iteration early cancels it."""
        deadline, budget = checked_limits(deadline, budget)
        request = convert.solve_request(board_tiles(board), goal_text(goal), budget, progress_ms,
                                        checked_algorithm(algorithm), shape)
        call = self._stub.SolveStream(request, timeout=deadline, metadata=behalf(on_behalf))
        heard = False  # anything from the server yet
        try:
            for event in call:
                heard = True
                if event.HasField("progress"):
                    yield convert.progress_dict(event.progress)
                else:
                    result = convert.result_from_message(event.result)
                    with contextlib.suppress(grpc.RpcError):  # the answer is in hand
                        for _ in call:  # the call's end, OK, before the result is handed
                            pass  # on: a caller that stops at it cancelled an answered call
                    yield result
        except grpc.RpcError as e:
            raise self.failed(e, streamed=True, heard=heard) from None
        finally:
            call.cancel()  # a no-op once finished; otherwise the server stops the search

    def solve_batch(self, boards, goal: str = "blank-last", *, deadline: float | None = None,
                    budget: int | None = None, algorithm=None, on_behalf: str | None = None,
                    shape=None, per_message: int = PER_MESSAGE):
        """Solve many boards on one call (SolveBatch): yield (index, SolveResult or the
        PdbError Solve would have raised) for each board of ``boards`` (any iterable, read
        on a thread of its own as the server takes them in, at most ``per_message`` ahead;
        a list or tuple is taken ``per_message`` at a time as the channel takes them),
        as the searches finish, in any order. The boards go up to ``per_message`` a message,
        as many as have been read when the channel can take the next (``Runs``); 1 sends
        one a message, as before several a message (and any pdbd with SolveBatch takes
        them). A board that does not parse here is yielded as its BadInput with the next
        answer (or as the call ends). ``deadline`` covers the whole batch, the waits for
        the next board too (LimitReached); a failure of the call itself (unreachable,
        deadline, shutdown) raises. A call pdbd ends for waiting on the next board past its
        request timeout is followed by another once a board comes (sending again what it
        left unanswered, which may then be searched twice)."""
        if not 1 <= per_message <= MAX_PER_MESSAGE:
            raise BadInput(f"per_message must be 1 to {MAX_PER_MESSAGE}, not {per_message}")
        deadline, budget = checked_limits(deadline, budget)
        algorithm = checked_algorithm(algorithm)
        local: list[tuple[int, PdbError]] = []
        lock = threading.Lock()
        # The request's fields but the tiles, the same for every board: each item is made
        # in its message from them (a SolveRequest made apart would be copied in, twice).
        common = {f.name: v for f, v in convert.solve_request(
            (), goal_text(goal), budget, algorithm=algorithm, shape=shape).ListFields()}

        def items():
            for i, board in enumerate(boards):
                try:
                    if isinstance(board, PdbError):  # the caller's own (a line not UTF-8)
                        raise board
                    tiles = board_tiles(board)
                except PdbError as e:
                    with lock:
                        local.append((i, e))
                    continue
                yield i, {"tiles": tiles, **common}

        def message(run) -> pb.BatchRequest:
            m = pb.BatchRequest()
            add = m.items.add
            for i, request in run:
                add(id=i, request=request)
            return m

        def drain_local():
            with lock:
                out, local[:] = list(local), []
            return out

        if isinstance(boards, (list, tuple)):  # every board read already: full messages,
            runs = Chunks(items(), per_message)  # without a thread to read them
        else:
            runs = Runs(items(), per_message)
        pending: dict[int, dict] = {}  # boards handed to a call and not yet answered

        def requests(call: CallTurn):
            """A call's messages: the boards an earlier call left unanswered, then new ones,
            while the call is live. Each run is taken and put in ``pending`` in one turn
            (``call.turn``), which the loop below takes before it decides what a new call
            sends: a call's generator never takes a board nor adds one once it is over."""
            with lock:
                again = list(pending.items())
            it = itertools.chain((again[k:k + per_message]
                                  for k in range(0, len(again), per_message)),
                                 runs.take(call.live))
            while True:
                with call.turn:
                    run = next(it, None) if call.live.is_set() else None
                    if run is None:
                        return
                    with lock:
                        pending.update(run)
                if per_message > 1:
                    yield message(run)
                else:  # as before items: understood by every pdbd with SolveBatch
                    yield from (pb.BatchRequest(id=i, request=r) for i, r in run)

        end = None if deadline is None else time.monotonic() + deadline
        fruitless = 0  # calls in a row that ended with boards sent and none answered
        first = True
        try:
            while True:
                if not first and not pending:  # after an idle call: a new one only once
                    # there is a board to send (or none will come), within the deadline
                    if not runs.wait_ready(None if end is None else end - time.monotonic()):
                        raise LimitReached(f"deadline exceeded: {deadline:g} s passed while "
                                           "waiting for the next board (no search was running)")
                first, call_turn, answered = False, CallTurn(), 0
                left = None if end is None else max(0.0, end - time.monotonic())
                try:
                    call = self._stub.SolveBatch(requests(call_turn), timeout=left,
                                                 metadata=behalf(on_behalf))
                except ValueError as e:  # the channel was closed (SolverClient.close)
                    raise ServerUnavailable(f"pdbd at {self.address}: {e}") from None
                try:
                    for reply in call:
                        yield from drain_local()
                        if not reply.results and per_message > 1:
                            raise ServerUnavailable(
                                f"pdbd at {self.address} answered SolveBatch one board a "
                                "message: it predates several boards a message (upgrade it, "
                                "or send per_message=1)")
                        for r in reply.results or (reply,):
                            with lock:
                                if pending.pop(r.id, None) is None:
                                    continue  # answered on a call before (sent again)
                            answered += 1
                            if r.HasField("result"):
                                yield r.id, convert.result_from_message(r.result)
                            else:
                                yield r.id, batch_error(r.error, self.address)
                except grpc.RpcError as e:
                    # pdbd ends a call whose next request does not come within its request
                    # timeout while none of its boards is in flight (a board typed at a
                    # terminal after a pause): a new call takes the rest. Not twice in a
                    # row for a call that left boards unanswered and answered none.
                    with lock:
                        fruitless = fruitless + 1 if pending and not answered else 0
                    if e.code() != grpc.StatusCode.CANCELLED or fruitless > 1 or left == 0.0:
                        raise translate(e, self.address, self.tls) from None
                finally:
                    call_turn.end(runs)
                    call.cancel()
                yield from drain_local()
                runs.raise_error()  # the source's own failure, taken by no call
                with lock:
                    if runs.finished and not pending:
                        return
                    if call.code() == grpc.StatusCode.OK and not answered:
                        raise ServerUnavailable(f"pdbd at {self.address} ended SolveBatch "
                                                f"without answering {len(pending)} boards")
        finally:
            runs.close()

    def failed(self, err: grpc.RpcError, streamed: bool = False,
               heard: bool = False) -> PdbError:
        """A search call's failure as translate() says it; a deadline that passed with no
        word from the server (``heard``: a stream's events) is checked with a health check
        (never refused while the process lives): if that goes unanswered too, the daemon
        never took the call (stopped, stuck, or still starting), and no search was stopped."""
        error = translate(err, self.address, self.tls, streamed=streamed)
        if err.code() != grpc.StatusCode.DEADLINE_EXCEEDED or heard or deadline_details(err):
            return error  # (the server's own words: it searched)
        try:
            self._health.Check(health_pb2.HealthCheckRequest(), timeout=SILENCE_CHECK)
        except grpc.RpcError as e:
            if e.code() == grpc.StatusCode.DEADLINE_EXCEEDED:  # (not one refused: it died)
                return ServerUnavailable(
                    f"pdbd at {self.address} did not answer within the deadline, nor a "
                    f"health check within {SILENCE_CHECK:g} s after it: no search was run "
                    "(is it stopped, stuck, or still starting: compiling its kernels? "
                    "`pdbd health --wait 120` waits until it serves)")
        return error

    def info(self, timeout: float | None = 10.0) -> dict:
        try:
            return convert.info_dict(self._stub.Info(pb.InfoRequest(), timeout=timeout))
        except grpc.RpcError as e:
            raise translate(e, self.address, self.tls) from None

    def health(self, service: str = "", timeout: float | None = 5.0) -> str:
        """The health status name: SERVING, NOT_SERVING, SERVICE_UNKNOWN; ServerUnavailable
        (not a search's deadline) if no answer comes within ``timeout``."""
        try:
            reply = self._health.Check(health_pb2.HealthCheckRequest(service=service),
                                       timeout=timeout)
        except grpc.RpcError as e:
            if e.code() == grpc.StatusCode.NOT_FOUND:
                raise BadInput(f"pdbd at {self.address} has no health service {service!r} "
                               f"(it has '' and '{SERVICE_NAME}')") from None
            if e.code() == grpc.StatusCode.DEADLINE_EXCEEDED:  # a port bound, nobody answering
                raise ServerUnavailable(f"pdbd at {self.address} did not answer within "
                                        f"{timeout:g} s (still starting: compiling its "
                                        "kernels? or stuck)") from None
            raise translate(e, self.address, self.tls) from None
        return health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)

    def wait_serving(self, timeout: float = 60.0, service: str = "") -> None:
        """Block until the server reports ``service`` SERVING; ServerUnavailable after
        ``timeout``, BadInput at once for a service the server does not have."""
        end = time.monotonic() + timeout
        last = "no answer"
        while True:
            try:
                last = self.health(service, timeout=max(0.1, min(1.0, end - time.monotonic())))
                if last == "SERVING":
                    return
            except BadInput:
                raise
            except PdbError as e:
                last = str(e)
            if time.monotonic() >= end:
                raise ServerUnavailable(f"pdbd at {self.address} not serving after "
                                        f"{timeout:g} s ({last})")
            time.sleep(0.1)

    def close(self) -> None:
        self._channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
