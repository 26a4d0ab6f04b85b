# The static CPU manager on this machine (2 CPUs): with reservedSystemCPUs 0, a Guaranteed pod with cpu 1 runs on
# CPU 1 alone, a BestEffort pod on CPU 0 (the shared pool, updated in place when the exclusive CPU is taken);
# the pod resources API reports the exclusive CPU; the assignment is in <root-dir>/cpu_manager_state and survives
# a kill -9; when the Guaranteed pod goes the
# BestEffort container gets 0-1 again, in place.
import json
import os

import pytest

from conftest import BUSYBOX, NODE, SLEEPER, wait_for


def guaranteed(name):
    return f"""\
apiVersion: v1
kind: Pod
metadata:
  name: {name}
spec:
  containers:
  - name: c
    image: {BUSYBOX}
    command: {json.dumps(SLEEPER)}
    resources:
      requests: {{cpu: "1", memory: 32Mi}}
      limits: {{cpu: "1", memory: 32Mi}}
"""


BESTEFFORT = f"""\
apiVersion: v1
kind: Pod
metadata:
  name: be
spec:
  containers:
  - name: c
    image: {BUSYBOX}
    command: {json.dumps(SLEEPER)}
"""


def allowed_cpus(runtime, pod):
    """Cpus_allowed_list of the pod's running container's init process (what its cgroup's cpuset gives it)."""
    running = runtime.running(f"{pod}-{NODE}")
    if len(running) != 1:
        return None
    try:
        pid = runtime.container_pid(running[0]["id"])
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("Cpus_allowed_list:"):
                    return line.split(":", 1)[1].strip()
    except (OSError, KeyError, ValueError):
        return None
    return None


def state(kubelet):
    with open(os.path.join(kubelet.root, "cpu_manager_state")) as f:
        return json.load(f)


ARGS = ("--cpu-manager-policy", "static", "--reserved-cpus", "0", "--cpu-manager-reconcile-period", "1s")


def test_static_cpu_manager(kubelet_factory, runtime):
    if os.cpu_count() != 2 or not os.path.exists("/sys/devices/system/cpu/cpu1/topology"):
        pytest.skip("written for a node with CPUs 0 and 1")
    k = kubelet_factory(False)
    k.start(*ARGS)
    k.write("gu.yaml", guaranteed("gu"))
    k.write("be.yaml", BESTEFFORT)
    wait_for(lambda: allowed_cpus(runtime, "gu") == "1", 60, msg="the Guaranteed container on CPU 1 alone")
    # the shared pool without the exclusive CPU (set at creation, or by the next reconcile pass)
    wait_for(lambda: allowed_cpus(runtime, "be") == "0", 60, msg="the BestEffort container on CPU 0")
    [sb] = runtime.pods_named(f"gu-{NODE}", ready_only=True)
    uid = sb["metadata"]["uid"]
    st = state(k)
    assert st["policyName"] == "static" and st["defaultCpuSet"] == "0", st
    assert st["entries"] == {uid: {"c": "1"}}, st
    assert "dataChecksum" in st and "checksum" in st
    # the pod resources API: the exclusive CPU per container, the CPUs that can be given exclusively (with
    # python3-grpcio only, as test_device_plugins; the server's side is also in tests/unit/grpc/server.c)
    try:
        import grpc  # noqa: F401
    except ImportError:
        grpc = None
    if grpc is not None:
        from test_device_plugins import PodResources
        pr = PodResources(k)
        cpus = {(p.name, c.name): list(c.cpu_ids) for p in pr.list().pod_resources for c in p.containers}
        assert cpus == {(f"gu-{NODE}", "c"): [1], (f"be-{NODE}", "c"): []}, cpus
        assert list(pr.get(f"gu-{NODE}").pod_resources.containers[0].cpu_ids) == [1]
        assert list(pr.allocatable().cpu_ids) == [1]

    # kill -9: the state is on disk; the restarted kubelet starts from it (the shared pool is CPU 0, not 0-1) and
    # keeps the assignment through its reconcile passes
    k.kill9()
    k.start(*ARGS)
    k.wait_log(r"CPU manager: static policy, 2 CPUs, shared pool 0\n", 30)
    wait_for(lambda: "SyncLoop ADD" in k.log().split("===== starting ckubelet")[-1], 30, msg="pods seen again")
    # with reservedSystemCPUs 0 node allocatable has 1 CPU (upstream's run(): it replaces the reserved cpu), so a
    # second Guaranteed pod is refused by the resource fit, before the CPU manager
    k.write("gu2.yaml", guaranteed("gu2"))
    k.wait_log(r'Pod admission denied: pod="default/gu2-[^"]*" .*reason="OutOfcpu"', 60)
    assert state(k)["entries"] == {uid: {"c": "1"}}
    assert allowed_cpus(runtime, "gu") == "1" and allowed_cpus(runtime, "be") == "0"
    k.remove("gu2.yaml")

    # the Guaranteed pod goes: its CPU is back in the pool, and the BestEffort container is updated in place
    be_id = runtime.running(f"be-{NODE}")[0]["id"]
    k.remove("gu.yaml")
    wait_for(lambda: not runtime.running(f"gu-{NODE}"), 60, msg="the Guaranteed pod gone")
    wait_for(lambda: allowed_cpus(runtime, "be") == "0-1", 60, msg="the BestEffort container on CPUs 0-1")
    assert runtime.running(f"be-{NODE}")[0]["id"] == be_id  # the same container: updated, not restarted
    wait_for(lambda: state(k)["defaultCpuSet"] == "0-1" and "entries" not in state(k), 30, msg="the state released")
