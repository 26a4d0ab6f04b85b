"""A node that runs for months (issue 13), on a small filesystem made for these tests (a loop-mounted ext4 holding
containerd's root, the kubelet's root dir and the pod logs) with thresholds computed from what the tests read at the
start: container log rotation (following through it, links, kill -9 in the middle), image garbage collection,
memory and local-storage eviction with the node conditions, and a kill -9 in the middle of an eviction."""
import gzip
import json
import os
import re
import signal
import subprocess
import textwrap
import threading
import time

import pytest

from apiclient import Client
from conftest import BUSYBOX, NODE, Kubelet, pod_manifest, remove_cgroup_root, wait_for
from nodelife import (IN_CREATE, IN_MOVED_FROM, Inotify, SmallNode, build_images, mem_total, memory_cgroup_dir,
                      working_set)

MIB = 1 << 20


@pytest.fixture(scope="module")
def node():
    n = SmallNode(400)
    yield n
    n.destroy()


@pytest.fixture
def kubelets(node, request):
    """Kubelets on the small node; every one is stopped (SIGTERM, exit 0 required) and the runtime emptied after."""
    made = []

    def make(config="", *args, start=True, node_name=NODE):
        k = Kubelet(node.runtime, node.kubelet_dir(), node=node_name)
        with open(k.config, "a") as f:
            f.write(textwrap.dedent(config))
        k.links = os.path.join(k.dir, "containers")
        k.extra_args = ["--container-logs-dir", k.links, "--pod-infra-container-image", "registry.k8s.io/pause:3.9",
                        *args]
        made.append(k)
        if start:
            k.start()
        return k

    yield make
    failed = getattr(request.node, "rep_call", None) is not None and request.node.rep_call.failed
    bad = []
    for k in made:
        if k.alive():
            k.proc.send_signal(signal.SIGTERM)
            try:
                rc = k.proc.wait(15)
            except subprocess.TimeoutExpired:
                k.proc.kill()
                rc = "hung on SIGTERM"
            if rc != 0:
                bad.append((k.logfile, rc))
        if failed or bad:
            print(f"----- {k.logfile} (last 150 lines)")
            print("\n".join(k.log().splitlines()[-150:]))
    node.runtime.clean()
    for k in made:
        remove_cgroup_root(k.cgroup_root)
    assert not bad, f"ckubelet did not exit cleanly on SIGTERM: {bad}"


@pytest.fixture
def kube_node(cluster, request):
    """The test's node and namespace on the real control plane (controlplane.Kube). A test asks for it before
    `kubelets`, so that its kubelets stop before the node's pods, namespace and node are removed; any request of the
    node that the apiserver refused fails the test."""
    from controlplane import Kube
    k = Kube(cluster, None, request.node.name)
    k.setup()
    yield k
    refused = k.refused_requests()
    k.cleanup()
    assert not refused, "the apiserver refused requests of the kubelet:\n" + "\n".join(refused)


# ---------------------------------------------------------------- container logs

# a steady writer: numbered lines, about 60 KB/s
CHATTY = ["sh", "-c", "i=0; while true; do j=0; while [ $j -lt 100 ]; do echo \"seq $i padding-padding-padding\"; "
                      "i=$((i+1)); j=$((j+1)); done; sleep 0.05; done"]


def seqs(text):
    return [int(m) for m in re.findall(r"^seq (\d+) ", text, re.M)]


def log_files(d):
    return sorted(f for f in os.listdir(d) if f.startswith("0.log"))


def read_cri_log(path):
    """The content of a CRI log file (gzip or not), one entry per line."""
    data = gzip.open(path).read() if path.endswith(".gz") else open(path, "rb").read()
    out = []
    for line in data.decode(errors="replace").splitlines():
        parts = line.split(" ", 3)
        if len(parts) == 4:
            out.append(parts[3])
    return "\n".join(out) + "\n"


def all_logged(d):
    """Every sequence number in the container's log files, oldest file first (read again if a rotation happened
    while reading)."""
    while True:
        before = log_files(d)
        out = []
        try:
            for f in before:
                if f.endswith(".tmp") or f == "0.log":
                    continue
                out += seqs(read_cri_log(os.path.join(d, f)))
            if "0.log" in before:
                out += seqs(read_cri_log(os.path.join(d, "0.log")))
        except FileNotFoundError:
            continue  # compressed or rotated meanwhile
        if log_files(d) == before:
            return out


def assert_contiguous(numbers, what):
    assert numbers, f"{what}: nothing"
    gaps = [(a, b) for a, b in zip(numbers, numbers[1:]) if b != a + 1]
    assert not gaps, f"{what}: lost or repeated lines around {gaps[:5]} (of {len(numbers)} lines)"


class Follower(threading.Thread):
    """GET /containerLogs?follow=true, kept in the background."""

    def __init__(self, client, path):
        super().__init__(daemon=True)
        self.client, self.path = client, path
        self.data, self.error = b"", None
        self.conn = client.conn(timeout=120)
        self.done = threading.Event()

    def run(self):
        try:
            self.conn.request("GET", self.path)
            r = self.conn.getresponse()
            while not self.done.is_set():
                chunk = r.read1(65536) if hasattr(r, "read1") else r.read(65536)
                if not chunk:
                    break
                self.data += chunk
        except Exception as e:  # closed by stop()
            if not self.done.is_set():
                self.error = e

    def stop(self):
        self.done.set()
        try:
            self.conn.sock.shutdown(2)
        except Exception:
            pass
        self.join(10)
        return self.data.decode(errors="replace")


LOG_CONFIG = """\
    containerLogMaxSize: 96Ki
    containerLogMaxFiles: {files}
    containerLogMonitorInterval: 3s
    """


def test_log_rotation_follow_and_links(node, kubelets):
    k = kubelets(LOG_CONFIG.format(files=4), "--anonymous-auth", "--authorization-mode", "AlwaysAllow")
    k.write("chatty.yaml", pod_manifest("chatty", [("c", CHATTY)], grace=1))
    c = wait_for(lambda: node.runtime.running("chatty-testnode", "c"), 60, msg="chatty running")[0]
    uid = c["labels"]["io.kubernetes.pod.uid"]
    d = os.path.join(k.pod_log_dir("chatty-testnode", uid), "c")
    link = os.path.join(k.links, f"chatty-testnode_default_c-{c['id']}.log")
    # the link to the live file, made when the container started
    wait_for(lambda: os.path.islink(link), 20, msg=f"{link}")
    assert os.readlink(link) == os.path.join(d, "0.log")

    api = Client(k.port)
    fol = Follower(api, "/containerLogs/default/chatty-testnode/c?follow=true")
    fol.start()
    # rotations at the size limit: at most 4 files, all rotated ones but the newest gzipped
    seen_max, t0 = 0, time.monotonic()
    rotated = set()
    while time.monotonic() - t0 < 90:
        files = log_files(d)
        seen_max = max(seen_max, len([f for f in files if not f.endswith(".tmp")]))
        rotated |= {f for f in files if f != "0.log" and not f.endswith(".tmp")}  # .tmp: being compressed
        if len({f.removesuffix(".gz") for f in rotated}) >= 4:
            break
        time.sleep(0.2)
    names = {f.removesuffix(".gz") for f in rotated}
    assert len(names) >= 4, f"rotations seen: {sorted(rotated)}"
    for f in names:
        assert re.fullmatch(r"0\.log\.\d{8}-\d{6}", f), f
    assert seen_max <= 4, f"more than containerLogMaxFiles files: {seen_max}"

    def settled():
        """between two rotation passes: no compression under way, every rotated file but the newest gzipped"""
        files = log_files(d)
        old = sorted(f for f in files if f != "0.log")
        return not any(f.endswith(".tmp") for f in files) and old and \
            all(f.endswith(".gz") for f in old[:-1]) and not old[-1].endswith(".gz")
    wait_for(settled, 10, msg=f"the rotated files of {d} settled")
    text = fol.stop()
    assert fol.error is None, fol.error
    # the follower went through every rotation: no line lost or repeated
    got = seqs(text)
    assert_contiguous(got, "the follower")
    print(f"\nlog rotation: {len(names)} rotations, the follower read {len(got)} lines "
          f"({got[0]}..{got[-1]}) without a gap or a repeat")
    # and on disk, what is kept is contiguous too
    assert_contiguous(all_logged(d), "the files kept")

    # the link goes with the container
    k.remove("chatty.yaml")
    wait_for(lambda: not node.runtime.containers_of("chatty-testnode"), 60, msg="chatty removed")
    wait_for(lambda: not os.path.lexists(link), 30, msg=f"{link} removed")


def test_kill9_during_rotation(node, kubelets):
    """kill -9 right after the live log was renamed (before the runtime reopened it) and while an old one is
    compressed: after a restart the live log is back, rotation goes on, nothing is lost or doubled."""
    k = kubelets(LOG_CONFIG.format(files=20))
    k.write("chatty.yaml", pod_manifest("chatty", [("c", CHATTY)], grace=1))
    c = wait_for(lambda: node.runtime.running("chatty-testnode", "c"), 60, msg="chatty running")[0]
    d = os.path.join(k.pod_log_dir("chatty-testnode", c["labels"]["io.kubernetes.pod.uid"]), "c")
    wait_for(lambda: os.path.isdir(d), 20)
    interrupted = []

    def kill_on(mask, pred, what):
        ino = Inotify(d, mask)
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                for m, name in ino.events(1):
                    if m & mask and pred(name):
                        k.kill9()
                        interrupted.append((what, sorted(os.listdir(d))))
                        return
        finally:
            ino.close()
        raise AssertionError(f"no {what} within 60 s: {os.listdir(d)}")

    # 1. while compressing an older rotated file (its .tmp appears), 2. between the rename and the reopen
    kill_on(IN_CREATE, lambda n: n.endswith(".tmp"), "compression")
    k.start()
    kill_on(IN_MOVED_FROM, lambda n: n == "0.log", "rotation")
    live_missing = "0.log" not in interrupted[-1][1]
    if not live_missing:
        # the runtime reopened the log before the kill landed: leave the state a kill between the rename and the
        # reopen leaves (the runtime writing to the renamed file, no live log), as the kubelet would have
        os.rename(os.path.join(d, "0.log"), os.path.join(d, "0.log." + time.strftime("%Y%m%d-%H%M%S") + "9"))
    k.start()
    # the live log is there again (reopened by the next monitor pass) and rotation goes on
    wait_for(lambda: os.path.exists(os.path.join(d, "0.log")), 30, msg="the live log back")
    k.wait_log(r"Reopened the missing log of container", 10)
    n_rot = len([f for f in log_files(d) if f != "0.log"])
    wait_for(lambda: len([f for f in log_files(d) if f != "0.log"]) > n_rot, 60, msg="another rotation")
    # what the interrupted compression left was cleaned up by the next rotation
    assert not [f for f in log_files(d) if f.endswith(".tmp") and f in interrupted[0][1]], log_files(d)
    got = all_logged(d)
    assert_contiguous(got, "all log files")
    assert got[0] == 0, f"the first line is gone: {got[:3]}"
    print(f"\nkill -9 during compression ({interrupted[0][1]}) and rotation (live log "
          f"{'missing' if live_missing else 'reopened already, renamed back by the test'}): {len(got)} lines kept, none lost or doubled")


# ---------------------------------------------------------------- image garbage collection

GC_IMAGES = ["example.com/gc/a:1", "example.com/gc/b:1", "example.com/gc/c:1"]


def images(runtime):
    return {t: i for i in runtime.json("images")["images"] for t in i.get("repoTags", [])}


def test_image_gc(node, kubelets, tmp_path):
    # three unused images of 10 MiB (their own random layers), busybox in use by a running pod, the pause image
    node.import_images(build_images(str(tmp_path / "gc.tar"), GC_IMAGES, 10))
    cap, _, _, _ = node.fs.statvfs()
    # containerd 2.x's CRI image store follows its image events: an image imported a moment ago may not be listed yet
    have = wait_for(lambda: (lambda h: all(t in h for t in GC_IMAGES) and h)(images(node.runtime)), 30,
                    msg="the imported images listed by the runtime")
    sizes = {t: int(have[t]["size"]) for t in GC_IMAGES}

    # thresholds from what the filesystem holds now: high 10 points above the usage, low 4 below high (4% of the
    # filesystem is more than one image and less than two)
    high = node.fs.usage_percent() + 10
    low = high - 4
    k = kubelets(f"""\
        imageGCHighThresholdPercent: {high}
        imageGCLowThresholdPercent: {low}
        evictionHard: {{memory.available: 1Mi}}
        """)
    k.write("user.yaml", pod_manifest("user", [("c", ["sleep", "3600"])]))
    wait_for(lambda: node.runtime.running("user-testnode"), 60, msg="the busybox pod running")
    # fill the filesystem to just above the high threshold
    _, avail, _, _ = node.fs.statvfs()
    target = cap * (100 - high) // 100 - MIB
    filler = node.fs.fill("filler", max(avail - target, 0))
    try:
        assert node.fs.usage_percent() >= high
        amount = cap * (100 - low) // 100 - node.fs.statvfs()[1]
        # the eviction manager sees the image filesystem above the high threshold within its period and the image GC
        # collects least recently used images until the reported sizes add up to what takes it to the low one
        wait_for(lambda: any(t not in images(node.runtime) for t in GC_IMAGES), 60, msg="an image collected")
        k.wait_log(r"Disk usage on image filesystem is over the high threshold", 5)
        # the pass is over (every removal it chose is done) before the images left are counted
        k.wait_log(r"over the high threshold[\s\S]*Image garbage collection succeeded", 30)
        wait_for(lambda: node.fs.usage_percent() <= low, 30, msg=f"usage down to {low}%")
        # the images present at the start count as detected long ago (upstream's initial detection): the first pass
        # finds them old enough although imageMinimumGCAge is the default 2m
        assert "FreeDiskSpaceFailed" not in k.log()
        left = images(node.runtime)
        removed = [t for t in GC_IMAGES if t not in left]
        need = 0
        for n_removed in range(1, 4):
            need = sum(sorted(sizes.values())[:n_removed])
            if need >= amount:
                break
        assert len(removed) == n_removed, (removed, amount, sizes)
        assert BUSYBOX in left, "an image in use was removed"
        assert "registry.k8s.io/pause:3.9" in left, "the sandbox image was removed"
        print(f"\nimage GC: usage at {high}% (high {high}%, low {low}%): {len(removed)} unused images of "
              f"{[sizes[t] >> 20 for t in removed]} MiB removed for {amount >> 20} MiB, usage now "
              f"{node.fs.usage_percent()}%")
        # the last-used times are saved under the root dir for the next start
        state = json.load(open(os.path.join(k.root, "image-gc-state.json")))
        assert have[BUSYBOX]["id"] in state["images"] and state["images"][have[BUSYBOX]["id"]].get("lastUsed")

        # not enough to free: FreeDiskSpaceFailed
        os.unlink(filler)
        _, avail, _, _ = node.fs.statvfs()
        filler = node.fs.fill("filler", max(avail - cap * (100 - high) // 100 + 6 * (cap // 100), 0))
        k.wait_log(r"FreeDiskSpaceFailed.*Failed to garbage collect required amount of images\. Attempted to free "
                   r"\d+ bytes, but only found \d+ bytes eligible to free\.", 60)
    finally:
        os.unlink(filler)
    # a restart keeps the records
    k.restart()
    k.wait_log(r"image GC: \d+ image records loaded from", 10)


# ---------------------------------------------------------------- eviction

def join(kubelets, kube, config, *args):
    return kubelets(config, "--kubeconfig", kube.kubeconfig, "--node-status-update-frequency", "1s",
                    "--client-ca-file", kube.cp.ca, *args, node_name=kube.node)


def api_pod(kube, name, containers, extra_spec=None):
    spec = {"nodeName": kube.node, "containers": containers}
    spec.update(extra_spec or {})
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def ctr(name, command, **kw):
    c = {"name": name, "image": BUSYBOX, "command": command}
    c.update(kw)
    return c


GUARANTEED = {"limits": {"cpu": "100m", "memory": "64Mi"}, "requests": {"cpu": "100m", "memory": "64Mi"}}


def node_condition(kube, t):
    n = kube.node_obj()
    c = next((c for c in (n or {}).get("status", {}).get("conditions", []) if c["type"] == t), None)
    return c and c["status"]


def phase(kube, name):
    p = kube.pod(name)
    return p and p.get("status", {}).get("phase")


def evicted(kube, name):
    p = kube.pod(name)
    st = (p or {}).get("status", {})
    return st.get("phase") == "Failed" and st.get("reason") == "Evicted" and p


def running_restarts(kube, name):
    """The restarts of a pod whose containers all run, None when they do not."""
    p = kube.pod(name)
    cs = (p or {}).get("status", {}).get("containerStatuses", [])
    if not (p and p["status"].get("phase") == "Running" and cs and all("running" in c["state"] for c in cs)):
        return None
    return sum(c["restartCount"] for c in cs)


def pod_events(kube, name, reason):
    return kube.events(involved=name, reason=reason)


def klog_time(line):
    """seconds of the day of a klog line's timestamp"""
    m = re.match(r"[IWE]\d{4} (\d\d):(\d\d):(\d\d\.\d+)", line)
    return int(m.group(1)) * 3600 + int(m.group(2)) * 60 + float(m.group(3))


class WorkingSetWatch(threading.Thread):
    """Samples a cgroup's working set every 5 ms; the first time it is above `limit`."""

    def __init__(self, cgroup_dir, limit):
        super().__init__(daemon=True)
        self.dir, self.limit = cgroup_dir, limit
        self.crossed = None
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set() and self.crossed is None:
            try:
                if working_set(self.dir) > self.limit:
                    self.crossed = time.monotonic()
            except OSError:
                pass
            time.sleep(0.005)


def memory_kubelet(kubelets, kube, allocatable_mib, threshold_mib, extra=""):
    """A kubelet whose pods' cgroup (kubepods) may hold allocatable_mib: the hard threshold memory.available <
    threshold_mib applies to it (allocatableMemory.available) and not to the whole machine, whatever else runs on it."""
    reserved = mem_total() - allocatable_mib * MIB
    return join(kubelets, kube, textwrap.dedent(f"""\
        evictionHard: {{memory.available: {threshold_mib}Mi}}
        evictionPressureTransitionPeriod: 8s
        """) + textwrap.dedent(extra), "--system-reserved", f"memory={reserved}")


def test_memory_eviction(node, kube_node, kubelets):
    kube = kube_node
    node.import_images()
    k = memory_kubelet(kubelets, kube, 700, 300)
    kube.wait(lambda: node_condition(kube, "Ready") == "True", timeout=30)
    kube.create("pods", api_pod(kube, "guaranteed", [ctr("app", ["sleep", "3600"], resources=GUARANTEED)]))
    wait_for(lambda: running_restarts(kube, "guaranteed") == 0, 60, msg="guaranteed running")
    # the pods' cgroup may hold 700Mi; evicted when less than 300Mi is left, i.e. a working set above 400Mi
    watch = WorkingSetWatch(memory_cgroup_dir(k.cgroup_root + "/kubepods"), 400 * MIB)
    watch.start()
    kube.create("pods", api_pod(kube, "hog", [ctr("hog", ["sh", "-c", "sleep 1; dd if=/dev/zero bs=450M count=1 | sleep 3600"])]))
    p = kube.wait(lambda: evicted(kube, "hog"), timeout=60, msg="hog evicted", interval=0.05)
    seen = time.monotonic()
    watch.stop.set()
    st = p["status"]
    assert re.fullmatch(r"The node was low on resource: memory\. Threshold quantity: 300Mi, available: \d+Ki\. "
                        r"Container hog was using \d+Ki, which exceeds its request of 0\. ", st["message"]), st["message"]
    dt = next(c for c in st["conditions"] if c["type"] == "DisruptionTarget")
    assert dt["status"] == "True" and dt["reason"] == "TerminationByKubelet" and dt["message"] == st["message"]
    assert kube.wait(lambda: pod_events(kube, "hog", "Evicted"), timeout=20)[0]["message"] == st["message"]
    # the crossing and the reaction, as the kubelet logged them, and as the test saw them
    log = k.log()
    crossed = [l for l in log.splitlines() if "memory eviction threshold crossed" in l]
    decided = [l for l in log.splitlines() if "Evicting pod" in l and "hog" in l]
    assert decided, "no eviction in the log"
    if watch.crossed is not None:
        print(f"\nmemory eviction: working set above 400Mi -> pod status Evicted seen in "
              f"{(seen - watch.crossed) * 1000:.0f} ms by the test (sampling 5 ms, API polling 50 ms)")
    if crossed:
        print(f"memory eviction: kernel notification -> eviction decided in "
              f"{(klog_time(decided[0]) - klog_time(crossed[0])) * 1000:.0f} ms (kubelet log)")
    # MemoryPressure while it lasted; a BestEffort pod is refused meanwhile, a Burstable one admitted
    kube.wait(lambda: node_condition(kube, "MemoryPressure") == "True", timeout=10, msg="MemoryPressure")
    kube.create("pods", api_pod(kube, "late-be", [ctr("c", ["sleep", "3600"])]))
    kube.create("pods", api_pod(kube, "late-burst", [ctr("c", ["sleep", "3600"],
                                                        resources={"requests": {"memory": "16Mi"}})]))
    rej = kube.wait(lambda: (p := kube.pod("late-be")) and p.get("status", {}).get("phase") == "Failed" and p,
                         timeout=20, msg="late-be rejected")
    assert rej["status"]["reason"] == "Evicted" and rej["status"]["message"] == "The node had condition: [MemoryPressure]. "
    wait_for(lambda: running_restarts(kube, "late-burst") == 0, 60, msg="late-burst running")
    # the hog is stopped and stays so; the Guaranteed pod keeps running, never restarted
    wait_for(lambda: not node.runtime.running("hog"), 30, msg="hog stopped")
    kube.wait(lambda: node_condition(kube, "MemoryPressure") == "False", timeout=40, msg="no MemoryPressure")
    assert running_restarts(kube, "guaranteed") == 0
    assert len(node.runtime.containers_of("hog")) == 1
    assert evicted(kube, "hog")


def test_disk_pressure_and_local_storage(node, kube_node, kubelets):
    kube = kube_node
    node.import_images()
    # DiskPressure: nodefs.available below what is free now less 30Mi, once 80Mi more are written (more than the node
    # can reclaim: a leftover unused image, dead containers)
    _, avail, _, _ = node.fs.statvfs()
    k = join(kubelets, kube, f"""\
        evictionHard: {{nodefs.available: "{avail - 30 * MIB}", memory.available: 1Mi}}
        evictionPressureTransitionPeriod: 5s
        """)
    kube.create("pods", api_pod(kube, "victim", [ctr("c", ["sleep", "3600"])]))
    wait_for(lambda: running_restarts(kube, "victim") == 0, 60, msg="victim running")
    k.wait_log(r"eviction manager: no resources are starved", 30)  # this kubelet has looked once, before the filler
    assert node_condition(kube, "DiskPressure") == "False"
    filler = node.fs.fill("disk-filler", 80 * MIB)
    try:
        kube.wait(lambda: node_condition(kube, "DiskPressure") == "True", timeout=30, msg="DiskPressure")
        # node-level reclaim first (dead containers, unused images); not enough: the pod goes
        p = kube.wait(lambda: evicted(kube, "victim"), timeout=60, msg="victim evicted")
        # quantities as Quantity.String() prints them: the threshold in decimal SI ("350592k" when the free space
        # minus 30 MiB happens to be a multiple of 1000), the byte counts in binary SI
        q = r"\d+([kMGTPE]|[KMGTPE]i)?"
        assert re.fullmatch(rf"The node was low on resource: ephemeral-storage\. Threshold quantity: {q}, available: "
                            rf"{q}\. (Container c was using {q}, which exceeds its request of 0\. )?",
                            p["status"]["message"]), p["status"]["message"]
        k.wait_log(r"EvictionThresholdMet.*Attempting to reclaim ephemeral-storage", 5)
        # admission refuses every pod that is not critical meanwhile
        kube.create("pods", api_pod(kube, "late", [ctr("c", ["sleep", "3600"], resources=GUARANTEED)]))
        rej = kube.wait(lambda: (p := kube.pod("late")) and p.get("status", {}).get("phase") == "Failed" and p,
                             timeout=20, msg="late rejected")
        assert rej["status"]["message"] == "The node had condition: [DiskPressure]. "
    finally:
        os.unlink(filler)
    # the condition clears once the signal has been fine for the transition period (5 s)
    gone = time.monotonic()
    time.sleep(3)
    assert node_condition(kube, "DiskPressure") == "True", "DiskPressure cleared before the transition period"
    kube.wait(lambda: node_condition(kube, "DiskPressure") == "False", timeout=40, msg="DiskPressure cleared")
    print(f"\nDiskPressure cleared {time.monotonic() - gone:.1f} s after the filler went (transition period 5 s, "
          f"monitoring period 10 s)")
    k.term()

    # local ephemeral storage: an emptyDir past its sizeLimit; a container past its ephemeral-storage limit (its
    # writable layer), its pod within the sum of its containers' limits
    node.import_images()
    k = join(kubelets, kube, """\
        evictionHard: {memory.available: 1Mi}
        volumeStatsAggPeriod: 1s
        """)
    kube.create("pods", api_pod(kube, "ed", [ctr("c", ["sh", "-c", "dd if=/dev/zero of=/scratch/f bs=1M count=20; sleep 3600"],
                                                volumeMounts=[{"name": "scratch", "mountPath": "/scratch"}])],
                                     {"volumes": [{"name": "scratch", "emptyDir": {"sizeLimit": "10Mi"}}]}))
    kube.create("pods", api_pod(kube, "eph", [
        ctr("c1", ["sh", "-c", "dd if=/dev/zero of=/data bs=1M count=15; sleep 3600"],
            resources={"limits": {"ephemeral-storage": "10Mi"}}),
        ctr("c2", ["sleep", "3600"], resources={"limits": {"ephemeral-storage": "100Mi"}})]))
    p = kube.wait(lambda: evicted(kube, "ed"), timeout=60, msg="ed evicted")
    assert p["status"]["message"] == 'Usage of EmptyDir volume "scratch" exceeds the limit "10Mi". '
    p = kube.wait(lambda: evicted(kube, "eph"), timeout=60, msg="eph evicted")
    assert p["status"]["message"] == 'Container c1 exceeded its local ephemeral storage limit "10Mi". '
    wait_for(lambda: not node.runtime.running("ed") and not node.runtime.running("eph"), 30, msg="both stopped")
    assert len(node.runtime.containers_of("ed")) == 1 and len(node.runtime.containers_of("eph")) == 2


def test_ephemeral_storage_counts_deep_empty_dir(node, kube_node, kubelets):
    """Issue 26, item 3: 64 MiB written 17 levels deep in an emptyDir count toward the pod's ephemeral-storage limit
    (30Mi): the pod is evicted. The old du stopped at 16 levels and the pod escaped its limit."""
    kube = kube_node
    node.import_images()
    join(kubelets, kube, """\
        evictionHard: {memory.available: 1Mi}
        volumeStatsAggPeriod: 1s
        """)
    deep = "/scratch/" + "/".join(f"l{i}" for i in range(1, 18))
    kube.create("pods", api_pod(kube, "deep", [
        ctr("c", ["sh", "-c", f"mkdir -p {deep} && dd if=/dev/zero of={deep}/f bs=1M count=64 && sync; sleep 3600"],
            resources={"limits": {"ephemeral-storage": "30Mi"}},
            volumeMounts=[{"name": "scratch", "mountPath": "/scratch"}])],
        {"volumes": [{"name": "scratch", "emptyDir": {}}]}))
    p = kube.wait(lambda: evicted(kube, "deep"), timeout=90, msg="deep evicted")
    assert p["status"]["message"] == ("Pod ephemeral local storage usage exceeds the total limit of containers "
                                      "30Mi. "), p["status"]["message"]
    wait_for(lambda: not node.runtime.running("deep"), 30, msg="deep stopped")


def test_kill9_during_eviction(node, kube_node, kubelets):
    """kill -9 while an evicted pod is being stopped (it ignores SIGTERM: the stop takes the minimum grace period,
    2 s): after the restart the pod is stopped, never started again, reported Evicted; the Guaranteed pod is
    untouched, although the memory stays short until the evicted pod is gone."""
    kube = kube_node
    node.import_images()
    k = memory_kubelet(kubelets, kube, 700, 300)
    kube.wait(lambda: node_condition(kube, "Ready") == "True", timeout=30)
    kube.create("pods", api_pod(kube, "guaranteed", [ctr("app", ["sleep", "3600"], resources=GUARANTEED)]))
    wait_for(lambda: running_restarts(kube, "guaranteed") == 0, 60, msg="guaranteed running")
    kube.create("pods", api_pod(kube, "hog", [ctr("hog", ["sh", "-c", "trap '' TERM; sleep 1; "
                                                         "dd if=/dev/zero bs=450M count=1 | sleep 3600"])],
                                     {"terminationGracePeriodSeconds": 30}))
    k.wait_log(rf"Evicting pod: pod=\"{kube.ns}/hog\"", 60)
    # the kill cuts the eviction's requests in flight (its event, the pod's status, the node's): kube-apiserver
    # audits a request whose client went away as a 500 (1.20) or a 504 "context canceled" (1.37)
    kube.expected_errors |= {("create", 500), ("patch", 500), ("create", 504), ("patch", 504)}
    k.kill9()
    assert node.runtime.running("hog"), "the hog died before the kill -9: nothing was in the middle"
    k.start()
    p = kube.wait(lambda: evicted(kube, "hog"), timeout=60, msg="hog evicted")
    assert p["status"]["message"].startswith("The node was low on resource: memory. Threshold quantity: 300Mi")
    wait_for(lambda: not node.runtime.running("hog"), 40, msg="hog stopped")
    # not restarted, the Guaranteed pod untouched
    time.sleep(2)
    assert len(node.runtime.containers_of("hog")) == 1 and not node.runtime.running("hog")
    assert running_restarts(kube, "guaranteed") == 0
    assert not evicted(kube, "guaranteed") and len(node.runtime.containers_of("guaranteed")) == 1
    assert evicted(kube, "hog")
    k.wait_log(r"was evicted before the kubelet restarted", 5)
