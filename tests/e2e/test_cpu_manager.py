# The static CPU manager on this machine (2 CPUs): with reservedSystemCPUs 0, a Guaranteed pod with cpu 1 runs on
# CPU 1 alone, a BestEffort pod on CPU 0 (the shared pool, updated in place when the exclusive CPU is taken);
# the pod resources API reports the exclusive CPU; the assignment is in <root-dir>/cpu_manager_state and survives
# a kill -9; when the Guaranteed pod goes the
# BestEffort container gets 0-1 again, in place.
import json
import os

import pytest

import re
import urllib.request

from conftest import BUSYBOX, NODE, SLEEPER, free_port, wait_for


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


# the beta options (on by default upstream through CPUManagerPolicyBetaOptions): accepted at start (they used to
# refuse it) and pinning as without them on this one-NUMA-node, one-L3 machine; their topology-dependent choices are
# unit-tested on upstream's topologies (tests/unit/cm/cpumanager.c)
@pytest.mark.parametrize("option", ["distribute-cpus-across-numa", "prefer-align-cpus-by-uncorecache"])
def test_static_policy_beta_options(kubelet_factory, runtime, option):
    if os.cpu_count() != 2 or not os.path.exists("/sys/devices/system/cpu/cpu1/topology"):
        pytest.skip("written for a node with CPUs 0 and 1")
    k = kubelet_factory(False)
    k.start(*ARGS, "--cpu-manager-policy-options", f"{option}=true")
    k.write("gu.yaml", guaranteed("gu"))
    wait_for(lambda: allowed_cpus(runtime, "gu") == "1", 60, msg="the Guaranteed container on CPU 1 alone")
    [sb] = runtime.pods_named(f"gu-{NODE}", ready_only=True)
    assert state(k)["entries"] == {sb["metadata"]["uid"]: {"c": "1"}}
    k.remove("gu.yaml")
    wait_for(lambda: not runtime.running(f"gu-{NODE}"), 60, msg="the Guaranteed pod gone")


# ---------------------------------------------------------------- with the topology and memory managers
# single-numa-node + static CPU manager + Static memory manager on this one-NUMA-node machine: a Guaranteed pod gets
# its exclusive CPU and cpuset.mems 0 (in its container's cgroup), both state files have upstream's shape and keep
# the assignment across a kill -9, the pod resources API reports the memory; a pod whose device (a fake plugin's,
# on NUMA node 1) cannot be aligned with the node's NUMA node 0 is refused with TopologyAffinityError; the memory
# is released when the pod goes.

def container_cgroup_file(runtime, pod, name):
    """The container's cgroup file (cpuset.mems); where the cgroup has no such file (the cpuset controller not
    enabled down there), what its processes get of it: Mems_allowed_list."""
    running = runtime.running(f"{pod}-{NODE}")
    if len(running) != 1:
        return None
    try:
        pid = runtime.container_pid(running[0]["id"])
    except (OSError, KeyError, ValueError):
        return None
    try:
        return _cgroup_file(pid, name)
    except OSError:
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("Mems_allowed_list:"):
                        return line.split(":", 1)[1].strip()
        except OSError:
            return None
    return None


def _cgroup_file(pid, name):
    """cgroup v1 (the cpuset hierarchy) or v2 (the unified one, when it is mounted at /sys/fs/cgroup)"""
    with open(f"/proc/{pid}/cgroup") as f:
        lines = [line.rstrip("\n").split(":", 2) for line in f]
    for hid, ctrls, path in lines:
        if "cpuset" in ctrls.split(","):
            with open(f"/sys/fs/cgroup/cpuset{path}/{name}") as g:
                return g.read().strip()
    for hid, ctrls, path in lines:
        if hid == "0" and os.path.exists("/sys/fs/cgroup/cgroup.controllers"):
            with open(f"/sys/fs/cgroup{path}/{name}") as g:
                return g.read().strip()
    raise OSError("no cpuset cgroup")


def mm_state(kubelet):
    with open(os.path.join(kubelet.root, "memory_manager_state")) as f:
        return json.load(f)


TM_ARGS = ARGS + ("--topology-manager-policy", "single-numa-node", "--memory-manager-policy", "Static",
                  "--reserved-memory", "0:memory=100Mi", "--eviction-hard", "memory.available<100Mi")


def metrics(port):
    """the read-only port's /metrics: {"name{labels}": value}"""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    return {m.group(1): float(m.group(2)) for m in re.finditer(r"^([a-z_]+(?:\{[^}]*\})?) (\S+)$", text, re.M)}


def test_topology_and_memory_managers(kubelet_factory, runtime, tmp_path):
    if os.cpu_count() != 2 or not os.path.exists("/sys/devices/system/cpu/cpu1/topology"):
        pytest.skip("written for a node with CPUs 0 and 1")
    if os.path.exists("/sys/devices/system/node/node1"):
        pytest.skip("written for a node with one NUMA node")
    k = kubelet_factory(False)
    # a reservedMemory that does not add up to the reservations refuses the start, in upstream's words
    k.start(*ARGS, "--memory-manager-policy", "Static", "--reserved-memory", "0:memory=1Gi",
            "--eviction-hard", "memory.available<100Mi")
    assert k.proc.wait(30) != 0
    k.wait_log(r'the total amount "1Gi" of type "memory" is not equal to the value "100Mi" determined by Node '
               r'Allocatable feature')
    ro = free_port()
    k.start(*TM_ARGS, "--read-only-port", str(ro))
    k.wait_log(r"topology manager: policy single-numa-node, scope container, 1 NUMA nodes", 30)
    k.wait_log(r"memory manager: Static policy, 1 NUMA nodes, 0 assignments", 30)
    k.write("gu.yaml", guaranteed("gu"))
    wait_for(lambda: allowed_cpus(runtime, "gu") == "1", 60, msg="the Guaranteed container on CPU 1 alone")
    assert container_cgroup_file(runtime, "gu", "cpuset.mems") == "0"
    [sb] = runtime.pods_named(f"gu-{NODE}", ready_only=True)
    uid = sb["metadata"]["uid"]
    st = mm_state(k)
    assert st["policyName"] == "Static" and set(st) == {"policyName", "machineState", "entries", "checksum", "data",
                                                        "dataChecksum"}, st
    assert st["entries"] == {uid: {"c": [{"numaAffinity": [0], "type": "memory", "size": 32 << 20}]}}, st
    node0 = st["machineState"]["0"]
    assert node0["numberOfAssignments"] == 1 and node0["cells"] == [0], node0
    mem = node0["memoryMap"]["memory"]
    assert mem["systemReserved"] == 100 << 20 and mem["reserved"] == 32 << 20, mem
    assert mem["free"] == mem["allocatable"] - (32 << 20) and json.loads(st["data"])["entries"] == st["entries"]
    assert state(k)["entries"] == {uid: {"c": "1"}}
    # the managers' metrics: one pinning request each, CPU 1 exclusive (NUMA node 0), the shared pool empty
    # (CPU 0 is reserved), the pod aligned by the single-numa-node policy
    m = metrics(ro)
    assert m["kubelet_cpu_manager_pinning_requests_total"] == 1 and m["kubelet_cpu_manager_pinning_errors_total"] == 0
    assert m["kubelet_memory_manager_pinning_requests_total"] == 1, m
    assert m["kubelet_cpu_manager_exclusive_cpu_allocation_count"] == 1
    assert m["kubelet_cpu_manager_shared_pool_size_millicores"] == 0
    assert m['kubelet_cpu_manager_allocation_per_numa{numa_node="0"}'] == 1
    assert m["kubelet_topology_manager_admission_requests_total"] >= 1
    assert m["kubelet_topology_manager_admission_duration_ms_count"] >= 1
    assert m['kubelet_container_aligned_compute_resources_count{boundary="numa_node",scope="container"}'] == 1
    try:
        import grpc  # noqa: F401
    except ImportError:
        grpc = None
    if grpc is not None:
        from test_device_plugins import PodResources, PluginProc
        pr = PodResources(k)
        [c] = pr.get(f"gu-{NODE}").pod_resources.containers
        assert [(m.memory_type, m.size, [n.ID for n in m.topology.nodes]) for m in c.memory] == \
            [("memory", 32 << 20, [0])], c
        alloc = pr.allocatable()
        assert [(m.memory_type, [n.ID for n in m.topology.nodes]) for m in alloc.memory
                if m.memory_type == "memory"] == [("memory", [0])], alloc

        # a device on NUMA node 1 cannot be aligned with anything on this node's NUMA node 0
        plugin = PluginProc(k, str(tmp_path / "plugin"), "--devices", "1", "--numa", "1").start()
        try:
            k.wait_log(r'Got registration request from device plugin with resource name "example.com/fakedev"', 60)
            wait_for(lambda: [d.device_ids for d in pr.allocatable().devices] == [["dev-0"]], 30,
                     msg="the device allocatable")
            k.write("dev.yaml", f"""\
                apiVersion: v1
                kind: Pod
                metadata: {{name: dev}}
                spec:
                  containers:
                  - name: c
                    image: {BUSYBOX}
                    command: {json.dumps(SLEEPER)}
                    resources: {{limits: {{example.com/fakedev: "1"}}}}
                """)
            k.wait_log(r'Pod admission denied: pod="default/dev-[^"]*" .*reason="TopologyAffinityError" '
                       r'message="Resources cannot be allocated with Topology locality"', 60)
            m = metrics(ro)
            assert m["kubelet_topology_manager_admission_errors_total"] >= 1, m
            assert m['kubelet_container_aligned_compute_resources_failure_count{boundary="numa_node",'
                     'scope="container"}'] >= 1, m
            k.remove("dev.yaml")
        finally:
            plugin.stop()

    # kill -9: both states are read back, nothing is allocated twice
    k.kill9()
    k.start(*TM_ARGS)
    k.wait_log(r"memory manager: Static policy, 1 NUMA nodes, 1 assignments", 30)
    wait_for(lambda: "SyncLoop ADD" in k.log().split("===== starting ckubelet")[-1], 30, msg="pods seen again")
    assert mm_state(k)["entries"] == {uid: {"c": [{"numaAffinity": [0], "type": "memory", "size": 32 << 20}]}}
    assert mm_state(k)["machineState"]["0"]["memoryMap"]["memory"]["reserved"] == 32 << 20
    assert container_cgroup_file(runtime, "gu", "cpuset.mems") == "0"

    # the pod goes: its memory is free again
    k.remove("gu.yaml")
    wait_for(lambda: not runtime.running(f"gu-{NODE}"), 60, msg="the Guaranteed pod gone")
    wait_for(lambda: "entries" not in mm_state(k), 30, msg="the memory released")
    assert mm_state(k)["machineState"]["0"]["memoryMap"]["memory"]["reserved"] == 0
