"""What both command lines share: running a command, reporting errors, printing results,
progress. ``pdbtool`` and ``pdbd`` go through here, so their exit codes, error lines and
JSON shapes cannot drift apart.

Loads neither numba nor grpc: ``pdbd query`` starts fast.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import faulthandler
import json
import logging
import os
import resource
import signal
import sys
import threading
import time

from pdbtool import limits, puzzle
from pdbtool.errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED, BadInput, PdbError
from pdbtool.geometry import Shape
from pdbtool.progress import LOG_EVERY, fmt_bytes, fmt_seconds
from pdbtool.search.interrupts import raising
from pdbtool.signals import command_returned

EXIT_TERMINATED = 143  # 128 + SIGTERM
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE: what `cmd | head` gives for any tool that head cut off

PROGRESS_EVERY = 1.0  # seconds between progress lines on a terminal


class Terminated(BaseException):
    """SIGTERM, raised like Ctrl-C so that cleanups (half-written files) run."""


@raising  # a search on the main thread is halted for it
def _terminate(signum, frame):
    raise Terminated


_TERMINATED = threading.Event()  # set by terminate_as_interrupt


@raising
def terminate_as_interrupt(signum, frame):
    """SIGTERM where a library copes with Ctrl-C only: Ray's waits turn any exception
    but KeyboardInterrupt raised from a signal handler into a SystemError with a stack
    dump. Raised as KeyboardInterrupt (the same cleanups), remembered, and reported by
    ``run`` as SIGTERM (exit 143)."""
    _TERMINATED.set()
    raise KeyboardInterrupt


def terminate_like_ctrl_c() -> None:
    """From here on SIGTERM goes through ``terminate_as_interrupt`` (main thread only)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, terminate_as_interrupt)


def run(prog: str, args, report=None) -> int:
    """Run ``args.func(args)``; turn every expected failure into one line and an exit code:
    PdbError -> its code, OSError, MemoryError and no room for a thread -> 1 (with the
    process's limits), Ctrl-C -> 130, SIGTERM -> 143
    (after the same cleanups as Ctrl-C). Never a traceback. A command may install its own
    handlers; one whose outcome is out (signals.outcome_out) has them back as it returns
    (signals.command_returned).
    ``report``: what writes that line, as ``report_error`` (its default) is called."""
    say = report or report_error
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminate)
    if not faulthandler.is_enabled():  # a fatal signal (SIGBUS) still leaves a trace
        with contextlib.suppress(AttributeError, OSError, ValueError, RuntimeError):  # stderr
            # without an fd, or none at all (closed when the process started: 2>&-)
            faulthandler.enable(sys.__stderr__)
    try:
        return args.func(args)
    except BrokenPipeError:  # stdout's reader went away (`... | head`): quiet, as cat is
        silence_stdout()
        return EXIT_BROKEN_PIPE
    except Terminated as e:
        say(prog, args, stopped("terminated", e), EXIT_TERMINATED)
        return EXIT_TERMINATED
    except PdbError as e:
        say(prog, args, "; ".join([str(e), *getattr(e, "__notes__", ())]), e.exit_code)
        return e.exit_code
    except MemoryError as e:  # numpy's says how much it asked for
        say(prog, args, f"out of memory{f': {e}' if str(e) else ''}{limits_said()}", 1)
        return 1
    except RuntimeError as e:  # threading's words when the limits leave no room for one
        if str(e) != "can't start new thread":
            raise
        say(prog, args, f"cannot start a thread{limits_said(threads=True)}", 1)
        return 1
    except OSError as e:  # a path that cannot be read or written: say which
        where = f"{e.filename}: " if getattr(e, "filename", None) else ""
        code = EXIT_BAD_INPUT if e.errno == errno.ENAMETOOLONG else 1  # a name given: bad input
        say(prog, args, f"{where}{e.strerror or e}", code)
        return code
    except KeyboardInterrupt as e:
        if _TERMINATED.is_set():
            say(prog, args, stopped("terminated", e), EXIT_TERMINATED)
            return EXIT_TERMINATED
        say(prog, args, stopped("interrupted", e), EXIT_INTERRUPTED)
        return EXIT_INTERRUPTED
    finally:
        command_returned()


def limits_said(threads: bool = False) -> str:
    """The process's own limit on memory (``ulimit -v``) and, for ``threads``, on them
    (``ulimit -u``) where set, for an error that may have run into it: '' where none is."""
    said = []
    for which, option, fmt in ((resource.RLIMIT_AS, "-v", fmt_bytes),
                                (resource.RLIMIT_NPROC, "-u", str))[:2 if threads else 1]:
        soft = resource.getrlimit(which)[0]
        if soft != resource.RLIM_INFINITY:
            said.append(f"ulimit {option} {fmt(soft)}")
    return f" (this process's limits: {', '.join(said)})" if said else ""


def stopped(word: str, e: BaseException) -> str:
    """"interrupted" or "terminated", and what the stop left (the exception's notes: a
    file written whole, trust.said_if_written)."""
    return "; ".join([word, *getattr(e, "__notes__", ())])


_results = None  # the command's stdout once results_apart() has moved sys.stdout aside


def results_out():
    """Where the command's results go: stdout (sys.stdout unless results_apart())."""
    return _results if _results is not None else sys.stdout


@contextlib.contextmanager
def results_apart():
    """Within it, stdout is for the command's results alone: sys.stdout is stderr, so that
    what a library prints there goes to stderr (Ray's driver prints a raylet's death, a
    20-line dump, to sys.stdout, which would break a --json reader); the results are
    written to results_out(), the original."""
    global _results
    if _results is not None or sys.stdout is None:
        yield
        return
    sys.stdout.flush()
    _results, sys.stdout = sys.stdout, sys.stderr
    try:
        yield
    finally:
        sys.stdout, _results = _results, None


def silence_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's flush at exit finds no closed
    pipe (it would print a second traceback)."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, results_out().fileno())


def version_text(prog: str, *packages: str) -> str:
    """``--version``: the program's version and those of the packages it runs on, read
    from the installed metadata (nothing is imported)."""
    from importlib import metadata

    from pdbtool import __version__

    def installed(name: str) -> str:
        try:
            return f"{name} {metadata.version(name)}"
        except metadata.PackageNotFoundError:
            return f"{name} missing"

    platform = f"Python {sys.version.split()[0]}"
    return f"{prog} {__version__} ({', '.join([*map(installed, packages), platform])})"


class UsageError(Exception):
    """A command line argparse refuses: the (sub)command's name and its error line."""

    def __init__(self, prog: str, line: str):
        super().__init__(line)
        self.prog, self.line = prog, line

    @property
    def message(self) -> str:
        """The error line without the program's name."""
        return self.line.split(": error: ", 1)[1]


def with_dash_hint(e: UsageError, args: list[str]) -> UsageError:
    """argparse takes a value that starts with '-' (such as -1G) for an option and says
    the option "expected one argument": the error then says how to give such a value."""
    if not e.line.endswith("expected one argument"):
        return e
    names = e.message.removeprefix("argument ").split(":")[0].split("/")
    for given, after in zip(args, args[1:]):
        if given in names and after.startswith("-"):
            return UsageError(e.prog, f"{e.line} ('{after}' was taken for an option: give "
                                       f"it as {given}={after})")
    return e


class Parser(argparse.ArgumentParser):
    """argparse's parser (its subcommands' too): a usage error is one line on stderr,
    argparse's error and where the help is ("(see pdbtool solve --help)"; argparse's usage
    block before it, a dozen lines for solve, buried the error), exit 2, and with --json
    among the arguments also the JSON error object on stdout, as for every other error.
    Options are spelt out: no abbreviations (``--js`` taken for --json would be missed by
    that check; a later option sharing the prefix would change what an old script
    means)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message):
        raise UsageError(self.prog, f"{self.prog}: error: {message}")

    def print_help(self, file=None):
        """--help, written out now: a full disk is an error (exit 1), a reader gone away
        the quiet 141 (argparse's own print_help drops a failed write and exits 0)."""
        try:
            file = file or sys.stdout
            file.write(self.format_help())
            file.flush()
        except BrokenPipeError:
            silence_stdout()
            raise SystemExit(EXIT_BROKEN_PIPE) from None
        except OSError as e:
            silence_stdout()
            print(f"{self.prog}: cannot write the help to stdout: {e.strerror}", file=sys.stderr)
            raise SystemExit(1) from None

    def parse_args(self, args=None, namespace=None):
        args = sys.argv[1:] if args is None else list(args)
        try:
            namespace, extras = self.parse_known_args(args, namespace)
            if extras:  # said by the subcommand, whose --help lists its options
                self.command_parser(namespace).error(
                    f"unrecognized arguments: {' '.join(extras)}")
            return namespace
        except UsageError as e:
            self.report_usage_error(args, with_dash_hint(e, args))
            raise SystemExit(BadInput.exit_code) from None

    def command_parser(self, namespace) -> argparse.ArgumentParser:
        """The parser of the subcommand ``namespace`` chose (``self`` if none)."""
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                return action.choices.get(getattr(namespace, action.dest, None), self)
        return self

    def report_usage_error(self, args: list[str], e: UsageError) -> None:
        """Tell a refused command line ``args`` (a command may say it another way)."""
        if "--json" in args:
            json_error(e.message, BadInput.exit_code, "")
        print(f"{e.line} (see {e.prog} --help)", file=sys.stderr, flush=True)


class _Lines(logging.Handler):
    """A log record as a line of the command's own: 'PROG: warning: ...' on stderr (the
    one of the moment: tests swap it)."""

    def __init__(self, prog: str):
        super().__init__(logging.WARNING)
        self.prog = prog

    def emit(self, record):
        try:
            print(f"{self.prog}: {record.levelname.lower()}: {record.getMessage()}",
                  file=sys.stderr, flush=True)
        except Exception:
            self.handleError(record)


@contextlib.contextmanager
def library_warnings(prog: str):
    """While the block runs, the library's warnings (the logger ``prog``: a table without a
    stamp, a file changed in use) are lines of the command's own (Python's last resort
    printed the bare message)."""
    logger, handler = logging.getLogger(prog), _Lines(prog)
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)


def report_error(prog: str, args, message: str, code: int, where: str = "") -> None:
    """One line on stderr; with --json also an error object on stdout (a closed pipe or a
    full disk there loses that object only: the line and the exit code stay the error's)."""
    if getattr(args, "json", False):
        json_error(message, code, where)
    prefix = f"{where}: " if where else ""
    print(f"{prog}: {prefix}{message}", file=sys.stderr, flush=True)


def json_error(message: str, code: int, where: str) -> None:
    """A failure's JSON object on stdout, as a --json reader takes it."""
    out = results_out()
    try:
        print(json.dumps({"error": message, "exit_code": code, "where": where}), file=out,
              flush=True)
    except (OSError, ValueError, AttributeError):  # a closed pipe, a full disk, no stdout
        silence_stdout()


def batch_exit_code(codes) -> int:
    """One exit code for a batch: 1 (a failure not caused by the input) wins over the
    input's own outcomes, which rank 4 (limit) > 3 (unsolvable) > 2 (bad input) > 0."""
    codes = set(codes)
    if 1 in codes:
        return 1
    return max(codes, default=0)


def arg_budget(text: str) -> int:
    """argparse type: a node budget, checked as every tool checks it."""
    try:
        return limits.budget(text)
    except BadInput as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def arg_whole(text: str, least: int) -> int:
    """argparse type: a whole number of at least ``least``."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < least:
        raise argparse.ArgumentTypeError(f"{value} must be at least {least}")
    return value


def arg_positive(text: str) -> int:
    return arg_whole(text, 1)


def arg_non_negative(text: str) -> int:
    return arg_whole(text, 0)


def arg_zstd_level(text: str) -> int:
    value = arg_positive(text)
    if value > 22:
        raise argparse.ArgumentTypeError(f"zstd levels go from 1 to 22, not {value}")
    return value


def arg_threads(text: str, what: str = "threads") -> int:
    """argparse type: a number of threads (or of ``what``), checked as every tool checks it."""
    try:
        return limits.threads(text, what)
    except BadInput as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def arg_processes(text: str) -> int:
    """argparse type: a number of worker processes, within the same limits as threads."""
    return arg_threads(text, "processes")


def arg_cores(text: str) -> int:
    """argparse type: a number of cores to use, within the same limits as threads."""
    return arg_threads(text, "cores")


def arg_seconds(text: str, what: str = "timeout") -> float:
    """argparse type: seconds (a deadline or timeout), checked as every tool checks them."""
    try:
        return limits.seconds(text, what)
    except BadInput as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def arg_interval(text: str) -> float:
    """argparse type: seconds between two saves (--checkpoint-every)."""
    return arg_seconds(text, "the interval")


def arg_size(text: str) -> int:
    """argparse type: a memory size in bytes ('512M', '2G'), checked as every tool checks it."""
    try:
        return limits.size(text)
    except BadInput as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def arg_shape(text: str):
    """argparse type: ROWSxCOLS (e.g. 3x4), a shape the product serves (puzzle.check_shape)."""
    try:
        return puzzle.check_shape(Shape.parse(text))
    except BadInput as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def arg_path(text: str) -> str:
    """argparse type: a file or directory name, never empty (an unset shell variable would
    mean the current directory, or no file at all: a trace or checkpoint silently not
    written)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("needs a path, not an empty string")
    return text


def read_stdin() -> str:
    """All of stdin as text; BadInput if stdin is closed or not UTF-8."""
    stream = _stdin()
    try:
        return stream.read().decode("utf-8-sig")  # (a byte-order mark, as some editors
    except UnicodeDecodeError as e:  # write, is not part of the first board)
        raise BadInput(f"stdin is not UTF-8 text ({e.reason} at byte {e.start})") from None


def board_lines(path: str):
    """(line number, text) for each board of a file ('-': stdin): a line's text before any
    '#', lines with none skipped. Read as bytes: a line that is not UTF-8 comes as (line
    number, BadInput) so the caller reports it and goes on. A byte-order mark before the
    first line (some editors write one) is not read as text."""
    if path == "-":
        stream = _stdin_bytes()
    else:
        try:
            stream = open(path, "rb")
        except OSError as e:
            raise BadInput(f"cannot read {path}: {e.strerror}") from None
    with stream as lines:
        for lineno, raw in enumerate(lines, 1):
            try:
                text = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
            except UnicodeDecodeError as e:
                yield lineno, BadInput(f"not UTF-8 text ({e.reason} at byte {e.start})")
                continue
            if board := text.split("#")[0].strip():
                yield lineno, board


def _stdin():
    """sys.stdin's bytes; BadInput if it is closed."""
    stream = getattr(sys.stdin, "buffer", sys.stdin)
    if stream is None or getattr(stream, "closed", False):
        raise BadInput("stdin is closed: give the board as arguments")
    return stream


def _stdin_bytes():
    """Standard input's bytes line by line, through a reader of its own on a copy of the
    descriptor (closed with it): ``pdbd query --file -`` reads it on a daemon thread, and
    an exit while that thread waited in sys.stdin's own reader aborted the interpreter
    ("could not acquire lock for <stdin> at interpreter shutdown", exit 134) after the
    error it had to say. Nothing reads sys.stdin before it (its buffer is not seen)."""
    stream = _stdin()
    try:
        return open(os.dup(stream.fileno()), "rb")
    except (OSError, AttributeError, ValueError):  # no descriptor (a test's stream)
        return contextlib.nullcontext(stream)


STDOUT_CLOSED = ("stdout is closed: the result has nowhere to go (run the command with "
                 "its output open, e.g. > FILE)")


def emit(args, obj: dict, text: str, wrote=None) -> None:
    """The result of a command: JSON with --json, else the text. A result that cannot be
    written is an error naming stdout (exit 1), never a silent exit 0; ``wrote``: the file
    the command made, which the error says is whole all the same (else a run again finds
    it there and refuses to replace it, with no word why)."""
    out = results_out()
    if out is None:  # started with fd 1 closed: print would drop the text
        raise PdbError(STDOUT_CLOSED)
    try:
        print(json.dumps(obj) if getattr(args, "json", False) else text, file=out, flush=True)
    except BrokenPipeError:
        raise
    except OSError as e:  # a full disk, /dev/full
        silence_stdout()
        done = f" ({wrote} was written, whole, all the same)" if wrote else ""
        raise PdbError(f"cannot write the result to stdout: "
                       f"{os.strerror(e.errno) if e.errno else e}{done}") from None


def no_boards(file) -> str:
    """A batch (--file) without a board: said, not a silent success (a pipeline whose
    generator failed gave an empty batch, exit 0)."""
    where = "standard input" if str(file) == "-" else str(file)
    return f"no board in {where}: every line is empty or a comment"


def plural(n: int, noun: str, many: str | None = None) -> str:
    """'1 iteration', '2 iterations'; ``many``: the plural where it is not noun + s."""
    return f"{n:,} {noun if n == 1 else many or noun + 's'}"


def result_text(r: dict, line: int | None = None) -> str:
    """A solve result (the dict of `--json`) as the text both tools print; a batch's
    (``line``: its line in the file) opens with the line and the board, as its errors do."""
    lines = [] if line is None else [f"line {line}: board {' '.join(map(str, r['board']))}"]
    lines += [f"length {r['length']}  moves {' '.join(map(str, r['moves'])) or '-'}",
             f"blank  {r['blank_moves'] or '-'}",
             ("no heuristic: " if r["heuristic"] == "none" else f"{r['heuristic']}: h0 {r['initial_h']}, ")
             + f"{r['nodes_generated']:,} nodes generated, {r['seconds']:.3f} s"]
    lines.append(f"algorithm {r.get('algorithm', 'ida')}: {optimality(r)}, peak memory "
                 f"{memory_text(r.get('peak_memory_bytes', 0))}")
    if r.get("note"):
        lines.append(f"note: {r['note']}")
    return "\n".join(lines)


def memory_text(size: int) -> str:
    """Bytes as GiB from a GiB, MiB, or KiB or bytes below a MiB (3,330 bytes were "0.00 MiB")."""
    if size >= 2**30:
        return f"{size / 2**30:,.2f} GiB"
    if size >= 2**20:
        return f"{size / 2**20:,.2f} MiB"
    return f"{size / 2**10:.1f} KiB" if size >= 2**10 else f"{size} bytes"


def optimality(r: dict) -> str:
    """What a result's length guarantees, in words."""
    if r.get("optimal", True):
        return "optimal"
    if r.get("bound"):
        return f"bounded-suboptimal: at most {r['bound']:g} x the optimal length"
    return "NOT optimal (a constructive solution)"


def search_line(bound: int, nodes: int, elapsed: float, earlier=None) -> str:
    """A search's progress line; ``earlier`` (control.Earlier): a resumed search's
    earlier sittings, counted in ``nodes`` but not in ``elapsed`` or the rate."""
    now = nodes - (earlier.generated if earlier else 0)
    rate = now / elapsed if elapsed > 0 else 0.0
    line = (f"searching: bound {bound}, {nodes:,} nodes, {rate / 1e6:.1f}M nodes/s, "
            f"{fmt_seconds(elapsed)} elapsed")
    if earlier and (earlier.generated or earlier.seconds):
        line += (f" (resumed: {earlier.generated:,} nodes and {fmt_seconds(earlier.seconds)} "
                 "before)")
    return line


class SearchReporter:
    """A thread that reports a long search on stderr from the counters the kernel
    publishes (see search.control.SearchControl): nothing for the first ``after`` seconds.
    ``detail()``, if given, is appended to each line (e.g. the cluster's busy workers)."""

    def __init__(self, control, enabled: bool = True, after: float = 1.0, detail=None):
        self.control, self.after, self.detail = control, after, detail
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True) if enabled else None

    def __enter__(self):
        if self._thread:
            self._thread.start()
        return self

    def __exit__(self, *exc):
        self._done.set()
        if self._thread:
            self._thread.join()

    def _run(self) -> None:
        start = time.perf_counter()
        if self._done.wait(self.after):
            return
        tty = sys.stderr.isatty()
        while not self._done.wait(PROGRESS_EVERY if tty else LOG_EVERY):
            elapsed = time.perf_counter() - start
            c = self.control
            if c.bound == 0:  # the kernel has not published yet: loading or compiling
                line = f"preparing (kernels compile on first use), {fmt_seconds(elapsed)} elapsed"
            else:
                line = search_line(c.bound, c.generated, elapsed, c.earlier)
            if self.detail is not None:
                line += self.detail()
            sys.stderr.write(("\r\x1b[K" + line) if tty else line + "\n")
            sys.stderr.flush()
        if tty:
            sys.stderr.write("\r\x1b[K")


def stop_on_signals() -> threading.Event:
    """An event that SIGTERM or SIGINT sets: the servers stop gracefully on either."""
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    return stop
