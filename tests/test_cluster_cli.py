"""The cluster from the command lines and the daemon, on the session's local Ray: `pdbtool
solve --cluster` (one board, a batch in input order), `pdbtool build --cluster` (the same
tables as a local build), `pdbd serve --cluster` (big searches delegated, Info shows the
cluster, a deadline stops the cluster's tasks). Each test's driver frees the CPUs after it."""

import json

import pytest

from pdbtool import puzzle
from pdbtool.cli import main as cli
from pdbtool.errors import LimitReached
from pdbtool.heuristics.table_free import table_free
from pdbtool.search.solver import Solver
from pdbtool.selection import TableSet
from pdbtool.tables import artifact
from reference import korf_shortest
from serving import HARDEST, info, running_daemon, wait_for

pytestmark = [pytest.mark.cluster, pytest.mark.usefixtures("ray_local")]


def pdbtool_cli(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_solve_one_board(capsys, art_dir, tmp_path):
    _, optimal, board = korf_shortest(1)[0]
    code, out, err = pdbtool_cli(capsys, "solve", "--artifact", str(art_dir / "15-5-5-5.h5"),
                                 "--goal", "blank-first", "--cluster", "local", "--cluster-cache",
                                 str(tmp_path), "--json", " ".join(map(str, board)))
    assert code == 0, err
    r = json.loads(out)
    assert r["length"] == optimal
    assert puzzle.apply_tile_moves(board, r["moves"]) == tuple(range(16))


def test_batch_in_input_order_with_bad_lines(capsys, art_dir, tmp_path, oracle):
    boards = [(1, 2, 3, 4, 5, 6, 0, 7, 8), (8, 6, 7, 2, 5, 4, 3, 0, 1), (5, 1, 3, 8, 0, 2, 4, 7, 6)]
    lines = [" ".join(map(str, boards[0])), "1 2 3", " ".join(map(str, boards[1])),
             "1 2 3 4 5 6 8 7 0", " ".join(map(str, boards[2]))]
    f = tmp_path / "boards.txt"
    f.write_text("\n".join(lines) + "\n")
    shared = tmp_path / "shared"  # the tables travel through it, not the object store
    shared.mkdir()
    code, out, err = pdbtool_cli(capsys, "solve", "--artifact", str(art_dir / "8-full.h5"),
                                 "--file", str(f), "--cluster", "local", "--cluster-cache",
                                 str(tmp_path / "cache"), "--cluster-shared", str(shared), "--json")
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 3  # unsolvable (3) outranks bad input (2)
    assert [r.get("where") for r in rows] == [None, "line 2", None, "line 4", None]
    solved = [r for r in rows if "length" in r]
    assert [tuple(r["board"]) for r in solved] == boards
    assert [r["length"] for r in solved] == [oracle["blank-last"][b] for b in boards]
    assert "line 2: 3 tiles" in err and "line 4: unsolvable" in err
    version = artifact.read_meta(art_dir / "8-full.h5").version
    assert [p.name for p in shared.iterdir()] == [f"{version}.pdbpack"]
    assert (tmp_path / "cache" / "tables" / f"{version}.h5").exists()


def test_cluster_options_are_checked_first(capsys, art_dir):
    code, _, err = pdbtool_cli(capsys, "solve", "--cluster", "local", "--threads", "2",
                               "1 2 3 4 5 6 0 7 8")
    assert code == 2 and "--threads or --cluster" in err
    code, _, err = pdbtool_cli(capsys, "solve", "--cluster", "local", "--algorithm", "astar",
                               "1 2 3 4 5 6 0 7 8")
    assert code == 2 and "IDA*" in err
    code, _, err = pdbtool_cli(capsys, "solve", "--cluster-shared", "/tmp", "1 2 3 4 5 6 0 7 8")
    assert code == 2 and "go with --cluster" in err


def test_build_on_the_cluster_gives_the_local_tables(capsys, art_dir, tmp_path):
    code, out, err = pdbtool_cli(capsys, "build", "15/5-5-5", "--cluster", "local", "--out",
                                 str(tmp_path), "--quiet", "--json")
    assert code == 0, err
    remote = artifact.read_meta(tmp_path / "15-5-5-5.h5")
    local = artifact.read_meta(art_dir / "15-5-5-5.h5")
    assert remote.version == local.version and json.loads(out)["version"] == local.version
    assert bytes(artifact.map_tables(remote)) == bytes(artifact.map_tables(local))
    assert remote.build["cluster"] == "local"


@pytest.fixture
def delegating(tmp_path):
    """pdbd with Manhattan for the 15-puzzle, sending searches above 20,000 nodes to the
    session's Ray."""
    from pdbd.jobs import Delegation
    from pdbtool.cluster.driver import Cluster

    cluster = Cluster("local", cache_dir=tmp_path)
    daemon = running_daemon(TableSet({4: table_free("manhattan", 4)}), threads=2, max_queue=2,
                            delegation=Delegation(cluster, 20_000))
    yield daemon
    daemon.stop(grace=1)  # closes the cluster: its actors free the CPUs


@pytest.mark.process
def test_daemon_delegates_big_searches_and_info_shows_the_cluster(delegating):
    from pdbd.client import SolverClient

    local = Solver(table_free("manhattan", 4))
    with SolverClient(delegating.address) as c:
        easy = c.solve((1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 0, 15))
        assert easy.length == 1
        assert info(delegating)["cluster"]["delegated"] == 0
        _, optimal, board = korf_shortest(1)[0]
        r = c.solve(board, "blank-first")
    assert r.length == optimal == local.solve(board, "blank-first").length
    cl = info(delegating)["cluster"]
    assert cl["delegated"] == 1 and cl["nodes"] == 1 and cl["cpus"] == 2 and cl["above"] == 20_000


@pytest.mark.process
def test_daemon_deadline_stops_the_cluster_tasks(delegating):
    from pdbd.client import SolverClient

    with SolverClient(delegating.address) as c, pytest.raises(LimitReached, match="deadline"):
        c.solve(HARDEST, "blank-last", deadline=4.0)  # 80 moves: hours with Manhattan
        # distance (Korf #88, here before, ends in about 20 s on 2 CPUs: a fifth away)
    assert info(delegating)["cluster"]["delegated"] == 1
    assert wait_for(lambda: info(delegating)["cluster"]["busy"] == 0, 15)
    assert wait_for(lambda: info(delegating)["counters"]["running"] == 0, 15)


@pytest.mark.process
def test_pdbd_info_without_a_cluster_has_none(served):
    assert info(served)["cluster"] is None


def processes_titled(title: str) -> list[int]:
    """Pids of this process's descendants (the session's local Ray: ray.init started it)
    whose title, as Ray sets it, starts with ``title``; never another session's."""
    import os
    from pathlib import Path

    parent, titled = {}, []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
                parent[int(d.name)] = int(stat.rsplit(")", 1)[1].split()[1])
                if (d / "cmdline").read_bytes().startswith(title.encode()):
                    titled.append(int(d.name))
            except (OSError, ValueError, IndexError):
                pass

    def ours(pid: int) -> bool:
        for _ in range(64):  # (a chain of parents, bounded)
            pid = parent.get(pid, 0)
            if pid == os.getpid():
                return True
            if pid <= 1:
                return False
        return False

    return [pid for pid in titled if ours(pid)]


def test_a_build_survives_a_killed_worker(ray_local, art_dir, tmp_path):
    """SIGKILL the worker process building a table: Ray runs the task again and the
    artifact still holds the local build's tables."""
    import os
    import signal
    import threading

    from pdbtool.tables.builder import build
    from pdbtool.cluster.driver import Cluster

    killed = []

    def kill_a_builder():
        for _ in range(600):
            pids = processes_titled("ray::build_on_node")
            if pids:
                os.kill(pids[0], signal.SIGKILL)
                killed.append(pids[0])
                return
            threading.Event().wait(0.05)

    killer = threading.Thread(target=kill_a_builder, daemon=True)
    with Cluster("local") as cluster:
        killer.start()
        meta = build("15/5-5-5", tmp_path, progress=False, cluster=cluster)
    killer.join(1)
    assert killed, "no build task was seen running"
    local = artifact.read_meta(art_dir / "15-5-5-5.h5")
    assert meta.version == local.version
    assert bytes(artifact.map_tables(meta)) == bytes(artifact.map_tables(local))


def test_a_node_of_another_pdbtool_version_builds_nothing(ray_local, tmp_path, monkeypatch):
    """A node running another pdbtool might build other tables: the build is refused before
    it starts, naming both versions, and no artifact is written."""
    from pdbtool.cluster import driver
    from pdbtool.cluster.messages import ClusterError
    from pdbtool.tables.builder import build

    monkeypatch.setattr(driver, "__version__", "0.0.0-elsewhere")  # the driver's, as sent
    with driver.Cluster("local") as cluster:
        with pytest.raises(ClusterError, match=r"the build failed on the cluster: node .* runs "
                           r"pdbtool \S+, the driver 0\.0\.0-elsewhere: install the same"):
            build("8/full", tmp_path, progress=False, cluster=cluster)
    assert not list(tmp_path.iterdir())
