"""``python -m pdbtool.search.precompile CLASS [PARENT_PID]``: IDA*'s search kernels for
the heuristics whose arrays are of one class (kernels.heuristic.ARRAYS_CLASSES: a kind,
and for tables whether the search looks ahead), compiled into numba's cache from
placeholder arrays (search.warm.aside's child process)."""

from __future__ import annotations

import sys

import numpy as np
from numba import typeof, types

from pdbtool.geometry import as_shape
from pdbtool.heuristics.table_free import Heuristic, board_arrays
from pdbtool.kernels import heuristic as hk
from pdbtool.kernels.ida import MAX_DEPTH
from pdbtool.search import warm
from pdbtool.search.control import Root, SearchControl
from pdbtool.search.solver import Solver
from pdbtool.signals import die_with_parent


def update_signature(H, board, pos, row) -> tuple:
    """The numba types of kernels.heuristic.h_update's arguments as IDA*'s loop and the
    root's check (broken_derivation) call it, with H, a board, its positions and a row
    of the state rows (tests/test_kernel_cache.py checks that they are the same)."""
    i64 = types.int64
    return (typeof(H), i64, typeof(board), typeof(pos), typeof(row), typeof(row), i64, i64,
            i64, i64, types.UniTuple(i64, 4))


def compile_search(cls: type, side: int = 4) -> None:
    """IDA*'s search kernels (kernels.ida.ida, dfs_loop, h_update) for heuristics whose
    arrays are of class ``cls``, compiled in this process from placeholder arrays: the
    root's h is 0, so the search returns at the root without reading them. The side does
    not change the types. h_update goes first, compiled without a call: once it is in the
    cache, a line on stdout says so to the parent, whose root's check (broken_derivation)
    calls it too (search.warm.wait_root_check)."""
    H = hk.heuristic_arrays(cls.KIND, bool(cls.AHEAD))
    assert type(H) is cls
    shape = as_shape(side)
    solver = Solver(Heuristic("placeholder", shape, H, hk.state_width(cls.KIND, shape)))
    board, pos = board_arrays(list(range(side * side)))
    rows = np.zeros((MAX_DEPTH + 2, solver.heuristic.width), np.int32)
    hk.h_update.compile(update_signature(H, board, pos, rows[0]))
    sys.stdout.buffer.write(warm.ROOT_CHECK_READY)
    sys.stdout.flush()
    solver.iterate(Root(board, pos, rows), 0, SearchControl(budget=1))


def main(argv=None) -> int:
    """CLASS [PARENT]: with PARENT (the starting process's pid) the child ends with it,
    even killed (a solve killed during its first compile left its child compiling)."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) not in (1, 2) or args[0] not in hk.ARRAYS_CLASSES or \
            (len(args) == 2 and not args[1].isdigit()):
        print("usage: python -m pdbtool.search.precompile CLASS [PARENT_PID] (CLASS one of "
              f"{', '.join(sorted(hk.ARRAYS_CLASSES))})", file=sys.stderr)
        return 2
    if len(args) == 2:
        die_with_parent(int(args[1]))
    compile_search(hk.ARRAYS_CLASSES[args[0]])
    return 0


if __name__ == "__main__":
    sys.exit(main())
