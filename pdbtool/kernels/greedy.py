"""The constructive solver of seed 000 section 10.2: polynomial, far from optimal.

Towards the blank-last goal (tile c + 1 at cell c, the blank in the bottom-right corner), on
a board of ``s`` columns and any number of rows (2 or more of each):

1. rows 0 .. rows-3, top down: the tiles of the row left to right, each walked to its cell
   one step at a time (the blank routed round it by BFS, never through a fixed cell); the
   row's last two tiles A, B by the usual trick: A into B's cell, B below it, then the
   blank from A's cell goes right and down;
2. the last two rows, column by column (0 .. s-3), by the same trick transposed;
3. the final 2x2: the blank goes round it once, the way that brings the three tiles home.

Every step is a real move recorded as the cell the blank enters, so the answer replays.
About 5 s^3 moves; O(s^5) work with the BFS routing, milliseconds for 20x20.
"""

import numpy as np
from numba import njit

OK, FAILED = 0, 1


@njit(cache=True, nogil=True, inline="always")
def step(board, pos, c, out, length):
    """The blank moves into the adjacent cell c."""
    b = pos[0]
    t = board[c]
    board[b] = t
    pos[t] = b
    board[c] = 0
    pos[0] = c
    out[length] = c
    return length + 1


@njit(cache=True, nogil=True)
def route(board, pos, nbr, nnbr, blocked, target, out, length, prev, queue):
    """Walk the blank to ``target`` by a shortest path avoiding blocked cells; the new
    length, or -1 if it cannot get there (or out is full)."""
    b = pos[0]
    if b == target:
        return length
    prev[:] = -2
    prev[b] = -1
    queue[0] = b
    head, tail = 0, 1
    while head < tail and prev[target] == -2:
        x = queue[head]
        head += 1
        for k in range(nnbr[x]):
            y = nbr[x, k]
            if prev[y] == -2 and not blocked[y]:
                prev[y] = x
                queue[tail] = y
                tail += 1
    if prev[target] == -2:
        return -1
    return follow(board, pos, prev, b, target, queue, out, length)


@njit(cache=True, nogil=True, inline="always")
def follow(board, pos, parent, start, end, queue, out, length):
    """Make the moves of a BFS path from state ``start`` to ``end`` (parent[] links them;
    a state's blank cell is state % cells), reusing ``queue`` for the path backwards.
    Returns the new length, or -1 if out is too small."""
    n = board.shape[0]
    m = 0
    z = end
    while z != start:
        queue[m] = z % n
        m += 1
        z = parent[z]
    if length + m > out.shape[0]:
        return -1
    for i in range(m - 1, -1, -1):
        length = step(board, pos, queue[i], out, length)
    return length


@njit(cache=True, nogil=True)
def place(board, pos, s, nbr, nnbr, blocked, tile, target, out, length, prev, queue):
    """Walk ``tile`` to ``target``, one cell at a time, closer each step."""
    tr, tc = target // s, target % s
    while pos[tile] != target and length >= 0:
        p = pos[tile]
        pr, pc = p // s, p % s
        moved = False
        for attempt in range(2):
            q = -1
            if attempt == 0 and pc != tc:
                q = p + (1 if tc > pc else -1)
            elif attempt == 1 and pr != tr:
                q = p + (s if tr > pr else -s)
            if q < 0 or blocked[q]:
                continue
            blocked[p] = True
            n2 = route(board, pos, nbr, nnbr, blocked, q, out, length, prev, queue)
            blocked[p] = False
            if n2 >= 0 and n2 < out.shape[0]:
                length = step(board, pos, p, out, n2)
                moved = True
                break
        if not moved:  # the blank is boxed in behind the tile: search the pair
            return place_bfs(board, pos, nbr, nnbr, blocked, tile, target, out, length)
    return length


@njit(cache=True, nogil=True)
def place_bfs(board, pos, nbr, nnbr, blocked, tile, target, out, length):
    """The fewest blank moves that bring ``tile`` to ``target``: BFS over (tile cell,
    blank cell) pairs in the free cells. For the few placements the step-by-step walk
    cannot make (a blank boxed in between fixed cells and the tile)."""
    n = board.shape[0]
    parent = np.full(n * n, -1, np.int64)
    queue = np.empty(n * n, np.int64)
    start = pos[tile] * n + pos[0]
    parent[start] = start
    queue[0] = start
    head, tail = 0, 1
    found = -1
    while head < tail and found < 0:
        x = queue[head]
        head += 1
        tc, bc = x // n, x % n
        for k in range(nnbr[bc]):
            y = nbr[bc, k]
            if blocked[y]:
                continue
            nt = bc if y == tc else tc
            z = nt * n + y
            if parent[z] < 0:
                parent[z] = x
                queue[tail] = z
                tail += 1
                if nt == target:
                    found = z
                    break
    if found < 0:
        return -1
    return follow(board, pos, parent, start, found, queue, out, length)


@njit(cache=True, nogil=True)
def pair(board, pos, s, nbr, nnbr, blocked, xa, xb, d, out, length, prev, queue):
    """The last two tiles A, B of a row (xb right of xa; B waits below xb: d = s) or of a
    column (xb below xa; B waits right of xb: d = 1): A into xb, B to xb + d, then the
    blank from xa pulls A into xa and B into xb. Both end fixed; returns the new length
    or -1."""
    if not (board[xa] == xa + 1 and board[xb] == xb + 1):
        A, B = xa + 1, xb + 1
        for _ in range(4):
            length = place(board, pos, s, nbr, nnbr, blocked, A, xb, out, length, prev, queue)
            if length < 0:
                return -1
            # With A in xb, xa is a pocket whose one exit is xa + d. B inside it, or at
            # its exit with the blank inside, can never get out: park B away and retry.
            if pos[B] != xa and not (pos[0] == xa and pos[B] == xa + d):
                break
            safe = xa + 2 * s if d == s else xa + s + 2
            length = place(board, pos, s, nbr, nnbr, blocked, B, safe, out, length, prev, queue)
            if length < 0:
                return -1
        blocked[xb] = True
        length = place(board, pos, s, nbr, nnbr, blocked, B, xb + d, out, length, prev, queue)
        if length < 0:
            return -1
        blocked[xb + d] = True
        length = route(board, pos, nbr, nnbr, blocked, xa, out, length, prev, queue)
        if length < 0 or length + 2 > out.shape[0]:
            return -1
        length = step(board, pos, xb, out, length)
        length = step(board, pos, xb + d, out, length)
        blocked[xb + d] = False
    blocked[xa] = True
    blocked[xb] = True
    return length


@njit(cache=True, nogil=True)
def greedy(board, pos, s, nbr, nnbr, out):
    """Solve towards the blank-last goal; returns (status, length), out[:length] the
    blank's cells. FAILED if the board is unsolvable (or out is too small). ``s``: the
    board's columns; its rows follow from its cells."""
    n = board.shape[0]
    rows = n // s
    blocked = np.zeros(n, np.bool_)
    prev = np.empty(n, np.int64)
    queue = np.empty(n, np.int64)
    length = 0
    for r in range(rows - 2):
        for c in range(s - 2):
            x = r * s + c
            length = place(board, pos, s, nbr, nnbr, blocked, x + 1, x, out, length, prev, queue)
            if length < 0:
                return FAILED, 0
            blocked[x] = True
        length = pair(board, pos, s, nbr, nnbr, blocked, r * s + s - 2, r * s + s - 1, s, out,
                      length, prev, queue)
        if length < 0:
            return FAILED, 0
    for c in range(s - 2):
        length = pair(board, pos, s, nbr, nnbr, blocked, (rows - 2) * s + c, (rows - 1) * s + c, 1,
                      out, length, prev, queue)
        if length < 0:
            return FAILED, 0
    x0 = (rows - 2) * s + s - 2
    above, across, beside = x0 + 1, x0, x0 + s  # the final 2x2's cells but its corner
    length = route(board, pos, nbr, nnbr, blocked, n - 1, out, length, prev, queue)
    if length < 0:
        return FAILED, 0
    a, b, c = board[above], board[across], board[beside]  # home: x0 + 2, x0 + 1, x0 + s + 1
    if a == x0 + 2 and b == x0 + 1 and c == x0 + s + 1:
        return OK, length
    # the blank once round either way moves the three tiles one place on, each way the
    # other direction: the one that brings them home (going round the same way twice was
    # 4 moves more)
    if b == x0 + 2 and c == x0 + 1 and a == x0 + s + 1:
        cycle = (above, across, beside, n - 1)
    elif c == x0 + 2 and a == x0 + 1 and b == x0 + s + 1:
        cycle = (beside, across, above, n - 1)
    else:
        return FAILED, 0
    if length + 4 > out.shape[0]:
        return FAILED, 0
    for cell in cycle:
        length = step(board, pos, cell, out, length)
    return OK, length
