"""The checked-in gRPC stubs (pdbd/v1/) are exactly what scripts/gen-protos makes from protos/."""

import subprocess
import sys

import pytest

from reference import ROOT

GENERATED = ("solver_pb2.py", "solver_pb2.pyi", "solver_pb2_grpc.py")


@pytest.mark.process
def test_stubs_are_current(tmp_path):
    subprocess.run([str(ROOT / "scripts" / "gen-protos"), str(tmp_path)], check=True,
                   env={"PYTHON": sys.executable, "PATH": "/usr/bin:/bin"})
    for name in GENERATED:
        fresh = (tmp_path / "pdbd" / "v1" / name).read_bytes()
        checked_in = (ROOT / "pdbd" / "v1" / name).read_bytes()
        assert fresh == checked_in, f"pdbd/v1/{name} is stale: run scripts/gen-protos"


def test_stubs_import_as_package_modules():
    from pdbd.v1 import solver_pb2, solver_pb2_grpc

    assert solver_pb2.DESCRIPTOR.package == "pdbd.v1"
    assert solver_pb2_grpc.SolverStub.__module__ == "pdbd.v1.solver_pb2_grpc"
