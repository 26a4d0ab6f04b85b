"""The images upstream's node conformance specs (e2e_node.test v1.37.2) use, as stand-ins built without docker or
a registry, into one OCI image layout tar for `ctr -n k8s.io images import` (what scripts/containerd.sh import
does): each image is one layer made here, under the name the specs ask for (test/utils/image/manifest.go of
k8s.io/kubernetes v1.37.2).

    images.py OUT.tar BIN_DIR TOOLS_DIR

BIN_DIR has agnhost and nonewprivs (built from k8s.io/kubernetes v1.37.2 by scripts/build-kubernetes.sh with
CKUBELET_K8S_E2E_NODE=1); TOOLS_DIR has nmeter and pause (static programs of tests/conformance/*.c).

What each stand-in is (upstream's image in brackets):
- busybox 1.37.0-2 [busybox:1.37.0]: Debian's busybox-static with every applet linked in /bin, plus /bin/nmeter
  (Debian's busybox lacks the applet; the container lifecycle specs time their steps with it).
- agnhost 2.66.1 and 2.55 [alpine with agnhost]: /agnhost (entrypoint, `pause` by default) and /agnhost-2, the
  busybox layer's tools, /usr/bin/curl (a script: GET with busybox's wget), /bin/bash (Debian's bash-static), a
  self-signed /localhost.crt and /localhost.key (openssl), the user user-defined-in-image (1000) in group
  group-defined-in-image (50000), /uploads.
- nginx 1.27.0-2 and 1.28.0-2 [nginx on debian]: busybox's httpd serving /usr/share/nginx/html on port 80.
- nonroot 1.5 [debian-base, USER 1234]: busybox, user 1234.
- nonewprivs 1.4 [alpine with nnp]: /usr/local/bin/nnp set-user-ID root (prints its effective uid), the command.
- pause 3.10.2, and 3.9 (containerd.sh's sandbox_image) [pause]: /pause.
Only the Python standard library, and openssl's command line for the certificate."""
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile

E2E = "registry.k8s.io/e2e-test-images"
PATH_ENV = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
PASSWD = "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"
GROUP = "root:x:0:\nnobody:x:65534:\n"

# agnhost's alpine has curl; the lifecycle hook specs run `sh -c "curl http://<ip>:8080/echo?msg=poststart"`:
# the URL fetched with busybox's wget (options with a value skipped, the others ignored)
CURL = """#!/bin/sh
# curl stand-in of the conformance tier's agnhost image (tests/conformance/images.py): GET the URL with wget
url=
while [ $# -gt 0 ]; do
        case "$1" in
        -X | -H | -d | -m | -o | -w | -u | -A | --max-time | --connect-timeout | --retry) shift ;;
        -*) ;;
        *) url=$1 ;;
        esac
        shift
done
exec wget -q -O - "$url"
"""


class Layer:
    def __init__(self):
        self.bio = io.BytesIO()
        self.tar = tarfile.open(fileobj=self.bio, mode="w", format=tarfile.PAX_FORMAT)
        self.dirs = set()

    def dir(self, path, mode=0o755):
        parts = path.strip("/").split("/")
        for i in range(1, len(parts) + 1):
            p = "/".join(parts[:i])
            if p in self.dirs:
                continue
            self.dirs.add(p)
            ti = tarfile.TarInfo(p)
            ti.type, ti.mode, ti.mtime = tarfile.DIRTYPE, (mode if i == len(parts) else 0o755), 0
            self.tar.addfile(ti)

    def file(self, path, data, mode=0o644):
        self.dir(os.path.dirname(path))
        if isinstance(data, str):
            data = data.encode()
        ti = tarfile.TarInfo(path.strip("/"))
        ti.size, ti.mode, ti.mtime = len(data), mode, 0
        self.tar.addfile(ti, io.BytesIO(data))

    def link(self, path, target):
        self.dir(os.path.dirname(path))
        ti = tarfile.TarInfo(path.strip("/"))
        ti.type, ti.linkname, ti.mode, ti.mtime = tarfile.SYMTYPE, target, 0o777, 0
        self.tar.addfile(ti)

    def bytes(self):
        self.tar.close()
        return self.bio.getvalue()


def busybox_base(layer, tools, passwd=PASSWD, group=GROUP):
    """Debian's busybox-static with every applet in /bin (as the busybox image has them), nmeter, the usual
    directories, /etc/passwd and /etc/group."""
    with open("/bin/busybox", "rb") as f:
        layer.file("bin/busybox", f.read(), 0o755)
    applets = subprocess.run(["/bin/busybox", "--list"], capture_output=True, text=True, check=True).stdout.split()
    for a in applets:
        if a not in ("busybox", "linuxrc") and "/" not in a:
            layer.link("bin/" + a, "busybox")
    with open(os.path.join(tools, "nmeter"), "rb") as f:
        layer.file("bin/nmeter", f.read(), 0o755)
    for d in ("dev", "proc", "sys", "etc", "root", "home", "var", "usr/bin", "usr/sbin", "usr/local/bin", "sbin"):
        layer.dir(d, 0o700 if d == "root" else 0o755)
    layer.dir("tmp", 0o1777)
    layer.dir("var/tmp", 0o1777)
    layer.file("etc/passwd", passwd)
    layer.file("etc/group", group)


def self_signed_localhost():
    """A self-signed certificate for localhost and its key, PEM (openssl's command line)."""
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        crt, key = os.path.join(d, "localhost.crt"), os.path.join(d, "localhost.key")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "3650", "-subj",
                        "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-keyout", key,
                        "-out", crt], check=True, capture_output=True)
        with open(crt, "rb") as f, open(key, "rb") as g:
            return f.read(), g.read()


def images(bindir, tools):
    """name -> (layer bytes, image config 'config' part); layers shared by content."""
    def read(d, name):
        with open(os.path.join(d, name), "rb") as f:
            return f.read()

    out = {}
    # busybox
    L = Layer()
    busybox_base(L, tools)
    out[f"{E2E}/busybox:1.37.0-2"] = (L.bytes(), {"Env": [PATH_ENV], "Cmd": ["sh"]})
    # agnhost
    L = Layer()
    busybox_base(L, tools, PASSWD + "user-defined-in-image:x:1000:1000::/home/user-defined-in-image:/bin/sh\n",
                 GROUP + "user-defined-in-image:x:1000:\ngroup-defined-in-image:x:50000:user-defined-in-image\n")
    L.dir("home/user-defined-in-image")
    L.file("agnhost", read(bindir, "agnhost"), 0o755)
    L.link("agnhost-2", "agnhost")
    L.dir("uploads")
    L.file("usr/bin/curl", CURL, 0o755)
    # alpine's bash in agnhost (the probe specs run `/bin/bash -c` with bash's trap names): Debian's bash-static
    # (installed by install-deps.sh --test), else busybox's sh
    if os.path.exists("/bin/bash-static"):
        L.file("bin/bash", read("/bin", "bash-static"), 0o755)
    else:
        L.link("bin/bash", "busybox")
    # the image's /localhost.crt and /localhost.key ("agnhost netexec --tls-cert-file", the https hook specs)
    crt, key = self_signed_localhost()
    L.file("localhost.crt", crt, 0o644)
    L.file("localhost.key", key, 0o600)
    agn = (L.bytes(), {"Env": [PATH_ENV], "Entrypoint": ["/agnhost"], "Cmd": ["pause"],
                       "ExposedPorts": {f"{p}/tcp": {} for p in (80, 8080, 8081, 9376, 5000)}})
    out[f"{E2E}/agnhost:2.66.1"] = agn
    out[f"{E2E}/agnhost:2.55"] = agn
    # nginx
    L = Layer()
    busybox_base(L, tools)
    L.file("usr/share/nginx/html/index.html", "<html><body>nginx stand-in (busybox httpd)</body></html>\n")
    ngx = (L.bytes(), {"Env": [PATH_ENV], "Cmd": ["httpd", "-f", "-p", "80", "-h", "/usr/share/nginx/html"],
                       "ExposedPorts": {"80/tcp": {}}, "StopSignal": "SIGQUIT"})
    out[f"{E2E}/nginx:1.27.0-2"] = ngx
    out[f"{E2E}/nginx:1.28.0-2"] = ngx
    # nonroot
    L = Layer()
    busybox_base(L, tools)
    out[f"{E2E}/nonroot:1.5"] = (L.bytes(), {"Env": [PATH_ENV], "Cmd": ["sh"], "User": "1234"})
    # nonewprivs
    L = Layer()
    busybox_base(L, tools)
    L.file("usr/local/bin/nnp", read(bindir, "nonewprivs"), 0o4755)
    out[f"{E2E}/nonewprivs:1.4"] = (L.bytes(), {"Env": [PATH_ENV], "Cmd": ["nnp"]})
    # pause
    L = Layer()
    L.file("pause", read(tools, "pause"), 0o755)
    pause = (L.bytes(), {"Env": [PATH_ENV], "Entrypoint": ["/pause"]})
    out["registry.k8s.io/pause:3.10.2"] = pause
    out["registry.k8s.io/pause:3.9"] = pause
    return out


def blob(d, data):
    h = hashlib.sha256(data).hexdigest()
    os.makedirs(f"{d}/blobs/sha256", exist_ok=True)
    p = f"{d}/blobs/sha256/{h}"
    if not os.path.exists(p):
        with open(p, "wb") as f:
            f.write(data)
    return {"digest": "sha256:" + h, "size": len(data)}


def write_layout(out, imgs):
    d = out + ".dir"
    os.makedirs(d, exist_ok=True)
    manifests = []
    for ref, (layer, config) in sorted(imgs.items()):
        ld = dict(blob(d, layer), mediaType="application/vnd.oci.image.layer.v1.tar")
        cfg = {"architecture": "amd64", "os": "linux", "config": config,
               "rootfs": {"type": "layers", "diff_ids": [ld["digest"]]}}
        cd = dict(blob(d, json.dumps(cfg, sort_keys=True).encode()),
                  mediaType="application/vnd.oci.image.config.v1+json")
        m = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json", "config": cd,
             "layers": [ld]}
        md = dict(blob(d, json.dumps(m, sort_keys=True).encode()),
                  mediaType="application/vnd.oci.image.manifest.v1+json")
        md["annotations"] = {"org.opencontainers.image.ref.name": ref, "io.containerd.image.name": ref}
        manifests.append(md)
    with open(f"{d}/index.json", "w") as f:
        json.dump({"schemaVersion": 2, "manifests": manifests}, f)
    with open(f"{d}/oci-layout", "w") as f:
        f.write('{"imageLayoutVersion":"1.0.0"}')
    tmp = out + ".tmp"
    with tarfile.open(tmp, "w") as t:
        t.add(d, arcname=".")
    os.rename(tmp, out)


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: images.py OUT.tar BIN_DIR TOOLS_DIR")
    out, bindir, tools = sys.argv[1:]
    imgs = images(bindir, tools)
    write_layout(out, imgs)
    for ref in sorted(imgs):
        print(ref)


if __name__ == "__main__":
    main()
