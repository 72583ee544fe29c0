"""How scripts/test runs the tests: on pytest-xdist workers, a file's tests on one worker and
every Ray file on the same one (conftest.pytest_xdist_make_scheduler). xdist's own groups
once did nothing without a word (--dist loadgroup under pytest 9.2): this checks ours."""

import pytest


def test_a_file_is_one_scope_and_the_ray_files_are_one(pytestconfig, monkeypatch):
    pytest.importorskip("xdist", reason="pytest-xdist (the test extra) is not installed")
    from conftest import pytest_xdist_make_scheduler

    monkeypatch.setattr(pytestconfig.option, "dist", "loadfile")
    monkeypatch.setattr(pytestconfig.option, "tx", ["2*popen"])  # what -n 2 sets
    scope = pytest_xdist_make_scheduler(pytestconfig, None)._split_scope
    assert scope("tests/test_cluster.py::test_a") == "ray"
    assert scope("tests/test_cluster_faults.py::test_b[x]") == "ray"
    assert scope("tests/test_search.py::test_a") == scope("tests/test_search.py::test_b[1-2]")
    assert scope("tests/test_search.py::test_a") not in (scope("tests/test_cli.py::test_a"), "ray")


def test_other_distributions_keep_xdist_s_own(pytestconfig, monkeypatch):
    pytest.importorskip("xdist", reason="pytest-xdist (the test extra) is not installed")
    from conftest import pytest_xdist_make_scheduler

    monkeypatch.setattr(pytestconfig.option, "dist", "load")
    assert pytest_xdist_make_scheduler(pytestconfig, None) is None
