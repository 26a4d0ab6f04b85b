"""Pod spec fields of today's kubelet that need the API server (issue 18), against the real control plane
(kube-apiserver v1.37.2, controlplane.py) on containerd: readiness gates with their conditions patched by a
client, a lowered activeDeadlineSeconds, service environment variables, ephemeral containers (kubectl debug),
RuntimeClass and pod overhead, and a mirror pod outliving its static pod's termination. Every test has a node and
a namespace of its own; a request of the kubelet that the apiserver refuses fails the test (the kube fixture)."""
import json
import os
import time

from apiobjects import SLEEP, api_pod, cond, container, cstatus, running


def pod(kube, name, containers, **kw):
    return kube.create("pods", api_pod(name, containers, kube.node, **kw))


# ---------------------------------------------------------------- readiness gates


def test_readiness_gates_follow_client_conditions(kube):
    kube.kubelet()
    pod(kube, "gated", [container("app", SLEEP)], grace=1,
        extra_spec={"readinessGates": [{"conditionType": "example.com/lb"}]})
    p = kube.wait(lambda: (p := running(kube, "gated")) and cond(p, "ContainersReady")["status"] == "True" and p,
                  60, msg="the containers ready")
    ready = cond(p, "Ready")
    assert ready["status"] == "False" and ready["reason"] == "ReadinessGatesNotReady"
    assert ready["message"] == 'corresponding condition of pod readiness gate "example.com/lb" does not exist.'

    # a load-balancer controller sets its condition (a strategic merge patch of the status, merged by type)
    def set_lb(status):
        kube.patch("pods", "gated", {"status": {"conditions": [{"type": "example.com/lb", "status": status}]}},
                   sub="status", kind="strategic-merge")
    set_lb("False")
    p = kube.wait(lambda: (p := kube.pod("gated")) and "is not" in (cond(p, "Ready").get("message") or "") and p,
                  30, msg="Ready False for the gate's False")
    assert cond(p, "Ready")["message"] == 'the status of pod readiness gate "example.com/lb" is not "True", but False'
    set_lb("True")
    p = kube.wait(lambda: (p := kube.pod("gated")) and cond(p, "Ready")["status"] == "True" and p, 30,
                  msg="Ready once the gate is True")
    # the kubelet's later status updates keep the client's condition
    assert cond(p, "example.com/lb")["status"] == "True"
    [k] = kube.kubelets.made
    k.restart()
    time.sleep(3)
    kube.wait(lambda: (p := kube.pod("gated")) and cond(p, "Ready")["status"] == "True" and
              cond(p, "example.com/lb")["status"] == "True" and p, 30, msg="still Ready after a kubelet restart")
    set_lb("False")
    kube.wait(lambda: (p := kube.pod("gated")) and cond(p, "Ready")["status"] == "False" and
              cond(p, "ContainersReady")["status"] == "True" and p, 30, msg="not Ready again")


# ---------------------------------------------------------------- activeDeadlineSeconds lowered


def test_lowered_active_deadline_counts_at_once(kube):
    kube.kubelet()
    pod(kube, "deadline", [container("app", SLEEP)], grace=1, extra_spec={"activeDeadlineSeconds": 3600})
    kube.wait(lambda: running(kube, "deadline"), 60, msg="the pod running")
    p = kube.pod("deadline")
    # the pod has been active for more than 2 s already: a deadline of 2 s has passed, the pod fails at once
    time.sleep(2)
    p["spec"]["activeDeadlineSeconds"] = 2
    kube.admin.update("pods", p)
    t0 = time.monotonic()
    p = kube.wait(lambda: (p := kube.pod("deadline")) and p["status"]["phase"] == "Failed" and p, 30,
                  msg="the pod Failed")
    assert time.monotonic() - t0 < 15
    assert p["status"]["reason"] == "DeadlineExceeded"
    assert p["status"]["message"] == "Pod was active on the node longer than the specified deadline"
    kube.wait(lambda: "terminated" in cstatus(kube.pod("deadline"), "app")["state"], 30, msg="app terminated")
    assert kube.events(involved="deadline", reason="DeadlineExceeded")


# ---------------------------------------------------------------- service environment variables


def service(name, ports, cluster_ip=None):
    spec = {"ports": ports, "selector": {"app": name}}
    if cluster_ip:
        spec["clusterIP"] = cluster_ip
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec}


def container_env(runtime, node, pod_name, cname="app"):
    """The environment of the running container, read in it."""
    for c in runtime.containers():
        l = c["labels"]
        if l.get("io.kubernetes.pod.name") == pod_name and l.get("io.kubernetes.container.name") == cname and \
                c["state"] == "CONTAINER_RUNNING":
            out = runtime.crictl("exec", c["id"], "--", "env").stdout
            return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    return None


def test_service_environment_variables(kube, runtime):
    web = kube.create("services", service("my-web", [{"name": "http", "port": 80, "protocol": "TCP"},
                                                     {"name": "dns", "port": 53, "protocol": "UDP"}]))
    kube.create("services", service("headless", [{"port": 9}], cluster_ip="None"))
    master = kube.admin.get("services", "kubernetes", "default")
    kube.kubelet()
    pod(kube, "links", [container("app", SLEEP, env=[{"name": "URL", "value": "http://$(MY_WEB_SERVICE_HOST)/x"}])],
        grace=1)
    pod(kube, "nolinks", [container("app", SLEEP)], grace=1, extra_spec={"enableServiceLinks": False})
    kube.wait(lambda: running(kube, "links") and running(kube, "nolinks"), 60, msg="both pods running")

    ip, kip = web["spec"]["clusterIP"], master["spec"]["clusterIP"]
    env = container_env(runtime, kube.node, "links")
    assert env["KUBERNETES_SERVICE_HOST"] == kip and env["KUBERNETES_SERVICE_PORT"] == "443"
    assert env["KUBERNETES_SERVICE_PORT_HTTPS"] == "443"
    assert env["KUBERNETES_PORT"] == f"tcp://{kip}:443"
    assert env["MY_WEB_SERVICE_HOST"] == ip and env["MY_WEB_SERVICE_PORT"] == "80"
    assert env["MY_WEB_SERVICE_PORT_HTTP"] == "80" and env["MY_WEB_SERVICE_PORT_DNS"] == "53"
    assert env["MY_WEB_PORT"] == f"tcp://{ip}:80"
    assert env["MY_WEB_PORT_53_UDP"] == f"udp://{ip}:53"
    assert env["MY_WEB_PORT_53_UDP_PROTO"] == "udp" and env["MY_WEB_PORT_53_UDP_PORT"] == "53"
    assert env["MY_WEB_PORT_53_UDP_ADDR"] == ip
    assert env["URL"] == f"http://{ip}/x"  # the container's own variables may refer to them
    assert not any(k.startswith("HEADLESS_") for k in env)

    env = container_env(runtime, kube.node, "nolinks")
    assert env["KUBERNETES_SERVICE_HOST"] == kip  # the master service whatever enableServiceLinks says
    assert not any(k.startswith("MY_WEB_") for k in env)

    # a service made later reaches only containers created after it, as upstream
    late = kube.create("services", service("late", [{"port": 8080}]))
    kube.wait(lambda: any(s["metadata"]["name"] == "late" for s in kube.list("services")), 10, msg="late listed")
    time.sleep(1)
    assert "LATE_SERVICE_HOST" not in container_env(runtime, kube.node, "links")
    [c] = [c for c in runtime.running(f"links") if c["metadata"]["name"] == "app"]
    runtime.crictl("stop", "--timeout", "1", c["id"])
    kube.wait(lambda: (e := container_env(runtime, kube.node, "links")) and "LATE_SERVICE_HOST" in e, 60,
              msg="the restarted container with the late service")
    assert container_env(runtime, kube.node, "links")["LATE_SERVICE_HOST"] == late["spec"]["clusterIP"]


# ---------------------------------------------------------------- RuntimeClass and pod overhead


def runtime_class(name, handler, overhead=None):
    rc = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": name}, "handler": handler}
    if overhead:
        rc["overhead"] = {"podFixed": overhead}
    return rc


def pod_cgroup_value(runtime, pod_name, v1_ctrl, v1_file, v2_file):
    """A value of the pod cgroup of a running pod (the parent of its container's cgroup): the cgroup v1 file of
    that controller, else the unified hierarchy's."""
    for c in runtime.running(pod_name):
        pid = runtime.container_pid(c["id"])
        with open(f"/proc/{pid}/cgroup") as f:
            paths = {}
            for line in f:
                _, ctrls, path = line.strip().split(":", 2)
                for ctrl in ctrls.split(","):
                    paths[ctrl] = path
        if v1_ctrl in paths and os.path.isdir(f"/sys/fs/cgroup/{v1_ctrl}"):
            fn = f"/sys/fs/cgroup/{v1_ctrl}" + os.path.dirname(paths[v1_ctrl]) + "/" + v1_file
        else:
            fn = "/sys/fs/cgroup" + os.path.dirname(paths[""]) + "/" + v2_file
        with open(fn) as f:
            return f.read().strip()
    return None


def test_runtime_class_handler_and_overhead(kube, runtime):
    suffix = kube.node[-6:]
    good, bad = f"runc-{suffix}", f"nope-{suffix}"
    kube.create("runtimeclasses", runtime_class(good, "runc", {"cpu": "100m", "memory": "32Mi"}))
    kube.create("runtimeclasses", runtime_class(bad, "nope"))
    try:
        k = kube.kubelet()
        pod(kube, "withrc", [container("app", SLEEP, resources={"limits": {"cpu": "200m", "memory": "64Mi"}})],
            grace=1, extra_spec={"runtimeClassName": good})
        pod(kube, "badrc", [container("app", SLEEP)], grace=1, extra_spec={"runtimeClassName": bad})
        p = kube.wait(lambda: running(kube, "withrc"), 60, msg="the pod with RuntimeClass runc running")
        # the RuntimeClass admission plugin copied the overhead; the pod cgroup is sized with it
        assert p["spec"]["overhead"] == {"cpu": "100m", "memory": "32Mi"}
        k.wait_log(r'Running pod with runtime handler: pod="[^"]*/withrc" runtimeHandler="runc"', 10)
        [sb] = runtime.pods_named("withrc", ready_only=True)
        assert runtime.json("inspectp", sb["id"])["status"].get("runtimeHandler") == "runc"
        mem = pod_cgroup_value(runtime, "withrc", "memory", "memory.limit_in_bytes", "memory.max")
        assert int(mem) == (64 + 32) * 1024 * 1024
        quota = pod_cgroup_value(runtime, "withrc", "cpu", "cpu.cfs_quota_us", "cpu.max")
        assert quota.split()[0] == "30000"  # (200m + 100m) of a 100 ms period
        # a handler containerd does not have: the sandbox fails with the runtime's words
        ev = kube.wait(lambda: kube.events(involved="badrc", reason="FailedCreatePodSandBox"), 60,
                       msg="FailedCreatePodSandBox for the unknown handler")
        assert ev[0]["message"].startswith("Failed to create pod sandbox: ") and "nope" in ev[0]["message"]
        assert not runtime.pods_named("badrc")
        # a static pod naming a RuntimeClass that does not exist (the apiserver's admission stops API pods, and
        # refuses its mirror pod)
        kube.expected_errors.add(("create", 403))
        k.write("static.yaml", json.dumps({"apiVersion": "v1", "kind": "Pod",
                                           "metadata": {"name": "static-rc", "namespace": kube.ns},
                                           "spec": {"runtimeClassName": f"missing-{suffix}",
                                                    "containers": [container("app", SLEEP)]}}))
        k.wait_log(r'Failed to create sandbox for pod: runtimeclasses.node.k8s.io "missing-[0-9a-f]+" not found', 60)
    finally:
        kube.admin.delete("runtimeclasses", good)
        kube.admin.delete("runtimeclasses", bad)


# ---------------------------------------------------------------- ephemeral containers (kubectl debug)


def test_ephemeral_containers_with_kubectl_debug(kube, runtime):
    from test_kubectl import Proc
    kube.kubelet()
    pod(kube, "target", [container("app", ["sh", "-c", "exec sleep 3600"])], grace=1)
    kube.wait(lambda: running(kube, "target"), 60, msg="the pod running")
    # kubectl debug adds an ephemeral container through the ephemeralcontainers subresource; with --target it
    # joins app's process namespace
    kube.kubectl("-n", kube.ns, "debug", "target", "--image", "docker.io/library/busybox:1.36", "--target", "app",
                 "-c", "dbg", "--", "sh", "-c", "ps -o pid,args; echo debug-ready; while true; do echo tick; sleep 0.3; done")
    p = kube.wait(lambda: (p := kube.pod("target")) and (c := next((c for c in p["status"].get(
        "ephemeralContainerStatuses", []) if c["name"] == "dbg"), None)) and "running" in c["state"] and p, 60,
        msg="the ephemeral container running")
    [st] = p["status"]["ephemeralContainerStatuses"]
    assert st["ready"] is False and st["restartCount"] == 0 and st["containerID"].startswith("containerd://")
    # it sees app's process (pid namespace of its target) and its logs and output reach kubectl
    out = kube.wait(lambda: (o := kube.kubectl("-n", kube.ns, "logs", "target", "-c", "dbg").stdout.decode())
                    and "debug-ready" in o and o, 30, msg="the ephemeral container's log")
    assert "sleep 3600" in out
    a = Proc(kube, "attach", "target", "-c", "dbg")
    try:
        a.read_until(rb"tick\n", 60)
    finally:
        a.stop()
    # the regular container is untouched; the ephemeral one is not restarted after it ends
    assert cstatus(kube.pod("target"), "app")["restartCount"] == 0
    [c] = [c for c in runtime.running("target") if c["metadata"]["name"] == "dbg"]
    runtime.crictl("stop", "--timeout", "1", c["id"])
    kube.wait(lambda: "terminated" in next(c for c in kube.pod("target")["status"]["ephemeralContainerStatuses"]
                                           if c["name"] == "dbg")["state"], 30, msg="dbg terminated")
    time.sleep(2)
    assert len([c for c in runtime.containers_of("target", "dbg")]) == 1


# ---------------------------------------------------------------- a mirror pod outlives its static pod's termination


def test_mirror_pod_outlives_static_pod_termination(kube, runtime):
    k = kube.kubelet()
    slow = ["sh", "-c", "trap 'sleep 5; exit 0' TERM; while true; do sleep 0.2; done"]
    k.write("slow.yaml", json.dumps({"apiVersion": "v1", "kind": "Pod",
                                     "metadata": {"name": "slow", "namespace": kube.ns},
                                     "spec": {"terminationGracePeriodSeconds": 30,
                                              "containers": [container("app", slow)]}}))
    name = f"slow-{kube.node}"
    mirror = kube.wait(lambda: (p := kube.pod(name)) and (c := cstatus(p, "app")) and "running" in c["state"] and p,
                       60, msg="the mirror pod showing the static pod running")
    uid = mirror["metadata"]["uid"]
    k.remove("slow.yaml")
    k.wait_log(r"SyncLoop REMOVE", 10)
    # while the container handles SIGTERM (5 s) the mirror pod stays, showing the pod as it is
    time.sleep(1.5)
    p = kube.pod(name)
    assert p and p["metadata"]["uid"] == uid and "deletionTimestamp" not in p["metadata"]
    assert p["status"]["phase"] == "Running" and "running" in cstatus(p, "app")["state"]
    assert runtime.running(name, "app")
    # deleted once the pod is gone from the runtime, not before
    kube.wait(lambda: not any(x["metadata"]["name"] == name for x in kube.list("pods")), 60,
              msg="the mirror pod deleted")
    # the API server can show it gone before the kubelet has read the DELETE's answer and logged it
    k.wait_log(r"Deleted mirror pod", 10)
    log = k.log()
    assert log.index("terminated and removed from the runtime") < log.index("Deleted mirror pod")
