"""Persistent storage against the real control plane (controlplane.py, with the persistentvolume-binder,
attachdetach and ephemeral-volume controllers): a CSI node plugin written for the tests (csiplugin.py: loop devices
with ext4, registered through <root-dir>/plugins_registry), PersistentVolumeClaims bound to CSI, local and
hostPath PersistentVolumes, inline CSI and generic ephemeral volumes, the VolumeAttachment flow (the test plays
the external attacher), fsGroup, volume stats, kill -9 of ckubelet during publish and unstage, a hung plugin,
an unbound claim, and an nfs volume through the host's mount(8)."""
import json
import os
import secrets
import signal
import subprocess
import sys
import threading
import time

import pytest

from apiobjects import container, running
from apiobjects import api_pod as _api_pod
from apiclient import Client
from conftest import free_port, wait_for

HERE = os.path.dirname(os.path.abspath(__file__))
SLEEP = ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 0.2; done"]
PY = "/usr/bin/python3"


def api_pod(kube, name, containers, **kw):
    return _api_pod(name, containers, kube.node, **kw)


# ------------------------------------------------------------------------------------------------ the plugin

class CsiPlugin:
    """csiplugin.py serving for one kubelet: its calls, its fault files, its process."""

    def __init__(self, kubelet, name, no_stage=False, versions="1.0.0"):
        self.k = kubelet
        self.name = name
        self.state = os.path.join(kubelet.dir, "csi-" + name)
        os.makedirs(self.state, exist_ok=True)
        self.registry = os.path.join(kubelet.root, "plugins_registry")
        self.args = [PY, os.path.join(HERE, "csiplugin.py"), "--name", name, "--registry", self.registry,
                     "--state", self.state, "--node-id", f"{kubelet.node}-id", "--versions", versions] + \
            (["--no-stage"] if no_stage else [])
        self.log = open(os.path.join(self.state, "plugin.log"), "a")
        self.proc = subprocess.Popen(self.args, stdout=self.log, stderr=subprocess.STDOUT)
        wait_for(lambda: self.calls("started"), 60, msg=f"the CSI plugin {name} to serve")

    def calls(self, method=None):
        try:
            with open(os.path.join(self.state, "calls.jsonl")) as f:
                out = [json.loads(l) for l in f if l.strip()]
        except FileNotFoundError:
            return []
        return [c for c in out if method is None or c["method"] == method]

    def fault(self, kind, method, present=True):
        """kind: hang (a line in 'hang'), block or fail (a file kind-Method)."""
        if kind == "hang":
            path = os.path.join(self.state, "hang")
            with open(path, "w") as f:
                f.write(method + "\n" if present else "")
            return
        path = os.path.join(self.state, f"{kind}-{method}")
        if present:
            open(path, "w").close()
        elif os.path.exists(path):
            os.unlink(path)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(20)
        self.log.close()


@pytest.fixture
def plugins():
    made = []

    def make(*a, **kw):
        p = CsiPlugin(*a, **kw)
        made.append(p)
        return p
    yield make
    for p in made:
        p.stop()


class Attacher:
    """The external attacher of the tests' drivers: marks their VolumeAttachments for the node attached, with
    attachment metadata (the publish context the kubelet passes on)."""

    def __init__(self, kube, driver):
        self.kube, self.driver = kube, driver
        self.stop_ev = threading.Event()
        self.seen = []
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        while not self.stop_ev.is_set():
            try:
                for va in self.kube.list("volumeattachments"):
                    spec = va["spec"]
                    if spec["attacher"] != self.driver or spec["nodeName"] != self.kube.node:
                        continue
                    if not va.get("status", {}).get("attached") and not va["metadata"].get("deletionTimestamp"):
                        self.kube.patch("volumeattachments", va["metadata"]["name"],
                                        {"status": {"attached": True,
                                                    "attachmentMetadata": {"devicePath": "/dev/fake-" + self.driver}}},
                                        sub="status")
                        self.seen.append(va["metadata"]["name"])
                    if va["metadata"].get("deletionTimestamp") and va["metadata"].get("finalizers"):
                        pass  # the controller deletes it; nothing holds it
            except Exception:
                pass
            self.stop_ev.wait(0.3)

    def stop(self):
        self.stop_ev.set()
        self.t.join(5)


@pytest.fixture
def cleanup_cluster_objects(kube):
    """Cluster-scoped objects a test makes (PVs, CSIDrivers): removed at its end."""
    made = []
    yield made
    for resource, name in made:
        try:
            if resource == "persistentvolumes":  # the pv-protection finalizer would hold it
                kube.patch("persistentvolumes", name, {"metadata": {"finalizers": None}})
            kube.delete(resource, name)
        except Exception:
            pass


def csi_driver(kube, made, name, attach=True, pod_info=False, modes=("Persistent",)):
    kube.create("csidrivers", {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": name},
                               "spec": {"attachRequired": attach, "podInfoOnMount": pod_info,
                                        "volumeLifecycleModes": list(modes)}})
    made.append(("csidrivers", name))


def pv(kube, made, name, source, claim=None, access=("ReadWriteOnce",), affinity=None, size="64Mi"):
    spec = {"capacity": {"storage": size}, "accessModes": list(access), "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": "manual", **source}
    if claim:
        spec["claimRef"] = {"namespace": kube.ns, "name": claim}
    if affinity:
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": affinity}}
    kube.create("persistentvolumes", {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
                                      "spec": spec})
    made.append(("persistentvolumes", name))


def pvc(kube, name, access=("ReadWriteOnce",), volume=None, storage_class="manual"):
    spec = {"accessModes": list(access), "resources": {"requests": {"storage": "16Mi"}},
            "storageClassName": storage_class}
    if volume:
        spec["volumeName"] = volume
    return kube.create("persistentvolumeclaims", {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                                                  "metadata": {"name": name}, "spec": spec})


def bound(kube, name):
    c = kube.get("persistentvolumeclaims", name)
    return c.get("status", {}).get("phase") == "Bound"


def exec_sh(runtime, pod, script, cname="app"):
    [c] = runtime.running(pod, cname)
    p = runtime.crictl("exec", c["id"], "--", "sh", "-c", script, check=False)
    return p.returncode, p.stdout


def mounts_under(path):
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            mp = line.split()[4]
            if mp == path or mp.startswith(path.rstrip("/") + "/"):
                out.append(mp)
    return out


def gone(kube, name):
    return kube.pod(name) is None


def unique_driver():
    return f"csi-{secrets.token_hex(3)}.ckubelet.test"


def registered(kube, driver):
    cn = kube.get("csinodes", kube.node)
    if not cn:
        return None
    return next((d for d in cn["spec"].get("drivers") or [] if d["name"] == driver), None)


# ------------------------------------------------------------------------------------------------ tests

def test_registration_csinode_and_deregistration(kube, plugins):
    """A plugin that registers through plugins_registry is validated, asked NodeGetInfo and told it is registered;
    its node ID goes into the Node's csi.volume.kubernetes.io/nodeid annotation, its topology into a Node label,
    and into the CSINode (created by the kubelet, owned by the Node); a plugin speaking no 1.x version is refused
    with upstream's message; a plugin whose socket goes away is removed from both."""
    k = kube.kubelet()
    driver = unique_driver()
    p = plugins(k, driver)
    d = kube.wait(lambda: registered(kube, driver), 60, msg="the driver in the CSINode")
    assert d["nodeID"] == f"{kube.node}-id"
    assert d["topologyKeys"] == ["topology.csi.ckubelet.test/zone"]
    assert d["allocatable"] == {"count": 16}
    cn = kube.get("csinodes", kube.node)
    node = kube.node_obj()
    assert cn["metadata"]["ownerReferences"][0]["uid"] == node["metadata"]["uid"]
    assert json.loads(node["metadata"]["annotations"]["csi.volume.kubernetes.io/nodeid"]) == {driver: f"{kube.node}-id"}
    assert node["metadata"]["labels"]["topology.csi.ckubelet.test/zone"] == "zone-a"
    assert node["metadata"]["annotations"]["volumes.kubernetes.io/controller-managed-attach-detach"] == "true"
    [n] = p.calls("NotifyRegistrationStatus")
    assert n["registered"] and n["error"] == ""

    bad = plugins(k, unique_driver(), versions="2.0.0")
    wait_for(lambda: bad.calls("NotifyRegistrationStatus"), 30, msg="the refused plugin to be told")
    n = bad.calls("NotifyRegistrationStatus")[0]
    assert not n["registered"]
    assert "RegisterPlugin error -- plugin validation failed with err: validation failed for CSI Driver" in n["error"]
    assert "None of the versions specified" in n["error"]

    p.stop()  # its registration socket goes
    kube.wait(lambda: not registered(kube, driver), 60, msg="the driver gone from the CSINode")
    kube.wait(lambda: driver not in kube.node_obj()["metadata"].get("annotations", {}).get(
        "csi.volume.kubernetes.io/nodeid", "{}"), 30, msg="the driver gone from the nodeid annotation")
    assert k.wait_log(r"plugin .* went away: deregistering it")


def test_pvc_csi_write_then_read_back_attach_and_stats(kube, runtime, plugins, cleanup_cluster_objects):
    """A pod on a PVC bound to a CSI PV (a driver that needs attaching: VolumeAttachment attached by the test's
    attacher, its metadata passed as publish context) writes a file; the volume is staged once into the global
    mount path and published into the pod; volumesInUse lists it; the pod is deleted, the volume unpublished and
    unstaged; a new pod on the same claim reads the file back. The Summary API and kubelet_volume_stats_* report
    the volume with its claim."""
    made = cleanup_cluster_objects
    k = kubelet_with_api(kube)
    driver = unique_driver()
    plugin = plugins(k, driver)
    csi_driver(kube, made, driver, attach=True, pod_info=True)
    attacher = Attacher(kube, driver)
    try:
        handle = f"vol-{secrets.token_hex(4)}"
        pv_name = f"pv-{kube.node}"
        pv(kube, made, pv_name, {"csi": {"driver": driver, "volumeHandle": handle, "fsType": "ext4",
                                         "volumeAttributes": {"size": "32"}}},
           claim="data")
        pvc(kube, "data", volume=pv_name)
        kube.wait(lambda: bound(kube, "data"), 60, msg="the claim bound")
        kube.wait(lambda: registered(kube, driver), 60, msg="the driver registered")
        mounts = [{"name": "data", "mountPath": "/data"}]
        vols = [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]
        kube.create("pods", api_pod(kube, "writer", [
            container("app", ["sh", "-c", "echo persisted > /data/file && sync && " + SLEEP[2]],
                      volumeMounts=mounts)], extra_spec={"volumes": vols}))
        kube.wait(lambda: running(kube, "writer"), 120, msg="the writer running")
        uid = kube.pod("writer")["metadata"]["uid"]
        assert exec_sh(runtime, "writer", "cat /data/file") == (0, "persisted\n")
        unique = f"kubernetes.io/csi/{driver}^{handle}"
        assert unique in kube.node_obj()["status"].get("volumesInUse", [])
        assert attacher.seen, "the attach/detach controller made no VolumeAttachment"
        [stage] = plugin.calls("NodeStageVolume")
        sha = __import__("hashlib").sha256(handle.encode()).hexdigest()
        assert stage["staging_target_path"] == os.path.join(k.root, "plugins/kubernetes.io/csi", driver, sha,
                                                            "globalmount")
        assert stage["publish_context"] == {"devicePath": "/dev/fake-" + driver}
        assert stage["fs_type"] == "ext4" and stage["access_mode"] == "SINGLE_NODE_WRITER"
        [pub] = plugin.calls("NodePublishVolume")
        assert pub["target_path"] == os.path.join(k.root, "pods", uid, "volumes/kubernetes.io~csi", pv_name, "mount")
        assert pub["staging_target_path"] == stage["staging_target_path"]
        ctx = pub["volume_context"]
        assert ctx["csi.storage.k8s.io/pod.name"] == "writer" and ctx["csi.storage.k8s.io/pod.uid"] == uid
        assert ctx["csi.storage.k8s.io/pod.namespace"] == kube.ns and ctx["csi.storage.k8s.io/ephemeral"] == "false"
        assert ctx["size"] == "32"
        with open(os.path.join(os.path.dirname(pub["target_path"]), "vol_data.json")) as f:
            assert json.load(f)["volumeHandle"] == handle

        # volume stats: the Summary API's volume section (NodeGetVolumeStats) and the metrics
        summary = wait_for(lambda: next((v for p in k_summary(k)["pods"] if p["podRef"]["name"] == "writer"
                                         for v in p.get("volume", []) if v["name"] == "data"), None), 90,
                           interval=1, msg="the volume in /stats/summary")
        assert summary["pvcRef"] == {"name": "data", "namespace": kube.ns}
        assert 20 * 2**20 < summary["capacityBytes"] <= 32 * 2**20 and summary["usedBytes"] > 0
        assert summary["inodes"] > 0 and plugin.calls("NodeGetVolumeStats")
        metrics = k_metrics(k)
        assert any(l.startswith("kubelet_volume_stats_capacity_bytes{") and f'persistentvolumeclaim="data"' in l
                   and f'namespace="{kube.ns}"' in l for l in metrics.splitlines()), metrics[-2000:]

        # a graceful deletion: the kubelet deletes the pod from the API only once its volumes are unmounted
        kube.delete("pods", "writer")
        kube.wait(lambda: gone(kube, "writer"), 90, msg="the writer gone from the API")
        assert len(plugin.calls("NodeUnpublishVolume")) == 1
        wait_for(lambda: plugin.calls("NodeUnstageVolume"), 60, msg="NodeUnstageVolume")
        wait_for(lambda: not os.path.exists(os.path.dirname(stage["staging_target_path"])), 30,
                 msg="the global mount directory removed")
        # the pod directory goes with housekeeping (its token's tmpfs too): nothing is left mounted
        wait_for(lambda: not mounts_under(k.root) and not os.path.exists(os.path.join(k.root, "pods", uid)), 30,
                 msg="nothing mounted under the root dir, the pod directory removed")

        kube.create("pods", api_pod(kube, "reader", [container("app", SLEEP, volumeMounts=mounts)],
                                    extra_spec={"volumes": vols}))
        kube.wait(lambda: running(kube, "reader"), 120, msg="the reader running")
        assert exec_sh(runtime, "reader", "cat /data/file") == (0, "persisted\n")
        assert len(plugin.calls("NodeStageVolume")) == 2
    finally:
        attacher.stop()


def kubelet_with_api(kube, *extra):
    """A kubelet whose read-only port serves the Summary API and the metrics (plain HTTP, no authentication)."""
    port = free_port()
    k = kube.kubelet("--read-only-port", str(port), *extra)
    k.ro_port = port
    return k


def k_summary(k):
    return Client(k.ro_port, tls=False).json("/stats/summary")


def k_metrics(k):
    status, body, _ = Client(k.ro_port, tls=False).get("/metrics")
    assert status == 200, body
    return body


def csi_setup(kube, plugins, made, attach=False, pod_info=False, modes=("Persistent",), claims=("data",),
              access=("ReadWriteOnce",), extra_args=(), api=False):
    """A kubelet, a registered driver without attaching (unless asked) and, per claim, a CSI PV pre-bound to it."""
    k = kubelet_with_api(kube, *extra_args) if api else kube.kubelet(*extra_args)
    driver = unique_driver()
    plugin = plugins(k, driver)
    csi_driver(kube, made, driver, attach=attach, pod_info=pod_info, modes=modes)
    handles = {}
    for c in claims:
        handles[c] = f"vol-{secrets.token_hex(4)}"
        name = f"pv-{c}-{kube.node}"[:63]
        pv(kube, made, name, {"csi": {"driver": driver, "volumeHandle": handles[c], "fsType": "ext4"}}, claim=c,
           access=access)
        pvc(kube, c, volume=name, access=access)
    for c in claims:
        kube.wait(lambda: bound(kube, c), 60, msg=f"the claim {c} bound")
    kube.wait(lambda: registered(kube, driver), 60, msg="the driver registered")
    return k, driver, plugin, handles


def claim_pod(kube, name, claim="data", command=SLEEP, read_only=False, extra_spec=None, mount_ro=False):
    spec = {"volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim, "readOnly": read_only}}]}
    spec.update(extra_spec or {})
    kube.create("pods", api_pod(kube, name, [
        container("app", command, volumeMounts=[{"name": "data", "mountPath": "/data", "readOnly": mount_ro}])],
        extra_spec=spec))


def test_two_pods_share_a_staged_volume(kube, runtime, plugins, cleanup_cluster_objects):
    """Two pods on one claim: the volume is staged once and published twice; the first pod's deletion unpublishes
    its mount only (the other pod keeps the volume, nothing is unstaged); the second's deletion unstages it. A
    read-only claim reference gives a read-only publish and mount."""
    k, driver, plugin, handles = csi_setup(kube, plugins, cleanup_cluster_objects, access=("ReadWriteMany",))
    # the volume was expanded in the controller (the PV grew, the claim's status did not): the first mount asks
    # the node to expand it (NodeExpandVolume) and records the new size in the claim's status
    pv_name = kube.get("persistentvolumeclaims", "data")["spec"]["volumeName"]
    assert kube.get("persistentvolumeclaims", "data")["status"]["capacity"]["storage"] == "64Mi"
    kube.patch("persistentvolumes", pv_name, {"spec": {"capacity": {"storage": "128Mi"}}})
    claim_pod(kube, "one", command=["sh", "-c", "echo shared > /data/f && " + SLEEP[2]])
    claim_pod(kube, "two", read_only=True)
    kube.wait(lambda: running(kube, "one") and running(kube, "two"), 120, msg="both pods running")
    assert exec_sh(runtime, "two", "cat /data/f")[1] == "shared\n"
    rc, _ = exec_sh(runtime, "two", "touch /data/g")
    assert rc != 0, "a read-only claim mounted writable"
    assert len(plugin.calls("NodeStageVolume")) == 1
    pubs = plugin.calls("NodePublishVolume")
    assert len(pubs) == 2 and sorted(p["readonly"] for p in pubs) == [False, True]
    assert all(p["access_mode"] == "MULTI_NODE_MULTI_WRITER" for p in pubs)
    [exp] = plugin.calls("NodeExpandVolume")
    assert exp["required_bytes"] == 128 * 2**20 and exp["volume_path"] in [p["target_path"] for p in pubs]
    kube.wait(lambda: kube.get("persistentvolumeclaims", "data")["status"]["capacity"]["storage"] == "128Mi", 30,
              msg="the claim's capacity updated")

    kube.delete("pods", "one")
    kube.wait(lambda: gone(kube, "one"), 90, msg="the first pod gone")
    assert len(plugin.calls("NodeUnpublishVolume")) == 1 and not plugin.calls("NodeUnstageVolume")
    assert exec_sh(runtime, "two", "cat /data/f")[1] == "shared\n"
    kube.delete("pods", "two")
    kube.wait(lambda: gone(kube, "two"), 90, msg="the second pod gone")
    wait_for(lambda: plugin.calls("NodeUnstageVolume"), 60, msg="NodeUnstageVolume")
    assert len(plugin.calls("NodeUnpublishVolume")) == 2
    unstage = plugin.calls("NodeUnstageVolume")[0]
    wait_for(lambda: not os.path.exists(unstage["staging_target_path"]), 30, msg="the staging directory removed")


def test_fsgroup_on_root_mismatch_changes_ownership_once(kube, runtime, plugins, cleanup_cluster_objects):
    """fsGroup with fsGroupChangePolicy OnRootMismatch: the first pod's volume gets the group recursively (files
    g+rw, directories g+rwxs); a file whose group is then changed keeps it in the next pod (the root matches: no
    walk); a pod with policy Always walks again. emptyDir volumes get the group too."""
    k, driver, plugin, _ = csi_setup(kube, plugins, cleanup_cluster_objects)
    sc = lambda policy: {"securityContext": {"fsGroup": 2000, "fsGroupChangePolicy": policy}}  # noqa: E731
    claim_pod(kube, "first", extra_spec=sc("OnRootMismatch"))
    kube.wait(lambda: running(kube, "first"), 120, msg="the first pod running")
    # the filesystem's root was 0755: group rwx and setgid added
    assert exec_sh(runtime, "first", "stat -c '%g %a' /data")[1].split() == ["2000", "2775"]
    exec_sh(runtime, "first", "mkdir /data/d && echo x > /data/d/f && chgrp 3000 /data/d/f && sync")
    assert exec_sh(runtime, "first", "stat -c '%g' /data/d/f")[1].strip() == "3000"
    kube.delete("pods", "first")
    kube.wait(lambda: gone(kube, "first"), 90, msg="the first pod gone")

    claim_pod(kube, "second", extra_spec=sc("OnRootMismatch"))
    kube.wait(lambda: running(kube, "second"), 120, msg="the second pod running")
    assert exec_sh(runtime, "second", "stat -c '%g' /data/d/f")[1].strip() == "3000", "OnRootMismatch walked"
    assert k.wait_log(r"skipping permission and ownership change for volume")
    kube.delete("pods", "second")
    kube.wait(lambda: gone(kube, "second"), 90, msg="the second pod gone")

    spec = sc("Always")
    spec["volumes"] = [{"name": "scratch", "emptyDir": {}}]
    kube.create("pods", api_pod(kube, "third", [container("app", SLEEP, volumeMounts=[
        {"name": "data", "mountPath": "/data"}, {"name": "scratch", "mountPath": "/scratch"}])], extra_spec={
        **spec, "volumes": spec["volumes"] + [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]}))
    kube.wait(lambda: running(kube, "third"), 120, msg="the third pod running")
    assert exec_sh(runtime, "third", "stat -c '%g %a' /data/d/f /data/d")[1].split() == ["2000", "664", "2000", "2775"]
    assert exec_sh(runtime, "third", "stat -c '%g' /scratch")[1].strip() == "2000"


def test_kill9_during_publish_and_unstage_converges(kube, runtime, plugins, cleanup_cluster_objects):
    """ckubelet killed while NodePublishVolume runs (the plugin has mounted and not answered) and again while
    NodeUnstageVolume runs: after each restart the volume manager finds the volume on the node (the pod
    directory's and the global directory's vol_data.json, the mount table) and converges: the pod runs with one
    mount at its target and one at the staging path, and after the pod is deleted nothing is left mounted, no
    loop device stays attached and the directories are gone."""
    k, driver, plugin, handles = csi_setup(kube, plugins, cleanup_cluster_objects)
    plugin.fault("block", "NodePublishVolume")
    claim_pod(kube, "pod", command=["sh", "-c", "echo before > /data/f && " + SLEEP[2]])
    wait_for(lambda: plugin.calls("NodePublishVolume:blocked"), 120, msg="NodePublishVolume in progress")
    k.kill9()
    plugin.fault("block", "NodePublishVolume", present=False)
    k.start(*k.extra_args)
    kube.wait(lambda: running(kube, "pod"), 120, msg="the pod running after the restart")
    pub = plugin.calls("NodePublishVolume")[-1]
    assert mounts_under(pub["target_path"]) == [pub["target_path"]]
    assert mounts_under(pub["staging_target_path"]) == [pub["staging_target_path"]]
    assert exec_sh(runtime, "pod", "cat /data/f")[1] == "before\n"

    plugin.fault("block", "NodeUnstageVolume")
    kube.delete("pods", "pod")
    wait_for(lambda: plugin.calls("NodeUnstageVolume:blocked"), 120, msg="NodeUnstageVolume in progress")
    k.kill9()
    plugin.fault("block", "NodeUnstageVolume", present=False)
    n = len(plugin.calls("NodeUnstageVolume"))
    k.start(*k.extra_args)
    wait_for(lambda: len(plugin.calls("NodeUnstageVolume")) > n, 120, msg="NodeUnstageVolume again after the restart")
    kube.wait(lambda: gone(kube, "pod"), 60, msg="the pod gone")
    wait_for(lambda: not mounts_under(k.root), 60, msg="nothing mounted under the root dir")
    wait_for(lambda: not os.path.exists(os.path.dirname(pub["staging_target_path"])), 30,
             msg="the global mount directory removed")
    image = os.path.join(plugin.state, "images", handles["data"] + ".img")
    assert subprocess.run(["losetup", "-j", image], capture_output=True, text=True).stdout == ""


def test_hung_plugin_cut_at_deadline_other_pods_unaffected(kube, runtime, plugins, cleanup_cluster_objects):
    """A plugin whose NodePublishVolume hangs: the call is cut at --csi-request-timeout with a FailedMount event
    (MountVolume.SetUp failed ... DeadlineExceeded) while another pod on the node starts; once the plugin answers
    again the pod's volume is mounted (the retry). The volume is an inline CSI volume (ephemeral lifecycle, pod
    information in its volume context) and goes with its pod."""
    made = cleanup_cluster_objects
    k = kube.kubelet("--csi-request-timeout", "3s")
    driver = unique_driver()
    plugin = plugins(k, driver)
    csi_driver(kube, made, driver, attach=False, pod_info=True, modes=("Ephemeral",))
    kube.wait(lambda: registered(kube, driver), 60, msg="the driver registered")
    plugin.fault("hang", "NodePublishVolume")
    kube.create("pods", api_pod(kube, "stuck", [container("app", SLEEP, volumeMounts=[
        {"name": "eph", "mountPath": "/eph"}])], extra_spec={"volumes": [
            {"name": "eph", "csi": {"driver": driver, "volumeAttributes": {"size": "16"}}}]}))
    kube.create("pods", api_pod(kube, "free", [container("app", SLEEP)]))
    kube.wait(lambda: running(kube, "free"), 60, msg="the other pod running")
    ev = kube.wait(lambda: [e for e in kube.events("stuck", "FailedMount") if "DeadlineExceeded" in e["message"]],
                   60, msg="the FailedMount event of the cut call")
    assert ev[0]["message"].startswith('MountVolume.SetUp failed for volume "eph" : rpc error: code = '
                                       'DeadlineExceeded desc = context deadline exceeded'), ev[0]["message"]
    assert not running(kube, "stuck")
    plugin.fault("hang", "NodePublishVolume", present=False)
    kube.wait(lambda: running(kube, "stuck"), 120, msg="the pod running once the plugin answers")
    pub = plugin.calls("NodePublishVolume")[-1]
    uid = kube.pod("stuck")["metadata"]["uid"]
    assert pub["volume_context"]["csi.storage.k8s.io/ephemeral"] == "true"
    assert pub["volume_context"]["csi.storage.k8s.io/pod.uid"] == uid and pub["staging_target_path"] == ""
    assert pub["volume_id"].startswith("csi-")
    kube.delete("pods", "stuck")
    kube.wait(lambda: gone(kube, "stuck"), 90, msg="the pod gone")
    assert plugin.calls("NodeUnpublishVolume")[-1]["volume_id"] == pub["volume_id"]
    assert not os.path.exists(os.path.join(plugin.state, "images", pub["volume_id"] + ".img"))


def test_unbound_claim_waits_then_hostpath_pv(kube, runtime, cleanup_cluster_objects, tmp_path):
    """A pod on a claim that is not bound waits with upstream's FailedMount message; once a hostPath
    PersistentVolume is bound to the claim the pod starts and sees the node path."""
    k = kube.kubelet()
    pvc(kube, "later")
    claim_pod(kube, "waiter", claim="later")
    ev = kube.wait(lambda: kube.events("waiter", "FailedMount"), 60, msg="the FailedMount event")
    assert ev[0]["message"] == ("Unable to attach or mount volumes: unmounted volumes=[data], unattached volumes=[data]: "
                                f"error processing PVC {kube.ns}/later: PVC is not bound"), ev[0]["message"]
    assert kube.pod("waiter")["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] == "ContainerCreating"
    d = tmp_path / "hostpath-pv"
    d.mkdir()
    (d / "hello").write_text("from the node\n")
    pv(kube, cleanup_cluster_objects, f"pv-hp-{kube.node}"[:63], {"hostPath": {"path": str(d), "type": "Directory"}},
       claim="later")
    kube.wait(lambda: bound(kube, "later"), 60, msg="the claim bound")
    kube.wait(lambda: running(kube, "waiter"), 90, msg="the pod running")
    assert exec_sh(runtime, "waiter", "cat /data/hello")[1] == "from the node\n"


def test_local_pv_node_affinity_and_read_only(kube, runtime, cleanup_cluster_objects, tmp_path):
    """A local PersistentVolume whose node affinity names this node is bind mounted into the pod (read-only when
    the claim is referenced read-only); one whose affinity names another node fails with upstream's message."""
    made = cleanup_cluster_objects
    k = kube.kubelet()
    d = tmp_path / "local-pv"
    d.mkdir()
    (d / "data").write_text("local\n")
    mine = [{"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [kube.node]}]}]
    other = [{"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["elsewhere"]}]}]
    pv(kube, made, f"pv-local-{kube.node}"[:63], {"local": {"path": str(d)}}, claim="mine", affinity=mine)
    pv(kube, made, f"pv-far-{kube.node}"[:63], {"local": {"path": str(d)}}, claim="far", affinity=other)
    pvc(kube, "mine")
    pvc(kube, "far")
    kube.wait(lambda: bound(kube, "mine") and bound(kube, "far"), 60, msg="the claims bound")
    claim_pod(kube, "reader", claim="mine", read_only=True)
    kube.wait(lambda: running(kube, "reader"), 90, msg="the reader running")
    uid = kube.pod("reader")["metadata"]["uid"]
    assert exec_sh(runtime, "reader", "cat /data/data")[1] == "local\n"
    assert exec_sh(runtime, "reader", "touch /data/x")[0] != 0
    target = os.path.join(k.root, "pods", uid, "volumes/kubernetes.io~local-volume", f"pv-local-{kube.node}"[:63])
    assert mounts_under(target) == [target]
    kube.wait(lambda: "kubernetes.io/local-volume/" + f"pv-local-{kube.node}"[:63] in
              kube.node_obj()["status"].get("volumesInUse", []), 30, msg="the local volume in volumesInUse")
    claim_pod(kube, "far", claim="far")
    ev = kube.wait(lambda: kube.events("far", "FailedMount"), 60, msg="the affinity failure")
    assert ev[0]["message"].startswith("MountVolume.NodeAffinity check failed for volume \"pv-far-")
    assert ev[0]["message"].endswith(" : no matching NodeSelectorTerms")
    kube.delete("pods", "reader")
    kube.wait(lambda: gone(kube, "reader"), 90, msg="the reader gone")
    wait_for(lambda: not mounts_under(target), 30, msg="the local volume unmounted")
    assert (d / "data").read_text() == "local\n"


def test_generic_ephemeral_volume(kube, runtime, plugins, cleanup_cluster_objects):
    """A generic ephemeral volume: the ephemeral volume controller makes the claim <pod>-<volume> owned by the pod,
    the binder binds it to a CSI PV waiting for it, the kubelet mounts it."""
    made = cleanup_cluster_objects
    k = kube.kubelet()
    driver = unique_driver()
    plugins(k, driver)
    csi_driver(kube, made, driver, attach=False)
    pv(kube, made, f"pv-eph-{kube.node}"[:63], {"csi": {"driver": driver, "volumeHandle": "eph-" + kube.node,
                                                         "fsType": "ext4"}}, claim="gen-scratch")
    kube.wait(lambda: registered(kube, driver), 60, msg="the driver registered")
    kube.create("pods", api_pod(kube, "gen", [container("app", ["sh", "-c", "echo ok > /scratch/f && " + SLEEP[2]],
                                                        volumeMounts=[{"name": "scratch", "mountPath": "/scratch"}])],
                                extra_spec={"volumes": [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {
                                    "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "manual",
                                             "resources": {"requests": {"storage": "16Mi"}}}}}}]}))
    kube.wait(lambda: running(kube, "gen"), 120, msg="the pod running")
    claim = kube.get("persistentvolumeclaims", "gen-scratch")
    assert claim["metadata"]["ownerReferences"][0]["uid"] == kube.pod("gen")["metadata"]["uid"]
    assert exec_sh(runtime, "gen", "cat /scratch/f")[1] == "ok\n"


def test_nfs_through_the_host_mount_helper(kube, runtime):
    """An nfs volume is mounted by the host's mount(8) in a child process (here the kernel has no nfs support and
    no server can run: the helper's failure is the FailedMount event, with mount-utils' wording, and the other
    pods are unaffected)."""
    k = kube.kubelet()
    kube.create("pods", api_pod(kube, "nfs", [container("app", SLEEP, volumeMounts=[
        {"name": "share", "mountPath": "/share"}])], extra_spec={"volumes": [
            {"name": "share", "nfs": {"server": "127.0.0.1", "path": "/exports/share", "readOnly": True}}]}))
    ev = kube.wait(lambda: kube.events("nfs", "FailedMount"), 120, msg="the nfs FailedMount event")
    m = ev[0]["message"]
    assert m.startswith('MountVolume.SetUp failed for volume "share" : mount failed: exit status '), m
    assert "Mounting command: mount\nMounting arguments: -t nfs -o ro 127.0.0.1:/exports/share " in m, m
    assert "Output: " in m
