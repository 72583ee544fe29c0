"""Move-sequence pruning: the shipped words, their twins on a real board, the automaton."""

import itertools
import random
import runpy
import subprocess
import sys

import pytest

from pdbtool import puzzle
from pdbtool.heuristics.move_pruning import (MAX_LENGTH, MOVES, REVERSE, WORDS_FILE, allowed,
                                             automaton, pruning_fsm, shipped_words)
from pdbtool.heuristics.table_free import table_free
from pdbtool.search.solver import Solver
from reference import ROOT

GENERATOR = ROOT / "scripts" / "gen-forbidden-words"

SIDE = 17  # every word of up to 8 moves stays on the board from the centre


def apply(word, start=(SIDE * SIDE) // 2):
    """The board after the blank's moves from the centre of a big board, and the cells visited."""
    board = list(range(SIDE * SIDE))
    board[start], board[0] = 0, start
    b, cells = start, {start}
    step = {"U": -SIDE, "D": SIDE, "L": -1, "R": 1}
    for m in word:
        nb = b + step[m]
        board[b], board[nb] = board[nb], 0
        b = nb
        cells.add(b)
    return tuple(board), cells


def box(cells):
    rows, cols = [c // SIDE for c in cells], [c % SIDE for c in cells]
    return min(rows), max(rows), min(cols), max(cols)


def order(word):
    """Sort key of the search's move order U < D < L < R (not ASCII order)."""
    return [MOVES.index(m) for m in word]


def inside(inner, outer):
    return inner[0] >= outer[0] and inner[1] <= outer[1] and inner[2] >= outer[2] and inner[3] <= outer[3]


@pytest.mark.process
def test_shipped_file_is_what_the_generator_writes(tmp_path):
    """The shipped file is scripts/gen-forbidden-words' output for MAX_LENGTH.

    Regenerating all words up to length 14 takes about 100 s, so the generator runs (as a
    program) up to length 11 (about 4 s), and its file must equal the shipped words up
    to 11 rendered by the same function; the shipped file itself, header included, must
    be exactly that function's rendering of its words at MAX_LENGTH.
    """
    file_text = runpy.run_path(str(GENERATOR))["file_text"]
    words = shipped_words()
    assert WORDS_FILE.read_text() == file_text(words, MAX_LENGTH)
    assert max(map(len, words)) == MAX_LENGTH
    out = tmp_path / "words.txt"
    subprocess.run([sys.executable, str(GENERATOR), "--max-length", "11", str(out)], check=True,
                   capture_output=True)
    assert out.read_text() == file_text([w for w in words if len(w) <= 11], 11)


def test_every_short_word_has_an_earlier_twin_within_its_box():
    # Independent of the generator: enumerate every earlier word and compare whole boards.
    words = [w for w in shipped_words() if len(w) <= 8]
    assert words
    for w in words:
        target, cells = apply(w)
        wbox = box(cells)
        twin = None
        for length in range(0, len(w) + 1):
            for cand in map("".join, itertools.product(MOVES, repeat=length)):
                if length == len(w) and order(cand) >= order(w):
                    break
                board, ccells = apply(cand)
                if board == target and inside(box(ccells), wbox):
                    twin = cand
                    break
            if twin is not None:
                break
        assert twin is not None, f"forbidden word {w} has no earlier twin"


def contains_forbidden(word, words):
    bad = set(words) | {a + REVERSE[a] for a in MOVES}
    return any(word[i:j] in bad for i in range(len(word)) for j in range(i + 2, len(word) + 1))


def test_automaton_rejects_exactly_the_words_containing_a_forbidden_one():
    words = shipped_words()
    fsm = pruning_fsm(True)
    rng = random.Random(4)
    for w in words[:300]:
        assert allowed(fsm, w) == -1
    for _ in range(3000):
        word = "".join(rng.choice(MOVES) for _ in range(rng.randint(1, 16)))
        assert (allowed(fsm, word) < 0) == contains_forbidden(word, words), word
    # Disabled: only the immediate reversals are pruned.
    plain = automaton([])
    assert allowed(plain, "UD") == -1 and allowed(plain, "URDLURDL") >= 0


def test_pruning_keeps_lengths_and_saves_nodes(oracle8):
    rng = random.Random(9)
    pruned, plain = Solver(table_free("manhattan", 4)), Solver(table_free("manhattan", 4), prune=False)
    saved = 0
    for _ in range(20):
        b = puzzle.random_walk(4, 60, "blank-last", rng)
        a, c = pruned.solve(b), plain.solve(b)
        assert a.length == c.length
        assert puzzle.apply_tile_moves(b, a.moves) == puzzle.goal_board(4)
        saved += c.nodes_generated - a.nodes_generated
    assert saved > 0
    s8 = Solver(table_free("manhattan", 3))
    for b in list(oracle8)[::181]:  # 1,003 states spread over the whole space
        assert s8.solve(b, "blank-first").length == oracle8[b]
