"""The kubelet HTTP API over real TLS with client certificates: health, pods and status, logs, /logs/, run,
exec/attach/port-forward through the runtime's streaming server, stats, metrics, auth and hardening."""
import json
import os
import re
import shutil
import socket
import ssl
import struct
import subprocess
import time

import pytest

from apiclient import CA, Client, WebSocket
from conftest import BUILD, BUSYBOX, SLEEPER, free_port, pod_manifest, wait_for


class Api:
    def __init__(self, kubelet, ca, other_ca, read_only_port):
        self.k = kubelet
        self.admin = Client(kubelet.port, cert=ca.client("admin", ["system:masters"]))
        self.anon = Client(kubelet.port)
        self.stranger = Client(kubelet.port, cert=other_ca.client("mallory"))
        self.readonly = Client(read_only_port, tls=False)
        self.healthz = Client(kubelet.healthz_port, tls=False)


@pytest.fixture(scope="module")
def cas(tmp_path_factory):
    d = tmp_path_factory.mktemp("pki")
    return CA(str(d / "ca")), CA(str(d / "other"), name="other-ca")


def start_api(kubelet_factory, cas, *extra):
    ca, other = cas
    k = kubelet_factory(start=False)
    ro = free_port()
    k.start("--client-ca-file", ca.crt, "--authorization-mode", "AlwaysAllow", "--read-only-port", str(ro), *extra)
    api = Api(k, ca, other, ro)
    wait_for(lambda: api.healthz.get("/healthz")[0] == 200, msg="the healthz port")
    return api


@pytest.fixture
def api(kubelet_factory, cas):
    return start_api(kubelet_factory, cas)


def pod_of(api, name):
    for p in api.admin.json("/pods")["items"]:
        if p["metadata"]["name"] == name:
            return p
    return None


def cstatus(pod, name):
    return next(c for c in pod["status"]["containerStatuses"] if c["name"] == name)


# ---------------------------------------------------------------- health and auth

def test_healthz_and_serving_certificate(api):
    assert api.healthz.get("/healthz")[:2] == (200, "ok")
    assert api.healthz.get("/pods")[0] == 404  # the healthz port serves health only
    assert api.admin.get("/healthz")[:2] == (200, "ok")
    assert api.admin.get("/healthz/ping")[:2] == (200, "ok")
    assert api.admin.get("/healthz/syncloop")[:2] == (200, "ok")
    assert api.admin.get("/healthz/nonsense")[0] == 404
    # the self-signed pair was written under --cert-dir and is what the port serves
    crt = os.path.join(api.k.pki, "kubelet.crt")
    assert os.path.exists(crt) and oct(os.stat(os.path.join(api.k.pki, "kubelet.key")).st_mode & 0o777) == "0o600"
    verified = Client(api.k.port, cert=api.admin.cert, server_ca=crt)
    assert verified.get("/healthz")[0] == 200
    text = subprocess.run(["openssl", "x509", "-in", crt, "-noout", "-text"], capture_output=True, text=True).stdout
    assert "DNS:testnode" in text and "IP Address:127.0.0.1" in text
    # plain HTTP on the TLS port is refused
    s = socket.create_connection(("127.0.0.1", api.k.port), timeout=10)
    s.sendall(b"GET /pods HTTP/1.1\r\nHost: x\r\n\r\n")
    data = s.recv(4096)
    s.close()
    assert b"/pods" not in data and b"PodList" not in data


def test_authentication_and_authorization(kubelet_factory, cas):
    api = start_api(kubelet_factory, cas)
    # no certificate, anonymous off (the config file default)
    assert api.anon.get("/pods")[:2] == (401, "Unauthorized\n")
    # a certificate from another CA is an authentication failure, not anonymous
    assert api.stranger.get("/pods")[:2] == (401, "Unauthorized\n")
    # bearer tokens need TokenReview (an API server)
    assert api.anon.get("/pods", headers={"Authorization": "Bearer abc"})[0] == 401
    assert api.admin.get("/pods")[0] == 200
    # the read-only port needs nothing and has no debugging handlers
    assert api.readonly.get("/pods")[0] == 200
    assert api.readonly.get("/runningpods/")[0] == 404
    assert api.readonly.get("/exec/default/x/y?command=ls&stdout=1")[0] == 404
    assert api.readonly.get("/logs/")[0] == 404

    # Webhook authorization without an API server: authenticated requests are forbidden, with the subresource
    api2 = start_api(kubelet_factory, cas, "--authorization-mode", "Webhook", "--anonymous-auth")
    for path, method, verb, sub in [("/metrics", "GET", "get", "metrics"), ("/stats/summary", "GET", "get", "stats"),
                                    ("/logs/syslog", "GET", "get", "log"), ("/pods", "GET", "get", "pods proxy"),
                                    ("/run/default/p/c?cmd=ls", "POST", "create", "proxy"),
                                    ("/metricsfoo", "GET", "get", "proxy"), ("/stats", "GET", "get", "stats")]:
        status, body, _ = api2.anon.request(path, method=method)
        assert status == 403, (path, status, body)
        assert body == (f"Forbidden (user=system:anonymous, verb={verb}, resource=nodes, "
                        f"subresource(s)=[{sub}])\n"), body
        status, body, _ = api2.admin.request(path, method=method)
        assert status == 403 and "user=admin," in body


# ---------------------------------------------------------------- pods and status

def test_pods_and_running_pods_status(api, runtime):
    api.k.write("web.yaml", f"""
        apiVersion: v1
        kind: Pod
        metadata:
          name: web
        spec:
          containers:
          - name: app
            image: {BUSYBOX}
            command: ["sh", "-c", "touch /tmp/ready; trap 'exit 0' TERM; while true; do sleep 0.2; done"]
            readinessProbe:
              exec:
                command: [cat, /tmp/ready]
              periodSeconds: 1
            resources:
              requests:
                cpu: 10m
          - name: crash
            image: {BUSYBOX}
            command: ["sh", "-c", "sleep 0.5; exit 3"]
        """)

    def crashlooping():
        p = pod_of(api, "web-testnode")
        if not p:
            return None
        c = cstatus(p, "crash")
        return p if c["state"].get("waiting", {}).get("reason") == "CrashLoopBackOff" and cstatus(p, "app")["ready"] else None
    p = wait_for(crashlooping, timeout=60, msg="crash container in CrashLoopBackOff and app ready")
    assert p["kind"] == "Pod" and p["apiVersion"] == "v1"
    assert p["metadata"]["namespace"] == "default" and p["metadata"]["uid"]
    st = p["status"]
    assert st["phase"] == "Running"
    assert st["qosClass"] == "Burstable"
    sb = runtime.pods_named("web-testnode", ready_only=True)[0]
    assert st["podIP"] == runtime.inspectp(sb["id"])["network"]["ip"]
    assert st["podIPs"] == [{"ip": st["podIP"]}]
    assert st["hostIP"] and st["startTime"].endswith("Z")
    conds = {c["type"]: c for c in st["conditions"]}
    assert [c["type"] for c in st["conditions"]] == ["PodReadyToStartContainers", "Initialized", "Ready",
                                                     "ContainersReady", "PodScheduled"]
    assert conds["Ready"]["status"] == "False" and conds["Ready"]["reason"] == "ContainersNotReady"
    assert conds["Ready"]["message"] == "containers with unready status: [crash]"
    assert conds["Initialized"]["status"] == "True" and conds["PodScheduled"]["status"] == "True"
    assert [c["name"] for c in st["containerStatuses"]] == ["app", "crash"]  # sorted by name
    app, crash = cstatus(p, "app"), cstatus(p, "crash")
    assert app["ready"] is True and app["started"] is True and app["restartCount"] == 0
    assert "running" in app["state"] and app["state"]["running"]["startedAt"].endswith("Z")
    assert app["image"] == BUSYBOX and app["imageID"]
    assert app["containerID"] == "containerd://" + runtime.running("web-testnode", "app")[0]["id"]
    assert crash["ready"] is False and crash["started"] is False and crash["restartCount"] >= 1
    assert crash["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert "back-off" in crash["state"]["waiting"]["message"]
    term = crash["lastState"]["terminated"]
    assert term["exitCode"] == 3 and term["reason"] == "Error" and term["containerID"].startswith("containerd://")
    assert term["startedAt"] <= term["finishedAt"]

    rp = api.admin.json("/runningpods/")
    assert rp["kind"] == "PodList"
    mine = [i for i in rp["items"] if i["metadata"]["name"] == "web-testnode"]
    assert len(mine) == 1 and mine[0]["metadata"]["uid"] == p["metadata"]["uid"]
    assert [c["name"] for c in mine[0]["spec"]["containers"]] == ["app"]  # the crashing one is not running
    assert mine[0]["spec"]["containers"][0]["image"]  # as the runtime names it (an image ID for containerd)

    # readiness off → Ready False for app too; the pod's Ready condition lists both
    assert api.admin.request("/run/default/web-testnode/app?cmd=rm+/tmp/ready", method="POST")[:2] == (200, "")
    wait_for(lambda: not cstatus(pod_of(api, "web-testnode"), "app")["ready"], timeout=20, msg="app unready")
    conds = {c["type"]: c for c in pod_of(api, "web-testnode")["status"]["conditions"]}
    assert conds["ContainersReady"]["message"] == "containers with unready status: [app crash]"


def test_completed_pod_phase(api):
    api.k.write("done.yaml", pod_manifest("done", [("a", ["true"]), ("b", ["sh", "-c", "exit 0"])],
                                          restart_policy="Never"))
    p = wait_for(lambda: (pod_of(api, "done-testnode") or {}).get("status", {}).get("phase") == "Succeeded"
                 and pod_of(api, "done-testnode"), timeout=30, msg="phase Succeeded")
    for c in p["status"]["containerStatuses"]:
        assert c["state"]["terminated"]["exitCode"] == 0 and c["state"]["terminated"]["reason"] == "Completed"
    conds = {c["type"]: c for c in p["status"]["conditions"]}
    assert conds["Ready"]["status"] == "False" and conds["Ready"]["reason"] == "PodCompleted"
    assert p["status"]["qosClass"] == "BestEffort"
    api.k.write("fail.yaml", pod_manifest("fail", [("a", ["sh", "-c", "exit 7"])], restart_policy="Never"))
    wait_for(lambda: (pod_of(api, "fail-testnode") or {}).get("status", {}).get("phase") == "Failed", timeout=30,
             msg="phase Failed")


# ---------------------------------------------------------------- logs

LOGGER = ("i=0; while [ $i -lt 5 ]; do echo line$i; i=$((i+1)); done; sleep 0.2; echo err >&2; sleep 0.2; "
          "printf 'part'; sleep 0.2; echo ial; {tail}")


def test_container_logs(api):
    api.k.write("log.yaml", pod_manifest("log", [("c", ["sh", "-c", LOGGER.format(tail="sleep 3600")])]))
    base = "/containerLogs/default/log-testnode/c"
    wait_for(lambda: "partial" in api.admin.get(base)[1], timeout=30, msg="logs")
    status, body, headers = api.admin.get(base)
    assert status == 200 and headers["Content-Type"].startswith("text/plain")
    assert body == "line0\nline1\nline2\nline3\nline4\nerr\npartial\n"
    assert api.admin.get(base + "?tailLines=2")[1] == "err\npartial\n"
    assert api.admin.get(base + "?tailLines=0")[1] == ""
    assert api.admin.get(base + "?limitBytes=8")[1] == "line0\nli"
    ts = api.admin.get(base + "?timestamps=true&tailLines=1")[1]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z partial\n", ts), ts
    assert api.admin.get(base + "?sinceSeconds=3600")[1].startswith("line0")
    future = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600))
    assert api.admin.get(base + "?sinceTime=" + future)[1] == ""
    for q, why in [("tailLines=-1", "tailLines"), ("limitBytes=0", "limitBytes"), ("sinceSeconds=0", "sinceSeconds"),
                   ("sinceTime=yesterday", "sinceTime"), ("sinceSeconds=5&sinceTime=" + future, "sinceSeconds"),
                   ("tailLines=abc", "tailLines"), ("tailLines=99999999999999999999", "tailLines")]:
        status, body, _ = api.admin.get(base + "?" + q)
        assert status == 400 and why in body, (q, status, body)
    assert api.admin.get("/containerLogs/default/log-testnode/nope")[0] == 404
    assert api.admin.get("/containerLogs/default/nopod/c")[0] == 404
    assert api.admin.get("/containerLogs/default/log-testnode/c?previous=true")[0] in (400, 404)


def test_container_logs_follow_and_previous(api):
    api.k.write("fol.yaml", pod_manifest("fol", [("c", ["sh", "-c", "echo start; sleep 2; echo more; sleep 1; exit 1"])],
                                         restart_policy="OnFailure"))
    base = "/containerLogs/default/fol-testnode/c"
    wait_for(lambda: api.admin.get(base)[:2] == (200, "start\n"), timeout=30, msg="first log line")
    # follow: streams until the container exits
    c = api.admin.conn(timeout=30)
    t0 = time.monotonic()
    c.request("GET", base + "?follow=true")
    r = c.getresponse()
    body = r.read().decode()  # ends when the container stops
    assert r.status == 200, body
    elapsed = time.monotonic() - t0
    c.close()
    assert "more\n" in body and elapsed < 20, (body, elapsed)
    # after the restart, previous=true gives the first instance's log
    wait_for(lambda: api.admin.get(base + "?previous=true")[0] == 200, timeout=40,
             msg=f"a previous instance: {api.admin.get(base + '?previous=true')}")
    assert api.admin.get(base + "?previous=true")[1] == "start\nmore\n"

    # a follower that leaves early does not disturb anything
    s = api.admin.raw_socket()
    s.sendall(f"GET {base}?follow=true HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    s.recv(100)
    s.close()
    assert api.admin.get("/healthz")[0] == 200


def test_logs_directory(api):
    root = "/var/log/ckubelet-e2e-%d" % os.getpid()
    outside = os.path.join(api.k.dir, "secret.txt")
    with open(outside, "w") as f:
        f.write("TOP SECRET\n")
    try:
        os.makedirs(os.path.join(root, "sub"), exist_ok=True)
        with open(os.path.join(root, "a.log"), "w") as f:
            f.write("hello log\n")
        with open(os.path.join(root, "sub", "b <&>.txt"), "w") as f:
            f.write("b\n")
        os.symlink("a.log", os.path.join(root, "inside-link"))
        os.symlink(outside, os.path.join(root, "abs-escape"))
        os.symlink("../../.." + outside, os.path.join(root, "rel-escape"))
        name = os.path.basename(root)
        status, body, _ = api.admin.get(f"/logs/{name}/a.log")
        assert (status, body) == (200, "hello log\n")
        status, body, _ = api.admin.get(f"/logs/{name}/")
        assert status == 200 and '<a href="a.log">a.log</a>' in body and '<a href="sub/">sub/</a>' in body
        status, body, _ = api.admin.get(f"/logs/{name}/sub/")
        assert "b &lt;&amp;&gt;.txt" in body
        assert api.admin.get(f"/logs/{name}/inside-link")[1] == "hello log\n"
        assert api.admin.get("/logs/")[0] == 200
        for path in [f"/logs/{name}/abs-escape", f"/logs/{name}/rel-escape", "/logs/../../etc/shadow",
                     "/logs/%2e%2e/%2e%2e/etc/shadow", "/logs/..%2f..%2fetc/shadow", f"/logs/{name}/..%2f..%2f..%2fetc%2fshadow",
                     "/logs/%2E%2E/etc/passwd"]:
            status, body, _ = api.admin.get(path)
            assert status in (400, 403, 404), (path, status)
            assert "TOP SECRET" not in body and "root:" not in body, path
    finally:
        shutil.rmtree(root, ignore_errors=True)


# ---------------------------------------------------------------- run, exec, attach, port-forward

def test_run(api, runtime):
    api.k.write("r.yaml", pod_manifest("r", [("c", SLEEPER)]))
    wait_for(lambda: runtime.running("r-testnode", "c"), timeout=30, msg="container")
    wait_for(lambda: api.admin.request("/run/default/r-testnode/c?cmd=echo+hi", method="POST")[0] == 200, timeout=10)
    # the command is split at spaces (strings.Split, as upstream); stdout then stderr
    status, body, _ = api.admin.request("/run/default/r-testnode/c?cmd=ls+-d+/etc+/nonexistent", method="POST")
    assert status == 200 and body == "/etc\nls: /nonexistent: No such file or directory\n", body
    # the form body works too
    status, body, _ = api.admin.request("/run/default/r-testnode/c", method="POST", body="cmd=echo+form",
                                        headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert (status, body) == (200, "form\n")
    assert api.admin.request("/run/default/r-testnode/c?cmd=ls", method="GET")[0] == 405
    assert api.admin.request("/run/default/r-testnode/c", method="POST")[0] == 400
    assert api.admin.request("/run/default/r-testnode/nope?cmd=ls", method="POST")[0] == 404


def exec_ws(api, path):
    ws = WebSocket(api.admin, path, ["v4.channel.k8s.io"])
    assert ws.status == 101, ws.status_line
    assert ws.headers.get("sec-websocket-protocol") == "v4.channel.k8s.io"
    out = ws.channels_until_close()
    ws.close()
    return out


def fds_without_cloexec(pid):
    """The fds above 2 of a process that lack O_CLOEXEC (fdinfo's flags are octal)."""
    bad = []
    for fd in os.listdir(f"/proc/{pid}/fdinfo"):
        try:
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                flags = next(l.split()[1] for l in f if l.startswith("flags:"))
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except (FileNotFoundError, StopIteration):
            continue
        if int(fd) > 2 and not int(flags, 8) & 0o2000000:
            bad.append((fd, target))
    return bad


def test_exec_and_attach_websocket(api, runtime):
    api.k.write("x.yaml", pod_manifest("x", [("c", ["sh", "-c", "while true; do echo tick; sleep 0.3; done"])]))
    wait_for(lambda: runtime.running("x-testnode", "c"), timeout=30, msg="container")
    q = "command=sh&command=-c&command=echo+hello;echo+oops+%3E%262;exit+3&stdout=1&stderr=1"
    out = wait_for(lambda: exec_ws(api, "/exec/default/x-testnode/c?" + q), timeout=15, msg="exec")
    assert out.get(1) == b"hello\n" and out.get(2) == b"oops\n"
    status = json.loads(out[3])
    assert status["status"] == "Failure" and status["details"]["causes"][0]["message"] == "3"

    # stdin round trip
    ws = WebSocket(api.admin, "/exec/default/x-testnode/c?command=cat&stdin=1&stdout=1", ["v4.channel.k8s.io"])
    assert ws.status == 101
    ws.send(b"\x00ping through the proxy\n")
    got = b""
    while b"ping through the proxy\n" not in got:
        op, data = ws.recv()
        if op == 2 and data[:1] == b"\x01":
            got += data[1:]
    # every fd of the kubelet is close-on-exec, the stream's socket to the runtime included (issue 26)
    assert not fds_without_cloexec(api.k.proc.pid)
    ws.close()

    # attach sees the container's output
    ws = WebSocket(api.admin, "/attach/default/x-testnode/c?stdout=1", ["v4.channel.k8s.io"])
    assert ws.status == 101
    got = b""
    while b"tick" not in got:
        op, data = ws.recv()
        if op == 2 and data[:1] == b"\x01":
            got += data[1:]
    ws.close()
    assert api.admin.get("/exec/default/x-testnode/c?command=ls")[0] == 400  # no stream asked for
    assert api.admin.get("/exec/default/x-testnode/nope?command=ls&stdout=1")[0] == 404


def test_port_forward_websocket(api, runtime):
    api.k.write("pf.yaml", pod_manifest("pf", [("c", ["sh", "-c", "mkdir -p /www && echo forwarded > /www/index.html "
                                                                  "&& exec httpd -f -p 8080 -h /www"])]))
    wait_for(lambda: runtime.running("pf-testnode", "c"), timeout=30, msg="container")

    def once():
        ws = WebSocket(api.admin, "/portForward/default/pf-testnode?port=8080", ["v4.channel.k8s.io"])
        assert ws.status == 101, ws.status_line
        # each port has a data (0) and an error (1) channel; the server first sends the port on both
        first = [ws.recv() for _ in range(2)]
        assert all(struct.unpack("<H", d[1:3])[0] == 8080 for _, d in first), first
        ws.send(b"\x00GET / HTTP/1.0\r\n\r\n")
        got = b""
        while b"forwarded" not in got:
            op, data = ws.recv()
            if op == 8:
                break
            if data[:1] == b"\x00":
                got += data[1:]
        ws.close()
        return b"forwarded" in got
    assert wait_for(once, timeout=20, msg="port-forward")


def exec_v5(api, path):
    """A v5.channel.k8s.io session (ExtendWebSocketsToKubelet: the kubelet translates it to SPDY for the runtime,
    whose streaming server knows v4 at most): the channels' bytes and the Status of the error channel."""
    ws = WebSocket(api.admin, path, ["v5.channel.k8s.io", "v4.channel.k8s.io"])
    assert ws.status == 101, ws.status_line
    assert ws.headers.get("sec-websocket-protocol") == "v5.channel.k8s.io"
    return ws


def check_websocket_v5(api, runtime):
    """exec and attach over WebSocket v5 straight to the kubelet, as a v1.37 apiserver sends them to a node that
    declares ExtendWebSocketsToKubelet."""
    api.k.write("v5.yaml", pod_manifest("v5", [("c", ["sh", "-c", "while true; do echo tick; sleep 0.3; done"])]))
    wait_for(lambda: runtime.running("v5-testnode", "c"), timeout=30, msg="container")
    q = "command=sh&command=-c&command=echo+hello;echo+oops+%3E%262;exit+3&stdout=1&stderr=1"
    ws = exec_v5(api, "/exec/default/v5-testnode/c?" + q)
    # the first message tells the client the streams are up: an empty one on stdout
    assert ws.recv() == (2, b"\x01")
    out = ws.channels_until_close()
    ws.close()
    assert out.get(1) == b"hello\n" and out.get(2) == b"oops\n", out
    # the exit code as upstream's stream translator writes it
    assert json.loads(out[3]) == {
        "metadata": {}, "status": "Failure", "reason": "NonZeroExitCode",
        "message": "command terminated with non-zero exit code: command terminated with exit code 3",
        "details": {"causes": [{"reason": "ExitCode", "message": "3"}]}}, out[3]

    ws = exec_v5(api, "/exec/default/v5-testnode/c?command=true&stdout=1")
    out = ws.channels_until_close()
    ws.close()
    assert json.loads(out[3]) == {"metadata": {}, "status": "Success"}

    # stdin, then v5's close of channel 0: cat sees its end of file, prints what it read and exits 0
    ws = exec_v5(api, "/exec/default/v5-testnode/c?command=cat&stdin=1&stdout=1")
    ws.send(b"\x00through the kubelet\n")
    ws.send(b"\x00and more\n")
    ws.send(b"\xff\x00")
    out = ws.channels_until_close()
    ws.close()
    assert out.get(1) == b"through the kubelet\nand more\n", out
    assert json.loads(out[3])["status"] == "Success"

    # a tty with a resize: the terminal has the size asked for
    ws = exec_v5(api, "/exec/default/v5-testnode/c?command=sh&stdin=1&stdout=1&tty=1")
    ws.send(b"\x04" + json.dumps({"Width": 123, "Height": 45}).encode())
    time.sleep(0.5)
    ws.send(b"\x00stty size; exit 0\n")
    out = ws.channels_until_close()
    ws.close()
    assert b"45 123" in out.get(1, b""), out

    # attach sees the container's output
    ws = exec_v5(api, "/attach/default/v5-testnode/c?stdout=1")
    got = b""
    while b"tick" not in got:
        op, data = ws.recv()
        if op == 2 and data[:1] == b"\x01":
            got += data[1:]
    ws.close()
    assert api.admin.get("/healthz")[0] == 200


def test_exec_and_attach_websocket_v5(api, runtime):
    check_websocket_v5(api, runtime)


def test_websocket_v5_needs_the_feature_gate(kubelet_factory, cas, runtime):
    # with ExtendWebSocketsToKubelet off the request goes to the runtime as it is, whose streaming server does not
    # speak v5: the same checks fail
    api = start_api(kubelet_factory, cas, "--feature-gates", "ExtendWebSocketsToKubelet=false")
    with pytest.raises(AssertionError):
        check_websocket_v5(api, runtime)


def spdy_frames(buf):
    """Whole SPDY frames at the start of buf: ([(control, type or stream id, flags, payload)], rest)."""
    frames = []
    while len(buf) >= 8:
        n = int.from_bytes(buf[5:8], "big")
        if len(buf) < 8 + n:
            break
        control = buf[0] & 0x80
        kind = int.from_bytes(buf[2:4], "big") if control else int.from_bytes(buf[0:4], "big") & 0x7FFFFFFF
        frames.append((bool(control), kind, buf[4], buf[8:8 + n]))
        buf = buf[8 + n:]
    return frames, buf


def spdy_syn_stream(z, sid, headers):
    import zlib
    block = struct.pack(">I", len(headers))
    for k, v in headers:
        block += struct.pack(">I", len(k)) + k.encode() + struct.pack(">I", len(v)) + v.encode()
    # a zlib stream without the dictionary is one SPDY readers accept (no FDICT: the dictionary is not used)
    block = z.compress(block) + z.flush(zlib.Z_SYNC_FLUSH)
    payload = struct.pack(">IIBB", sid, 0, 0, 0) + block
    return struct.pack(">HHI", 0x8003, 1, len(payload)) + payload


def check_port_forward_tunnel(api, runtime):
    import zlib
    api.k.write("tun.yaml", pod_manifest("tun", [("c", ["sh", "-c", "mkdir -p /www && echo tunnelled > /www/index.html "
                                                                    "&& exec httpd -f -p 8080 -h /www"])]))
    wait_for(lambda: runtime.running("tun-testnode", "c"), timeout=30, msg="container")

    def once():
        ws = WebSocket(api.admin, "/portForward/default/tun-testnode", ["SPDY/3.1+portforward.k8s.io"])
        assert ws.status == 101, ws.status_line
        assert ws.headers.get("sec-websocket-protocol") == "SPDY/3.1+portforward.k8s.io", ws.headers
        z = zlib.compressobj()
        # kubectl's port-forward streams: the error stream, then the data stream, of one request
        ws.send(spdy_syn_stream(z, 1, [("streamtype", "error"), ("port", "8080"), ("requestid", "0")]))
        ws.send(spdy_syn_stream(z, 3, [("streamtype", "data"), ("port", "8080"), ("requestid", "0")]))
        req = b"GET / HTTP/1.0\r\n\r\n"
        ws.send(struct.pack(">II", 3, len(req)) + req)
        buf, got = b"", b""
        while b"tunnelled" not in got:
            op, data = ws.recv()
            if op == 8:
                break
            assert op == 2, op
            buf += data
            frames, buf = spdy_frames(buf)
            for control, kind, flags, payload in frames:
                if not control and kind == 3:
                    got += payload
        ws.close()
        return b"tunnelled" in got
    assert wait_for(once, timeout=20, msg="port-forward tunnel")


def test_port_forward_websocket_tunnel(api, runtime):
    check_port_forward_tunnel(api, runtime)


def test_port_forward_tunnel_needs_the_feature_gate(kubelet_factory, cas, runtime):
    api = start_api(kubelet_factory, cas, "--feature-gates", "ExtendWebSocketsToKubelet=false")
    with pytest.raises(Exception):
        check_port_forward_tunnel(api, runtime)


# ---------------------------------------------------------------- stats and metrics

def cgroup_files(runtime, cid):
    pid = runtime.container_pid(cid)
    paths = {}
    with open(f"/proc/{pid}/cgroup") as f:
        for line in f:
            _, ctrls, path = line.strip().split(":", 2)
            for c in ctrls.split(","):
                paths[c] = path
    cpu = "/sys/fs/cgroup/cpu,cpuacct" if os.path.isdir("/sys/fs/cgroup/cpu,cpuacct") else "/sys/fs/cgroup/cpuacct"
    return cpu + paths["cpuacct"], "/sys/fs/cgroup/memory" + paths["memory"]


def read_int(path):
    with open(path) as f:
        return int(f.read().split()[0])


def test_stats_summary_matches_cgroups(api, runtime):
    # the busy loop requests a core (Burstable, cpu.shares 1024): as BestEffort (shares 2) it would get next to
    # nothing whenever anything else on the machine is busy; the memory container requests a quarter of one (256),
    # or with shares 2 beside the busy loop it took over 60 s of a loaded machine to build its string
    api.k.write("burn.yaml", f"""\
apiVersion: v1
kind: Pod
metadata: {{name: burn}}
spec:
  containers:
  - name: cpu
    image: {BUSYBOX}
    command: ["sh", "-c", "while true; do :; done"]
    resources: {{requests: {{cpu: "1"}}}}
  - name: mem
    image: {BUSYBOX}
    command: ["sh", "-c", "x=$(head -c 40000000 /dev/zero | tr '\\\\0' a); while true; do sleep 1; done"]
    resources: {{requests: {{cpu: "250m"}}}}
""")
    cpu_c = wait_for(lambda: runtime.running("burn-testnode", "cpu"), timeout=30, msg="cpu container")[0]
    mem_c = wait_for(lambda: runtime.running("burn-testnode", "mem"), timeout=30, msg="mem container")[0]
    cpu_dir, _ = cgroup_files(runtime, cpu_c["id"])
    _, mem_dir = cgroup_files(runtime, mem_c["id"])

    def summary_pod():
        s = api.admin.json("/stats/summary")
        for p in s["pods"]:
            if p["podRef"]["name"] == "burn-testnode":
                cs = {c["name"]: c for c in p["containers"]}
                if "usageNanoCores" in cs.get("cpu", {}).get("cpu", {}) and \
                        cs.get("mem", {}).get("memory", {}).get("workingSetBytes", 0) > 40_000_000:
                    return s, p, cs
        return None
    def mem_ws():
        stat = {}
        with open(mem_dir + "/memory.stat") as f:
            for line in f:
                k, v = line.split()
                stat[k] = int(v)
        return read_int(mem_dir + "/memory.usage_in_bytes") - stat["total_inactive_file"]

    # the shell is done building its 40 MB string once its working set stops moving
    last = [mem_ws()]

    def settled():
        time.sleep(1)
        now, prev = mem_ws(), last[0]
        last[0] = now
        return now > 40_000_000 and abs(now - prev) < 512 * 1024
    wait_for(settled, timeout=60, msg="the memory container's working set to settle")
    s, p, cs = wait_for(summary_pod, timeout=30, msg="stats for the burning pod")
    before = read_int(cpu_dir + "/cpuacct.usage")
    s, p, cs = summary_pod()
    after = read_int(cpu_dir + "/cpuacct.usage")
    usage = cs["cpu"]["cpu"]["usageCoreNanoSeconds"]
    assert before - 2e8 <= usage <= after + 2e8, (before, usage, after)
    # the rate (containerd's, over the time since its previous sample: two summaries in quick succession make
    # that window tiny and the figure noisy): how much the busy loop gets depends on what else runs on the
    # machine, so only "clearly busy, within the node's cores, busier than the sleeping container", over
    # windows of a second (a loaded machine can starve the loop for a tiny window: 0 then)
    def busy_rate():
        time.sleep(1)
        _, _, c = summary_pod() or (None, None, {})
        rate = c.get("cpu", {}).get("cpu", {}).get("usageNanoCores", 0)
        return c if rate >= 0.05e9 else None
    cs = wait_for(busy_rate, timeout=30, msg="a busy rate for the cpu container")
    assert cs["cpu"]["cpu"]["usageNanoCores"] <= 1.1e9 * os.cpu_count(), cs["cpu"]["cpu"]
    assert cs["cpu"]["cpu"]["usageNanoCores"] > cs["mem"].get("cpu", {}).get("usageNanoCores", 0), (cs["cpu"], cs["mem"])
    ws = mem_ws()
    got = cs["mem"]["memory"]["workingSetBytes"]
    assert abs(got - ws) <= 4 * 1024 * 1024, (got, ws)
    assert p["podRef"]["namespace"] == "default" and p["podRef"]["uid"]
    assert p["cpu"]["usageCoreNanoSeconds"] >= usage
    assert p["memory"]["workingSetBytes"] >= got
    assert "rootfs" in cs["cpu"] and "logs" in cs["cpu"]
    node = s["node"]
    assert node["nodeName"] == "testnode"
    assert node["cpu"]["usageCoreNanoSeconds"] > usage
    assert node["memory"]["workingSetBytes"] > got
    assert node["fs"]["capacityBytes"] > 0 and node["runtime"]["imageFs"]["capacityBytes"] > 0
    assert node["rlimit"]["maxpid"] > 0 and node["rlimit"]["curproc"] > 0

    m = api.admin.get("/metrics/resource")[1]
    assert re.search(r'^container_cpu_usage_seconds_total\{container="cpu",namespace="default",pod="burn-testnode"\} '
                     r'[0-9.e+]+ \d+$', m, re.M), m
    assert re.search(r'^node_memory_working_set_bytes [0-9.e+]+ \d+$', m, re.M)


def test_stats_provider_against_the_runtime(api, runtime):
    # the summary provider on its own (tests/unit/stats/cri.c, skipped under meson for want of a runtime) with
    # this session's containerd: two samples, rates, the resource metrics, cancellation in flight and a client
    # freed under a pending summary
    exe = os.path.join(BUILD, "tests", "unit", "test-stats-cri")
    assert os.path.exists(exe), f"{exe} is built with -Dtests=true"
    api.k.write("sp.yaml", pod_manifest("sp", [("c", SLEEPER)]))
    wait_for(lambda: runtime.running("sp-testnode", "c"), timeout=30, msg="container")
    env = dict(os.environ, CKUBELET_TEST_CRI_ENDPOINT=runtime.endpoint, CKUBELET_TEST_EXPECT_POD="default/sp-testnode",
               CKUBELET_TEST_ROOT_DIR=api.k.root, CKUBELET_TEST_POD_LOGS_DIR=api.k.logs)
    p = subprocess.run([exe], env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr


def test_metrics_spec_configz(api, runtime):
    api.k.write("m.yaml", pod_manifest("m", [("c", SLEEPER)]).replace(
        "    command:", "    readinessProbe:\n      exec:\n        command: [\"true\"]\n      periodSeconds: 1\n"
                       "    command:"))
    wait_for(lambda: runtime.running("m-testnode", "c"), timeout=30, msg="container")
    wait_for(lambda: re.search(r"^kubelet_running_pods [1-9]", api.admin.get("/metrics")[1], re.M), timeout=10)
    # the gauges come from the PLEG's relist (every second), which may have seen the sandbox before the container
    wait_for(lambda: re.search(r'^kubelet_running_containers\{container_state="running"\} [1-9]',
                               api.admin.get("/metrics")[1], re.M), timeout=10)
    m = api.admin.get("/metrics")[1]
    assert re.search(r'^kubelet_runtime_operations_total\{operation_type="run_podsandbox"\} [1-9]', m, re.M)
    assert re.search(r'^kubelet_runtime_operations_duration_seconds_bucket\{operation_type="create_container",'
                     r'le="\+Inf"\} [1-9]', m, re.M)
    assert re.search(r'^kubelet_pod_start_duration_seconds_count [1-9]', m, re.M)
    # the PLEG's relists: one per second at least since the kubelet started (the pod ran, so some were made)
    assert re.search(r'^kubelet_pleg_relist_duration_seconds_bucket\{le="\+Inf"\} [1-9]', m, re.M)
    assert re.search(r'^kubelet_pleg_relist_interval_seconds_count [1-9]', m, re.M)
    assert "# TYPE kubelet_runtime_operations_errors_total counter" in m
    probes = wait_for(lambda: re.search(r'^prober_probe_total\{container="c",namespace="default",pod="m-testnode",'
                                        r'pod_uid="[^"]+",probe_type="Readiness",result="successful"\} [1-9]',
                                        api.admin.get("/metrics/probes")[1], re.M), timeout=10)
    assert probes
    # ckubelet's own: the probes' lateness against their schedule, a histogram whose +Inf bucket is its count
    m = api.admin.get("/metrics/probes")[1]
    count = re.search(r'^ckubelet_prober_probe_lateness_seconds_count (\d+)$', m, re.M)
    assert count and int(count.group(1)) >= 1, m
    assert re.search(r'^ckubelet_prober_probe_lateness_seconds_bucket\{le="\+Inf"\} %s$' % count.group(1), m, re.M)
    assert re.search(r'^ckubelet_prober_probe_lateness_max_seconds [0-9.e+-]+$', m, re.M)
    spec = api.admin.json("/spec/")
    assert spec["num_cores"] == os.cpu_count()
    with open("/etc/machine-id") as f:
        assert spec["machine_id"] == f.read().strip()
    with open("/proc/sys/kernel/random/boot_id") as f:
        assert spec["boot_id"] == f.read().strip()
    assert spec["memory_capacity"] > 1 << 30 and spec["kernel_version"] == os.uname().release
    cz = api.admin.json("/configz")["kubeletconfig"]
    assert cz["port"] == api.k.port and cz["authorization"]["mode"] == "AlwaysAllow"
    assert cz["authentication"]["anonymous"]["enabled"] is False
    # the cgroup settings upstream's node e2e suite reads
    args = api.k.args()
    root = args[args.index("--cgroup-root") + 1] if "--cgroup-root" in args else "/"
    assert cz["cgroupsPerQOS"] is True and cz["cgroupRoot"] == root and cz["cgroupDriver"] == "cgroupfs", cz


# ---------------------------------------------------------------- hardening

def test_limits_and_slow_clients(api):
    # a header larger than the limit
    status = api.admin.get("/pods", headers={"X-Big": "a" * 100_000})[0]
    assert status in (400, 413, 431)
    # slow clients do not stall anything: 20 TLS connections that send half a request
    idle = []
    for _ in range(20):
        s = api.admin.raw_socket()
        s.sendall(b"GET /pods HTTP/1.1\r\nHost: x\r\n")
        idle.append(s)
    t0 = time.monotonic()
    for _ in range(5):
        assert api.admin.get("/healthz")[0] == 200
    assert time.monotonic() - t0 < 5
    for s in idle:
        s.close()
    # bad paths
    assert api.admin.get("/containerLogs/default")[0] in (400, 404)
    assert api.admin.get("/nothing/here")[0] == 404
