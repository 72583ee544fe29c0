"""The project installs beside python-daemon: its import packages (pdbtool, pdbd) take no
name another distribution uses, as the old top-level ``daemon`` package did."""

import shutil
import subprocess
import sys

import pytest

from reference import ROOT

pytestmark = [pytest.mark.network, pytest.mark.process]

PIP = ["-m", "pip", "install", "-q", "--disable-pip-version-check", "--timeout", "20",
       "--retries", "1"]


def source_copy(dest):
    """What a build reads, copied, so that the in-tree build leaves the checkout clean."""
    dest.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, dest / name)
    for package in ("pdbtool", "pdbd"):
        shutil.copytree(ROOT / package, dest / package,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return dest


def test_installs_and_imports_beside_python_daemon(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = str(venv / "bin" / "python")
    # setuptools>=68 (the project's build requirement) builds wheels without `wheel`.
    registry = subprocess.run([python, *PIP, "python-daemon", "setuptools>=68"],
                              capture_output=True, text=True, timeout=300)
    if registry.returncode != 0:
        last = (registry.stderr.strip().splitlines() or ["no output"])[-1]
        pytest.skip(f"pip cannot install python-daemon from the package registry: {last}")
    # --no-deps: the check is about the import names, not numba & co.
    subprocess.run([python, *PIP, "--no-deps", "--no-build-isolation",
                    str(source_copy(tmp_path / "src"))], check=True, timeout=300)
    p = subprocess.run([python, "-c", (
        "import importlib.resources, importlib.util, daemon, pdbd, pdbtool\n"
        "daemon.DaemonContext\n"
        "assert importlib.resources.files('pdbtool').joinpath('heuristics/forbidden_words.txt').is_file()\n"
        "assert importlib.resources.files('pdbtool').joinpath('cli/animation.html').is_file()\n"
        "assert importlib.util.find_spec('pdbd.v1.solver_pb2_grpc') is not None\n"
        "for m in (daemon, pdbd, pdbtool): print(m.__file__)")],
        capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert p.returncode == 0, p.stderr
    files = p.stdout.split()
    assert len(files) == 3 and all(f.startswith(str(venv)) for f in files), files
    assert files[0].endswith("/daemon/__init__.py")
