"""The numba kernels: plain functions over numpy arrays, no Python objects, no I/O.

Every ``@njit`` of the product is in this folder, and nothing here imports from the rest of
pdbtool. ``cache.use_kernel_cache`` runs first, before any kernel is decorated: numba keeps
the compiled kernels in a cache directory named for these sources (cache.py).

  intrinsics  LLVM intrinsics and compile-time constants (prefetch, atomics, unsigned ix)
  ranking     placements <-> ranks, regions of the blank
  build       the pattern database builder's BFS layers
  heuristic   the heuristics' kinds and state row: h from scratch, h after a move
  lookups     a pattern database lookup: its ranks after a move, its entry's index, the
              reads of an entry and of its parity bit
  table_free  the table-free heuristics' line and cycle pieces (Gaschnig, linear
              conflict, walking distance's tables)
  audit       the checks of a built table over every entry (histograms, parity; and
              pdbtool verify --exhaustive's moves)
  ida         IDA*'s depth-first loop (serial, below each task, on a cluster node)
  tasks       the shared iterations: tasks claimed by the threads, closest first
  ida_tt      IDA* with a transposition table, weighted IDA*
  state_key   a board packed into two words, and hash slots
  astar, rbfs, bfs, greedy, sma, frontier, bidir   the other algorithms
"""

from pdbtool.kernels.cache import use_kernel_cache

CACHE_DIR = use_kernel_cache()
