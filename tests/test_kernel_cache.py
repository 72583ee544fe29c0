"""The numba cache directory (pdbtool/kernels/cache.py): keyed by the kernels' sources, so
that an edit of one kernel module never leaves another module's cached kernel running the
old code inlined into it (numba keys a cache entry on its own file only); given to numba's
configuration, never to the environment."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numba
import pytest

from pdbtool.kernels import cache

ROOT = Path(cache.__file__).parents[2]


@pytest.fixture
def kernels(tmp_path, monkeypatch):
    """A package with a folder of two kernel modules and a module outside it; the process's
    numba cache setting restored afterwards."""
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setattr(numba.config, "CACHE_DIR", numba.config.CACHE_DIR)
    folder = tmp_path / "pkg" / "kernels"
    folder.mkdir(parents=True)
    (folder / "a.py").write_text("from numba import njit\n")
    (folder / "b.py").write_text("from numba import njit\nX = 1\n")
    (tmp_path / "pkg" / "cli.py").write_text("print('hello')\n")
    return folder


def chosen(folder) -> Path:
    before = dict(os.environ)
    path = cache.use_kernel_cache(folder)
    assert str(path) == numba.config.CACHE_DIR and path.is_dir()
    assert dict(os.environ) == before  # the environment is the caller's
    return path


def test_an_edit_of_a_kernel_starts_a_new_cache_and_nothing_else_does(kernels):
    first = chosen(kernels)
    assert first.parent == kernels / "__pycache__" and first.name.startswith("kernels-")
    (kernels.parent / "cli.py").write_text("print('bye')\n")  # outside the kernels' folder
    assert chosen(kernels) == first
    (kernels / "b.py").write_text("from numba import njit\nX = 2\n")
    second = chosen(kernels)
    assert second != first and second.parent == first.parent


def test_a_user_setting_is_the_base(kernels, monkeypatch):
    path = chosen(kernels)
    mine = kernels.parent / "mine"
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(mine))
    assert chosen(kernels) == mine / path.name
    assert os.environ["NUMBA_CACHE_DIR"] == str(mine)


def test_caches_of_other_digests_unused_for_a_day_are_removed(kernels):
    base = kernels / "__pycache__"
    old, recent = base / "kernels-0000", base / "kernels-1111"
    for d in (old, recent):
        (d / "sub").mkdir(parents=True)
    day_ago = time.time() - cache.STALE_AFTER - 60
    os.utime(old, (day_ago, day_ago))
    keep = chosen(kernels)
    assert not old.exists() and recent.is_dir() and keep.is_dir()


@pytest.mark.process
def test_the_tools_use_the_keyed_directory_and_leave_the_environment_alone():
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    p = subprocess.run([sys.executable, "-c", "import os, numba, pdbtool.search.solver; "
                        "print(numba.config.CACHE_DIR, 'NUMBA_CACHE_DIR' in os.environ)"],
                       capture_output=True, text=True, env=env, timeout=60, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    directory, in_environment = p.stdout.split()
    assert Path(directory).name == "kernels-" + cache.kernel_digest()
    assert in_environment == "False"


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
    root = ROOT
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


PROBE = r"""
import sys
from numba.core import event
compiled = []
class Listener(event.Listener):
    def on_start(self, ev):
        compiled.append(ev.data["dispatcher"].py_func.__name__)
    def on_end(self, ev):
        pass
event.register("numba:compile", Listener())
from numba import njit
@njit
def listener_heard():  # compiled here: the listener's own check (no event, no test)
    return 1
listener_heard()
from pdbtool.loading import load_heuristic
from pdbtool.search.solver import Solver
r = Solver(load_heuristic(sys.argv[1])).solve((1, 2, 0, 3, 4, 5, 6, 7, 8), "blank-first")
assert r.length == 2, r.length
print(" ".join(compiled))
"""


def test_the_kernels_compiled_aside_serve_a_table_search(art_dir, tmp_path):
    """`python -m pdbtool.search.precompile CLASS`, the child that a first solve starts on
    the other core (search.warm.aside), compiles IDA*'s kernels into an empty cache, and a
    solver with a real table whose arrays are of that class then loads them instead of
    compiling them again, h_update for its root's check too (a child that fails shows only
    as a warning and a slow first solve: see the test below)."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    child = subprocess.run([sys.executable, "-m", "pdbtool.search.precompile", "PdbArrays"],
                           env=env, capture_output=True, text=True, timeout=900)
    assert child.returncode == 0, child.stderr
    assert child.stdout == "root-check\n"  # told the parent its root's check can load h_update
    # h_update compiled first without a call (precompile.update_signature), with the very
    # types dfs_loop calls it with: else dfs_loop compiled another
    assert len(list((tmp_path / "numba").rglob("heuristic.h_update-*.nbc"))) == 1
    probe = subprocess.run([sys.executable, "-c", PROBE, str(art_dir / "8-full.h5")], env=env,
                           capture_output=True, text=True, timeout=900)
    assert probe.returncode == 0, probe.stderr
    compiled = probe.stdout.split()
    assert "listener_heard" in compiled, compiled  # else an empty list proved nothing
    assert not {"ida", "dfs_loop", "h_update", "_update_pdb"} & set(compiled), compiled


def test_a_failing_child_is_a_warning_with_its_last_line(monkeypatch, caplog):
    """search.warm: when the child compiling aside fails, waiting for it logs a warning with
    its exit code and the last line of its stderr (the caller compiles the kernels itself)."""
    from pdbtool.kernels import heuristic as hk
    from pdbtool.search import warm

    monkeypatch.setattr(warm, "ready", lambda cls, part: False)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)  # (one core: no child at all)
    monkeypatch.setattr(warm, "PRECOMPILE", (sys.executable, "-c",
                                             "import sys; print('a line'); "
                                             "sys.exit('precompile broke: ' + sys.argv[1])"))
    child = warm.aside(hk.ARRAYS_CLASSES["PdbArrays"])
    with caplog.at_level("WARNING", logger="pdbtool"):
        warm.wait(child)
    assert child.stderr.closed
    [record] = [r for r in caplog.records if "child process failed" in r.getMessage()]
    assert "(exit 1: precompile broke: PdbArrays)" in record.getMessage()


def test_a_child_that_succeeds_says_nothing(monkeypatch, caplog):
    from pdbtool.kernels import heuristic as hk
    from pdbtool.search import warm

    monkeypatch.setattr(warm, "ready", lambda cls, part: False)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setattr(warm, "PRECOMPILE", (sys.executable, "-c", "print('fine')"))
    child = warm.aside(hk.ARRAYS_CLASSES["PdbArrays"])
    assert child is not None
    with caplog.at_level("WARNING", logger="pdbtool"):
        warm.wait(child)
    assert not [r for r in caplog.records if "child process failed" in r.getMessage()]


@pytest.mark.parametrize("how", ["raise KeyboardInterrupt",
                                 "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"],
                         ids=["ctrl-c", "sigterm"])
def test_a_child_stopped_by_ctrl_c_says_nothing(monkeypatch, caplog, how):
    """The terminal's Ctrl-C, and a service manager's SIGTERM to the group, reach the child
    too: it was not a failure to warn of ("failed (exit -2: KeyboardInterrupt); this process
    compiles them itself", then "interrupted"; pdbd's stop logged it with exit -15)."""
    from pdbtool.kernels import heuristic as hk
    from pdbtool.search import warm

    monkeypatch.setattr(warm, "ready", lambda cls, part: False)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setattr(warm, "PRECOMPILE", (sys.executable, "-c", how))
    child = warm.aside(hk.ARRAYS_CLASSES["PdbArrays"])
    with caplog.at_level("WARNING", logger="pdbtool"):
        warm.wait(child)
    assert child.process.returncode in (-signal.SIGINT, -signal.SIGTERM)
    assert not [r for r in caplog.records if "child process failed" in r.getMessage()]


def test_the_child_is_told_to_end_with_its_parent(monkeypatch, tmp_path):
    """A solve killed during its first compile left the child compiling for seconds: the
    child is given the parent's pid and asks for the parent-death signal first (one
    given another parent's pid ends at once, compiling nothing)."""
    from pdbtool.kernels import heuristic as hk
    from pdbtool.search import warm

    monkeypatch.setattr(warm, "ready", lambda cls, part: False)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    out = tmp_path / "argv"
    monkeypatch.setattr(warm, "PRECOMPILE", (sys.executable, "-c", "import sys; open(sys.argv[1], "
                                             f"'w').write(' '.join(sys.argv[2:]))", str(out)))
    warm.wait(warm.aside(hk.ARRAYS_CLASSES["PdbArrays"]))
    assert out.read_text() == f"PdbArrays {os.getpid()}"
    other = subprocess.run([sys.executable, "-m", "pdbtool.search.precompile", "PdbArrays", "1"],
                           capture_output=True, text=True, timeout=120,
                           env={**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba")})
    assert other.returncode == 1, other.stderr
    assert not list((tmp_path / "numba").rglob("*.nbi"))  # nothing compiled into its cache


def test_the_compile_estimate_grows_with_the_machine_s_load(monkeypatch):
    """search.warm.pending: an idle machine's figure, times the share of the cores a compile
    gets when the load average is above them (the audit saw 'about 6 s' take 20 s)."""
    from pdbtool.kernels import heuristic as hk
    from pdbtool.search import warm

    monkeypatch.setattr(warm, "ready", lambda cls, part: False)
    monkeypatch.setattr(warm.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(warm, "pace", lambda: 1.0)
    cls = hk.ARRAYS_CLASSES["PdbArrays"]
    monkeypatch.setattr(warm.os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    idle = warm.pending(cls, ("serial",))
    assert idle == pytest.approx(warm.ESTIMATE["serial"][hk.PDB] / 1.6)
    monkeypatch.setattr(warm.os, "getloadavg", lambda: (4.0, 0.0, 0.0))
    assert warm.pending(cls, ("serial",)) == pytest.approx(3 * idle)


@pytest.mark.parametrize("reference, pace", [(1e-9, 4.0), (1e9, 0.5)], ids=["slow", "fast"])
def test_the_compile_estimate_follows_the_machine_s_pace(monkeypatch, reference, pace):
    """search.warm.pace: a machine that runs Python slower than ESTIMATE's compiles slower
    (the AMD EPYC 3x the Intel Xeon: "about 7 s" took 18 s); the estimate follows it,
    within 0.5x to 4x. Nothing is pending on a warm machine: no loop is timed."""
    from pdbtool.kernels import heuristic as hk
    from pdbtool.search import warm

    monkeypatch.setattr(warm.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(warm.os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    monkeypatch.setattr(warm, "_pace", None)
    monkeypatch.setattr(warm, "PACE_REFERENCE", reference)
    cls = hk.ARRAYS_CLASSES["PdbArrays"]
    monkeypatch.setattr(warm, "ready", lambda cls, part: True)
    assert warm.pending(cls, ("serial",)) == 0 and warm._pace is None
    monkeypatch.setattr(warm, "ready", lambda cls, part: False)
    assert warm.pending(cls, ("serial",)) == pytest.approx(
        pace * warm.ESTIMATE["serial"][hk.PDB] / 1.6)
    assert warm._pace == pace


def test_a_first_compile_under_a_tight_ulimit_is_warned_of(monkeypatch, capsys):
    """Under `ulimit -v 650000` a first solve's compile ended in LLVM's abort ("LLVM ERROR:
    out of memory", exit 134, a native stack dump) with nothing said before it; with
    room, or no limit, nothing is said."""
    import argparse
    import resource

    from pdbtool.cli.main import announce_compile
    from pdbtool.heuristics.table_free import table_free
    from pdbtool.search import warm
    from pdbtool.search.solver import Solver

    limit = [resource.RLIM_INFINITY]
    monkeypatch.setattr(resource, "getrlimit", lambda which: (
        limit[0] if which == resource.RLIMIT_AS else resource.RLIM_INFINITY,
        resource.RLIM_INFINITY))
    assert warm.tight_for_compiling() is None
    limit[0] = 1 << 60
    assert warm.tight_for_compiling() is None
    limit[0] = 600 << 20
    assert warm.tight_for_compiling().startswith("this process may take 600 MiB (ulimit -v)")
    monkeypatch.setattr(warm, "pending", lambda cls, parts: 9.0)
    announce_compile(Solver(table_free("manhattan", 3)), 1)
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("pdbtool: compiling the search kernels")
    assert err[1].startswith("pdbtool: warning: this process may take 600 MiB (ulimit -v)")
    assert "'LLVM ERROR: out of memory'" in err[1]


def test_another_install_s_marks_do_not_say_this_one_compiled(monkeypatch, tmp_path):
    """Two installs of the same kernels sharing one cache (one NUMBA_CACHE_DIR): numba keeps
    their kernels apart, but the first install's marks told the second its kernels were
    compiled, and its first solve compiled them unannounced."""
    from pdbtool.kernels.heuristic import PdbArrays
    from pdbtool.search import warm

    monkeypatch.setattr(warm, "CACHE_DIR", tmp_path)
    monkeypatch.setattr(warm, "PACKAGE", Path("/one/venv/site-packages/pdbtool/kernels"))
    warm.mark_ready(PdbArrays, "serial")
    assert warm.ready(PdbArrays, "serial")
    monkeypatch.setattr(warm, "PACKAGE", Path("/a/checkout/pdbtool/kernels"))
    assert not warm.ready(PdbArrays, "serial")
    assert warm.pending(PdbArrays, ["serial"]) > 0
