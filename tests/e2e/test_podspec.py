# Pod spec fields of today's kubelet on static pods (issue 18): activeDeadlineSeconds, the sidecars' stop order,
# shareProcessNamespace, hostname/subdomain/setHostnameAsFQDN/hostnameOverride, pod overhead, container restart rules, AppArmor
# and the fields ckubelet does not act on. The items that need the API server are in test_podspec_cluster.py.
import json
import os
import re
import time

from apiclient import Client
from conftest import BUSYBOX, NODE, SLEEPER, containerd_major, free_port, wait_for


def start(kubelet_factory, *extra):
    k = kubelet_factory(start=False)
    ro = free_port()
    k.start("--read-only-port", str(ro), *extra)
    api = Client(ro, tls=False)
    wait_for(lambda: api.json("/pods") is not None, msg="the read-only port")
    return k, api


def pod_status(api, name):
    for p in api.json("/pods")["items"]:
        if p["metadata"]["name"] == name:
            return p.get("status")
    return None


def cstatus(st, name, kind="containerStatuses"):
    return next((c for c in (st or {}).get(kind, []) if c["name"] == name), None)


def condition(st, type_):
    return next((c for c in (st or {}).get("conditions", []) if c["type"] == type_), None)


def write_pod(k, name, spec):
    """A static pod from a dict spec (JSON is YAML)."""
    k.write(f"{name}.yaml", json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                                        "spec": spec}))
    return f"{name}-{NODE}"


def ctr(name, command, **kw):
    c = {"name": name, "image": BUSYBOX, "command": command}
    c.update(kw)
    return c


# ---------------------------------------------------------------- activeDeadlineSeconds


def test_active_deadline_fails_the_pod(kubelet_factory, runtime):
    k, api = start(kubelet_factory)
    name = write_pod(k, "deadline", {"activeDeadlineSeconds": 3, "terminationGracePeriodSeconds": 2,
                                     "containers": [ctr("app", SLEEPER)]})
    wait_for(lambda: runtime.running(name, "app"), 30, msg="app running")
    st = wait_for(lambda: (s := pod_status(api, name)) and s["phase"] == "Failed" and s, 30, msg="pod Failed")
    assert st["reason"] == "DeadlineExceeded"
    assert st["message"] == "Pod was active on the node longer than the specified deadline"
    wait_for(lambda: not runtime.running(name), 20, msg="the containers stopped")
    wait_for(lambda: all(p["state"] == "SANDBOX_NOTREADY" for p in runtime.pods_named(name)), 20,
             msg="the sandbox stopped")
    # and it stays so: nothing is started again
    k.wait_log(r"Pod was active on the node longer than the specified deadline: pod=\"default/deadline-testnode\"")
    time.sleep(3)
    assert len(runtime.containers_of(name, "app")) == 1 and not runtime.running(name)
    st = pod_status(api, name)
    assert st["phase"] == "Failed" and condition(st, "Ready")["status"] == "False"
    assert cstatus(st, "app")["state"].get("terminated")


# ---------------------------------------------------------------- sidecars stop after the main containers


def test_sidecars_stop_in_reverse_order_after_the_app(kubelet_factory, runtime, tmp_path):
    k, api = start(kubelet_factory)
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)

    def slow_exit(n, secs):
        # on SIGTERM: note it, take `secs` seconds, note the exit
        return ["sh", "-c", f"trap 'echo {n} term >> /shared/log; sleep {secs}; echo {n} exit >> /shared/log; "
                            f"exit 0' TERM; touch /shared/{n}; while true; do sleep 0.1; done"]
    mount = [{"name": "shared", "mountPath": "/shared"}]
    name = write_pod(k, "order", {
        "terminationGracePeriodSeconds": 20,
        "volumes": [{"name": "shared", "hostPath": {"path": str(shared)}}],
        "initContainers": [ctr("s1", slow_exit("s1", 1), restartPolicy="Always", volumeMounts=mount),
                           ctr("s2", slow_exit("s2", 1), restartPolicy="Always", volumeMounts=mount)],
        "containers": [ctr("app", slow_exit("app", 3), volumeMounts=mount)]})
    wait_for(lambda: all((shared / n).exists() for n in ("s1", "s2", "app")), 60, msg="all three running")
    k.remove("order.yaml")
    wait_for(lambda: not runtime.running(name), 40, msg="everything stopped")
    lines = (shared / "log").read_text().split("\n")
    assert lines[:6] == ["app term", "app exit", "s2 term", "s2 exit", "s1 term", "s1 exit"], lines
    # each sidecar got what was left of the grace period: the app took 3 s of the 20
    graces = {m.group(1): int(m.group(2)) for m in re.finditer(
        r'Killing container with a grace period: [^\n]*containerName="(\w+)"[^\n]*gracePeriod=(\d+)', k.log())}
    assert graces["app"] == 20 and graces["s2"] <= 17 and graces["s1"] <= 16, graces


# ---------------------------------------------------------------- namespaces and names


def exec_out(runtime, cid, *cmd):
    p = runtime.crictl("exec", cid, "--", *cmd, check=False)
    return p.stdout


def test_share_process_namespace_and_fqdn_hostname(kubelet_factory, runtime):
    k, api = start(kubelet_factory, "--cluster-domain", "cluster.local")
    name = write_pod(k, "shared", {"shareProcessNamespace": True, "hostname": "web", "subdomain": "svc1",
                                   "setHostnameAsFQDN": True, "terminationGracePeriodSeconds": 1,
                                   "containers": [ctr("a", ["sh", "-c", "exec sleep 3600"]),
                                                  ctr("b", SLEEPER)]})
    [b] = wait_for(lambda: runtime.running(name, "b"), 30, msg="b running")
    wait_for(lambda: runtime.running(name, "a"), 30, msg="a running")
    # b sees a's process: one process namespace for the pod
    wait_for(lambda: "sleep 3600" in exec_out(runtime, b["id"], "ps", "-o", "args"), 10,
             msg="a's process visible from b")
    assert exec_out(runtime, b["id"], "hostname").strip() == "web.svc1.default.svc.cluster.local"
    # the managed /etc/hosts names the pod by its FQDN with --cluster-domain (upstream's managedHostsFileContent)
    hosts = exec_out(runtime, b["id"], "cat", "/etc/hosts")
    assert [l.split("\t")[1:] for l in hosts.splitlines() if l.endswith("\tweb")] == \
        [["web.svc1.default.svc.cluster.local", "web"]], hosts

    # without shareProcessNamespace the containers do not see each other
    name2 = write_pod(k, "apart", {"terminationGracePeriodSeconds": 1,
                                   "containers": [ctr("a", ["sh", "-c", "exec sleep 3600"]), ctr("b", SLEEPER)]})
    [b2] = wait_for(lambda: runtime.running(name2, "b"), 30, msg="b running")
    wait_for(lambda: runtime.running(name2, "a"), 30, msg="a running")
    assert "sleep 3600" not in exec_out(runtime, b2["id"], "ps", "-o", "args")
    assert exec_out(runtime, b2["id"], "hostname").strip() == name2


def test_hostname_override(kubelet_factory, runtime):
    """hostnameOverride (beta on since v1.35): the container's hostname and its /etc/hosts line, no domain."""
    k, api = start(kubelet_factory, "--cluster-domain", "cluster.local")
    name = write_pod(k, "override", {"hostname": "web", "subdomain": "svc1", "hostnameOverride": "my.host-1",
                                     "terminationGracePeriodSeconds": 1, "containers": [ctr("b", SLEEPER)]})
    [b] = wait_for(lambda: runtime.running(name, "b"), 30, msg="b running")
    assert exec_out(runtime, b["id"], "hostname").strip() == "my.host-1"
    hosts = exec_out(runtime, b["id"], "cat", "/etc/hosts")
    assert [l.split("\t")[1:] for l in hosts.splitlines() if l.endswith("my.host-1")] == [["my.host-1"]], hosts
    assert "svc1" not in hosts


def test_fqdn_too_long_fails_the_sandbox(kubelet_factory, runtime):
    k, api = start(kubelet_factory, "--cluster-domain", "cluster.local")
    name = write_pod(k, "longfqdn", {"hostname": "a-rather-long-host-name", "subdomain": "and-a-long-subdomain",
                                     "setHostnameAsFQDN": True, "containers": [ctr("a", SLEEPER)]})
    k.wait_log(r"Failed to generate sandbox config: failed to construct FQDN from pod hostname and cluster domain, "
               r"FQDN a-rather-long-host-name\.and-a-long-subdomain\.default\.svc\.cluster\.local is too long \(64 "
               r"characters is the max, 70 characters requested\)", 30)
    assert not runtime.pods_named(name)


# ---------------------------------------------------------------- AppArmor


def apparmor_enabled():
    try:
        with open("/sys/module/apparmor/parameters/enabled") as f:
            return os.path.isdir("/sys/kernel/security/apparmor") and f.read().startswith("Y")
    except OSError:
        return False


def test_apparmor_profile(kubelet_factory, runtime):
    k, api = start(kubelet_factory)
    # Unconfined needs nothing of the host
    open_name = write_pod(k, "aa-open", {"securityContext": {"appArmorProfile": {"type": "Unconfined"}},
                                         "terminationGracePeriodSeconds": 1, "containers": [ctr("a", SLEEPER)]})
    wait_for(lambda: runtime.running(open_name, "a"), 30, msg="the Unconfined pod running")
    name = write_pod(k, "aa", {"terminationGracePeriodSeconds": 1, "containers": [
        ctr("a", SLEEPER, securityContext={"appArmorProfile": {"type": "RuntimeDefault"}})]})
    if apparmor_enabled():
        [c] = wait_for(lambda: runtime.running(name, "a"), 30, msg="the confined pod running")
        assert "docker-default" in exec_out(runtime, c["id"], "cat", "/proc/self/attr/current") or \
            "cri-containerd" in exec_out(runtime, c["id"], "cat", "/proc/self/attr/current")
    else:
        # this host has no AppArmor: refused at admission, as upstream's AppArmor admit handler
        k.wait_log(r'Pod admission denied: pod="default/aa-testnode" podUID="[0-9a-f]+" reason="AppArmor" '
                   r'message="Cannot enforce AppArmor: AppArmor is not enabled on the host"', 30)
        assert not runtime.pods_named(name)


# ---------------------------------------------------------------- container restart rules


def test_container_restart_policy_and_rules(kubelet_factory, runtime, tmp_path):
    k, api = start(kubelet_factory)
    shared = tmp_path / "runs"
    shared.mkdir()
    mount = [{"name": "runs", "mountPath": "/runs"}]
    # exits 42 twice (a rule restarts it), then 3 (no rule: its own Never)
    retry = ["sh", "-c", "n=$(cat /runs/retry 2>/dev/null || echo 0); n=$((n+1)); echo $n > /runs/retry; "
                         "[ $n -lt 3 ] && exit 42; exit 3"]
    # exits 0 once, then runs: its own Always restarts it in a Never pod
    once = ["sh", "-c", "[ -f /runs/once ] || { touch /runs/once; exit 0; }; exec sleep 3600"]
    name = write_pod(k, "rules", {
        "restartPolicy": "Never", "terminationGracePeriodSeconds": 1,
        "volumes": [{"name": "runs", "hostPath": {"path": str(shared)}}],
        "containers": [ctr("retry", retry, volumeMounts=mount, restartPolicy="Never",
                           restartPolicyRules=[{"action": "Restart",
                                                "exitCodes": {"operator": "In", "values": [42]}}]),
                       ctr("always", once, volumeMounts=mount, restartPolicy="Always"),
                       ctr("plain", ["sh", "-c", "exit 1"])]})
    st = wait_for(lambda: (s := pod_status(api, name)) and (c := cstatus(s, "retry")) and
                  c["state"].get("terminated", {}).get("exitCode") == 3 and s, 60, interval=0.2,
                  msg="retry ran three times")
    assert cstatus(st, "retry")["restartCount"] == 2
    assert (shared / "retry").read_text().strip() == "3"
    wait_for(lambda: runtime.running(name, "always"), 30, msg="always running again")
    st = pod_status(api, name)
    assert cstatus(st, "always")["restartCount"] == 1
    assert cstatus(st, "plain")["state"]["terminated"]["exitCode"] == 1
    assert st["phase"] == "Running"  # always keeps running
    # nothing more is restarted
    time.sleep(3)
    assert len(runtime.containers_of(name, "plain")) == 1
    assert (shared / "retry").read_text().strip() == "3"


# ---------------------------------------------------------------- fields not acted on: said, or refused


def test_fields_not_acted_on_are_said_or_refused(kubelet_factory, runtime):
    k, api = start(kubelet_factory)
    # accepted, said once by name
    name = write_pod(k, "said", {"terminationGracePeriodSeconds": 1, "resources": {"limits": {"cpu": "1"}},
                                 "containers": [ctr("a", SLEEPER, securityContext={"seLinuxOptions": {"level": "s0"}})]})
    wait_for(lambda: runtime.running(name, "a"), 30, msg="the pod running")
    # (pod-level resources are acted on: not said)
    k.wait_log(r"pod default/said-testnode: fields that are not acted on: spec\.containers\[0\]\.securityContext\."
               r"seLinuxOptions \(SELinux labels are not applied\)\n", 10)
    assert k.log().count("fields that are not acted on") == 1
    # a user namespace the runtime cannot give (containerd 1.6): refused as upstream does, not run without it; on
    # containerd 2.1 with crun the pod gets one (test_runtime_features.py)
    userns = None
    if containerd_major() < 2:
        userns = write_pod(k, "userns", {"hostUsers": False, "containers": [ctr("a", SLEEPER)]})
        k.wait_log(r'pod default/userns-testnode: Failed to create sandbox for pod: can\'t set `spec.hostUsers: '
                   r'false`, runtime does not support user namespaces', 30)
    # another OS: refused at admission
    k.write("win.yaml", json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "win"},
                                    "spec": {"os": {"name": "windows"}, "containers": [ctr("a", SLEEPER)]}}))
    k.wait_log(r'Pod admission denied: pod="default/win-testnode" podUID="[0-9a-f]+" reason="PodOSNotSupported" '
               r'message="Failed to admit pod as the OS field doesn\'t match node OS"', 30)
    assert not (userns and runtime.pods_named(userns)) and not runtime.pods_named("win-testnode")
