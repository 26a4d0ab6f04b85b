"""Joining a cluster (--kubeconfig) against the fake kube-apiserver (fakeapi.py) on containerd: node
registration and status, the lease, API pods from LIST+WATCH and their status, crash loops, graceful deletion,
mirror pods, admission, watch expiry and connection loss, the API server down, webhook auth of the kubelet API."""
import json
import time

import pytest

from apiclient import Client
from conftest import BUSYBOX, NODE, SLEEPER, free_port, wait_for
from fakeapi import FakeApiServer


@pytest.fixture
def apiserver(tmp_path):
    a = FakeApiServer(str(tmp_path / "apiserver"), node_name=NODE)
    a.bookmark_interval = 1.0
    a.start()
    yield a
    a.stop()


def join(kubelet_factory, apiserver, *extra):
    k = kubelet_factory(start=False)
    k.start("--kubeconfig", apiserver.kubeconfig, "--node-status-update-frequency", "1s", *extra)
    return k


def api_pod(name, containers, restart_policy="Always", grace=None, extra_spec=None, namespace="default"):
    spec = {"nodeName": NODE, "restartPolicy": restart_policy, "containers": containers}
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    spec.update(extra_spec or {})
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def container(name, command, **kw):
    c = {"name": name, "image": BUSYBOX, "command": command}
    c.update(kw)
    return c


def cond(obj, type_):
    return next((c for c in (obj or {}).get("status", {}).get("conditions", []) if c["type"] == type_), None)


def cstatus(pod, name):
    return next((c for c in (pod or {}).get("status", {}).get("containerStatuses", []) if c["name"] == name), None)


# ---------------------------------------------------------------- node


def wait_ready(apiserver, timeout=30):
    try:
        return apiserver.wait(lambda: (n := apiserver.get("nodes", NODE)) and cond(n, "Ready") and
                              cond(n, "Ready")["status"] == "True" and n, timeout=timeout)
    except AssertionError:
        n = apiserver.get("nodes", NODE)
        raise AssertionError(f"node not Ready: {n and n['status'].get('conditions')}")


def test_node_registers_ready_with_lease(kubelet_factory, apiserver):
    join(kubelet_factory, apiserver, "--node-labels", "tier=edge,example.com/x=y",
         "--register-with-taints", "dedicated=edge:NoSchedule", "--kube-reserved", "cpu=100m,memory=100Mi")
    node = wait_ready(apiserver)
    meta, spec, st = node["metadata"], node["spec"], node["status"]
    assert meta["labels"]["kubernetes.io/hostname"] == NODE
    assert meta["labels"]["kubernetes.io/os"] == "linux" and meta["labels"]["kubernetes.io/arch"]
    assert meta["labels"]["tier"] == "edge" and meta["labels"]["example.com/x"] == "y"
    assert {"key": "dedicated", "value": "edge", "effect": "NoSchedule"} in spec["taints"]
    assert int(st["capacity"]["pods"]) == 110
    assert st["allocatable"]["cpu"] and st["capacity"]["memory"].endswith("Ki")
    assert st["nodeInfo"]["containerRuntimeVersion"].startswith("containerd://")
    assert st["nodeInfo"]["kubeletVersion"].startswith("v1.") and st["nodeInfo"]["bootID"]
    assert st["daemonEndpoints"]["kubeletEndpoint"]["Port"] > 0
    assert any(a["type"] == "InternalIP" for a in st["addresses"])
    assert any(a["type"] == "Hostname" for a in st["addresses"])
    for t in ("MemoryPressure", "DiskPressure", "PIDPressure"):
        assert cond(node, t)["status"] == "False"
    assert cond(node, "Ready")["reason"] == "KubeletReady"
    assert any(BUSYBOX in i["names"] for i in st["images"])

    lease = apiserver.wait(lambda: apiserver.get("leases", NODE, namespace="kube-node-lease"), timeout=20)
    assert lease["spec"]["holderIdentity"] == NODE and lease["spec"]["leaseDurationSeconds"] == 40
    assert lease["metadata"]["ownerReferences"][0]["kind"] == "Node"
    first = lease["spec"]["renewTime"]
    # renewed every 10 s (a quarter of the duration)
    apiserver.wait(lambda: apiserver.get("leases", NODE, namespace="kube-node-lease")["spec"]["renewTime"] != first,
                   timeout=20)


def test_node_adopted_when_it_exists(kubelet_factory, apiserver):
    apiserver.create("nodes", {"apiVersion": "v1", "kind": "Node",
                               "metadata": {"name": NODE, "labels": {"pre": "existing"}}})
    k = join(kubelet_factory, apiserver)
    node = apiserver.wait(lambda: (n := apiserver.get("nodes", NODE)) and cond(n, "Ready") and n, timeout=30)
    assert node["metadata"]["labels"]["pre"] == "existing"
    k.wait_log(r"Successfully registered node")


# ---------------------------------------------------------------- pods


def test_pod_runs_and_reports_status(kubelet_factory, apiserver, runtime):
    join(kubelet_factory, apiserver)
    apiserver.wait(lambda: apiserver.get("nodes", NODE), timeout=30)
    apiserver.create("pods", api_pod("web", [
        container("app", ["sh", "-c", "touch /tmp/ready; " + SLEEPER[2]],
                  readinessProbe={"exec": {"command": ["cat", "/tmp/ready"]}, "periodSeconds": 1},
                  resources={"requests": {"cpu": "10m"}}),
    ]), namespace="default")
    uid = apiserver.pod("web")["metadata"]["uid"]
    phases = []

    def ready():
        p = apiserver.pod("web")
        ph = p["status"].get("phase")
        if ph and (not phases or phases[-1] != ph):
            phases.append(ph)
        c = cond(p, "Ready")
        return p if c and c["status"] == "True" else None
    p = apiserver.wait(ready, timeout=60)
    st = p["status"]
    assert st["phase"] == "Running" and phases[-1] == "Running"
    assert st["qosClass"] == "Burstable"
    assert st["podIP"] and st["podIPs"] == [{"ip": st["podIP"]}] and st["hostIP"]
    assert st["startTime"].endswith("Z")
    for t in ("PodScheduled", "Initialized", "ContainersReady", "Ready"):
        c = cond(p, t)
        assert c["status"] == "True" and c["lastTransitionTime"].endswith("Z"), t
    app = cstatus(p, "app")
    assert app["ready"] and app["started"] and app["restartCount"] == 0
    assert app["containerID"] == "containerd://" + runtime.running("web", "app")[0]["id"]
    assert app["state"]["running"]["startedAt"].endswith("Z") and app["imageID"]
    # every status write carried the pod's UID (a precondition) and was a PATCH of pods/<name>/status
    patches = [b.body for b in apiserver.request_bodies
               if b.method == "PATCH" and b.path.startswith("/api/v1/namespaces/default/pods/web/status")]
    assert patches and all(b["metadata"]["uid"] == uid for b in patches)
    # events about the pod, its container as fieldPath
    def reasons():
        evs = [e for e in apiserver.list("events", "default") if e["involvedObject"]["name"] == "web"]
        got = {e["reason"] for e in evs}
        return evs if {"Pulled", "Created", "Started"} <= got else None
    evs = apiserver.wait(reasons, timeout=20)
    started = next(e for e in evs if e["reason"] == "Started")
    assert started["involvedObject"]["uid"] == uid and started["involvedObject"]["kind"] == "Pod"
    assert started["involvedObject"]["fieldPath"] == "spec.containers{app}"
    assert started["message"] == "Started container app" and started["type"] == "Normal"
    assert started["source"] == {"component": "kubelet", "host": NODE} and started["count"] == 1
    # not on every tick: status is written when it changes
    n = len(patches)
    time.sleep(3)
    later = [1 for b in apiserver.request_bodies
             if b.method == "PATCH" and b.path.startswith("/api/v1/namespaces/default/pods/web/status")]
    assert len(later) == n


def test_crash_loop_and_terminated_fields(kubelet_factory, apiserver):
    join(kubelet_factory, apiserver)
    apiserver.create("pods", api_pod("crash", [container("c", ["sh", "-c", "echo bye >&2; exit 3"])]))

    def looping():
        c = cstatus(apiserver.pod("crash"), "c")
        return c if c and c["state"].get("waiting", {}).get("reason") == "CrashLoopBackOff" else None
    c = apiserver.wait(looping, timeout=60)
    assert c["restartCount"] >= 1 and not c["ready"]
    term = c["lastState"]["terminated"]
    assert term["exitCode"] == 3 and term["reason"] == "Error"
    assert term["startedAt"] and term["finishedAt"] and term["containerID"].startswith("containerd://")
    p = apiserver.pod("crash")
    assert p["status"]["phase"] == "Running"
    assert cond(p, "Ready")["status"] == "False" and cond(p, "Ready")["reason"] == "ContainersNotReady"
    backoff = apiserver.wait(lambda: [e for e in apiserver.list("events", "default")
                                      if e["involvedObject"]["name"] == "crash" and e["reason"] == "BackOff"], timeout=20)
    assert backoff[0]["type"] == "Warning"
    assert backoff[0]["message"] == "Back-off restarting failed container c in pod crash_default(%s)" % \
        p["metadata"]["uid"]


def test_completed_pod_succeeds_and_is_not_rerun(kubelet_factory, apiserver, runtime):
    k = join(kubelet_factory, apiserver)
    apiserver.create("pods", api_pod("job", [container("c", ["true"])], restart_policy="Never"))
    p = apiserver.wait(lambda: (p := apiserver.pod("job")) and p["status"].get("phase") == "Succeeded" and p,
                       timeout=60)
    assert cstatus(p, "c")["state"]["terminated"]["reason"] == "Completed"
    # a restart of the kubelet does not run it again
    k.restart()
    time.sleep(4)
    assert len(runtime.containers_of("job", "c")) <= 1


def test_graceful_deletion(kubelet_factory, apiserver, runtime):
    k = join(kubelet_factory, apiserver)
    apiserver.create("pods", api_pod("del", [container("c", ["sh", "-c", "trap 'echo got TERM; sleep 1; exit 0' TERM; "
                                                                   "while true; do sleep 0.2; done"])], grace=20))
    apiserver.wait(lambda: cstatus(apiserver.pod("del"), "c") and cstatus(apiserver.pod("del"), "c")["ready"],
                   timeout=60)
    t0 = time.monotonic()
    apiserver.delete("pods", "del", namespace="default")  # graceful: deletionTimestamp set
    assert apiserver.pod("del")["metadata"]["deletionTimestamp"]
    apiserver.wait(lambda: apiserver.pod("del") is None, timeout=30)
    took = time.monotonic() - t0
    assert took < 15  # stopped on SIGTERM (about 1 s), not at the 20 s deadline
    assert not runtime.pods_named("del", ready_only=True)
    # the kubelet's DELETE (grace period 0: the fake removes a bound pod only then) succeeded
    assert any(r.method == "DELETE" and r.path.startswith("/api/v1/namespaces/default/pods/del") and r.status == 200
               and r.user == f"system:node:{NODE}" for r in apiserver.requests)
    k.wait_log(r'SyncLoop DELETE: pod="default/del"')


def test_pods_deleted_while_down_are_cleaned_up(kubelet_factory, apiserver, runtime):
    k = join(kubelet_factory, apiserver)
    apiserver.create("pods", api_pod("gone", [container("c", SLEEPER)]))
    apiserver.wait(lambda: runtime.running("gone", "c"), timeout=60)
    k.kill9()
    apiserver.delete("pods", "gone", namespace="default", grace_seconds=0)
    k.start()
    wait_for(lambda: not runtime.pods_named("gone", ready_only=True), timeout=60, msg="the orphaned pod removed")


def test_admission_out_of_cpu(kubelet_factory, apiserver):
    join(kubelet_factory, apiserver)
    apiserver.create("pods", api_pod("huge", [container("c", SLEEPER, resources={"requests": {"cpu": "500"}})]))
    p = apiserver.wait(lambda: (p := apiserver.pod("huge")) and p["status"].get("phase") == "Failed" and p, timeout=30)
    assert p["status"]["reason"] == "OutOfcpu"
    assert p["status"]["message"].startswith("Pod was rejected: Node didn't have enough resource: cpu, requested: 500000")


# ---------------------------------------------------------------- mirror pods


def write_static(k, app_label):
    k.write("static.yaml", f"""
        apiVersion: v1
        kind: Pod
        metadata:
          name: static
          namespace: kube-system
          labels: {{app: {app_label}}}
        spec:
          containers:
          - name: c
            image: {BUSYBOX}
            command: {json.dumps(SLEEPER)}
        """)


def test_mirror_pods(kubelet_factory, apiserver, runtime):
    k = join(kubelet_factory, apiserver)
    write_static(k, "s")
    name = f"static-{NODE}"
    m = apiserver.wait(lambda: apiserver.pod(name, "kube-system"), timeout=60)
    ann = m["metadata"]["annotations"]
    assert ann["kubernetes.io/config.mirror"] == ann["kubernetes.io/config.hash"]
    assert ann["kubernetes.io/config.source"] == "file"
    node = apiserver.get("nodes", NODE)
    assert m["metadata"]["ownerReferences"][0] == {"apiVersion": "v1", "kind": "Node", "name": NODE,
                                                   "uid": node["metadata"]["uid"], "controller": True}
    assert m["spec"]["nodeName"] == NODE and m["metadata"]["labels"] == {"app": "s"}
    # the static pod's status is reported on its mirror pod
    apiserver.wait(lambda: (p := apiserver.pod(name, "kube-system")) and p["status"].get("phase") == "Running",
                   timeout=60)
    # the mirror pod is not run as a pod of its own
    assert len(runtime.pods_named(name, ready_only=True)) == 1

    # deleted by someone: it comes back (a new UID), the static pod keeps running
    sandbox = runtime.pods_named(name, ready_only=True)[0]["id"]
    old_uid = m["metadata"]["uid"]
    apiserver.delete("pods", name, namespace="kube-system", grace_seconds=0)
    m2 = apiserver.wait(lambda: (p := apiserver.pod(name, "kube-system")) and p["metadata"]["uid"] != old_uid and p,
                        timeout=30)
    assert runtime.pods_named(name, ready_only=True)[0]["id"] == sandbox

    # the manifest changes: the mirror pod is replaced by one with the new hash
    write_static(k, "s2")
    m3 = apiserver.wait(lambda: (p := apiserver.pod(name, "kube-system")) and p["metadata"]["labels"] == {"app": "s2"}
                        and p, timeout=60)
    assert m3["metadata"]["annotations"]["kubernetes.io/config.mirror"] != \
        m2["metadata"]["annotations"]["kubernetes.io/config.mirror"]

    # the manifest goes: so does the mirror pod
    k.remove("static.yaml")
    apiserver.wait(lambda: apiserver.pod(name, "kube-system") is None, timeout=60)


# ---------------------------------------------------------------- watch robustness


def test_watch_expiry_and_drops_lose_nothing(kubelet_factory, apiserver, runtime):
    apiserver.max_watch_seconds = 2  # watches end often: resumed from the last resourceVersion
    k = join(kubelet_factory, apiserver)
    apiserver.create("pods", api_pod("w1", [container("c", SLEEPER)]))
    apiserver.wait(lambda: runtime.running("w1", "c"), timeout=60)
    time.sleep(3)  # a watch expired and was resumed
    apiserver.create("pods", api_pod("w2", [container("c", SLEEPER)]))
    apiserver.wait(lambda: runtime.running("w2", "c"), timeout=60)

    # a connection dropped mid-stream, a compaction (410 on resume: relist), more pods meanwhile
    apiserver.drop_watches()
    apiserver.create("pods", api_pod("w3", [container("c", SLEEPER)]))
    apiserver.compact()
    apiserver.drop_watches()
    apiserver.create("pods", api_pod("w4", [container("c", SLEEPER)]))
    apiserver.wait(lambda: runtime.running("w3", "c") and runtime.running("w4", "c"), timeout=60)
    k.wait_log(r"too old|listing again|relist", timeout=30)
    # nothing duplicated: one sandbox per pod, never restarted
    for n in ("w1", "w2", "w3", "w4"):
        assert len(runtime.pods_named(n)) == 1, n
        assert len(runtime.containers_of(n, "c")) == 1, n


def test_stalled_watch_detected(kubelet_factory, apiserver, runtime):
    # no bookmarks and no bytes: the kubelet's idle timer must notice (it is 120 s in production; this test
    # checks the bookmarks keep a quiet watch alive instead, and that a stall does not wedge pod delivery)
    k = join(kubelet_factory, apiserver)
    apiserver.create("pods", api_pod("s1", [container("c", SLEEPER)]))
    apiserver.wait(lambda: runtime.running("s1", "c"), timeout=60)
    time.sleep(3)  # bookmarks only
    apiserver.create("pods", api_pod("s2", [container("c", SLEEPER)]))
    apiserver.wait(lambda: runtime.running("s2", "c"), timeout=30)
    assert "watch ended" not in k.log()


def test_apiserver_down_loses_nothing(kubelet_factory, apiserver, runtime):
    k = join(kubelet_factory, apiserver)
    k.write("st.yaml", f"""
        apiVersion: v1
        kind: Pod
        metadata: {{name: st}}
        spec:
          containers:
          - name: c
            image: {BUSYBOX}
            command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 0.2; done"]
        """)
    apiserver.create("pods", api_pod("a1", [container("c", SLEEPER)]))
    apiserver.wait(lambda: runtime.running("a1", "c") and apiserver.pod(f"st-{NODE}"), timeout=60)
    apiserver.set_down(True)
    time.sleep(60)
    # everything kept running; the kubelet is alive
    assert k.alive() and runtime.running("a1", "c") and runtime.running(f"st-{NODE}", "c")
    apiserver.set_down(False)
    # changes made while it was down (simulated: right after it is back) are picked up
    apiserver.create("pods", api_pod("a2", [container("c", SLEEPER)]))
    apiserver.wait(lambda: runtime.running("a2", "c"), timeout=60)
    # status and the lease flow again
    apiserver.wait(lambda: (p := apiserver.pod("a2")) and p["status"].get("phase") == "Running", timeout=60)
    before = apiserver.get("leases", NODE, namespace="kube-node-lease")["spec"]["renewTime"]
    apiserver.wait(lambda: apiserver.get("leases", NODE, namespace="kube-node-lease")["spec"]["renewTime"] != before,
                   timeout=30)
    assert len(runtime.containers_of("a1", "c")) == 1


# ---------------------------------------------------------------- webhook auth of the kubelet API


def test_webhook_authn_authz(kubelet_factory, apiserver):
    k = kubelet_factory(start=False)
    k.start("--kubeconfig", apiserver.kubeconfig, "--authorization-mode", "Webhook")
    apiserver.tokens["good-token"] = ("alice", ["system:masters"])
    apiserver.tokens["weak-token"] = ("bob", ["viewers"])
    wait_for(lambda: Client(k.healthz_port, tls=False).get("/healthz")[0] == 200, msg="healthz")
    alice = Client(k.port, token="good-token")
    bob = Client(k.port, token="weak-token")
    nobody = Client(k.port, token="bad-token")
    assert alice.get("/pods")[0] == 200
    assert nobody.get("/pods")[0] == 401
    st, body, _ = bob.get("/stats/summary")
    assert st == 403 and "user=bob" in body and "subresource(s)=[stats]" in body
    reviews = list(apiserver.reviews)
    sar = [r for r in reviews if r["kind"] == "SubjectAccessReview"]
    assert any(r["spec"]["user"] == "alice" and r["spec"]["resourceAttributes"] ==
               {"verb": "get", "group": "", "version": "v1", "resource": "nodes", "subresource": "proxy", "name": NODE}
               for r in sar)
    # cached: the same requests again make no new reviews
    n = len(apiserver.reviews)
    assert alice.get("/pods")[0] == 200 and nobody.get("/pods")[0] == 401 and bob.get("/stats/summary")[0] == 403
    assert len(apiserver.reviews) == n
    # the token never shows in the kubelet's log
    assert "good-token" not in k.log() and "weak-token" not in k.log()
