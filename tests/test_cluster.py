"""Searches on a local Ray cluster (2 CPUs, one node): the same optimal answers as the local
solver on 8-, 15- and 24-puzzles, batches in input order, a killed worker survived, a
damaged table refused on arrival, cancellation that stops the nodes' tasks, a search stopped
part way resumed from its checkpoint.

Every search here sends its iterations to the cluster from the first bound
(``serial_below=0``), so even easy boards go through the actors.
"""

import os
import random
import re
import signal
import threading
import time

import numpy as np
import pytest

from pdbtool import puzzle
from pdbtool.errors import ArtifactError, BadInput, LimitReached
from pdbtool.heuristics.table_free import table_free
from pdbtool.loading import load_heuristic
from pdbtool.search.checkpoint import Checkpoint, Checkpointing
from pdbtool.search.control import SearchControl, closest_first
from pdbtool.search.solver import Solver
from pdbtool.tables.builder import build
from pdbtool.tables.packing import pack
from reference import korf100, korf_shortest, write_edited_checkpoint
from serving import HARD, HARDEST, wait_for

pytestmark = [pytest.mark.cluster, pytest.mark.usefixtures("ray_local")]


@pytest.fixture(scope="module")
def cluster(ray_local, tmp_path_factory):
    """The driver's side, over the session's Ray; its actors hold the 2 CPUs until the
    module ends."""
    from pdbtool.cluster.driver import Cluster

    with Cluster("local", cache_dir=tmp_path_factory.mktemp("node-cache")) as c:
        yield c


def random_walk(side: int, moves: int, seed: int) -> tuple[int, ...]:
    """A board ``moves`` random blank moves (no immediate reversal) from blank-last."""
    rng = random.Random(seed)
    board = list(puzzle.goal_board(side, "blank-last"))
    blank, prev = board.index(0), None
    for _ in range(moves):
        r, c = divmod(blank, side)
        options = [x for x, ok in ((blank - side, r > 0), (blank + side, r < side - 1),
                                   (blank - 1, c > 0), (blank + 1, c < side - 1)) if ok and x != prev]
        nxt = rng.choice(options)
        board[blank], board[nxt] = board[nxt], 0
        prev, blank = blank, nxt
    return tuple(board)


def on_cluster(cluster, solver, board, goal="blank-last", control=None):
    r = cluster.search(solver, solver.prepare(board, goal), control, serial_below=0)
    assert puzzle.apply_tile_moves(board, r.moves) == puzzle.goal_board(solver.side, goal)
    return r


def test_8_puzzle_with_a_shipped_table_equals_bfs(cluster, art_dir, oracle):
    solver = Solver(load_heuristic(art_dir / "8-full.h5"))
    rng = random.Random(3)
    for _ in range(6):
        board = puzzle.random_board(3, "blank-last", rng)
        r = on_cluster(cluster, solver, board)
        assert r.length == oracle["blank-last"][board] == solver.solve(board).length
        assert r.threads == 2 and r.artifact == solver.heuristic.artifact
    report = next(w.report for w in cluster.workers(solver))
    assert report.error is None and not report.missing


def test_15_puzzle_with_5_5_5_equals_local(cluster, art_dir):
    solver = Solver(load_heuristic(art_dir / "15-5-5-5.h5"))
    for _, optimal, board in korf_shortest(3):
        r = on_cluster(cluster, solver, board, "blank-first")
        local = solver.solve(board, "blank-first")
        assert r.length == local.length == optimal
        assert r.iterations[-1]["bound"] == optimal


def test_24_puzzle_equals_local(cluster):
    solver = Solver(table_free("linear-conflict", 5))
    for seed in range(3):
        board = random_walk(5, 70, seed)
        r = on_cluster(cluster, solver, board)
        assert r.length == solver.solve(board).length


def test_tables_are_not_shipped_again(cluster, art_dir):
    """Loaded once per heuristic; a new Cluster (a second job) finds the node's cached copy."""
    from pdbtool.cluster.messages import HeuristicSpec

    solver = Solver(load_heuristic(art_dir / "15-5-5-5.h5"))
    cluster.workers(solver)
    assert HeuristicSpec.of(solver) in cluster._loaded
    cached = cluster.cache_dir / "tables" / f"{solver.heuristic.artifact}.h5"
    assert cached.exists()
    from pdbtool.cluster.messages import TableSource
    from pdbtool.cluster.node import receive_tables

    path, shipped = receive_tables(solver.heuristic.artifact, TableSource(), "t", cluster.cache_dir, "here")
    assert path == cached and not shipped


def test_batch_answers_in_input_order(cluster, art_dir):
    s8 = Solver(load_heuristic(art_dir / "8-full.h5"))
    s15 = Solver(load_heuristic(art_dir / "15-5-5-5.h5"))
    rng = random.Random(9)
    items = []
    for k, (_, _, board) in enumerate(korf_shortest(4)):
        items.append((s15, s15.prepare(board, "blank-first")))
        b8 = puzzle.random_board(3, "blank-last", rng)
        items.append((s8, s8.prepare(b8, "blank-last")))
    answers = list(cluster.solve_many(items))
    assert len(answers) == len(items)
    for (solver, prepared), answer in zip(items, answers):
        assert answer.error == "" and answer.result.board == prepared.board
        assert answer.result.length == solver.search(prepared).length


def test_batch_reports_a_limit_per_board(cluster):
    """The budget is each board's: Korf's #1 runs out of its 10,000 nodes and says so, a
    board 12 moves from the goal is answered within them, optimally."""
    solver = Solver(table_free("manhattan", 4))
    hard = solver.prepare(korf100()[0][2], "blank-first")
    easy = solver.prepare(random_walk(4, 12, 5), "blank-last")
    answers = list(cluster.solve_many([(solver, hard), (solver, easy)], budget=10_000))
    assert answers[0].result is None and answers[0].exit_code == 4 and "budget" in answers[0].error
    local = solver.search(easy)
    assert local.nodes_generated < 10_000
    assert answers[1].error == "" and answers[1].result.length == local.length


def busy_soon(cluster, before, seconds=60.0) -> bool:
    """Wait until the search started after ``before`` (cluster.running then: a finished
    search keeps its last count) has tasks running on the node."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if busy(cluster, before):
            return True
        time.sleep(0.1)
    return False


def busy(cluster, before) -> bool:
    run = cluster.running
    return run is not None and run is not before and run.busy > 0


def in_thread(fn, *args):
    box = {}

    def target():
        try:
            box["value"] = fn(*args)
        except BaseException as e:
            box["error"] = e

    t = threading.Thread(target=target, daemon=True)
    t.start()
    return t, box


def test_a_killed_worker_is_survived(cluster, monkeypatch):
    """SIGKILL the node's actor process mid-search: Ray restarts it (it maps the tables
    again from the node's cache) and retries its tasks; the answer is still optimal. The
    search cannot end before the kill, whatever the machine's speed: its last iteration
    (the optimal bound) waits on the driver until the kill is done (Korf's #1 takes about
    half a second here: the kill raced it). The kill comes once the node reports a task
    running or the driver waits there, whichever is first."""
    from pdbtool.cluster.run import SearchRun

    solver = Solver(table_free("manhattan", 4))
    _, optimal, board = korf100()[0]
    killed, waiting = threading.Event(), threading.Event()
    iteration = SearchRun.iteration

    def last_after_the_kill(self, bound, left, root):
        if bound == optimal:
            waiting.set()
            assert killed.wait(120), "the test never killed the worker"
        return iteration(self, bound, left, root)

    monkeypatch.setattr(SearchRun, "iteration", last_after_the_kill)
    pid = next(w.report for w in cluster.workers(solver)).pid
    before = cluster.running
    t, box = in_thread(on_cluster, cluster, solver, board, "blank-first")
    try:
        assert wait_for(lambda: waiting.is_set() or busy(cluster, before), 60)
        os.kill(pid, signal.SIGKILL)
        assert t.is_alive()
    finally:
        killed.set()
    t.join(600)
    assert "error" not in box, box.get("error")
    assert box["value"].length == optimal
    assert cluster._ask(cluster.workers(solver), "load", cluster.running.spec) == []
    assert all(w.report.pid != pid for w in cluster.workers(solver))


def test_stopped_by_its_budget_it_resumes_from_its_checkpoint(cluster, art_dir, tmp_path):
    """The cluster saves the batches it finished; the resumed search searches the rest, and
    every iteration but the last (whose count depends on when the goal is met) counts what
    a search never stopped counts."""
    solver = Solver(table_free("linear-conflict", 4))
    board = korf100()[15][2]  # #16: a million nodes in 9 iterations with linear conflicts
    straight = on_cluster(cluster, solver, board, "blank-first")
    path = tmp_path / "search.json"
    # stopped half way through the last iteration before the goal's: no goal to find there
    before = straight.iterations[:-2]
    budget = sum(it["nodes"] for it in before) + straight.iterations[-2]["nodes"] // 2
    with pytest.raises(LimitReached):
        on_cluster(cluster, solver, board, "blank-first", SearchControl(
            budget=budget, checkpoint=Checkpointing(path, every=1e9)))
    saved = Checkpoint.from_json(path.read_text())
    assert saved.identity.algorithm == "ida on a cluster"
    assert (saved.bound, saved.iterations) == (straight.iterations[-2]["bound"], before)
    assert all(len(row) == 4 for row in saved.finished.values())
    # the iteration's order, closest first, not the frontier's: the finished batches are
    # places in it, so the resumed counts below are right only if the order is resumed too
    assert sorted(saved.order) == list(range(len(saved.order))) != saved.order
    resumed = on_cluster(cluster, solver, board, "blank-first",
                         SearchControl(checkpoint=Checkpointing(path)))
    assert resumed.length == straight.length
    assert resumed.iterations[:-1] == straight.iterations[:-1]
    assert resumed.iterations[-1]["bound"] == straight.iterations[-1]["bound"]
    # a thread search's checkpoint is not the cluster's, and the other way round
    with pytest.raises(BadInput, match="its algorithm 'ida on a cluster', not 'ida'"):
        solver.search(solver.prepare(board, "blank-first"),
                      SearchControl(checkpoint=Checkpointing(path)), threads=2)


def test_a_budget_handed_on_to_the_cluster_is_the_rest_of_it(cluster, monkeypatch):
    """pdbd's way with a cluster (search_here_then_on): ``above`` nodes here, then the rest
    of the budget on the cluster, which stops for the budget after about that rest. (It
    compared the shared counters, which hold the nodes searched here, with the rest: it
    stopped after about budget - 2 x above nodes, saying "stopped" instead of the budget.)
    The driver polls the nodes' counters at every turn here, so that its budget check, not
    the batches' own, ends the search."""
    from pdbtool.cluster import run
    from pdbtool.cluster.driver import search_here_then_on

    monkeypatch.setattr(run, "PROGRESS_SECONDS", 0.0)
    monkeypatch.setattr(run, "BATCHES_PER_CPU", 64)
    solver = Solver(table_free("manhattan", 4))
    board = (14, 13, 15, 7, 11, 12, 9, 5, 6, 0, 2, 1, 4, 8, 10, 3)  # millions of nodes
    budget, above = 200_000, 20_000
    control = SearchControl(budget=budget)
    with pytest.raises(LimitReached, match="node budget") as stop:
        search_here_then_on(solver, solver.prepare(board, "blank-first"), control,
                            cluster=cluster, above=above)
    # a budget stops a search once it has spent it, never before (here: 187,334 nodes;
    # 173,592 when the nodes searched here were counted against the cluster's part too)
    there = int(re.search(r"after ([\d,]+) nodes", str(stop.value))[1].replace(",", ""))
    assert there > budget - above


def test_ctrl_c_saves_the_cluster_search(cluster, tmp_path, monkeypatch):
    """Ctrl-C (or SIGTERM) while the driver waits on the nodes: the job stops and its
    progress is saved, as at any other stop and as the threads save theirs."""
    from pdbtool.cluster.run import SearchRun

    solver = Solver(table_free("manhattan", 4))
    poll, polls = SearchRun._poll, []

    def interrupted(self, bound):
        polls.append(bound)
        if len(polls) == 5:
            raise KeyboardInterrupt
        return poll(self, bound)

    monkeypatch.setattr(SearchRun, "_poll", interrupted)
    path = tmp_path / "search.json"
    with pytest.raises(KeyboardInterrupt):
        on_cluster(cluster, solver, HARDEST, control=SearchControl(  # (the timeout: a
            checkpoint=Checkpointing(path, every=1e9), timeout=300))  # backstop, not reached)
    saved = Checkpoint.from_json(path.read_text())
    assert saved.identity.algorithm == "ida on a cluster" and saved.bound == polls[-1]


def test_a_head_lost_during_a_search_is_said_and_the_search_saved(cluster, tmp_path,
                                                                 monkeypatch):
    """The head of a cluster given by its address killed mid-search: Ray ended the process
    a minute later with a line of its own, no error of pdbtool's and no checkpoint saved.
    The search probes the head itself (every HEAD_CHECK_SECONDS), stops at the first probe
    that finds it lost, saves its progress and says why. (The head's loss is simulated:
    the session's Ray runs here, and its probe is replaced.)"""
    from pdbtool.cluster import run
    from pdbtool.cluster.messages import ClusterError

    monkeypatch.setattr(run, "HEAD_CHECK_SECONDS", 0.2)
    probes = []

    def lost():
        probes.append(time.monotonic())
        if len(probes) >= 3:
            raise ClusterError("the Ray cluster's head at 10.0.0.1:6379 was lost")

    monkeypatch.setattr(cluster, "reachable", lost)
    solver = Solver(table_free("manhattan", 4))
    path = tmp_path / "search.json"
    with pytest.raises(ClusterError, match="head at 10.0.0.1:6379 was lost") as e:
        on_cluster(cluster, solver, HARDEST, control=SearchControl(
            checkpoint=Checkpointing(path, every=1e9), timeout=300))  # (a backstop)
    assert Checkpoint.from_json(path.read_text()).identity.algorithm == "ida on a cluster"
    assert e.value.__notes__ == [f"the progress is saved in {path}: given it again, the "
                                 "search resumes there"]


def test_a_node_lost_after_the_goal_is_found_does_not_lose_the_answer(cluster, monkeypatch):
    """Once the goal is found the driver only waits for the batches out; a batch that a
    lost node gives back then is not waited on (Dispatch puts it back in its queue, which
    kept the loop going with nothing out: "every node of the cluster was lost", the answer
    thrown away). The loss is simulated on the driver's side: after the halt, one batch out
    comes back as a lost node's does."""
    from pdbtool.cluster.run import Dispatch, SearchRun

    solver = Solver(table_free("manhattan", 4))
    finished, gave_back = Dispatch.finished, []

    def losing_one(self):
        if not self.todo and self.refs and not gave_back and cluster.running.halted_for_test:
            ref, (w, item) = next(iter(self.refs.items()))
            self.refs.pop(ref)
            w.in_flight.pop(ref, None)
            self.todo.appendleft(item)  # as finished() does for a lost node's batch,
            gave_back.append(item)  # which it then leaves out of what it returns (the
            return []  # batch out may have been the last: nothing is left to wait on)
        return finished(self)

    halt = SearchRun._halt_actors

    def halting(self):
        self.halted_for_test = True
        return halt(self)

    monkeypatch.setattr(SearchRun, "halted_for_test", False, raising=False)
    monkeypatch.setattr(SearchRun, "_halt_actors", halting)
    monkeypatch.setattr(Dispatch, "finished", losing_one)
    for _, optimal, board in korf100()[:4]:  # until one halts with a batch still out (the
        r = on_cluster(cluster, solver, board, "blank-first")  # goal's is rarely the last)
        assert r.length == optimal
        if gave_back:
            break
    assert gave_back


def test_a_cluster_checkpoint_with_a_frontier_too_large_is_refused(cluster, tmp_path):
    """A damaged split (the frontier's size, for the cluster) would have the driver list
    a billion nodes in Python, deaf to the stop flag."""
    import json

    solver = Solver(table_free("manhattan", 4))
    path = tmp_path / "search.json"
    with pytest.raises(LimitReached):
        on_cluster(cluster, solver, HARDEST, control=SearchControl(
            budget=300_000, checkpoint=Checkpointing(path, every=1e9)))
    saved = json.loads(path.read_text())
    saved["split"] = 10 ** 9
    write_edited_checkpoint(path, saved)
    with pytest.raises(BadInput, match=rf"split is 1000000000, more than the {len(saved['order'])} "
                                       "nodes of the frontier"):  # its order says how many
        on_cluster(cluster, solver, HARDEST, control=SearchControl(
            checkpoint=Checkpointing(path)))
    saved["order"] = saved["closest"] = []  # as saved before the cluster searched closest first
    write_edited_checkpoint(path, saved)
    with pytest.raises(BadInput, match="frontier of 1,000,000,000 subtrees is larger"):
        on_cluster(cluster, solver, HARDEST, control=SearchControl(
            checkpoint=Checkpointing(path)))


def test_each_iteration_searches_the_frontier_closest_first(cluster):
    """The batches of an iteration follow the order made from the one before: by the
    smallest h each subtree's search expanded (every subtree recorded it), ties in frontier
    order."""
    solver = Solver(table_free("linear-conflict", 4))
    straight = on_cluster(cluster, solver, korf100()[15][2], "blank-first")
    run = cluster.running
    n = len(run.nodes)
    last = {x.index: x.closest for x in run.subtrees if x.bound == straight.iterations[-1]["bound"]}
    assert last and all(run.closest[i] == c for i, c in last.items())
    assert (run.order == closest_first(run.closest)).all()
    before = straight.iterations[-2]["bound"]
    records = [x for x in run.subtrees if x.bound == before]
    assert sorted(x.index for x in records) == list(range(n))
    closest = np.array([x.closest for x in sorted(records, key=lambda x: x.index)])
    order = closest_first(closest)
    assert (closest[order][:-1] <= closest[order][1:]).all() and closest.min() < closest.max()
    run.order[:] = order
    batches = run.batches({})
    assert [i for b in batches for i in b.indices] == order.tolist()
    assert all(b.nodes == [run.nodes[i] for i in b.indices] for b in batches)
    assert [b.first for b in batches] == np.cumsum([0] + [len(b.nodes) for b in batches])[:-1].tolist()


def test_cancellation_stops_the_tasks(cluster):
    """serving.HARD, 80 moves (an hour or more with Manhattan distance), so the search is
    still running when it is cancelled (Korf's #88, here before, ends in about 20 s on two
    threads); the nodes counted at the stop include those of the batches then out."""
    solver = Solver(table_free("manhattan", 4))
    board = HARD
    control = SearchControl()
    before = cluster.running
    t, box = in_thread(on_cluster, cluster, solver, board, "blank-first", control)
    assert busy_soon(cluster, before)
    start, end = control.generated, time.monotonic() + 60
    while control.generated == start and time.monotonic() < end:  # a node's live count
        time.sleep(0.1)
    seen = control.generated  # (the batches out searched part of it)
    assert seen > start
    stopped = time.monotonic()
    control.halt("cancelled")
    t.join(30)
    assert not t.is_alive() and isinstance(box.get("error"), LimitReached)
    assert time.monotonic() - stopped < 10
    # the batches out counted what they searched (cancelled, they counted nothing)
    said = int(re.search(r"after ([\d,]+) nodes", str(box["error"])).group(1).replace(",", ""))
    assert said >= seen, (str(box["error"]), seen)
    end = time.monotonic() + 10
    while cluster.info().busy and time.monotonic() < end:
        time.sleep(0.2)
    assert cluster.info().busy == 0  # nothing runs on the node any more


def test_a_damaged_table_is_refused_on_arrival(cluster, tmp_path):
    """The copy the driver ships is damaged (here: its packed cache): the node unpacks
    it, the checksums fail, and the work is refused naming the node and the table;
    nothing is installed in the node's cache; the error names the copy to remove."""
    build("8/full", tmp_path, zero_aware=False, progress=False)  # a version not shipped yet
    path = tmp_path / "8-full-min.h5"
    solver = Solver(load_heuristic(path))
    version = solver.heuristic.artifact
    packed = cluster.cache_dir / "packed" / f"{version}.pdbpack"
    packed.parent.mkdir(mode=0o700, parents=True, exist_ok=True)  # private, as the driver keeps it
    pack(path, packed, force=True)
    data = bytearray(packed.read_bytes())
    middle = len(data) - 200  # inside the compressed table data, past the metadata
    data[middle:middle + 8] = bytes(x ^ 0xFF for x in data[middle:middle + 8])
    packed.write_bytes(bytes(data))
    with pytest.raises(ArtifactError, match=r"node .+\(.+\): table 8-full-min\.h5 .*refused on arrival") as e:
        cluster.search(solver, solver.prepare((1, 2, 3, 4, 5, 6, 0, 7, 8)), serial_below=0)
    assert f"the copy shipped is {packed} (packed once per version: remove it" in str(e.value)
    assert not (cluster.cache_dir / "tables" / f"{version}.h5").exists()
    packed.unlink()  # a good copy is packed again and accepted
    r = on_cluster(cluster, solver, (1, 2, 3, 4, 5, 6, 0, 7, 8))
    assert r.length == 2


def test_a_lost_node_is_reported_not_waited_on(cluster):
    """The node's actor dies for good mid-search (as when its node disappears): the loss
    is reported, its batches go back to the queue and, with no node left, the search
    fails at once instead of waiting. The board is one of the 80-move 15-puzzles (hours
    with Manhattan distance): still searching at the kill on any machine (Korf's #1, here
    before, ends in about half a second). (Last here: the module's cluster has no node
    after.)"""
    from pdbtool.cluster.messages import ClusterError

    heard = []
    cluster.notify = heard.append
    solver = Solver(table_free("manhattan", 4))
    workers = cluster.workers(solver)
    before = cluster.running
    t, box = in_thread(on_cluster, cluster, solver, HARDEST, "blank-last")
    assert busy_soon(cluster, before)
    cluster.ray.kill(workers[0].actor, no_restart=True)
    t.join(60)
    assert not t.is_alive()
    assert isinstance(box.get("error"), ClusterError) and "lost" in str(box["error"])
    assert len(heard) == 1 and workers[0].node.name in heard[0]
