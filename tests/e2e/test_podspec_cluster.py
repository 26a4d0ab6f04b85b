"""Pod spec fields of today's kubelet that need the API server (issue 18), against the real control plane
(kube-apiserver v1.20.2, controlplane.py) on containerd: readiness gates with their conditions patched by a
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
