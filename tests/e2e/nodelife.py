"""Helpers of the node-pressure tests (test_nodelife.py): a small loop-mounted ext4 filesystem holding containerd's
root, the kubelet's root dir and the pod logs; a dedicated containerd on it; inotify through ctypes; test images
with their own random layers; cgroup memory figures."""
import ctypes
import hashlib
import io
import json
import os
import select
import shutil
import struct
import subprocess
import tarfile
import tempfile

from conftest import Runtime, wait_for


class SmallFs:
    """A fresh ext4 of `size_mib` on a loop device, mounted at <dir>/mnt: no reserved blocks and no journal, so that
    statvfs' available is all the free space and the figures move only with what the tests write."""

    def __init__(self, size_mib):
        self.dir = tempfile.mkdtemp(prefix="ckubelet-nodelife-", dir="/var/tmp")
        self.image = os.path.join(self.dir, "fs.img")
        self.mnt = os.path.join(self.dir, "mnt")
        os.makedirs(self.mnt)
        with open(self.image, "wb") as f:
            f.truncate(size_mib << 20)
        subprocess.run(["mkfs.ext4", "-q", "-F", "-m", "0", "-O", "^has_journal", "-E", "lazy_itable_init=0",
                        self.image], check=True)
        self.loop = subprocess.run(["losetup", "--find", "--show", self.image], check=True, capture_output=True,
                                   text=True).stdout.strip()
        subprocess.run(["mount", self.loop, self.mnt], check=True)

    def statvfs(self):
        s = os.statvfs(self.mnt)
        return s.f_blocks * s.f_frsize, s.f_bavail * s.f_frsize, s.f_files, s.f_favail

    def usage_percent(self):
        cap, avail, _, _ = self.statvfs()
        return 100 - (avail * 100 // cap)

    def fill(self, name, size):
        """A file of `size` bytes (real blocks) in the filesystem."""
        path = os.path.join(self.mnt, name)
        with open(path, "wb") as f:
            os.posix_fallocate(f.fileno(), 0, size)
        return path

    def destroy(self):
        for _ in range(50):
            if subprocess.run(["umount", self.mnt], capture_output=True).returncode == 0:
                break
            subprocess.run(["sleep", "0.2"])
        else:
            subprocess.run(["umount", "-l", self.mnt])
        subprocess.run(["losetup", "-d", self.loop])
        shutil.rmtree(self.dir, ignore_errors=True)


class SmallNode:
    """A containerd whose root and state live on a SmallFs (and so do the kubelets made with kubelet_dir())."""

    def __init__(self, size_mib=400):
        self.fs = SmallFs(size_mib)
        self.ctd_dir = os.path.join(self.fs.mnt, "containerd")
        os.makedirs(self.ctd_dir)
        # a bridge index of its own, next to the session's (0-89) ones
        self.runtime = Runtime(self.ctd_dir, 90 + os.getpid() % 10)
        self.runtime.start(env=dict(os.environ, CKUBELET_CONTAINERD_STATS_PERIOD="1"))
        self.import_images()

    def import_images(self, tar=None):
        self.runtime.import_images(tar)

    def kubelet_dir(self):
        return tempfile.mkdtemp(prefix="kubelet-", dir=self.fs.mnt)

    def destroy(self):
        try:
            self.runtime.clean()
        except Exception as e:
            print(f"cleaning the runtime failed: {e}")
        self.runtime.stop()
        self.fs.destroy()


def build_images(path, names, layer_mib):
    """An OCI layout tar of images, each with the busybox layer of build-oci-images.py's tar and one layer of
    `layer_mib` random bytes of its own (incompressible, so the sizes are what the runtime reports)."""
    d = path + ".dir"
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.join(d, "blobs", "sha256"))

    def blob(data):
        h = hashlib.sha256(data).hexdigest()
        with open(os.path.join(d, "blobs", "sha256", h), "wb") as f:
            f.write(data)
        return {"digest": "sha256:" + h, "size": len(data)}

    manifests = []
    for name in names:
        bio = io.BytesIO()
        with tarfile.open(fileobj=bio, mode="w") as t:
            data = os.urandom(layer_mib << 20)
            ti = tarfile.TarInfo("filler-" + hashlib.sha256(name.encode()).hexdigest()[:8])
            ti.size = len(data)
            t.addfile(ti, io.BytesIO(data))
        layer = bio.getvalue()
        ld = blob(layer)
        ld["mediaType"] = "application/vnd.oci.image.layer.v1.tar"
        cfg = {"architecture": "amd64", "os": "linux", "config": {"Cmd": ["sh"]},
               "rootfs": {"type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(layer).hexdigest()]}}
        cd = blob(json.dumps(cfg).encode())
        cd["mediaType"] = "application/vnd.oci.image.config.v1+json"
        m = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json", "config": cd,
             "layers": [ld]}
        md = blob(json.dumps(m).encode())
        md["mediaType"] = "application/vnd.oci.image.manifest.v1+json"
        md["annotations"] = {"org.opencontainers.image.ref.name": name, "io.containerd.image.name": name}
        manifests.append(md)
    with open(os.path.join(d, "index.json"), "w") as f:
        json.dump({"schemaVersion": 2, "manifests": manifests}, f)
    with open(os.path.join(d, "oci-layout"), "w") as f:
        f.write('{"imageLayoutVersion":"1.0.0"}')
    with tarfile.open(path, "w") as t:
        t.add(d, arcname=".")
    shutil.rmtree(d, ignore_errors=True)
    return path


# ---------------------------------------------------------------- inotify (ctypes, no third-party module)

IN_MODIFY = 0x2
IN_MOVED_FROM = 0x40
IN_CREATE = 0x100
_libc = ctypes.CDLL(None, use_errno=True)


class Inotify:
    def __init__(self, path, mask):
        self.fd = _libc.inotify_init1(os.O_CLOEXEC)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        if _libc.inotify_add_watch(self.fd, path.encode(), mask) < 0:
            raise OSError(ctypes.get_errno(), f"inotify_add_watch {path}")

    def events(self, timeout):
        """(mask, name) of what arrived within timeout seconds."""
        r, _, _ = select.select([self.fd], [], [], timeout)
        if not r:
            return []
        buf = os.read(self.fd, 65536)
        out, i = [], 0
        while i < len(buf):
            _, mask, _, n = struct.unpack_from("iIII", buf, i)
            name = buf[i + 16:i + 16 + n].rstrip(b"\0").decode()
            out.append((mask, name))
            i += 16 + n
        return out

    def close(self):
        os.close(self.fd)


# ---------------------------------------------------------------- cgroups

def memory_cgroup_dir(cgroup):
    """The memory hierarchy's directory of a cgroupfs path (v1 memory controller, else the unified one)."""
    if os.path.isdir("/sys/fs/cgroup/memory"):
        return "/sys/fs/cgroup/memory" + cgroup
    return "/sys/fs/cgroup" + cgroup


def working_set(cgroup_dir):
    """usage - inactive file, as the kubelet computes it (v1 total_inactive_file / v2 inactive_file)."""
    if os.path.exists(os.path.join(cgroup_dir, "memory.usage_in_bytes")):
        usage = int(open(os.path.join(cgroup_dir, "memory.usage_in_bytes")).read())
        key = "total_inactive_file"
    else:
        usage = int(open(os.path.join(cgroup_dir, "memory.current")).read())
        key = "inactive_file"
    inactive = 0
    for line in open(os.path.join(cgroup_dir, "memory.stat")):
        k, v = line.split()
        if k == key:
            inactive = int(v)
    return max(usage - inactive, 0)


def mem_total():
    for line in open("/proc/meminfo"):
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no MemTotal")


def wait_file(path, timeout=30):
    return wait_for(lambda: os.path.exists(path), timeout, msg=f"{path} to exist")
