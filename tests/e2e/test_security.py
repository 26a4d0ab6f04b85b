"""Security contexts on containerd: user/group/supplemental groups (`id`), capabilities dropped and added,
read-only root filesystem, allowPrivilegeEscalation false (NoNewPrivs), seccomp RuntimeDefault/Unconfined,
privileged, a safe sysctl; runAsNonRoot with a root image (CreateContainerConfigError); a forbidden sysctl
rejected at admission, and allowed with --allowed-unsafe-sysctls."""
from conftest import BUSYBOX, NODE, wait_for
from standalone import start, wait_output


def output(kubelet, runtime, pod, container):
    return wait_output(kubelet, runtime, pod, container)

SLEEP = "trap 'exit 0' TERM; while true; do sleep 0.2; done"


def container(name, script, sc):
    return f"""\
          - name: {name}
            image: {BUSYBOX}
            command: ["sh", "-c", {script + "; echo END; " + SLEEP!r}]
            securityContext: {sc}
        """.rstrip(" ")


def status_field(line, key):
    for l in line.splitlines():
        if l.startswith(key + ":"):
            return l.split(":", 1)[1].strip()
    return None


def test_security_contexts(kubelet_factory, runtime):
    k, _ = start(kubelet_factory)
    containers = "".join([
        container("ids", "id", "{runAsUser: 1000, runAsGroup: 3000}"),
        container("caps", "touch /tmp/f; chown 1 /tmp/f && echo CHOWN_OK || echo CHOWN_FAIL; grep CapEff /proc/self/status",
                  "{capabilities: {drop: [CHOWN], add: [NET_ADMIN]}}"),
        container("ro", "touch /rootfile && echo WRITE_OK || echo WRITE_FAIL", "{readOnlyRootFilesystem: true}"),
        container("nnp", "grep -E 'NoNewPrivs|Seccomp:' /proc/self/status",
                  "{allowPrivilegeEscalation: false}"),
        container("unconfined", "grep -E 'NoNewPrivs|Seccomp:' /proc/self/status",
                  "{seccompProfile: {type: Unconfined}}"),
        container("priv", "mkdir -p /tmp/m; mount -t tmpfs none /tmp/m && echo MOUNT_OK || echo MOUNT_FAIL", "{privileged: true}"),
        container("nopriv", "mkdir -p /tmp/m; mount -t tmpfs none /tmp/m && echo MOUNT_OK || echo MOUNT_FAIL; "
                  "cat /proc/sys/net/ipv4/ip_unprivileged_port_start", "{}"),
    ])
    k.write("sec.yaml", f"""\
        apiVersion: v1
        kind: Pod
        metadata: {{name: sec}}
        spec:
          securityContext:
            fsGroup: 2000
            supplementalGroups: [4000]
            seccompProfile: {{type: RuntimeDefault}}
            sysctls: [{{name: net.ipv4.ip_unprivileged_port_start, value: "100"}}]
          containers:
        """.rstrip(" ") + containers)
    pod = f"sec-{NODE}"

    ids = output(k, runtime, pod, "ids")
    assert "uid=1000 gid=3000" in ids
    groups = ids.split("groups=", 1)[1].split()[0]
    assert "2000" in groups and "4000" in groups, ids

    caps = output(k, runtime, pod, "caps")
    assert "CHOWN_FAIL" in caps and "CHOWN_OK" not in caps
    eff = int(status_field(caps, "CapEff"), 16)
    assert eff & (1 << 12), "NET_ADMIN was added"
    assert not eff & 1, "CHOWN was dropped"

    ro = output(k, runtime, pod, "ro")
    assert "WRITE_FAIL" in ro and "WRITE_OK" not in ro

    nnp = output(k, runtime, pod, "nnp")
    assert status_field(nnp, "NoNewPrivs") == "1"
    assert status_field(nnp, "Seccomp") == "2"  # the pod's RuntimeDefault

    unconfined = output(k, runtime, pod, "unconfined")
    assert status_field(unconfined, "NoNewPrivs") == "0"
    assert status_field(unconfined, "Seccomp") == "0"

    assert "MOUNT_OK" in output(k, runtime, pod, "priv")
    nopriv = output(k, runtime, pod, "nopriv")
    assert "MOUNT_FAIL" in nopriv
    assert "100" in nopriv.splitlines()  # the pod's sysctl


def test_seccomp_default(kubelet_factory, runtime):
    """--seccomp-default: a container with no profile at either level runs with the runtime's default filter
    (Seccomp: 2); one that asks for Unconfined does not."""
    k, _ = start(kubelet_factory, "--seccomp-default")
    k.write("sd.yaml", f"""\
        apiVersion: v1
        kind: Pod
        metadata: {{name: sd}}
        spec:
          containers:
        """.rstrip(" ") + container("none", "grep -E 'Seccomp:' /proc/self/status", "{}") +
        container("unconfined", "grep -E 'Seccomp:' /proc/self/status", "{seccompProfile: {type: Unconfined}}"))
    pod = f"sd-{NODE}"
    assert status_field(output(k, runtime, pod, "none"), "Seccomp") == "2"
    assert status_field(output(k, runtime, pod, "unconfined"), "Seccomp") == "0"


def test_run_as_non_root_and_sysctls(kubelet_factory, runtime):
    k, api = start(kubelet_factory)
    k.write("nonroot.yaml", f"""\
        apiVersion: v1
        kind: Pod
        metadata: {{name: nonroot}}
        spec:
          securityContext: {{runAsNonRoot: true}}
          containers:
          - name: root-image
            image: {BUSYBOX}
            command: ["sh", "-c", "{SLEEP}"]
          - name: as-user
            image: {BUSYBOX}
            command: ["sh", "-c", "{SLEEP}"]
            securityContext: {{runAsUser: 1000}}
        """)
    k.write("badsysctl.yaml", f"""\
        apiVersion: v1
        kind: Pod
        metadata: {{name: badsysctl}}
        spec:
          securityContext:
            sysctls: [{{name: kernel.msgmax, value: "65536"}}]
          containers:
          - name: c
            image: {BUSYBOX}
            command: ["sh", "-c", "{SLEEP}"]
        """)
    pod = f"nonroot-{NODE}"

    def waiting():
        for p in api.json("/pods")["items"]:
            if p["metadata"]["name"] != pod:
                continue
            for c in p.get("status", {}).get("containerStatuses", []):
                w = c.get("state", {}).get("waiting")
                if c["name"] == "root-image" and w and w.get("reason") == "CreateContainerConfigError":
                    return (w, p["metadata"]["uid"])
        return None

    w, uid = wait_for(waiting, 30, msg="root-image waiting with CreateContainerConfigError")
    assert w["message"] == (f'container has runAsNonRoot and image will run as root (pod: "{pod}_default({uid})", '
                            f'container: root-image)')
    wait_for(lambda: runtime.running(pod, "as-user"), 30, msg="the container with a non-root user runs")
    assert not runtime.containers_of(pod, "root-image")

    k.wait_log(r'Pod admission denied: pod="default/badsysctl-' + NODE + r'" .*reason="SysctlForbidden" '
               r'message="Pod was rejected: forbidden sysctl: "kernel.msgmax" not allowlisted"', 30)
    assert not runtime.pods_named(f"badsysctl-{NODE}")


def test_allowed_unsafe_sysctl(kubelet_factory, runtime):
    k, _ = start(kubelet_factory, "--allowed-unsafe-sysctls", "kernel.msg*")
    k.write("msg.yaml", f"""\
        apiVersion: v1
        kind: Pod
        metadata: {{name: msg}}
        spec:
          securityContext:
            sysctls: [{{name: kernel.msgmax, value: "65536"}}]
          containers:
        """.rstrip(" ") + container("c", "cat /proc/sys/kernel/msgmax", "{}"))
    out = output(k, runtime, f"msg-{NODE}", "c")
    assert out.splitlines()[0] == "65536"
