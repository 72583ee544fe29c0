"""The `pdbd` command: serve, query, info, health, web.

Exit codes follow pdbtool (both go through pdbtool.cli.console): 0 ok, 1 server unreachable or
failed (or an artifact refused at start-up), 2 bad input, 3 unsolvable, 4 deadline, node
budget, cancellation or a full queue, 130 interrupted. Errors are one clear line on
stderr, never a traceback. Parsing and printing only: the decisions are in server.py,
servicer.py, client.py and pdbtool.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import signal
import sys
from types import SimpleNamespace
from typing import TYPE_CHECKING

from pdbtool.cli.cluster import add_cluster_option, add_shipping_options
from pdbtool.cli.console import (Parser, UsageError, arg_budget, arg_non_negative, arg_path,
                                 arg_positive, arg_seconds, arg_shape, arg_size, arg_threads,
                                 batch_exit_code, board_lines, emit, no_boards, plural,
                                 read_stdin, report_error, result_text, run, search_line,
                                 stop_on_signals, version_text)
from pdbtool.errors import BadInput, PdbError
from pdbtool.progress import fmt_bytes

from . import handshakes, logs
from .logs import FORMATS, LEVELS
from .serve_signals import ServeSignals, StoppedStarting
from .defaults import (DEFAULT_CONNECTION_AGE, DEFAULT_IDLE_SECONDS, DEFAULT_LISTEN,
                       DEFAULT_MAX_NODES, DEFAULT_MAX_QUEUE, DEFAULT_MAX_SEARCH_MEMORY,
                       DEFAULT_MAX_SEARCH_SECONDS, DEFAULT_REQUEST_TIMEOUT, DEFAULT_SERVER,
                       DEFAULT_WEB_LISTEN, DEFAULT_CLUSTER_ABOVE)

if TYPE_CHECKING:  # the client loads gRPC, the server numba: imported where a command needs it
    from .client import ClientTls, SolverClient
    from .server import ServeConfig

PROG = "pdbd"


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    core_logging(args)
    # pdbd serve and pdbd web with JSON logs: their error line is JSON too
    json_log = getattr(args, "log_format", None) == "json"
    return run(PROG, args, report=logs.report_error if json_log else None)


def core_logging(args) -> None:
    """What gRPC's C core may write to stderr, decided before gRPC loads (this module loads
    it only in the commands). It writes its own lines straight to file descriptor 2, one a
    failed TLS handshake among them (a client speaking plaintext to a TLS port made 250
    KB/s): a TLS server reads them back and logs each peer's failures at most once a minute
    (pdbd/handshakes.py); every other command keeps only the core's errors, unless
    GRPC_VERBOSITY says otherwise."""
    if getattr(args, "tls_cert", None) and args.command == "serve":
        level = "debug" if args.verbose else args.log_level
        if handshakes.capture(args.log_format, level, args.tls_log_every):
            return
    if "grpc" not in sys.modules:
        os.environ.setdefault("GRPC_VERBOSITY", "ERROR")


class DaemonParser(Parser):
    """pdbtool's Parser, but a command line that asks for JSON logs (`--log-format json`)
    has its usage error as a JSON log record too, as every other line of its stderr."""

    def report_usage_error(self, args: list[str], e: UsageError) -> None:
        if not json_logs_asked(args):
            super().report_usage_error(args, e)
            return
        logs.report_error(PROG, None, e.message, BadInput.exit_code)


def json_logs_asked(args: list[str]) -> bool:
    """Whether the command line ``args`` gives ``--log-format json`` (in either spelling)."""
    return ("--log-format=json" in args
            or any(a == "--log-format" and b == "json" for a, b in zip(args, args[1:])))


def parser() -> Parser:
    p = DaemonParser(prog="pdbd", description="gRPC daemon for optimal sliding-tile solving")
    p.add_argument("--version", action="version",
                   version=version_text("pdbd", "grpcio", "protobuf", "numba"))
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("serve", help="load verified artifacts and answer solve queries",
                       description="load verified artifacts and answer solve queries")
    s.add_argument("--artifacts", required=True, metavar="DIR", type=arg_path, help="directory of *.h5 artifacts")
    s.add_argument("--listen", default=DEFAULT_LISTEN, metavar="ADDR",
                   help=f"HOST:PORT, [IPv6]:PORT or unix:PATH (a socket only its owner may use) "
                        f"to bind (default {DEFAULT_LISTEN}; port 0 picks a free one)")
    s.add_argument("--metrics", metavar="HOST:PORT",
                   help="serve Prometheus metrics at http://HOST:PORT/metrics (loopback unless "
                        "--insecure; port 0 picks a free one)")
    s.add_argument("--pid-file", metavar="PATH", type=arg_path, help="write the process id to PATH once "
                   "serving (for kill -HUP), remove it at exit; refuses a running pdbd's file")
    s.add_argument("--threads", type=arg_threads, default=None, metavar="N",
                   help="search threads (default: one per core)")
    s.add_argument("--max-queue", type=arg_non_negative, default=DEFAULT_MAX_QUEUE, metavar="Q",
                   help=f"searches allowed to wait for a thread; beyond, RESOURCE_EXHAUSTED "
                        f"(default {DEFAULT_MAX_QUEUE})")
    s.add_argument("--max-search-seconds", type=limit_seconds, default=DEFAULT_MAX_SEARCH_SECONDS,
                   metavar="S", help="stop any search after S seconds, whatever the client asked "
                   f"(RESOURCE_EXHAUSTED; default {DEFAULT_MAX_SEARCH_SECONDS:g}; 0: no limit)")
    s.add_argument("--max-nodes", type=limit_nodes, default=DEFAULT_MAX_NODES, metavar="N",
                   help="node budget of a search whose client gives none, and the most a client "
                        f"may ask for (default {DEFAULT_MAX_NODES:,}; 0: no limit)")
    s.add_argument("--max-search-memory", type=limit_memory, default=DEFAULT_MAX_SEARCH_MEMORY,
                   metavar="SIZE", help="memory one search may hold: the states of astar, sma, frontier "
                   "and bidir (a client's max_memory above it is lowered to it), the ida-tt "
                   f"table (likewise its entries) (default {DEFAULT_MAX_SEARCH_MEMORY >> 30}G; "
                   "0: no limit)")
    s.add_argument("--max-per-client", type=arg_non_negative, default=None, metavar="N",
                   help="searches one client address may have in flight (default: an eighth "
                        "of threads + queue, at least 2; 0: no limit); every client on a unix "
                        "socket is one address, 'unix:'")
    s.add_argument("--trusted-proxy", action="append", metavar="ADDR",
                   help="a proxy (IP address, network such as 10.0.0.0/8, or 'unix' for the "
                        "unix socket's peers) whose pdbd-client metadata names the client "
                        "--max-per-client counts (pdbd web sends it); repeatable; none by default")
    s.add_argument("--request-timeout", type=arg_seconds, default=DEFAULT_REQUEST_TIMEOUT,
                   metavar="S", help="drop a call whose request has not arrived after S seconds "
                   f"(default {DEFAULT_REQUEST_TIMEOUT:g})")
    s.add_argument("--idle-timeout", type=arg_seconds, default=DEFAULT_IDLE_SECONDS, metavar="S",
                   help=f"close connections idle for S seconds (default {DEFAULT_IDLE_SECONDS:g})")
    s.add_argument("--max-connection-age", type=arg_seconds, default=DEFAULT_CONNECTION_AGE,
                   metavar="S", help="close every connection after S seconds, letting its "
                   f"searches finish (default {DEFAULT_CONNECTION_AGE:g})")
    s.add_argument("--no-reflection", action="store_true", help="do not serve server reflection")
    s.add_argument("--tls-cert", metavar="PEM", type=arg_path, help="serve TLS with this certificate chain")
    s.add_argument("--tls-key", metavar="PEM", type=arg_path, help="... and this private key")
    s.add_argument("--tls-log-every", type=arg_seconds, default=handshakes.INTERVAL,
                   metavar="S", help="log a peer's failed TLS handshakes at most once in S "
                   f"seconds, with their count (default {handshakes.INTERVAL:g})")
    s.add_argument("--client-ca", metavar="PEM", type=arg_path,
                   help="require client certificates signed by this CA (mutual TLS)")
    s.add_argument("--insecure", action="store_true",
                   help="allow a non-loopback --listen without TLS (and --metrics beyond "
                        "loopback)")
    s.add_argument("--mlock", action="store_true",
                   help="lock the tables in memory (fails if the memlock limit is too low)")
    s.add_argument("--no-prefault", action="store_true",
                   help="do not read the tables into memory in the background after start")
    s.add_argument("--grace", type=grace_seconds, default=5.0, metavar="S",
                   help="seconds to let RPCs finish on shutdown (default 5; 0: none)")
    s.add_argument("--drain", type=grace_seconds, default=0.0, metavar="S",
                   help="on SIGTERM or SIGINT, start no new search (Info and health still "
                        "answer: NOT_SERVING) but let the searches in flight finish for up to "
                        "S seconds before stopping them (default 0; a second signal stops "
                        "them at once)")
    add_cluster_option(s, "send big IDA* searches to this Ray cluster")
    s.add_argument("--cluster-above", type=arg_positive, default=None, metavar="N",
                   help="with --cluster: a search that generates more than N nodes here goes to "
                        f"the cluster (default {DEFAULT_CLUSTER_ABOVE:,})")
    add_shipping_options(s)
    add_logging(s)
    s.add_argument("--verbose", "-v", action="store_true", help="debug logging (--log-level debug)")
    s.set_defaults(func=serve)

    q = sub.add_parser("query", help="solve a board on a running server",
                       description="solve a board on a running server")
    add_server(q)
    q.add_argument("board", nargs="*", metavar="BOARD",
                   help="tiles row by row, 0 for the blank (spaces or commas); stdin if none")
    q.add_argument("--goal", default="blank-last",
                   help="blank-last (default), blank-first, or the goal board's tiles")
    q.add_argument("--shape", type=arg_shape, default=None, metavar="ROWSxCOLS",
                   help="the board's shape, e.g. 3x4 (default: the square of the tile count)")
    q.add_argument("--algorithm", default="ida",
                   help="ida (default), ida-tt, astar, rbfs, sma, frontier, bidir, bfs, wida, greedy "
                        "(see pdbtool solve --help)")
    q.add_argument("--weight", type=float, default=None, help="wida: f = g + W*h (default 1.5)")
    q.add_argument("--tt-size", type=arg_positive, default=None, metavar="N",
                   help="ida-tt: transposition table entries (default 1,048,576: 32 MiB)")
    q.add_argument("--max-memory", type=arg_size, default=None, metavar="SIZE",
                   help="astar, sma, frontier, bidir: memory for the states they hold, e.g. "
                        "512M (default 1G; the server's --max-search-memory caps it)")
    q.add_argument("--deadline", "--timeout", type=arg_seconds, default=None, metavar="S",
                   help="give up after S seconds (with --file: for the whole batch; the "
                        "answers received are printed, the lines left unanswered named)")
    q.add_argument("--budget", type=arg_budget, default=None, metavar="N", help="node budget")
    q.add_argument("--file", metavar="FILE", type=arg_path, help=(
        "solve one board per line of FILE ('-' = stdin) on one call (SolveBatch), printed in "
        "the file's order; a bad line is reported and the rest go on; exit code as "
        "pdbtool solve --file"))
    q.add_argument("--stream", action="store_true", help="show progress on stderr while it searches")
    q.add_argument("--json", action="store_true", help="print the result as JSON")
    q.set_defaults(func=query)

    i = sub.add_parser("info", help="what a server has loaded and done",
                       description="what a server has loaded and done")
    add_server(i)
    i.add_argument("--json", action="store_true", help="print JSON on stdout instead of text")
    i.set_defaults(func=info)

    h = sub.add_parser("health", help="print the server's health; exit 0 if SERVING",
                       description="print the server's health; exit 0 if SERVING")
    add_server(h)
    h.add_argument("--wait", type=arg_seconds, default=0.0, metavar="S",
                   help="wait up to S seconds for SERVING")
    h.add_argument("--service", default="", metavar="NAME",
                   help="'' (default): the server is alive; pdbd.v1.Solver: it has room for "
                        "another search (NOT_SERVING while overloaded)")
    h.set_defaults(func=health)

    w = sub.add_parser("web", help="serve the animation page, solving through pdbd", description=(
        "A web page on a running pdbd: paste or shuffle a board, solve it with progress "
        "(server-sent events), watch the solution animated. Also POST /api/solve (JSON)."))
    add_server(w)
    w.add_argument("--listen", default=DEFAULT_WEB_LISTEN, metavar="HOST:PORT",
                   help=f"address of the page (default {DEFAULT_WEB_LISTEN}; port 0 picks a free one)")
    w.add_argument("--https-cert", metavar="PEM", type=arg_path, help="serve the page over HTTPS with this "
                   "certificate chain (--tls-* are for the connection to pdbd)")
    w.add_argument("--https-key", metavar="PEM", type=arg_path, help="... and this private key")
    w.add_argument("--insecure", action="store_true",
                   help="allow a non-loopback --listen without HTTPS")
    w.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                   help="a name the page is reached by (the Host header), beyond its IP "
                        "addresses, localhost and this machine's name: a DNS name, a proxy "
                        "in front; repeatable (any other name is refused: DNS rebinding)")
    w.add_argument("--max-per-client", type=arg_non_negative, default=None, metavar="N",
                   help="searches one browser (client address) may have in flight; beyond, "
                        "HTTP 429 (default 4; 0: no limit)")
    add_logging(w, solves=False)
    w.set_defaults(func=web)
    return p


def add_logging(p, solves: bool = True):
    """--log-format and --log-level; ``solves``: the command logs a line per solve."""
    fields = "; per solve method, peer, code, seconds, nodes" if solves else ""
    p.add_argument("--log-format", choices=FORMATS, default="text",
                   help="text (default): TIME LEVEL LOGGER MESSAGE; json: one object a line "
                        f"(time, level, logger, message{fields})")
    p.add_argument("--log-level", choices=LEVELS, default="info",
                   help="the least severe level logged (default info)")


def add_server(p):
    p.add_argument("--server", default=DEFAULT_SERVER, metavar="ADDR",
                   help=f"pdbd's HOST:PORT, [IPv6]:PORT, unix:PATH or dns:///HOST:PORT "
                        f"(default {DEFAULT_SERVER})")
    p.add_argument("--tls-ca", metavar="PEM", type=arg_path,
                   help="connect with TLS, trusting server certificates signed by this CA")
    p.add_argument("--tls-cert", metavar="PEM", type=arg_path, help="client certificate for mutual TLS")
    p.add_argument("--tls-key", metavar="PEM", type=arg_path, help="client private key for mutual TLS")
    p.add_argument("--tls-server-name", metavar="NAME",
                   help="the name the server's certificate must carry (default: the host)")


def client_tls(args) -> ClientTls | None:
    from .client import ClientTls

    if args.tls_ca or args.tls_cert or args.tls_key:
        return ClientTls(args.tls_ca, args.tls_cert, args.tls_key, args.tls_server_name)
    return None


def client(args) -> SolverClient:
    from .client import SolverClient

    return SolverClient(args.server, tls=client_tls(args))


def or_zero(parse, text, zero, meaning: str):
    """``parse(text)``, or ``zero`` for 0; the error of a value neither says that 0 is
    taken too (``meaning``), which ``parse``'s own range leaves out."""
    if text.strip() in ("0", "0.0"):
        return zero
    try:
        return parse(text)
    except argparse.ArgumentTypeError as e:
        raise argparse.ArgumentTypeError(f"{e} (or 0: {meaning})") from None


def limit_seconds(text):
    """--max-search-seconds: seconds, or 0 for no limit."""
    return or_zero(arg_seconds, text, None, "no limit")


def grace_seconds(text):
    """--grace, --drain: seconds, or 0 for none."""
    return or_zero(arg_seconds, text, 0.0, "none")


def limit_nodes(text):
    """--max-nodes: a node budget, or 0 for no limit."""
    return or_zero(arg_budget, text, None, "no limit")


def limit_memory(text):
    """--max-search-memory: a size in bytes ('1G'), or 0 for no limit."""
    size = arg_size(text)
    return size or None


# -- serve ---------------------------------------------------------------------------------

def serve(args) -> int:
    signals = ServeSignals()  # before the imports: a SIGHUP killed a daemon this young
    try:
        from .server import serve as run_server  # loads numba and the tables: not for clients

        return run_server(serve_config(args), signals)
    except StoppedStarting:  # (once logs are set up, the server said so)
        return 0


def serve_config(args) -> ServeConfig:
    """The daemon's configuration from the options of `pdbd serve`."""
    from .server import ServeConfig

    if args.cluster_above is not None and not args.cluster:  # (as --cluster-shared is)
        raise BadInput("--cluster-above needs --cluster")
    return ServeConfig(
        artifacts=args.artifacts, listen=args.listen, metrics=args.metrics,
        pid_file=args.pid_file, threads=args.threads, max_queue=args.max_queue,
        max_search_seconds=args.max_search_seconds, max_nodes=args.max_nodes,
        max_search_memory=args.max_search_memory, max_per_client=args.max_per_client,
        trusted_proxies=tuple(args.trusted_proxy or ()), request_timeout=args.request_timeout,
        idle_timeout=args.idle_timeout, max_connection_age=args.max_connection_age,
        reflection=not args.no_reflection, tls_cert=args.tls_cert, tls_key=args.tls_key,
        client_ca=args.client_ca, insecure=args.insecure, mlock=args.mlock,
        prefault=not args.no_prefault, grace=args.grace, drain=args.drain,
        cluster=args.cluster,
        cluster_above=DEFAULT_CLUSTER_ABOVE if args.cluster_above is None else args.cluster_above,
        cluster_shared=args.cluster_shared, cluster_cache=args.cluster_cache,
        log_format=args.log_format, log_level="debug" if args.verbose else args.log_level)


# -- clients -------------------------------------------------------------------------------

def read_board(args) -> str:
    from .wire import EMPTY_BOARD

    if not args.board and stdin_is_terminal():  # nothing piped in: it waited, unexplained
        raise BadInput("no board: give the tiles (e.g. pdbd query 1 2 3 4 5 6 7 0 8), pipe "
                       "them in, or give --file FILE")
    text = " ".join(args.board) if args.board else read_stdin()
    if not text.strip():
        raise BadInput(EMPTY_BOARD)
    return text


def stdin_is_terminal() -> bool:
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except ValueError:  # closed: said when it is read
        return False


def asked(args) -> dict:
    """What `pdbd query` asks of each search besides its board and goal, as the client's
    solve methods take it. The server checks the algorithm and its options (this command
    loads no numba)."""
    return dict(deadline=args.deadline, budget=args.budget, shape=args.shape,
                algorithm=SimpleNamespace(name=args.algorithm, weight=args.weight,
                                          tt_size=args.tt_size, max_memory=args.max_memory))


def query(args) -> int:
    if args.file is not None:
        return query_file(args)
    board = read_board(args)
    try:
        with client(args) as c:
            if args.stream:
                result = None
                try:
                    for event in c.solve_stream(board, args.goal, **asked(args)):
                        if isinstance(event, dict):
                            print_progress(event, args.json)
                        else:
                            result = event
                finally:
                    end_progress(args.json)
            else:
                result = c.solve(board, args.goal, **asked(args))
    except BadInput as e:  # several boards piped in, read as one: say how to send them
        lines = sum(1 for line in board.splitlines() if line.strip())
        if args.board or lines < 2 or not re.match(r"\d+ tiles is not a ", str(e)):
            raise
        raise BadInput(f"{e} (stdin's {lines} lines were read as one board; `pdbd query "
                       "--file -` solves one board a line)") from None
    d = result.to_dict()
    emit(args, d, result_text(d))
    return 0


def query_file(args) -> int:
    """`pdbd query --file`: every board on one SolveBatch call, printed in the file's order."""
    if args.board or args.stream:
        raise BadInput("--file takes the boards from the file: give no BOARD and no --stream")
    lines: list[int] = []  # the line number of each board sent, by its index
    if args.file != "-":
        # Opened once here: a file that cannot be read is refused before a call is made.
        try:
            open(args.file, "rb").close()
        except OSError as e:
            raise BadInput(f"cannot read {args.file}: {e.strerror}") from None

    def boards():
        for lineno, line in board_lines(args.file):
            lines.append(lineno)
            yield line

    codes, waiting, printed = [], {}, 0
    try:
        with client(args) as c:
            for index, outcome in c.solve_batch(boards(), args.goal, **asked(args)):
                waiting[index] = outcome
                while printed in waiting:
                    codes.append(print_outcome(args, waiting.pop(printed), lines[printed]))
                    printed += 1
    except PdbError as e:  # the call itself failed (its deadline, the server gone): every
        if not lines:  # answer received is printed, in the file's order, and the lines
            raise  # left unanswered are named (all of them if none was answered)
        unanswered = []
        for index in range(printed, len(lines)):
            if index in waiting:
                codes.append(print_outcome(args, waiting.pop(index), lines[index]))
            else:
                unanswered.append(lines[index])
        report_error(PROG, args, f"not answered: {e}", e.exit_code, line_ranges(unanswered))
        codes.append(e.exit_code)
    if not lines:
        raise BadInput(no_boards(args.file))
    return batch_exit_code(codes)


def line_ranges(numbers: list[int]) -> str:
    """'line 4', 'lines 4-7, 9': the numbers given (ascending) as ranges."""
    runs: list[list[int]] = []
    for n in numbers:
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    text = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in runs)
    return f"line{'s' * (len(numbers) > 1)} {text}" if numbers else ""


def print_outcome(args, outcome, lineno: int) -> int:
    if isinstance(outcome, PdbError):
        report_error(PROG, args, str(outcome), outcome.exit_code, f"line {lineno}")
        return outcome.exit_code
    d = outcome.to_dict()
    emit(args, d, result_text(d, lineno))
    return 0


def print_progress(p: dict, as_json: bool) -> None:
    """One progress event on stderr: a line each, or on a terminal one line rewritten in
    place (as pdbtool solve's), not a screenful a minute."""
    if as_json:
        print(json.dumps(p), file=sys.stderr)
        return
    line = ("waiting for a search thread..." if p["queued"]
            else search_line(p["bound"], p["nodes_generated"], p["elapsed_seconds"]))
    sys.stderr.write(("\r\x1b[K" + line) if sys.stderr.isatty() else line + "\n")
    sys.stderr.flush()


def end_progress(as_json: bool) -> None:
    """Clear the progress line rewritten on a terminal, before the answer or error."""
    if not as_json and sys.stderr.isatty():
        sys.stderr.write("\r\x1b[K")
        sys.stderr.flush()


def info(args) -> int:
    with client(args) as c:
        d = c.info()
    if args.json:
        print(json.dumps(d, indent=2))
        return 0
    print(f"pdbd {d['version']} at {args.server}: up {d['uptime_seconds']:.1f} s, "
          f"{plural(d['threads'], 'thread')}, queue {d['max_queue']}")
    for s in d["sizes"]:
        print(f"serves {s['rows']}x{s['cols']}: {s['heuristic']} "
              f"(artifact {s['artifact'] or 'none'})")
    limits = d["limits"]
    memory = limits.get("max_search_memory")
    nodes, per_client = limits["max_nodes"], limits["per_client"]
    print(f"limits: {limits['max_search_seconds'] or 'no'} s, {f'{nodes:,}' if nodes else 'no'} nodes "
          f"and {f'{fmt_bytes(memory)} of memory' if memory else 'no memory limit'} per search, "
          f"{plural(per_client, 'search', 'searches') if per_client else 'any searches'} per client"
          + ("; OVERLOADED" if d["overloaded"] else ""))
    cl = d.get("cluster")
    if cl:
        print(f"cluster {cl['address']}: " + (f"no answer: {cl['error']}" if cl["error"] else
              f"{plural(cl['nodes'], 'node')}, {plural(cl['cpus'], 'CPU')}, {cl['busy']} busy")
              + f"; searches above {cl['above']:,} nodes "
              + ("are refused" if cl["error"] else "go there") + f" ({cl['delegated']} went there)")
    for a in d["artifacts"]:
        print(f"artifact {a['path']}: {a['partition']} version {a['version']}, "
              f"{a['resident_bytes'] / 2**20:.1f} of {a['bytes'] / 2**20:.1f} MiB in memory"
              + (" (locked)" if a["locked"] else "")
              + (f"; REFUSED: {a['refused']} (reload to serve it again)" if a["refused"] else ""))
        for t in a["tables"]:
            print(f"  table {t['name']}: {t['entries']:,} entries, sha256 {t['sha256']}")
    print("counters: " + ", ".join(f"{k} {v}" for k, v in d["counters"].items()))
    return 0


def health(args) -> int:
    with client(args) as c:
        if args.wait > 0:
            c.wait_serving(args.wait, args.service)
            status = "SERVING"
        else:
            status = c.health(args.service)
    print(status)
    return 0 if status == "SERVING" else 1


def web(args) -> int:
    try:
        from .web import PER_CLIENT, WebServer, throttle_logs
    except ImportError as e:
        raise PdbError(f"pdbd web needs the web extra ({e.name} is missing): "  # exit 1,
                       "pip install 'pdbtool[web]' (or, in a checkout, pip install -e '.[web]')"
                       ) from None  # as --cluster without Ray

    logs.setup(args.log_format, args.log_level)
    log = logging.getLogger("pdbd")
    stop = stop_on_signals()
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # `kill -HUP` meant for pdbd serve
    if bool(args.https_cert) != bool(args.https_key):
        raise BadInput("give --https-cert and --https-key together")
    https = (args.https_cert, args.https_key) if args.https_cert else None
    throttle_logs()  # the same line at most once per few seconds: a flood writes little
    per_client = PER_CLIENT if args.max_per_client is None else args.max_per_client
    server = WebServer(args.listen, args.server, tls=client_tls(args), https=https,
                       insecure=args.insecure, allow_hosts=args.allow_host,
                       per_client=per_client).start()
    log.info("pdbd web on %s, solving through pdbd at %s", server.url, args.server)
    while not stop.wait(0.5) and server.alive:
        pass
    died = not stop.is_set()  # its server ended unasked: a failure, for a supervisor
    if died:
        log.error("pdbd web: its HTTP server stopped unasked; exiting")
    else:
        log.info("pdbd web shutting down")
    server.stop()
    return 1 if died else 0


if __name__ == "__main__":
    from pdbtool.cli import end_with

    end_with(PROG, main)
