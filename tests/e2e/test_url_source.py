# --manifest-url: pods follow the served body; headers are sent; failures keep the last good pods; the URL
# and file sources merge.
import http.server
import re
import threading

import pytest

from conftest import NODE, SLEEPER, pod_manifest, wait_for


class Served:
    def __init__(self):
        self.body = b""
        self.status = 200
        self.headers_seen = []
        self.requests = 0


@pytest.fixture
def server():
    served = Served()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            served.requests += 1
            served.headers_seen.append(dict(self.headers))
            self.send_response(served.status)
            self.send_header("Content-Length", str(len(served.body)))
            self.end_headers()
            self.wfile.write(served.body)

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    served.url = f"http://127.0.0.1:{httpd.server_address[1]}/pods.yaml"
    yield served
    httpd.shutdown()
    httpd.server_close()


def test_url_source_follows_the_body(kubelet_factory, runtime, server):
    server.body = pod_manifest("u1", [("c", SLEEPER)]).encode()
    k = kubelet_factory(False)
    k.write("f1.yaml", pod_manifest("f1", [("c", SLEEPER)]))
    k.start("--manifest-url", server.url, "--http-check-frequency", "1s", "--manifest-url-header", "X-Token:abc")
    wait_for(lambda: runtime.running(f"u1-{NODE}") and runtime.running(f"f1-{NODE}"), 30,
             msg="URL and file pods running together")
    assert any(h.get("X-Token") == "abc" for h in server.headers_seen), server.headers_seen[:1]
    [sb] = runtime.pods_named(f"u1-{NODE}")
    assert sb["annotations"]["kubernetes.io/config.source"] == "http"

    # a new body: u1 goes, u2 comes
    server.body = pod_manifest("u2", [("c", SLEEPER)]).encode()
    wait_for(lambda: runtime.running(f"u2-{NODE}") and not runtime.pods_named(f"u1-{NODE}"), 40,
             msg="the URL's pods follow the body")
    [u2] = runtime.running(f"u2-{NODE}")

    # failures keep the last good pods
    server.status = 500
    k.wait_log(re.escape(server.url) + r".*500", 10)
    server.status = 200
    server.body = b"apiVersion: v1\nkind: Pod\nmetadata: {name: [broken\n"
    k.wait_log(re.escape(server.url) + r".*line \d+:\d+", 10)
    n = server.requests
    wait_for(lambda: server.requests >= n + 2, 10, msg="more polls")
    assert [c["id"] for c in runtime.running(f"u2-{NODE}")] == [u2["id"]]
    assert runtime.running(f"f1-{NODE}")

    # an empty body means no pods from the URL (upstream); the file pod stays
    server.body = b""
    wait_for(lambda: not runtime.pods_named(f"u2-{NODE}"), 40, msg="URL pods removed on an empty body")
    assert runtime.running(f"f1-{NODE}")
