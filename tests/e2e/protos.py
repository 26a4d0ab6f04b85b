"""The project's protos (proto/) as Python modules, for the test plug-ins (csiplugin.py, deviceplugin.py) and the
tests that talk gRPC to ckubelet."""
import importlib
import os
import shutil
import subprocess
import sys
import tempfile

PROTO_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "proto")


def load_protos(names):
    """Compile the protos into a temp dir and import them: {name: (pb2, pb2_grpc)}. The dir is removed once they
    are imported (the modules live on in sys.modules), so that a plugin killed with SIGKILL leaves nothing."""
    out = tempfile.mkdtemp(prefix="ckubelet-protos-")
    try:
        subprocess.run([sys.executable, "-m", "grpc_tools.protoc", f"-I{PROTO_DIR}", f"--python_out={out}",
                        f"--grpc_python_out={out}"] + [f"{n}.proto" for n in names], check=True, cwd=PROTO_DIR)
        sys.path.insert(0, out)
        try:
            return {n: (importlib.import_module(f"{n}_pb2"), importlib.import_module(f"{n}_pb2_grpc")) for n in names}
        finally:
            sys.path.remove(out)
    finally:
        shutil.rmtree(out, ignore_errors=True)
