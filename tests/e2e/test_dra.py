"""Dynamic Resource Allocation on the kubelet side against the v1.37 control plane (issue 37 item 3): a DRA
driver of the tests' own (draplugin.py) registers through plugins_registry, the test publishes its ResourceSlice
and a DeviceClass, the scheduler allocates a ResourceClaim shared by two pods; the kubelet prepares it once
(NodePrepareResources), keeps it prepared across a kill -9 without preparing it again, and unprepares it only when
the last pod using it is gone. The CDI device reaching the container is not checked here (the runtime's CDI
spec directory is not configured by the harness)."""
import json
import os
import signal
import subprocess
import sys

import pytest

import controlplane
from apiobjects import api_pod, container
from conftest import wait_for

pytestmark = pytest.mark.skipif(controlplane.LEGACY, reason="needs kube-apiserver v1.37 (resource.k8s.io/v1)")

HERE = os.path.dirname(os.path.abspath(__file__))
PY = "/usr/bin/python3"


class DraPlugin:
    def __init__(self, kubelet, name):
        self.state = os.path.join(kubelet.dir, "dra")  # short: unix socket paths are capped
        os.makedirs(self.state, exist_ok=True)
        self.log = open(os.path.join(self.state, "plugin.log"), "a")
        self.proc = subprocess.Popen([PY, os.path.join(HERE, "draplugin.py"), "--name", name, "--registry",
                                      os.path.join(kubelet.root, "plugins_registry"), "--state", self.state,
                                      "--pool", kubelet.node], stdout=self.log, stderr=subprocess.STDOUT)
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
