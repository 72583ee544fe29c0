"""SolveBatch: many boards on one call, answered as Solve answers each (ids echoed, any
order), with back-pressure, the call's deadline and cancellation stopping every search;
`pdbd query --file` on top of it."""

import itertools
import json
import logging
import random
import threading

import grpc
import pytest

from pdbd.batch import Callbacks, Window
from pdbd.client import (MAX_PER_MESSAGE, Chunks, Runs, ServerUnavailable, SolverClient,
                         board_tiles)
from pdbd.jobs import FastLane, Lane
from pdbd.v1 import solver_pb2 as pb
from pdbtool import puzzle
from pdbtool.errors import BadInput, LimitReached, Unsolvable
from pdbtool.geometry import Shape
from pdbtool.selection import load_directory
from serving import (EASY15, HARD, LOYD, info, pool_submissions, run_cli, running_daemon,
                     sample, scrape, wait_for, worker_free_within)

pytestmark = pytest.mark.process


def test_a_batch_answers_every_board_as_solve_would(served, oracle8_last):
    boards = random.Random(6).sample(sorted(oracle8_last), 300)
    mixed = [*boards, [1, 2, 3], "1 2 x", LOYD, EASY15, list(range(36)), None]
    port = served.metrics.serve("127.0.0.1", 0)
    try:
        before = scrape(port)
        with SolverClient(served.address) as c:
            out = list(c.solve_batch(mixed))
        after = scrape(port)
    finally:
        served.metrics.close()
    assert sorted(i for i, _ in out) == list(range(len(mixed)))  # each id once
    got = dict(out)
    assert all(got[i].length == oracle8_last[b] for i, b in enumerate(boards))
    n = len(boards)
    assert isinstance(got[n], BadInput) and "not a square" in str(got[n])
    assert isinstance(got[n + 1], BadInput) and "not an integer" in str(got[n + 1])  # client-side
    assert isinstance(got[n + 2], Unsolvable)
    assert got[n + 3].length == 2
    assert isinstance(got[n + 4], BadInput) and "no loaded table serves 6x6" in str(got[n + 4])
    # not a board at all: its own BadInput (a TypeError failed the whole call)
    assert isinstance(got[n + 5], BadInput) and "not a board: None" in str(got[n + 5])

    def grew(name, **labels):
        return sample(after, name, **labels) - sample(before, name, **labels)

    assert grew("pdbd_requests_total", method="pdbd.v1.Solver/SolveBatch", code="OK") == 1
    assert grew("pdbd_search_duration_seconds_count", size="3x3") == n
    assert grew("pdbd_rejected_total", reason="queue-full") == 0


def test_a_batchs_boards_are_searched_in_the_fast_lane_while_it_is_free(served, oracle8_last,
                                                                        monkeypatch):
    """Every board of a batch is searched in the fast lane (on the batch's reader thread)
    when no other call wants it, and answered as Solve answers it."""
    boards = random.Random(9).sample(sorted(oracle8_last), 50)
    pooled = pool_submissions(served, monkeypatch)
    with SolverClient(served.address) as c:
        out = dict(c.solve_batch(boards))
    assert all(out[i].length == oracle8_last[b] for i, b in enumerate(boards))
    assert pooled == []  # none went to the pool


def test_a_batch_never_takes_the_fast_lane_from_a_call_waiting_for_it():
    """A batch's board (``deferring``) takes a lane slot only when one is free at once and
    no other call waits for one; a waiting call gets the next slot freed."""
    idle = [True]  # whether the pool has a worker free
    lane = FastLane(Lane(slots=3, per_client=1, wait=30), pool_idle=lambda: idle[0])
    assert lane._enter("a") and lane._enter("b")
    assert not lane._enter("a")  # a's share taken, a worker free: to the pool at once
    entered = threading.Event()
    idle[0] = False  # the workers busy: a's second search waits for a's slot instead
    waiter = threading.Thread(target=lambda: lane._enter("a") and entered.set())
    try:
        waiter.start()
        assert wait_for(lambda: lane._waiting == 1, 10)
        assert not lane._enter("batch", deferring=True)  # a slot is free, but a call waits
        lane._leave("a")
        assert entered.wait(10)  # the waiting call has the slot freed
        waiter.join(10)
        entered.clear()
        assert lane._enter("c")  # every slot busy (a, b, c)
        waiter = threading.Thread(target=lambda: lane._enter("d") and entered.set())
        waiter.start()  # another client waits for a slot, whatever the pool
        assert wait_for(lambda: lane._waiting == 1, 10)
        lane._leave("c")
        assert entered.wait(10)
    finally:
        waiter.join(10)
    assert not lane._enter("batch", deferring=True)  # none free (a, b, d)
    lane._leave("a")
    assert lane._enter("batch", deferring=True)  # free, nobody waiting
    for client in ("batch", "b", "d"):
        lane._leave(client)
    assert lane._busy == 0 and lane._waiting == 0


def test_a_batch_larger_than_the_queue_waits_for_room(slow):
    """One thread, a queue of one: ten searches that each end on their node budget are all
    answered (with their own limit), none refused for a full queue."""
    with SolverClient(slow.address) as c:
        out = dict(c.solve_batch([HARD] * 10, goal="blank-first", budget=200_000,
                                 deadline=300))  # a backstop: the budgets end them first
    assert sorted(out) == list(range(10))
    for e in out.values():
        assert isinstance(e, LimitReached) and e.limit == "node-budget", e
    assert info(slow)["counters"]["running"] == 0


def test_a_batch_board_that_finds_the_queue_taken_after_all_waits_for_room(slow, monkeypatch):
    """The pool had room when the board was read, but another call took the last slot
    while the board searched in the fast lane: the board waits for room again (it was
    refused queue-full, which an item of a batch never is). The race is made certain here:
    the pool refuses each board's first submission as full."""
    from pdbd.jobs import QueueFull, WorkerPool

    submit, calls = WorkerPool.submit, []

    def full_once(self, job):  # the boards come one after another: each one's first try
        calls.append(job)
        if len(calls) % 2:
            raise QueueFull("taken by another call meanwhile")
        return submit(self, job)

    monkeypatch.setattr(FastLane, "run", lambda self, job, client, deferring=False: False)
    monkeypatch.setattr(WorkerPool, "submit", full_once)
    before = info(slow)["counters"]
    with SolverClient(slow.address) as c:
        out = dict(c.solve_batch([EASY15] * 3, goal="blank-last"))
    assert sorted(out) == [0, 1, 2] and all(r.length == 2 for r in out.values()), out
    assert len(calls) == 6
    # each board one request, none refused, each the same job tried again (it was admitted
    # again: a new job, its lane search lost, counted as a second request and a refusal)
    after = info(slow)["counters"]
    assert (after["requests"] - before["requests"], after["rejected"]) == (3, before["rejected"])
    assert calls[0::2] == calls[1::2]


def test_answers_are_sent_while_a_board_waits_for_the_pool(slow, monkeypatch):
    """A board that waits for a slot of the pool (another call took the last one) holds no
    answer back: the boards answered before it in the fast lane are sent meanwhile (they
    waited with it, and a deadline passing then lost them). Made certain here: the pool
    refuses the last board until the client has the three answers before it."""
    import time

    from pdbd.jobs import QueueFull, WorkerPool

    last = tuple(range(1, 13)) + (0, 13, 14, 15)  # three moves from blank-last
    released = threading.Event()
    run, submit = FastLane.run, WorkerPool.submit

    def lane(self, job, client, deferring=False):
        return False if job.prepared.board == last else run(self, job, client, deferring)

    def full_for_last(self, job):
        if job.prepared.board == last and not released.wait(0) and time.monotonic() < give_up:
            raise QueueFull("taken by another call meanwhile")
        return submit(self, job)

    monkeypatch.setattr(FastLane, "run", lane)
    monkeypatch.setattr(WorkerPool, "submit", full_for_last)
    give_up = time.monotonic() + 30  # (the code before: the three came only then)
    got = []
    with SolverClient(slow.address) as c:
        for index, result in c.solve_batch([EASY15] * 3 + [last], goal="blank-last"):
            got.append((index, result.length))
            if len(got) == 3:
                released.set()
    assert sorted(got) == [(0, 2), (1, 2), (2, 2), (3, 3)] and got[3] == (3, 3), got
    assert time.monotonic() < give_up


def test_results_go_several_a_message_however_late_the_first_message_is_read(served,
                                                                             monkeypatch):
    """The sender waits for results as soon as the call starts; the reader marks the call
    as sending items when it reads the first message. Read late (made certain here: the
    first message held back a moment), the first results went one a message, which the
    client takes for a server that predates items: the whole batch failed."""
    import threading

    from pdbd import batch
    from pdbd import servicer as servicer_module

    solve_batch, ready, waiting = servicer_module.solve_batch, batch.ready, threading.Event()

    def sender_waits(*args, **kw):
        waiting.set()
        return ready(*args, **kw)

    def read_late(servicer, requests, context):
        def late():
            for k, message in enumerate(requests):
                if k == 0:
                    assert waiting.wait(30)  # the sender waits for results by now
                yield message
        return solve_batch(servicer, late(), context)

    monkeypatch.setattr(batch, "ready", sender_waits)
    monkeypatch.setattr(servicer_module, "solve_batch", read_late)
    with SolverClient(served.address) as c:
        out = dict(c.solve_batch([EASY15] * 4))
    assert sorted(out) == [0, 1, 2, 3] and all(r.length == 2 for r in out.values()), out


def test_cancelling_or_a_deadline_stops_every_search_of_the_batch(slow, slow_stub):
    requests = [pb.BatchRequest(id=i, request=pb.SolveRequest(tiles=HARD, goal="blank-first"))
                for i in range(4)]
    call = slow_stub.SolveBatch(iter(requests), timeout=60)
    assert wait_for(lambda: info(slow)["counters"]["running"] == 1, 5)
    call.cancel()
    assert worker_free_within(slow, 2)[0]
    with SolverClient(slow.address) as c, pytest.raises(LimitReached, match="deadline"):
        list(c.solve_batch([HARD] * 4, goal="blank-first", deadline=0.3))
    assert worker_free_within(slow, 2)[0]
    with grpc.insecure_channel(slow.address) as channel, pytest.raises(grpc.RpcError) as e:
        raw = channel.stream_stream("/pdbd.v1.Solver/SolveBatch")  # bytes, as given
        list(raw(iter([b"\xff"]), timeout=10))  # undecodable
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_query_file_prints_in_the_files_order(served, tmp_path, capsys):
    f = tmp_path / "boards.txt"
    f.write_bytes(b"1 2 3 4 5 6 0 7 8\n# a comment\n\n1 2 3\n\xff\xfe\n"
                  + " ".join(map(str, LOYD)).encode() + b"\n1 2 3 4 5 0 7 8 6\n")
    code, out, err = run_cli(capsys, "query", "--server", served.address, "--file", str(f))
    assert code == 3, err
    assert [line for line in out.splitlines() if line.startswith("length")] == [
        "length 2  moves 7 8", "length 1  moves 6"]
    assert [line for line in out.splitlines() if line.startswith("line")] == [
        "line 1: board 1 2 3 4 5 6 0 7 8", "line 7: board 1 2 3 4 5 0 7 8 6"]
    assert [line.split(":")[1].strip() for line in err.splitlines()] == ["line 4", "line 5",
                                                                          "line 6"]
    assert "not UTF-8" in err and "unsolvable" in err


def test_query_file_past_its_deadline_prints_what_was_answered(slow, tmp_path, capsys, caplog):
    """--deadline covers the whole batch: when it passes, the answers received are printed
    in the file's order and the lines left unanswered named (the answers waiting behind an
    unanswered line were lost, the unanswered lines never said)."""
    from serving import HARDEST  # (hours with Manhattan distance: never answered here)

    caplog.set_level(logging.INFO, "pdbd")

    def stopped():
        return [r for r in caplog.records if "stopped: deadline" in r.getMessage()]

    f = tmp_path / "boards.txt"
    f.write_text("\n".join(" ".join(map(str, b)) for b in (EASY15, HARDEST, EASY15)) + "\n")
    code, out, err = run_cli(capsys, "query", "--server", slow.address, "--file", str(f),
                             "--deadline", "5")
    assert code == 4, err
    assert [line for line in out.splitlines() if line.startswith("line")] == [
        "line 1: board " + " ".join(map(str, EASY15)), "line 3: board " + " ".join(map(str, EASY15))]
    assert err.startswith("pdbd: line 2: not answered: deadline exceeded"), err
    assert wait_for(lambda: stopped() != [], 10)  # line 2's: said as its call ended
    f.write_text("\n".join(" ".join(map(str, b)) for b in (HARDEST, HARDEST)) + "\n")
    caplog.clear()
    code, out, err = run_cli(capsys, "query", "--server", slow.address, "--file", str(f),
                             "--deadline", "2", "--json")
    said = json.loads(out)  # none answered: every line named all the same
    assert code == 4 and said["where"] == "lines 1-2", (out, err)
    assert said["error"].startswith("not answered: deadline exceeded"), out
    # and the daemon said each board stopped by the deadline (the ones in flight as the
    # call ended went unsaid), and counted the call DEADLINE_EXCEEDED (it said CANCELLED)
    assert wait_for(lambda: len(stopped()) == 2, 10), [r.getMessage() for r in caplog.records]
    assert {r.code for r in stopped()} == {"DEADLINE_EXCEEDED"}
    from pdbd.cli import line_ranges

    assert (line_ranges([4, 5, 6, 9]), line_ranges([2]), line_ranges([])) == ("lines 4-6, 9",
                                                                             "line 2", "")


def test_a_batch_without_a_board_is_said_not_a_silent_success(served, tmp_path, capsys):
    """An empty file (or only comments) printed nothing and exited 0, for both commands: a
    pipeline whose generator failed looked as if it had succeeded."""
    from pdbtool.cli import main as pdbtool_cli

    f = tmp_path / "boards.txt"
    f.write_text("# only a comment\n\n")
    said = f"no board in {f}: every line is empty or a comment"
    code, out, err = run_cli(capsys, "query", "--server", served.address, "--file", str(f))
    assert (code, out, err) == (2, "", f"pdbd: {said}\n")
    assert pdbtool_cli.main(["solve", "--file", str(f), "--heuristic", "manhattan"]) == 2
    assert capsys.readouterr() == ("", f"pdbtool: {said}\n")


def test_query_file_that_cannot_be_read_or_has_a_huge_line(served, tmp_path, capsys):
    """A missing file or a directory is named before any call (it was "Exception iterating
    requests" of the call); a line of a million tiles is that line's error, the other
    boards are answered (the server would have refused the whole call's message)."""
    for missing in (tmp_path / "nope.txt", tmp_path):
        code, _, err = run_cli(capsys, "query", "--server", served.address, "--file", str(missing))
        assert code == 2 and f"cannot read {missing}" in err, err
    f = tmp_path / "boards.txt"
    f.write_text("1 2 3 4 5 6 0 7 8\n" + " ".join(["1"] * 1_000_000) + "\n1 2 3 4 5 0 7 8 6\n")
    code, out, err = run_cli(capsys, "query", "--server", served.address, "--file", str(f))
    assert code == 2, err
    assert [line for line in out.splitlines() if line.startswith("length")] == [
        "length 2  moves 7 8", "length 1  moves 6"]
    assert "line 2" in err and "1,000,000 tiles: a board has at most 400" in err, err


def test_a_reply_stays_far_below_what_a_client_takes_however_long_its_results(served, stub):
    """Results of long solutions (20x20 greedy: about 100 KB each) that piled up while the
    client read slowly went out in one reply of 9 MB, past the 4 MiB a gRPC client takes
    by default: the client refused it and lost the whole call. A reply holds about
    pdbd.batch.REPLY_BYTES at most (here: after the first, the client reads no more until
    every board is answered)."""
    import time

    from pdbd.batch import REPLY_BYTES

    rng = random.Random(20)
    boards = [puzzle.random_board(Shape(20, 20), rng=rng) for _ in range(100)]
    message = pb.BatchRequest(items=[pb.BatchItem(id=i, request=pb.SolveRequest(
        tiles=b, rows=20, cols=20, algorithm="greedy")) for i, b in enumerate(boards)])
    replies = stub.SolveBatch(iter([message]), timeout=120)
    first = next(replies)
    assert wait_for(lambda: info(served)["counters"]["in_flight"] == 0, 60)  # all answered
    rest = list(replies)  # (refused by the client as a whole before: RESOURCE_EXHAUSTED)
    got = {r.id: r.result for reply in (first, *rest) for r in reply.results}
    assert sorted(got) == list(range(100))
    for i, b in enumerate(boards):
        assert puzzle.apply_tile_moves(b, got[i].moves) == puzzle.goal_board(Shape(20, 20))
    largest = max(r.ByteSize() for r in got.values())
    assert largest > 50_000  # long solutions indeed
    assert max(reply.ByteSize() for reply in rest) <= REPLY_BYTES + largest + 16


def test_several_boards_a_message_come_back_several_results_a_message(served, stub,
                                                                       oracle8_last):
    """Items in, results packed out (each with its id); a message of one board, as before
    items, still gets one result a message."""
    boards = random.Random(7).sample(sorted(oracle8_last), 40)
    messages = [pb.BatchRequest(items=[pb.BatchItem(id=100 + k + i, request=pb.SolveRequest(
        tiles=b)) for i, b in enumerate(boards[k:k + 20])]) for k in (0, 20)]
    messages[1].items.add(id=7, request=pb.SolveRequest(tiles=[1, 2, 3]))
    replies = list(stub.SolveBatch(iter(messages), timeout=60))
    assert all(not r.HasField("result") and not r.HasField("error") for r in replies)
    got = {r.id: r for reply in replies for r in reply.results}
    assert sorted(got) == [7, *range(100, 140)]
    assert all(got[100 + i].result.length == oracle8_last[b] for i, b in enumerate(boards))
    assert got[7].error.code == "INVALID_ARGUMENT" and "not a square" in got[7].error.message
    single = [pb.BatchRequest(id=i, request=pb.SolveRequest(tiles=b))
              for i, b in enumerate(boards[:5])]
    replies = list(stub.SolveBatch(iter(single), timeout=60))
    assert sorted(r.id for r in replies) == list(range(5)) and not any(r.results for r in replies)
    assert all(r.result.length == oracle8_last[boards[r.id]] for r in replies)


def test_a_board_is_sent_as_soon_as_it_is_read_not_held_for_a_full_message(served):
    """The client packs what has been read, never waits to fill a message: each board is
    given only once the one before is answered (as a person typing them would), and all
    are answered."""
    boards = [[1, 2, 3, 4, 5, 6, 0, 7, 8], [1, 2, 3, 4, 5, 0, 7, 8, 6], LOYD]
    answered = threading.Semaphore(0)
    given = []

    def typed():
        for b in boards:
            given.append(b)
            yield b
            assert answered.acquire(timeout=60), "the board before was not answered"

    out = {}
    with SolverClient(served.address) as c:
        for i, outcome in c.solve_batch(typed()):
            out[i] = outcome
            answered.release()
    assert out[0].length == 2 and out[1].length == 1 and isinstance(out[2], Unsolvable)


def test_one_board_a_message_and_the_limits_of_per_message(served, oracle8_last):
    boards = random.Random(8).sample(sorted(oracle8_last), 30)
    with SolverClient(served.address) as c:
        out = dict(c.solve_batch(boards, per_message=1))
        assert all(out[i].length == oracle8_last[b] for i, b in enumerate(boards))
        for bad in (0, MAX_PER_MESSAGE + 1):
            with pytest.raises(BadInput, match="per_message"):
                list(c.solve_batch(boards, per_message=bad))


def test_runs_take_what_has_been_read_and_pass_on_the_sources_error():
    def source():
        yield from range(10)
        raise OSError("disk gone")

    runs = Runs(source(), 4)
    got = []
    with pytest.raises(OSError, match="disk gone"):
        for run in runs:
            assert 1 <= len(run) <= 4
            got.extend(run)
    assert got == list(range(10))
    endless = Runs(itertools.count(), 3)
    first = next(iter(endless))
    endless.close()
    assert 1 <= len(first) <= 3


def test_a_lists_boards_go_per_message_at_a_time_each_with_its_request_fields(served,
                                                                            monkeypatch):
    """A list of boards is taken ``per_message`` a message without a reading thread
    (Chunks); each item carries its id and the fields every board shares (goal, budget)."""
    sent = []
    real = SolverClient.solve_batch

    with SolverClient(served.address) as c:
        stub_call = c._stub.SolveBatch

        def spy(requests, **kw):
            def seen():
                for m in requests:
                    sent.append(m)
                    yield m
            return stub_call(seen(), **kw)

        monkeypatch.setattr(c._stub, "SolveBatch", spy)
        boards = [EASY15, (1, 2, 3, 4, 5, 6, 0, 7, 8), "1 2 x", LOYD, EASY15]
        out = dict(real(c, boards, goal="blank-last", budget=10**6, per_message=2))
    assert [[i.id for i in m.items] for m in sent] == [[0, 1], [3, 4]]  # "1 2 x": local
    assert all(i.request.goal == "blank-last" and i.request.node_budget == 10**6
               for m in sent for i in m.items)
    assert list(sent[0].items[0].request.tiles) == list(EASY15)
    assert out[0].length == 2 and out[1].length == 2 and out[4].length == 2
    assert isinstance(out[2], BadInput) and isinstance(out[3], Unsolvable)
    assert list(Chunks(range(5), 2)) == [[0, 1], [2, 3], [4]]


def test_a_table_changed_mid_batch_never_answers_from_the_changed_file(served_dir,
                                                                       oracle8_last,
                                                                       monkeypatch):
    """The table file is checked at admission once a request message, and by every search
    before and after: a file changed in the middle of a message (after that message's
    check) is refused for the rest of it and every later message, each board with its id."""
    from pdbtool.tables import artifact

    daemon = running_daemon(load_directory(served_dir, require=True), threads=1, max_queue=4)
    try:
        boards = random.Random(12).sample(sorted(oracle8_last), 8)
        path = served_dir / "8-full.h5"
        solver = daemon.servicer.solvers[Shape(3, 3)]
        prepare = solver.prepare  # each board's own step of its admission (pdbd.choices)

        def changing(board, goal):
            if tuple(board) == tuple(boards[2]):  # b0, b1 answered; b2 admitted
                meta = artifact.read_meta(path)  # after the message's check
                with open(path, "r+b") as f:
                    f.seek(meta.data_offset + 100)
                    b = f.read(1)
                    f.seek(meta.data_offset + 100)
                    f.write(bytes([b[0] ^ 0x01]))
            return prepare(board, goal)

        monkeypatch.setattr(solver, "prepare", changing)
        with SolverClient(daemon.address) as c:
            out = dict(c.solve_batch(boards, per_message=4))
    finally:
        daemon.stop(grace=1)
    assert sorted(out) == list(range(8))
    assert [out[i].length for i in (0, 1)] == [oracle8_last[boards[i]] for i in (0, 1)]
    for i in range(2, 8):  # the rest of b2's message, and the next message
        assert isinstance(out[i], ServerUnavailable), (i, out[i])
        assert "8-full.h5 changed on disk" in str(out[i])


def test_a_batch_checks_its_table_file_once_a_message_and_solve_once_a_call(served, stub,
                                                                           oracle8_last,
                                                                           monkeypatch):
    """Admission checks the table file once for each request message of a batch (the boards
    of a message share the check: pdbd.batch.Settled.checked), and once for every unary
    Solve; the searches' own checks (trust.Pinned.guarding) are not counted here."""
    import sys

    source = served.servicer.solvers[Shape(3, 3)].heuristic.source
    check, admitted = source.check, []

    def counted():
        if sys._getframe(1).f_code.co_name == "_admit_on":
            admitted.append(1)
        return check()

    monkeypatch.setattr(source, "check", counted)
    boards = random.Random(21).sample(sorted(oracle8_last), 6)
    messages = []
    for part in (boards[:3], boards[3:]):
        m = pb.BatchRequest()
        for b in part:
            m.items.add(id=len(messages) * 3 + len(m.items), request=pb.SolveRequest(tiles=b))
        messages.append(m)
    got = {r.id: r for reply in stub.SolveBatch(iter(messages), timeout=60)
           for r in reply.results}
    assert [got[i].result.length for i in range(6)] == [oracle8_last[b] for b in boards]
    assert len(admitted) == 2  # one a message (a set never emptied: 1; none kept: 6)
    for b in boards[:3]:
        assert stub.Solve(pb.SolveRequest(tiles=b), timeout=30).length == oracle8_last[b]
    assert len(admitted) == 2 + 3


def test_a_batchs_log_lines_name_its_method_and_its_client(served, stub, oracle8_last,
                                                           caplog):
    """A batch's boards are logged under SolveBatch (answered or stopped by a limit), and
    counted against the call's client, as a unary Solve's are under Solve."""
    boards = random.Random(22).sample(sorted(oracle8_last), 2)
    m = pb.BatchRequest()
    for i, b in enumerate(boards):
        m.items.add(id=i, request=pb.SolveRequest(tiles=b))
    m.items.add(id=2, request=pb.SolveRequest(tiles=HARD, goal="blank-first",
                                              node_budget=1000))
    with caplog.at_level("INFO", logger="pdbd"):
        got = {r.id: r for reply in stub.SolveBatch(iter([m]), timeout=60)
               for r in reply.results}
        assert stub.Solve(pb.SolveRequest(tiles=boards[0]), timeout=30).length > 0
    assert got[2].error.code == "RESOURCE_EXHAUSTED" and got[2].error.limit == "node-budget"
    lines = [r for r in caplog.records if r.getMessage().startswith("solve ")]
    assert sorted((r.method, r.code) for r in lines[:3]) == [
        ("pdbd.v1.Solver/SolveBatch", "OK"), ("pdbd.v1.Solver/SolveBatch", "OK"),
        ("pdbd.v1.Solver/SolveBatch", "RESOURCE_EXHAUSTED")]
    assert [(r.method, r.code) for r in lines[3:]] == [("pdbd.v1.Solver/Solve", "OK")]
    assert {r.client for r in lines} == {"ipv4:127.0.0.1"}  # the call's, found once


def test_boards_that_ask_otherwise_are_each_chosen_for_in_one_message(served, stub, oracle):
    """A message's boards share what the one before chose (pdbd.choices) only when they ask
    alike: goals, sizes and algorithms that change from board to board, and a bad goal
    between them, each get their own answer."""
    boards = random.Random(3).sample(sorted(oracle["blank-last"]), 8)
    asks = [{"goal": "blank-first"}, {}, {"goal": "blank-last"}, {"goal": "nowhere"},
            {"goal": "blank-first", "algorithm": "astar"}, {"goal": "blank-first"}, {}, {}]
    m = pb.BatchRequest()
    for i, (b, ask) in enumerate(zip(boards, asks)):
        m.items.add(id=i, request=pb.SolveRequest(tiles=b, **ask))
    m.items.add(id=8, request=pb.SolveRequest(tiles=EASY15))
    m.items.add(id=9, request=pb.SolveRequest(tiles=boards[0], goal="blank-first"))
    got = {r.id: r for reply in stub.SolveBatch(iter([m]), timeout=60) for r in reply.results}
    assert sorted(got) == list(range(10))
    assert got[3].error.code == "INVALID_ARGUMENT" and "unknown goal" in got[3].error.message
    for i, (b, ask) in enumerate(zip(boards, asks)):
        if i != 3:
            goal = ask.get("goal", "blank-last")
            assert (got[i].result.goal, got[i].result.length) == (goal, oracle[goal][b]), i
    assert got[4].result.algorithm == "astar" and got[5].result.algorithm == "ida"
    assert got[8].result.size == 4 and got[8].result.length > 0
    assert got[9].result.length == oracle["blank-first"][boards[0]]


def test_a_choice_is_kept_for_the_same_tables_and_request_fields_only(served_dir):
    """Choices.get: the same choice for a board that asks alike on the same tables; a new
    one on other tables (a reload: the board holds the new ones) or for other fields; a
    request that fails is not kept (the next that asks alike chooses again)."""
    from pdbd.choices import Choices
    from pdbd.servicer import Limits, Served

    tables = load_directory(served_dir, require=True)
    old, new = Served.of(tables), Served.of(tables)
    choices, limits = Choices(), Limits()
    first = choices.get(old, pb.SolveRequest(tiles=[1, 2, 3, 4, 5, 6, 7, 0, 8]), limits)
    assert first.served is old and first.solver is old.solvers[Shape(3, 3)]
    assert choices.get(old, pb.SolveRequest(tiles=[1, 2, 3, 4, 5, 6, 0, 7, 8]), limits) is first
    reloaded = choices.get(new, pb.SolveRequest(tiles=[1, 2, 3, 4, 5, 6, 7, 0, 8]), limits)
    assert reloaded.served is new and reloaded.solver is new.solvers[Shape(3, 3)]
    other = choices.get(new, pb.SolveRequest(tiles=[1, 2, 3, 4, 5, 6, 7, 0, 8],
                                             goal="blank-first"), limits)
    assert other is not reloaded and other.goal == "blank-first"
    with pytest.raises(BadInput, match="unknown algorithm"):
        choices.get(new, pb.SolveRequest(tiles=[1, 2, 3, 4, 5, 6, 7, 0, 8], algorithm="x"),
                    limits)
    with pytest.raises(BadInput, match="unknown algorithm"):  # not kept: refused again
        choices.get(new, pb.SolveRequest(tiles=[1, 2, 3, 4, 5, 6, 7, 0, 8], algorithm="x"),
                    limits)


def test_a_window_gives_room_back_from_the_reader_and_from_other_threads():
    """The batch's room: taken by the reader up to its size, given back on the reader's
    thread at once, or from another thread to a reader that waits for it."""
    window = Window(2)
    assert window.take() and window.take()
    assert not window.take() and not window.take(wait=0.05)  # full: no room comes
    window.give_here()
    assert window.take() and not window.take()
    threading.Timer(0.1, window.give).start()
    assert window.take(wait=10)  # woken by the other thread's room
    assert not window.take()


def test_the_calls_end_halts_what_is_in_flight_and_refuses_what_comes_after():
    class Call:
        def add_callback(self, callback):
            self.end = callback
            return True

    call, halted = Call(), []
    callbacks = Callbacks(call)
    assert callbacks.add(1, lambda: halted.append(1)) and callbacks.add(2, lambda: halted.append(2))
    callbacks.discard(2)  # answered: not halted at the end
    call.end()
    assert halted == [1] and callbacks.ended
    assert not callbacks.add(3, lambda: halted.append(3))  # after the end: the caller halts it
    assert halted == [1]

    class Ended:
        def add_callback(self, callback):
            return False  # the call is over already

    assert not Callbacks(Ended()).add(1, lambda: None)


@pytest.mark.parametrize("board", [(1, 2, 3, 0), [3, 1, 2, 0], [0] * 4, [4294967295, 1],
                                   [True, 0], [1.0, 2], [-1, 0], [4294967296, 0], [],
                                   list(range(626)), ["1", "2"], [1, "2"]])
def test_a_list_of_ints_is_taken_as_it_is_and_anything_else_as_before(board):
    """board_tiles' short way for a list or tuple of plain ints gives what the long way
    gives (the same tiles, or the same BadInput); bools and floats never pass as tiles."""
    import operator

    def long_way(board):
        tiles = []
        for t in board:
            if isinstance(t, bool) or isinstance(t, float):
                raise BadInput("not an integer")
            v = int(t) if isinstance(t, str) else operator.index(t)
            if not 0 <= v <= 4294967295:
                raise BadInput("out of range")
            tiles.append(v)
        if not tiles or len(tiles) > 625:
            raise BadInput("count")
        return tiles

    try:
        expected = long_way(board)
    except BadInput:
        with pytest.raises(BadInput):
            board_tiles(board)
    else:
        got = board_tiles(board)
        assert got == expected and type(got) is list and got is not board


@pytest.mark.parametrize("text", ["1_5 2 3", "\uff11 2 3", "+1 2 3", "1,,2,3", "1 2 x"])
def test_a_boards_text_is_read_as_pdbtool_reads_it(text):
    """The client (pdbd query, pdbd web's API) read '1_5' as 15 and a full-width digit as
    its number, where pdbtool refuses them: one reading, puzzle.numbers."""
    from pdbtool import puzzle

    with pytest.raises(BadInput) as client_said:
        board_tiles(text)
    with pytest.raises(BadInput) as pdbtool_said:
        puzzle.numbers(text)
    assert str(client_said.value) == str(pdbtool_said.value)
    assert board_tiles("1 2 3, 4") == [1, 2, 3, 4] == board_tiles(["1", "2", 3, "4"])


def test_a_client_that_reads_no_result_holds_its_boards_back():
    """The results a call has not sent are bounded: a client that sends boards and reads
    nothing (its results filling gRPC's window) holds back the reading of its boards
    beyond the window and UNSENT. The results piled up on the server before, about 2,000
    a second here."""
    import time

    import pdbd.batch
    from pdbtool.heuristics.table_free import table_free
    from pdbtool.selection import TableSet
    from pdbd.v1.solver_pb2_grpc import SolverStub

    daemon = running_daemon(TableSet({3: table_free("manhattan", 3)}), threads=2, max_queue=8)
    boards = [puzzle.random_walk(3, 20, rng=random.Random(k)) for k in range(200)]

    def requests():
        for k in range(400):
            yield pb.BatchRequest(items=[pb.BatchItem(id=k * 500 + j, request=pb.SolveRequest(
                tiles=boards[j % 200])) for j in range(500)])

    sent = [0]
    outcome = daemon.servicer.outcome

    def counted(*args, **kw):
        sent[0] += 1  # (a result made for its reply)
        return outcome(*args, **kw)

    daemon.servicer.outcome = counted
    window = daemon.servicer.limits.per_client or daemon.pool.threads + daemon.pool.max_queue
    most = window + pdbd.batch.UNSENT
    try:  # (gRPC's window kept at its first 64 KB: it grows to megabytes otherwise)
        with grpc.insecure_channel(daemon.address, [("grpc.http2.bdp_probe", 0)]) as channel:
            call = SolverStub(channel).SolveBatch(requests(), timeout=60)  # never read
            try:
                held = []
                for _ in range(40):
                    time.sleep(0.1)
                    held.append(info(daemon)["counters"]["requests"] - sent[0])
                assert max(held) <= most + 1, (held, most)  # (+1: a result counted, not yet made)
                assert sent[0] > 0
            finally:
                call.cancel()
    finally:
        daemon.stop(grace=1)


def test_the_deadline_covers_the_wait_for_the_next_board():
    """solve_batch's deadline covers the whole batch: after pdbd ended an idle call (its
    request timeout, 1 s here), waiting for the source's next board ends at the deadline
    too (it waited for the board however long that took)."""
    import time

    from pdbd.server import Connections
    from pdbtool.heuristics.table_free import table_free
    from pdbtool.selection import TableSet

    daemon = running_daemon(TableSet({3: table_free("manhattan", 3)}), threads=1,
                            connections=Connections(request_timeout=1))
    stop = threading.Event()

    def typed():
        yield (1, 2, 3, 4, 5, 6, 0, 7, 8)
        stop.wait(30)  # the next board never comes within the test

    try:
        with SolverClient(daemon.address) as c:
            out, start = [], time.monotonic()
            with pytest.raises(LimitReached, match="deadline exceeded"):
                for item in c.solve_batch(typed(), deadline=4):
                    out.append(item)
            assert not stop.is_set() and time.monotonic() - start < 25
        assert [(i, r.length) for i, r in out] == [(0, 2)]
    finally:
        stop.set()
        daemon.stop(grace=1)


def test_results_are_held_for_others_only_while_the_calls_deadline_is_not_near():
    """A packed result waits up to LINGER for others to share its message, but never into
    the last LINGER before the call's deadline, where it would end unsent with the call."""
    import queue
    import time

    from pdbd.batch import LINGER, hold_until, ready

    class Call:
        def __init__(self, left):
            self.left = left

        def time_remaining(self):
            return self.left

    assert hold_until(Call(None)) == float("inf") and hold_until(Call(1e9)) == float("inf")
    start = time.monotonic()
    assert start + 5 - LINGER <= hold_until(Call(5.0)) <= time.monotonic() + 5 - LINGER
    assert hold_until(Call(0.0)) < start  # at the deadline: nothing is held
    finished = queue.Queue()
    finished.put(["first"])
    t = time.monotonic()
    assert ready(finished, lambda n: True, linger=30, until=t + 0.05) == ["first"]
    assert time.monotonic() - t < 5  # boards in flight, but the deadline is near: it goes
    finished.put(["first"])
    threading.Timer(0.05, finished.put, [["second"]]).start()
    assert ready(finished, lambda n: n < 2, linger=30, until=time.monotonic() + 10) == \
        ["first", "second"]  # far from the deadline: held for the next (the last in flight)


def test_the_next_request_may_wait_while_the_calls_boards_are_searched(monkeypatch):
    """A client that sends its next board once a result came (or closes its side then)
    waits on the server: the request timeout (1 s here) of the next message starts again
    while the call's boards are in flight (the call was dropped at the timeout, CANCELLED,
    its search stopped). The board's search is held 2.5 s before it starts (a budget of
    nodes alone took a fast machine less than the timeout), and ends at its budget."""
    import time

    from pdbd.server import Connections
    from pdbtool.heuristics.table_free import table_free
    from pdbtool.search.solver import Solver
    from pdbtool.selection import TableSet
    from serving import channel_stub

    search = Solver.search

    def held(self, *args, **kwargs):
        time.sleep(2.5)  # past the request timeout, on any machine
        return search(self, *args, **kwargs)

    monkeypatch.setattr(Solver, "search", held)
    daemon = running_daemon(TableSet({4: table_free("manhattan", 4)}), threads=1,
                            connections=Connections(request_timeout=1))
    answered = threading.Event()

    def requests():
        yield pb.BatchRequest(items=[pb.BatchItem(id=5, request=pb.SolveRequest(
            tiles=HARD, goal="blank-first", node_budget=1_000_000))])
        assert answered.wait(120)  # then the client closes its side

    try:
        with channel_stub(daemon.address) as stub:
            got = []
            for reply in stub.SolveBatch(requests(), timeout=120):
                got += reply.results
                answered.set()
        assert [r.id for r in got] == [5]
        assert got[0].error.code == "RESOURCE_EXHAUSTED" and got[0].error.limit == "node-budget"
    finally:
        answered.set()
        daemon.stop(grace=1)


def test_boards_read_after_a_pause_longer_than_the_request_timeout_are_answered():
    """Boards typed at a terminal come when they come: pdbd ends a batch call whose next
    request does not come within its request timeout (1 s here) while none of its boards
    is in flight, and the client goes on with a new call (it raised CANCELLED, the rest
    of the boards lost)."""
    import time

    from pdbd.server import Connections
    from pdbtool.heuristics.table_free import table_free
    from pdbtool.selection import TableSet

    daemon = running_daemon(TableSet({3: table_free("manhattan", 3)}), threads=1,
                            connections=Connections(request_timeout=1))
    boards = [(1, 2, 3, 4, 5, 6, 0, 7, 8), (1, 2, 3, 4, 5, 6, 7, 0, 8), (8, 6, 7, 2, 5, 4, 3, 0, 1)]

    def typed():
        for k, board in enumerate(boards):
            if k:
                time.sleep(3.5)  # a pause past the server's timeout, three times over
            yield board

    port = daemon.metrics.serve("127.0.0.1", 0)
    try:
        with SolverClient(daemon.address) as c:
            out = dict(c.solve_batch(typed()))
        assert sorted(out) == [0, 1, 2]
        assert [out[i].length for i in range(3)] == [2, 1, 31]
        # a call a board: the client opens the next one when it has a board to send, not
        # at once (an idle client then held a call for good, and many idle ones evicted
        # one another's calls, each opening the next at once: a thousand calls a second)
        def calls():
            return sum(v for (name, labels), v in scrape(port).items()
                       if name == "pdbd_requests_total"
                       and ("method", "pdbd.v1.Solver/SolveBatch") in labels)

        assert wait_for(lambda: calls() >= 3, 10) and calls() == 3, calls()
    finally:
        daemon.metrics.close()
        daemon.stop(grace=1)
