# Container lifecycle hooks: postStart and preStop with exec, httpGet and sleep handlers (upstream
# pkg/kubelet/lifecycle/handlers.go, kuberuntime_container.go startContainer / killContainer).
import json
import os
import time

from conftest import BUSYBOX, NODE, wait_for

# keeps running until TERM, which it records in /out/order
TRAP = "trap 'echo TERM >> /out/order; exit 0' TERM; while true; do sleep 0.1; done"


def manifest(name, containers, out, grace=None, restart_policy=None):
    spec = {"containers": [], "volumes": [{"name": "out", "hostPath": {"path": out, "type": "DirectoryOrCreate"}}]}
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    if restart_policy:
        spec["restartPolicy"] = restart_policy
    for c in containers:
        c = dict(c)
        c.setdefault("image", BUSYBOX)
        c.setdefault("volumeMounts", []).append({"name": "out", "mountPath": "/out"})
        spec["containers"].append(c)
    return json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec})


def running(runtime, pod, name="c"):
    cs = runtime.containers_of(pod, name, state="CONTAINER_RUNNING")
    return cs[0] if len(cs) == 1 else None


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except FileNotFoundError:
        return ""


def gone(runtime, pod):
    return not runtime.containers_of(pod) or all(
        runtime.inspect(c["id"])["state"] == "CONTAINER_EXITED" for c in runtime.containers_of(pod))


def test_post_start_exec_seen_by_the_container(kubelet, runtime, tmp_path):
    out = str(tmp_path / "ps")
    # the main process waits for the file the hook writes, then reports it
    kubelet.write("ps.json", manifest("ps", [{
        "name": "c",
        "command": ["sh", "-c", "while [ ! -f /tmp/hooked ]; do sleep 0.1; done; cat /tmp/hooked > /out/seen; " + TRAP],
        "lifecycle": {"postStart": {"exec": {"command": ["sh", "-c", "echo from-post-start > /tmp/hooked"]}}},
    }], out))
    wait_for(lambda: read(os.path.join(out, "seen")) == "from-post-start\n", 30, 0.2, "the container saw the hook's file")
    c = running(runtime, f"ps-{NODE}")
    assert c and c["annotations"]["io.kubernetes.container.restartCount"] == "0"
    assert "FailedPostStartHook" not in kubelet.log()


def test_failed_post_start_kills_and_restarts(kubelet, runtime, tmp_path):
    out = str(tmp_path / "fail")
    kubelet.write("fail.json", manifest("fail", [{
        "name": "c",
        "command": ["sh", "-c", "echo started >> /out/starts; " + TRAP],
        "lifecycle": {"postStart": {"exec": {"command": ["sh", "-c", "echo boom >&2; exit 3"]}}},
    }], out, grace=5))
    pod = f"fail-{NODE}"
    m = kubelet.wait_log(r'reason="FailedPostStartHook" message="([^\n]*)"', 30)
    msg = m.group(1)
    assert msg.startswith(r'Exec lifecycle hook ([sh -c echo boom >&2; exit 3]) for Container \"c\" in Pod '
                          r'\"fail-testnode_default('), msg
    assert r"failed - error: command 'sh -c echo boom >&2; exit 3' exited with 3: boom" in msg, msg
    # the container is killed with that reason (its TERM trap runs) and started again per restartPolicy
    kubelet.wait_log(r'containerName="c" containerID="[0-9a-f]+" gracePeriod=5 reason="FailedPostStartHook"', 10)
    kubelet.wait_log(r'reason="Killing" message="FailedPostStartHook"', 10)
    wait_for(lambda: "TERM" in read(os.path.join(out, "order")), 15, 0.2, "the killed container got TERM")
    wait_for(lambda: any(int(c["annotations"]["io.kubernetes.container.restartCount"]) >= 1
                         for c in runtime.containers_of(pod, "c")), 40, 0.5, "the container restarted")
    # the new instance exists once created; its command writes the second line once it runs
    wait_for(lambda: read(os.path.join(out, "starts")).count("started") >= 2, 20, 0.2, "the second start")


def test_pre_stop_exec_runs_before_sigterm(kubelet, runtime, tmp_path):
    out = str(tmp_path / "stop")
    kubelet.write("stop.json", manifest("stop", [{
        "name": "c", "command": ["sh", "-c", TRAP],
        "lifecycle": {"preStop": {"exec": {"command": ["sh", "-c", "sleep 1; echo preStop >> /out/order"]}}},
    }], out, grace=20))
    pod = f"stop-{NODE}"
    wait_for(lambda: running(runtime, pod), 30, msg="running")
    kubelet.remove("stop.json")
    wait_for(lambda: gone(runtime, pod), 30, 0.2, "pod stopped")
    assert read(os.path.join(out, "order")) == "preStop\nTERM\n"
    assert "FailedPreStopHook" not in kubelet.log()


def test_pre_stop_longer_than_grace_is_cut_short(kubelet, runtime, tmp_path):
    out = str(tmp_path / "long")
    kubelet.write("long.json", manifest("long", [{
        "name": "c", "command": ["sh", "-c", TRAP],
        "lifecycle": {"preStop": {"exec": {"command": ["sh", "-c", "echo preStop >> /out/order; sleep 60"]}}},
    }], out, grace=3))
    pod = f"long-{NODE}"
    wait_for(lambda: running(runtime, pod), 30, msg="running")
    t0 = time.monotonic()
    kubelet.remove("long.json")
    wait_for(lambda: gone(runtime, pod), 20, 0.2, "pod stopped")
    took = time.monotonic() - t0
    # the hook gets the grace period (3 s), then StopContainer the minimum 2 s (the TERM trap exits at once)
    assert 2.5 <= took <= 3 + 2 + 4, took
    assert read(os.path.join(out, "order")) == "preStop\nTERM\n"
    kubelet.wait_log(r'PreStop hook not completed in grace period: pod="default/long-testnode"', 5)


HTTPD = ("mkdir -p /www/cgi-bin && printf '#!/bin/sh\\necho Content-Type: text/plain\\necho\\necho ok\\n"
         "echo \"$QUERY_STRING\" >> /out/order\\n' > /www/cgi-bin/hook && chmod +x /www/cgi-bin/hook && "
         "httpd -p 8080 -h /www && touch /out/up; " + TRAP)


def test_http_get_hooks(kubelet, runtime, tmp_path):
    out = str(tmp_path / "http")
    kubelet.write("http.json", manifest("http", [{
        "name": "c", "command": ["sh", "-c", HTTPD], "ports": [{"name": "web", "containerPort": 8080}],
        "lifecycle": {"preStop": {"httpGet": {"path": "/cgi-bin/hook?preStop", "port": "web",
                                              "httpHeaders": [{"name": "X-Hook", "value": "1"}]}}},
    }], out, grace=20))
    pod = f"http-{NODE}"
    wait_for(lambda: running(runtime, pod) and os.path.exists(os.path.join(out, "up")), 30, 0.2, "httpd up")
    kubelet.remove("http.json")
    wait_for(lambda: gone(runtime, pod), 30, 0.2, "pod stopped")
    # the CGI ran (through the pod IP and the named port) before the container got TERM
    assert read(os.path.join(out, "order")) == "preStop\nTERM\n"


def test_http_get_post_start_failure(kubelet, runtime, tmp_path):
    out = str(tmp_path / "nohttp")
    kubelet.write("nohttp.json", manifest("nohttp", [{
        "name": "c", "command": ["sh", "-c", TRAP],
        "lifecycle": {"postStart": {"httpGet": {"path": "/x", "port": 8081}}},
    }], out, grace=2, restart_policy="Never"))
    m = kubelet.wait_log(r'reason="FailedPostStartHook" message="([^\n]*)"', 30)
    assert m.group(1).startswith(r'HTTP lifecycle hook (/x) for Container \"c\" in Pod \"nohttp-testnode_default('), m.group(1)
    assert "failed - error: Get" in m.group(1)
    # restartPolicy Never: killed, not restarted
    wait_for(lambda: gone(runtime, f"nohttp-{NODE}"), 20, 0.2, "container stopped")
    assert len(runtime.containers_of(f"nohttp-{NODE}", "c")) == 1


def test_sleep_pre_stop_delays_the_stop(kubelet, runtime, tmp_path):
    out = str(tmp_path / "sleep")
    kubelet.write("sleep.json", manifest("sleep", [{
        "name": "c", "command": ["sh", "-c", TRAP],
        "lifecycle": {"preStop": {"sleep": {"seconds": 3}}},
    }], out, grace=10))
    pod = f"sleep-{NODE}"
    wait_for(lambda: running(runtime, pod), 30, msg="running")
    t0 = time.monotonic()
    kubelet.remove("sleep.json")
    wait_for(lambda: "TERM" in read(os.path.join(out, "order")), 20, 0.1, "TERM")
    took = time.monotonic() - t0
    assert 3.0 <= took < 10, took
    wait_for(lambda: gone(runtime, pod), 20, 0.2, "pod stopped")


def test_liveness_kill_runs_pre_stop(kubelet, runtime, tmp_path):
    out = str(tmp_path / "live")
    # healthy until /tmp/sick exists; preStop from the desired spec (the pod stays configured)
    kubelet.write("live.json", manifest("live", [{
        "name": "c", "command": ["sh", "-c", "echo start >> /out/order; (sleep 1; touch /tmp/sick) & " + TRAP],
        "livenessProbe": {"exec": {"command": ["sh", "-c", "[ ! -f /tmp/sick ]"]}, "periodSeconds": 1,
                          "failureThreshold": 1},
        "lifecycle": {"preStop": {"exec": {"command": ["sh", "-c", "echo preStop >> /out/order"]}}},
    }], out, grace=10))
    pod = f"live-{NODE}"
    wait_for(lambda: any(int(c["annotations"]["io.kubernetes.container.restartCount"]) >= 1
                         for c in runtime.containers_of(pod, "c")), 40, 0.5, "restarted after the liveness kill")
    # the new instance exists once created; it writes when it has started
    wait_for(lambda: read(os.path.join(out, "order")).count("start\n") >= 2, 15, 0.2, "the new instance started")
    assert read(os.path.join(out, "order")).startswith("start\npreStop\nTERM\nstart\n")


def test_kill9_during_pre_stop_converges(kubelet, runtime, tmp_path):
    out = str(tmp_path / "k9")
    kubelet.write("k9.json", manifest("k9", [{
        "name": "c", "command": ["sh", "-c", TRAP],
        "lifecycle": {"preStop": {"exec": {"command": ["sh", "-c", "echo preStop >> /out/order; sleep 4"]}}},
    }], out, grace=20))
    pod = f"k9-{NODE}"
    wait_for(lambda: running(runtime, pod), 30, msg="running")
    kubelet.remove("k9.json")
    wait_for(lambda: "preStop" in read(os.path.join(out, "order")), 20, 0.1, "preStop started")
    kubelet.kill9()
    kubelet.start()
    # the new kubelet runs the preStop again (from the container's annotation: the pod is gone from the
    # config), then stops the container
    wait_for(lambda: gone(runtime, pod), 40, 0.2, "pod stopped after the restart")
    order = read(os.path.join(out, "order"))
    assert order.endswith("preStop\nTERM\n") and order.count("preStop") == 2, order
