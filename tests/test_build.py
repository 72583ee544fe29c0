"""The builder against plain references: 0/1-BFS over (pattern tile cells, blank cell)
entry for entry, exact 8-puzzle distances, and the 4-bit form against the distances."""

import numpy as np
import pytest

from pdbtool.geometry import blank_region
from pdbtool.kernels.ranking import NO_REGION, regions
from pdbtool.loading import load_heuristic
from pdbtool.tables.artifact import open_tables
from pdbtool.tables.builder import build, compact_table, distance_table
from pdbtool.tables.catalogue import get, plan_tables
from reference import ROOT, abstract_distances, interruptible, reference_table, table_entry

CASES = [((1, 2), 3), ((1, 5, 6), 3), ((4, 8), 3), ((1, 3, 5, 7), 3), ((1, 2, 3), 4),
         ((5, 6, 9, 10), 4), ((1, 5, 6), 5)]


@pytest.mark.parametrize("tiles, side", CASES)
@pytest.mark.parametrize("zero_aware", [True, False])
def test_builder_equals_reference_entry_for_entry(tiles, side, zero_aware):
    built = distance_table(tiles, side, zero_aware=zero_aware, progress=False)
    assert (built == reference_table(tiles, side, zero_aware)).all()
    assert (built != 255).all()  # every (placement, region) is reached


@pytest.mark.parametrize("tiles, side", CASES[:5])
def test_zero_aware_values_dominate_the_minimum_over_the_blank(tiles, side):
    zero = distance_table(tiles, side, progress=False)
    low = distance_table(tiles, side, zero_aware=False, progress=False)
    for cells, blank in abstract_distances(tiles, side):
        assert zero[table_entry(cells, blank, side)] >= low[table_entry(cells, blank, side, False)]


def test_8_full_is_the_exact_distance_table(oracle8):
    table = distance_table(tuple(range(1, 9)), 3, progress=False)
    for state, d in oracle8.items():
        cells = [state.index(t) for t in range(1, 9)]
        assert table[table_entry(cells, state.index(0), 3)] == d
    assert (table == 255).sum() == 181440


@pytest.mark.parametrize("tiles, side", CASES)
def test_compact_entries_decode_to_the_distances(tiles, side):
    dist = distance_table(tiles, side, progress=False)
    packed = compact_table(dist, tiles, side)
    nib = np.empty(packed.size * 2, np.uint8)
    nib[0::2], nib[1::2] = packed & 15, packed >> 4
    for (cells, blank), d in abstract_distances(tiles, side).items():
        md = sum(abs(c // side - t // side) + abs(c % side - t % side) for c, t in zip(cells, tiles))
        assert md + 2 * nib[table_entry(cells, blank, side)] == d


def test_region_index_numbers_the_blank_regions_by_lowest_cell():
    side, m = 4, 5
    reg = regions(side, m)
    for r in range(0, reg.count.size, 37):
        cells = {c for c in range(16) if reg.index[r, c] == NO_REGION}
        assert len(cells) == m
        comps = []
        for c in range(16):
            if c not in cells and not any(c in x for x in comps):
                comps.append(blank_region(side, cells, c))
        assert reg.count[r] == len(comps)
        for k, comp in enumerate(comps):
            assert {int(reg.index[r, c]) for c in comp} == {k}


def test_symmetric_group_reads_the_shared_table_correctly():
    # 15/5-5-5: the third group is a symmetric image (a flip) of the first and reuses its table.
    plan = plan_tables(get("15/5-5-5"))
    assert len(plan.tables) == 2
    tiles, ti, cmap, _ = plan.groups[2]
    own = distance_table(tuple(sorted(tiles)), 4, progress=False)
    shared = distance_table(plan.tables[ti], 4, progress=False)
    rng = np.random.default_rng(1)
    for _ in range(3000):
        cells = rng.choice(16, size=6, replace=False).tolist()  # tiles in table order, blank
        blank = cells.pop()
        by_tile = dict(zip(tiles, cells))
        own_cells = [by_tile[t] for t in sorted(tiles)]
        assert own[table_entry(own_cells, blank, 4)] == \
            shared[table_entry([cmap[c] for c in cells], cmap[blank], 4)]


def test_same_tables_whatever_the_worker_layout(tmp_path):
    a = build("15/6-6-3", tmp_path / "one", workers=1, progress=False)
    b = build("15/6-6-3", tmp_path / "two", workers=2, processes=2, progress=False)
    assert (a.build["processes"], b.build["processes"]) == (1, 2)
    assert [t.sha256 for t in a.tables] == [t.sha256 for t in b.tables]
    assert a.version == b.version


def test_artifact_describes_itself(art_dir):
    meta, data = open_tables(art_dir / "15-5-5-5.h5")
    assert meta.partition == "15/5-5-5" and meta.size == 4 and meta.goal == "blank-first"
    assert meta.zero_aware and meta.encoding == "md-nibble"
    assert sorted(t for g in meta.groups for t in g.tiles) == list(range(1, 16))
    assert all(t.unset == 0 and t.histogram[0] == 1 for t in meta.tables)
    assert load_heuristic(art_dir / "15-5-5-5.h5").value(tuple(range(16))) == 0


@pytest.mark.process
def test_workers_end_with_their_parent_even_killed(tmp_path):
    """SIGKILL of `pdbtool build` left its worker processes running (gigabytes each): a
    worker started with die_with_parent ends with its parent."""
    import os
    import signal
    import subprocess
    import sys
    import time

    script = tmp_path / "parent.py"
    script.write_text(
        "import multiprocessing, os, sys, time\n"
        "from concurrent.futures import ProcessPoolExecutor\n"
        "from pdbtool.signals import die_with_parent\n"
        "if __name__ == '__main__':\n"
        "    ctx = multiprocessing.get_context('spawn')\n"
        "    pool = ProcessPoolExecutor(1, mp_context=ctx, initializer=die_with_parent,\n"
        "                               initargs=(os.getpid(),))\n"
        "    print(pool.submit(os.getpid).result(), flush=True)\n"
        "    pool.submit(time.sleep, 600)\n"
        "    time.sleep(600)\n")
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    worker = int(parent.stdout.readline())
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait(timeout=30)

    deadline = time.monotonic() + 30
    while running(worker) and time.monotonic() < deadline:
        time.sleep(0.05)
    if running(worker):
        os.kill(worker, signal.SIGKILL)
        raise AssertionError("the worker outlived its parent")


def running(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie has ended, whoever reaps it)."""
    from pathlib import Path

    try:
        return (Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]) != "Z"
    except FileNotFoundError:
        return False


def children_of(pid: int) -> dict[int, str]:
    """The processes whose parent is ``pid``, and their command lines."""
    from pathlib import Path

    out = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                out[int(stat.parent.name)] = (stat.parent / "cmdline").read_text()
        except (OSError, ValueError, IndexError):
            pass
    return out


def catches_ctrl_c(pid: int) -> bool:
    """Whether the process has a handler for SIGINT (Python's, once its interpreter is up)."""
    from pathlib import Path

    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    caught = next(line for line in status.splitlines() if line.startswith("SigCgt:"))
    return bool(int(caught.split()[1], 16) & 1 << 1)  # bit n-1 is signal n


@pytest.mark.process
@pytest.mark.parametrize("when", ["a process starting", "the tables building"])
@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_a_signal_to_the_group_ends_a_build_with_one_line_and_no_process_left(tmp_path, when,
                                                                              sig):
    """The terminal's Ctrl-C (and systemd's stop, a closed session's SIGTERM) reaches the
    build's whole process group. A worker (or the progress queue's process) still
    importing printed its own traceback, a Ctrl-C between a process's start and its
    shutdown's registration left the interpreter's exit waiting for it for good, and a
    SIGTERM killed the queue's process under the parent's cleanup ("Connection refused",
    exit 1). Now: one line, exit 130 (143), nothing written, no process left.
    The signal goes the moment one of the build's spawned processes has Python's handler
    (its interpreter is up, its imports take most of a second), or once a worker reports
    progress."""
    import os
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "out"
    build = subprocess.Popen(  # (a run in the background ignores SIGINT: CI's did)
        interruptible("pdbtool", "build", "15/5-5-5", "--processes", "2", "--out", str(out)),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    seen: set[int] = set()
    try:
        deadline = time.monotonic() + 60
        while build.poll() is None and time.monotonic() < deadline:
            children = children_of(build.pid)
            seen |= set(children)
            if when == "a process starting" and any(
                    "spawn_main" in line and catches_ctrl_c(pid) for pid, line in children.items()):
                break
            if when == "the tables building" and "table 1/2" in build.stderr.readline():
                break
            time.sleep(0.005 if when == "a process starting" else 0)
        assert build.poll() is None, "the build ended before the Ctrl-C"
        os.killpg(build.pid, getattr(signal, sig))
        stdout, stderr = build.communicate(timeout=60)
    finally:
        if build.poll() is None:
            os.killpg(build.pid, signal.SIGKILL)
            build.wait()
    seen |= set(children_of(build.pid))
    code, said = (130, "interrupted") if sig == "SIGINT" else (143, "terminated")
    assert build.returncode == code, stderr
    assert "Traceback" not in stderr and stderr.strip().endswith(f"pdbtool: {said}"), stderr
    assert not list(out.glob("*.h5")) if out.exists() else True

    deadline = time.monotonic() + 30
    while any(map(running, seen)) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = [pid for pid in seen if running(pid)]
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, "processes of the build outlived it"


def test_the_memory_check_counts_the_tables_built_at_once(tmp_path, monkeypatch):
    """With --processes N, N tables are built at once, each in its own worker: the check
    before the build counted one table, so a build that could only fit one at a time
    started and ran the machine out of memory."""
    import os

    from pdbtool.errors import BadInput
    from pdbtool.tables import builder

    cat = get("15/5-5-5")
    one, two = cat.build_bytes(), cat.build_bytes(at_once=2)
    assert two > one
    real = os.sysconf
    monkeypatch.setattr(os, "sysconf", lambda name: {"SC_PAGE_SIZE": 1,
                                                     "SC_PHYS_PAGES": (one + two) // 2}.get(
        name) or real(name))
    builder.check_memory(cat, processes=1)  # one at a time fits
    with pytest.raises(BadInput, match=r"needs about .* of memory \(2 tables at once: give "
                                       r"fewer --processes\); this machine has"):
        build(cat, tmp_path, workers=2, processes=2, progress=False)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.process
def test_a_build_from_a_script_read_from_stdin_runs_in_one_process(tmp_path):
    """`python - <<EOF` then build(...): a spawned worker runs the parent's main script
    again, and '<stdin>' is none; the workers died at their start and the build ended in
    an EOFError's traceback. It now builds in one process (its threads), and a number of
    processes asked for is refused, saying why."""
    import subprocess
    import sys

    script = (f"from pdbtool.tables.builder import build\n"
              f"meta = build('15/5-5-5', {str(tmp_path)!r}, progress=False)\n"
              f"print(meta.build['processes'])\n"
              f"build('15/5-5-5', {str(tmp_path / 'two')!r}, progress=False, processes=2)\n")
    p = subprocess.run([sys.executable, "-"], input=script, capture_output=True, text=True,
                       timeout=300)
    assert p.stdout == "1\n"
    assert p.returncode == 1 and p.stderr.rstrip().endswith(
        "BadInput: 2 worker processes cannot be started from a script read from stdin (each "
        "would run it again): give processes=1, or run the script from a file")
    assert not (tmp_path / "two").exists()
