import random

import pytest

from pdbtool import puzzle
from pdbtool.errors import BadInput, Unsolvable

LOYD = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 15, 14, 0)


def test_parse_spaces_commas_and_lists():
    assert puzzle.parse_board("1 2 3, 4 5 6,7 8 0") == (1, 2, 3, 4, 5, 6, 7, 8, 0)
    assert puzzle.parse_board(["1,2", "3", "0"]) == (1, 2, 3, 0)
    assert puzzle.shape_of(puzzle.parse_board(" ".join(map(str, range(25))))).rows == 5


@pytest.mark.parametrize("text, words", [
    ("", "empty"),
    ("1 2 3 4 5 6 7 8", "not a square"),
    ("1 2 3 4 5 6 7 8 8", "duplicate"),
    ("1 2 3 4 5 6 7 8 9", "out of range"),
    ("1 2 3 4 5 6 7 x 0", "not an integer"),
    ("1.5 2 3 0", "not an integer"),
    ("1,,2,3,0 4 5 6 7", "empty field"),
    ("1 2 3 4 5 6 7 8 0,", "empty field"),
    ("\u0661 2 3 4 5 6 7 8 0", "not an integer"),  # int() reads Arabic-Indic digits
    ("0", "not supported"),
    (" ".join(map(str, range(441))), "not supported"),  # 21x21: beyond even greedy
])
def test_bad_boards_name_the_problem(text, words):
    with pytest.raises(BadInput, match=words):
        puzzle.parse_board(text)


def test_validate_reads_text_and_refuses_what_is_not_a_whole_number():
    assert puzzle.validate("1 2 3 0") == puzzle.validate([1, 2, 3, 0]) == (1, 2, 3, 0)
    for board in ((1.5, 2, 3, 0), ["1", "2", "3", "0"], 7):
        with pytest.raises(BadInput, match="sequence of whole numbers"):
            puzzle.validate(board)


def test_what_an_app_passes_is_read_or_refused_in_words():
    """A numpy board is read as the solver reads it (parse_board raised AttributeError);
    rows, a bare number or a shape beyond the product's are BadInput, never a Python error
    or a board of 10,000 tiles."""
    import numpy as np

    assert puzzle.parse_board(np.arange(9)) == tuple(range(9))
    for board in (np.arange(9).reshape(3, 3), [[1, 2], [3, 0]], 7, None):
        with pytest.raises(BadInput, match="a board is a sequence of whole numbers"):
            puzzle.parse_board(board)
    with pytest.raises(BadInput, match="goal board: a board is a sequence of whole numbers"):
        puzzle.check_goal(np.arange(9).reshape(3, 3))
    for side in (1, 100):
        with pytest.raises(BadInput, match=f"board side {side} is not supported"):
            puzzle.random_board(side)


def test_loyd_14_15_is_unsolvable_with_reason():
    ok, why = puzzle.solvability(LOYD, "blank-last")
    assert not ok and "odd permutation" in why and "0 move" in why
    with pytest.raises(Unsolvable):
        puzzle.require_solvable(LOYD)


def test_parity_worked_examples():
    # Goal itself, one move away, and a single swap of two tiles, on 3x3 and 4x4.
    for side in (3, 4):
        g = puzzle.goal_board(side)
        assert puzzle.solvability(g)[0]
        assert puzzle.solvability(puzzle.apply_blank_moves(g, "U"))[0]
        swapped = list(g)
        swapped[0], swapped[1] = swapped[1], swapped[0]
        assert not puzzle.solvability(tuple(swapped))[0]
    # Even width: moving the blank up a row changes the inversion parity (seeds 002).
    assert puzzle.solvability(puzzle.apply_blank_moves(puzzle.goal_board(4), "UL"))[0]


def test_parity_matches_reachability(oracle8_last):
    rng = random.Random(3)
    for _ in range(2000):
        cells = list(range(9))
        rng.shuffle(cells)
        assert puzzle.solvability(tuple(cells), "blank-last")[0] == (tuple(cells) in oracle8_last)


def test_isomorphism_maps_goal_and_is_involution():
    for side in (2, 3, 4, 5):
        last, first = puzzle.goal_board(side, "blank-last"), puzzle.goal_board(side, "blank-first")
        assert puzzle.rotate_relabel(last) == first
        b = puzzle.random_board(side, "blank-last", random.Random(side))
        assert puzzle.rotate_relabel(puzzle.rotate_relabel(b)) == b
        assert puzzle.solvability(b, "blank-last")[0] == puzzle.solvability(puzzle.rotate_relabel(b), "blank-first")[0]


def test_moves_replay_and_blank_letters_agree():
    """The blank's path as the solver turns it into an answer (blank_path_to_moves): the
    tiles it moves and its letters, worked out here by hand, and both replay to the same
    board, there and back."""
    g = puzzle.goal_board(4)
    b = (1, 2, 3, 4,
         5, 7, 10, 8,
         9, 6, 0, 11,
         13, 14, 15, 12)  # the blank from cell 15 by U L L U R D: cells 11 10 9 5 6 10
    tiles, letters = puzzle.blank_path_to_moves(g, [11, 10, 9, 5, 6, 10])
    assert (tiles, letters) == ([12, 11, 10, 6, 7, 10], "ULLURD")
    assert puzzle.apply_tile_moves(g, tiles) == puzzle.apply_blank_moves(g, letters) == b
    back = puzzle.blank_path_to_moves(b, [6, 5, 9, 10, 11, 15])
    assert back == ([10, 7, 6, 10, 11, 12], "ULDRRD")
    assert puzzle.apply_tile_moves(b, back[0]) == puzzle.apply_blank_moves(b, back[1]) == g
    assert puzzle.blank_path_to_moves(b, []) == ([], "")
    with pytest.raises(BadInput, match="not next to the blank"):
        puzzle.apply_tile_moves(g, [1])
    with pytest.raises(BadInput, match="cannot go D"):
        puzzle.apply_blank_moves(g, "D")


def test_random_boards_are_solvable_and_walks_stay_solvable():
    rng = random.Random(7)
    for side in (2, 3, 4, 5):
        for goal in puzzle.GOALS:
            assert puzzle.solvability(puzzle.random_board(side, goal, rng), goal)[0]
            assert puzzle.solvability(puzzle.random_walk(side, 30, goal, rng), goal)[0]


def test_frames_map_goals_into_the_image():
    rng = random.Random(9)
    for side in (3, 4):
        n = side * side
        # The named goals keep their isomorphisms: identity and rotate_relabel.
        b = puzzle.random_board(side, "blank-last", rng)
        assert puzzle.frame(side, "blank-last").image(b) == puzzle.rotate_relabel(b)
        assert puzzle.frame(side, "blank-first").image(b) == b
        for blank in range(n):
            tiles = list(range(1, n))
            rng.shuffle(tiles)
            goal = tuple(tiles[:blank] + [0] + tiles[blank:])
            f = puzzle.frame(side, ",".join(map(str, goal)))
            corner = blank in (0, side - 1, n - side, n - 1)
            assert (f.goal_blank == 0) == corner
            image_goal = f.image(goal)
            if corner:
                assert image_goal == tuple(range(n))
            else:  # blank-first with the blank and the tile at the goal's blank cell swapped
                assert image_goal[0] == blank and image_goal[blank] == 0
            # A move in the image is the same move on the user's board.
            s = puzzle.random_board(side, ",".join(map(str, goal)), rng)
            z = s.index(0)
            c = [x for x in range(n) if abs(x // side - z // side) + abs(x % side - z % side) == 1][0]
            moved = list(s)
            moved[z], moved[c] = moved[c], 0
            assert f.image(tuple(moved)) == puzzle.apply_blank_moves(
                f.image(s), puzzle.step_letter(side, f.cells[z], f.cells[c]))
