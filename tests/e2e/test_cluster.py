"""Joining a real cluster (--kubeconfig; kube-apiserver v1.37.2 with Node,RBAC authorization and the NodeRestriction
admission plugin, kube-controller-manager and kube-scheduler: controlplane.py) on containerd: node registration
and status, the lease, API pods from LIST+WATCH and their status (PATCHes the real validation accepts),
crash loops, graceful deletion with the kubelet's final DELETE, pods deleted while the kubelet was down,
admission, mirror pods of static pods, events, and webhook authentication/authorization of the kubelet API
(TokenReview and SubjectAccessReview answered by the apiserver). Every test has a node and a namespace of its
own; a request of the kubelet that the apiserver refuses fails the test (the kube fixture)."""
import datetime
import json
import os
import re
import socket
import subprocess
import threading
import time

from apiclient import Client
from apiobjects import SLEEP, api_pod, cond, container, cstatus
from conftest import BUSYBOX, CKUBELET, wait_for


def pod(kube, name, containers, **kw):
    return kube.create("pods", api_pod(name, containers, kube.node, **kw))


# ---------------------------------------------------------------- node


def wait_ready(kube, timeout=60):
    try:
        return kube.wait(lambda: (n := kube.node_obj()) and (c := cond(n, "Ready")) and c["status"] == "True" and n,
                         timeout=timeout, msg="the node Ready")
    except AssertionError:
        n = kube.node_obj()
        raise AssertionError(f"node not Ready: {n and n['status'].get('conditions')}")


def test_node_registers_ready_with_lease(kube):
    kube.kubelet("--node-labels", "tier=edge,example.com/x=y", "--register-with-taints", "dedicated=edge:NoSchedule",
                 "--kube-reserved", "cpu=100m,memory=100Mi")
    node = wait_ready(kube)
    meta, spec, st = node["metadata"], node["spec"], node["status"]
    assert meta["labels"]["kubernetes.io/hostname"] == kube.node
    assert meta["labels"]["kubernetes.io/os"] == "linux" and meta["labels"]["kubernetes.io/arch"]
    assert meta["labels"]["tier"] == "edge" and meta["labels"]["example.com/x"] == "y"
    assert {"key": "dedicated", "value": "edge", "effect": "NoSchedule"} in spec["taints"]
    assert int(st["capacity"]["pods"]) == 110
    assert st["allocatable"]["cpu"] and st["capacity"]["memory"].endswith("Ki")
    assert st["nodeInfo"]["containerRuntimeVersion"].startswith("containerd://")
    assert st["nodeInfo"]["bootID"]
    # the release ckubelet follows, as `ckubelet --version` prints it ("Kubernetes v1.x.y", as upstream's)
    version = subprocess.run([CKUBELET, "--version"], capture_output=True, text=True, check=True).stdout.split()
    assert version[0] == "Kubernetes" and st["nodeInfo"]["kubeletVersion"] == version[1]
    assert st["daemonEndpoints"]["kubeletEndpoint"]["Port"] > 0
    assert any(a["type"] == "InternalIP" for a in st["addresses"])
    assert any(a["type"] == "Hostname" for a in st["addresses"])
    for t in ("MemoryPressure", "DiskPressure", "PIDPressure"):
        assert cond(node, t)["status"] == "False"
    assert cond(node, "Ready")["reason"] == "KubeletReady"
    assert any(BUSYBOX in i["names"] for i in st["images"])
    # the node lifecycle controller took the not-ready taint that admission put on the new node away
    kube.wait(lambda: not any(t["key"] == "node.kubernetes.io/not-ready" for t in kube.node_obj()["spec"]["taints"]),
              60, msg="the not-ready taint removed")

    lease = kube.wait(kube.lease, timeout=30, msg="the lease")
    assert lease["spec"]["holderIdentity"] == kube.node and lease["spec"]["leaseDurationSeconds"] == 40
    owner = lease["metadata"]["ownerReferences"][0]
    assert owner["kind"] == "Node" and owner["name"] == kube.node and owner["uid"] == meta["uid"]
    first = lease["spec"]["renewTime"]
    # renewed every 10 s (a quarter of the duration)
    kube.wait(lambda: kube.lease()["spec"]["renewTime"] != first, timeout=30, msg="the lease renewed")
    # the status was written by PATCHes of nodes/<name>/status, all accepted
    patches = [e for e in kube.audit() if e["verb"] == "patch" and e["objectRef"].get("subresource") == "status"
               and e["objectRef"]["resource"] == "nodes"]
    assert patches and all(e["responseStatus"]["code"] == 200 for e in patches)


def test_node_adopted_when_it_exists(kube):
    kube.admin.create("nodes", {"apiVersion": "v1", "kind": "Node",
                                "metadata": {"name": kube.node, "labels": {"pre": "existing"}}})
    k = kube.kubelet()
    node = wait_ready(kube)
    assert node["metadata"]["labels"]["pre"] == "existing"
    k.wait_log(r"Successfully registered node")


# ---------------------------------------------------------------- pods


def test_pod_runs_and_reports_status(kube, runtime):
    kube.kubelet()
    wait_ready(kube)
    pod(kube, "web", [container("app", ["sh", "-c", "touch /tmp/ready; " + SLEEP[2]],
                                readinessProbe={"exec": {"command": ["cat", "/tmp/ready"]}, "periodSeconds": 1},
                                resources={"requests": {"cpu": "10m"}})])
    uid = kube.pod("web")["metadata"]["uid"]
    phases = []

    def ready():
        p = kube.pod("web")
        ph = p["status"].get("phase")
        if ph and (not phases or phases[-1] != ph):
            phases.append(ph)
        c = cond(p, "Ready")
        return p if c and c["status"] == "True" else None
    p = kube.wait(ready, timeout=90, msg="pod web Ready")
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
    # the service account token volume the ServiceAccount admission plugin added is mounted
    cid = runtime.running("web", "app")[0]["id"]
    out = runtime.crictl("exec", cid, "--", "cat", "/var/run/secrets/kubernetes.io/serviceaccount/namespace").stdout
    assert out == kube.ns

    # every status write was a PATCH of pods/<name>/status carrying the pod's UID (a precondition)
    def patches():
        return [e for e in kube.audit() if e["verb"] == "patch" and e["objectRef"]["resource"] == "pods" and
                e["objectRef"].get("name") == "web" and e["objectRef"].get("subresource") == "status"]
    ps = kube.wait(patches, 20, msg="status patches in the audit log")
    assert all(e["requestObject"]["metadata"]["uid"] == uid and e["responseStatus"]["code"] == 200 for e in ps)

    # events about the pod, its container as fieldPath
    def reasons():
        evs = kube.events("web")
        return evs if {"Pulled", "Created", "Started"} <= {e["reason"] for e in evs} else None
    evs = kube.wait(reasons, timeout=30, msg="the pod's events")
    started = next(e for e in evs if e["reason"] == "Started")
    assert started["involvedObject"]["uid"] == uid and started["involvedObject"]["kind"] == "Pod"
    assert started["involvedObject"]["fieldPath"] == "spec.containers{app}"
    assert started["message"] == "Started container app" and started["type"] == "Normal"
    assert started["source"] == {"component": "kubelet", "host": kube.node} and started["count"] == 1

    # not on every tick: status is written when it changes
    time.sleep(1)
    n = len(patches())
    time.sleep(3)
    assert len(patches()) == n


def test_ready_condition_loses_the_unready_reason(kube):
    """Issue 37: once the container is ready, Ready and ContainersReady carry no reason or message any more (the
    status patch sets ContainersNotReady's to null: conditions are merged by type, what is left out stays)."""
    kube.kubelet()
    wait_ready(kube)
    pod(kube, "late", [container("c", ["sh", "-c", "sleep 3; touch /tmp/ready; trap 'exit 0' TERM; "
                                        "while true; do sleep 0.2; done"],
                                 readinessProbe={"exec": {"command": ["cat", "/tmp/ready"]}, "periodSeconds": 1})])
    kube.wait(lambda: (p := kube.pod("late")) and cond(p, "Ready") and cond(p, "Ready")["status"] == "False" and
              cond(p, "Ready").get("reason") == "ContainersNotReady", timeout=60, msg="Ready=False, ContainersNotReady")
    p = kube.wait(lambda: (p := kube.pod("late")) and cond(p, "Ready")["status"] == "True" and p, timeout=60,
                  msg="Ready=True")
    for t in ("Ready", "ContainersReady"):
        c = cond(p, t)
        assert c["status"] == "True" and "reason" not in c and "message" not in c, c


def test_crash_loop_and_terminated_fields(kube):
    kube.kubelet()
    pod(kube, "crash", [container("c", ["sh", "-c", "echo bye >&2; exit 3"])])

    def looping():
        c = cstatus(kube.pod("crash"), "c")
        return c if c and c["state"].get("waiting", {}).get("reason") == "CrashLoopBackOff" else None
    c = kube.wait(looping, timeout=90, msg="CrashLoopBackOff")
    assert c["restartCount"] >= 1 and not c["ready"]
    term = c["lastState"]["terminated"]
    assert term["exitCode"] == 3 and term["reason"] == "Error"
    assert term["startedAt"] and term["finishedAt"] and term["containerID"].startswith("containerd://")
    p = kube.pod("crash")
    assert p["status"]["phase"] == "Running"
    assert cond(p, "Ready")["status"] == "False" and cond(p, "Ready")["reason"] == "ContainersNotReady"
    backoff = kube.wait(lambda: kube.events("crash", "BackOff"), timeout=30, msg="a BackOff event")
    assert backoff[0]["type"] == "Warning"
    assert backoff[0]["message"] == "Back-off restarting failed container c in pod crash_%s(%s)" % (
        kube.ns, p["metadata"]["uid"])


def test_completed_pod_succeeds_and_is_not_rerun(kube, runtime):
    k = kube.kubelet()
    pod(kube, "job", [container("c", ["sh", "-c", "echo x > /mem/x"],
                                volumeMounts=[{"name": "mem", "mountPath": "/mem"}])], restart_policy="Never",
        extra_spec={"volumes": [{"name": "mem", "emptyDir": {"medium": "Memory"}}]})
    p = kube.wait(lambda: (p := kube.pod("job")) and p["status"].get("phase") == "Succeeded" and p, timeout=90,
                  msg="phase Succeeded")
    assert cstatus(p, "c")["state"]["terminated"]["reason"] == "Completed"
    # finished for good: its volumes are torn down (syncTerminatedPod), the pod and its directory stay
    pd = os.path.join(k.root, "pods", p["metadata"]["uid"])
    ed = os.path.join(pd, "volumes", "kubernetes.io~empty-dir")
    wait_for(lambda: not os.path.exists(ed), msg="the finished pod's emptyDir torn down")
    with open("/proc/self/mountinfo") as f:
        assert not [l for l in f if l.split()[4].startswith(pd + "/")]
    assert os.path.isdir(pd)
    # a restart of the kubelet does not run it again; what a kubelet killed before the teardown left goes then
    os.makedirs(os.path.join(ed, "mem"))
    k.restart()
    k.wait_log(r"Successfully registered node|Node .* registered", timeout=60)
    wait_for(lambda: not os.path.exists(ed), msg="the finished pod's emptyDir torn down after the restart")
    time.sleep(2)
    assert len(runtime.containers_of("job", "c")) <= 1
    assert kube.pod("job")["status"]["phase"] == "Succeeded"


def test_graceful_deletion(kube, runtime):
    k = kube.kubelet()
    pod(kube, "del", [container("c", ["sh", "-c", "trap 'echo got TERM; sleep 1; exit 0' TERM; "
                                                  "while true; do sleep 0.2; done"])], grace=20)
    kube.wait(lambda: (c := cstatus(kube.pod("del"), "c")) and c["ready"], timeout=90, msg="pod del ready")
    uid = kube.pod("del")["metadata"]["uid"]
    t0 = time.monotonic()
    # graceful: deletionTimestamp set, the kubelet stops it and deletes it for good; the DELETE's grace period (45 s)
    # wins over the pod's (20 s), as upstream's setTerminationGracePeriod
    kube.delete("pods", "del", grace_seconds=45)
    assert kube.pod("del")["metadata"]["deletionTimestamp"]
    kube.wait(lambda: kube.pod("del") is None, timeout=60, msg="the pod gone from the API")
    took = time.monotonic() - t0
    assert took < 18  # stopped on SIGTERM (about 1 s), not at the 20 s deadline
    assert not runtime.pods_named("del", ready_only=True)
    # the kubelet's DELETE: grace period 0, the pod's UID as precondition, accepted
    dels = kube.wait(lambda: [e for e in kube.audit() if e["verb"] == "delete" and
                              e["objectRef"]["resource"] == "pods" and e["objectRef"].get("name") == "del"], 10,
                     msg="the kubelet's DELETE in the audit log")
    info = [(e["responseStatus"]["code"], e["requestObject"], e["requestReceivedTimestamp"]) for e in dels]
    assert len(dels) == 1 and dels[0]["responseStatus"]["code"] == 200, info
    assert dels[0]["requestObject"]["gracePeriodSeconds"] == 0
    assert dels[0]["requestObject"]["preconditions"]["uid"] == uid
    k.wait_log(r'SyncLoop DELETE: pod="%s/del"' % kube.ns)
    k.wait_log(r'Killing container with a grace period: pod="%s/del"[^\n]*containerName="c"[^\n]*gracePeriod=45'
               % kube.ns)


def test_pods_deleted_while_down_are_cleaned_up(kube, runtime):
    k = kube.kubelet()
    pod(kube, "gone", [container("c", SLEEP)])
    kube.wait(lambda: runtime.running("gone", "c"), timeout=90, msg="pod gone running")
    k.kill9()
    kube.delete("pods", "gone", grace_seconds=0)
    k.start()
    wait_for(lambda: not runtime.pods_named("gone", ready_only=True), timeout=60, msg="the orphaned pod removed")


def ready_false_patches(kube, since):
    """The pods whose Ready condition the kubelet's status patches set False after `since` (time.time())."""
    out = set()
    for e in kube.audit():
        if (e["verb"] != "patch" or e["objectRef"].get("resource") != "pods" or
                e["objectRef"].get("subresource") != "status"):
            continue
        t = datetime.datetime.strptime(e["requestReceivedTimestamp"], "%Y-%m-%dT%H:%M:%S.%fZ")
        if t.replace(tzinfo=datetime.timezone.utc).timestamp() < since:
            continue
        conds = ((e.get("requestObject") or {}).get("status") or {}).get("conditions") or []
        if any(c.get("type") in ("Ready", "ContainersReady") and c.get("status") == "False" for c in conds):
            out.add(e["objectRef"]["name"])
    return out


def test_readiness_kept_across_a_restart(kube, runtime):
    """A restart of ckubelet leaves pods Ready in the API throughout (issue 32 item 3): a container still running as
    the same instance keeps the readiness the API server showed until its first probe answers. One whose probe
    now fails goes not ready on that answer: nothing is carried past it."""
    k = kube.kubelet()
    probe = {"exec": {"command": ["cat", "/tmp/ready"]}, "periodSeconds": 5, "failureThreshold": 1}
    cmd = ["sh", "-c", "touch /tmp/ready; trap 'exit 0' TERM; while true; do sleep 0.2; done"]
    names = [f"r{i}" for i in range(30)]
    for n in names:
        pod(kube, n, [container("c", cmd, readinessProbe=probe)], grace=2)
    for n in names:
        kube.wait(lambda: (p := kube.pod(n)) and (c := cond(p, "Ready")) and c["status"] == "True", 120,
                  msg=f"pod {n} Ready")
    ids = {n: cstatus(kube.pod(n), "c")["containerID"] for n in names}
    k.term()
    # while it is down, the probe of r0 starts failing
    cid = ids["r0"].split("://", 1)[1]
    runtime.crictl("exec", cid, "--", "rm", "/tmp/ready")
    since = time.time()
    k.start(*k.cluster_args)
    # r0: not ready on its first probe after the restart (period 5 s + timeout 1 s at most)
    kube.wait(lambda: (c := cond(kube.pod("r0"), "Ready")) and c["status"] == "False", 30,
              msg="r0 not ready once its probe answered")
    # every pod's first probe answers within period 5 s + timeout 1 s of the restart (each kept readiness ends
    # with a log line; without any kept, this waits its 20 s out and the patches say what happened)
    deadline = time.monotonic() + 20
    while k.log().count("Readiness kept across the restart ends") < 30 and time.monotonic() < deadline:
        time.sleep(0.5)
    flipped = ready_false_patches(kube, since)
    assert flipped == {"r0"}, f"pods set not ready across the restart: {sorted(flipped)}"
    for n in names[1:]:
        p = kube.pod(n)
        assert cond(p, "Ready")["status"] == "True", n
        assert cstatus(p, "c")["containerID"] == ids[n], f"{n} was restarted"
    k.wait_log(r"Container kept ready as the API server showed it until its first probe answers: "
               r'pod="%s/r1"' % kube.ns, 5)


def test_admission_out_of_cpu(kube):
    kube.kubelet()
    pod(kube, "huge", [container("c", SLEEP, resources={"requests": {"cpu": "500"}})])
    p = kube.wait(lambda: (p := kube.pod("huge")) and p["status"].get("phase") == "Failed" and p, timeout=60,
                  msg="phase Failed")
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
            command: {json.dumps(SLEEP)}
        """)


def test_mirror_pods(kube, runtime):
    k = kube.kubelet()
    write_static(k, "s")
    name = f"static-{kube.node}"
    m = kube.wait(lambda: kube.pod(name, "kube-system"), timeout=90, msg="the mirror pod")
    ann = m["metadata"]["annotations"]
    assert ann["kubernetes.io/config.mirror"] == ann["kubernetes.io/config.hash"]
    assert ann["kubernetes.io/config.source"] == "file"
    node = kube.node_obj()
    assert m["metadata"]["ownerReferences"] == [{"apiVersion": "v1", "kind": "Node", "name": kube.node,
                                                 "uid": node["metadata"]["uid"], "controller": True}]
    assert m["spec"]["nodeName"] == kube.node and m["metadata"]["labels"] == {"app": "s"}
    # the static pod's status is reported on its mirror pod
    kube.wait(lambda: (p := kube.pod(name, "kube-system")) and p["status"].get("phase") == "Running", timeout=90,
              msg="the mirror pod Running")
    # the mirror pod is not run as a pod of its own
    assert len(runtime.pods_named(name, ready_only=True)) == 1

    # deleted by someone: it comes back (a new UID), the static pod keeps running
    sandbox = runtime.pods_named(name, ready_only=True)[0]["id"]
    old_uid = m["metadata"]["uid"]
    kube.delete("pods", name, "kube-system", grace_seconds=0)
    m2 = kube.wait(lambda: (p := kube.pod(name, "kube-system")) and p["metadata"]["uid"] != old_uid and p,
                   timeout=60, msg="the mirror pod again")
    assert runtime.pods_named(name, ready_only=True)[0]["id"] == sandbox

    # the manifest changes: the mirror pod is replaced by one with the new hash
    write_static(k, "s2")
    m3 = kube.wait(lambda: (p := kube.pod(name, "kube-system")) and p["metadata"]["labels"] == {"app": "s2"} and p,
                   timeout=90, msg="the new mirror pod")
    assert m3["metadata"]["annotations"]["kubernetes.io/config.mirror"] != \
        m2["metadata"]["annotations"]["kubernetes.io/config.mirror"]

    # the manifest goes: so does the mirror pod
    k.remove("static.yaml")
    kube.wait(lambda: kube.pod(name, "kube-system") is None, timeout=90, msg="the mirror pod gone")
    # a status patch already on its way when the mirror pod was replaced (deleted by the admin above) may land on
    # the new one and be refused (kube-apiserver v1.20.2: 422, metadata.uid immutable): at most once per replaced
    # UID, never retried (issue 27: it was retried for ever under load)
    kube.expected_errors.add(("patch", 422))
    refused = {}
    for e in kube.audit():
        if e["verb"] == "patch" and e["objectRef"].get("subresource") == "status" and \
                e["responseStatus"]["code"] == 422:
            uid = ((e.get("requestObject") or {}).get("metadata") or {}).get("uid")
            refused[uid] = refused.get(uid, 0) + 1
    assert all(uid in (old_uid, m2["metadata"]["uid"]) and n == 1 for uid, n in refused.items()), refused
    # every mirror pod write was one NodeRestriction accepts
    writes = [e for e in kube.audit() if e["objectRef"].get("resource") == "pods" and
              e["verb"] in ("create", "delete")]
    assert writes and all(e["responseStatus"]["code"] in (200, 201, 404) for e in writes), \
        [(e["verb"], e["responseStatus"]) for e in writes]


def test_mirror_pod_graceful_delete(kube, runtime):
    """Issue 27: a mirror pod deleted with a grace period (deletionTimestamp set, as `kubectl delete
    --grace-period=1` leaves it) is gone for the kubelet, as upstream treats it: deleted for good and created
    again with a new UID, the static pod's containers untouched."""
    k = kube.kubelet()
    write_static(k, "s")
    name = f"static-{kube.node}"
    m = kube.wait(lambda: (p := kube.pod(name, "kube-system")) and p["status"].get("phase") == "Running" and p,
                  timeout=90, msg="the mirror pod Running")
    c = kube.wait(lambda: runtime.running(name, "c"), timeout=30, msg="the static pod's container")[0]
    sandbox = runtime.pods_named(name, ready_only=True)[0]["id"]
    kube.kubectl("delete", "pod", name, "-n", "kube-system", "--grace-period=1", "--wait=false")
    m2 = kube.wait(lambda: (p := kube.pod(name, "kube-system")) and p["metadata"]["uid"] != m["metadata"]["uid"]
                   and not p["metadata"].get("deletionTimestamp") and p, timeout=20, msg="a new mirror pod")
    assert m2["metadata"]["annotations"]["kubernetes.io/config.mirror"] == \
        m["metadata"]["annotations"]["kubernetes.io/config.mirror"]
    # the static pod kept running: same sandbox, same container, not restarted
    assert runtime.pods_named(name, ready_only=True)[0]["id"] == sandbox
    assert [x["id"] for x in runtime.running(name, "c")] == [c["id"]]
    kube.wait(lambda: (p := kube.pod(name, "kube-system")) and cstatus(p, "c") and
              cstatus(p, "c").get("containerID", "").endswith(c["id"]) and cstatus(p, "c")["restartCount"] == 0,
              timeout=30, msg="the new mirror pod's status")
    # the old one was deleted for good by the kubelet, with its UID as precondition
    dels = [e for e in kube.audit() if e["verb"] == "delete" and e["objectRef"].get("resource") == "pods" and
            e["objectRef"].get("name") == name]
    assert any(((e.get("requestObject") or {}).get("preconditions") or {}).get("uid") == m["metadata"]["uid"] and
               (e.get("requestObject") or {}).get("gracePeriodSeconds") == 0 for e in dels), dels


class PausableProxy:
    """A TCP proxy on loopback to the apiserver whose traffic the test can hold (in both directions, on every
    connection: what the kubelet sends meanwhile waits in the proxy) and release."""

    def __init__(self, port):
        self.target = port
        self.flowing = threading.Event()
        self.flowing.set()
        self.stopped = False
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.conns = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.stopped:
            try:
                a, _ = self.sock.accept()
            except OSError:
                return
            b = socket.create_connection(("127.0.0.1", self.target))
            self.conns += [a, b]
            threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()
            threading.Thread(target=self._pipe, args=(b, a), daemon=True).start()

    def _pipe(self, src, dst):
        while True:
            try:
                data = src.recv(65536)
                self.flowing.wait()  # what arrived while held goes on once released
                if not data:
                    dst.shutdown(1)
                    return
                dst.sendall(data)
            except OSError:
                return

    def close(self):
        self.stopped = True
        self.flowing.set()
        for s in [self.sock] + self.conns:
            try:
                s.close()
            except OSError:
                pass


def test_mirror_status_patch_for_replaced_mirror_pod(kube, runtime):
    """Issue 27: a status PATCH for a mirror pod that was replaced (a new UID) before the patch landed. The ordering
    is forced: the kubelet's traffic to the apiserver is held while its static pod's container restarts (a status
    patch for the old mirror pod's UID goes out and waits in the proxy) and the mirror pod is deleted and created
    again by the admin; then released. kube-apiserver v1.20.2 answers that patch 422 (metadata.uid immutable):
    the kubelet takes the UID as replaced and never sends it again (before the fix: retried with back-off
    forever), and reports the status on the new mirror pod."""
    proxy = PausableProxy(int(kube.cp.server.rsplit(":", 1)[1]))
    try:
        with open(kube.kubeconfig) as f:
            cfg = json.load(f)
        cfg["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{proxy.port}"
        proxied = os.path.join(os.path.dirname(kube.kubeconfig), "proxied.kubeconfig")
        with open(proxied, "w") as f:
            json.dump(cfg, f)
        k = kube.kubelet(start=False)
        args = list(k.cluster_args)
        args[args.index("--kubeconfig") + 1] = proxied
        k.start(*args)
        write_static(k, "s")
        name = f"static-{kube.node}"
        m = kube.wait(lambda: (p := kube.pod(name, "kube-system")) and p["status"].get("phase") == "Running" and
                      cstatus(p, "c") and cstatus(p, "c").get("ready") and p, timeout=90, msg="the mirror pod Running")
        old_uid = m["metadata"]["uid"]
        c = runtime.running(name, "c")[0]

        proxy.flowing.clear()
        # a status change while held: the container stops and is started again (restartCount 1)
        runtime.crictl("stop", "--timeout", "0", c["id"])
        kube.wait(lambda: [x for x in runtime.running(name, "c") if x["id"] != c["id"]], timeout=60,
                  msg="the container started again")
        time.sleep(2)  # the kubelet has sent its status patch (for old_uid) into the proxy
        # the mirror pod replaced behind the kubelet's back (a new UID), before that patch lands
        kube.delete("pods", name, "kube-system", grace_seconds=0)
        new = {"apiVersion": "v1", "kind": "Pod", "spec": m["spec"],
               "metadata": {key: m["metadata"][key] for key in ("name", "namespace", "labels", "annotations",
                                                                 "ownerReferences")}}
        new_uid = kube.create("pods", new, namespace="kube-system")["metadata"]["uid"]
        assert new_uid != old_uid
        kube.expected_errors.add(("patch", 422))
        proxy.flowing.set()

        def old_patches():
            return [e for e in kube.audit() if e["verb"] == "patch" and e["objectRef"].get("subresource") == "status"
                    and e["objectRef"].get("name") == name and
                    ((e.get("requestObject") or {}).get("metadata") or {}).get("uid") == old_uid and
                    e["responseStatus"]["code"] >= 400]
        refused = kube.wait(old_patches, timeout=30, msg="the held status patch refused")
        assert refused[0]["responseStatus"]["code"] in (409, 422), refused[0]["responseStatus"]
        # the new mirror pod gets the status (restartCount 1), and the old UID is not tried again (retries would
        # come after 0.5, 1, 2, 4 and 8 s)
        kube.wait(lambda: (p := kube.pod(name, "kube-system")) and p["metadata"]["uid"] == new_uid and
                  cstatus(p, "c") and cstatus(p, "c")["restartCount"] >= 1, timeout=30,
                  msg="the status on the new mirror pod")
        time.sleep(10)
        assert len(old_patches()) == 1, [e["responseStatus"] for e in old_patches()]
        assert "Failed to update status for pod" not in k.log()
    finally:
        proxy.close()


# ---------------------------------------------------------------- webhook auth of the kubelet API


def service_account_token(kube, name, rules=None):
    """A token of a new service account (TokenRequest); rules: a ClusterRole's rules bound to it."""
    kube.create("serviceaccounts", {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}})
    if rules is not None:
        role = f"{kube.ns}-{name}"
        kube.admin.create("clusterroles", {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                                           "metadata": {"name": role}, "rules": rules})
        kube.admin.create("clusterrolebindings", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": role},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": kube.ns}]})
    tr = kube.admin.call("POST", f"/api/v1/namespaces/{kube.ns}/serviceaccounts/{name}/token",
                         {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}})
    return tr["status"]["token"]


def test_webhook_authn_authz(kube):
    k = kube.kubelet("--authorization-mode", "Webhook")
    wait_ready(kube)
    alice_tok = service_account_token(kube, "alice", [
        {"apiGroups": [""], "resources": ["nodes/proxy", "nodes/stats", "nodes/log", "nodes/metrics"],
         "verbs": ["get", "create"]}])
    bob_tok = service_account_token(kube, "bob", [
        {"apiGroups": [""], "resources": ["nodes/proxy"], "verbs": ["get"]}])
    carol_tok = service_account_token(kube, "carol")  # authenticated, no RBAC at all
    alice_user = f"system:serviceaccount:{kube.ns}:alice"
    bob_user = f"system:serviceaccount:{kube.ns}:bob"
    wait_for(lambda: Client(k.healthz_port, tls=False).get("/healthz")[0] == 200, msg="healthz")
    alice, bob = Client(k.port, token=alice_tok), Client(k.port, token=bob_tok)
    carol, nobody = Client(k.port, token=carol_tok), Client(k.port, token="not-a-token")
    # RBAC is evaluated by the apiserver: wait until its authorizer has the new bindings (the kubelet caches a
    # denial for 30 s)
    for user, sub, allowed in ((alice_user, "proxy", True), (alice_user, "stats", True), (bob_user, "proxy", True)):
        kube.wait(lambda: kube.admin.create("subjectaccessreviews", {
            "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": {"user": user, "resourceAttributes": {"verb": "get", "resource": "nodes", "subresource": sub,
                                                          "name": kube.node}}})["status"].get("allowed") == allowed,
                  30, msg=f"{user} allowed nodes/{sub}")
    assert alice.get("/pods")[0] == 200
    assert alice.get("/stats/summary")[0] == 200
    assert nobody.get("/pods")[0] == 401
    assert bob.get("/pods")[0] == 200
    st, body, _ = bob.get("/stats/summary")
    assert st == 403 and body == (f"Forbidden (user={bob_user}, verb=get, resource=nodes, "
                                  "subresource(s)=[stats])\n"), body
    st, body, _ = carol.get("/pods")
    assert st == 403 and body == (f"Forbidden (user=system:serviceaccount:{kube.ns}:carol, verb=get, "
                                  "resource=nodes, subresource(s)=[pods proxy])\n"), body
    # what the kubelet asked: TokenReviews and SubjectAccessReviews, as the node, all answered
    reviews = kube.audit()
    trs = [e for e in reviews if e["objectRef"].get("resource") == "tokenreviews"]
    sars = [e for e in reviews if e["objectRef"].get("resource") == "subjectaccessreviews"]
    assert trs and all(e["responseStatus"]["code"] == 201 for e in trs)
    assert any(e["requestObject"]["spec"]["user"] == alice_user and
               e["requestObject"]["spec"]["resourceAttributes"] ==
               {"verb": "get", "version": "v1", "resource": "nodes", "subresource": "proxy", "name": kube.node}
               for e in sars), [e["requestObject"]["spec"] for e in sars]
    assert all(f"system:serviceaccounts:{kube.ns}" in e["requestObject"]["spec"]["groups"]
               for e in sars if e["requestObject"]["spec"]["user"] == alice_user)
    # cached: the same requests again make no new reviews
    n = len(trs) + len(sars)
    assert alice.get("/pods")[0] == 200 and nobody.get("/pods")[0] == 401 and bob.get("/stats/summary")[0] == 403
    time.sleep(1)
    assert len([e for e in kube.audit() if e["objectRef"].get("resource") in ("tokenreviews",
                                                                              "subjectaccessreviews")]) == n
    # the tokens never show in the kubelet's log
    log = k.log()
    assert alice_tok not in log and bob_tok not in log and carol_tok not in log


ZPAGE_WARNING = ("Warning: This endpoint is not meant to be machine parseable, has no formatting compatibility "
                 "guarantees and is for debugging purposes only.")


def test_fine_grained_authz_and_zpages(kube):
    """Issue 32 item 4: KubeletFineGrainedAuthz (GA in v1.36) as upstream v1.37 asks it, against the real
    apiserver's RBAC: /pods, /runningpods, /healthz and /configz ask their own subresource first, then
    nodes/proxy; /statusz asks nodes/statusz and /flagz nodes/configz, with no fallback; a refusal names every
    subresource tried. /statusz and /flagz as the zpages of k8s.io/apiserver serve them."""
    k = kube.kubelet("--authorization-mode", "Webhook", "--max-pods", "50")
    wait_ready(kube)
    toks = {name: service_account_token(kube, name, [{"apiGroups": [""], "resources": res, "verbs": ["get"]}])
            for name, res in (("dave", ["nodes/pods"]), ("erin", ["nodes/proxy"]),
                              ("frank", ["nodes/statusz", "nodes/configz"]))}
    user = {name: f"system:serviceaccount:{kube.ns}:{name}" for name in toks}
    for name, sub in (("dave", "pods"), ("erin", "proxy"), ("frank", "statusz"), ("frank", "configz")):
        kube.wait(lambda: kube.admin.create("subjectaccessreviews", {
            "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": {"user": user[name], "resourceAttributes": {"verb": "get", "resource": "nodes",
                                                                "subresource": sub, "name": kube.node}}}
        )["status"].get("allowed"), 30, msg=f"{name} allowed nodes/{sub}")
    dave, erin, frank = (Client(k.port, token=toks[n]) for n in ("dave", "erin", "frank"))

    def forbidden(client, name, path, subs):
        st, body, _ = client.get(path)
        assert st == 403 and body == (f"Forbidden (user={user[name]}, verb=get, resource=nodes, "
                                      f"subresource(s)=[{subs}])\n"), (path, st, body)

    # nodes/pods only: the pod lists, nothing else
    assert dave.get("/pods")[0] == 200
    assert dave.get("/runningpods/")[0] == 200
    forbidden(dave, "dave", "/configz", "configz proxy")
    forbidden(dave, "dave", "/healthz", "healthz proxy")
    forbidden(dave, "dave", "/spec/", "proxy")
    forbidden(dave, "dave", "/statusz", "statusz")
    # nodes/proxy: everything that falls back to it, not the zpages
    for path in ("/pods", "/runningpods/", "/configz", "/healthz"):
        assert erin.get(path)[0] == 200, path
    forbidden(erin, "erin", "/statusz", "statusz")
    forbidden(erin, "erin", "/flagz", "configz")
    # nodes/statusz and nodes/configz: the zpages and /configz
    assert frank.get("/configz")[0] == 200
    forbidden(frank, "frank", "/pods", "pods proxy")

    # the reviews asked, in upstream's order: the fine-grained subresource, then proxy only when it was denied
    sars = [e["requestObject"]["spec"] for e in kube.audit()
            if e["objectRef"].get("resource") == "subjectaccessreviews" and e["verb"] == "create" and
            e["requestObject"]["spec"]["user"] != "admin"]
    asked = {(s["user"], s["resourceAttributes"]["subresource"]) for s in sars}
    assert (user["dave"], "pods") in asked and (user["dave"], "proxy") in asked  # proxy: /configz, /healthz, /spec
    assert (user["erin"], "pods") in asked and (user["erin"], "proxy") in asked
    assert (user["frank"], "configz") in asked and (user["frank"], "pods") in asked
    assert (user["erin"], "configz") in asked and (user["erin"], "healthz") in asked
    assert all(s["resourceAttributes"]["name"] == kube.node and s["resourceAttributes"]["resource"] == "nodes"
               for s in sars if s["user"] in user.values())

    # /statusz: the text page by default (a random delimiter after each name, as upstream)
    st, body, h = frank.get("/statusz")
    assert st == 200 and h["Content-Type"] == "text/plain; charset=utf-8", (st, h)
    m = re.fullmatch(r"\nkubelet statusz\n" + re.escape(ZPAGE_WARNING) + r"\n\n"
                     r"Started(:|: |=| ) [A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \S+ \d{4}\n"
                     r"Up\1 \d+ hr \d\d min \d\d sec\n"
                     r"Go version\1 N/A \(ckubelet .*\)\n"
                     r"Binary version\1 1\.37\.2\n"
                     r"Emulation version\1 1\.37\n"
                     r"Paths\1 ((?:/\S+ )*/\S+)\n", body)
    assert m, body
    paths = m.group(2).split()
    assert paths == sorted(paths) and {"/configz", "/flagz", "/healthz", "/pods", "/stats"} <= set(paths), paths
    assert "/statusz" not in paths
    # structured: only with the kind asked for
    beta = "application/json;as=Statusz;g=config.k8s.io;v=v1beta1"
    st, body, h = frank.get("/statusz", headers={"Accept": beta})
    assert st == 200 and h["Content-Type"] == "application/json" and "Warning" not in h, (st, h, body)
    j = json.loads(body)
    assert (j["kind"], j["apiVersion"], j["metadata"]) == ("Statusz", "config.k8s.io/v1beta1", {"name": "kubelet"})
    assert (j["binaryVersion"], j["emulationVersion"]) == ("1.37.2", "1.37") and j["paths"] == paths, j
    started = datetime.datetime.strptime(j["startTime"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)
    assert abs((datetime.datetime.now(datetime.timezone.utc) - started).total_seconds() - j["uptimeSeconds"]) <= 2
    assert 0 <= j["uptimeSeconds"] < 600
    st, body, h = frank.get("/statusz", headers={"Accept": beta.replace("v1beta1", "v1alpha1")})
    assert st == 200 and json.loads(body)["apiVersion"] == "config.k8s.io/v1alpha1"
    assert h["Warning"] == '299 - "This version of the statusz endpoint is deprecated. Please use a newer version."'
    st, body, h = frank.get("/statusz", headers={"Accept": beta.replace("json", "yaml")})
    assert st == 200 and h["Content-Type"] == "application/yaml" and "kind: \"Statusz\"\n" in body, body
    st, body, h = frank.get("/statusz", headers={"Accept": "application/json"})
    assert st == 406 and json.loads(body)["reason"] == "NotAcceptable", (st, body)
    assert json.loads(body)["message"] == ("only the following media types are accepted: application/json, "
                                           "application/yaml, text/plain")

    # /flagz: the flags given, sorted
    st, body, h = frank.get("/flagz")
    assert st == 200 and h["Content-Type"] == "text/plain; charset=utf-8"
    assert body.startswith("\nkubelet flagz\n" + ZPAGE_WARNING + "\n"), body
    lines = body.split("\n")[3:-1]
    m = re.fullmatch(r"authorization-mode(:|: |=| )Webhook", [x for x in lines if x.startswith("authorization-")][0])
    assert m and f"max-pods{m.group(1)}50" in lines, lines
    names = [x.split(m.group(1), 1)[0] for x in lines]
    assert names == sorted(names) and len(set(names)) == len(names), lines
    st, body, h = frank.get("/flagz", headers={"Accept": "application/json;as=Flagz;g=config.k8s.io;v=v1beta1"})
    j = json.loads(body)
    assert st == 200 and (j["kind"], j["apiVersion"]) == ("Flagz", "config.k8s.io/v1beta1")
    assert j["flags"]["authorization-mode"] == "Webhook" and j["flags"]["max-pods"] == "50", j
    assert "kubeconfig" in j["flags"], j


def test_node_labels_outside_the_kubelet_namespaces_refused(kube):
    # NodeRestriction lets a node set only kubernetes.io / k8s.io labels of the kubelet's own set and namespaces:
    # like upstream, such --node-labels stop the kubelet at start instead of failing its registration for ever
    k = kube.kubelet("--node-labels", "node-role.kubernetes.io/worker=,tier=edge,node.kubernetes.io/pool=a")
    rc = k.proc.wait(30)
    assert rc != 0
    assert ("unknown 'kubernetes.io' or 'k8s.io' labels specified with --node-labels: [node-role.kubernetes.io/worker]"
            in k.log()), k.log()[-2000:]
    assert kube.node_obj() is None
    # the allowed ones register
    k2 = kube.kubelet("--node-labels", "tier=edge,node.kubernetes.io/pool=a,kubelet.kubernetes.io/x=y,"
                      "topology.kubernetes.io/zone=z1,example.k8s.io.com/ok=1")
    node = wait_ready(kube)
    labels = node["metadata"]["labels"]
    assert labels["node.kubernetes.io/pool"] == "a" and labels["topology.kubernetes.io/zone"] == "z1"
    assert labels["kubelet.kubernetes.io/x"] == "y" and labels["tier"] == "edge"
    assert k2.alive()


def test_completed_init_containers_gone_from_the_runtime_stay_terminated(kube, runtime):
    # after a node restart (or a runtime cleanup) the completed init containers are gone while the app runs:
    # their status stays terminated, as upstream keeps it, and no status the apiserver's validation refuses
    # ("may not be transitioned to non-terminated state") is sent (the kube fixture fails the test on a 422)
    k = kube.kubelet()
    for name, policy in (("onf", "OnFailure"), ("nev", "Never")):
        pod(kube, name, [container("app", SLEEP)], restart_policy=policy,
            extra_spec={"initContainers": [container("init", ["true"])]})
    for name in ("onf", "nev"):
        kube.wait(lambda: (c := cstatus(kube.pod(name), "app")) and "running" in c["state"], 90,
                  msg=f"{name} running")
    k.kill9()
    for c in runtime.containers():
        if c["metadata"]["name"] == "init":
            runtime.crictl("rm", c["id"])
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")  # as audit events
    k.start()
    for name in ("onf", "nev"):
        # the status is written again after the restart (ready again), and the init container is as it was
        kube.wait(lambda: [e for e in kube.audit() if e["verb"] == "patch" and e["objectRef"].get("name") == name
                           and e["requestReceivedTimestamp"] > started and e["responseStatus"]["code"] == 200],
                  60, msg=f"a status of {name} after the restart")
        p = kube.pod(name)
        init = p["status"]["initContainerStatuses"][0]
        assert init["state"]["terminated"]["reason"] == "Completed", init
        assert "running" in cstatus(p, "app")["state"] and p["status"]["phase"] == "Running"
    assert not runtime.containers_of("onf", "init") and not runtime.containers_of("nev", "init")
    assert "aborted" not in k.log()
