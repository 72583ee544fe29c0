"""The ``pdbtool`` command line (main; the table commands in tables, the --cluster options
in cluster), what both command lines share for running commands and printing (console,
also used by pdbd), and the animated page (animate, animation.html)."""

import os
import sys

from pdbtool.signals import ending_with_command, ignore_stops

PROG = "pdbtool"  # the command's name in its messages


def launch(prog: str, module: str) -> None:
    """A command's entry point: ``module``'s main run and its exit code the process's
    (``end_with``). Libraries that cannot load (numba's LLVM under a low ``ulimit -v``, a
    package missing from a broken install) are one line and exit 1, not a traceback."""
    import importlib

    def run():
        try:
            entry = importlib.import_module(module).main
        except (ImportError, OSError, MemoryError) as e:
            print(f"{prog}: cannot load the libraries it runs on: {load_failure(e)}",
                  file=sys.stderr)
            return 1
        return entry()

    end_with(prog, run)


def load_failure(e: BaseException) -> str:
    """What stopped the libraries loading, in one line: the system's words (a shared object
    that could not be mapped, under llvmlite's longer guess), and the process's memory
    limit when one is set."""
    import resource

    cause = e.__context__ if isinstance(e.__context__, OSError) else e
    said = (str(cause) or type(cause).__name__).splitlines()[0]
    soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    if soft != resource.RLIM_INFINITY:
        said += f" (this process may take {soft >> 20:,} MiB: ulimit -v {soft >> 10})"
    return said


def end_with(prog: str, main) -> None:
    """Run ``main()`` and end the process with its exit status. A Ctrl-C while the command
    loads (numpy, numba, h5py: the first half second) or reads its arguments ends it as a
    Ctrl-C later does, "interrupted" and exit 130, not with a traceback. Once the outcome is
    out (a result, an error line, argparse's --help or usage error), a Ctrl-C or SIGTERM
    during the interpreter's teardown no longer turns it into a process killed by the
    signal (signals.ignore_stops); nor, in a command that says its outcome is out before
    it cleans up (signals.outcome_out), during that cleanup, which then runs into the
    teardown with both still ignored (signals.ending_with_command)."""
    from pdbtool.errors import EXIT_INTERRUPTED

    keep_stderr_open()
    ending_with_command()
    try:
        code = main()
    except KeyboardInterrupt:  # (main's command says it itself: this is before or after)
        print(f"{prog}: interrupted", file=sys.stderr)
        code = EXIT_INTERRUPTED
    except SystemExit as e:  # argparse's --help, --version and usage errors
        code = e.code
    ignore_stops()
    sys.exit(code)


def command() -> None:
    """The ``pdbtool`` command (pyproject's scripts; ``python -m pdbtool``)."""
    launch(PROG, "pdbtool.cli.main")


def keep_stderr_open() -> None:
    """A process started with stderr closed (``2>&-``): /dev/null there instead. Python
    leaves ``sys.stderr`` None, which ``print(..., file=sys.stderr)`` takes for stdout (a
    build's lines then broke its --json), and the next file opened takes descriptor 2,
    where any library's message (HDF5's, numba's) would be written into it."""
    try:
        os.fstat(2)
        return
    except OSError:
        pass
    try:
        fd = os.open(os.devnull, os.O_WRONLY)
    except OSError:  # (no /dev/null: the messages stay lost, as they were)
        return
    if fd != 2:  # (fd 0 or 1, closed too, lent for a moment: closed again)
        os.dup2(fd, 2)
        os.close(fd)
    sys.stderr = open(2, "w", errors="backslashreplace", closefd=False)
