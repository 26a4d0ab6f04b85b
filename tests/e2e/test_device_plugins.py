"""Device plugins (deviceplugin/v1beta1) and the pod resources API (podresources/v1), end to end: a plugin written
for the tests (deviceplugin.py, Python grpcio) advertises four fake devices; pods asking for them get exactly what
they asked for, with the plugin's env, mount, device and annotation; one that cannot be served is refused as
upstream does; a kill -9 of the kubelet keeps every assignment; the plugin going away turns its devices unhealthy
and registering again brings them back; the pod resources API lists it all to a gRPC client."""
import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from conftest import BUSYBOX, containerd_major, wait_for

HERE = os.path.dirname(os.path.abspath(__file__))
RES = "example.com/fakedev"


class PluginProc:
    def __init__(self, kubelet, state, *args):
        self.dir = os.path.join(kubelet.root, "device-plugins")
        self.state = state
        os.makedirs(state, exist_ok=True)
        self.args = args
        self.proc = None

    def start(self):
        log = open(os.path.join(self.state, "plugin.log"), "a")
        self.proc = subprocess.Popen([sys.executable, os.path.join(HERE, "deviceplugin.py"), "--dir", self.dir,
                                      "--state", self.state, *self.args], stdout=log, stderr=subprocess.STDOUT)
        log.close()
        return self

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)

    def calls(self, method=None):
        try:
            with open(os.path.join(self.state, "calls.jsonl")) as f:
                out = [json.loads(l) for l in f if l.strip()]
        except FileNotFoundError:
            return []
        return [c for c in out if method is None or c["method"] == method]


class PodResources:
    """A podresources/v1 client (python3-grpcio) on <root-dir>/pod-resources/kubelet.sock."""

    def __init__(self, kubelet):
        import grpc
        sys.path.insert(0, HERE)
        import deviceplugin
        self.pb, self.pbg = deviceplugin.load_protos(("podresources",))["podresources"]
        self.channel = grpc.insecure_channel("unix://" + os.path.join(kubelet.root, "pod-resources", "kubelet.sock"))
        self.stub = self.pbg.PodResourcesListerStub(self.channel)

    def list(self):
        return self.stub.List(self.pb.ListPodResourcesRequest(), timeout=10)

    def get(self, name, ns="default"):
        return self.stub.Get(self.pb.GetPodResourcesRequest(pod_name=name, pod_namespace=ns), timeout=10)

    def allocatable(self):
        return self.stub.GetAllocatableResources(self.pb.AllocatableResourcesRequest(), timeout=10)

    def assignments(self):
        """{pod name: {container: sorted device ids}} of the resource"""
        out = {}
        for p in self.list().pod_resources:
            for c in p.containers:
                ids = sorted(i for d in c.devices if d.resource_name == RES for i in d.device_ids)
                if ids:
                    out.setdefault(p.name, {})[c.name] = ids
        return out

    def allocatable_ids(self):
        return sorted(i for d in self.allocatable().devices if d.resource_name == RES for i in d.device_ids)


def device_pod(name, count, extra=""):
    return f"""\
apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  containers:
  - name: app
    image: {BUSYBOX}
    command: ["sh", "-c", "echo devices=$FAKE_DEVICES; cat /fakedev/hello; ls /dev/fake0; {extra} trap 'exit 0' TERM; while true; do sleep 0.2; done"]
    resources: {{limits: {{{RES}: {count}}}}}
"""


def container_log(kubelet, runtime, pod):
    c = runtime.containers_of(pod, "app")
    if not c:
        return ""
    st = runtime.inspect(c[0]["id"])
    try:
        with open(st["logPath"]) as f:
            return f.read()
    except (FileNotFoundError, KeyError):
        return ""


def env_ids(kubelet, runtime, pod):
    m = re.search(r"devices=(\S+)", container_log(kubelet, runtime, pod))
    return sorted(m.group(1).split(",")) if m else None


def test_device_plugin(kubelet, runtime, tmp_path):
    plugin = PluginProc(kubelet, str(tmp_path / "plugin"), "--devices", "4", "--pre-start", "--preferred").start()
    try:
        wait_for(lambda: plugin.calls("Registered") and plugin.calls("ListAndWatch"), timeout=60,
                 msg="the plugin registered and watched")
        kubelet.wait_log(r'Got registration request from device plugin with resource name "example.com/fakedev"')
        pr = PodResources(kubelet)
        wait_for(lambda: pr.allocatable_ids() == ["dev-0", "dev-1", "dev-2", "dev-3"], timeout=30,
                 msg="four allocatable devices")

        # two pods of two: each gets exactly two, disjoint; the plugin's preference counts (the highest IDs
        # first), PreStartContainer comes before the container starts
        kubelet.write("a.yaml", device_pod("a", 2))
        wait_for(lambda: env_ids(kubelet, runtime, "a-testnode"), timeout=60, msg="pod a's container output")
        a_ids = env_ids(kubelet, runtime, "a-testnode")
        assert a_ids == ["dev-2", "dev-3"], a_ids
        pref = plugin.calls("GetPreferredAllocation")
        assert pref and pref[0]["size"] == 2 and sorted(pref[0]["available"]) == ["dev-0", "dev-1", "dev-2", "dev-3"]
        assert [sorted(c["ids"]) for c in plugin.calls("Allocate")] == [a_ids]
        assert [sorted(c["ids"]) for c in plugin.calls("PreStartContainer")] == [a_ids]
        log = container_log(kubelet, runtime, "a-testnode")
        assert "from the device plugin" in log and "/dev/fake0" in log, log  # the mount and the device
        a_c = runtime.running("a-testnode", "app")[0]
        ann = runtime.inspect(a_c["id"]).get("annotations", {})
        assert ann.get("example.com/fakedev-ids") == ",".join(a_ids), ann

        kubelet.write("b.yaml", device_pod("b", 2))
        wait_for(lambda: env_ids(kubelet, runtime, "b-testnode"), timeout=60, msg="pod b's container output")
        b_ids = env_ids(kubelet, runtime, "b-testnode")
        assert b_ids == ["dev-0", "dev-1"], b_ids

        # a third pod cannot be served: refused at admission as upstream (UnexpectedAdmissionError), never started
        kubelet.write("c.yaml", device_pod("c", 1))
        kubelet.wait_log(r'Pod admission denied: pod="default/c-testnode" podUID="[^"]+" '
                         r'reason="UnexpectedAdmissionError" message="Pod was rejected: Allocate failed due to '
                         r'requested number of devices unavailable for example.com/fakedev\. Requested: 1, '
                         r'Available: 0, which is unexpected"', timeout=30)
        assert not runtime.pods_named("c-testnode")

        # the pod resources API lists the assignments to a gRPC client
        assert pr.assignments() == {"a-testnode": {"app": a_ids}, "b-testnode": {"app": b_ids}}
        got = pr.get("a-testnode")
        assert got.pod_resources.name == "a-testnode" and got.pod_resources.containers[0].name == "app"
        assert [list(d.device_ids) for d in got.pod_resources.containers[0].devices] in ([a_ids], [a_ids[::-1]])
        import grpc
        with pytest.raises(grpc.RpcError) as e:
            pr.get("nope")
        assert "pod nope in namespace default not found" in e.value.details()

        # kill -9 and restart: the running pods keep their devices (same containers, not restarted), the plugin
        # registers again (the kubelet removed its stale socket), and a new pod still cannot have any
        a_id, b_id = a_c["id"], runtime.running("b-testnode", "app")[0]["id"]
        registered = len(plugin.calls("Registered"))
        kubelet.kill9()
        assert os.path.exists(os.path.join(kubelet.root, "device-plugins", "kubelet_internal_checkpoint"))
        kubelet.start()
        wait_for(lambda: len(plugin.calls("Registered")) > registered, timeout=60, msg="the plugin registering again")
        pr = PodResources(kubelet)
        wait_for(lambda: pr.allocatable_ids() == ["dev-0", "dev-1", "dev-2", "dev-3"], timeout=30,
                 msg="the devices back after the restart")
        wait_for(lambda: pr.assignments() == {"a-testnode": {"app": a_ids}, "b-testnode": {"app": b_ids}},
                 timeout=30, msg="the same assignments after the restart")
        kubelet.write("e.yaml", device_pod("e", 1))
        kubelet.wait_log(r'Pod admission denied: pod="default/e-testnode".*Requested: 1, Available: 0', timeout=30)
        assert [c["id"] for c in runtime.running("a-testnode", "app")] == [a_id]
        assert [c["id"] for c in runtime.running("b-testnode", "app")] == [b_id]
        assert len(plugin.calls("Allocate")) == 2  # nothing allocated again
        kubelet.remove("c.yaml")
        kubelet.remove("e.yaml")

        # the plugin goes away: its devices turn unhealthy (not allocatable, still held); it comes back and
        # registers again: healthy again
        plugin.kill9()
        wait_for(lambda: pr.allocatable_ids() == [], timeout=30, msg="the devices unhealthy")
        kubelet.wait_log(r"listAndWatch ended unexpectedly for device plugin example\.com/fakedev")
        assert pr.assignments() == {"a-testnode": {"app": a_ids}, "b-testnode": {"app": b_ids}}
        plugin.start()
        wait_for(lambda: pr.allocatable_ids() == ["dev-0", "dev-1", "dev-2", "dev-3"], timeout=60,
                 msg="the devices healthy again")

        # one device turns unhealthy (ListAndWatch sends the new list)
        with open(os.path.join(plugin.state, "unhealthy"), "w") as f:
            f.write("dev-0\n")
        wait_for(lambda: pr.allocatable_ids() == ["dev-1", "dev-2", "dev-3"], timeout=30, msg="dev-0 unhealthy")

        # pod a goes: its devices are free again and a new pod gets them
        kubelet.remove("a.yaml")
        wait_for(lambda: not runtime.pods_named("a-testnode"), timeout=60, msg="pod a gone")
        kubelet.write("d.yaml", device_pod("d", 2))
        wait_for(lambda: env_ids(kubelet, runtime, "d-testnode"), timeout=60, msg="pod d's container output")
        assert env_ids(kubelet, runtime, "d-testnode") == a_ids
        wait_for(lambda: pr.assignments() == {"b-testnode": {"app": b_ids}, "d-testnode": {"app": a_ids}},
                 timeout=30, msg="d holding a's devices")
    finally:
        plugin.stop()


CDI_DIR = "/var/run/cdi"  # one of containerd's default cdi_spec_dirs


@pytest.mark.runtime
def test_device_plugin_cdi_devices(kubelet, runtime, tmp_path):
    """A plugin's Allocate answer with cdi_devices: ckubelet passes them in the CRI ContainerConfig's CDI_devices
    (makeCDIDevices), and containerd 2.x (CDI on by default) applies the edits of the CDI spec: here an environment
    variable per device. containerd 1.6 has no CDI and ignores the field: the container still runs."""
    spec = os.path.join(CDI_DIR, f"ckubelet-e2e-{os.getpid()}.json")
    os.makedirs(CDI_DIR, exist_ok=True)
    with open(spec + ".tmp", "w") as f:
        json.dump({"cdiVersion": "0.5.0", "kind": "ckubelet.example.com/fakedev",
                   "devices": [{"name": f"dev-{i}", "containerEdits": {"env": [f"CDI_DEV_{i}=injected"]}}
                               for i in range(4)]}, f)
    os.rename(spec + ".tmp", spec)
    plugin = PluginProc(kubelet, str(tmp_path / "plugin"), "--devices", "4",
                        "--cdi-kind", "ckubelet.example.com/fakedev").start()
    try:
        wait_for(lambda: plugin.calls("ListAndWatch"), timeout=60, msg="the plugin registered and watched")
        pr = PodResources(kubelet)
        wait_for(lambda: len(pr.allocatable_ids()) == 4, timeout=30, msg="four allocatable devices")
        kubelet.write("cdi.yaml", device_pod("cdi", 1, extra="env | grep ^CDI_DEV_ | sed 's/^/cdi:/'; echo cdi-done;"))
        wait_for(lambda: "cdi-done" in container_log(kubelet, runtime, "cdi-testnode"), timeout=60,
                 msg="the pod's container output")
        ids = env_ids(kubelet, runtime, "cdi-testnode")
        assert len(ids) == 1, ids
        log = container_log(kubelet, runtime, "cdi-testnode")
        got = sorted(re.findall(r"cdi:(CDI_DEV_\d)=injected", log))
        if containerd_major() >= 2:
            assert got == [f"CDI_DEV_{ids[0].split('-')[1]}"], log
        else:
            assert got == [], log
    finally:
        kubelet.remove("cdi.yaml")
        plugin.stop()
        os.unlink(spec)


def test_device_plugin_bad_registration_and_allocate_failure(kubelet, runtime, tmp_path):
    """A plugin of another API version is refused with upstream's message; a plugin whose Allocate fails makes
    the pod's admission fail (UnexpectedAdmissionError with the plugin's error)."""
    old = PluginProc(kubelet, str(tmp_path / "old"), "--version", "v1alpha", "--resource", "example.com/old",
                     "--endpoint", "old.sock").start()
    bad = PluginProc(kubelet, str(tmp_path / "bad"), "--fail-allocate", "--resource", "example.com/bad",
                     "--endpoint", "bad.sock").start()
    try:
        wait_for(lambda: old.calls("RegisterFailed"), timeout=60, msg="the old plugin refused")
        assert ('requested API version \\"v1alpha\\" is not supported by kubelet. Supported version is '
                '[\\"v1beta1\\"]') in json.dumps(old.calls("RegisterFailed")[0])
        wait_for(lambda: bad.calls("ListAndWatch"), timeout=60, msg="the failing plugin registered")
        kubelet.write("f.yaml", device_pod("f", 1).replace(RES, "example.com/bad"))
        kubelet.wait_log(r'Pod admission denied: pod="default/f-testnode" podUID="[^"]+" '
                         r'reason="UnexpectedAdmissionError" message="Pod was rejected: Allocate failed due to rpc '
                         r'error: code = Internal desc = the fake hardware is on fire, which is unexpected"', timeout=30)
        assert not runtime.pods_named("f-testnode")
    finally:
        old.stop()
        bad.stop()
