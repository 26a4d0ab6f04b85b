#!/usr/bin/python3
"""Image pulls serialized (serializeImagePulls, the default) against parallel, on a private containerd.

  /usr/bin/python3 bench/pulls.py   (as root) [--images 10] [--layer-mb 8] [--repeat 3]

N distinct images (busybox with one extra layer of --layer-mb MB of random bytes each, so every pull fetches and
unpacks real data) are pushed to the local registry (scripts/registry.sh on 127.0.0.1:5000, started when not
running). For each mode, N static pods (one image each) are written at once to a fresh ckubelet; the figure is
the time from the first "Pulling image" to the last "Successfully pulled image" in its log, and from the
manifests written to the last container running. Between runs the images are removed from containerd. Modes:
serialized (default config), parallel with maxParallelImagePulls 3, parallel with no limit. Prints figures only.
"""
import argparse
import gzip
import hashlib
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
from harness import private_runtime  # noqa: E402
from conftest import IMAGE_CACHE, NODE, SCRIPTS, Kubelet, pod_manifest, wait_for  # noqa: E402
import results  # noqa: E402
from startup import klog_time  # noqa: E402

REG = "127.0.0.1:5000"
SLEEP = ["sleep", "3600"]
MODES = [("serialized", ""), ("parallel, max 3", "serializeImagePulls: false\nmaxParallelImagePulls: 3\n"),
         ("parallel, no limit", "serializeImagePulls: false\n")]


def blob_write(layout, data):
    digest = hashlib.sha256(data).hexdigest()
    with open(os.path.join(layout, "blobs", "sha256", digest), "wb") as f:
        f.write(data)
    return "sha256:" + digest


def blob_read(layout, digest):
    with open(os.path.join(layout, "blobs", "sha256", digest.split(":", 1)[1]), "rb") as f:
        return f.read()


def make_images(n, layer_mb):
    """An OCI layout with n images: busybox:1.36 plus a layer of random bytes each; returns (dir, refs)."""
    src = os.path.join(IMAGE_CACHE, "images.tar.dir")
    layout = tempfile.mkdtemp(prefix="ckubelet-bench-pulls-", dir="/var/tmp")
    shutil.copytree(src, layout, dirs_exist_ok=True)
    index = json.load(open(os.path.join(layout, "index.json")))
    base = next(m for m in index["manifests"]
                if m.get("annotations", {}).get("org.opencontainers.image.ref.name") == "docker.io/library/busybox:1.36")
    manifest = json.loads(blob_read(layout, base["digest"]))
    config = json.loads(blob_read(layout, manifest["config"]["digest"]))
    tag = uuid.uuid4().hex[:8]
    refs, layers, configs = [], [], []
    for i in range(n):
        raw = io.BytesIO()
        with tarfile.open(fileobj=raw, mode="w") as t:
            payload = os.urandom(layer_mb << 20)
            info = tarfile.TarInfo(f"pad/{i}")
            info.size = len(payload)
            t.addfile(info, io.BytesIO(payload))
        diff_id = "sha256:" + hashlib.sha256(raw.getvalue()).hexdigest()
        layer = gzip.compress(raw.getvalue(), compresslevel=1)
        cfg = json.loads(json.dumps(config))
        cfg["rootfs"]["diff_ids"].append(diff_id)
        cfg_bytes = json.dumps(cfg).encode()
        m = json.loads(json.dumps(manifest))
        configs.append(blob_write(layout, cfg_bytes))
        m["config"] = {**m["config"], "digest": configs[-1], "size": len(cfg_bytes)}
        layers.append(blob_write(layout, layer))
        m["layers"].append({"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": layers[-1],
                            "size": len(layer)})
        m_bytes = json.dumps(m).encode()
        name = f"ckbench-pull{i}-{tag}:v1"
        index["manifests"].append({"mediaType": "application/vnd.oci.image.manifest.v1+json",
                                   "digest": blob_write(layout, m_bytes), "size": len(m_bytes),
                                   "annotations": {"org.opencontainers.image.ref.name": name}})
        refs.append(name)
    with open(os.path.join(layout, "index.json"), "w") as f:
        json.dump(index, f)
    return layout, refs, layers, configs


def port_open(port):
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def content(rt):
    return subprocess.run(["ctr", "-a", rt.sock, "-n", "k8s.io", "content", "ls", "-q"], capture_output=True,
                          text=True, check=True).stdout.split()


def run_mode(rt, d, refs, layers, configs, extra_config):
    # every run fetches every layer: none of them is in containerd's content store (see the end)
    assert not set(layers) & set(content(rt)), "a layer of an earlier run is still in containerd"
    k = Kubelet(rt, os.path.join(d, f"kubelet-{uuid.uuid4().hex[:6]}"))
    k.extra_args = ["--v", "2"]
    with open(k.config, "a") as f:
        f.write(extra_config)
    k.start()
    try:
        time.sleep(1)
        t0 = time.time()
        for i, ref in enumerate(refs):
            k.write(f"p{i}.yaml", pod_manifest(f"p{i}", [("c", SLEEP, f"{REG}/{ref}", "IfNotPresent")]))
        wait_for(lambda: all(rt.running(f"p{i}-{NODE}") for i in range(len(refs))), 600, interval=0.1,
                 msg="all pods running")
        t1 = time.time()
        asked, pulled = [], []
        for line in k.log().splitlines():
            if "Pulling image: " in line and f'image="{REG}/' in line:
                asked.append(klog_time(line))
            elif "Successfully pulled image: " in line and f'image="{REG}/' in line:
                pulled.append(klog_time(line))
        assert len(asked) == len(pulled) == len(refs), (len(asked), len(pulled))
        return max(pulled) - min(asked), t1 - t0
    finally:
        for i in range(len(refs)):
            k.remove(f"p{i}.yaml")
        wait_for(lambda: not rt.pods(), 180, interval=0.2, msg="pods removed")
        k.term()
        # every name of each image (the CRI plugin keeps tag, repo@digest and the config's id), then until
        # containerd's GC has dropped the layers
        ctr = ["ctr", "-a", rt.sock, "-n", "k8s.io", "images"]
        names = subprocess.run(ctr + ["ls", "-q"], capture_output=True, text=True, check=True).stdout.split()
        names = [n for n in names if "/ckbench-pull" in n or n in configs]
        if names:
            subprocess.run(ctr + ["rm", "--sync", *names], capture_output=True, check=True)
        wait_for(lambda: not set(layers) & set(content(rt)), 120, interval=0.5, msg="layers collected")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--images", type=int, default=10)
    ap.add_argument("--layer-mb", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()

    out = {**results.header(), "images": a.images, "layer_mb": a.layer_mb, "repeat": a.repeat, "modes": {}}
    started = None
    if not port_open(5000):
        started = tempfile.mkdtemp(prefix="ckubelet-registry-", dir="/var/tmp")
        subprocess.run(["bash", os.path.join(SCRIPTS, "registry.sh"), "start", started], check=True)
    layout = None
    try:
        with private_runtime(61) as (rt, d):
            layout, refs, layers, configs = make_images(a.images, a.layer_mb)
            for ref in refs:
                subprocess.run(["skopeo", "copy", "--quiet", "--dest-tls-verify=false", f"oci:{layout}:{ref}",
                                f"docker://{REG}/{ref}"], check=True)
            print(f"image pulls: {a.images} distinct images (+{a.layer_mb} MB layer each) from {REG}, "
                  f"{os.cpu_count()} CPUs, median of {a.repeat}")
            for mode, cfg in MODES:
                runs = [run_mode(rt, d, refs, layers, configs, cfg) for _ in range(a.repeat)]
                pull = sorted(r[0] for r in runs)[len(runs) // 2]
                total = sorted(r[1] for r in runs)[len(runs) // 2]
                out["modes"][mode] = {"pulls_s": round(pull, 2), "all_running_s": round(total, 2),
                                      "runs": [[round(x, 2) for x in r] for r in runs]}
                print(f"  {mode:<20} first Pulling → last pulled {pull:6.2f} s   "
                      f"manifests written → all running {total:6.2f} s")
            results.write_json("pulls", out)
            plt = results.pyplot()
            fig, ax = plt.subplots(figsize=(7, 4))
            names = [m for m, _ in MODES]
            results.grouped_bars(ax, names, ["ckubelet"], {"ckubelet": [out["modes"][m]["pulls_s"] for m in names]},
                                 "s", f"{a.images} distinct images: first pull asked → last pulled")
            results.save_png(fig, "pulls", f"{out['date']}, {out['machine']['cpus']} CPUs "
                             f"{out['machine']['cpu_model']}")
    finally:
        if layout:
            shutil.rmtree(layout, ignore_errors=True)
        if started:
            subprocess.run(["bash", os.path.join(SCRIPTS, "registry.sh"), "stop", started], check=False)
            shutil.rmtree(started, ignore_errors=True)


if __name__ == "__main__":
    main()
