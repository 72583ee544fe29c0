"""Move-sequence pruning: an automaton over the blank's moves that rejects duplicate paths.

A word (a string of U, D, L, R) is *forbidden* when an earlier word has the same effect:
same blank displacement, same rearrangement of tiles, and no larger bounding box. "Earlier"
means shorter, or of equal length and lexicographically smaller in U < D < L < R.
Replacing a forbidden word inside any path by its earlier twin gives a path that is
shorter or lexicographically smaller, reaches the same state, and stays on the board
(same bounding box). So the lexicographically smallest optimal solution contains no
forbidden word, and IDA* that never extends a path into one still finds an optimal
solution. The four immediate reversals (UD, DU, LR, RL) are forbidden too: that is the
usual parent pruning.

The words up to MAX_LENGTH are found by a breadth-first search over words on an unbounded
grid (``forbidden_words``). They are shipped as data in forbidden_words.txt, because the
search takes minutes; a test regenerates a shorter prefix and compares.
The words then become an Aho-Corasick automaton ``fsm[state, move] -> state``, or -1
where the move would complete a forbidden word; state 0 is the start.
"""

from __future__ import annotations

from collections import deque
from functools import lru_cache
from pathlib import Path

import numpy as np

from pdbtool.geometry import BLANK_STEP, DIRECTIONS

MOVES = DIRECTIONS  # the kernels' direction order: move k of a cell is MOVES[k]
REVERSE = {"U": "D", "D": "U", "L": "R", "R": "L"}
MAX_LENGTH = 14
WORDS_FILE = Path(__file__).with_name("forbidden_words.txt")


# Cells of the unbounded grid as (row + _GRID) * _ROW + col + _GRID: a word of up to
# _GRID - 1 moves stays in 0.._ROW-1 both ways, so a cell fits in _CELL_BITS bits.
_GRID, _ROW, _CELL_BITS = 16, 32, 10
_STEP = {m: dr * _ROW + dc for m, (dr, dc) in BLANK_STEP.items()}


def _cell(row: int, col: int) -> int:
    return (row + _GRID) * _ROW + col + _GRID


def _effect(blank: int, tiles: dict) -> int:
    """The blank's cell and the moved tiles (cell -> origin, in cell order) as one int."""
    key = blank
    for cell in sorted(tiles):
        key = (((key << _CELL_BITS) | cell) << _CELL_BITS) | tiles[cell]
    return key


def forbidden_words(max_length: int) -> list[str]:
    """Minimal forbidden words up to max_length (no proper substring is forbidden).

    A breadth-first search over the words in lexicographic order (so the first word to
    reach an effect is the earliest). An effect is the blank's cell and where each moved
    tile came from, packed into one int (``_effect``); ``boxes`` keeps, per effect, the
    bounding boxes of the words that reached it first. To 14 moves: 8.8 M effects, about
    100 s and 4.5 GB.
    """
    if max_length >= _GRID:
        raise ValueError(f"words of at most {_GRID - 1} moves fit the grid's cell numbers")
    forbidden: set[str] = set()
    home = _cell(0, 0)
    boxes: dict[int, list] = {_effect(home, {}): [(_GRID, _GRID, _GRID, _GRID)]}
    level = [("", home, (), (_GRID, _GRID, _GRID, _GRID))]  # word, blank, moved tiles, box
    for length in range(1, max_length + 1):
        nxt = []
        for word, blank, moved, box in level:  # in lexicographic order, so first = earliest
            for m in MOVES:
                if word and REVERSE[m] == word[-1]:
                    continue
                w = word + m
                if any(w[i:] in forbidden for i in range(1, len(w) - 1)):
                    continue  # contains a shorter forbidden word already
                cell = blank + _STEP[m]
                tiles = dict(moved)  # cell -> the cell its tile started from
                origin = tiles.pop(cell, cell)  # the tile that slides into the old blank cell
                if origin != blank:
                    tiles[blank] = origin
                r, c = divmod(cell, _ROW)
                wbox = (min(box[0], r), max(box[1], r), min(box[2], c), max(box[3], c))
                known = boxes.setdefault(_effect(cell, tiles), [])
                if any(b[0] >= wbox[0] and b[1] <= wbox[1] and b[2] >= wbox[2] and b[3] <= wbox[3]
                       for b in known):
                    forbidden.add(w)
                    continue
                known.append(wbox)
                if length < max_length:
                    nxt.append((w, cell, tuple(tiles.items()), wbox))
        level = nxt
    return sorted(forbidden, key=lambda w: (len(w), w))


def shipped_words() -> list[str]:
    lines = (line.strip() for line in WORDS_FILE.read_text().splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def automaton(words) -> np.ndarray:
    """Aho-Corasick over the words plus the four reversals: fsm[state, move index]."""
    words = list(words) + [a + REVERSE[a] for a in MOVES]
    goto = [[-1] * 4]
    terminal = [False]
    for w in words:
        s = 0
        for ch in w:
            k = MOVES.index(ch)
            if goto[s][k] < 0:
                goto[s][k] = len(goto)
                goto.append([-1] * 4)
                terminal.append(False)
            s = goto[s][k]
        terminal[s] = True
    fail = [0] * len(goto)
    fsm = np.zeros((len(goto), 4), dtype=np.int32)  # int16 below when it fits: cache-friendlier
    queue = deque()
    for k in range(4):
        t = goto[0][k]
        fsm[0, k] = t if t >= 0 else 0
        if t >= 0:
            queue.append(t)
    while queue:
        s = queue.popleft()
        terminal[s] = terminal[s] or terminal[fail[s]]  # a suffix is forbidden: so is this
        for k in range(4):
            t = goto[s][k]
            if t >= 0:
                fail[t] = fsm[fail[s], k]
                fsm[s, k] = t
                queue.append(t)
            else:
                fsm[s, k] = fsm[fail[s], k]
    # Entering a terminal state completes a forbidden word: that move is pruned.
    dead = np.array(terminal)
    fsm[dead[fsm]] = -1
    return fsm.astype(np.int16) if len(goto) < 2**15 else fsm


@lru_cache(maxsize=None)
def pruning_fsm(enabled: bool = True) -> np.ndarray:
    """The automaton the search uses; disabled, it forbids only immediate reversals."""
    return automaton(shipped_words() if enabled else [])


def allowed(fsm: np.ndarray, letters: str, state: int = 0) -> int:
    """Run letters through the automaton; the final state, or -1 if a word is forbidden."""
    for ch in letters:
        state = int(fsm[state, MOVES.index(ch)])
        if state < 0:
            return -1
    return state
