"""The pdbtool command line: solve, animate, solvable, predict, build, verify, info, list,
pack, unpack, warm, partitions.

Parsing and printing only: the decisions live in the library (selection, build, trust,
packing, verify). Exit codes: 0 ok; 2 bad input; 3 unsolvable; 4 budget, deadline or
cancellation; 1 anything else that failed (e.g. a damaged artifact); 130 interrupted.
Errors are one line on stderr (console.run).
"""

from __future__ import annotations

import os
import sys
from contextlib import closing, nullcontext
from pathlib import Path

from pdbtool import puzzle
from pdbtool.cli import PROG
from pdbtool.cli.cluster import add_cluster_option, add_shipping_options, open_cluster
from pdbtool.cli.console import (STDOUT_CLOSED, Parser, SearchReporter, arg_budget, arg_cores,
                                 arg_interval, arg_non_negative, arg_path, arg_positive, arg_processes,
                                 arg_seconds, arg_shape, arg_size, arg_threads, arg_zstd_level,
                                 batch_exit_code, board_lines, emit, library_warnings, no_boards,
                                 plural, report_error, result_text, run, version_text)
from pdbtool.cli.tables import (cmd_build, cmd_info, cmd_list, cmd_pack, cmd_partitions,
                                cmd_seal, cmd_unpack, cmd_verify, cmd_warm)
from pdbtool.errors import EXIT_UNSOLVABLE, BadInput, PdbError
from pdbtool.heuristics.table_free import TABLE_FREE
from pdbtool.search.algorithms import ALGORITHMS, Algorithm
from pdbtool.search.checkpoint import DEFAULT_EVERY, forget
from pdbtool.search.trace import DEFAULT_CAP
from pdbtool.selection import DEFAULT_ARTIFACTS
from pdbtool.signals import outcome_out
from pdbtool.tables import artifact
from pdbtool.tables.files import check_output


# --- solve --------------------------------------------------------------------------------

def solvers_from(args):
    """The Solvers the options choose, and the Algorithm (an ida-tt table or a memory limit
    beyond this machine's memory refused here, before any search); canonicalises
    ``args.goal``."""
    from pdbtool.selection import Solvers

    args.goal = puzzle.check_goal(args.goal, args.shape)
    if args.artifact and args.artifacts:
        raise BadInput("give either --artifact FILE or --artifacts DIR, not both")
    if args.heuristic and (args.artifact or args.artifacts):
        raise BadInput(f"--heuristic {args.heuristic} uses no table: leave out "
                       f"{'--artifact' if args.artifact else '--artifacts'}")
    algorithm = Algorithm(args.algorithm, weight=args.weight, tt_size=args.tt_size,
                          max_memory=args.max_memory)
    if not getattr(args, "cluster", None):  # (a cluster's nodes have memories of their own)
        try:
            algorithm.check_memory()
        except BadInput as e:
            flag = f"--tt-size {args.tt_size}" if algorithm.name == "ida-tt" else "--max-memory"
            raise BadInput(f"{flag}: {e}") from None
    return Solvers(heuristic=args.heuristic, artifact_path=args.artifact,
                   directory=args.artifacts, reflect=not args.no_reflect,
                   prune=not args.no_prune), algorithm


def solve_traced(args, text, solvers, algorithm, cap: int):
    """Solve one board as the options say; the nodes recorded up to ``cap`` (trace.record)."""
    from pdbtool.search.control import SearchControl
    from pdbtool.search.trace import record

    board = puzzle.parse_board(text, args.shape)
    solver = solvers.for_goal(puzzle.shape_of(board, args.shape), args.goal, algorithm)
    # A search the solver would refuse (the board, the algorithm on this shape, --threads)
    # is refused before the note and the compile are announced.
    solver.check_search(algorithm, args.threads)
    solver.prepare(board, args.goal)
    note_heuristic(args, solver)
    control = SearchControl(budget=args.budget, timeout=args.timeout, checkpoint=keeper_of(args))
    if not args.quiet:
        announce_compile(solver, args.threads, algorithm.name)
    with SearchReporter(control, enabled=not args.quiet):
        return record(solver, board, args.goal, args.threads, control, cap, algorithm)


def keeper_of(args):
    """The --checkpoint file's keeper (search.checkpoint.Checkpointing), or None; says so
    when it resumes a saved search (after the file was checked)."""
    if not getattr(args, "checkpoint", None):
        return None
    from pdbtool.search.checkpoint import Checkpointing

    def said(path) -> None:  # once the saved search is checked and found to be this one
        print(f"{PROG}: resuming the search saved in {path}", file=sys.stderr, flush=True)

    return Checkpointing(args.checkpoint, args.checkpoint_every or DEFAULT_EVERY,
                         on_resume=None if args.quiet else said)


def note_heuristic(args, solver) -> None:
    """Say before the search what its answer's note will say about the heuristic (a
    table-free fallback: a hard board may then take hours), once per note."""
    note = solver.heuristic.note
    said = args.__dict__.setdefault("notes_said", set())
    if note and not args.quiet and note not in said:
        said.add(note)
        print(f"{PROG}: note: {note}", file=sys.stderr, flush=True)


def announce_compile(solver, threads: int, algorithm: str = "ida") -> None:
    """Say so before a search waits for its kernels to compile (the first of its algorithm
    on a machine)."""
    from pdbtool.search import warm

    parts = solver.kernel_parts(threads) if algorithm == "ida" else (algorithm,)
    seconds = warm.pending(type(solver.heuristic.H), parts)
    if seconds:
        print(f"{PROG}: compiling the search kernels for this machine, once: about "
              f"{seconds:.0f} s ('pdbtool warm' does it ahead of time)", file=sys.stderr, flush=True)
        if tight := warm.tight_for_compiling():
            print(f"{PROG}: warning: {tight}", file=sys.stderr, flush=True)


def check_written(args, path, *inputs) -> None:
    """May a file the command writes beside its answer (--trace, animate's page) go to
    ``path``? Into a directory that may be written, never onto a table it may read (the
    default ./artifacts' too) or another input, never over any table or pack (an HDF5
    file) or a table's stamp (its loaders would check it whole again), a link or a special
    file, over another existing file only with --force, never to "-" (BadInput)."""
    tables = [Path(args.artifact)] if getattr(args, "artifact", None) else []
    directory = getattr(args, "artifacts", None) or DEFAULT_ARTIFACTS
    if Path(directory).is_dir():
        tables += artifact.find_artifacts(directory)
    check_output(path, inputs=[*tables, *inputs], force=args.force)
    if Path(path).is_file() and artifact.is_hdf5(path):
        raise BadInput(f"{path} is an HDF5 file (a table or a pack): refusing to write over "
                       "it, even with --force; give another output name")
    if stamped := artifact.stamp_of(path):
        raise BadInput(f"{path} is the verification stamp of the table {stamped}: refusing "
                       "to write over it, even with --force; give another output name")


def solve_one(args, text, solvers, algorithm, line: int | None = None) -> int:
    """One board (``line``: a batch's, in its file)."""
    trace = solve_traced(args, text, solvers, algorithm, args.trace_cap if args.trace else 0)
    if args.trace:
        try:
            trace.save(args.trace)
        except PdbError:  # (a full disk): the answer is not lost with the trace
            emit(args, trace.result, result_text(trace.result))
            raise
        if not args.quiet:
            print(f"{PROG}: wrote {args.trace}: {trace.summary}", file=sys.stderr)
    emit(args, trace.result, result_text(trace.result, line))
    if getattr(args, "checkpoint", None):  # answered: nothing left to resume
        forget(args.checkpoint)
    return 0


def cmd_solve(args) -> int:
    if args.checkpoint_every is not None and not args.checkpoint:
        raise BadInput("--checkpoint-every goes with --checkpoint FILE")
    if args.trace:  # before the search: a refused path costs nothing
        check_written(args, args.trace)
    elif args.trace_cap != DEFAULT_CAP:
        raise BadInput("--trace-cap goes with --trace (the nodes a trace records)")
    solvers, algorithm = solvers_from(args)
    if args.checkpoint and (args.file or args.trace or algorithm.name != "ida"):
        raise BadInput("--checkpoint saves one board's IDA* search: not with --file, --trace "
                       "or another --algorithm")
    if args.cluster:
        return solve_on_cluster(args, solvers, algorithm)
    if args.cluster_shared or args.cluster_cache:
        raise BadInput("--cluster-shared and --cluster-cache go with --cluster")
    if args.file is None:
        if not args.board:
            raise BadInput("no board: give the tiles (e.g. pdbtool solve 1 2 3 4 5 6 7 0 8) or --file FILE")
        return solve_one(args, " ".join(args.board), solvers, algorithm)
    if args.board:
        raise BadInput("give either a BOARD or --file, not both")
    if args.trace:
        raise BadInput("--trace records one board: give a BOARD, not --file")
    codes = []
    for lineno, line in board_lines(args.file):
        try:
            if isinstance(line, PdbError):
                raise line
            code = solve_one(args, line, solvers, algorithm, lineno)
        except PdbError as e:
            code = e.exit_code
            report_error(PROG, args, str(e), code, f"line {lineno}")
        codes.append(code)
    if not codes:
        raise BadInput(no_boards(args.file))
    return batch_exit_code(codes)


# --- solve --cluster ----------------------------------------------------------------------

def prepare_line(text: str, args, solvers, algorithm):
    """(solver, prepared board) of one board's text, validated for the goal."""
    board = puzzle.parse_board(text, args.shape)
    solver = solvers.for_goal(puzzle.shape_of(board, args.shape), args.goal, algorithm)
    solver.check_search(algorithm)
    prepared = solver.prepare(board, args.goal)
    note_heuristic(args, solver)  # (after the refusals)
    return solver, prepared


def solve_on_cluster(args, solvers, algorithm) -> int:
    """One board searched over the cluster, or a batch (--file) spread over it, one board
    per task. Every board is checked before the cluster is contacted."""
    if args.trace:
        raise BadInput("--trace records a search on this machine: drop --cluster or --trace")
    if args.threads != 1:
        raise BadInput("give --threads or --cluster, not both (the cluster uses its nodes' cores)")
    if args.file is None:
        if not args.board:
            raise BadInput("no board: give the tiles (e.g. pdbtool solve 1 2 3 4 5 6 7 0 8) or --file FILE")
        if algorithm.name != "ida":
            raise BadInput(f"--cluster searches one board with IDA*, not {algorithm.name} "
                           "(other algorithms run over the cluster one board per task: --file)")
        return solve_one_on_cluster(args, prepare_line(" ".join(args.board), args, solvers, algorithm))
    if args.board:
        raise BadInput("give either a BOARD or --file, not both")
    entries = []  # in input order: (line number, (solver, prepared) or the error)
    for lineno, line in board_lines(args.file):
        try:
            if isinstance(line, PdbError):
                raise line
            entries.append((lineno, prepare_line(line, args, solvers, algorithm)))
        except PdbError as e:
            entries.append((lineno, e))
    if not entries:
        raise BadInput(no_boards(args.file))
    codes = []
    with open_cluster(args) as cluster, closing(cluster.solve_many(
            [e for _, e in entries if not isinstance(e, PdbError)], algorithm=algorithm,
            budget=args.budget, timeout=args.timeout)) as answers:
        for lineno, entry in entries:
            if isinstance(entry, PdbError):
                code, message = entry.exit_code, str(entry)
            else:
                answer = next(answers)
                code, message = answer.exit_code, answer.error
                if answer.result is not None:
                    r = answer.result.to_dict()
                    emit(args, r, result_text(r))
            if code:
                report_error(PROG, args, message, code, f"line {lineno}")
            codes.append(code)
        outcome_out()  # every line is out: closing Ray is no longer interrupted
    return batch_exit_code(codes)


def solve_one_on_cluster(args, prepared_board) -> int:
    from pdbtool.search.control import SearchControl

    from pdbtool.cluster.driver import resumed

    solver, prepared = prepared_board
    keeper = keeper_of(args)
    control = SearchControl(budget=args.budget, timeout=args.timeout, checkpoint=keeper)
    with keeper.holding() if keeper else nullcontext():  # held, then read: a search running
        resumed(solver, prepared, keeper)  # on it, or another search's: refused before Ray
        with open_cluster(args) as cluster:  # starts, not a minute into it
            if not args.quiet:  # (it may wait for CPUs another job holds, and ship tables)
                print(f"{PROG}: starting the workers on the cluster's nodes and loading the "
                      "tables there", file=sys.stderr, flush=True)
            cluster.workers(solver)

            def busy() -> str:
                run = cluster.running
                return f", {run.busy}/{run.live_cpus} workers busy" if run else ""

            with SearchReporter(control, enabled=not args.quiet, detail=busy):
                r = cluster.search(solver, prepared, control).to_dict()
            emit(args, r, result_text(r))  # the answer before Ray is closed (a second or
            outcome_out()  # more), which a stop no longer interrupts
            if keeper:  # answered: nothing left to resume
                keeper.remove()
    return 0


def cmd_animate(args) -> int:
    from pdbtool.cli import animate
    from pdbtool.search import trace

    if args.trace and args.board:
        raise BadInput("give either a BOARD or --trace FILE, not both")
    if not args.trace and not args.board:
        raise BadInput("no board: give the tiles (e.g. pdbtool animate 1 2 3 4 5 6 7 0 8) "
                       "or --trace FILE")
    if args.trace and (given := search_options_given(args)):
        raise BadInput(f"--trace animates a search already made: {', '.join(given)} would "
                       "change nothing; drop them, or give a BOARD to solve")
    t = trace.load(args.trace) if args.trace else None  # a damaged one said first,
    if t is None:  # as a bad board is, before the page's name is checked
        puzzle.parse_board(" ".join(args.board), args.shape)
    check_written(args, args.output, *([args.trace] if args.trace else []))  # before solving
    if t is None:
        t = solve_traced(args, " ".join(args.board), *solvers_from(args), args.trace_cap)
    animate.write(t, args.output)
    path = Path(args.output)
    r = t.result
    emit(args, {"path": str(path), "result": r, "events_recorded": t.recorded, "note": t.note},
         f"wrote {path}: {plural(r['length'], 'move')}, {plural(len(r['iterations']), 'iteration')}, {t.summary}; "
         f"open file://{path.resolve()}")
    return 0


def cmd_solvable(args) -> int:
    board = puzzle.parse_board(" ".join(args.board), args.shape)
    goal = puzzle.check_goal(args.to, args.shape)
    shape = puzzle.shape_of(board, args.shape)
    puzzle.goal_board(shape, goal)  # the sizes must agree
    ok, why = puzzle.solvability(board, goal, shape)
    emit(args, {"board": list(board), "rows": shape.rows, "cols": shape.cols, "goal": goal,
                "solvable": ok, "explanation": why}, why)
    return 0 if ok else EXIT_UNSOLVABLE


def cmd_predict(args) -> int:
    from pdbtool.heuristics.prediction import predict

    meta = artifact.read_any_meta(args.path)
    if not 0 <= args.blank < meta.shape.cells:
        raise BadInput(f"--blank {args.blank}: cells of a {meta.shape} board are 0..{meta.shape.cells - 1}")
    rows = predict(meta, args.depth, args.blank, prune=not args.no_prune)
    text = "\n".join([f"{meta.partition}: IDA* nodes per iteration predicted from the value distribution "
                      "(Korf, Reid & Edelkamp; partition 0, no reflection)",
                      f"{'bound':>5}  {'expanded':>14}  {'generated':>14}"]
                     + [f"{r['bound']:5d}  {r['expanded']:14,.0f}  {r['generated']:14,.0f}" for r in rows])
    emit(args, {"path": str(args.path), "partition": meta.partition, "blank": args.blank,
                "prune": not args.no_prune, "iterations": rows}, text)
    return 0


# --- parser -------------------------------------------------------------------------------

def add_shape_option(p) -> None:
    p.add_argument("--shape", type=arg_shape, metavar="ROWSxCOLS",
                   help="the board's shape, e.g. 3x4 (default: the square of the tile count)")


def search_options_given(args) -> list[str]:
    """The options of add_solve_options given other than as their defaults (those that
    choose or limit a search), by their flags."""
    defaults = parser().parse_args([args.command])
    return ["--" + name.replace("_", "-") for name in SEARCH_OPTIONS
            if getattr(args, name) != getattr(defaults, name)]


SEARCH_OPTIONS = ("shape", "goal", "algorithm", "weight", "tt_size", "max_memory", "heuristic",
                  "artifact", "artifacts", "no_reflect", "no_prune", "threads", "budget",
                  "timeout", "trace_cap")


def add_solve_options(p) -> None:
    """What chooses the goal, the shape, the algorithm and the heuristic and limits a
    search: shared by solve and animate."""
    add_shape_option(p)
    p.add_argument("--goal", default="blank-last",
                   help="blank-last (1..N then 0, default), blank-first (0,1..N), or a goal board's tiles")
    p.add_argument("--algorithm", default="ida", choices=ALGORITHMS,
                   help="ida (default), ida-tt, astar, rbfs, sma, frontier, bidir, bfs (up to 9 "
                        "cells: 3x3, 2x4, 4x2): optimal; wida: at most --weight x optimal; greedy: constructive, not "
                        "optimal, up to 20x20")
    p.add_argument("--weight", type=float,
                   help="wida: f = g + W*h, 1 <= W <= 100 (default 1.5), cut down to 0.001 "
                        "(never looser than asked: 1.0009 is 1, plain IDA*); lowered so that "
                        "W x h0 <= 500 (the output says so)")
    p.add_argument("--tt-size", type=arg_positive, metavar="N",
                   help="ida-tt: transposition table entries (default 1,048,576: 32 MiB)")
    p.add_argument("--max-memory", type=arg_size, metavar="SIZE",
                   help="astar, sma, frontier, bidir: memory for the states they hold, e.g. 512M, "
                        "4G (default 1G); astar, frontier and bidir exit 4 beyond it, sma drops "
                        "states to stay within it")
    p.add_argument("--heuristic", choices=TABLE_FREE,
                   help="use a table-free heuristic instead of pattern databases")
    p.add_argument("--artifact", metavar="PATH", type=arg_path, help="use this pattern-database artifact")
    p.add_argument("--artifacts", metavar="DIR", type=arg_path, help=f"pick the strongest artifact for the size (default ./{DEFAULT_ARTIFACTS} if present)")
    p.add_argument("--no-reflect", action="store_true", help="do not max with the reflected board's value")
    p.add_argument("--no-prune", action="store_true",
                   help="prune only the move back, not duplicate move sequences (for comparison)")
    p.add_argument("--threads", type=arg_threads, default=1,
                   help="search one board on N threads (default 1; a trace records nodes only on 1)")
    p.add_argument("--budget", type=arg_budget,
                   help="give up after about this many nodes generated (exit 4); checked between "
                        "iterations and every few thousand nodes, so a search may end a little past "
                        "it (on N threads, shared by them: up to N times a little); greedy, whose "
                        "work is bounded, does not take it")
    p.add_argument("--timeout", type=arg_seconds,
                   help="give up after this many seconds of search (exit 4; with --cluster, "
                        "from the search's start, after Ray's start and the tables' shipping)")
    p.add_argument("--trace-cap", type=arg_non_negative, default=DEFAULT_CAP, metavar="N",
                   help=f"nodes a trace records at most (default {DEFAULT_CAP:,}: the 8-puzzle and "
                        "easy 15-puzzles fit); the search goes on beyond, unrecorded")
    p.add_argument("--quiet", action="store_true", help="no progress line for long searches")


def shipping_command(sub, name, func, help, output_help):
    """pack and unpack: a file in, a file out, compressed on all cores."""
    p = sub.add_parser(name, help=help, description=help)
    p.add_argument("path", type=arg_path)
    p.add_argument("-o", "--output", required=True, type=arg_path, help=output_help)
    p.add_argument("--threads", type=arg_threads, default=os.cpu_count(),
                   help="threads (default: all cores)")
    p.add_argument("--force", action="store_true",
                   help="replace an existing output file (never the input, never a non-regular "
                        f"file{', never an installed table' if name == 'pack' else ''})")
    p.add_argument("--json", action="store_true", help="print JSON on stdout instead of text")
    p.set_defaults(func=func)
    return p


def parser() -> Parser:
    p = Parser(prog="pdbtool", description=(
        "Optimal sliding-tile puzzle solving: build, verify, ship pattern databases, and solve."))
    p.add_argument("--version", action="version",
                   version=version_text("pdbtool", "numba", "numpy", "h5py"))
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    s = sub.add_parser("solve", help="solve boards (optimally by default)", description=(
        "Solve a board, optimally with IDA* unless --algorithm says otherwise. BOARD is the "
        "tiles row by row (0 = blank), as one argument or several, separated by spaces and/or "
        "commas; the size comes from the count (a square), or from --shape."))
    s.add_argument("board", nargs="*", metavar="BOARD")
    s.add_argument("--file", metavar="FILE", type=arg_path, help=(
        "solve one board per line of FILE ('-' = stdin); a bad line is reported and the "
        "rest go on. Exit code of a batch: 1 if any board failed for a reason other than "
        "its input (e.g. a damaged artifact), else the highest of 4 (limit), 3 (unsolvable) "
        "and 2 (bad input) met, else 0"))
    add_solve_options(s)
    s.add_argument("--checkpoint", metavar="FILE", type=arg_path, help=(
        "save the search's progress to FILE now and then, and resume from it when FILE "
        "exists (IDA*, one board, on threads or over --cluster): a killed or interrupted search started again with the "
        "same FILE goes on where the last save left it, with the same answer and the node "
        "counts of a search never stopped on as many threads (each iteration's count "
        "depends on the threads; on several the last one's varies, as between any two "
        "runs); removed once the answer is printed"))
    s.add_argument("--checkpoint-every", type=arg_interval, default=None, metavar="S",
                   help=f"seconds between saves (default {DEFAULT_EVERY:g})")
    s.add_argument("--trace", metavar="FILE.json", type=arg_path,
                   help="also write a trace of the search: iterations, h along the path and, on one "
                        "thread with IDA*, every node generated (up to --trace-cap)")
    s.add_argument("--force", action="store_true", help="replace an existing --trace file "
                   "(never a table, never a link or a non-regular file)")
    add_cluster_option(s, "search one board over a Ray cluster (the driver iterates the bounds, "
                          "the nodes search the subtrees), or with --file spread the boards over "
                          "it, one board per task")
    add_shipping_options(s)
    s.add_argument("--json", action="store_true", help="one JSON object per board")
    s.set_defaults(func=cmd_solve)

    a = sub.add_parser("animate", help="write a self-contained HTML page that animates a solve",
                       description=(
        "Solve BOARD (as `solve` does, recording the search's nodes) or read a trace written by "
        "`pdbtool solve --trace`, and write one HTML file that replays it: the board along the "
        "solution, g/h/f per move, nodes per iteration, h along the path, the search node by node. "
        "No network is needed to view it."))
    a.add_argument("board", nargs="*", metavar="BOARD")
    a.add_argument("--trace", metavar="FILE.json", type=arg_path, help="animate this trace instead of solving")
    a.add_argument("-o", "--output", default="solve.html", type=arg_path, help="page to write (default solve.html)")
    a.add_argument("--force", action="store_true", help="replace an existing page (never a "
                   "table or the --trace read, never a link or a non-regular file)")
    add_solve_options(a)
    a.add_argument("--json", action="store_true", help="print JSON on stdout instead of text")
    a.set_defaults(func=cmd_animate)

    sv = sub.add_parser("solvable", help="can one arrangement reach another? (parity)", description=(
        "Decide by parity whether START can reach the goal, and explain why. Exit 0 if it can, 3 if not."))
    sv.add_argument("board", nargs="+", metavar="START")
    sv.add_argument("--to", default="blank-last", metavar="GOAL",
                    help="blank-last (default), blank-first, or the goal board's tiles")
    add_shape_option(sv)
    sv.add_argument("--json", action="store_true", help="print JSON on stdout instead of text")
    sv.set_defaults(func=cmd_solvable)

    pr = sub.add_parser("predict", help="predict IDA* nodes per iteration from a table's values",
                        description="Korf, Reid & Edelkamp's prediction from the artifact's value "
                                    "histograms: of no start in particular, a comparison of tables "
                                    "(a given board's search takes orders of magnitude fewer).")
    pr.add_argument("path", metavar="ARTIFACT", type=arg_path)
    pr.add_argument("--depth", type=arg_non_negative, required=True, help="predict bounds 0..DEPTH (at most 255)")
    pr.add_argument("--blank", type=int, default=0, help="the start's blank cell (default 0)")
    pr.add_argument("--no-prune", action="store_true", help="count the tree with parent pruning only")
    pr.add_argument("--json", action="store_true", help="print JSON on stdout instead of text")
    pr.set_defaults(func=cmd_predict)

    b = sub.add_parser("build", help="build a partition's pattern databases", description=(
        "Build the tables of a catalogue (see `pdbtool partitions`) and write one artifact."))
    b.add_argument("partition", metavar="CATALOGUE",
                   help="e.g. 8/full, 15/5-5-5, 15/6-6-3, 15/7-8, 24/6-6-6-6, 24/small")
    b.add_argument("--min-over-blank", action="store_true",
                   help="keep one entry per placement (the minimum over the blank's regions), "
                        "as Korf & Felner's tables; default: one per region (zero-aware)")
    b.add_argument("--workers", type=arg_cores,
                   help="cores to use, processes x threads (default: all cores)")
    b.add_argument("--processes", type=arg_processes,
                   help="worker processes, one table each (default: one per table up to --workers, "
                        "or one when a single table is most of the work)")
    add_cluster_option(b, "build the tables as tasks on the nodes of a Ray cluster (the "
                          "artifact is written here)")
    b.add_argument("--out", default=DEFAULT_ARTIFACTS, type=arg_path,
                   help=f"output directory (default {DEFAULT_ARTIFACTS}; made, with its parents, "
                        "if missing); the artifact is named after its catalogue (15/7-8: 15-7-8.h5)")
    b.add_argument("--force", action="store_true",
                   help="replace an artifact of the same name in the output directory")
    b.add_argument("--quiet", action="store_true", help="no progress bar")
    b.add_argument("--json", action="store_true", help="print JSON on stdout instead of text")
    b.set_defaults(func=cmd_build)

    v = sub.add_parser("verify", help="check an artifact thoroughly", description=(
        "Checksums, rank/unrank round trip, completeness, the value histograms, consistency "
        "across moves (on every entry of a table of at most 32 M entries, else sampled "
        "unless --exhaustive) and admissibility against exact solves. Exit 1 names the "
        "failed check."))
    v.add_argument("path", type=arg_path)
    v.add_argument("--full", action="store_true", help="exhaustive round trip and more samples")
    v.add_argument("--exhaustive", action="store_true", default=None, help=(
        "check consistency (|h(a) - h(b)| <= 1 across every move of a group's tiles) and "
        "exactness (a move one closer from every entry above 0) on every entry instead of a "
        "sample: the entries are then the exact abstract distances, so admissible (minutes "
        "for 15/7-8, with progress on stderr; the default for tables of at most 32 M "
        "entries, 15/6-6-3's included: seconds)"))
    v.add_argument("--seed", type=arg_non_negative, metavar="N",
                   help="seed of the sampled checks (default: a fresh one each run, printed)")
    v.add_argument("--json", action="store_true", help="print JSON on stdout instead of text")
    v.set_defaults(func=cmd_verify)

    se = sub.add_parser("seal", help="seal an artifact written before seals, in place",
                        description=(
        "Write each installed artifact again with a seal, the digest of its HDF5 metadata "
        "that readers check before HDF5 parses the file (a damaged header then is refused "
        "with a message instead of hanging or crashing the reader). The tables' bytes are "
        "copied as they are, their checksums checked first; the new file is renamed over "
        "the old (a daemon serving it keeps its mapping until a reload), and stamped again "
        "if the old one was. Files pdbtool writes now are sealed already."))
    se.add_argument("paths", nargs="+", metavar="PATH", type=arg_path)
    se.add_argument("--json", action="store_true", help="one JSON object per file")
    se.set_defaults(func=cmd_seal)

    i = sub.add_parser("info", help="show an artifact's metadata",
                       description="show an artifact's metadata")
    i.add_argument("path", type=arg_path)
    i.add_argument("--json", action="store_true", help="print JSON on stdout instead of text")
    i.set_defaults(func=cmd_info)

    ls = sub.add_parser("list", help="list the artifacts in a directory",
                        description="list the artifacts in a directory; exit status 1 if a file "
                                    "there is damaged, unreadable or not an artifact (listed "
                                    "all the same)")
    ls.add_argument("dir", nargs="?", default=DEFAULT_ARTIFACTS, type=arg_path,
                    help=f"directory of *.h5 artifacts (default ./{DEFAULT_ARTIFACTS})")
    ls.add_argument("--json", action="store_true", help="print JSON on stdout instead of text")
    ls.set_defaults(func=cmd_list)

    pk = shipping_command(sub, "pack", cmd_pack, "compress an artifact for shipping (zstd, all cores)",
                          "packed file to write (e.g. x.pdbpack)")
    pk.add_argument("--level", type=arg_zstd_level, default=10, help="zstd level (default 10)")
    shipping_command(sub, "unpack", cmd_unpack, "expand a packed artifact, verify it (every checksum and every verify check) and stamp it",
                     "installed artifact to write (.h5)")

    w = sub.add_parser("warm", help="compile the search kernels ahead of the first solve", description=(
        "Compile (once per machine; numba keeps them in its cache) the kernels that IDA* "
        "needs with the strongest table of each board side in DIR, or with the table-free "
        "fallbacks of 3x3 and 4x4 boards when DIR holds no table: for images and CI. "
        "Without it, the first solve on a machine compiles them (10 s or more)."))
    w.add_argument("--artifacts", metavar="DIR", default=None, type=arg_path,
                   help=f"directory of *.h5 artifacts (default ./{DEFAULT_ARTIFACTS} if it exists)")
    w.add_argument("--threads", type=arg_threads, default=os.cpu_count() or 1,
                   help="the threads the searches will use (default: all cores)")
    w.add_argument("--json", action="store_true", help="print JSON on stdout instead of text")
    w.set_defaults(func=cmd_warm)

    pt = sub.add_parser("partitions", help="list the catalogues of partitions",
                        description="list the catalogues of partitions")
    pt.add_argument("--json", action="store_true", help="print JSON on stdout instead of text")
    pt.set_defaults(func=cmd_partitions)
    return p


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    if sys.stdout is None:  # fd 1 closed: every command's result would vanish, exit 0
        report_error(PROG, args, STDOUT_CLOSED, 1)
        return 1
    with library_warnings(PROG):
        return run(PROG, args)


if __name__ == "__main__":
    from pdbtool.cli import end_with

    end_with(PROG, main)
