"""A small client for the kubelet API in the tests: TLS with client certificates made by a test CA, plain
HTTP for the read-only and healthz ports, and a minimal WebSocket client for exec and port-forward."""
import base64
import http.client
import json
import os
import socket
import ssl
import struct
import subprocess


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


class CA:
    """A throwaway certificate authority (openssl CLI) with client certificates."""

    def __init__(self, d, name="test-ca"):
        self.d = d
        os.makedirs(d, exist_ok=True)
        self.crt = os.path.join(d, "ca.crt")
        self.key = os.path.join(d, "ca.key")
        openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
                self.key, "-out", self.crt, "-days", "2", "-subj", f"/CN={name}", cwd=d)

    def client(self, cn, orgs=()):
        base = os.path.join(self.d, cn.replace(":", "_"))
        subj = "".join(f"/O={o}" for o in orgs) + f"/CN={cn}"
        openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", base + ".key",
                "-out", base + ".csr", "-subj", subj, cwd=self.d)
        ext = base + ".ext"
        with open(ext, "w") as f:
            f.write("extendedKeyUsage=clientAuth\n")
        openssl("x509", "-req", "-in", base + ".csr", "-CA", self.crt, "-CAkey", self.key, "-CAcreateserial",
                "-out", base + ".crt", "-days", "2", "-extfile", ext, cwd=self.d)
        return (base + ".crt", base + ".key")


class Client:
    def __init__(self, port, cert=None, tls=True, host="127.0.0.1", server_ca=None, token=None):
        self.port, self.cert, self.tls, self.host = port, cert, tls, host
        self.token = token
        self.server_ca = server_ca

    def context(self):
        ctx = ssl.create_default_context(cafile=self.server_ca) if self.server_ca else ssl._create_unverified_context()
        if self.server_ca:
            ctx.check_hostname = False
        if self.cert:
            ctx.load_cert_chain(*self.cert)
        return ctx

    def conn(self, timeout=30):
        if self.tls:
            return http.client.HTTPSConnection(self.host, self.port, timeout=timeout, context=self.context())
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def request(self, path, method="GET", headers=None, body=None, timeout=30):
        c = self.conn(timeout)
        try:
            headers = dict(headers or {})
            if self.token:
                headers["Authorization"] = "Bearer " + self.token
            c.request(method, path, body=body, headers=headers)
            r = c.getresponse()
            data = r.read()
            return r.status, data.decode(errors="replace"), dict(r.getheaders())
        finally:
            c.close()

    def get(self, path, **kw):
        return self.request(path, **kw)

    def json(self, path):
        status, body, _ = self.get(path)
        assert status == 200, f"GET {path}: {status} {body}"
        return json.loads(body)

    def raw_socket(self, timeout=30):
        s = socket.create_connection((self.host, self.port), timeout=timeout)
        if self.tls:
            s = self.context().wrap_socket(s, server_hostname=self.host)
        return s


class WebSocket:
    """Just enough RFC 6455 for the channel protocols (binary frames, client masking)."""

    def __init__(self, client, path, protocols):
        self.s = client.raw_socket()
        key = base64.b64encode(os.urandom(16)).decode()
        req = (f"GET {path} HTTP/1.1\r\nHost: {client.host}:{client.port}\r\nUpgrade: websocket\r\n"
               f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
               f"Sec-WebSocket-Protocol: {', '.join(protocols)}\r\n\r\n")
        self.s.sendall(req.encode())
        self.buf = b""
        while b"\r\n\r\n" not in self.buf:
            chunk = self.s.recv(4096)
            if not chunk:
                break
            self.buf += chunk
        head, _, self.buf = self.buf.partition(b"\r\n\r\n")
        lines = head.decode(errors="replace").split("\r\n")
        self.status_line = lines[0]
        self.status = int(lines[0].split()[1]) if len(lines[0].split()) > 1 else 0
        self.headers = {l.split(":", 1)[0].strip().lower(): l.split(":", 1)[1].strip() for l in lines[1:] if ":" in l}

    def _read(self, n):
        while len(self.buf) < n:
            chunk = self.s.recv(65536)
            if not chunk:
                raise EOFError("connection closed")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def recv(self):
        """(opcode, payload) of the next frame."""
        b1, b2 = self._read(2)
        n = b2 & 0x7F
        if n == 126:
            n = struct.unpack(">H", self._read(2))[0]
        elif n == 127:
            n = struct.unpack(">Q", self._read(8))[0]
        if b2 & 0x80:
            mask = self._read(4)
            data = bytes(c ^ mask[i % 4] for i, c in enumerate(self._read(n)))
        else:
            data = self._read(n)
        return b1 & 0x0F, data

    def send(self, payload, opcode=2):
        mask = os.urandom(4)
        n = len(payload)
        head = bytes([0x80 | opcode])
        if n < 126:
            head += bytes([0x80 | n])
        elif n < 65536:
            head += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            head += bytes([0x80 | 127]) + struct.pack(">Q", n)
        self.s.sendall(head + mask + bytes(c ^ mask[i % 4] for i, c in enumerate(payload)))

    def channels_until_close(self, limit=100):
        """Collect binary frames by channel (first byte) until the close frame."""
        out = {}
        for _ in range(limit):
            try:
                op, data = self.recv()
            except EOFError:
                break
            if op == 8:
                break
            if op in (1, 2) and data:
                out[data[0]] = out.get(data[0], b"") + data[1:]
        return out

    def close(self):
        self.s.close()
