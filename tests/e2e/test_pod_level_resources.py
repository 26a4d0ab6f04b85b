# Pod-level resources (spec.resources, PodLevelResources beta on since v1.34), standalone: the pod cgroup sized from
# them (ResourceConfigForPod), containers without their own limits given the pod's (getCPULimit/getMemoryLimit),
# the QoS class in the status computed from them. Reads cgroup v1 files. Then an API pod against kube-apiserver
# v1.37.2, resized in place at pod level.
import json

import pytest

import controlplane
from apiclient import Client
from apiobjects import SLEEP, api_pod, cond, container
from conftest import BUSYBOX, NODE, SLEEPER, free_port, wait_for
from test_podspec_resize import cpu_quota, memory_limit, resize
from test_qos import CPU, MEMORY, V1, container_cgroups, pod_uid, read

MI = 1024 * 1024


def manifest(name, pod_resources, containers):
    """pod_resources: {"requests": {...}, "limits": {...}}; containers: list of (name, requests, limits)"""
    lines = ["apiVersion: v1", "kind: Pod", "metadata:", f"  name: {name}", "spec:",
             f"  resources: {json.dumps(pod_resources)}", "  containers:"]
    for cname, req, lim in containers:
        res = {k: v for k, v in (("requests", req), ("limits", lim)) if v}
        lines += [f"  - name: {cname}", f"    image: {BUSYBOX}", f"    command: {json.dumps(SLEEPER)}",
                  f"    resources: {json.dumps(res)}"]
    return "\n".join(lines) + "\n"


def status_of(ro, name):
    for p in ro.json("/pods")["items"]:
        if p["metadata"]["name"] == name:
            return p.get("status", {})
    return {}


def start(k, runtime, name, text, n):
    k.write(f"{name}.yaml", text)
    full = f"{name}-{NODE}"
    wait_for(lambda: len(runtime.running(full)) == n, 60, msg=f"pod {name} running")
    return full, pod_uid(runtime, full)


def test_pod_level_resources_cgroups_and_qos(kubelet_factory, runtime):
    assert V1, "this test reads cgroup v1 files"
    k = kubelet_factory(start=False)
    port = free_port()
    k.start("--read-only-port", str(port))
    ro = Client(port, tls=False)
    kubepods = k.cgroup_root + "/kubepods"

    # Guaranteed at pod level, the containers without resources: kubepods/pod<uid> sized from spec.resources
    g, guid = start(k, runtime, "g", manifest("g", {"requests": {"cpu": "500m", "memory": "96Mi"},
                                                    "limits": {"cpu": "500m", "memory": "96Mi"}},
                                              [("a", None, None), ("b", None, None)]), 2)
    gdir = f"{kubepods}/pod{guid}"
    assert read(f"{MEMORY}{gdir}/memory.limit_in_bytes") == str(96 * MI)
    assert read(f"{CPU}{gdir}/cpu.cfs_period_us") == "100000"
    assert read(f"{CPU}{gdir}/cpu.cfs_quota_us") == "50000"
    assert read(f"{CPU}{gdir}/cpu.shares") == str(500 * 1024 // 1000)
    # each container without its own limits is given the pod's (kuberuntime getCPULimit/getMemoryLimit)
    cgs = container_cgroups(runtime, g)
    assert len(cgs) == 2
    for cname, paths in cgs:
        assert paths["cpu"].startswith(gdir + "/") and paths["memory"].startswith(gdir + "/"), paths
        assert read(f"{MEMORY}{paths['memory']}/memory.limit_in_bytes") == str(96 * MI), cname
        assert read(f"{CPU}{paths['cpu']}/cpu.cfs_quota_us") == "50000", cname
        assert read(f"{CPU}{paths['cpu']}/cpu.shares") == "512", cname
    wait_for(lambda: status_of(ro, g).get("qosClass") == "Guaranteed", 30, msg="qosClass Guaranteed")

    # Burstable at pod level: shares from the pod's request, quota and memory limit from its limits although the
    # container has none; the container with its own cpu request keeps its shares
    b, buid = start(k, runtime, "b", manifest("b", {"requests": {"cpu": "200m", "memory": "32Mi"},
                                                    "limits": {"cpu": "1", "memory": "128Mi"}},
                                              [("a", {"cpu": "100m"}, None)]), 1)
    bdir = f"{kubepods}/burstable/pod{buid}"
    assert read(f"{CPU}{bdir}/cpu.shares") == str(200 * 1024 // 1000)
    assert read(f"{CPU}{bdir}/cpu.cfs_quota_us") == "100000"
    assert read(f"{MEMORY}{bdir}/memory.limit_in_bytes") == str(128 * MI)
    [(cname, paths)] = container_cgroups(runtime, b)
    assert paths["cpu"].startswith(bdir + "/"), paths
    assert read(f"{CPU}{paths['cpu']}/cpu.shares") == str(100 * 1024 // 1000)
    assert read(f"{CPU}{paths['cpu']}/cpu.cfs_quota_us") == "100000"
    assert read(f"{MEMORY}{paths['memory']}/memory.limit_in_bytes") == str(128 * MI)
    wait_for(lambda: status_of(ro, b).get("qosClass") == "Burstable", 30, msg="qosClass Burstable")

    # a pod-level request below its containers' is refused by validation, the other pods untouched
    k.write("bad.yaml", manifest("bad", {"requests": {"cpu": "100m"}}, [("a", {"cpu": "200m"}, None)]))
    k.wait_log(r"spec\.resources\.requests\[cpu\]: Invalid value: \"100m\": must be greater than or equal to "
               r"aggregate container requests of 200m", 30)
    assert not runtime.pods_named(f"bad-{NODE}")
    assert runtime.running(g) and runtime.running(b)


@pytest.mark.skipif(controlplane.LEGACY, reason="needs kube-apiserver v1.37 (spec.resources, pods/resize)")
def test_pod_level_resources_api_pod_and_resize(kube, runtime):
    """An API pod with pod-level resources against kube-apiserver v1.37.2: the QoS class, the pod-level status
    (allocatedResources, resources), the cgroups, then an in-place resize of the pod-level cpu limit
    (InPlacePodLevelResourcesVerticalScaling, beta on) applied to the pod cgroup and to the container that has no
    limit of its own."""
    kube.kubelet()
    res = {"requests": {"cpu": "200m", "memory": "32Mi"}, "limits": {"cpu": "400m", "memory": "64Mi"}}
    kube.create("pods", api_pod("plr", [container("app", SLEEP)], kube.node, grace=1,
                                extra_spec={"resources": res}))
    wait_for(lambda: runtime.running("plr", "app"), 60, msg="app running")
    p = kube.wait(lambda: (p := kube.pod("plr")) and p["status"].get("resources") and p, 30,
                  msg="the pod-level resources in the status")
    assert p["status"]["qosClass"] == "Burstable"
    assert p["status"]["allocatedResources"] == res["requests"]
    assert p["status"]["resources"] == res
    assert cpu_quota(runtime, "plr", "app") == 40000 and memory_limit(runtime, "plr", "app") == 64 * MI
    assert cpu_quota(runtime, "plr", "app", parent=True) == 40000
    assert memory_limit(runtime, "plr", "app", parent=True) == 64 * MI

    resize(kube, "plr", {"spec": {"resources": {"requests": {"cpu": "200m", "memory": "32Mi"},
                                                "limits": {"cpu": "600m", "memory": "64Mi"}}}})
    wait_for(lambda: cpu_quota(runtime, "plr", "app", parent=True) == 60000, 30, msg="the pod cgroup's quota raised")
    wait_for(lambda: cpu_quota(runtime, "plr", "app") == 60000, 30, msg="the container's quota raised")
    kube.wait(lambda: (p := kube.pod("plr")) and p["status"].get("resources", {}).get("limits", {}).get("cpu") ==
              "600m" and not cond(p, "PodResizeInProgress") and not cond(p, "PodResizePending") and p, 30,
              msg="the resize done in the status")
