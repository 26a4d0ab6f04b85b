# Image pull policies against a real registry (Debian docker-registry on 127.0.0.1:5000, reached by
# containerd through its mirror entry).
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
import uuid

import pytest

from conftest import IMAGE_CACHE, NODE, SCRIPTS, pod_manifest, wait_for

REG = "127.0.0.1:5000"
SLEEP = ["sleep", "3600"]


def port_open(port):
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture(scope="module")
def registry():
    started = None
    if not port_open(5000):
        started = tempfile.mkdtemp(prefix="ckubelet-registry-", dir="/var/tmp")
        subprocess.run(["bash", os.path.join(SCRIPTS, "registry.sh"), "start", started], check=True)
    src = os.path.join(IMAGE_CACHE, "images.tar.dir")
    for tag in ("pulltest", "latest", "never"):
        subprocess.run(["skopeo", "copy", "--quiet", "--dest-tls-verify=false",
                        f"oci:{src}:docker.io/library/busybox:1.36", f"docker://{REG}/busybox:{tag}"], check=True)
    yield REG
    if started:
        subprocess.run(["bash", os.path.join(SCRIPTS, "registry.sh"), "stop", started], check=False)
        shutil.rmtree(started, ignore_errors=True)


def ctr(runtime, *args, check=True):
    return subprocess.run(["ctr", "-a", runtime.sock, "-n", "k8s.io", *args], capture_output=True, text=True,
                          check=check)


def remove_image(runtime, ref):
    ctr(runtime, "images", "rm", "--sync", ref, check=False)
    wait_for(lambda: "image" not in runtime.json("inspecti", ref) or not runtime.json("inspecti", ref).get("image"),
             10, msg=f"{ref} removed")


def has_image(runtime, ref):
    return bool(runtime.json("inspecti", ref).get("image"))


def pulls(kubelet, image):
    return len(re.findall(r'Pulling image: pod="[^"]*" image="' + re.escape(image) + '"', kubelet.log()))


def test_always_and_if_not_present(kubelet, runtime, registry):
    image = f"{registry}/busybox:pulltest"
    remove_image(runtime, image)
    kubelet.write("ifnp.yaml", pod_manifest("ifnp", [("c", SLEEP, image, "IfNotPresent")]))
    [first] = wait_for(lambda: runtime.running(f"ifnp-{NODE}"), 60, msg="IfNotPresent pod running (pulled)")
    assert pulls(kubelet, image) == 1
    kubelet.wait_log(r'Successfully pulled image: pod="default/ifnp-testnode" image="' + re.escape(image))
    assert has_image(runtime, image)

    # present now: IfNotPresent does not pull again (a new version of the pod starts without a pull) ...
    kubelet.write("ifnp.yaml", pod_manifest("ifnp", [("c", ["sleep", "3601"], image, "IfNotPresent")]))
    wait_for(lambda: [c for c in runtime.running(f"ifnp-{NODE}") if c["id"] != first["id"]], 60,
             msg="second version running")
    assert pulls(kubelet, image) == 1
    # ... and Always pulls even though it is present
    kubelet.write("always.yaml", pod_manifest("always", [("c", SLEEP, image, "Always")]))
    wait_for(lambda: runtime.running(f"always-{NODE}"), 60, msg="Always pod running")
    assert pulls(kubelet, image) == 2


def test_latest_tag_defaults_to_always(kubelet, runtime, registry):
    image = f"{registry}/busybox:latest"
    remove_image(runtime, image)
    kubelet.write("latest.yaml", pod_manifest("latest", [("c", SLEEP, image)]))
    wait_for(lambda: runtime.running(f"latest-{NODE}"), 60, msg=":latest pod running")
    assert pulls(kubelet, image) == 1
    # no tag means :latest and also defaults to Always
    untagged = f"{registry}/busybox"
    kubelet.write("untagged.yaml", pod_manifest("untagged", [("c", SLEEP, untagged)]))
    wait_for(lambda: runtime.running(f"untagged-{NODE}"), 60, msg="untagged pod running")
    assert pulls(kubelet, untagged) == 1


def test_never(kubelet, runtime, registry):
    image = f"{registry}/busybox:never"
    remove_image(runtime, image)
    kubelet.write("never.yaml", pod_manifest("never", [("c", SLEEP, image, "Never")]))
    kubelet.wait_log(r'Container image "' + re.escape(image) + r'" is not present with pull policy of Never '
                     r'\(ErrImageNeverPull\)', 20)
    assert not runtime.containers_of(f"never-{NODE}")
    assert pulls(kubelet, image) == 0
    # once the image is there (pulled by someone else), the pod runs
    runtime.crictl("pull", image)
    wait_for(lambda: runtime.running(f"never-{NODE}"), 30, msg="Never pod running once the image is present")
    assert pulls(kubelet, image) == 0


def test_missing_image_backs_off_and_others_are_unaffected(kubelet, runtime, registry):
    kubelet.write("fine.yaml", pod_manifest("fine", [("c", SLEEP, "docker.io/library/busybox:1.36", "IfNotPresent")]))
    [fine] = wait_for(lambda: runtime.running(f"fine-{NODE}"), msg="fine pod running")
    image = f"{registry}/busybox:doesnotexist"
    kubelet.write("missing.yaml", pod_manifest("missing", [("c", SLEEP, image, "IfNotPresent")]))
    kubelet.wait_log(r'Failed to pull image "' + re.escape(image) + r'".*\(ErrImagePull\)', 30)
    kubelet.wait_log(r'Back-off pulling image "' + re.escape(image) + '"', 30)
    # with back-off the pulls are spaced out: after the first failure the next is >= 10 s later
    first = pulls(kubelet, image)
    wait_for(lambda: pulls(kubelet, image) > first, 30, interval=0.5, msg="a retry after the back-off")
    stamps = [l[1:21] for l in kubelet.log().splitlines() if f'Pulling image: pod="default/missing-testnode"' in l]
    assert len(stamps) >= 2
    t = [int(s[5:7]) * 3600 + int(s[8:10]) * 60 + float(s[11:]) for s in stamps]
    assert t[1] - t[0] >= 9.0, f"retried after {t[1] - t[0]:.1f}s"
    assert not runtime.containers_of(f"missing-{NODE}")
    assert [c["id"] for c in runtime.running(f"fine-{NODE}")] == [fine["id"]]


# ---- the pull queue: serializeImagePulls, maxParallelImagePulls ----

class SlowRegistry:
    """An HTTP proxy in front of the local registry that holds every manifest request (how a pull begins):
    for `delay` seconds, or, with `pair`, until a second manifest request is held too (at most 15 s), so two
    pulls are under way at once exactly when the kubelet lets two run at once. containerd reaches 127.0.0.1:<port>
    over plain HTTP (localhost)."""

    def __init__(self, upstream_port=5000, delay=0.0, pair=False):
        import http.client
        import http.server
        import threading
        self.barrier = threading.Barrier(2, timeout=15) if pair else None
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def forward(self, method):
                if "/manifests/" in self.path:
                    if proxy.barrier:
                        try:
                            proxy.barrier.wait()
                        except threading.BrokenBarrierError:
                            proxy.barrier.reset()
                    elif delay:
                        time.sleep(delay)
                conn = http.client.HTTPConnection("127.0.0.1", upstream_port, timeout=60)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
                conn.request(method, self.path, headers=headers)
                r = conn.getresponse()
                body = r.read()
                self.send_response(r.status)
                for k, v in r.getheaders():
                    if k.lower() not in ("connection", "transfer-encoding", "content-length"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(int(r.getheader("Content-Length", len(body)))
                                                      if method == "HEAD" else len(body)))
                self.end_headers()
                if method != "HEAD":
                    self.wfile.write(body)
                conn.close()

            def do_GET(self):
                self.forward("GET")

            def do_HEAD(self):
                self.forward("HEAD")

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def push_distinct(registry, n):
    """n images never pulled before (distinct repositories, same content), pushed to the local registry."""
    src = os.path.join(IMAGE_CACHE, "images.tar.dir")
    tag = uuid.uuid4().hex[:8]
    names = [f"ckpull{i}-{tag}:v1" for i in range(n)]
    for name in names:
        subprocess.run(["skopeo", "copy", "--quiet", "--dest-tls-verify=false",
                        f"oci:{src}:docker.io/library/busybox:1.36", f"docker://{registry}/{name}"], check=True)
    return names


def stamp(line):
    s = line[1:21]  # "MMDD hh:mm:ss.uuuuuu" of a klog line
    return int(s[5:7]) * 3600 + int(s[8:10]) * 60 + float(s[11:])


def pull_intervals(kubelet, images):
    """Per image: when the kubelet asked for its pull ("Pulling image"), when PullImage was issued (its turn
    in the queue, logged at --v=2) and when it succeeded, from the kubelet's log."""
    asked, started, done = {}, {}, {}
    for line in kubelet.log().splitlines():
        for img in images:
            q = re.escape(img)
            if re.search(r'Pulling image: pod="[^"]*" image="' + q + '"', line):
                asked.setdefault(img, stamp(line))
            elif re.search(r'pull of image "' + q + r'" started \(', line):
                started.setdefault(img, stamp(line))
            elif re.search(r'Successfully pulled image: pod="[^"]*" image="' + q + '"', line):
                done.setdefault(img, stamp(line))
    return asked, started, done


def most_at_once(started, done):
    """The most pulls under way at the same moment (intervals from issue to success)."""
    most = 0
    for a in started:
        most = max(most, sum(1 for b in started if started[b] <= started[a] < done[b]))
    return most


def run_pulls(kubelet, runtime, images, port):
    runtime.plain_http(f"127.0.0.1:{port}")
    for i, img in enumerate(images):
        kubelet.write(f"pull{i}.yaml", pod_manifest(f"pull{i}", [("c", SLEEP, f"127.0.0.1:{port}/{img}",
                                                                   "IfNotPresent")]))
    refs = [f"127.0.0.1:{port}/{img}" for img in images]
    for i in range(len(images)):
        wait_for(lambda i=i: runtime.running(f"pull{i}-{NODE}"), 120, msg=f"pod pull{i} running")
    asked, started, done = pull_intervals(kubelet, refs)
    assert set(started) == set(done) == set(refs), (started, done)
    return refs, asked, started, done


def test_pulls_serialized_by_default(kubelet_factory, runtime, registry):
    images = push_distinct(registry, 3)
    slow = SlowRegistry(delay=1.0)
    try:
        kubelet = kubelet_factory()
        refs, asked, started, done = run_pulls(kubelet, runtime, images, slow.port)
    finally:
        slow.close()
    assert most_at_once(started, done) == 1, (started, done)
    # one at a time, in the order they were asked for
    assert sorted(refs, key=lambda r: started[r]) == sorted(refs, key=lambda r: asked[r])
    order = sorted(refs, key=lambda r: started[r])
    for a, b in zip(order, order[1:]):
        assert started[b] >= done[a], (a, b, started, done)


def test_parallel_pulls_up_to_the_limit(kubelet_factory, runtime, registry):
    images = push_distinct(registry, 4)
    slow = SlowRegistry(pair=True)
    try:
        kubelet = kubelet_factory(start=False)
        with open(kubelet.config, "a") as f:
            f.write("serializeImagePulls: false\nmaxParallelImagePulls: 2\n")
        kubelet.start()
        refs, asked, started, done = run_pulls(kubelet, runtime, images, slow.port)
    finally:
        slow.close()
    # two under way together (the proxy only lets a manifest through when two are waiting), never three
    assert most_at_once(started, done) == 2, (started, done)
    assert "maxParallelImagePulls" not in "".join(l for l in kubelet.log().splitlines() if "ignored" in l)
