# Init containers: run one at a time, in order, to completion before the app containers; failures follow the
# pod's restartPolicy; a new sandbox runs them again; initContainerStatuses and the Initialized condition.
import json
import re

from apiclient import Client
from conftest import BUSYBOX, NODE, SLEEPER, free_port, wait_for


def manifest(name, inits, apps, restart_policy="Always"):
    lines = ["apiVersion: v1", "kind: Pod", "metadata:", f"  name: {name}", "spec:",
             f"  restartPolicy: {restart_policy}", "  terminationGracePeriodSeconds: 2", "  initContainers:"]
    for n, cmd, *extra in inits:
        lines += [f"  - name: {n}", f"    image: {BUSYBOX}", f"    command: {json.dumps(cmd)}"]
        lines += [f"    {e}" for e in (extra[0] if extra else [])]
    lines.append("  containers:")
    for n, cmd in apps:
        lines += [f"  - name: {n}", f"    image: {BUSYBOX}", f"    command: {json.dumps(cmd)}"]
    return "\n".join(lines) + "\n"


def start(kubelet_factory):
    k = kubelet_factory(start=False)
    ro = free_port()
    k.start("--read-only-port", str(ro))
    api = Client(ro, tls=False)
    wait_for(lambda: _get(api, "/pods") is not None, msg="the read-only port")
    return k, api


def _get(api, path):
    try:
        status, _, body = api.get(path)[:3]
    except OSError:
        return None
    return body if status == 200 else None


def pod_status(api, name):
    for p in api.json("/pods")["items"]:
        if p["metadata"]["name"] == name:
            return p.get("status")
    return None


def cstatus(st, name, init=False):
    return next(c for c in st["initContainerStatuses" if init else "containerStatuses"] if c["name"] == name)


def condition(st, type_):
    return next(c for c in st["conditions"] if c["type"] == type_)


def test_init_containers_run_in_order(kubelet_factory, runtime):
    k, api = start(kubelet_factory)
    # i1 runs long enough to observe the initializing pod
    k.write("init.yaml", manifest("init", [("i1", ["sh", "-c", "echo one; sleep 3"]),
                                           ("i2", ["sh", "-c", "echo two; sleep 1"])], [("app", SLEEPER)]))
    name = f"init-{NODE}"

    st = wait_for(lambda: (s := pod_status(api, name)) and "running" in cstatus(s, "i1", True)["state"] and s, 30,
                  msg="i1 running")
    assert st["phase"] == "Pending"
    init = condition(st, "Initialized")
    assert init["status"] == "False" and init["reason"] == "ContainersNotInitialized"
    assert init["message"] == "containers with incomplete status: [i1 i2]"
    assert cstatus(st, "i2", True)["state"] == {"waiting": {"reason": "PodInitializing"}}
    assert cstatus(st, "app")["state"] == {"waiting": {"reason": "PodInitializing"}}
    assert not runtime.containers_of(name, "i2") and not runtime.containers_of(name, "app")

    st = wait_for(lambda: (s := pod_status(api, name)) and s["phase"] == "Running" and s, 30, msg="pod running")
    assert condition(st, "Initialized")["status"] == "True"
    i1, i2, app = cstatus(st, "i1", True), cstatus(st, "i2", True), cstatus(st, "app")
    for c in (i1, i2):
        t = c["state"]["terminated"]
        assert t["exitCode"] == 0 and t["reason"] == "Completed" and c["ready"] is True
    # one at a time, in order: i1 finished before i2 started, i2 finished before app started
    assert i1["state"]["terminated"]["finishedAt"] <= i2["state"]["terminated"]["startedAt"]
    assert i2["state"]["terminated"]["finishedAt"] <= app["state"]["running"]["startedAt"]
    assert len(runtime.containers_of(name, "i1")) == 1 and len(runtime.containers_of(name, "i2")) == 1


def test_sandbox_recreation_runs_init_containers_again(kubelet_factory, runtime):
    k, api = start(kubelet_factory)
    k.write("again.yaml", manifest("again", [("i1", ["sh", "-c", "echo one"])], [("app", SLEEPER)]))
    name = f"again-{NODE}"
    wait_for(lambda: runtime.running(name, "app"), 30, msg="app running")
    [sb] = runtime.pods_named(name)
    runtime.crictl("stopp", sb["id"])
    wait_for(lambda: any(c["metadata"]["attempt"] >= 1 for c in runtime.containers_of(name, "i1")), 30,
             msg="i1 ran again in the new sandbox")
    wait_for(lambda: any(c["state"] == "CONTAINER_RUNNING" and c["metadata"]["attempt"] >= 1
                         for c in runtime.containers_of(name, "app")), 30, msg="app running again")
    i1 = [c for c in runtime.containers_of(name, "i1") if c["metadata"]["attempt"] >= 1]
    app = [c for c in runtime.containers_of(name, "app") if c["state"] == "CONTAINER_RUNNING"]
    assert i1[0]["podSandboxId"] == app[0]["podSandboxId"] != sb["id"]


def test_failed_init_with_restart_never_fails_the_pod(kubelet_factory, runtime):
    k, api = start(kubelet_factory)
    k.write("never.yaml", manifest("never", [("i1", ["sh", "-c", "exit 3"]), ("i2", ["true"])], [("app", SLEEPER)],
                                   restart_policy="Never"))
    name = f"never-{NODE}"
    st = wait_for(lambda: (s := pod_status(api, name)) and s["phase"] == "Failed" and s, 30, msg="pod Failed")
    assert cstatus(st, "i1", True)["state"]["terminated"]["exitCode"] == 3
    assert cstatus(st, "i1", True)["restartCount"] == 0
    init = condition(st, "Initialized")
    assert init["status"] == "False" and init["message"] == "containers with incomplete status: [i1 i2]"
    wait_for(lambda: all(p["state"] == "SANDBOX_NOTREADY" for p in runtime.pods_named(name)), 20,
             msg="sandbox stopped")
    assert not runtime.containers_of(name, "i2") and not runtime.containers_of(name, "app")
    assert len(runtime.containers_of(name, "i1")) == 1


def test_failed_init_with_restart_always_backs_off(kubelet_factory, runtime):
    k, api = start(kubelet_factory)
    k.write("always.yaml", manifest("always", [("i1", ["sh", "-c", "echo try; exit 1"])], [("app", SLEEPER)]))
    name = f"always-{NODE}"
    st = wait_for(lambda: (s := pod_status(api, name)) and
                  cstatus(s, "i1", True)["state"].get("waiting", {}).get("reason") == "CrashLoopBackOff" and s,
                  40, interval=0.2, msg="i1 in CrashLoopBackOff")
    i1 = cstatus(st, "i1", True)
    assert i1["restartCount"] >= 1
    assert i1["lastState"]["terminated"]["exitCode"] == 1
    assert st["phase"] == "Pending"
    assert cstatus(st, "app")["state"] == {"waiting": {"reason": "PodInitializing"}}
    assert not runtime.containers_of(name, "app")
    k.wait_log(r"Back-off \d+s restarting failed container=i1 pod=default/always-testnode")


def test_sidecar_runs_alongside_the_app(kubelet_factory, runtime):
    k, api = start(kubelet_factory)
    # the sidecar is started once its startup probe sees /tmp/up (after about 2 s); only then does i2 run
    sidecar = ["sh", "-c", "trap 'exit 0' TERM; sleep 2; touch /tmp/up; while true; do sleep 0.2; done"]
    k.write("side.yaml", manifest("side", [
        ("s1", sidecar, ["restartPolicy: Always",
                         "startupProbe: {exec: {command: [test, -f, /tmp/up]}, periodSeconds: 1, timeoutSeconds: 10, failureThreshold: 30}"]),
        ("i2", ["sh", "-c", "echo two"])], [("app", SLEEPER)], restart_policy="Never"))
    name = f"side-{NODE}"
    wait_for(lambda: runtime.running(name, "s1"), 30, msg="sidecar running")
    st = pod_status(api, name)
    assert cstatus(st, "s1", True)["started"] is False
    assert not runtime.containers_of(name, "i2"), "i2 started before the sidecar's startup probe succeeded"
    st = wait_for(lambda: (s := pod_status(api, name)) and s["phase"] == "Running" and
                  condition(s, "Ready")["status"] == "True" and s, 30, msg="pod running and ready")
    s1, i2 = cstatus(st, "s1", True), cstatus(st, "i2", True)
    assert "running" in s1["state"] and s1["started"] is True and s1["ready"] is True
    assert i2["state"]["terminated"]["exitCode"] == 0
    assert s1["state"]["running"]["startedAt"] <= i2["state"]["terminated"]["startedAt"]
    assert condition(st, "Initialized")["status"] == "True"

    # the sidecar exits: restarted although the pod's restartPolicy is Never; the app is left alone
    [c] = runtime.running(name, "s1")
    runtime.crictl("stop", "--timeout", "1", c["id"])
    wait_for(lambda: any(x["metadata"]["attempt"] >= 1 for x in runtime.running(name, "s1")), 30,
             msg="sidecar restarted")
    assert len(runtime.containers_of(name, "app")) == 1 and runtime.running(name, "app")

    # at termination the sidecar stops after the app
    k.remove("side.yaml")
    wait_for(lambda: not runtime.running(name), 30, msg="everything stopped")
    log = k.log()
    app_kill = log.index('containerName="app"', log.index("Killing container with a grace period"))
    kills = [m.start() for m in re.finditer(r'Killing container with a grace period: [^\n]*containerName="s1"', log)]
    assert kills and kills[-1] > app_kill, "the sidecar was stopped before the app"


def test_kill9_during_initialization_converges(kubelet_factory, runtime):
    k, api = start(kubelet_factory)
    k.write("crashy.yaml", manifest("crashy", [("i1", ["sh", "-c", "echo one"]), ("i2", ["sh", "-c", "sleep 3"])],
                                    [("app", SLEEPER)]))
    name = f"crashy-{NODE}"
    wait_for(lambda: runtime.running(name, "i2"), 30, msg="i2 running")
    k.kill9()
    k.start()
    wait_for(lambda: runtime.running(name, "app"), 30, msg="app running after the restart")
    # nothing ran twice: the completed i1 and the running i2 were picked up from the runtime
    for n in ("i1", "i2", "app"):
        ctrs = runtime.containers_of(name, n)
        assert len(ctrs) == 1 and ctrs[0]["metadata"]["attempt"] == 0, (n, ctrs)
    assert len(runtime.pods_named(name)) == 1
