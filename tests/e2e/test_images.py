# Image pull policies against a real registry (Debian docker-registry on 127.0.0.1:5000, reached by
# containerd through its mirror entry).
import os
import re
import shutil
import socket
import subprocess
import tempfile

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
