"""The house's rules: the folders are layers and imports point down only (the import-linter
contract in pyproject.toml), no import cycle, every numba kernel in kernels/, small modules;
and what each entry point loads, checked in fresh interpreters: pdbtool never imports pdbd
or grpc; pdbd's client side (pdbd.client, `pdbd query`) loads no numba, so a query starts
fast; the build kernels load no h5py; nothing loads Ray without --cluster. Each runtime
check runs ``sys.executable -c`` so that nothing imported by the tests themselves counts.
"""

import ast
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from reference import ROOT, free_port

PDBTOOL = ROOT / "pdbtool"
SOURCES = sorted(p for p in PDBTOOL.rglob("*.py") if "__pycache__" not in p.parts)
MODULES = sorted(".".join(p.relative_to(ROOT).with_suffix("").parts) for p in SOURCES
                 if p.stem != "__main__")
MODULES = [m.removesuffix(".__init__") for m in MODULES]
SERVER_SIDE = ("pdbd", "grpc", "grpc_health", "grpc_reflection")
MAX_LINES = 600  # a hand-written module longer than this has more than one job


def test_the_import_contract_holds():
    """import-linter's layers contract (pyproject.toml): no upward import, lazy ones included."""
    lint = Path(sys.executable).with_name("lint-imports")
    p = subprocess.run([str(lint)], capture_output=True, text=True, timeout=120, cwd=ROOT,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert p.returncode == 0 and "0 broken" in p.stdout, p.stdout[-3000:] + p.stderr[-2000:]


def test_no_import_cycle():
    """No module reaches itself through imports (lazy imports inside functions included;
    an import for type annotations only, under TYPE_CHECKING, runs never)."""
    import grimp

    graph = grimp.build_graph("pdbtool", "pdbd", exclude_type_checking_imports=True)
    cycles = [f"{a} -> {b} -> ... -> {a}" for a in sorted(graph.modules)
              for b in sorted(graph.find_modules_directly_imported_by(a))
              if graph.chain_exists(importer=b, imported=a)]
    assert cycles == []


def test_the_folders_are_the_layers():
    top = [p for p in PDBTOOL.glob("*.py")]
    packages = [p for p in PDBTOOL.iterdir() if (p / "__init__.py").is_file()]
    assert len(top) <= 12 and len(packages) >= 5, (sorted(p.name for p in top), packages)
    long = [f"{p.relative_to(ROOT)}: {n}" for p in [*SOURCES, *(ROOT / "pdbd").glob("*.py")]
            if (n := len(p.read_text().splitlines())) > MAX_LINES]
    assert long == []


def test_every_kernel_is_in_kernels():
    """numba's decorators appear only under pdbtool/kernels/ (the kernels apart from
    orchestration and I/O), and the kernels import nothing else of pdbtool."""
    outside, upward = [], []
    for path in SOURCES:
        tree = ast.parse(path.read_text(), str(path))
        inside = path.parent.name == "kernels"
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                if node.module.split(".")[0] == "numba" and not inside and any(
                        a.name in ("njit", "jit", "intrinsic", "overload") for a in node.names):
                    outside.append(f"{path.relative_to(ROOT)}:{node.lineno}")
                if inside and node.module.startswith("pdbtool.") and not node.module.startswith(
                        "pdbtool.kernels"):
                    upward.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.module}")
    assert outside == [] and upward == []


def run_fresh(code: str, *args: str) -> subprocess.CompletedProcess:
    """Run ``code`` in a new interpreter; it prints what went wrong and exits 1 on failure."""
    prelude = textwrap.dedent("""
        import sys
        def loaded(*roots):
            return sorted(m for m in sys.modules if m.split(".")[0] in roots)
    """)
    p = subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code), *args],
                       capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert p.returncode == 0, p.stdout + p.stderr
    return p


@pytest.mark.process
def test_every_pdbtool_module_imports_without_grpc_or_pdbd():
    assert len(MODULES) > 40 and "pdbtool.search.solver" in MODULES
    run_fresh("""
        import importlib
        for name in sys.argv[1:]:
            importlib.import_module(name)
            if loaded("grpc", "pdbd"):
                sys.exit(f"importing {name} loaded {loaded('grpc', 'pdbd')}")
        if "pdbtool.search.solver" not in sys.modules:
            sys.exit("the modules were not imported")
    """, *MODULES)


@pytest.mark.process
def test_python_m_pdbtool_loads_no_grpc():
    p = run_fresh("""
        import runpy
        sys.argv = ["pdbtool", "--help"]
        try:
            runpy.run_module("pdbtool", run_name="__main__")
        except SystemExit as e:
            if e.code != 0:
                sys.exit(f"pdbtool --help exited {e.code}")
        if loaded("grpc", "pdbd"):
            sys.exit(f"python -m pdbtool loaded {loaded('grpc', 'pdbd')}")
    """)
    assert "usage: pdbtool" in p.stdout


def test_pdbtool_source_never_imports_the_server_side():
    """Also lazy imports inside functions, which an import-time check cannot see."""
    found = []
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module]
            else:
                continue
            found += [f"{path.name}:{node.lineno} {n}" for n in names
                      if n.split(".")[0] in SERVER_SIDE]
    assert found == []


@pytest.mark.process
def test_pdbd_client_loads_no_numba():
    run_fresh("""
        import pdbd.client
        client = pdbd.client.SolverClient("127.0.0.1:1")
        client.close()
        if loaded("numba"):
            sys.exit(f"pdbd.client loaded {loaded('numba')}")
        if "grpc" not in sys.modules:
            sys.exit("pdbd.client was not imported")
    """)


PDBD_CLIENT_COMMANDS = {  # argv -> exit code; UNREACHABLE becomes --server=<a closed port>
    "query --help": (["query", "--help"], 0),
    "health --help": (["health", "--help"], 0),
    "query unreachable": (["query", "UNREACHABLE", "1 2 3 4 5 6 7 0 8"], 1),
}


@pytest.mark.process
@pytest.mark.parametrize("command", sorted(PDBD_CLIENT_COMMANDS))
def test_pdbd_client_commands_load_no_numba(command):
    argv, code = PDBD_CLIENT_COMMANDS[command]
    argv = [f"--server=127.0.0.1:{free_port()}" if a == "UNREACHABLE" else a for a in argv]
    p = run_fresh("""
        import pdbd.cli
        try:
            code = pdbd.cli.main(sys.argv[1:])
        except SystemExit as e:  # --help
            code = e.code
        print("exit", code)
        if loaded("numba"):
            sys.exit(f"pdbd {' '.join(sys.argv[1:])} loaded {loaded('numba')}")
    """, *argv)
    assert f"exit {code}" in p.stdout
    assert ("cannot reach pdbd" in p.stderr) == (code == 1)


@pytest.mark.process
def test_build_kernels_load_no_h5py():
    run_fresh("""
        import pdbtool.kernels.build
        if loaded("h5py"):
            sys.exit(f"pdbtool.kernels.build loaded {loaded('h5py')}")
        if "numba" not in sys.modules:
            sys.exit("pdbtool.kernels.build was not imported")
    """)


@pytest.mark.process
def test_public_api_resolves_lazily():
    run_fresh("""
        import pdbtool
        if loaded("numba"):
            sys.exit(f"import pdbtool loaded {loaded('numba')}")
        from pdbtool import Solver, SearchControl, Solvers, build, verify, pack, unpack, install
        for name in pdbtool.__all__:
            if not callable(getattr(pdbtool, name)):
                sys.exit(f"pdbtool.{name} is {getattr(pdbtool, name)!r}, not callable")
    """)


@pytest.mark.process
def test_public_api_does_not_depend_on_import_order():
    run_fresh("""
        import pdbtool.tables.builder, pdbtool.tables.packing, pdbtool.verification  # what install() imports
        from pdbtool import build, verify
        bad = [f.__name__ for f in (build, verify) if not callable(f)]
        if bad:
            sys.exit(f"from pdbtool import ... gave modules: {bad}")
    """)


@pytest.mark.process
def test_pdbtool_and_its_command_line_load_no_ray():
    """Ray is imported only when a cluster is used (pdbtool.cluster.driver.Cluster)."""
    run_fresh("""
        import pdbtool, pdbtool.cli.main, pdbtool.cluster.driver, pdbd.cli, pdbd.servicer
        for argv in (["--help"], ["solve", "--help"], ["build", "--help"]):
            try:
                pdbtool.cli.main.main(argv)
            except SystemExit:
                pass
        code = pdbtool.cli.main.main(["solve", "1 2 3 4 5 6 0 7 8"])
        if code != 0:
            sys.exit(f"pdbtool solve exited {code}")
        if loaded("ray"):
            sys.exit(f"pdbtool without --cluster loaded {loaded('ray')[:5]}")
    """)


@pytest.mark.process
def test_cluster_without_ray_says_how_to_install_it():
    p = run_fresh("""
        sys.modules["ray"] = None  # as if the cluster extra were not installed
        import pdbtool.cli.main
        print("exit", pdbtool.cli.main.main(["solve", "--cluster", "local", "1 2 3 4 5 6 0 7 8"]))
        print("exit", pdbtool.cli.main.main(["build", "8/full", "--cluster", "local", "--out", "/nonexistent/x"]))
    """)
    assert p.stdout.split() == ["exit", "1", "exit", "1"]
    assert p.stderr.count("pip install 'pdbtool[cluster]'") == 2 and "Traceback" not in p.stderr
