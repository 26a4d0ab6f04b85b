"""What the runtime can do, read from its CRI Status (runtime handlers and features), acted on as upstream:
recursiveReadOnly mounts (the CRI mount's recursive_read_only where the handler supports it, Enabled refused with
CreateContainerConfigError where it does not, IfPossible falling back to plain read-only;
containerStatuses[].volumeMounts saying which) and supplementalGroupsPolicy Strict (admitted only where the
runtime says it honours it, else rejected with SupplementalGroupsPolicyNotSupported). Runs on both runtimes:
containerd 1.6.20 says nothing of either, containerd 2.1 with crun supports both."""
import subprocess

import pytest

from conftest import BUSYBOX, NODE, containerd_major, wait_for
from standalone import start, wait_output


def output(kubelet, runtime, pod, container):
    return wait_output(kubelet, runtime, pod, container, timeout=60)

pytestmark = pytest.mark.runtime

SLEEP = "trap 'exit 0' TERM; while true; do sleep 0.2; done"


def container_status(api, pod, name):
    for p in api.json("/pods")["items"]:
        if p["metadata"]["name"] == pod:
            for c in p.get("status", {}).get("containerStatuses", []):
                if c["name"] == name:
                    return c
    return None


@pytest.fixture
def nested(tmp_path):
    """A host directory with a tmpfs mounted under it: a plain read-only bind leaves the submount writable."""
    top = tmp_path / "rro"
    (top / "sub").mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(top / "sub")], check=True)
    try:
        yield str(top)
    finally:
        subprocess.run(["umount", "-l", str(top / "sub")])


WRITES = "touch /v/top && echo TOP_OK || echo TOP_FAIL; touch /v/sub/x && echo SUB_OK || echo SUB_FAIL"


def rro_pod(name, path, mode):
    rro = f", recursiveReadOnly: {mode}" if mode else ""
    return f"""\
apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  volumes: [{{name: v, hostPath: {{path: {path}}}}}]
  containers:
  - name: c
    image: {BUSYBOX}
    command: ["sh", "-c", "{WRITES}; echo END; {SLEEP}"]
    volumeMounts: [{{name: v, mountPath: /v, readOnly: true{rro}}}]
"""


def test_recursive_read_only(kubelet_factory, runtime, nested):
    k, api = start(kubelet_factory)
    k.write("plain.yaml", rro_pod("plain", nested, None))
    k.write("ifpossible.yaml", rro_pod("ifpossible", nested, "IfPossible"))
    k.write("enabled.yaml", rro_pod("enabled", nested, "Enabled"))

    # a plain read-only bind: the top is read-only, the submount under it is not (what recursiveReadOnly is for)
    plain = output(k, runtime, f"plain-{NODE}", "c")
    assert "TOP_FAIL" in plain and "SUB_OK" in plain, plain
    assert container_status(api, f"plain-{NODE}", "c")["volumeMounts"] == [
        {"name": "v", "mountPath": "/v", "readOnly": True, "recursiveReadOnly": "Disabled"}]

    if containerd_major() >= 2:
        # the runtime handler supports it: the submount is read-only too
        for name in ("ifpossible", "enabled"):
            out = output(k, runtime, f"{name}-{NODE}", "c")
            assert "TOP_FAIL" in out and "SUB_FAIL" in out, (name, out)
            vm = wait_for(lambda: (container_status(api, f"{name}-{NODE}", "c") or {}).get("volumeMounts"), 30)
            assert vm == [{"name": "v", "mountPath": "/v", "readOnly": True, "recursiveReadOnly": "Enabled"}]
    else:
        # containerd 1.6 says nothing of its handlers: IfPossible is a plain read-only mount, Enabled is refused
        out = output(k, runtime, f"ifpossible-{NODE}", "c")
        assert "TOP_FAIL" in out and "SUB_OK" in out, out
        assert container_status(api, f"ifpossible-{NODE}", "c")["volumeMounts"][0]["recursiveReadOnly"] == "Disabled"

        def refused():
            c = container_status(api, f"enabled-{NODE}", "c")
            w = (c or {}).get("state", {}).get("waiting") or {}
            return w if w.get("reason") == "CreateContainerConfigError" else None
        w = wait_for(refused, 30, msg="Enabled refused with CreateContainerConfigError")
        assert w["message"] == ('failed to resolve recursive read-only mode: volume "v" requested recursive '
                                'read-only mode, but it is not supported by the runtime')
        assert not runtime.containers_of(f"enabled-{NODE}", "c")


def test_supplemental_groups_policy_strict(kubelet_factory, runtime):
    k, api = start(kubelet_factory)
    k.write("strict.yaml", f"""\
apiVersion: v1
kind: Pod
metadata: {{name: strict}}
spec:
  securityContext: {{runAsUser: 1000, runAsGroup: 3000, supplementalGroups: [4000],
                     supplementalGroupsPolicy: Strict}}
  containers:
  - name: c
    image: {BUSYBOX}
    command: ["sh", "-c", "id -G; echo END; {SLEEP}"]
""")
    pod = f"strict-{NODE}"
    if containerd_major() >= 2:
        # the runtime honours the policy (Status features): admitted, and the groups are only the pod's
        out = output(k, runtime, pod, "c")
        assert sorted(out.splitlines()[0].split()) == ["3000", "4000"], out
        # and the runtime says so: containerStatuses[].user
        user = wait_for(lambda: (container_status(api, pod, "c") or {}).get("user"), 30, msg="status.user")
        assert user["linux"]["uid"] == 1000 and user["linux"]["gid"] == 3000, user
        assert sorted(user["linux"]["supplementalGroups"]) == [3000, 4000], user
    else:
        k.wait_log(r'Pod admission denied: pod="default/' + pod + r'" .*reason="SupplementalGroupsPolicyNotSupported" '
                   r'message="SupplementalGroupsPolicy=Strict is not supported in this node"', 30)
        assert not runtime.pods_named(pod)


def test_cgroup_driver_from_runtime(kubelet_factory, runtime):
    """The cgroup driver comes from the runtime's CRI RuntimeConfig where it answers (containerd 2.x: cgroupfs, its
    runc options say no SystemdCgroup), over --cgroup-driver: a kubelet told systemd on a host without systemd runs
    its pods with cgroupfs. containerd 1.6 has no RuntimeConfig: the configured driver stays."""
    k = kubelet_factory(start=False)
    if containerd_major() >= 2:
        k.start("--cgroup-driver", "systemd")
        k.wait_log(r'Using cgroup driver setting received from the CRI runtime: cgroupDriver="cgroupfs"', 30)
    else:
        k.start()
        k.wait_log(r"CRI implementation should be updated to support RuntimeConfig. Falling back to using "
                   r"cgroupDriver from kubelet config.", 30)
    k.write("p.yaml", f"""\
apiVersion: v1
kind: Pod
metadata: {{name: p}}
spec:
  containers:
  - {{name: c, image: {BUSYBOX}, command: ["sh", "-c", "{SLEEP}"]}}
""")
    wait_for(lambda: runtime.running(f"p-{NODE}", "c"), 60, msg="the pod runs")


def userns_pod(name):
    return f"""\
apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  hostUsers: false
  containers:
  - name: c
    image: {BUSYBOX}
    command: ["sh", "-c", "cat /proc/self/uid_map /proc/self/gid_map; id -u; echo END; {SLEEP}"]
"""


def host_range(out):
    """(inside, host, length) of the first uid_map line, and the same of the gid_map's."""
    lines = [l.split() for l in out.splitlines() if len(l.split()) == 3]
    return tuple(map(int, lines[0])), tuple(map(int, lines[1]))


def test_user_namespaces(kubelet_factory, runtime):
    """hostUsers: false (UserNamespacesSupport): on a runtime whose handler supports user namespaces, each pod gets
    its own 65536 host IDs mapped to 0..65535 inside (root inside, an unprivileged ID outside), kept across a kill -9
    of ckubelet (a new pod after the restart never gets a range in use); elsewhere it is refused as upstream."""
    k, api = start(kubelet_factory)
    k.write("u1.yaml", userns_pod("u1"))
    if containerd_major() < 2:
        k.wait_log(r"pod default/u1-" + NODE + r": Failed to create sandbox for pod: can't set `spec.hostUsers: "
                   r"false`, runtime does not support user namespaces", 30)
        assert not runtime.pods_named(f"u1-{NODE}")
        return
    k.write("u2.yaml", userns_pod("u2"))
    ranges = {}
    for name in ("u1", "u2"):
        out = output(k, runtime, f"{name}-{NODE}", "c")
        uid_map, gid_map = host_range(out)
        assert uid_map == gid_map and uid_map[0] == 0 and uid_map[2] == 65536, out
        assert uid_map[1] >= 65536 and uid_map[1] % 65536 == 0, out
        assert out.splitlines()[2] == "0", out  # root inside
        [c] = runtime.running(f"{name}-{NODE}", "c")
        with open(f"/proc/{runtime.container_pid(c['id'])}/status") as f:
            uid_line = next(l for l in f if l.startswith("Uid:"))
        assert int(uid_line.split()[1]) == uid_map[1], uid_line  # an unprivileged ID outside
        ranges[name] = (uid_map[1], c["id"])
    assert ranges["u1"][0] != ranges["u2"][0]
    # kept in the pod directory; a kill -9 and a restart adopt the pods and keep their ranges taken
    k.kill9()
    k.start()
    wait_for(lambda: k.log().count("runtime listed") >= 2, 30, msg="the restarted kubelet listed the runtime")
    k.write("u3.yaml", userns_pod("u3"))
    u3, _ = host_range(output(k, runtime, f"u3-{NODE}", "c"))
    assert u3[1] not in (ranges["u1"][0], ranges["u2"][0])
    for name in ("u1", "u2"):
        assert [c["id"] for c in runtime.running(f"{name}-{NODE}", "c")] == [ranges[name][1]], f"{name} restarted"
