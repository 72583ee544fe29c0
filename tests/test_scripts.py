"""The scripts stay runnable: the benchmark programs import (the API they use exists) and
name the BENCHMARKS.md sections that scripts/bench dispatches to. No benchmark is run."""

import re
import subprocess
import sys

import pytest

from reference import ROOT

pytestmark = pytest.mark.process

SCRIPTS = ROOT / "scripts"
PROGRAMS = sorted(SCRIPTS.glob("bench_*.py"))


def test_bench_programs_import_and_name_their_sections():
    names = [p.stem.removeprefix("bench_") for p in PROGRAMS]
    assert len(names) == 13
    dispatched = re.search(r"^SECTIONS=\((.*)\)$", (SCRIPTS / "bench").read_text(), re.M)
    assert dispatched and sorted(dispatched.group(1).split()) == sorted(names)
    markdown = (ROOT / "BENCHMARKS.md").read_text()
    for name in names:
        assert f"<!-- bench:{name} -->" in markdown and f"<!-- /bench:{name} -->" in markdown
    # One interpreter loads every program (module-level imports, no measuring).
    p = subprocess.run([sys.executable, "-c", (
        "import runpy, sys\n"
        "sys.path.insert(0, sys.argv[1])\n"
        "for path in sys.argv[2:]:\n"
        "    g = runpy.run_path(path, run_name='bench')\n"
        "    print(g['SECTION'], callable(g['measure']))\n"),
        str(SCRIPTS), *map(str, PROGRAMS)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split("\n")[:-1] == [f"{n} True" for n in names]
    texts = "".join(p.read_text() for p in [*PROGRAMS, SCRIPTS / "benchlib.py", SCRIPTS / "bench"])
    assert not re.search(r"issue\s*#?\d", texts, re.I)  # named by subject, not by issue


def test_bench_refuses_an_unknown_section():
    p = subprocess.run([str(SCRIPTS / "bench"), "nope"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 2 and "unknown section 'nope'" in p.stderr


def test_demo_ends_by_writing_the_animation_page():
    demo = (SCRIPTS / "demo").read_text()
    tail = demo[demo.index("== stopping pdbd"):]
    assert '/pdbtool" animate' in tail and "-o solve.html" in tail and "file://$PWD/solve.html" in tail
    # The demo installs only `-e .`: the live page's hint installs the web extra first, in
    # the checkout's venv (pdbtool is not on PyPI), and starts the daemon pdbd web talks to.
    hint = tail[tail.index("file://$PWD/solve.html"):]
    assert ".venv/bin/pip install -e '.[web]'" in hint and ".venv/bin/pdbd serve" in hint
    assert ".venv/bin/pdbd web" in hint
    p = subprocess.run(["bash", "-n", str(SCRIPTS / "demo")], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr


def test_bench_table_renders_the_recorded_bars(tmp_path):
    """The current-results table that opens BENCHMARKS.md is what scripts/bench-results.json
    renders; a recorded bar replaces its row in place, a new one goes last; no line of
    BENCHMARKS.md is over 400 characters."""
    sys.path.insert(0, str(SCRIPTS))
    try:
        import benchresults
    finally:
        sys.path.remove(str(SCRIPTS))
    markdown = (ROOT / "BENCHMARKS.md").read_text()
    assert markdown.index(benchresults.START) < markdown.index("<!-- bench:foundation -->")
    block = markdown[markdown.index(benchresults.START) + len(benchresults.START):markdown.index(benchresults.END)]
    assert block.strip() == benchresults.render(benchresults.load())
    assert max(map(len, markdown.splitlines())) <= 400

    results, page = tmp_path / "results.json", tmp_path / "BENCHMARKS.md"
    page.write_text(f"# B\n\n{benchresults.START}\nold\n{benchresults.END}\n\n<!-- bench:x -->\n")
    benchresults.record("x", "speed: >= 2x", "1.5x", False, path=results)
    benchresults.record("x", "a | b", "ok", "recorded", path=results)
    benchresults.record("x", "speed: >= 2x", "2.5x", True, path=results)
    table = benchresults.write(page, results)
    lines = table.splitlines()
    assert lines[0] == "| bar | figure | met | machine | commit | date |"
    assert lines[2].startswith("| speed: >= 2x | 2.5x | yes | ") and lines[3].startswith("| a \\| b | ok | recorded | ")
    assert page.read_text() == f"# B\n\n{benchresults.START}\n{table}\n{benchresults.END}\n\n<!-- bench:x -->\n"
    p = subprocess.run([str(SCRIPTS / "bench"), "table", "search"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 2
