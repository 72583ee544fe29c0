"""The scripts stay runnable: the benchmark programs import (the API they use exists) and
name the BENCHMARKS.md sections that scripts/bench dispatches to. No benchmark is run."""

import re
import subprocess
import sys

from reference import ROOT

SCRIPTS = ROOT / "scripts"
PROGRAMS = sorted(SCRIPTS.glob("bench_*.py"))


def test_bench_programs_import_and_name_their_sections():
    names = [p.stem.removeprefix("bench_") for p in PROGRAMS]
    assert len(names) == 7
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
    p = subprocess.run(["bash", "-n", str(SCRIPTS / "demo")], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
