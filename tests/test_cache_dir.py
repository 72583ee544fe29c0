"""The numba cache directory: keyed by the package's numba sources, so that an edit of one
kernel module never leaves another module's cached kernel running the old code inlined
into it (numba keys a cache entry on its own file only)."""

import os
import subprocess
import sys
import time
from pathlib import Path

import numba
import pytest

from pdbtool.kernels import cache as cache_dir


@pytest.fixture
def package(tmp_path, monkeypatch):
    """A package of two numba modules and one without numba; the process's numba cache
    setting restored afterwards."""
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setattr(numba.config, "CACHE_DIR", numba.config.CACHE_DIR)
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "a_kernel.py").write_text("from numba import njit\n")
    (pkg / "b_kernel.py").write_text("from numba import njit\nX = 1\n")
    (pkg / "cli.py").write_text("print('hello')\n")
    return pkg


def chosen(pkg):
    path = cache_dir.ensure_numba_cache(pkg)
    assert path == os.environ["NUMBA_CACHE_DIR"] == numba.config.CACHE_DIR
    return Path(path)


def test_an_edit_of_any_numba_module_starts_a_new_cache(package, monkeypatch):
    first = chosen(package)
    assert first.parent == package / "__pycache__" and first.name.startswith("kernels-")
    assert first.is_dir()
    monkeypatch.delenv("NUMBA_CACHE_DIR")
    (package / "cli.py").write_text("print('bye')\n")  # no numba: the kernels are the same
    assert chosen(package) == first
    monkeypatch.delenv("NUMBA_CACHE_DIR")
    (package / "b_kernel.py").write_text("from numba import njit\nX = 2\n")
    second = chosen(package)
    assert second != first and second.parent == first.parent


def test_a_child_process_keeps_the_directory_and_a_user_setting_is_the_base(package, monkeypatch):
    path = chosen(package)
    assert cache_dir.ensure_numba_cache(package) is None  # already keyed: unchanged
    assert os.environ["NUMBA_CACHE_DIR"] == str(path)
    mine = package.parent / "mine"
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(mine))
    assert chosen(package) == mine / path.name


def test_caches_of_other_digests_unused_for_a_day_are_removed(package):
    base = package / "__pycache__"
    old, recent = base / "kernels-0000", base / "kernels-1111"
    for d in (old, recent):
        (d / "sub").mkdir(parents=True)
    day_ago = time.time() - cache_dir.STALE_AFTER - 60
    os.utime(old, (day_ago, day_ago))
    keep = chosen(package)
    assert not old.exists() and recent.is_dir() and keep.is_dir()


@pytest.mark.process
def test_the_tools_use_the_keyed_directory():
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    p = subprocess.run([sys.executable, "-c", "import os, pdbtool; "
                        "print(os.environ['NUMBA_CACHE_DIR'])"],
                       capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 0, p.stderr
    assert Path(p.stdout.strip()).name == "kernels-" + cache_dir.kernel_digest()


@pytest.mark.process
def test_an_edit_of_an_inlined_kernel_takes_effect(tmp_path):
    """The oracle is the edited source itself: b.run calls a.value, compiled into b's cached
    code. numba alone keys that cache on b.py, so after an edit of a.py alone it kept
    answering 1; keyed by the digest of both, the edit recompiles and run() answers 2."""
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / "__init__.py").write_text("from pathlib import Path\n"
                                      "from pdbtool.kernels.cache import use_kernel_cache\n"
                                      "use_kernel_cache(Path(__file__).parent)\n")
    (fake / "a.py").write_text("from numba import njit\n@njit(cache=True)\n"
                               "def value():\n    return 1\n")
    (fake / "b.py").write_text("from numba import njit\nfrom .a import value\n"
                               "@njit(cache=True)\ndef run():\n    return value()\n")
    root = Path(cache_dir.__file__).parents[1]
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"),
           "PYTHONPATH": f"{tmp_path}{os.pathsep}{root}"}

    def run():
        p = subprocess.run([sys.executable, "-c", "import fake.b; print(fake.b.run())"],
                           capture_output=True, text=True, env=env, timeout=120)
        assert p.returncode == 0, p.stderr
        return int(p.stdout)

    assert run() == 1
    assert run() == 1  # from the cache
    (fake / "a.py").write_text("from numba import njit\n@njit(cache=True)\n"
                               "def value():\n    return 2\n")
    assert run() == 2
