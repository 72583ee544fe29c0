"""Independent oracles and small helpers the tests share (conftest.py holds only fixtures).

The oracles use no project code: a plain BFS over board states, and a 0/1-BFS over
abstract pattern states that a built table must equal entry for entry.
"""

from __future__ import annotations

import functools
import socket
from collections import deque
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"  # copies of shared/bench: instances and published counts
STEPS = ((-1, 0), (1, 0), (0, -1), (0, 1))


def rows_cols(shape) -> tuple[int, int]:
    """(rows, cols) of a square's side or of a (rows, cols) pair."""
    return (shape, shape) if isinstance(shape, int) else (int(shape[0]), int(shape[1]))


def neighbour_cells(cell: int, side):
    """The cells next to ``cell`` on a side x side board, or a rows x cols one when
    ``side`` is a pair (no project code)."""
    rows, cols = rows_cols(side)
    r, c = divmod(cell, cols)
    return [(r + dr) * cols + c + dc for dr, dc in STEPS
            if 0 <= r + dr < rows and 0 <= c + dc < cols]


def bfs_distances(goal, shape=None) -> dict[tuple[int, ...], int]:
    """Exact distance of every state reachable from ``goal`` (plain BFS); ``shape``: the
    board's (rows, cols), default the square of the count."""
    side = shape or int(len(goal) ** 0.5)
    dist = {tuple(goal): 0}
    queue = deque([tuple(goal)])
    while queue:
        s = queue.popleft()
        b = s.index(0)
        for nb in neighbour_cells(b, side):
            t = list(s)
            t[b], t[nb] = t[nb], 0
            t = tuple(t)
            if t not in dist:
                dist[t] = dist[s] + 1
                queue.append(t)
    return dist


def abstract_distances(tiles, side) -> dict[tuple[tuple[int, ...], int], int]:
    """Distance of every abstract state (cells of the tiles, blank cell) by 0/1-BFS: a
    move of a pattern tile costs 1, a move of the blank among the other cells 0; from the
    goal placement with the blank in its goal cell 0."""
    start = (tuple(tiles), 0)
    dist = {start: 0}
    dq = deque([start])
    while dq:
        state = dq.popleft()
        cells, b = state
        d = dist[state]
        for nb in neighbour_cells(b, side):
            if nb in cells:
                i = cells.index(nb)
                nxt, cost = (cells[:i] + (b,) + cells[i + 1:], nb), 1
            else:
                nxt, cost = (cells, nb), 0
            if nxt not in dist or dist[nxt] > d + cost:
                dist[nxt] = d + cost
                (dq.appendleft if cost == 0 else dq.append)(nxt)
    return dist


def table_entry(cells, blank: int, side, zero_aware: bool = True) -> int:
    """Where a table keeps (placement, blank cell), by the documented layout
    (docs/architecture.md), computed here from scratch: the lexicographic rank of the
    placement for region 0 (the region of the lowest free cell), else the map's secondary
    offset + (region - 1) * m! + order. Only the region numbering and the secondary
    offsets come from the project (ranking.regions)."""
    from math import comb, factorial

    from pdbtool.kernels.ranking import regions

    n, m = rows_cols(side)[0] * rows_cols(side)[1], len(cells)
    reg = regions(rows_cols(side), m, zero_aware)
    sorted_cells = sorted(cells)
    map_r = sum(comb(c, k + 1) for k, c in enumerate(sorted_cells))  # colex rank of the set
    region = int(reg.index[map_r, blank])
    if region == 0:
        lex, free = 0, list(range(n))
        for i, c in enumerate(cells):  # digit i: c's place among the cells still free
            lex = lex * (n - i) + free.index(c)
            free.remove(c)
        return lex
    order, free = 0, list(sorted_cells)
    for i, c in enumerate(cells):  # digit i: c's place among the occupied cells still free
        order = order * (m - i) + free.index(c)
        free.remove(c)
    return int(reg.secondary[map_r]) + (region - 1) * factorial(m) + order


def reference_table(tiles, side, zero_aware: bool = True) -> np.ndarray:
    """A pattern database from abstract_distances: per (placement, region of the blank),
    or the minimum over the blank's cells; 255 where unreached. Only the indexing uses
    the project's ranking (what the table is indexed by)."""
    from pdbtool.kernels.ranking import regions

    table = np.full(regions(rows_cols(side), len(tiles), zero_aware).entries, 255, np.uint8)
    for (cells, blank), d in abstract_distances(tiles, side).items():
        i = table_entry(cells, blank, side, zero_aware)
        table[i] = min(table[i], d)
    return table


# -- instances -----------------------------------------------------------------------------

def data_rows(name: str) -> list[list[int]]:
    """The rows of numbers of a data file in tests/data ('#' lines are comments)."""
    lines = (DATA / name).read_text().splitlines()
    return [[int(x) for x in line.split()] for line in lines
            if line.strip() and not line.startswith("#")]


def instances(name: str) -> list[tuple[int, int, tuple[int, ...]]]:
    """(id, published optimal length, board) of an instance file, in file order."""
    return [(row[0], row[1], tuple(row[2:])) for row in data_rows(name)]


def korf100() -> list[tuple[int, int, tuple[int, ...]]]:
    """Korf's 100 15-puzzle instances (blank-first goal)."""
    return instances("korf100.txt")


def korf_shortest(n: int) -> list[tuple[int, int, tuple[int, ...]]]:
    """The n shortest of Korf's 100."""
    return sorted(korf100(), key=lambda r: r[1])[:n]


# -- a plain IDA* that says which nodes it generates ---------------------------------------

EXPANDED, PRUNED, GOAL = "expanded", "pruned", "goal"


def manhattan(board, shape=None) -> int:
    """Manhattan distance to the blank-first goal (tile t belongs in cell t); ``shape``:
    the board's (rows, cols), default the square of the count."""
    cols = rows_cols(shape)[1] if shape else int(len(board) ** 0.5)
    return sum(abs(c // cols - t // cols) + abs(c % cols - t % cols)
               for c, t in enumerate(board) if t)


def walking_distance(board, shape) -> int:
    """Walking distance of a blank-first ``board`` of ``shape`` (rows, cols), from a plain
    BFS over the count matrices M[line][goal line] of its rows and of its columns (no
    project code): the tiles' moves between adjacent lines, each into the blank's line."""
    rows, cols = rows_cols(shape)

    def part(line_of, goal_of, lines, k):
        m = [[0] * lines for _ in range(lines)]
        for c, t in enumerate(board):
            if t:
                m[line_of(c)][goal_of(t)] += 1
        return _walking_bfs(lines, k)[tuple(map(tuple, m))]

    h = part(lambda c: c // cols, lambda t: t // cols, rows, cols)
    return h + part(lambda c: c % cols, lambda t: t % cols, cols, rows)


@functools.cache
def _walking_bfs(lines: int, k: int) -> dict:
    goal = tuple(tuple(k - (r == 0) if r == g else 0 for g in range(lines)) for r in range(lines))
    dist, queue = {goal: 0}, deque([goal])
    while queue:
        m = queue.popleft()
        blank = next(r for r in range(lines) if sum(m[r]) == k - 1)
        for src in (blank - 1, blank + 1):
            for g in range(lines) if 0 <= src < lines else ():
                if m[src][g]:
                    nxt = [list(r) for r in m]
                    nxt[src][g] -= 1
                    nxt[blank][g] += 1
                    nxt = tuple(map(tuple, nxt))
                    if nxt not in dist:
                        dist[nxt] = dist[m] + 1
                        queue.append(nxt)
    return dist


def meet_in_the_middle(board, goal, shape) -> int:
    """The exact distance from ``board`` to ``goal`` by breadth-first search from both ends,
    always growing the smaller frontier by a whole layer (no project code): for shapes whose
    whole state space is too large for bfs_distances (2x6: 239.5 million states)."""
    start, goal = tuple(board), tuple(goal)
    if start == goal:
        return 0
    seen = ({start: 0}, {goal: 0})
    frontier = ([start], [goal])
    while frontier[0] and frontier[1]:
        k = 0 if len(frontier[0]) <= len(frontier[1]) else 1
        mine, other = seen[k], seen[1 - k]
        nxt, best = [], None
        for s in frontier[k]:
            b = s.index(0)
            for nb in neighbour_cells(b, shape):
                t = list(s)
                t[b], t[nb] = t[nb], 0
                t = tuple(t)
                if t in other:
                    d = mine[s] + 1 + other[t]
                    best = d if best is None else min(best, d)
                if t not in mine:
                    mine[t] = mine[s] + 1
                    nxt.append(t)
        if best is not None:
            return best
        frontier = (nxt, frontier[1]) if k == 0 else (frontier[0], nxt)
    raise ValueError("the board cannot reach the goal")


def ida_nodes(board, h, automaton=None) -> tuple[list[tuple], list[dict]]:
    """Recursive IDA* on a blank-first board with the heuristic ``h`` (a function of the
    whole board): children in the blank's U, D, L, R order, pruned when f > bound, the goal
    when h = 0. ``automaton[state][direction]`` (the solver's move-pruning automaton; -1
    forbids the move), when given, is followed as the kernel follows it. Returns the nodes
    generated, as (iteration, g, h, blank cell, outcome), and the iterations
    [{"bound", "nodes"}]."""
    side = int(len(board) ** 0.5)
    nodes, iterations = [], []
    bound = h(board)
    if bound == 0:
        return nodes, iterations

    def search(b, blank, state, g, i):
        nonlocal next_bound, count
        for direction, cell in enumerate(steps(blank)):
            if cell is None:
                continue
            nxt = automaton[state][direction] if automaton is not None else 0
            if nxt < 0:
                continue
            child = list(b)
            child[blank], child[cell] = child[cell], 0
            hv = h(child)
            count += 1
            if g + 1 + hv > bound:
                nodes.append((i, g + 1, hv, cell, PRUNED))
                next_bound = min(next_bound, g + 1 + hv)
                continue
            if hv == 0:
                nodes.append((i, g + 1, hv, cell, GOAL))
                return True
            nodes.append((i, g + 1, hv, cell, EXPANDED))
            if search(child, cell, nxt, g + 1, i):
                return True
        return False

    def steps(blank):
        r, c = divmod(blank, side)
        return [(r + dr) * side + c + dc if 0 <= r + dr < side and 0 <= c + dc < side else None
                for dr, dc in STEPS]

    for i in range(1000):
        next_bound, count = 1 << 30, 0
        found = search(tuple(board), list(board).index(0), 0, 0, i)
        iterations.append({"bound": bound, "nodes": count})
        if found:
            return nodes, iterations
        bound = next_bound
    raise AssertionError("no solution within 1000 iterations")


# -- files, ports, answers -----------------------------------------------------------------

def flip_byte(path, position: int) -> None:
    """Invert every bit of one byte of a file in place."""
    with open(path, "r+b") as f:
        f.seek(position)
        byte = f.read(1)[0]
        f.seek(position)
        f.write(bytes([byte ^ 0xFF]))


def interruptible(module: str, *args: str) -> list[str]:
    """The command line of ``python -m module args...`` with SIGINT as a shell's foreground
    job has it. A signal ignored or blocked in this process (a test run in the background,
    `nohup ... &`, ignores it; other tests of the session may block it) is inherited
    across exec, and Python keeps an ignored SIGINT ignored: the command never saw the
    Ctrl-C and ran on to its answer. Set in the child's Python, not in a preexec_fn: a fork
    of a process with threads (gRPC's, other tests') that runs Python before its exec may
    die or hang there (a CI run's child ended before its first line, gRPC's poller
    complaining of a bad file descriptor)."""
    import sys

    prelude = ("import runpy, signal; "
               "signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT}); "
               "signal.signal(signal.SIGINT, signal.default_int_handler); "
               f"runpy.run_module({module!r}, run_name='__main__', alter_sys=True)")
    return [sys.executable, "-c", prelude, *args]


def write_edited_checkpoint(path, d: dict) -> None:
    """Write ``d`` (a checkpoint's JSON, edited) with its digest made to match again, as
    whoever edits the file on purpose can: the checks behind the digest see it."""
    import json

    from pdbtool.search.checkpoint import FORMAT, digest

    d = {k: v for k, v in d.items() if k not in ("format", "sha256")}
    Path(path).write_text(json.dumps({"format": FORMAT, **d, "sha256": digest(d)}))


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def assert_replays(result: dict, board, goal: str) -> None:
    """A solve result's tile moves and blank letters both take ``board`` to the goal."""
    from pdbtool import puzzle

    shape = (result["rows"], result["cols"]) if result.get("rows") else None
    target = puzzle.goal_board(puzzle.shape_of(board, shape), goal)
    assert puzzle.apply_tile_moves(board, result["moves"], shape) == target
    assert puzzle.apply_blank_moves(board, result["blank_moves"], shape) == target
    assert len(result["moves"]) == len(result["blank_moves"]) == result["length"]
