"""The ``pdbtool`` command line (main; the table commands in tables, the --cluster options
in cluster), what both command lines share for running commands and printing (console,
also used by pdbd), and the animated page (animate, animation.html)."""

PROG = "pdbtool"  # the command's name in its messages


def launch(prog: str, module: str) -> None:
    """A command's entry point: ``module``'s main run and its exit code the process's. A
    Ctrl-C while the command loads (numpy, numba, h5py: the first half second) or reads its
    arguments ends it as a Ctrl-C later does, "interrupted" and exit 130, not with a
    traceback."""
    import importlib
    import sys

    from pdbtool.errors import EXIT_INTERRUPTED

    try:
        code = importlib.import_module(module).main()
    except KeyboardInterrupt:  # (main's command says it itself: this is before or after)
        print(f"{prog}: interrupted", file=sys.stderr)
        sys.exit(EXIT_INTERRUPTED)
    sys.exit(code)


def command() -> None:
    """The ``pdbtool`` command (pyproject's scripts; ``python -m pdbtool``)."""
    launch(PROG, "pdbtool.cli.main")
