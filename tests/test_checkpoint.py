"""Resumable searches (pdbtool/search/checkpoint.py): a search stopped part way resumes from
its checkpoint to the answer and the node counts of a search that was never stopped; a
checkpoint of another search is refused, naming the difference; a kill leaves a whole file."""

import dataclasses
import functools
import json
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from pdbtool.cli.console import search_line
from pdbtool.errors import BadInput, LimitReached, PdbError
from pdbtool.heuristics.table_free import table_free
from pdbtool.kernels.tasks import FAR
from pdbtool.loading import load_heuristic
from pdbtool.search.checkpoint import (CLUSTER_ALGORITHM, UNDIGESTED, Checkpoint,
                                      Checkpointing, Identity)
from pdbtool.search.control import Earlier, SearchControl
from pdbtool.search.solver import Solver
from pdbtool.search.threads import search_parallel
from reference import ROOT, instances, interruptible, korf100, write_edited_checkpoint
from serving import HARD

KORF = {n: board for n, _, board in korf100()}


def search(solver, board, control):
    """One thread, the tasks shared from the first iteration of 1,000 nodes on (so that the
    small search of a test has several iterations to stop and resume in)."""
    return search_parallel(solver, solver.prepare(board, "blank-first"), control, threads=1,
                           serial_below=1000)


def test_stopped_by_its_budget_it_resumes_to_the_same_answer_and_counts(art_dir, tmp_path):
    solver = Solver(load_heuristic(art_dir / "15-5-5-5.h5"))
    straight = search(solver, KORF[88], SearchControl())
    path = tmp_path / "search.json"
    with pytest.raises(LimitReached):
        search(solver, KORF[88], SearchControl(budget=straight.nodes_generated // 2,
                                               checkpoint=Checkpointing(path, every=1e9)))
    saved = Checkpoint.from_json(path.read_text())
    assert straight.initial_h <= saved.bound <= straight.length
    assert saved.expanded > 0 and saved.finished  # iterations before, and tasks of this one
    said = []  # pdbtool solve says "resuming the search saved in FILE" from on_resume
    control = SearchControl(checkpoint=Checkpointing(path, on_resume=said.append))
    resumed = search(solver, KORF[88], control)
    assert said == [path]
    # the progress line's rate is this sitting's: what the earlier sittings counted is known
    assert control.earlier == (saved.generated + sum(r[2] for r in saved.finished.values()),
                               saved.seconds)
    assert control.generated == straight.nodes_generated  # counted across, one thread too
    assert "0.1M nodes/s, 0m01s elapsed (resumed: 900,000 nodes and 0m05s before)" in \
        search_line(5, 1_000_000, 1.0, Earlier(900_000, 5.0))
    assert (resumed.length, resumed.moves) == (straight.length, straight.moves)
    assert resumed.nodes_generated == straight.nodes_generated
    assert resumed.nodes_expanded == straight.nodes_expanded
    assert resumed.iterations == straight.iterations
    assert resumed.seconds >= saved.seconds


@pytest.mark.parametrize("threads", [1, 2])
def test_a_resumed_search_counts_its_saved_tasks_against_the_budget(tmp_path, threads):
    """The budget of a resumed search is the whole search's: the nodes of the tasks the
    saved iteration had finished count against it (they were added after the kernels had
    been given the whole rest: 40,625 nodes on a budget of 30,000)."""
    solver = Solver(table_free("manhattan", 4))
    board = (14, 13, 15, 7, 11, 12, 9, 5, 6, 0, 2, 1, 4, 8, 10, 3)
    path = tmp_path / "search.json"
    with pytest.raises(LimitReached):
        search(solver, board, SearchControl(budget=20_000, checkpoint=Checkpointing(path, every=1e9)))
    saved = Checkpoint.from_json(path.read_text())
    in_tasks = sum(row[2] for row in saved.finished.values())
    slack = 4_000  # the kernels look at the budget every few thousand nodes
    assert in_tasks > slack  # so that a search that did not count them overshoots by more
    with pytest.raises(LimitReached) as stop:
        search_parallel(solver, solver.prepare(board, "blank-first"), SearchControl(
            budget=30_000, checkpoint=Checkpointing(path, every=1e9)), threads=threads,
            serial_below=1000)
    nodes = int(re.search(r"after ([\d,]+) nodes", str(stop.value))[1].replace(",", ""))
    assert "budget" in str(stop.value) and nodes <= 30_000 + slack


def test_a_checkpoint_of_another_search_is_refused(art_dir, tmp_path):
    solver = Solver(load_heuristic(art_dir / "15-5-5-5.h5"))
    path = tmp_path / "search.json"
    with pytest.raises(LimitReached):
        search(solver, KORF[88], SearchControl(budget=200_000,
                                               checkpoint=Checkpointing(path, every=1e9)))
    with pytest.raises(BadInput, match="checkpoint of another search: its board"):
        search(solver, KORF[60], SearchControl(checkpoint=Checkpointing(path)))
    manhattan = Solver(table_free("manhattan", 4))
    with pytest.raises(BadInput, match="its heuristic 'pdb 15/5-5-5.*table_version"):
        search(manhattan, KORF[88], SearchControl(checkpoint=Checkpointing(path)))
    path.write_text('{"format": "something else"}')
    with pytest.raises(BadInput, match="is not a pdbtool checkpoint"):
        search(solver, KORF[88], SearchControl(checkpoint=Checkpointing(path)))


TYPED = (5, 1, 4, 10, 13, 6, 11, 7, 3, 2, 0, 8, 14, 9, 15, 12)  # 32 moves from blank-last


@functools.cache
def typed_length() -> int:
    """TYPED's distance to blank-last by the tests' own search from both ends (3 s)."""
    from reference import meet_in_the_middle

    return meet_in_the_middle(TYPED, (*range(1, 16), 0), (4, 4))


def test_the_refusal_shows_the_boards_as_typed_toward_any_goal(tmp_path):
    """Toward blank-last the kernels search a relabelled image of the board; the message
    names the boards the user typed."""
    solver = Solver(table_free("manhattan", 4))
    typed = TYPED
    other = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 0, 15)
    path = tmp_path / "search.json"

    def run(board, **limits):
        control = SearchControl(checkpoint=Checkpointing(path, every=1e9), **limits)
        return search_parallel(solver, solver.prepare(board, "blank-last"), control,
                               threads=1, serial_below=1)

    with pytest.raises(LimitReached):
        run(typed, budget=2_000)  # of 31,447 nodes
    assert Checkpoint.from_json(path.read_text()).identity.board != typed  # the image
    with pytest.raises(BadInput, match=rf"its board {re.escape(repr(typed))}, not "
                                       rf"{re.escape(repr(other))};"):
        run(other)
    saved = json.loads(path.read_text())
    saved["identity"]["board"] = [99] * 16  # edited: shown as saved, never a traceback
    write_edited_checkpoint(path, saved)
    with pytest.raises(BadInput, match=r"its board \(99, 99,"):
        run(typed)
    path.unlink()
    assert run(typed).length == typed_length()


EIGHT = (3, (8, 6, 7, 2, 5, 4, 3, 0, 1))


@pytest.mark.parametrize("shape, typed, now", [
    (4, (5, 1, 4, 10, 13, 6, 11, 7, 3, 2, 0, 8, 14, 9, 15, 12), EIGHT),
    ((3, 4), (4, 1, 2, 3, 5, 6, 0, 7, 8, 9, 10, 11), EIGHT),
    ((3, 4), (4, 1, 2, 3, 5, 6, 0, 7, 8, 9, 10, 11), ((4, 3), (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 0, 11)))])
def test_a_checkpoint_of_another_shape_shows_its_board_as_typed(tmp_path, shape, typed, now):
    """A 3x3 search given a 4x4's (or a 3x4's) checkpoint names both boards as typed toward
    blank-last (it showed the two images, boards nobody typed); so does a 4x3's given a
    3x4's."""
    path = tmp_path / "search.json"
    solver = Solver(table_free("manhattan", shape))
    control = SearchControl(checkpoint=Checkpointing(path, every=1e9), budget=30)
    with pytest.raises(LimitReached):
        search_parallel(solver, solver.prepare(typed, "blank-last"), control, threads=1,
                        serial_below=1)
    assert Checkpoint.from_json(path.read_text()).identity.board != typed  # the image
    small, other = Solver(table_free("manhattan", now[0])), now[1]
    with pytest.raises(BadInput, match=rf"its board {re.escape(repr(typed))}, not "
                                       rf"{re.escape(repr(other))};"):
        search_parallel(small, small.prepare(other, "blank-last"),
                        SearchControl(checkpoint=Checkpointing(path)), threads=1)


def test_one_goal_named_or_given_as_its_tiles_is_one_search(tmp_path):
    """--goal blank-last and --goal '1 2 ... 15 0' are one goal: a search saved toward one
    resumes toward the other (it was refused, "its goal 'blank-last', not '1,2,...,0'")."""
    solver = Solver(table_free("manhattan", 4))
    typed = TYPED
    path = tmp_path / "search.json"
    said = []

    def run(goal, **limits):
        control = SearchControl(checkpoint=Checkpointing(path, every=1e9, on_resume=said.append),
                                **limits)
        return search_parallel(solver, solver.prepare(typed, goal), control, threads=1,
                               serial_below=1)

    with pytest.raises(LimitReached):
        run("blank-last", budget=2_000)  # of 31,447 nodes
    assert run(",".join(map(str, range(1, 16))) + ",0").length == typed_length()
    assert said == [path]
    with pytest.raises(LimitReached):
        run("blank-last", budget=2_000)
    with pytest.raises(BadInput, match=r"search: its goal 'blank-last', not '2,1,3,[0-9,]*'; "
                                       "give another"):  # the goal alone: the boards (the
        run("2,1,3,4,5,6,7,8,9,10,11,12,13,15,14,0")  # goals' images) were named too


@pytest.mark.parametrize("field, value, says", [
    ("split", 10 ** 9, "deeper than any search of this program splits"),
    ("split", 0, "split is 0, not an integer from 1"),
    ("expanded", 10 ** 30, "expanded is 1000000000000000000000000000000, not an integer"),
    ("bound", 1_000_000, r"bound is 1000000, beyond the depth limit"),
    ("bound", "first's", r"the iterations' bounds \[.*\] do not rise"),
    ("finished", {"0": [10 ** 20, 1, 1]}, "finished task 0's figures"),
    ("finished", {"0": [0, 0, 0]}, "finished task 0's next bound is 0, not above the bound"),
    ("bound", -2, "bound is -2"),
    ("bound", "60", "bound is '60'"),
    ("expanded", True, "expanded is True"),
    ("seconds", float("nan"), "seconds is nan"),
    ("order", "reversed", "order is not an order of the tasks"),
    ("order", "short", "order is not an order of the tasks"),
    ("closest", "short", "closest does not list the"),
    ("closest", "huge", r"closest h is 1073741823: neither an h within the depth limit"),
    ("finished", {"999999": [60, 1, 1]}, "finished names task 999999"),
    ("finished", {"0": [60, -1, 5]}, "finished task 0's figures"),
    ("generated", 2 ** 63 - 1, r"generated, the finished tasks' included, is \d+: beyond 2\^63"),
    ("finished", {"0": [60, 1, 5, 3]}, r"finished task 0: \[60, 1, 5, 3\] is not \[next bound"),
    ("iterations", [{"bound": 50}], "iterations is not a list of"),
    ("finished", [], "finished is not an object"),
    ("identity", "15-puzzle", "identity is not an object"),
    ("identity", "a tile 'x'", "identity is not an object whose board is a list of tiles"),
])
def test_a_damaged_or_edited_checkpoint_is_refused(art_dir, tmp_path, field, value, says):
    """Each field of a checkpoint is checked before a search resumes from it: a tampered
    split depth would have listed the nodes of a depth no kernel can stop, other values a
    search that counts wrong or never ends."""
    solver = Solver(load_heuristic(art_dir / "15-5-5-5.h5"))
    path = tmp_path / "search.json"
    with pytest.raises(LimitReached):
        search(solver, KORF[88], SearchControl(budget=200_000,
                                               checkpoint=Checkpointing(path, every=1e9)))
    d = json.loads(path.read_text())
    if value == "reversed":
        value = d["order"][::-1] + [len(d["order"]) + 3]
    elif value == "short":
        value = d[field][:-1]
    elif value == "huge":  # the order's buckets would have been sized by it
        value = [(1 << 30) - 1] + d[field][1:]
    elif value == "a tile 'x'":  # (once a traceback: sorted() of the board to show it)
        value = {**d[field], "board": ["x"] + d[field]["board"][1:]}
    elif value == "first's":  # the bound of an iteration done before it
        value = d["iterations"][0]["bound"]
    d[field] = value
    write_edited_checkpoint(path, d)
    said = []
    with pytest.raises(BadInput, match=says):
        search(solver, KORF[88], SearchControl(checkpoint=Checkpointing(path,
                                                                        on_resume=said.append)))
    assert said == []  # never "resuming" a file that is then refused


def test_a_flipped_bit_is_refused_by_the_digest_and_so_is_an_undigested_file(art_dir, tmp_path):
    """The review's bit: "bound": 60 read as 64 resumed at 64 and answered two moves too
    long, said optimal. Every checkpoint now carries the digest of its content; one of the
    first format (none) is refused; nested lists past Python's recursion limit are a
    refusal, not a traceback."""
    solver = Solver(load_heuristic(art_dir / "15-5-5-5.h5"))
    path = tmp_path / "search.json"
    with pytest.raises(LimitReached):
        search(solver, KORF[88], SearchControl(budget=200_000,
                                               checkpoint=Checkpointing(path, every=1e9)))
    good = path.read_text()
    straight = search(solver, KORF[88], SearchControl())
    bound = json.loads(good)["bound"]
    for text in (good.replace(f'"bound": {bound},', f'"bound": {bound + 4},', 1),
                 "[" * 100_000 + "]" * 100_000):
        path.write_text(text)
        with pytest.raises(BadInput, match="is not a pdbtool checkpoint"):
            search(solver, KORF[88], SearchControl(checkpoint=Checkpointing(path)))
    # a flip no field's check can see (the bound's above is also refused by the finished
    # tasks' next bounds): a finished task's count, 2^10 more; only the digest refuses it
    d = json.loads(good)
    task, (next_bound, expanded, generated) = next(iter(d["finished"].items()))
    d["finished"][task] = [next_bound, expanded, generated + (1 << 10)]
    path.write_text(json.dumps(d))
    with pytest.raises(BadInput, match="does not match its digest"):
        search(solver, KORF[88], SearchControl(checkpoint=Checkpointing(path)))
    # the first format, without a digest (its tasks' counts not this version's): refused,
    # with what to do (it resumed: an edit of it went unseen, the counts matched no run)
    d = json.loads(good)
    del d["sha256"]
    path.write_text(json.dumps({**d, "format": UNDIGESTED}))
    with pytest.raises(BadInput, match="written by an older pdbtool.* remove it to start afresh"):
        search(solver, KORF[88], SearchControl(checkpoint=Checkpointing(path)))
    path.write_text(good)
    resumed = search(solver, KORF[88], SearchControl(checkpoint=Checkpointing(path)))
    assert (resumed.length, resumed.nodes_generated) == (straight.length, straight.nodes_generated)


def test_a_checkpoint_is_for_untraced_ida_and_a_killed_saves_leftovers_go(art_dir, tmp_path):
    """The library took a checkpoint for A* (and the others, and traced searches) and
    ignored it: nothing saved, nothing resumed. A save killed half way left
    <name>.<pid>.partial until a later save; the answer now removes it with the file. A
    name too long for the save's temporary file is said before the search."""
    from pdbtool.search.checkpoint import forget
    from pdbtool.tables.files import partial_name

    solver = Solver(load_heuristic(art_dir / "15-5-5-5.h5"))
    path = tmp_path / "search.json"
    for algorithm, events in (("astar", None), ("ida", np.zeros(1 << 10, np.int64))):
        with pytest.raises(BadInput, match="a checkpoint saves an untraced IDA"):
            solver.search(solver.prepare(KORF[88], "blank-first"), algorithm=algorithm,
                          events=events, control=SearchControl(checkpoint=Checkpointing(path)))
    left = tmp_path / "search.json.4000000.partial"  # a process long gone
    left.write_text("{")
    path.write_text("{}")
    forget(path)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(BadInput, match="cannot save the checkpoint there .File name too long"):
        Checkpointing(tmp_path / ("c" * 250))
    for every in (float("nan"), float("inf"), 0):
        with pytest.raises(BadInput, match="a positive number of seconds"):
            Checkpointing(path, every)
    assert not partial_name(path).exists()


def test_a_second_ctrl_c_during_the_last_save_does_not_lose_it(tmp_path):
    """Two Ctrl-C a few milliseconds apart: the second came while the first's cleanup
    stopped the threads, before its save, and nothing was saved. Made certain here: the
    second is sent by the first's halt itself. The save is made, then the second raised."""
    import threading

    from pdbtool.heuristics.table_free import table_free

    solver = Solver(table_free("manhattan", 4))
    path = tmp_path / "search.json"
    control = SearchControl(checkpoint=Checkpointing(path, every=1e9))
    halt, sent = control.halt, []

    def halt_and_ctrl_c(*args, **kwargs):
        if not sent:  # the first halt is the first Ctrl-C's cleanup: the second comes now
            sent.append(signal.SIGINT)
            os.kill(os.getpid(), signal.SIGINT)
        return halt(*args, **kwargs)

    control.halt = halt_and_ctrl_c
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(1.0, os.kill, args=(os.getpid(), signal.SIGINT))
    try:
        with pytest.raises(KeyboardInterrupt):
            timer.start()  # HARD with Manhattan distance: an hour or more of search
            search_parallel(solver, solver.prepare(HARD, "blank-first"), control, threads=2)
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    assert sent and path.exists(), "nothing saved"
    assert Checkpoint.from_json(path.read_text()).bound > 0


def test_a_cluster_checkpoint_saved_before_closest_first_is_accepted():
    """The cluster's checkpoints of the code before it searched closest first have no
    order: their batches are keyed by places in the frontier, which a resumed search
    builds again and checks them against (cluster.run.SearchRun.batches), and they resume
    in frontier order. The threads' always have one."""
    board = (1, 2, 3, 0, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)
    old = Checkpoint(Identity(board, "blank-first", "manhattan", None, CLUSTER_ALGORITHM, True),
                     256, 60, 1_000, 2_000, [{"bound": 58, "nodes": 2_000}], [], [],
                     {0: [62, 50, 90, 27], 27: [62, 10, 20, 27]}, 3.5)
    assert Checkpoint.from_json(old.to_json()) == old
    threads = dataclasses.replace(old, identity=old.identity._replace(algorithm="ida"))
    with pytest.raises(ValueError, match="finished names task 0, of 0"):
        Checkpoint.from_json(threads.to_json())


def test_a_cluster_checkpoint_whose_frontier_target_exceeds_its_frontier_is_refused():
    """The cluster's ``split`` is the frontier's size target, and the frontier is the first
    breadth-first level of at least that many nodes: an edited target (here 10^9) is
    refused before a resumed search expands a frontier of that size."""
    board = (1, 2, 3, 0, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)
    saved = Checkpoint(Identity(board, "blank-first", "manhattan", None, CLUSTER_ALGORITHM,
                                True), 256, 60, 1_000, 2_000, [{"bound": 58, "nodes": 2_000}],
                       list(range(446)), [FAR] * 446, {0: [62, 50, 90, 27]}, 3.5)
    assert Checkpoint.from_json(saved.to_json()) == saved
    with pytest.raises(ValueError, match="split is 1000000000, more than the 446 nodes"):
        Checkpoint.from_json(dataclasses.replace(saved, split=10 ** 9).to_json())


def test_only_a_damaged_checkpoint_is_said_to_be_removable(tmp_path):
    """A file that is not a checkpoint at all (a table, a --json answer: a name mixed up)
    is refused with the advice to name the checkpoint otherwise, never to remove it; a
    checkpoint cut short or edited may be removed to start afresh."""
    mine = Identity((1, 2, 3, 0), "blank-first", "manhattan", None, "ida", True)
    path = tmp_path / "run.json"
    for text, advice in ((b"\x89HDF\r\n\x1a\n\xff\xfe", "give the checkpoint another file name"),
                         (b'{"board": [1, 2, 3, 0], "length": 0}', "another file name"),
                         (b'{"format": "pdbtool-checkpoint-1", "identity": {"bo', "remove it"),
                         (b'{"format": "pdbtool-checkpoint-0"}', "remove it to start afresh")):
        path.write_bytes(text)
        with pytest.raises(BadInput, match="is not a pdbtool checkpoint") as e:
            Checkpointing(path).load(mine)
        assert advice in str(e.value) and ("remove" in advice) == ("remove" in str(e.value))


def test_the_options_are_checked(tmp_path):
    with pytest.raises(BadInput, match="positive"):
        Checkpointing(tmp_path / "c.json", every=0)
    with pytest.raises(BadInput, match="is a directory"):
        Checkpointing(tmp_path)
    for length in (249, 256):  # too long for its save's name, or for the name itself (the
        with pytest.raises(BadInput, match="File name too long"):  # second: exit 1 once)
            Checkpointing(tmp_path / ("c" * length))


def test_an_empty_file_is_a_checkpoint_not_saved_yet(tmp_path):
    """CP=$(mktemp) gives the search an empty file: no save is ever empty (each is renamed
    over the file whole), so it holds no search yet (it was refused as someone's file)."""
    path = tmp_path / "made-by-mktemp"
    path.write_bytes(b"")
    solver = Solver(table_free("manhattan", 3))
    keeper = Checkpointing(path)
    r = solver.search(solver.prepare((8, 6, 7, 2, 5, 4, 3, 0, 1), "blank-last"),
                      SearchControl(checkpoint=keeper))
    assert r.length == 31 and keeper.load(Identity((1, 0), "blank-first", "m", None, "ida",
                                                   True)) is None


def test_a_periodic_save_that_fails_is_a_warning_and_a_stop_s_an_error(tmp_path, caplog):
    """A full disk at a periodic save cost the whole search ("nothing was left behind",
    though the file held its last save, whole); now the search goes on and tries again an
    interval later. A save at a stop that fails is the command's error, naming what the
    file holds."""
    keeper = Checkpointing(tmp_path / "c.json", every=60)
    state = Checkpoint(Identity((1, 2, 3, 0), "blank-first", "manhattan", None, "ida", True),
                       1, 3, 0, 0, [], [0], [FAR], {}, 0.0)

    def full(*args, **kw):
        raise OSError(28, "No space left on device")

    keeper._last -= 61  # due
    with pytest.MonkeyPatch.context() as m:
        m.setattr("pathlib.Path.write_text", full)
        keeper.save_if_due(lambda: state)  # no exception: a warning
        assert "c.json: cannot save the search's progress (cannot write it in" in caplog.text
        assert ("No space left on device); the search goes on and tries again in 60 s"
                in caplog.text)
        assert not keeper.due()  # tried again an interval later
    keeper.save(state)
    with pytest.MonkeyPatch.context() as m:
        m.setattr("pathlib.Path.write_text", full)
        with pytest.raises(PdbError, match=r"c\.json: cannot save the search's progress \(.*"
                           r"No space left on device\); its last save there is whole: run "
                           "the same command to resume from it"):
            keeper.save(state)
    assert Checkpoint.from_json(keeper.path.read_text()) == state


def test_a_search_stopped_before_its_first_save_does_not_say_it_was_saved(tmp_path):
    path = tmp_path / "made-by-mktemp"
    path.write_bytes(b"")
    solver = Solver(table_free("manhattan", 4))
    with pytest.raises(LimitReached) as e:  # in the serial iterations: nothing saved
        solver.search(solver.prepare(HARD, "blank-first"),
                      SearchControl(budget=1, checkpoint=Checkpointing(path, every=1e9)))
    assert not getattr(e.value, "__notes__", None)


def test_a_second_search_on_a_held_file_never_says_it_resumes(tmp_path):
    """Solver.search reads the file before the kernels compile: it said "resuming the
    search saved in F", then that F was the checkpoint of a search running now."""
    solver = Solver(table_free("manhattan", 4))
    path = tmp_path / "search.json"
    with pytest.raises(LimitReached):
        solver.search(solver.prepare(HARD, "blank-first"),
                      SearchControl(budget=200_000, checkpoint=Checkpointing(path, every=1e9)))
    said = []
    with Checkpointing(path).holding():
        with pytest.raises(BadInput, match="running now"):
            solver.search(solver.prepare(HARD, "blank-first"),
                          SearchControl(checkpoint=Checkpointing(path, on_resume=said.append)))
    assert said == []


def test_one_keeper_is_held_by_one_thread_at_a_time(tmp_path):
    import threading

    keeper, refused = Checkpointing(tmp_path / "search.json"), []

    def other():
        try:
            with keeper.holding():
                pass
        except BadInput as e:
            refused.append(str(e))

    with keeper.holding(), keeper.holding():  # the same thread: held on
        t = threading.Thread(target=other)
        t.start()
        t.join()
    assert len(refused) == 1 and "running now (in this process)" in refused[0]
    with keeper.holding():  # let go: free again
        pass


def test_a_search_stopped_by_its_budget_says_where_its_progress_is(tmp_path):
    solver = Solver(table_free("manhattan", 4))
    path = tmp_path / "search.json"
    with pytest.raises(LimitReached) as e:  # (held in the search's envelope, which says it)
        solver.search(solver.prepare(HARD, "blank-first"),
                      SearchControl(budget=200_000, checkpoint=Checkpointing(path, every=1e9)))
    assert e.value.__notes__ == [f"the progress is saved in {path}: given it again, the search "
                                 "resumes there"]


def test_a_resumed_search_stopped_again_says_its_time_in_all_and_in_this_sitting(tmp_path):
    """Its counts are its sittings' together, its timeout this sitting's: "deadline reached
    (timeout 20 s) after 145,717,743 nodes (41.164 s, ...)" read as a timeout overrun."""
    solver = Solver(table_free("manhattan", 4))
    path = tmp_path / "search.json"
    for budget in (200_000, 400_000):
        with pytest.raises(LimitReached) as e:
            solver.search(solver.prepare(HARD, "blank-first"),
                          SearchControl(budget=budget, checkpoint=Checkpointing(path, every=1e9)))
        said = str(e.value)
    assert re.search(r"after [\d,]+ nodes \([\d.]+ s in all, [\d.]+ s in this sitting, last "
                     r"bound \d+\)$", said), said


def test_another_search_s_checkpoint_is_refused_before_the_kernels_compile(tmp_path, monkeypatch):
    solver = Solver(table_free("manhattan", 4))
    path = tmp_path / "search.json"
    with pytest.raises(LimitReached):
        search(solver, HARD, SearchControl(budget=200_000, checkpoint=Checkpointing(path, every=1e9)))
    other = Solver(table_free("manhattan", 4), prune=False)

    def compile_kernels(shared=True):
        raise AssertionError("compiled before the checkpoint was checked")

    monkeypatch.setattr(other, "compile_kernels", compile_kernels)
    with pytest.raises(BadInput, match="its prune True, not False"):
        other.search(other.prepare(HARD, "blank-first"), SearchControl(checkpoint=Checkpointing(path)))


def test_a_link_or_a_special_file_is_refused_before_the_search(tmp_path):
    """The saves never replace a link or a special file (atomic_output): said before the
    search, not at its first save a minute into it; and a FIFO would never be read."""
    link = tmp_path / "link.json"
    link.symlink_to(tmp_path / "target.json")  # dangling: as if no checkpoint yet
    with pytest.raises(BadInput, match="link.json exists and is a symbolic link"):
        Checkpointing(link)
    (tmp_path / "target.json").write_text("{}")
    with pytest.raises(BadInput, match="is a symbolic link"):
        Checkpointing(link)
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    with pytest.raises(BadInput, match="fifo.json exists and is a FIFO"):
        Checkpointing(fifo)


def pdbtool(*args, **kw):
    return subprocess.run([sys.executable, "-m", "pdbtool", *args], capture_output=True,
                          text=True, timeout=600, cwd=ROOT, **kw)


@pytest.mark.process
def test_the_command_line_resumes_and_removes_the_file_once_answered(art_dir, tmp_path):
    board = " ".join(map(str, KORF[88]))
    common = ["solve", "--artifacts", str(art_dir), "--goal", "blank-first", "--threads", "2",
              "--json", "--quiet"]
    straight = json.loads(pdbtool(*common, board).stdout)
    path = tmp_path / "search.json"
    stopped = pdbtool(*common, "--checkpoint", str(path), "--budget", "300000", board)
    assert stopped.returncode == 4 and path.is_file(), stopped.stderr
    resumed = pdbtool(*common, "--checkpoint", str(path), board)
    assert resumed.returncode == 0, resumed.stderr
    answer = json.loads(resumed.stdout)
    assert answer["length"] == straight["length"] and answer["optimal"]
    assert not path.exists()
    refused = pdbtool(*common, "--checkpoint", str(path), "--algorithm", "astar", board)
    assert refused.returncode == 2 and "--checkpoint saves one board's IDA* search" in refused.stderr


@pytest.mark.process
def test_a_killed_search_leaves_a_whole_checkpoint(tmp_path):
    """serving.HARD (80 moves) with Manhattan distance searches for an hour or more: it is
    still searching when it is killed, whenever that is, after its checkpoint has been saved
    a few times (Korf #88, here before, ends in about 20 s on two threads)."""
    path = tmp_path / "search.json"
    p = subprocess.Popen([sys.executable, "-m", "pdbtool", "solve", "--heuristic", "manhattan",
                          "--goal", "blank-first", "--threads", "2", "--quiet", "--checkpoint",
                          str(path), "--checkpoint-every", "0.05",
                          " ".join(map(str, HARD))], cwd=ROOT, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    try:
        deadline, saves = time.monotonic() + 120, set()
        while len(saves) < 5 and time.monotonic() < deadline and p.poll() is None:
            if path.exists():
                saves.add(path.stat().st_mtime_ns)
            time.sleep(0.01)
        assert len(saves) >= 5, p.stderr.read() if p.poll() is not None else "no saves"
        second = pdbtool("solve", "--heuristic", "manhattan", "--goal", "blank-first",
                         "--quiet", "--budget", "1000", "--checkpoint", str(path),
                         " ".join(map(str, HARD)))  # (the budget: ends at once if not refused)
        assert second.returncode == 2 and p.poll() is None, second.stderr
        assert f"search running now (process {p.pid})" in second.stderr, second.stderr
    finally:
        os.kill(p.pid, signal.SIGKILL)
        p.wait(timeout=60)
    saved = Checkpoint.from_json(path.read_text())
    assert saved.identity.heuristic == "manhattan" and saved.bound >= 58  # h of HARD
    with Checkpointing(path).holding():  # the kill let go of it
        pass


def test_one_file_is_the_checkpoint_of_one_search_at_a_time(tmp_path):
    path = tmp_path / "search.json"
    solver = Solver(table_free("manhattan", 4))
    with Checkpointing(path).holding():
        for _ in range(5):  # (each refusal asks the holder: none may wait on the ones before)
            with pytest.raises(BadInput, match=r"search\.json is the checkpoint of a search "
                               r"running now \(in this process\); wait for it"):
                solver.search(solver.prepare(KORF[88], "blank-first"),
                              SearchControl(checkpoint=Checkpointing(path)))
        with Checkpointing(tmp_path / "other.json").holding():  # another file: its own
            pass
    with Checkpointing(tmp_path / "." / "search.json").holding():  # let go: free again
        pass


@pytest.mark.process
def test_ctrl_c_saves_the_progress_before_the_command_ends(tmp_path):
    """Saves are 5 s apart: once the first is on disk, a Ctrl-C right after it must save
    again (the periodic save would come seconds after the command has ended). The board is
    one that Manhattan IDA* cannot solve within the test (Korf & Felner's 24-puzzle #1, 95
    moves, days of search), so the Ctrl-C always comes first; and SIGINT is the default in
    the child whatever this process inherited (a background job's children start with it
    ignored, and Python then installs no KeyboardInterrupt)."""
    path = tmp_path / "search.json"
    board = {n: b for n, _, b in instances("korf24_50.txt")}[1]
    p = subprocess.Popen(interruptible("pdbtool", "solve", "--heuristic", "manhattan",
                                       "--goal", "blank-first", "--threads", "2", "--quiet",
                                       "--checkpoint", str(path), "--checkpoint-every", "5",
                                       " ".join(map(str, board))),
                         cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not path.exists() and time.monotonic() < deadline and p.poll() is None:
            time.sleep(0.01)
        assert path.exists(), p.stderr.read() if p.poll() is not None else "no save"
        first = path.stat().st_mtime_ns, Checkpoint.from_json(path.read_text())
        p.send_signal(signal.SIGINT)
        assert p.wait(timeout=60) == 130, p.stderr.read()
        assert p.stderr.read().endswith(f"pdbtool: interrupted; the progress is saved in {path}: "
                                        "given it again, the search resumes there\n")
    finally:
        p.kill()
    last = Checkpoint.from_json(path.read_text())
    assert path.stat().st_mtime_ns != first[0]
    assert last.seconds > first[1].seconds


def test_a_thread_search_s_checkpoint_given_to_the_cluster_is_refused_before_ray_starts(
        tmp_path, monkeypatch, capsys):
    """`pdbtool solve --cluster` with another search's checkpoint (here a thread search's)
    is refused before the cluster is opened (it was refused only once Ray had started, a
    minute on a cold machine); the refusal names the difference."""
    from pdbtool.cli import main as cli

    solver = Solver(table_free("manhattan", 4))
    path = tmp_path / "search.json"
    with pytest.raises(LimitReached):
        search(solver, HARD, SearchControl(budget=200_000, checkpoint=Checkpointing(path, every=1e9)))
    assert path.is_file()

    def no_cluster(args):
        raise AssertionError("the cluster was opened")

    monkeypatch.setattr(cli, "open_cluster", no_cluster)
    code = cli.main(["solve", "--heuristic", "manhattan", "--goal", "blank-first", "--cluster",
                     "local", "--checkpoint", str(path), " ".join(map(str, HARD))])
    err = capsys.readouterr().err
    assert code == 2 and f"its algorithm 'ida', not '{CLUSTER_ALGORITHM}'" in err, err
    assert path.is_file()  # kept: it is the thread search's to resume

    with Checkpointing(path).holding():  # a search running on it: refused before Ray
        code = cli.main(["solve", "--heuristic", "manhattan", "--goal", "blank-first",
                         "--cluster", "local", "--checkpoint", str(path), " ".join(map(str, HARD))])
    err = capsys.readouterr().err  # (it said "resuming", started Ray, and was refused then)
    assert code == 2 and "is the checkpoint of a search running now (in this process)" in err
    assert "resuming" not in err


def test_a_checkpoint_split_by_the_board_s_width_still_resumes(tmp_path):
    """Until 2026-11-28 a board's split depth was chosen by its width (a 6x3 board's as a
    3x3's, at the 8-puzzle's branching factor): such a checkpoint, deeper than this
    version splits a 6x3 board, is resumed, not refused as damaged; one deeper than either
    rule still is."""
    import math

    from pdbtool import limits, puzzle
    from pdbtool.search.checkpoint import identity
    from pdbtool.search.threads import SHARED_PER_THREAD, resumed, split_depth

    solver = Solver(table_free("manhattan", "6x3"))
    board = puzzle.apply_blank_moves(puzzle.goal_board(solver.shape), "UULL", solver.shape)
    prepared = solver.prepare(board, "blank-last")
    by_width = max(1, math.ceil(math.log(SHARED_PER_THREAD * limits.MAX_THREADS) / math.log(1.73)))
    assert by_width > split_depth(solver.shape.cells, limits.MAX_THREADS)
    for split, resumes in ((by_width, True), (by_width + 1, False)):
        path = tmp_path / f"{split}.ckpt"
        Checkpointing(path).save(Checkpoint(identity(solver, prepared), split, 40, 0, 0, [],
                                            list(range(4)), [99] * 4, {}, 1.0))
        if resumes:
            assert resumed(solver, prepared, Checkpointing(path)).split == split
        else:
            with pytest.raises(BadInput, match="deeper than any search of this program splits"):
                resumed(solver, prepared, Checkpointing(path))
