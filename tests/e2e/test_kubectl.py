"""kubectl (the control plane's version, v1.37.2 by default: controlplane.py) end to end through the real kube-apiserver
to ckubelet on containerd: logs (-f, --previous, --tail, --since, --timestamps), exec (-it with a pty), exec over
WebSocket (v4.channel.k8s.io with python3-websocket against pods/exec, whatever kubectl prefers), attach,
port-forward, cp (tar through exec), describe with ckubelet's events, and pod logs over WebSocket (binary.k8s.io),
which the apiserver serves from a plain GET of the kubelet's /containerLogs."""
import json
import os
import pty
import re
import select
import signal
import ssl
import subprocess
import time
import urllib.parse
import urllib.request

import websocket

from apiobjects import SLEEP, api_pod, container, cstatus, running
from conftest import wait_for


def make_pod(kube, name, containers, **kw):
    kube.create("pods", api_pod(name, containers, kube.node, **kw))
    return name


def wait_running(kube, name, cname="app", timeout=90):
    return kube.wait(lambda: running(kube, name, cname), timeout, msg=f"pod {name} running")


def kubectl(kube, *args, **kw):
    """kubectl in the test's namespace; stdout as text."""
    return kube.kubectl("-n", kube.ns, *args, text=True, **kw).stdout


def ws_connect(kube, path, protocols):
    """A WebSocket to the apiserver as the admin (python3-websocket)."""
    cp = kube.cp
    return websocket.create_connection(
        f"wss://127.0.0.1:{cp.port}{path}", timeout=60, subprotocols=protocols,
        sslopt={"cert_reqs": ssl.CERT_REQUIRED, "ca_certs": cp.ca, "certfile": cp.admin_cert[0],
                "keyfile": cp.admin_cert[1]})


def ws_frames(ws, limit=10000):
    """(opcode, payload) of every data frame until the close frame or EOF."""
    out = []
    for _ in range(limit):
        try:
            op, data = ws.recv_data()
        except websocket.WebSocketConnectionClosedException:
            break
        if op == websocket.ABNF.OPCODE_CLOSE:
            break
        out.append((op, data))
    return out


def channels(frames):
    """The v4.channel.k8s.io channels of binary frames: {channel: bytes}."""
    out = {}
    for op, data in frames:
        if op == websocket.ABNF.OPCODE_BINARY and data:
            out[data[0]] = out.get(data[0], b"") + data[1:]
    return out


class Proc:
    """A long-running kubectl (follow, port-forward, attach) whose output is read as it comes."""

    def __init__(self, kube, *args, stdin=False):
        self.p = subprocess.Popen(kube.cp.kubectl_args("-n", kube.ns, *args), stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, stdin=subprocess.PIPE if stdin else subprocess.DEVNULL)
        self.out = b""
        self.err = b""

    def read_until(self, pattern, timeout=60):
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while not rx.search(self.out):
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"kubectl printed no {pattern!r} in {timeout}s: stdout {self.out!r} "
                                     f"stderr {self.err!r}")
            r, _, _ = select.select([self.p.stdout, self.p.stderr], [], [], min(left, 1))
            for f in r:
                data = os.read(f.fileno(), 65536)
                if f is self.p.stdout:
                    self.out += data
                else:
                    self.err += data
            if not r and self.p.poll() is not None:
                raise AssertionError(f"kubectl exited {self.p.returncode}: {self.out!r} {self.err!r}")
        return rx.search(self.out)

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGINT)
            try:
                self.p.wait(20)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait(10)
        for f in (self.p.stdout, self.p.stderr, self.p.stdin):
            if f:
                f.close()


# ---------------------------------------------------------------- logs


def test_kubectl_logs(kube):
    kube.kubelet()
    make_pod(kube, "talk", [container("app", ["sh", "-c", "echo early; sleep 4; echo late; " + SLEEP[2]])])
    # the first run exits, the second stays: its log and the first's (--previous) differ
    make_pod(kube, "again", [container("app", ["sh", "-c", "n=$(cat /d/n 2>/dev/null || echo 0); n=$((n+1)); "
                                                       "echo $n > /d/n; echo run $n; [ $n -gt 1 ] || exit 1; "
                                                       + SLEEP[2]], volumeMounts=[{"name": "d", "mountPath": "/d"}])],
             restart_policy="OnFailure", extra_spec={"volumes": [{"name": "d", "emptyDir": {}}]})
    wait_running(kube, "talk")
    wait_for(lambda: kubectl(kube, "logs", "talk") == "early\nlate\n", 60, msg="both lines")
    assert kubectl(kube, "logs", "talk", "-c", "app", "--tail=1") == "late\n"
    assert kubectl(kube, "logs", "talk", "--since=1h") == "early\nlate\n"
    # early was written at least 4 s before late: a 3 s window never holds it
    assert "early" not in kubectl(kube, "logs", "talk", "--since=3s")
    ts = kubectl(kube, "logs", "talk", "--timestamps").splitlines()
    assert len(ts) == 2 and all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z (early|late)", l) for l in ts), ts

    kube.wait(lambda: (c := cstatus(kube.pod("again"), "app")) and c["restartCount"] >= 1 and "running" in c["state"],
              90, msg="the second run of again")
    assert kubectl(kube, "logs", "again") == "run 2\n"
    assert kubectl(kube, "logs", "again", "--previous") == "run 1\n"
    p = kube.kubectl("-n", kube.ns, "logs", "talk", "--previous", check=False, text=True)
    assert p.returncode != 0 and 'previous terminated container "app" in pod "talk" not found' in p.stderr

    # -f: the lines as they come (b only once the test lets the container go on), the end when it exits
    make_pod(kube, "fol", [container("app", ["sh", "-c", "echo a; while [ ! -e /tmp/go ]; do sleep 0.1; done; "
                                                      "echo b; exit 0"])], restart_policy="Never")
    wait_running(kube, "fol")
    f = Proc(kube, "logs", "-f", "fol")
    try:
        f.read_until(rb"a\n", 30)
        kubectl(kube, "exec", "fol", "--", "touch", "/tmp/go")
        f.read_until(rb"a\nb\n", 30)
        assert f.p.wait(30) == 0
        assert f.out + f.p.stdout.read() == b"a\nb\n"
    finally:
        f.stop()


# ---------------------------------------------------------------- exec


def test_kubectl_exec_spdy_tty_and_stdin(kube):
    k = kube.kubelet()
    make_pod(kube, "shell", [container("app", SLEEP)])
    wait_running(kube, "shell")
    # no tty: stdout, stderr and the exit code apart; stdin piped through
    p = kube.kubectl("-n", kube.ns, "exec", "-i", "shell", "--", "sh", "-c", "cat; echo oops >&2; exit 7",
                     input=b"through stdin\n", check=False)
    assert (p.returncode, p.stdout) == (7, b"through stdin\n"), p
    assert p.stderr == b"oops\ncommand terminated with exit code 7\n", p
    # kubectl v1.37 speaks WebSocket v5 and the node declares ExtendWebSocketsToKubelet: the apiserver passed the
    # WebSocket on and the kubelet translated it to SPDY for the runtime (issue 37)
    with open(k.logfile) as f:
        assert "upgraded (WebSocket to SPDY)" in f.read()
    assert kubectl(kube, "exec", "shell", "-c", "app", "--", "echo", "hi") == "hi\n"

    # -it: a pty on both sides (the container's stdin is a terminal), the exit code comes back
    pid, fd = pty.fork()
    if pid == 0:
        args = kube.cp.kubectl_args("-n", kube.ns, "exec", "-it", "shell", "--", "sh")
        os.execv(args[0], args)
    out = b""
    try:
        def read(pattern, timeout=60):
            nonlocal out
            deadline = time.monotonic() + timeout
            while not re.search(pattern, out):
                assert time.monotonic() < deadline, f"no {pattern!r} from kubectl exec -it: {out!r}"
                r, _, _ = select.select([fd], [], [], 1)
                if r:
                    try:
                        out += os.read(fd, 65536)
                    except OSError:  # EIO: the child closed the pty
                        break
        read(rb"[#$] ")  # the shell's prompt
        os.write(fd, b"echo $((6*7)); tty; stty size; exit 3\r")
        read(rb"42")
        read(rb"/dev/pts/\d+")
        while True:  # to EOF
            r, _, _ = select.select([fd], [], [], 30)
            assert r, out
            try:
                data = os.read(fd, 65536)
            except OSError:
                break
            if not data:
                break
            out += data
        _, status = os.waitpid(pid, 0)
        pid = 0
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 3, (status, out)
        assert b"not a tty" not in out
    finally:
        if pid:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        os.close(fd)


def test_exec_over_websocket(kube):
    kube.kubelet()
    make_pod(kube, "wsx", [container("app", SLEEP)])
    wait_running(kube, "wsx")
    base = f"/api/v1/namespaces/{kube.ns}/pods/wsx/exec?container=app&"

    def run(cmd, stdin=None):
        q = urllib.parse.urlencode([("command", c) for c in cmd] +
                                   [("stdout", "1"), ("stderr", "1")] + ([("stdin", "1")] if stdin else []))
        ws = ws_connect(kube, base + q, ["v4.channel.k8s.io"])
        assert ws.subprotocol == "v4.channel.k8s.io"
        if stdin:
            ws.send_binary(b"\x00" + stdin)
        out = channels(ws_frames(ws))
        ws.close()
        return out

    out = run(["sh", "-c", "echo hello; echo oops >&2; exit 3"])
    assert out.get(1) == b"hello\n" and out.get(2) == b"oops\n"
    st = json.loads(out[3])
    assert st["status"] == "Failure" and st["reason"] == "NonZeroExitCode"
    assert st["details"]["causes"] == [{"reason": "ExitCode", "message": "3"}]
    out = run(["sh", "-c", "read l; echo got:$l"], stdin=b"ping over websocket\n")
    assert out.get(1) == b"got:ping over websocket\n" and json.loads(out[3])["status"] == "Success"


# ---------------------------------------------------------------- attach, port-forward, cp


def test_kubectl_attach(kube):
    kube.kubelet()
    make_pod(kube, "echoer", [container("app", ["sh", "-c", "while read l; do echo got:$l; done"], stdin=True)])
    make_pod(kube, "ticker", [container("app", ["sh", "-c", "while true; do echo tick; sleep 0.3; done"])])
    wait_running(kube, "echoer")
    wait_running(kube, "ticker")
    a = Proc(kube, "attach", "ticker", "-c", "app")
    try:
        a.read_until(rb"tick\n", 60)
    finally:
        a.stop()
    a = Proc(kube, "attach", "-i", "echoer", stdin=True)
    try:
        # the attach is up once the container answers: send until it does
        def answered():
            a.p.stdin.write(b"hello\n")
            a.p.stdin.flush()
            a.read_until(rb"got:hello\n", 3)
            return True
        wait_for(answered, 60, interval=0.5, msg="the attached container's answer")
    finally:
        a.stop()


def test_kubectl_port_forward(kube):
    kube.kubelet()
    make_pod(kube, "web", [container("app", ["sh", "-c", "mkdir -p /www && echo forwarded > /www/index.html && "
                                                      "exec httpd -f -p 8080 -h /www"])])
    wait_running(kube, "web")
    f = Proc(kube, "port-forward", "pod/web", ":8080")
    try:
        port = int(f.read_until(rb"Forwarding from 127\.0\.0\.1:(\d+) -> 8080", 60).group(1))
        for _ in range(3):  # each request is a new stream of the same forward
            body = wait_for(lambda: urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=20).read(), 30,
                            msg="a page through the forward")
            assert body == b"forwarded\n"
    finally:
        f.stop()


def test_kubectl_cp(kube, tmp_path):
    kube.kubelet()
    make_pod(kube, "files", [container("app", SLEEP)])
    wait_running(kube, "files")
    src = tmp_path / "up.bin"
    data = os.urandom(300_000)
    src.write_bytes(data)
    kube.kubectl("-n", kube.ns, "cp", str(src), "files:/tmp/up.bin", "-c", "app")
    assert kubectl(kube, "exec", "files", "--", "sh", "-c", "wc -c < /tmp/up.bin").strip() == str(len(data))
    down = tmp_path / "down.bin"
    kube.kubectl("-n", kube.ns, "cp", "files:/tmp/up.bin", str(down))
    assert down.read_bytes() == data
    # a directory, both ways
    kubectl(kube, "exec", "files", "--", "sh", "-c", "mkdir -p /tmp/d/sub && echo x > /tmp/d/sub/f && echo y > /tmp/d/g")
    kube.kubectl("-n", kube.ns, "cp", "files:/tmp/d", str(tmp_path / "d"))
    assert (tmp_path / "d" / "sub" / "f").read_text() == "x\n" and (tmp_path / "d" / "g").read_text() == "y\n"


def test_kubectl_describe_shows_events(kube):
    kube.kubelet()
    make_pod(kube, "desc", [container("app", SLEEP), container("bad", ["sh", "-c", "exit 2"])])
    wait_running(kube, "desc")
    kube.wait(lambda: kube.events("desc", "BackOff"), 90, msg="a BackOff event")
    out = kubectl(kube, "describe", "pod", "desc")
    assert re.search(rf"^Node:\s+{re.escape(kube.node)}/", out, re.M), out
    assert re.search(r"^Status:\s+Running", out, re.M), out
    events = out[out.index("Events:"):]
    for reason, message in (("Pulled", 'Container image "docker.io/library/busybox:1.36" already present on machine'),
                            ("Created", "Created container app"), ("Started", "Started container app"),
                            ("BackOff", "Back-off restarting failed container")):
        assert re.search(rf"\b{reason}\b.*kubelet.*{re.escape(message)}", events), (reason, events)


# ---------------------------------------------------------------- pods/log over WebSocket


def test_logs_over_websocket(kube):
    kube.kubelet()
    make_pod(kube, "talk", [container("app", ["sh", "-c", "echo one; echo two; " + SLEEP[2]])])
    wait_running(kube, "talk")
    path = f"/api/v1/namespaces/{kube.ns}/pods/talk/log?container=app"
    wait_for(lambda: kube.admin.call("GET", path) == "one\ntwo\n", 30, msg="the plain GET's content")
    for proto in ("binary.k8s.io", "base64.binary.k8s.io"):
        ws = ws_connect(kube, path, [proto])
        assert ws.subprotocol == proto
        frames = ws_frames(ws)
        ws.close()
        data = b"".join(d if proto == "binary.k8s.io" else __import__("base64").b64decode(d) for _, d in frames)
        assert data == b"one\ntwo\n", (proto, frames)
    # tailLines, and a follow that ends with the container: the last lines are not lost with the end
    ws = ws_connect(kube, path + "&tailLines=1", ["binary.k8s.io"])
    assert b"".join(d for _, d in ws_frames(ws)) == b"two\n"
    make_pod(kube, "ends", [container("app", ["sh", "-c", "echo first; sleep 2; echo last; exit 0"])],
             restart_policy="Never")
    wait_running(kube, "ends")
    ws = ws_connect(kube, f"/api/v1/namespaces/{kube.ns}/pods/ends/log?follow=true", ["binary.k8s.io"])
    assert b"".join(d for _, d in ws_frames(ws)) == b"first\nlast\n"
