"""In-place pod resize (InPlacePodVerticalScaling, GA in 1.35) and container restart rules of API pods: their API
side (the pods/resize subresource, metadata.generation, the status fields and conditions of today's API) comes
from the fake apiserver (fakeapi.py), as the v1.20 control plane predates them; the kubelet side is checked on
containerd: cgroup values read back, the container not restarted under NotRequired and restarted under
RestartContainer, the allocation kept across a kubelet restart, a resize that cannot fit."""
import os
import time

import pytest

from apiobjects import SLEEP, api_pod as _api_pod
from apiobjects import cond, container, cstatus
from conftest import NODE, wait_for
from fakeapi import FakeApiServer

MI = 1024 * 1024


@pytest.fixture
def apiserver(tmp_path):
    a = FakeApiServer(str(tmp_path / "apiserver"), node_name=NODE)
    a.bookmark_interval = 1.0
    a.start()
    yield a
    a.stop()


def join(kubelet_factory, apiserver, *extra):
    k = kubelet_factory(start=False)
    k.start("--kubeconfig", apiserver.kubeconfig, "--node-status-update-frequency", "1s", *extra)
    return k


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


def test_in_place_resize(kubelet_factory, apiserver, runtime):
    k = join(kubelet_factory, apiserver)
    apiserver.create("pods", _api_pod("rs", [
        container("app", SLEEP, resources={"requests": {"cpu": "100m", "memory": "32Mi"},
                                           "limits": {"cpu": "200m", "memory": "64Mi"}},
                  resizePolicy=[{"resourceName": "cpu", "restartPolicy": "NotRequired"},
                                {"resourceName": "memory", "restartPolicy": "RestartContainer"}])],
        NODE, grace=1), "default")
    wait_for(lambda: runtime.running("rs", "app"), 60, msg="app running")
    first = running_id(runtime, "rs", "app")
    p = apiserver.wait(lambda: (p := apiserver.pod("rs")) and (c := cstatus(p, "app")) and c.get("resources") and p,
                       30, msg="the status with the container's resources")
    c = cstatus(p, "app")
    assert c["allocatedResources"] == {"cpu": "100m", "memory": "32Mi"}
    assert c["resources"] == {"limits": {"cpu": "200m", "memory": "64Mi"}, "requests": {"cpu": "100m",
                                                                                       "memory": "32Mi"}}
    assert cpu_quota(runtime, "rs", "app") == 20000 and memory_limit(runtime, "rs", "app") == 64 * MI

    # cpu, NotRequired: in place, the container keeps running
    apiserver.resize("rs", {"spec": {"containers": [{"name": "app", "resources": {
        "requests": {"cpu": "300m", "memory": "32Mi"}, "limits": {"cpu": "400m", "memory": "64Mi"}}}]}})
    wait_for(lambda: cpu_quota(runtime, "rs", "app") == 40000, 30, msg="the container's cpu quota raised")
    assert cpu_quota(runtime, "rs", "app", parent=True) == 40000  # the pod cgroup too
    assert running_id(runtime, "rs", "app") == first
    p = apiserver.wait(lambda: (p := apiserver.pod("rs")) and cstatus(p, "app").get("allocatedResources", {}).get(
        "cpu") == "300m" and cstatus(p, "app").get("resources", {}).get("limits", {}).get("cpu") == "400m" and
        not cond(p, "PodResizeInProgress") and p, 30, msg="the resize done in the status")
    assert cstatus(p, "app")["restartCount"] == 0
    assert p["status"]["observedGeneration"] == p["metadata"]["generation"] == 2
    k.wait_log(r'Event occurred: [^\n]*reason="ResizeCompleted" message="Pod resize completed: ', 10)

    # memory, RestartContainer: the container is restarted with the new limit
    apiserver.resize("rs", {"spec": {"containers": [{"name": "app", "resources": {
        "requests": {"cpu": "300m", "memory": "64Mi"}, "limits": {"cpu": "400m", "memory": "128Mi"}}}]}})
    wait_for(lambda: (r := runtime.running("rs", "app")) and r[0]["id"] != first, 60, msg="app restarted")
    wait_for(lambda: memory_limit(runtime, "rs", "app") == 128 * MI, 30, msg="the new memory limit")
    assert memory_limit(runtime, "rs", "app", parent=True) == 128 * MI
    p = apiserver.wait(lambda: (p := apiserver.pod("rs")) and cstatus(p, "app")["restartCount"] == 1 and
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

    # more than the node has: PodResizePending Infeasible, the pod keeps its allocation
    apiserver.resize("rs", {"spec": {"containers": [{"name": "app", "resources": {
        "requests": {"cpu": "4000", "memory": "64Mi"}, "limits": {"cpu": "4000", "memory": "128Mi"}}}]}})
    p = apiserver.wait(lambda: (p := apiserver.pod("rs")) and cond(p, "PodResizePending") and p, 30,
                       msg="PodResizePending")
    pending = cond(p, "PodResizePending")
    assert pending["status"] == "True" and pending["reason"] == "Infeasible"
    assert pending["message"].startswith("Node didn't have enough capacity: cpu, requested: 4000000, capacity: ")
    assert pending["observedGeneration"] == p["metadata"]["generation"]
    assert cstatus(p, "app")["allocatedResources"]["cpu"] == "300m"
    assert cpu_quota(runtime, "rs", "app") == 40000 and running_id(runtime, "rs", "app") == second
    # set back: the pending condition goes
    apiserver.resize("rs", {"spec": {"containers": [{"name": "app", "resources": {
        "requests": {"cpu": "300m", "memory": "64Mi"}, "limits": {"cpu": "400m", "memory": "128Mi"}}}]}})
    apiserver.wait(lambda: (p := apiserver.pod("rs")) and not cond(p, "PodResizePending") and p, 30,
                   msg="PodResizePending gone")


def test_container_restart_rules_of_an_api_pod(kubelet_factory, apiserver, runtime):
    join(kubelet_factory, apiserver)
    apiserver.create("pods", _api_pod("rules", [
        container("retry", ["sh", "-c", "exit 42"], restartPolicy="Never",
                  restartPolicyRules=[{"action": "Restart", "exitCodes": {"operator": "In", "values": [42]}}]),
        container("done", ["sh", "-c", "exit 3"])], NODE, restart_policy="Never", grace=1), "default")
    # restarted on 42 though the pod's restartPolicy is Never; the other one is not; the pod stays Running
    # the two containers run side by side: wait until retry has restarted and done has exited, in any order
    p = apiserver.wait(lambda: (p := apiserver.pod("rules")) and (c := cstatus(p, "retry")) and
                       c["restartCount"] >= 1 and "terminated" in (cstatus(p, "done") or {}).get("state", {}) and p,
                       60, msg="retry restarted and done exited")
    assert p["status"]["phase"] == "Running"
    assert cstatus(p, "done")["restartCount"] == 0
    assert cstatus(p, "done")["state"]["terminated"]["exitCode"] == 3
