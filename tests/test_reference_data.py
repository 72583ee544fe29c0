"""The reference instances in tests/data are what their headers say they are."""

from pdbtool import puzzle
from reference import instances, korf100, manhattan


def test_korf100_boards_are_solvable_and_their_lengths_above_manhattan():
    for k, length, board in korf100():
        assert puzzle.solvability(board, "blank-first")[0], k
        assert manhattan(board) <= length


def goal_symmetry(board):
    """The board's image under the transpose, tiles renamed so that the blank-last goal
    maps to itself: the same distance to that goal."""
    transposed = [(c % 4) * 4 + c // 4 for c in range(16)]
    image = [0] * 16
    for cell, tile in enumerate(board):
        image[transposed[cell]] = 0 if tile == 0 else transposed[tile - 1] + 1
    return tuple(image)


def test_the_17_positions_at_80_moves_are_17_solvable_boards_closed_under_the_symmetry():
    rows = instances("hardest80.txt")
    boards = {board for _, _, board in rows}
    assert len(rows) == len(boards) == 17
    for k, length, board in rows:
        assert sorted(board) == list(range(16)) and length == 80, k
        assert puzzle.solvability(board, "blank-last")[0], k
        assert manhattan(puzzle.frame(4, "blank-last").image(board)) <= 80, k
        assert goal_symmetry(board) in boards, k
    assert goal_symmetry(puzzle.goal_board(4)) == puzzle.goal_board(4)
