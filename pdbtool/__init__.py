"""pdbtool: optimal sliding-tile puzzle solving with additive pattern databases.

The public API, loaded on first use so that ``import pdbtool`` stays light (a gRPC client
imports it without numba)::

    from pdbtool import Solver, SearchControl, Checkpointing, Solvers, Algorithm, build, verify, pack, unpack, install

Importing it changes nothing in the process (numba's cache directory is set in numba's own
configuration when the kernels are first imported: kernels/cache.py).

The folders are the layers, each importing only those below it (tests/test_layers.py):
errors < geometry, limits, progress, result, signals < puzzle (the vocabulary) < kernels < tables
< heuristics < search < verification < loading < selection < cluster < cli;
docs/architecture.md.
"""

from importlib import import_module

__version__ = "0.1.0"

_API = {
    "Solver": "search.solver", "SearchControl": "search.control",
    "Checkpointing": "search.checkpoint",
    "PreparedBoard": "search.control", "Algorithm": "search.algorithms",
    "SolveResult": "result", "Solvers": "selection", "load_directory": "selection",
    "load_heuristic": "loading", "table_free": "heuristics.table_free",
    "build": "tables.builder", "verify": "verification", "pack": "tables.packing",
    "unpack": "tables.packing", "install": "loading", "parse_board": "puzzle", "random_board": "puzzle",
    # what they raise (README: the API): every error is a PdbError with its exit_code
    "PdbError": "errors", "BadInput": "errors", "Unsolvable": "errors", "LimitReached": "errors",
    "ArtifactError": "errors",
}
__all__ = sorted(_API)


def __getattr__(name):
    if name in _API:
        value = getattr(import_module(f".{_API[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + __all__)
