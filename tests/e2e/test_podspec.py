# Pod spec fields of today's kubelet on static pods (issue 18): activeDeadlineSeconds, the sidecars' stop order,
# shareProcessNamespace, hostname/subdomain/setHostnameAsFQDN, pod overhead, container restart rules, AppArmor
# and the fields ckubelet does not act on. The items that need the API server are in test_podspec_cluster.py.
import json
import os
import re
import time

from apiclient import Client
from conftest import BUSYBOX, NODE, SLEEPER, free_port, wait_for


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
