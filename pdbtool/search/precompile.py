"""``python -m pdbtool.search.precompile KIND``: IDA*'s search kernels for one heuristic kind,
compiled into numba's cache from placeholder arrays (search.warm.aside's child process)."""

from __future__ import annotations

import sys

import numpy as np

from pdbtool.geometry import as_shape
from pdbtool.heuristics.table_free import Heuristic, board_arrays
from pdbtool.kernels import heuristic as hk
from pdbtool.kernels.ida import MAX_DEPTH
from pdbtool.search.control import Root, SearchControl
from pdbtool.search.solver import Solver


def compile_search(kind: int, side: int = 4) -> None:
    """IDA*'s search kernels (kernels.ida.ida, dfs_loop, h_update) for heuristics of
    ``kind``, compiled in this process from placeholder arrays: the root's h is 0, so the
    search returns at the root without reading them. The side does not change the types."""
    H = hk.heuristic_arrays(kind)
    shape = as_shape(side)
    solver = Solver(Heuristic("placeholder", shape, H, hk.state_width(kind, shape)))
    board, pos = board_arrays(list(range(side * side)))
    rows = np.zeros((MAX_DEPTH + 2, solver.heuristic.width), np.int32)
    solver.iterate(Root(board, pos, rows), 0, SearchControl(budget=1))


def main(argv=None) -> int:

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or not args[0].isdigit() or int(args[0]) not in hk.ARRAYS_OF_KIND:
        kinds = sorted(hk.ARRAYS_OF_KIND)
        print(f"usage: python -m pdbtool.search.precompile KIND (one of {kinds})", file=sys.stderr)
        return 2
    compile_search(int(args[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
