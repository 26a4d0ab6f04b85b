"""What the benchmarks share: a private containerd with the locally built images, cleaned up afterwards."""
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
import conftest  # noqa: E402
from conftest import Runtime  # noqa: E402


def remove_cgroup_root(name):
    """conftest.remove_cgroup_root; when processes are left in it (a runtime that could not be emptied: seen with
    1,000 pods, `runc init` of creations containerd abandoned when it was stopped), they are killed first: the root
    is this benchmark's own. Says so and goes on when even that fails, so that the figures are still reported."""
    try:
        conftest.remove_cgroup_root(name)
        return
    except AssertionError:
        pass
    pids = set()
    for h in conftest.cgroup_hierarchies():
        for d, _, files in os.walk(h + name):
            if "cgroup.procs" in files:
                with open(os.path.join(d, "cgroup.procs")) as f:
                    pids.update(int(x) for x in f.read().split())
    print(f"cgroup root {name}: killing {len(pids)} processes left in it", file=sys.stderr)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        conftest.remove_cgroup_root(name)
    except AssertionError as e:
        print(f"cgroup root {name}: {e}", file=sys.stderr)


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
                        remove_cgroup_root("/" + name)
        finally:
            rt.stop()
            shutil.rmtree(d, ignore_errors=True)
