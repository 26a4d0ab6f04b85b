"""Image volumes (volumes[].image, KEP-4639, GA in v1.36): the image is pulled (or found present) before the
containers start, with the volume's pullPolicy, and mounted read-only by the runtime through the CRI mount's `image`
(subPath as `image_sub_path`); the image GC keeps an image mounted as a volume. An image built here (two files in a
data/ directory, no binary) is imported into the runtime. Containerd 2.1 mounts it; containerd 1.6.20 knows nothing of
the CRI mount's image and fails the container (see test_image_volume_refused_by_containerd_1)."""
import hashlib
import io
import json
import os
import subprocess
import tarfile

import pytest

from conftest import BUSYBOX, IMAGE_CACHE, NODE, SCRIPTS, containerd_major, wait_for
from standalone import start, wait_output

pytestmark = pytest.mark.runtime

IMAGE = "docker.io/library/ckubelet-imgvol:1"
CANARY = "docker.io/library/ckubelet-imgvol-canary:1"  # unused: the image GC removes it
HELLO = "hello from the image volume"
INNER = "inner file of the image volume"
SLEEP = "trap 'exit 0' TERM; while true; do sleep 0.2; done"


def _blob(d, data, media_type):
    h = hashlib.sha256(data).hexdigest()
    os.makedirs(f"{d}/blobs/sha256", exist_ok=True)
    with open(f"{d}/blobs/sha256/{h}", "wb") as f:
        f.write(data)
    return {"mediaType": media_type, "digest": "sha256:" + h, "size": len(data)}


def build_image_tar(path, refs):
    """An OCI image layout tar holding refs, each one layer: data/hello.txt and data/sub/inner.txt."""
    bio = io.BytesIO()
    with tarfile.open(fileobj=bio, mode="w", format=tarfile.PAX_FORMAT) as t:
        for name in ("data", "data/sub"):
            ti = tarfile.TarInfo(name)
            ti.type, ti.mode = tarfile.DIRTYPE, 0o755
            t.addfile(ti)
        for name, text in (("data/hello.txt", HELLO), ("data/sub/inner.txt", INNER)):
            data = (text + "\n").encode()
            ti = tarfile.TarInfo(name)
            ti.size, ti.mode = len(data), 0o644
            t.addfile(ti, io.BytesIO(data))
    layer = bio.getvalue()
    d = path + ".dir"
    ld = _blob(d, layer, "application/vnd.oci.image.layer.v1.tar")
    manifests = []
    for ref in refs:
        cfg = {"architecture": "amd64", "os": "linux", "config": {"Labels": {"ref": ref}},
               "rootfs": {"type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(layer).hexdigest()]}}
        cd = _blob(d, json.dumps(cfg).encode(), "application/vnd.oci.image.config.v1+json")
        m = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json", "config": cd,
             "layers": [ld]}
        md = _blob(d, json.dumps(m).encode(), "application/vnd.oci.image.manifest.v1+json")
        md["annotations"] = {"org.opencontainers.image.ref.name": ref, "io.containerd.image.name": ref}
        manifests.append(md)
    with open(f"{d}/index.json", "w") as f:
        json.dump({"schemaVersion": 2, "manifests": manifests}, f)
    with open(f"{d}/oci-layout", "w") as f:
        f.write('{"imageLayoutVersion":"1.0.0"}')
    with tarfile.open(path, "w") as t:
        t.add(d, arcname=".")
    return path


def import_tar(runtime, path):
    subprocess.run(["bash", os.path.join(SCRIPTS, "containerd.sh"), "import", runtime.dir, path], check=True)


def images(runtime):
    return {t for i in runtime.json("images")["images"] for t in i.get("repoTags", [])}


def container_status(api, pod, name):
    for p in api.json("/pods")["items"]:
        if p["metadata"]["name"] == pod:
            for c in p.get("status", {}).get("containerStatuses", []):
                if c["name"] == name:
                    return c
    return None


def waiting(api, pod, name):
    return ((container_status(api, pod, name) or {}).get("state") or {}).get("waiting")


def imgvol_pod(name, reference, policy="IfNotPresent"):
    # containerd 2.1 ignores the CRI mount's image_sub_path (containerd#11578 is in 2.2): /sub is then the image's root
    script = (f"cat /iv/data/hello.txt; touch /iv/x && echo WRITE_OK || echo WRITE_FAIL; "
              f"if [ -e /sub/inner.txt ]; then cat /sub/inner.txt; echo SUBPATH_HONOURED; "
              f"else cat /sub/data/sub/inner.txt; echo SUBPATH_IGNORED; fi; "
              f"grep -q ' /iv .*ro[,]' /proc/mounts && echo MOUNT_RO; echo END; {SLEEP}")
    return f"""\
apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  volumes: [{{name: iv, image: {{reference: "{reference}", pullPolicy: {policy}}}}}]
  containers:
  - name: c
    image: {BUSYBOX}
    command: ["sh", "-c", "{script}"]
    volumeMounts:
    - {{name: iv, mountPath: /iv}}
    - {{name: iv, mountPath: /sub, subPath: data/sub}}
"""


@pytest.fixture
def image_tar(tmp_path):
    return build_image_tar(str(tmp_path / "imgvol.tar"), [IMAGE, CANARY])


def test_image_volume(kubelet_factory, runtime, image_tar):
    if containerd_major() < 2:
        pytest.skip("containerd 1.6.20 has no image volumes (test_image_volume_refused_by_containerd_1)")
    import_tar(runtime, image_tar)
    k, api = start(kubelet_factory)
    try:
        k.write("iv.yaml", imgvol_pod("iv", IMAGE))
        pod = f"iv-{NODE}"
        out = wait_output(k, runtime, pod, "c", timeout=60)
        # readable, read-only (the volumeMount does not say readOnly: the image volume is read-only whatever it says)
        assert HELLO in out and INNER in out, out
        assert "WRITE_FAIL" in out and "WRITE_OK" not in out and "MOUNT_RO" in out, out
        # the subPath is sent as image_sub_path (below); containerd 2.1.9 ignores it and mounts the image's root, as
        # upstream's kubelet sees it there too; 2.2 honours it
        assert "SUBPATH_HONOURED" in out or "SUBPATH_IGNORED" in out, out
        print("\nsubPath of an image volume on this runtime:", "honoured" if "SUBPATH_HONOURED" in out else "ignored")
        # containerStatuses[].volumeMounts says what the spec says (upstream: readOnly from the volumeMount)
        assert container_status(api, pod, "c")["volumeMounts"][0] == {"name": "iv", "mountPath": "/iv"}
        # the CRI mounts as containerd keeps them: the image by its resolved id, read-only (the host path is the
        # directory containerd mounted the image on; what ckubelet sends is checked in tests/unit/volumes/host.c)
        cid = runtime.containers_of(pod, "c")[0]["id"]
        mounts = runtime.inspect(cid)["mounts"]
        iv = [m for m in mounts if m["containerPath"] in ("/iv", "/sub")]
        assert len(iv) == 2, mounts
        for m in iv:
            assert m["image"]["image"].startswith("sha256:") and m["readonly"], m
        print("image volume mounts in ContainerStatus:", iv)

        # the image GC (restarted with thresholds that make it collect every unused image at once) keeps the
        # image mounted as a volume and removes the unused canary (same content, another image)
        k.term()
        k.start("--read-only-port", str(api.port), "--image-gc-high-threshold", "1", "--image-gc-low-threshold",
                "0")
        wait_for(lambda: CANARY not in images(runtime), 90, msg="the image GC removing the unused canary")
        have = images(runtime)
        assert IMAGE in have, "the image GC removed an image in use as a volume"
        assert BUSYBOX in have
        assert runtime.running(pod, "c")
    finally:
        # stopped first (its GC would remove them again), then the other tests' images come back (the GC above
        # removed every unused one)
        rc = k.term() if k.alive() else 0
        import_tar(runtime, os.path.join(IMAGE_CACHE, "images.tar"))
    assert rc == 0, f"ckubelet exited with {rc} on SIGTERM"


def test_image_volume_never_pulled(kubelet_factory, runtime):
    """pullPolicy Never and the image absent: the container that mounts it waits with ErrImageNeverPull, the
    message upstream's image manager gives, and never starts; the pod's other containers are not held back."""
    k, api = start(kubelet_factory)
    missing = "docker.io/library/ckubelet-imgvol-missing:1"
    k.write("never.yaml", f"""\
apiVersion: v1
kind: Pod
metadata: {{name: never}}
spec:
  volumes: [{{name: iv, image: {{reference: "{missing}", pullPolicy: Never}}}}]
  containers:
  - {{name: c, image: {BUSYBOX}, command: ["sh", "-c", "{SLEEP}"], volumeMounts: [{{name: iv, mountPath: /iv}}]}}
  - {{name: other, image: {BUSYBOX}, command: ["sh", "-c", "{SLEEP}"]}}
""")
    pod = f"never-{NODE}"
    w = wait_for(lambda: waiting(api, pod, "c") if (waiting(api, pod, "c") or {}).get("reason") == "ErrImageNeverPull"
                 else None, 60, msg="ErrImageNeverPull")
    assert w["message"] == f'Container image "{missing}" is not present with pull policy of Never', w
    wait_for(lambda: runtime.running(pod, "other"), 60, msg="the other container running")
    assert not runtime.containers_of(pod, "c")


def test_image_volume_refused_by_containerd_1(kubelet_factory, runtime, image_tar):
    """containerd 1.6.20 predates the CRI mount's image (field 9): it reads the mount as a bind of an empty host
    path and CreateContainer fails ("failed to mkdir \"\""); the container waits with CreateContainerError and
    containerd's message, as upstream's kubelet v1.37.2 gets there (run standalone against containerd 1.6.20 with the
    same pod: the same reason and message)."""
    if containerd_major() >= 2:
        pytest.skip("containerd 2.x mounts image volumes (test_image_volume)")
    import_tar(runtime, image_tar)
    k, api = start(kubelet_factory)
    k.write("iv.yaml", imgvol_pod("iv", IMAGE))
    pod = f"iv-{NODE}"
    w = wait_for(lambda: waiting(api, pod, "c") if (waiting(api, pod, "c") or {}).get("reason") ==
                 "CreateContainerError" else None, 60, msg="CreateContainerError")
    print(f"\ncontainerd 1.6.20: {w}")
    assert 'failed to mkdir ""' in w["message"], w
    # the log says what is behind it
    k.wait_log(r'container c mounts the image volume "iv": the runtime must support the CRI mount\'s image', 10)
    assert not runtime.containers_of(pod, "c")
