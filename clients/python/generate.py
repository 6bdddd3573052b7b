#!/usr/bin/env python3
"""Regenerates the gRPC stubs in src/baton_client/v1/ from
../../proto/baton/v1/*.proto with grpcio-tools (pip install
"grpcio-tools==1.85.1"; the version is pinned so the output is reproducible).
The stubs are committed: installing the package needs no code generator.

    python3 generate.py [OUT]   OUT defaults to src/; the tests generate into
                                a temporary directory and compare.
"""
import os
import re
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO_ROOT = os.path.join(HERE, "..", "..", "proto")
PROTOS = ["baton/v1/leader_election.proto"]
GRPCIO_TOOLS_VERSION = "1.85.1"


def generate(out: str) -> None:
    from grpc_tools import protoc
    include = os.path.join(os.path.dirname(protoc.__file__), "_proto")
    with tempfile.TemporaryDirectory() as tmp:
        args = ["protoc", f"-I{PROTO_ROOT}", f"-I{include}", f"--python_out={tmp}",
                f"--pyi_out={tmp}", f"--grpc_python_out={tmp}", *PROTOS]
        if protoc.main(args) != 0:
            raise SystemExit("protoc failed")
        dest = os.path.join(out, "baton_client", "v1")
        os.makedirs(dest, exist_ok=True)
        src = os.path.join(tmp, "baton", "v1")
        for name in sorted(os.listdir(src)):
            with open(os.path.join(src, name)) as f:
                text = f.read()
            # The stubs import their messages as top-level package baton.v1;
            # inside baton_client that module is a sibling.
            text = re.sub(r"^from baton\.v1 import", "from . import", text, flags=re.M)
            with open(os.path.join(dest, name), "w") as f:
                f.write(text)


if __name__ == "__main__":
    generate(sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "src"))
