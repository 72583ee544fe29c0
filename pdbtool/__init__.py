"""pdbtool: optimal sliding-tile puzzle solving with additive pattern databases.

The public API, loaded on first use so that ``import pdbtool`` stays light (a gRPC client
imports it without numba)::

    from pdbtool import Solver, SearchControl, Solvers, Algorithm, build, verify, pack, unpack, install
"""

from importlib import import_module

from .cache_dir import ensure_numba_cache

__version__ = "0.1.0"

ensure_numba_cache()  # before any kernel module imports numba (see cache_dir)

_API = {
    "Solver": "search", "SearchControl": "search", "PreparedBoard": "search",
    "Algorithm": "algorithms",
    "SolveResult": "result", "Solvers": "selection", "load_directory": "selection",
    "load_heuristic": "pdb_heuristic", "table_free": "heuristics",
    "build": "builder", "verify": "verification", "pack": "packing", "unpack": "packing",
    "install": "packing", "parse_board": "puzzle", "random_board": "puzzle",
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
