#!/usr/bin/python3
"""The images `kubeadm init` asks for, built from local binaries without docker or a registry (issue 30).

    build-kubeadm-images.py OUT.tar BINDIR REPO VERSION ETCD_TAG PAUSE_TAG

writes an OCI image layout tar (for `ctr -n k8s.io images import`) with
    REPO/kube-apiserver:VERSION, REPO/kube-controller-manager:VERSION, REPO/kube-scheduler:VERSION,
    REPO/kube-proxy:VERSION       BINDIR/<name> at /usr/local/bin/<name> (kubeadm's manifests run the command by
                                  name; kube-proxy's DaemonSet by /usr/local/bin/kube-proxy); kube-proxy's image
                                  also has the machine's iptables (Debian 12's xtables-nft-multi with its
                                  iptables/ip6tables{,-save,-restore} names, its extensions and shared libraries,
                                  as ldd lists them): kube-proxy's iptables mode runs them
    REPO/etcd:ETCD_TAG            BINDIR/etcd at /usr/local/bin/etcd
    REPO/pause:PAUSE_TAG          busybox-static running `sleep infinity` (only kubeadm's preflight asks for it:
                                  the runtime's own sandbox image is what containerd runs)
Each image is one uncompressed layer over a common base (busybox-static and its applets in /bin, /etc/passwd,
/tmp), so `kubectl exec` into a control-plane pod has a shell. The binaries are static (CGO_ENABLED=0 builds of
scripts/build-kubernetes.sh). Idempotent: nothing is written when OUT.tar is newer than the binaries and this
script. Only the Python standard library."""
import hashlib
import io
import json
import os
import shutil
import sys
import tarfile

APPLETS = ["sh", "sleep", "echo", "cat", "true", "false", "ls", "env", "ps", "kill", "wget", "nc", "grep", "head",
           "tail", "mkdir", "rm", "id", "hostname", "date"]


def tar_layer(add):
    bio = io.BytesIO()
    with tarfile.open(fileobj=bio, mode="w", format=tarfile.PAX_FORMAT) as t:
        add(t)
    return bio.getvalue()


def add_dir(t, name, mode=0o755):
    ti = tarfile.TarInfo(name)
    ti.type, ti.mode = tarfile.DIRTYPE, mode
    t.addfile(ti)


def add_file(t, name, path=None, data=None, mode=0o755):
    if data is None:
        with open(path, "rb") as f:
            data = f.read()
    ti = tarfile.TarInfo(name)
    ti.size, ti.mode = len(data), mode
    t.addfile(ti, io.BytesIO(data))


def base(t):
    for d in ("bin", "etc", "proc", "sys", "dev", "usr", "usr/local", "usr/local/bin", "var", "var/run", "run"):
        add_dir(t, d)
    add_dir(t, "tmp", 0o1777)
    add_file(t, "bin/busybox", "/bin/busybox")
    for a in APPLETS:
        ti = tarfile.TarInfo("bin/" + a)
        ti.type, ti.linkname = tarfile.SYMTYPE, "busybox"
        t.addfile(ti)
    add_file(t, "etc/passwd", data=b"root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n",
             mode=0o644)
    add_file(t, "etc/nsswitch.conf", data=b"hosts: files dns\n", mode=0o644)


XTABLES = "/usr/sbin/xtables-nft-multi"
XTABLES_EXT = "/usr/lib/x86_64-linux-gnu/xtables"
XTABLES_NAMES = [f"{fam}{suffix}" for fam in ("iptables", "ip6tables")
                 for suffix in ("", "-save", "-restore", "-nft", "-nft-save", "-nft-restore")]


def shared_libs(paths):
    """The shared libraries paths need, as ldd resolves them (path as named -> real file)."""
    import subprocess
    libs = {}
    for p in paths:
        out = subprocess.run(["ldd", p], capture_output=True, text=True).stdout
        for line in out.splitlines():
            f = line.split()
            lib = f[2] if len(f) >= 3 and f[1] == "=>" else f[0] if f and f[0].startswith("/") else None
            if lib and lib.startswith("/"):
                libs[lib] = os.path.realpath(lib)
    return libs


def iptables_layer(t):
    """Debian's iptables (nf_tables variant, as the machine's own) for kube-proxy's image."""
    exts = sorted(os.path.join(XTABLES_EXT, f) for f in os.listdir(XTABLES_EXT) if f.endswith(".so"))
    dirs = set()
    for name in ["usr/sbin", XTABLES_EXT.lstrip("/")] + [os.path.dirname(l).lstrip("/")
                                                          for l in shared_libs([XTABLES] + exts)]:
        parts = name.split("/")
        for i in range(1, len(parts) + 1):
            d = "/".join(parts[:i])
            if d not in dirs:
                dirs.add(d)
                add_dir(t, d)
    add_file(t, XTABLES.lstrip("/"), XTABLES)
    for n in XTABLES_NAMES:
        ti = tarfile.TarInfo("usr/sbin/" + n)
        ti.type, ti.linkname = tarfile.SYMTYPE, "xtables-nft-multi"
        t.addfile(ti)
    for e in exts:
        add_file(t, e.lstrip("/"), e, mode=0o644)
    for lib, real in shared_libs([XTABLES] + exts).items():
        add_file(t, lib.lstrip("/"), real)
    if os.path.exists("/etc/protocols"):
        add_file(t, "etc/protocols", "/etc/protocols", mode=0o644)


def main():
    out, bindir, repo, version, etcd_tag, pause_tag = sys.argv[1:7]
    binaries = {"kube-apiserver": version, "kube-controller-manager": version, "kube-scheduler": version,
                "kube-proxy": version, "etcd": etcd_tag}
    sources = [os.path.join(bindir, b) for b in binaries] + [os.path.abspath(__file__), "/bin/busybox"] + \
        ([XTABLES] if os.path.exists(XTABLES) else [])
    if os.path.exists(out) and all(os.path.getmtime(out) > os.path.getmtime(s) for s in sources):
        return
    d = out + ".dir"
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.join(d, "blobs", "sha256"))

    def blob(data, media):
        h = hashlib.sha256(data).hexdigest()
        with open(os.path.join(d, "blobs", "sha256", h), "wb") as f:
            f.write(data)
        return {"mediaType": media, "digest": "sha256:" + h, "size": len(data)}

    def image(ref, layers, entrypoint=None):
        cfg = {"architecture": "amd64", "os": "linux",
               "config": {"Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]},
               "rootfs": {"type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(l).hexdigest() for l in layers]}}
        if entrypoint:
            cfg["config"]["Entrypoint"] = entrypoint
        m = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
             "config": blob(json.dumps(cfg).encode(), "application/vnd.oci.image.config.v1+json"),
             "layers": [blob(l, "application/vnd.oci.image.layer.v1.tar") for l in layers]}
        md = blob(json.dumps(m).encode(), "application/vnd.oci.image.manifest.v1+json")
        md["annotations"] = {"org.opencontainers.image.ref.name": ref, "io.containerd.image.name": ref}
        return md

    common = tar_layer(base)
    manifests = [image(f"{repo}/pause:{pause_tag}", [common], ["sleep", "infinity"])]
    for name, tag in binaries.items():
        layer = tar_layer(lambda t: add_file(t, "usr/local/bin/" + name, os.path.join(bindir, name)))
        extra = [tar_layer(iptables_layer)] if name == "kube-proxy" and os.path.exists(XTABLES) else []
        manifests.append(image(f"{repo}/{name}:{tag}", [common] + extra + [layer]))
    with open(os.path.join(d, "index.json"), "w") as f:
        json.dump({"schemaVersion": 2, "manifests": manifests}, f)
    with open(os.path.join(d, "oci-layout"), "w") as f:
        f.write('{"imageLayoutVersion":"1.0.0"}')
    with tarfile.open(out + ".tmp", "w") as t:
        t.add(d, arcname=".")
    os.rename(out + ".tmp", out)
    shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
