"""kubectl v1.20.2 end to end through the real kube-apiserver to ckubelet on containerd: logs (-f, --previous,
--tail, --since, --timestamps), exec (SPDY, with a pty for -it), exec over WebSocket (v4.channel.k8s.io,
python3-websocket against pods/exec), attach, port-forward, cp (tar through exec), describe with ckubelet's
events, and pod logs over WebSocket (binary.k8s.io)."""
import ssl

import websocket

from apiobjects import SLEEP, api_pod, container, cstatus, running
from conftest import wait_for


def ws_connect(kube, path, protocols):
    """A WebSocket to the apiserver as the admin (python3-websocket)."""
    cp = kube.cp
    return websocket.create_connection(
        f"wss://127.0.0.1:{cp.port}{path}", timeout=60, subprotocols=protocols,
        sslopt={"cert_reqs": ssl.CERT_REQUIRED, "ca_certs": cp.ca, "certfile": cp.admin_cert[0],
                "keyfile": cp.admin_cert[1]})


def ws_frames(ws, limit=1000):
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


def test_logs_over_websocket(kube):
    kube.kubelet()
    kube.create("pods", api_pod("talk", [container("app", ["sh", "-c", "echo one; echo two; " + SLEEP[2]])],
                                kube.node))
    kube.wait(lambda: running(kube, "talk"), 90, msg="pod talk running")
    path = f"/api/v1/namespaces/{kube.ns}/pods/talk/log?container=app"
    wait_for(lambda: kube.admin.call("GET", path) == "one\ntwo\n", 30, msg="the plain GET's content")
    ws = ws_connect(kube, path, ["binary.k8s.io"])
    assert ws.subprotocol == "binary.k8s.io"
    frames = ws_frames(ws)
    ws.close()
    assert b"".join(d for _, d in frames) == b"one\ntwo\n", frames
