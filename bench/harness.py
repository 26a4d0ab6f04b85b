"""What the benchmarks share: a private containerd with the locally built images, cleaned up afterwards."""
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
import conftest  # noqa: E402
from conftest import Runtime  # noqa: E402


@contextlib.contextmanager
def private_runtime(net_index):
    """Yields (runtime, its directory); the runtime is cleaned and stopped on the way out."""
    subprocess.run(["bash", os.path.join(conftest.SCRIPTS, "build-images.sh"), conftest.IMAGE_CACHE], check=True)
    d = tempfile.mkdtemp(prefix="ckubelet-bench-", dir="/var/tmp")
    rt = Runtime(d, net_index)
    rt.start()
    try:
        subprocess.run(["bash", os.path.join(conftest.SCRIPTS, "containerd.sh"), "import", d,
                        os.path.join(conftest.IMAGE_CACHE, "images.tar")], check=True)
        yield rt, d
    finally:
        try:
            try:
                rt.clean()
            except AssertionError as e:  # containerd refusing to delete (seen with 1,000 pods): still stop it below
                print(f"cleaning the runtime: {e}", file=sys.stderr)
            # the cgroup roots this process's kubelets were given (conftest.make_cgroup_root: /ckubelet-<pid>-<n>)
            for h in conftest.cgroup_hierarchies()[:1]:
                for name in os.listdir(h):
                    if name.startswith(f"ckubelet-{os.getpid()}-"):
                        conftest.remove_cgroup_root("/" + name)
        finally:
            rt.stop()
            shutil.rmtree(d, ignore_errors=True)
