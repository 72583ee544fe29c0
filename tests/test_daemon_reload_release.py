"""A reload releases the tables it replaced once their last search ends (issue 40): the
mappings of the old files are gone and the files closed, so open files, mappings and
resident memory stay flat over many reloads; a search running across a reload finishes
on the old tables, which are released after it."""

import os
import weakref

import grpc
import pytest

from pdbd.client import SolverClient
from pdbd.server import reload_tables
from pdbd.v1 import solver_pb2 as pb
from pdbtool.selection import load_directory
from serving import (EASY8, EASY15, HARDEST, channel_stub, daemon_serving, rss_kib,
                     table_fds, table_mappings, wait_for)

RELOADS = 20


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.process
def test_twenty_reloads_keep_fds_mappings_and_memory_flat(served_dir):
    with daemon_serving(load_directory(served_dir), threads=1) as daemon:
        with SolverClient(daemon.address) as client:
            def reload_and_query():
                reload_tables(daemon, served_dir)  # what SIGHUP runs
                assert client.solve(EASY8).length == 2
                assert client.solve(EASY15).length == 2
            reload_and_query()  # the first reload: whatever a reload creates once
            fds, maps, files = open_fds(), table_mappings(served_dir), table_fds(served_dir)
            rss = rss_kib(os.getpid())
            assert maps >= 2 and files >= 2  # a mapping and an open file per table at least
            for _ in range(RELOADS):
                reload_and_query()
            # No gc.collect(): released when their last search ends, not when the cyclic
            # collector runs (a handler's thread may still be returning the last answer).
            assert wait_for(lambda: table_fds(served_dir) == files, 10), table_fds(served_dir)
            assert table_mappings(served_dir) == maps
            assert open_fds() <= fds + 2, (fds, open_fds())  # before: +4 a reload
            table_kib = sum(p.stat().st_size for p in served_dir.glob("*.h5")) >> 10
            assert rss_kib(os.getpid()) - rss < 4 * table_kib + 16384, (rss, table_kib)


@pytest.mark.process
def test_a_search_across_a_reload_ends_on_the_old_tables_then_they_are_released(served_dir):
    with daemon_serving(load_directory(served_dir), threads=2, prefault=False) as daemon:
        old = weakref.ref(daemon.servicer.served)  # no reference of the test's keeps it
        maps, files = table_mappings(served_dir), table_fds(served_dir)
        with channel_stub(daemon.address) as stub, SolverClient(daemon.address) as client:
            search = stub.Solve.future(pb.SolveRequest(tiles=HARDEST))  # runs for minutes
            assert wait_for(lambda: client.info()["counters"]["running"] == 1, 30)
            reload_tables(daemon, served_dir)
            assert daemon.servicer.served is not old()
            assert client.solve(EASY15).length == 2  # new queries: the new tables
            # The running search holds the old tables: still mapped and open beside the new.
            assert table_fds(served_dir) == 2 * files
            assert table_mappings(served_dir) == 2 * maps
            assert client.info()["counters"]["running"] == 1
            search.cancel()  # the test stops it: it would run for minutes
            assert wait_for(lambda: table_mappings(served_dir) == maps, 30)  # unmapped
            assert wait_for(lambda: table_fds(served_dir) == files, 10)  # and closed
            with pytest.raises(grpc.FutureCancelledError):
                search.result()
            assert client.solve(EASY15).length == 2


@pytest.mark.process
def test_a_refused_reload_releases_nothing(served_dir):
    with daemon_serving(load_directory(served_dir), threads=1, prefault=False) as daemon:
        served = daemon.servicer.served
        maps, files = table_mappings(served_dir), table_fds(served_dir)
        (served_dir / "bad.h5").write_bytes(b"not an artifact")
        reload_tables(daemon, served_dir)
        assert daemon.servicer.served is served  # still open and mapped: not released
        assert table_mappings(served_dir) >= maps and table_fds(served_dir) >= files
        with SolverClient(daemon.address) as client:
            assert client.solve(EASY8).length == 2 and client.solve(EASY15).length == 2
