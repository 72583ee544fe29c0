"""Import layering: what each entry point loads, checked in fresh interpreters.

pdbtool never imports pdbd or grpc; pdbd's client side (pdbd.client, `pdbd query`) loads no
numba, so a query starts fast; the build kernels load no h5py. Each check runs
``sys.executable -c`` so that nothing imported by the tests themselves is counted.
"""

import ast
import subprocess
import sys
import textwrap

import pytest

from reference import ROOT, free_port

PDBTOOL = ROOT / "pdbtool"
MODULES = sorted(f"pdbtool.{p.stem}" for p in PDBTOOL.glob("*.py")
                 if p.stem not in ("__init__", "__main__"))
SERVER_SIDE = ("pdbd", "grpc", "grpc_health", "grpc_reflection")


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
    assert len(MODULES) > 20 and "pdbtool.search" in MODULES
    run_fresh("""
        import importlib
        for name in sys.argv[1:]:
            importlib.import_module(name)
            if loaded("grpc", "pdbd"):
                sys.exit(f"importing {name} loaded {loaded('grpc', 'pdbd')}")
        if "pdbtool.search" not in sys.modules:
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
    for path in sorted(PDBTOOL.glob("*.py")):
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
        import pdbtool.build_kernel
        if loaded("h5py"):
            sys.exit(f"pdbtool.build_kernel loaded {loaded('h5py')}")
        if "numba" not in sys.modules:
            sys.exit("pdbtool.build_kernel was not imported")
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
        import pdbtool.builder, pdbtool.packing, pdbtool.verification  # what install() imports
        from pdbtool import build, verify
        bad = [f.__name__ for f in (build, verify) if not callable(f)]
        if bad:
            sys.exit(f"from pdbtool import ... gave modules: {bad}")
    """)


@pytest.mark.process
def test_pdbtool_and_its_command_line_load_no_ray():
    """Ray is imported only when a cluster is used (pdbtool.cluster.Cluster)."""
    run_fresh("""
        import pdbtool, pdbtool.cli, pdbtool.cluster, pdbd.cli, pdbd.servicer
        for argv in (["--help"], ["solve", "--help"], ["build", "--help"]):
            try:
                pdbtool.cli.main(argv)
            except SystemExit:
                pass
        code = pdbtool.cli.main(["solve", "1 2 3 4 5 6 0 7 8"])
        if code != 0:
            sys.exit(f"pdbtool solve exited {code}")
        if loaded("ray"):
            sys.exit(f"pdbtool without --cluster loaded {loaded('ray')[:5]}")
    """)


@pytest.mark.process
def test_cluster_without_ray_says_how_to_install_it():
    p = run_fresh("""
        sys.modules["ray"] = None  # as if the cluster extra were not installed
        import pdbtool.cli
        print("exit", pdbtool.cli.main(["solve", "--cluster", "local", "1 2 3 4 5 6 0 7 8"]))
        print("exit", pdbtool.cli.main(["build", "8/full", "--cluster", "local", "--out", "/nonexistent/x"]))
    """)
    assert p.stdout.split() == ["exit", "1", "exit", "1"]
    assert p.stderr.count("pip install -e '.[cluster]' in the checkout") == 2 and "Traceback" not in p.stderr
