# The probes' own HTTP/1.1 client (issue 34 item 2, src/prober/http.c): HTTPS probes without certificate checks,
# chunked and oversized bodies, a failure's status code, and an HTTPS httpGet hook whose server answers in plain
# HTTP, retried over HTTP without the Authorization header as upstream's lifecycle handler does.
import socketserver
import ssl
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from conftest import NODE, wait_for
from test_probes import probe_pod

SLEEPER = "trap 'exit 0' TERM; while true; do sleep 0.2; done"


class Recorder(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen = []

    def do_GET(self):
        type(self).seen.append((self.path, dict(self.headers)))
        if self.path == "/chunked":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for part in (b"hello", b" ", b"world"):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
            self.wfile.write(b"0\r\n\r\n")
        elif self.path == "/big":
            body = b"x" * 50000
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            try:
                self.wfile.write(body)
            except OSError:
                pass  # the client read its 10 KiB and reset the connection
        else:
            self.send_response(500 if self.path == "/fail" else 200)
            self.send_header("Content-Length", "0")
            self.end_headers()
        self.close_connection = True

    def log_message(self, *a):
        pass


def serve(handler, tls_dir=None):
    srv = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    if tls_dir:
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=x",
                        "-keyout", f"{tls_dir}/key.pem", "-out", f"{tls_dir}/cert.pem"], check=True,
                       capture_output=True)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(f"{tls_dir}/cert.pem", f"{tls_dir}/key.pem")
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


class PlainAnswersTLS(socketserver.BaseRequestHandler):
    """A plain HTTP server that answers a TLS ClientHello at once with a 400 (as many do), and records requests."""
    seen = []

    def handle(self):
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = self.request.recv(4096)
            if not chunk:
                return
            data += chunk
            if data[:1] == b"\x16":
                self.request.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                return
        lines = data.split(b"\r\n\r\n")[0].decode("latin-1").split("\r\n")
        headers = dict(l.split(": ", 1) for l in lines[1:] if ": " in l)
        type(self).seen.append((lines[0].split(" ")[1], headers))
        self.request.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")


@pytest.fixture
def servers(tmp_path):
    class TLS(Recorder):
        seen = []

    class Plain(PlainAnswersTLS):
        seen = []

    tls = serve(TLS, str(tmp_path))
    plain = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Plain)
    plain.daemon_threads = True
    threading.Thread(target=plain.serve_forever, daemon=True).start()
    yield tls.server_address[1], TLS.seen, plain.server_address[1], Plain.seen
    tls.shutdown()
    plain.shutdown()


def test_https_probes_and_hook_fallback(kubelet, runtime, servers):
    tls_port, tls_seen, plain_port, plain_seen = servers

    def readiness(path):
        return f"""
        readinessProbe:
          httpGet:
            scheme: HTTPS
            host: 127.0.0.1
            port: {tls_port}
            path: {path}
          periodSeconds: 1
        """
    kubelet.write("tlsprobe.yaml", probe_pod("tlsprobe", [
        ("chunked", SLEEPER, readiness("/chunked")),
        ("big", SLEEPER, readiness("/big")),
        ("fail", SLEEPER, readiness("/fail")),
        ("hook", SLEEPER, f"""
        lifecycle:
          postStart:
            httpGet:
              scheme: HTTPS
              host: 127.0.0.1
              port: {plain_port}
              path: /hook
              httpHeaders:
              - name: Authorization
                value: secret
        """)], host_network=True))
    pod = f"tlsprobe-{NODE}"
    for c in ("chunked", "big"):
        kubelet.wait_log(r'Probe result changed: probeType="Readiness" pod="default/%s" containerName="%s" '
                         r'containerID="\w+" result="success"' % (pod, c), 30)
    kubelet.wait_log(r'probeType="Readiness" pod="default/%s" containerName="fail" probeResult="failure" '
                     r'output="HTTP probe failed with statuscode: 500"' % pod, 30)
    # upstream's probe headers, over TLS
    path, headers = next(s for s in tls_seen if s[0] == "/chunked")
    assert headers.get("User-Agent", "").startswith("kube-probe/") and headers.get("Accept") == "*/*"
    assert headers.get("Connection") == "close" and headers.get("Host") == f"127.0.0.1:{tls_port}"
    # the hook: the TLS handshake got an HTTP answer, the retry over HTTP went through without Authorization
    wait_for(lambda: any(p == "/hook" for p, _ in plain_seen), 30, 0.2, "the hook's retry over HTTP")
    _, headers = next(s for s in plain_seen if s[0] == "/hook")
    assert "Authorization" not in headers, headers
    assert headers.get("User-Agent", "").startswith("kube-lifecycle/"), headers
    assert "FailedPostStartHook" not in kubelet.log()
