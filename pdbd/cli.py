"""The `pdbd` command: serve, query, info, health.

Exit codes follow pdbtool (both go through pdbtool.console): 0 ok, 1 server unreachable or
failed (or an artifact refused at start-up), 2 bad input, 3 unsolvable, 4 deadline, node
budget, cancellation or a full queue, 130 interrupted. Errors are one clear line on
stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import threading
from types import SimpleNamespace

from pdbtool.console import emit, result_text, run, search_line
from pdbtool.errors import BadInput

from .client import SolverClient
from .defaults import DEFAULT_LISTEN, DEFAULT_MAX_QUEUE, DEFAULT_SERVER

PROG = "pdbd"


def main(argv=None) -> int:
    return run(PROG, parser().parse_args(argv))


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="pdbd", description="gRPC daemon for optimal sliding-tile solving")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("serve", help="load verified artifacts and answer solve queries")
    s.add_argument("--artifacts", required=True, metavar="DIR", help="directory of *.h5 artifacts")
    s.add_argument("--listen", default=DEFAULT_LISTEN, metavar="HOST:PORT",
                   help=f"address to bind (default {DEFAULT_LISTEN}; port 0 picks a free one)")
    s.add_argument("--threads", type=positive, default=None, metavar="N",
                   help="search threads (default: one per core)")
    s.add_argument("--max-queue", type=non_negative, default=DEFAULT_MAX_QUEUE, metavar="Q",
                   help=f"searches allowed to wait for a thread; beyond, RESOURCE_EXHAUSTED "
                        f"(default {DEFAULT_MAX_QUEUE})")
    s.add_argument("--grace", type=float, default=5.0, metavar="S",
                   help="seconds to let RPCs finish on shutdown (default 5)")
    s.add_argument("--verbose", "-v", action="store_true", help="debug logging")
    s.set_defaults(func=serve)

    q = sub.add_parser("query", help="solve a board on a running server")
    add_server(q)
    q.add_argument("board", nargs="*", metavar="BOARD",
                   help="tiles row by row, 0 for the blank (spaces or commas); stdin if none")
    q.add_argument("--goal", default="blank-last",
                   help="blank-last (default), blank-first, or the goal board's tiles")
    q.add_argument("--algorithm", default="ida",
                   help="ida (default), ida-tt, astar, rbfs, bfs, wida, greedy (see pdbtool solve --help)")
    q.add_argument("--weight", type=float, default=None, help="wida: f = g + W*h (default 1.5)")
    q.add_argument("--deadline", "--timeout", type=float, default=None, metavar="S", help="give up after S seconds")
    q.add_argument("--budget", type=positive, default=None, metavar="N", help="node budget")
    q.add_argument("--stream", action="store_true", help="show progress on stderr while it searches")
    q.add_argument("--json", action="store_true", help="print the result as JSON")
    q.set_defaults(func=query)

    i = sub.add_parser("info", help="what a server has loaded and done")
    add_server(i)
    i.add_argument("--json", action="store_true")
    i.set_defaults(func=info)

    h = sub.add_parser("health", help="print the server's health; exit 0 if SERVING")
    add_server(h)
    h.add_argument("--wait", type=float, default=0.0, metavar="S",
                   help="wait up to S seconds for SERVING")
    h.set_defaults(func=health)
    return p


def add_server(p):
    p.add_argument("--server", default=DEFAULT_SERVER, metavar="ADDR",
                   help=f"host:port of pdbd (default {DEFAULT_SERVER})")


def positive(text):
    v = int(text)
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {v}")
    return v


def non_negative(text):
    v = int(text)
    if v < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, got {v}")
    return v


# -- serve ---------------------------------------------------------------------------------

def serve(args) -> int:
    from pdbtool.selection import load_directory

    from .server import Daemon

    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO, stream=sys.stderr,
                        format="%(asctime)s pdbd %(message)s")
    log = logging.getLogger("pdbd")
    # Handle the signals before the slow steps, so an early SIGTERM still exits cleanly.
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    loaded = load_directory(args.artifacts, require=True)
    for m in loaded.artifacts:
        log.info("verified %s: %s %dx%d version %s", m.path, m.partition, m.size, m.size, m.version)
    daemon = Daemon(loaded, args.listen, args.threads, args.max_queue)
    if stop.is_set():
        return 0
    daemon.start()
    sizes = ", ".join(f"{s}x{s} ({h.name}, artifact {h.artifact})"
                      for s, h in sorted(loaded.heuristics.items()))
    log.info("serving on %s with %d threads, queue %d: %s", daemon.address,
             daemon.pool.threads, daemon.pool.max_queue, sizes)
    while not stop.wait(0.5):
        pass
    log.info("shutting down")
    daemon.stop(args.grace)
    log.info("stopped")
    return 0


# -- clients -------------------------------------------------------------------------------

def read_board(args) -> str:
    text = " ".join(args.board) if args.board else sys.stdin.read()
    if not text.strip():
        raise BadInput("empty board: give the tiles row by row, 0 for the blank")
    return text


def query(args) -> int:
    board = read_board(args)
    algorithm = SimpleNamespace(name=args.algorithm, weight=args.weight, tt_size=None, max_memory=None)
    with SolverClient(args.server) as client:
        if args.stream:
            result = None
            for event in client.solve_stream(board, args.goal, args.deadline, args.budget,
                                             algorithm=algorithm):
                if isinstance(event, dict):
                    print_progress(event, args.json)
                else:
                    result = event
        else:
            result = client.solve(board, args.goal, args.deadline, args.budget, algorithm)
    d = result.to_dict()
    emit(args, d, result_text(d))
    return 0


def print_progress(p: dict, as_json: bool) -> None:
    if as_json:
        print(json.dumps(p), file=sys.stderr)
    elif p["queued"]:
        print("waiting for a search thread...", file=sys.stderr)
    else:
        print(search_line(p["bound"], p["nodes_generated"], p["elapsed_seconds"]), file=sys.stderr)


def info(args) -> int:
    with SolverClient(args.server) as client:
        d = client.info()
    if args.json:
        print(json.dumps(d, indent=2))
        return 0
    print(f"pdbd {d['version']} at {args.server}: up {d['uptime_seconds']:.1f} s, "
          f"{d['threads']} threads, queue {d['max_queue']}")
    for s in d["sizes"]:
        print(f"serves {s['size']}x{s['size']}: {s['heuristic']} (artifact {s['artifact'] or 'none'})")
    for a in d["artifacts"]:
        print(f"artifact {a['path']}: {a['partition']} version {a['version']}")
        for t in a["tables"]:
            print(f"  table {t['name']}: {t['entries']:,} entries, sha256 {t['sha256']}")
    print("counters: " + ", ".join(f"{k} {v}" for k, v in d["counters"].items()))
    return 0


def health(args) -> int:
    with SolverClient(args.server) as client:
        if args.wait > 0:
            client.wait_serving(args.wait)
            status = "SERVING"
        else:
            status = client.health()
    print(status)
    return 0 if status == "SERVING" else 1


if __name__ == "__main__":
    sys.exit(main())
