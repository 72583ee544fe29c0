"""Errors that map to the CLI's exit codes (see docs/architecture.md)."""

EXIT_BAD_INPUT = 2
EXIT_UNSOLVABLE = 3
EXIT_LIMIT = 4
EXIT_INTERRUPTED = 130  # Ctrl-C, in both tools: 128 + SIGINT, the shell's convention


class PdbError(Exception):
    """Base class: an error with a clear message and an exit code."""

    exit_code = 1


class BadInput(PdbError):
    """The user gave something malformed (board, option, file)."""

    exit_code = EXIT_BAD_INPUT


class Unsolvable(PdbError):
    """The board cannot reach the goal (parity); the message says why."""

    exit_code = EXIT_UNSOLVABLE


class LimitReached(PdbError):
    """A node budget, deadline or cancellation stopped the search; ``limit`` names one that
    is not a node or time limit ("memory": A*'s states, a table's arrays). ``reason`` says
    which, as a word: "budget", "memory", or the reason the search was halted for
    (SearchControl.reason: "deadline", "cancelled", "timeout", ...); None if not known."""

    exit_code = EXIT_LIMIT

    def __init__(self, message: str = "", *, limit: str | None = None,
                 reason: str | None = None):
        super().__init__(message)
        self.limit = limit
        self.reason = reason or limit


class ArtifactError(PdbError):
    """A table file is missing, corrupted, truncated, or of an unknown format."""

    exit_code = 1


class NotAFile(ArtifactError):
    """The path given for an artifact names no file (missing, a dangling link, a directory,
    a FIFO...), or the one given for a directory of them no directory: the user's input,
    exit 2 as for any bad input, where a file that is there but damaged is exit 1."""

    exit_code = EXIT_BAD_INPUT


class WrongForm(ArtifactError):
    """A table of the other form than the command takes: a packed file where an installed
    table is wanted (verify, solve, seal, pack) or an installed table given to unpack; or a
    table's verification stamp given as a table or a pack. The user's input, exit 2 as
    NotAFile; the message says what the file is (and, for a table, what to run)."""

    exit_code = EXIT_BAD_INPUT


def not_a_directory(path) -> str:
    """Why ``path`` (a Path, not a directory) cannot be used as one: for an error message."""
    return f"{path}: not a directory" if path.exists() else f"{path}: no such directory"
