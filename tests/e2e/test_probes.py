# Health probes on containerd: exec, httpGet, tcpSocket and grpc handlers passing and failing, named ports,
# IPv6 loopback, thresholds, initial delay, startup gating, liveness restarts with back-off, readiness
# flipping, probes that hang past their timeout.
import re
import socket
import textwrap
import threading
import time
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from conftest import NODE, wait_for

# busybox httpd serving /www; the script then runs CMD (default: sleep)
HTTPD = "mkdir -p /www && echo ok > /www/index.html && httpd -p {port} -h /www && "


def probe_pod(name, containers, restart_policy=None, host_network=False):
    """containers: list of (name, shell script, extra container YAML)"""
    out = ["apiVersion: v1", "kind: Pod", "metadata:", f"  name: {name}", "spec:"]
    if restart_policy:
        out.append(f"  restartPolicy: {restart_policy}")
    if host_network:
        out.append("  hostNetwork: true")
    out.append("  terminationGracePeriodSeconds: 2")
    out.append("  containers:")
    for cname, script, extra in containers:
        out += [f"  - name: {cname}", "    image: busybox:1.36", f"    command: [sh, -c, {script!r}]"]
        out += ["    " + l for l in textwrap.dedent(extra).strip().splitlines()]
    return "\n".join(out) + "\n"


def ready_events(kubelet, pod):
    """The pod's Ready condition transitions, in order, from the log."""
    rx = re.compile(r'Pod condition changed: pod="default/%s" podUID="[^"]*" type="Ready" status="(\w+)"' %
                    re.escape(pod))
    return rx.findall(kubelet.log())


def wait_ready(kubelet, pod, seq, timeout=30):
    wait_for(lambda: ready_events(kubelet, pod)[:len(seq)] == seq, timeout, interval=0.2,
             msg=f"{pod}: Ready transitions {seq} (saw {ready_events(kubelet, pod)})")


def restart_count(c):
    return int(c["annotations"]["io.kubernetes.container.restartCount"])


def test_exec_liveness_restarts_with_backoff(kubelet, runtime):
    # healthy for 2 s, then the liveness probe fails twice in a row: killed and restarted; the next kill
    # is followed by CrashLoopBackOff
    kubelet.write("live.yaml", probe_pod("live", [(
        "c", "touch /tmp/ok; (sleep 2; rm /tmp/ok) & trap 'exit 0' TERM; while true; do sleep 0.2; done", """
        livenessProbe:
          exec:
            command: [test, -f, /tmp/ok]
          periodSeconds: 1
          failureThreshold: 2
        """)]))
    pod = f"live-{NODE}"
    kubelet.wait_log(r'reason="LivenessProbe" message="Container c failed liveness probe, will be restarted"', 30)
    wait_for(lambda: any(restart_count(c) >= 1 and c["state"] == "CONTAINER_RUNNING"
                         for c in runtime.containers_of(pod, "c")), 20, interval=0.2, msg="restarted")
    # the first restart is immediate; the second kill backs off
    kubelet.wait_log(r'Back-off 10s restarting failed container=c pod=default/' + pod, 30)
    assert re.search(r'Probe failed: probeType="Liveness" pod="default/%s" containerName="c" '
                     r'probeResult="failure"' % pod, kubelet.log())


def test_http_readiness_flips_and_named_port(kubelet, runtime):
    # readiness on /ready.html through the named port "web": present 3 s, absent 3 s, present again
    script = HTTPD.format(port=8080) + ("trap 'exit 0' TERM; while true; do echo y > /www/ready.html; sleep 3; "
                                        "rm /www/ready.html; sleep 3; done")
    kubelet.write("flip.yaml", probe_pod("flip", [("web", script, """
        ports:
        - name: web
          containerPort: 8080
        readinessProbe:
          httpGet:
            path: /ready.html
            port: web
            httpHeaders:
            - name: X-Probe
              value: ckubelet
          periodSeconds: 1
        """)]))
    pod = f"flip-{NODE}"
    wait_ready(kubelet, pod, ["False", "True", "False", "True"], 30)
    assert re.search(r'probeType="Readiness" pod="default/%s" containerName="web" probeResult="failure" '
                     r'output="HTTP probe failed with statuscode: 404"' % pod, kubelet.log())
    # readiness never restarts anything
    assert all(restart_count(c) == 0 for c in runtime.containers_of(pod, "web"))


def test_tcp_probes_and_thresholds(kubelet, runtime):
    # tcpSocket: one port open (ready), one closed (never ready; failureThreshold 1 vs successThreshold 3)
    kubelet.write("tcp.yaml", probe_pod("tcp", [
        ("open", HTTPD.format(port=8080) + "trap 'exit 0' TERM; while true; do sleep 0.2; done", """
        readinessProbe:
          tcpSocket:
            port: 8080
          periodSeconds: 1
          successThreshold: 3
        """),
        ("closed", "trap 'exit 0' TERM; while true; do sleep 0.2; done", """
        readinessProbe:
          tcpSocket:
            port: 8081
          periodSeconds: 1
        """)]))
    pod = f"tcp-{NODE}"
    rx_open = re.compile(r'Probe result changed: probeType="Readiness" pod="default/%s" containerName="open" '
                         r'containerID="\w+" result="success"' % pod)
    m = kubelet.wait_log(rx_open.pattern, 30)
    # successThreshold 3: three successes in a row before the result flips (probed every second)
    t_start = time.monotonic()
    kubelet.wait_log(r'probeType="Readiness" pod="default/%s" containerName="closed" probeResult="failure" '
                     r'output="dial tcp [0-9.]+:8081: connect: connection refused"' % pod, 10)
    assert ready_events(kubelet, pod) == ["False"]  # "closed" keeps the pod not ready
    time.sleep(2)
    assert ready_events(kubelet, pod) == ["False"]


def test_initial_delay_and_startup_gating(kubelet, runtime):
    # startup probe succeeds once /tmp/started exists (after 3 s); readiness (exec true) and liveness
    # (exec false, which would kill) must not run before; readiness has an initial delay of 4 s
    kubelet.write("gate.yaml", probe_pod("gate", [(
        "c", "(sleep 3; touch /tmp/started) & trap 'exit 0' TERM; while true; do sleep 0.2; done", """
        startupProbe:
          exec:
            command: [test, -f, /tmp/started]
          periodSeconds: 1
          failureThreshold: 30
        readinessProbe:
          exec:
            command: ["true"]
          initialDelaySeconds: 4
          periodSeconds: 1
        """)]))
    pod = f"gate-{NODE}"
    kubelet.wait_log(r'Started container: pod="default/%s" containerName="c"' % pod, 30)
    t0 = time.monotonic()
    wait_ready(kubelet, pod, ["False", "True"], 20)
    t_ready = time.monotonic() - t0
    log = kubelet.log()
    startup_ok = log.index('Probe result changed: probeType="Startup" pod="default/%s"' % pod)
    assert 'probeType="Readiness" pod="default/%s"' % pod not in log[:startup_ok]
    assert t_ready >= 3.5, f"ready {t_ready:.1f}s after start: the initial delay was not honoured"


def test_startup_failure_kills(kubelet, runtime):
    kubelet.write("sf.yaml", probe_pod("sf", [(
        "c", "trap 'exit 0' TERM; while true; do sleep 0.2; done", """
        startupProbe:
          exec:
            command: ["false"]
          periodSeconds: 1
          failureThreshold: 2
          terminationGracePeriodSeconds: 3
        livenessProbe:
          exec:
            command: ["false"]
          periodSeconds: 1
        """)], restart_policy="Never"))
    pod = f"sf-{NODE}"
    kubelet.wait_log(r'gracePeriod=3 reason="StartupProbe" message="Container c failed startup probe"', 30)
    # restartPolicy Never: not restarted; liveness never ran (startup never succeeded)
    time.sleep(2)
    cs = runtime.containers_of(pod, "c")
    assert len(cs) == 1 and restart_count(cs[0]) == 0
    assert 'probeType="Liveness" pod="default/%s"' % pod not in kubelet.log()


def test_probe_timeouts(kubelet, runtime):
    # an exec probe that sleeps past its timeout and an HTTP server that accepts but never answers
    kubelet.write("slow.yaml", probe_pod("slow", [
        ("exec", "trap 'exit 0' TERM; while true; do sleep 0.2; done", """
        readinessProbe:
          exec:
            command: [sleep, "10"]
          timeoutSeconds: 1
          periodSeconds: 2
        """),
        ("hang", "mkdir -p /www/cgi-bin && printf '#!/bin/sh\\nsleep 30\\n' > /www/cgi-bin/slow && "
                 "chmod +x /www/cgi-bin/slow && httpd -p 8080 -h /www && "
                 "trap 'exit 0' TERM; while true; do sleep 0.2; done", """
        readinessProbe:
          httpGet:
            port: 8080
            path: /cgi-bin/slow
          timeoutSeconds: 1
          periodSeconds: 2
        """)]))
    pod = f"slow-{NODE}"
    kubelet.wait_log(r'probeType="Readiness" pod="default/%s" containerName="exec" probeResult="failure" '
                     r'output="command "sleep 10" timed out"' % pod, 30)
    kubelet.wait_log(r'probeType="Readiness" pod="default/%s" containerName="hang" probeResult="failure" '
                     r'output="Get "http://[0-9.]+:8080/cgi-bin/slow": context deadline exceeded \(Client.Timeout exceeded '
                     r'while awaiting headers\)"' % pod, 30)


def test_probe_errors_are_reported_not_counted(kubelet, runtime):
    kubelet.write("err.yaml", probe_pod("err", [(
        "c", "trap 'exit 0' TERM; while true; do sleep 0.2; done", """
        livenessProbe:
          tcpSocket:
            port: nope
          periodSeconds: 1
        """)]))
    pod = f"err-{NODE}"
    kubelet.wait_log(r'Probe errored: probeType="Liveness" pod="default/%s" containerName="c" '
                     r'err="port "nope" is neither a port name of container "c" nor a number"' % pod, 30)
    time.sleep(3)
    assert "failed liveness probe" not in kubelet.log()


# ---- host-network probes against servers run by the test (gRPC health, redirects, IPv6 loopback)

def free_port(family=socket.AF_INET, addr="127.0.0.1"):
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.bind((addr, 0))
        return s.getsockname()[1]


@pytest.fixture
def grpc_health_server():
    import grpc  # python3-grpcio (scripts/install-deps.sh --test): a real gRPC server
    statuses = {"": 1, "down": 2}  # SERVING, NOT_SERVING

    def check(request, context):
        # HealthCheckRequest: field 1 (service), a length-delimited string
        service = request[2:].decode() if request[:1] == b"\x0a" else ""
        if service not in statuses:
            context.abort(grpc.StatusCode.NOT_FOUND, "unknown service")
        return bytes([0x08, statuses[service]])

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    handler = grpc.method_handlers_generic_handler("grpc.health.v1.Health", {
        "Check": grpc.unary_unary_rpc_method_handler(check)})
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("0.0.0.0:0")
    server.start()
    yield port
    server.stop(0)


def test_grpc_probes(kubelet, runtime, grpc_health_server):
    port = grpc_health_server
    sleeper = "trap 'exit 0' TERM; while true; do sleep 0.2; done"
    kubelet.write("grpc.yaml", probe_pod("grpc", [
        ("up", sleeper, f"""
        readinessProbe:
          grpc:
            port: {port}
          periodSeconds: 1
        """),
        ("down", sleeper, f"""
        readinessProbe:
          grpc:
            port: {port}
            service: down
          periodSeconds: 1
        """)], host_network=True))
    pod = f"grpc-{NODE}"
    kubelet.wait_log(r'Probe result changed: probeType="Readiness" pod="default/%s" containerName="up" '
                     r'containerID="\w+" result="success"' % pod, 30)
    kubelet.wait_log(r'probeType="Readiness" pod="default/%s" containerName="down" probeResult="failure" '
                     r'output="service unhealthy \(responded with "NOT_SERVING"\)"' % pod, 30)
    assert ready_events(kubelet, pod) == ["False"]


class Redirector(BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/same":
            self.send_response(302)
            self.send_header("Location", "/ok")
        elif self.path == "/other":
            self.send_response(302)
            self.send_header("Location", "http://other.invalid/ok")
        elif self.path == "/ok":
            # upstream's default headers, and Go's client with keep-alives off: Connection: close
            ok = (self.headers.get("User-Agent", "").startswith("kube-probe/") and self.headers.get("Accept") == "*/*"
                  and self.headers.get("Connection") == "close")
            self.send_response(200 if ok else 400)
        else:
            self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *a):
        pass


@pytest.fixture
def redirect_server():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Redirector)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield srv.server_address[1]
    srv.shutdown()


def test_http_redirects_and_ipv6(kubelet, runtime, redirect_server):
    port = redirect_server
    v6port = free_port(socket.AF_INET6, "::1")
    sleeper = "trap 'exit 0' TERM; while true; do sleep 0.2; done"
    kubelet.write("redir.yaml", probe_pod("redir", [
        ("same", sleeper, f"""
        readinessProbe:
          httpGet:
            host: 127.0.0.1
            port: {port}
            path: /same
          periodSeconds: 1
        """),
        ("other", sleeper, f"""
        readinessProbe:
          httpGet:
            host: 127.0.0.1
            port: {port}
            path: /other
          periodSeconds: 1
        """),
        ("v6", HTTPD.format(port=f"[::1]:{v6port}") + sleeper, f"""
        readinessProbe:
          httpGet:
            host: "::1"
            port: {v6port}
          periodSeconds: 1
        livenessProbe:
          tcpSocket:
            host: "::1"
            port: {v6port}
          periodSeconds: 1
        """)], host_network=True))
    pod = f"redir-{NODE}"
    # same host: followed to /ok (200 with upstream's default headers and Connection: close); other host: the 302
    # counts as success
    wait_ready(kubelet, pod, ["False", "True"], 30)
    kubelet.wait_log(r'Probe succeeded with a warning: probeType="Readiness" pod="default/%s" '
                     r'containerName="other" output="Probe terminated redirects' % pod, 10)
    # and upstream's ProbeWarning event on the container
    kubelet.wait_log(r'Event occurred: [^\n]*reason="ProbeWarning" message="Readiness probe warning: Probe '
                     r'terminated redirects, Response body: ', 10)
    assert "failed liveness probe" not in kubelet.log()
