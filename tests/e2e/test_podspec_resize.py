"""In-place pod resize (InPlacePodVerticalScaling, GA in 1.35) and container restart rules of API pods, against
the real kube-apiserver v1.37.2 (the pods/resize subresource, metadata.generation, the status fields and
conditions of today's API); the kubelet side is checked on containerd: cgroup values read back, the container not
restarted under NotRequired and restarted under RestartContainer, the allocation kept across a kubelet restart, a
resize that cannot fit. Skipped on the v1.20.2 control plane (CKUBELET_K8S_VERSION=v1.20.2), which predates
them."""
import os
import time

import pytest

import controlplane
from apiobjects import SLEEP, api_pod
from apiobjects import cond, container, cstatus
from conftest import wait_for

pytestmark = pytest.mark.skipif(controlplane.LEGACY, reason="needs kube-apiserver v1.37 (pods/resize, restart rules)")

MI = 1024 * 1024


def resize(kube, name, patch):
    """A strategic merge patch through pods/resize, as `kubectl patch --subresource resize` sends it."""
    return kube.patch("pods", name, patch, sub="resize", kind="strategic-merge")


def container_cgroup(runtime, pod, name, v1_ctrl, v1_file, v2_file, parent=False):
    """A cgroup value of the running container (or of its pod cgroup, parent=True)."""
    [c] = [c for c in runtime.running(pod) if c["metadata"]["name"] == name]
    pid = runtime.container_pid(c["id"])
    paths = {}
    with open(f"/proc/{pid}/cgroup") as f:
        for line in f:
            _, ctrls, path = line.strip().split(":", 2)
            for ctrl in ctrls.split(","):
                paths[ctrl] = path
    if v1_ctrl in paths and os.path.isdir(f"/sys/fs/cgroup/{v1_ctrl}"):
        d, fn = f"/sys/fs/cgroup/{v1_ctrl}" + paths[v1_ctrl], v1_file
    else:
        d, fn = "/sys/fs/cgroup" + paths[""], v2_file
    if parent:
        d = os.path.dirname(d)
    with open(os.path.join(d, fn)) as f:
        return f.read().split()[0]


def memory_limit(runtime, pod, name, parent=False):
    return int(container_cgroup(runtime, pod, name, "memory", "memory.limit_in_bytes", "memory.max", parent))


def cpu_quota(runtime, pod, name, parent=False):
    return int(container_cgroup(runtime, pod, name, "cpu", "cpu.cfs_quota_us", "cpu.max", parent))


def running_id(runtime, pod, name):
    [c] = [c for c in runtime.running(pod) if c["metadata"]["name"] == name]
    return c["id"]


def test_in_place_resize(kube, runtime):
    k = kube.kubelet()
    kube.create("pods", api_pod("rs", [
        container("app", SLEEP, resources={"requests": {"cpu": "100m", "memory": "32Mi"},
                                           "limits": {"cpu": "200m", "memory": "64Mi"}},
                  resizePolicy=[{"resourceName": "cpu", "restartPolicy": "NotRequired"},
                                {"resourceName": "memory", "restartPolicy": "RestartContainer"}])],
        kube.node, grace=1))
    wait_for(lambda: runtime.running("rs", "app"), 60, msg="app running")
    first = running_id(runtime, "rs", "app")
    p = kube.wait(lambda: (p := kube.pod("rs")) and (c := cstatus(p, "app")) and c.get("resources") and p,
                       30, msg="the status with the container's resources")
    c = cstatus(p, "app")
    assert c["allocatedResources"] == {"cpu": "100m", "memory": "32Mi"}
    assert c["resources"] == {"limits": {"cpu": "200m", "memory": "64Mi"}, "requests": {"cpu": "100m",
                                                                                       "memory": "32Mi"}}
    assert cpu_quota(runtime, "rs", "app") == 20000 and memory_limit(runtime, "rs", "app") == 64 * MI

    # cpu, NotRequired: in place, the container keeps running
    resize(kube, "rs", {"spec": {"containers": [{"name": "app", "resources": {
        "requests": {"cpu": "300m", "memory": "32Mi"}, "limits": {"cpu": "400m", "memory": "64Mi"}}}]}})
    wait_for(lambda: cpu_quota(runtime, "rs", "app") == 40000, 30, msg="the container's cpu quota raised")
    assert cpu_quota(runtime, "rs", "app", parent=True) == 40000  # the pod cgroup too
    assert running_id(runtime, "rs", "app") == first
    p = kube.wait(lambda: (p := kube.pod("rs")) and cstatus(p, "app").get("allocatedResources", {}).get(
        "cpu") == "300m" and cstatus(p, "app").get("resources", {}).get("limits", {}).get("cpu") == "400m" and
        not cond(p, "PodResizeInProgress") and p, 30, msg="the resize done in the status")
    assert cstatus(p, "app")["restartCount"] == 0
    assert p["status"]["observedGeneration"] == p["metadata"]["generation"] == 2
    k.wait_log(r'Event occurred: [^\n]*reason="ResizeCompleted" message="Pod resize completed: ', 10)

    # memory, RestartContainer: the container is restarted with the new limit
    resize(kube, "rs", {"spec": {"containers": [{"name": "app", "resources": {
        "requests": {"cpu": "300m", "memory": "64Mi"}, "limits": {"cpu": "400m", "memory": "128Mi"}}}]}})
    wait_for(lambda: (r := runtime.running("rs", "app")) and r[0]["id"] != first, 60, msg="app restarted")
    wait_for(lambda: memory_limit(runtime, "rs", "app") == 128 * MI, 30, msg="the new memory limit")
    assert memory_limit(runtime, "rs", "app", parent=True) == 128 * MI
    p = kube.wait(lambda: (p := kube.pod("rs")) and cstatus(p, "app")["restartCount"] == 1 and
                       cstatus(p, "app").get("allocatedResources", {}).get("memory") == "64Mi" and p, 30,
                       msg="the restart in the status")
    k.wait_log(r'reason="Killing" message="Container app resize requires restart"', 10)

    # the allocation is kept across a kubelet restart (a checkpoint under --root-dir): nothing is redone
    second = running_id(runtime, "rs", "app")
    assert os.path.exists(os.path.join(k.root, "allocated_pods_state"))
    k.restart()
    time.sleep(3)
    assert running_id(runtime, "rs", "app") == second
    assert memory_limit(runtime, "rs", "app") == 128 * MI and cpu_quota(runtime, "rs", "app") == 40000

    # more than the node has: kube-apiserver v1.37 refuses it itself (its resize admission compares with the node's
    # allocatable); the kubelet's own PodResizePending Infeasible (a node that shrank after the API's check) is
    # unit-tested (tests/unit/kubelet/allocation.c, podspec.c)
    with pytest.raises(controlplane.ApiError) as e:
        resize(kube, "rs", {"spec": {"containers": [{"name": "app", "resources": {
            "requests": {"cpu": "4000", "memory": "64Mi"}, "limits": {"cpu": "4000", "memory": "128Mi"}}}]}})
    assert e.value.status == 403
    assert "node didn't have enough allocatable resources: cpu, requested: 4000000" in e.value.body["message"]
    p = kube.pod("rs")
    assert not cond(p, "PodResizePending")
    assert cstatus(p, "app")["allocatedResources"]["cpu"] == "300m"
    assert cpu_quota(runtime, "rs", "app") == 40000 and running_id(runtime, "rs", "app") == second


def test_container_restart_rules_of_an_api_pod(kube, runtime):
    kube.kubelet()
    kube.create("pods", api_pod("rules", [
        container("retry", ["sh", "-c", "exit 42"], restartPolicy="Never",
                  restartPolicyRules=[{"action": "Restart", "exitCodes": {"operator": "In", "values": [42]}}]),
        container("done", ["sh", "-c", "exit 3"])], kube.node, restart_policy="Never", grace=1))
    # restarted on 42 though the pod's restartPolicy is Never; the other one is not; the pod stays Running
    # the two containers run side by side: wait until retry has restarted and done has exited, in any order
    p = kube.wait(lambda: (p := kube.pod("rules")) and (c := cstatus(p, "retry")) and
                       c["restartCount"] >= 1 and "terminated" in (cstatus(p, "done") or {}).get("state", {}) and p,
                       60, msg="retry restarted and done exited")
    assert p["status"]["phase"] == "Running"
    assert cstatus(p, "done")["restartCount"] == 0
    assert cstatus(p, "done")["state"]["terminated"]["exitCode"] == 3
