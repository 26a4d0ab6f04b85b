"""Dynamic Resource Allocation on the kubelet side against the v1.37 control plane (issue 37 item 3): a DRA
driver of the tests' own (draplugin.py) registers through plugins_registry, the test publishes its ResourceSlice
and a DeviceClass, the scheduler allocates a ResourceClaim shared by two pods; the kubelet prepares it once
(NodePrepareResources), keeps it prepared across a kill -9 without preparing it again, and unprepares it only when
the last pod using it is gone; the pod resources API lists the claim's device per container (dynamic_resources).
On containerd 2.x (the `runtime` marker) the claim's CDI device (a CDI spec the
driver writes in the containerd instance's cdi_spec_dirs) is seen inside the container."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

import controlplane
from apiobjects import api_pod, container
from conftest import containerd_major, wait_for

pytestmark = pytest.mark.skipif(controlplane.LEGACY, reason="needs kube-apiserver v1.37 (resource.k8s.io/v1)")

HERE = os.path.dirname(os.path.abspath(__file__))
PY = "/usr/bin/python3"


class DraPlugin:
    def __init__(self, kubelet, name, *extra):
        self.state = os.path.join(kubelet.dir, "dra")  # short: unix socket paths are capped
        os.makedirs(self.state, exist_ok=True)
        self.log = open(os.path.join(self.state, "plugin.log"), "a")
        self.proc = subprocess.Popen([PY, os.path.join(HERE, "draplugin.py"), "--name", name, "--registry",
                                      os.path.join(kubelet.root, "plugins_registry"), "--state", self.state,
                                      "--pool", kubelet.node, *extra], stdout=self.log, stderr=subprocess.STDOUT)
        wait_for(lambda: self.calls("started"), 60, msg=f"the DRA plugin {name} to serve")

    def calls(self, method=None):
        try:
            with open(os.path.join(self.state, "calls.jsonl")) as f:
                out = [json.loads(l) for l in f if l.strip()]
        except FileNotFoundError:
            return []
        return [c for c in out if method is None or c["method"] == method]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(20)
        self.log.close()


def claim_pod(kube, name, claim):
    p = api_pod(name, [container("c", ["sleep", "3600"], resources={"claims": [{"name": "dev"}]})], None, grace=1,
                extra_spec={"resourceClaims": [{"name": "dev", "resourceClaimName": claim}],
                            "nodeSelector": {"kubernetes.io/hostname": kube.node},
                            # no kube-api-access volume: the node authorizer may not know the binding yet
                            "automountServiceAccountToken": False})
    del p["spec"]["nodeName"]
    return p


def running(kube, name):
    p = kube.pod(name)
    return p and p["status"].get("phase") == "Running" and p


def test_shared_claim_prepared_once_survives_kill9_unprepared_by_last_pod(kube):
    k = kube.kubelet()
    driver = "gpu.dra.ckubelet.test"
    plugin = DraPlugin(k, driver)
    cls = f"{kube.node}-class"
    try:
        kube.wait(lambda: plugin.calls("NotifyRegistrationStatus"), 60, msg="the plugin told it is registered")
        assert plugin.calls("NotifyRegistrationStatus")[0]["registered"] is True
        kube.create("resourceslices", {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                                       "metadata": {"name": f"{kube.node}-slice"},
                                       "spec": {"driver": driver, "nodeName": kube.node,
                                                "pool": {"name": kube.node, "generation": 1, "resourceSliceCount": 1},
                                                "devices": [{"name": "dev0"}]}})
        kube.create("deviceclasses", {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                                      "metadata": {"name": cls},
                                      "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]}})
        kube.create("resourceclaims", {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                                       "metadata": {"name": "shared"},
                                       "spec": {"devices": {"requests": [{"name": "req",
                                                                          "exactly": {"deviceClassName": cls}}]}}})
        kube.wait(lambda: kube.node_obj()["status"].get("conditions") and
                  any(c["type"] == "Ready" and c["status"] == "True" for c in kube.node_obj()["status"]["conditions"]),
                  60, msg="the node Ready")
        kube.create("pods", claim_pod(kube, "a", "shared"))
        kube.create("pods", claim_pod(kube, "b", "shared"))
        kube.wait(lambda: running(kube, "a") and running(kube, "b"), 120, msg="both pods running")
        assert len(plugin.calls("NodePrepareResources")) == 1, plugin.calls()
        # the pod resources API lists the claim and its device for the container (dynamic_resources)
        sys.path.insert(0, HERE)
        from test_device_plugins import PodResources
        pr = PodResources(k)
        try:
            res = pr.get("a", kube.ns).pod_resources.containers
            assert [c.name for c in res] == ["c"]
            dyn = res[0].dynamic_resources
            assert [(d.claim_name, d.claim_namespace) for d in dyn] == [("shared", kube.ns)], dyn
            assert [(r.driver_name, r.pool_name, r.device_name, [x.name for x in r.cdi_devices])
                    for r in dyn[0].claim_resources] == [(driver, kube.node, "dev0", ["ckubelet.test/dra=shared"])]
            listed = {p.name: p for p in pr.list().pod_resources}
            assert listed["b"].containers[0].dynamic_resources[0].claim_name == "shared"
        finally:
            pr.channel.close()
        # kill -9 and restart: still prepared, not prepared again
        k.kill9()
        k.start()
        kube.wait(lambda: k.alive() and running(kube, "a"), 30, msg="the kubelet back")
        wait_for(lambda: os.path.exists(os.path.join(k.root, "dra_manager_state")), 10, msg="the checkpoint")
        assert len(plugin.calls("NodePrepareResources")) == 1, plugin.calls()
        # the first pod goes: the claim stays prepared for the second
        kube.delete("pods", "a", grace_seconds=0)
        kube.wait(lambda: kube.pod("a") is None, 60, msg="pod a gone")
        assert plugin.calls("NodeUnprepareResources") == []
        # the last one goes: unprepared once
        kube.delete("pods", "b", grace_seconds=0)
        kube.wait(lambda: len(plugin.calls("NodeUnprepareResources")) == 1, 60, msg="the claim unprepared")
        assert plugin.calls("NodeUnprepareResources")[0]["name"] == "shared"
    finally:
        plugin.stop()
        for res, name in (("deviceclasses", cls), ("resourceslices", f"{kube.node}-slice")):
            try:
                kube.delete(res, name)
            except Exception:
                pass


def publish(kube, driver, cls, claim):
    kube.create("resourceslices", {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                                   "metadata": {"name": f"{kube.node}-slice"},
                                   "spec": {"driver": driver, "nodeName": kube.node,
                                            "pool": {"name": kube.node, "generation": 1, "resourceSliceCount": 1},
                                            "devices": [{"name": "dev0"}]}})
    kube.create("deviceclasses", {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                                  "metadata": {"name": cls},
                                  "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]}})
    kube.create("resourceclaims", {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                                   "metadata": {"name": claim},
                                   "spec": {"devices": {"requests": [{"name": "req",
                                                                      "exactly": {"deviceClassName": cls}}]}}})


@pytest.mark.runtime
def test_cdi_device_seen_in_container(kube, runtime):
    """The driver's NodePrepareResources writes the claim's CDI spec (an environment variable and a bind-mounted
    file) in the containerd instance's cdi_spec_dirs and answers its CDI ID; the kubelet passes it in the CRI
    ContainerConfig's CDI_devices and containerd 2.x applies the edits: the container sees both."""
    if containerd_major() < 2:
        pytest.skip("containerd 1.6 has no CDI support (enable_cdi and cdi_spec_dirs are containerd 1.7+/2.x)")
    k = kube.kubelet()
    driver = "cdi.dra.ckubelet.test"
    plugin = DraPlugin(k, driver, "--cdi-dir", os.path.join(runtime.dir, "cdi"))
    cls = f"{kube.node}-class"
    try:
        kube.wait(lambda: plugin.calls("NotifyRegistrationStatus"), 60, msg="the plugin told it is registered")
        publish(kube, driver, cls, "gpu")
        kube.wait(lambda: kube.node_obj()["status"].get("conditions") and
                  any(c["type"] == "Ready" and c["status"] == "True" for c in kube.node_obj()["status"]["conditions"]),
                  60, msg="the node Ready")
        p = claim_pod(kube, "cdi", "gpu")
        p["spec"]["containers"][0]["command"] = ["sh", "-c", "echo env:$DRA_CLAIM; cat /dra/claim; sleep 3600"]
        kube.create("pods", p)
        kube.wait(lambda: running(kube, "cdi"), 120, msg="the pod running")

        def log():
            cs = runtime.containers_of("cdi", "c")
            if not cs:
                return ""
            try:
                with open(runtime.inspect(cs[0]["id"])["logPath"]) as f:
                    return f.read()
            except (FileNotFoundError, KeyError):
                return ""
        wait_for(lambda: "claim " in log(), 30, msg="the container's output")
        assert "env:gpu" in log(), log()
        assert f"claim {kube.ns}/gpu" in log(), log()
    finally:
        plugin.stop()
        for res, name in (("deviceclasses", cls), ("resourceslices", f"{kube.node}-slice")):
            try:
                kube.delete(res, name)
            except Exception:
                pass


def claim_health(kube, pod):
    """The container's allocatedResourcesStatus entries of the pod's claim (as the apiserver has them)."""
    p = kube.pod(pod)
    cs = (p or {}).get("status", {}).get("containerStatuses") or []
    return [r for c in cs for r in c.get("allocatedResourcesStatus") or [] if r["name"].startswith("claim:")]


def run_health_pod(kube, gate):
    """A driver serving the health service, a claim and a pod using it on a kubelet with ResourceHealthStatus
    on or off. Returns (kubelet, plugin, class name)."""
    k = kube.kubelet("--feature-gates", f"ResourceHealthStatus={'true' if gate else 'false'}")
    driver = "health.dra.ckubelet.test"
    plugin = DraPlugin(k, driver, "--health", "--health-every", "2")
    cls = f"{kube.node}-class"
    kube.wait(lambda: plugin.calls("NotifyRegistrationStatus"), 60, msg="the plugin told it is registered")
    publish(kube, driver, cls, "gpu")
    kube.wait(lambda: kube.node_obj()["status"].get("conditions") and
              any(c["type"] == "Ready" and c["status"] == "True" for c in kube.node_obj()["status"]["conditions"]),
              60, msg="the node Ready")
    kube.create("pods", claim_pod(kube, "health", "gpu"))
    kube.wait(lambda: running(kube, "health"), 120, msg="the pod running")
    return k, plugin, cls


def cleanup(kube, plugin, cls):
    plugin.stop()
    for res, name in (("deviceclasses", cls), ("resourceslices", f"{kube.node}-slice")):
        try:
            kube.delete(res, name)
        except Exception:
            pass


def test_device_health_in_pod_status(kube):
    """ResourceHealthStatus (issue 37 item 3): the driver streams its device's health (NodeWatchResources); the
    pod's container that references the claim reports it in containerStatuses[].allocatedResourcesStatus as
    {name: "claim:<name>", resources: [{resourceID: <the device's CDI ID>, health}]}: Healthy, then Unhealthy when
    the driver says so, then Healthy again."""
    k, plugin, cls = run_health_pod(kube, True)
    try:
        def health():
            h = claim_health(kube, "health")
            return h and [(r["name"], [(x["resourceID"], x["health"]) for x in r["resources"]]) for r in h]
        want = lambda s: [("claim:dev", [("ckubelet.test/dra=gpu", s)])]  # noqa: E731
        kube.wait(lambda: health() == want("Healthy"), 60, msg=f"the device Healthy in the pod status: {health()}")
        with open(os.path.join(plugin.state, "health"), "w") as f:
            f.write("Unhealthy XID 79")
        kube.wait(lambda: health() == want("Unhealthy"), 60, msg=f"the device Unhealthy in the pod status: {health()}")
        msg = claim_health(kube, "health")[0]["resources"][0].get("message")
        assert msg in (None, "XID 79"), msg  # the message needs the apiserver's ResourceHealthStatusMessage
        with open(os.path.join(plugin.state, "health"), "w") as f:
            f.write("Healthy")
        kube.wait(lambda: health() == want("Healthy"), 60, msg=f"the device Healthy again: {health()}")
        assert plugin.calls("NodeWatchResources"), plugin.calls()
    finally:
        cleanup(kube, plugin, cls)


def test_device_health_gate_off(kube):
    """ResourceHealthStatus=false: no health stream is opened, the pod status has no claim entries (today's
    behaviour before the gate)."""
    k, plugin, cls = run_health_pod(kube, False)
    try:
        with open(os.path.join(plugin.state, "health"), "w") as f:
            f.write("Unhealthy")
        # a few node status periods (1s) for a status that must not come
        time.sleep(5)
        assert plugin.calls("NodeWatchResources") == [], plugin.calls()
        assert claim_health(kube, "health") == []
    finally:
        cleanup(kube, plugin, cls)
