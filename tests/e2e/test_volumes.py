# Pod volumes: emptyDir (disk and tmpfs), hostPath type checks, readOnly, the managed /etc/hosts with
# hostAliases, subPath / subPathExpr and a hostile symlink, unsupported types, orphaned pod directories.
import json
import os
import re
import subprocess
import tempfile

from conftest import BUSYBOX, NODE, wait_for

SLEEP = ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 0.2; done"]


def manifest(name, containers, volumes=None, **spec):
    doc = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
           "spec": dict(spec, containers=[dict({"image": BUSYBOX}, **c) for c in containers])}
    if volumes is not None:
        doc["spec"]["volumes"] = volumes
    return json.dumps(doc)


def sh(runtime, cid, script, check=True):
    p = runtime.crictl("exec", cid, "--", "sh", "-c", script, check=False)
    if check:
        assert p.returncode == 0, f"{script!r}: rc={p.returncode} {p.stdout!r} {p.stderr!r}"
    return p


def one_running(runtime, pod, name):
    cs = runtime.running(f"{pod}-{NODE}", name)
    return cs[0] if len(cs) == 1 else None


def pod_uid(runtime, pod):
    [sb] = runtime.pods_named(f"{pod}-{NODE}")
    return sb["metadata"]["uid"]


def mounts_under(path):
    with open("/proc/self/mountinfo") as f:
        return [l.split()[4] for l in f if l.split()[4].startswith(path)]


def test_empty_dir_shared_tmpfs_and_read_only(kubelet, runtime):
    kubelet.write("ed.json", manifest("ed", [
        {"name": "writer", "command": ["sh", "-c", "echo hello > /shared/greeting; " + SLEEP[2]],
         "volumeMounts": [{"name": "shared", "mountPath": "/shared"}, {"name": "mem", "mountPath": "/mem"}]},
        {"name": "reader", "command": SLEEP,
         "volumeMounts": [{"name": "shared", "mountPath": "/ro", "readOnly": True}]},
    ], volumes=[{"name": "shared", "emptyDir": {}},
                {"name": "mem", "emptyDir": {"medium": "Memory", "sizeLimit": "1Mi"}}]))
    w = wait_for(lambda: one_running(runtime, "ed", "writer"), msg="writer running")
    r = wait_for(lambda: one_running(runtime, "ed", "reader"), msg="reader running")
    # shared by the two containers, read-only in the reader
    assert wait_for(lambda: sh(runtime, r["id"], "cat /ro/greeting", check=False).stdout.strip() == "hello",
                    msg="reader sees the writer's file")
    p = sh(runtime, r["id"], "touch /ro/nope", check=False)
    assert p.returncode != 0
    assert "Read-only file system" in p.stdout + p.stderr
    # on the node, under the pod directory
    uid = pod_uid(runtime, "ed")
    d = os.path.join(kubelet.root, "pods", uid, "volumes", "kubernetes.io~empty-dir")
    assert open(os.path.join(d, "shared", "greeting")).read() == "hello\n"
    assert os.stat(os.path.join(d, "shared")).st_mode & 0o777 == 0o777
    # medium Memory: a tmpfs of sizeLimit; writing beyond it fails
    out = sh(runtime, w["id"], "grep ' /mem ' /proc/mounts").stdout
    assert out.split()[2] == "tmpfs", out
    assert "size=1024k" in out, out
    df = sh(runtime, w["id"], "df -k /mem | tail -1").stdout.split()
    assert df[1] == "1024", df
    p = sh(runtime, w["id"], "dd if=/dev/zero of=/mem/big bs=1k count=2048", check=False)
    assert p.returncode != 0 and "No space left on device" in p.stdout + p.stderr
    sh(runtime, w["id"], "rm /mem/big; dd if=/dev/zero of=/mem/small bs=1k count=100")
    assert os.path.join(d, "mem") in mounts_under(d)


def test_host_path_types(kubelet, runtime):
    base = tempfile.mkdtemp(dir=kubelet.dir)
    open(os.path.join(base, "file"), "w").write("from the host\n")
    kubelet.write("hp.json", manifest("hp", [
        {"name": "c", "command": ["sh", "-c", "echo made > /created/x; cat /f > /created/copy; " + SLEEP[2]],
         "volumeMounts": [{"name": "dir", "mountPath": "/created"}, {"name": "file", "mountPath": "/f", "readOnly": True},
                          {"name": "newfile", "mountPath": "/nf"}]},
    ], volumes=[{"name": "dir", "hostPath": {"path": f"{base}/a/b", "type": "DirectoryOrCreate"}},
                {"name": "file", "hostPath": {"path": f"{base}/file", "type": "File"}},
                {"name": "newfile", "hostPath": {"path": f"{base}/nf", "type": "FileOrCreate"}}]))
    wait_for(lambda: one_running(runtime, "hp", "c"), msg="hostPath pod running")
    wait_for(lambda: os.path.exists(f"{base}/a/b/copy") and open(f"{base}/a/b/copy").read() == "from the host\n",
             msg="the container wrote through the hostPath")
    assert os.stat(f"{base}/a/b").st_mode & 0o777 == 0o755
    assert os.path.isfile(f"{base}/nf")

    # failing type checks and an unsupported type: no container is created, FailedMount is logged
    kubelet.write("bad.json", manifest("bad", [
        {"name": "c", "command": SLEEP, "volumeMounts": [{"name": "v", "mountPath": "/v"}]},
    ], volumes=[{"name": "v", "hostPath": {"path": f"{base}/file", "type": "Directory"}}]))
    kubelet.write("pvc.json", manifest("pvc", [
        {"name": "c", "command": SLEEP, "volumeMounts": [{"name": "data", "mountPath": "/data"}]},
    ], volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "x"}}]))
    kubelet.wait_log(re.escape(f'MountVolume.SetUp failed for volume "v" : hostPath type check failed: '
                               f'{base}/file is not a directory'))
    # a claim needs the API server: standalone, the volume manager says so and the pod waits
    kubelet.wait_log(re.escape('error processing PVC default/x: failed to fetch PVC from API server: no API server '
                               '(standalone kubelet)'))
    assert runtime.containers_of(f"bad-{NODE}") == []
    assert runtime.containers_of(f"pvc-{NODE}") == []
    assert one_running(runtime, "hp", "c"), "other pods are not disturbed"


def test_invalid_mount_is_rejected(kubelet, runtime):
    kubelet.write("inv.json", manifest("inv", [
        {"name": "c", "command": SLEEP, "volumeMounts": [{"name": "nope", "mountPath": "/x"}]}], volumes=[]))
    kubelet.wait_log(re.escape('spec.containers[0].volumeMounts[0].name: Not found: \\"nope\\"') + "|" +
                     re.escape('spec.containers[0].volumeMounts[0].name: Not found: "nope"'))
    assert runtime.pods_named(f"inv-{NODE}") == []


def test_etc_hosts_with_host_aliases(kubelet, runtime):
    kubelet.write("hosts.json", manifest("hosts", [
        {"name": "c", "command": SLEEP},
        {"name": "own", "command": SLEEP, "volumeMounts": [{"name": "h", "mountPath": "/etc/hosts"}]},
    ], volumes=[{"name": "h", "hostPath": {"path": "/etc/hosts", "type": "File"}}],
        hostname="myhost", subdomain="sub",
        hostAliases=[{"ip": "10.1.2.3", "hostnames": ["foo.local", "bar"]}, {"ip": "fd00::1", "hostnames": ["six"]}]))
    c = wait_for(lambda: one_running(runtime, "hosts", "c"), msg="pod running")
    own = wait_for(lambda: one_running(runtime, "hosts", "own"), msg="second container running")
    [sb] = runtime.pods_named(f"hosts-{NODE}")
    ip = runtime.inspectp(sb["id"])["network"]["ip"]
    expected = ("# Kubernetes-managed hosts file.\n"
                "127.0.0.1\tlocalhost\n"
                "::1\tlocalhost ip6-localhost ip6-loopback\n"
                "fe00::0\tip6-localnet\n"
                "fe00::0\tip6-mcastprefix\n"
                "fe00::1\tip6-allnodes\n"
                "fe00::2\tip6-allrouters\n"
                f"{ip}\tmyhost.sub.default.svc.\tmyhost\n"
                "\n# Entries added by HostAliases.\n"
                "10.1.2.3\tfoo.local\tbar\n"
                "fd00::1\tsix\n")
    assert sh(runtime, c["id"], "cat /etc/hosts").stdout == expected
    assert open(os.path.join(kubelet.root, "pods", sb["metadata"]["uid"], "etc-hosts")).read() == expected
    # a container that mounts /etc/hosts itself keeps its own
    assert sh(runtime, own["id"], "cat /etc/hosts").stdout == open("/etc/hosts").read()


def test_subpath_and_hostile_symlink(kubelet, runtime):
    marker = tempfile.mkdtemp(dir=kubelet.dir)
    open(os.path.join(marker, "ESCAPE-MARKER"), "w").write("host secret\n")
    rel = marker.lstrip("/") + "/ESCAPE-MARKER"
    plant = ("mkdir -p /data/sub/dir; echo hi > /data/sub/dir/f; "
             "while true; do if [ ! -L /data/escape ]; then rm -rf /data/escape; ln -s / /data/escape; fi; sleep 0.1; done")
    kubelet.write("sp.json", manifest("sp", [
        {"name": "planter", "command": ["sh", "-c", plant],
         "volumeMounts": [{"name": "data", "mountPath": "/data"}]},
        {"name": "good", "command": SLEEP, "env": [{"name": "DIRNAME", "value": "exprdir"}],
         "volumeMounts": [{"name": "data", "mountPath": "/sub", "subPath": "sub/dir"},
                          {"name": "data", "mountPath": "/expr", "subPathExpr": "$(DIRNAME)/x"}]},
        {"name": "evil", "command": ["sh", "-c", f"if [ -e /esc/{rel} ]; then echo ESCAPED; fi; sleep 1; exit 1"],
         "volumeMounts": [{"name": "data", "mountPath": "/esc", "subPath": "escape"}]},
    ], volumes=[{"name": "data", "emptyDir": {}}]))
    good = wait_for(lambda: one_running(runtime, "sp", "good"), msg="good container running")
    assert wait_for(lambda: sh(runtime, good["id"], "cat /sub/f", check=False).stdout == "hi\n",
                    msg="subPath shows the directory's content")
    sh(runtime, good["id"], "echo e > /expr/file")
    uid = pod_uid(runtime, "sp")
    vol = os.path.join(kubelet.root, "pods", uid, "volumes", "kubernetes.io~empty-dir", "data")
    assert open(os.path.join(vol, "exprdir", "x", "file")).read() == "e\n"
    # the runtime got the bind mounts under volume-subpaths, not the volume paths
    binds = [m["hostPath"] for m in runtime.json("inspect", good["id"])["status"]["mounts"]]
    assert any(b.endswith(f"/pods/{uid}/volume-subpaths/data/good/0") for b in binds), binds
    # the symlink planted by the other container is refused (the container may have run once before it
    # was planted: then it saw a plain directory of the volume)
    kubelet.wait_log(r'container evil: subPath "escape" of volume "data" cannot be resolved inside the volume', timeout=60)
    for c in runtime.containers_of(f"sp-{NODE}", "evil"):
        log = os.path.join(kubelet.pod_log_dir(f"sp-{NODE}", uid), "evil")
        for f in os.listdir(log) if os.path.isdir(log) else []:
            assert "ESCAPED" not in open(os.path.join(log, f)).read()
    assert os.path.islink(os.path.join(vol, "escape"))


def test_orphaned_pod_directory_is_removed(kubelet, runtime):
    kubelet.write("orph.json", manifest("orph", [
        {"name": "c", "command": ["sh", "-c", "mkdir -p /m/s; echo x > /m/s/f; " + SLEEP[2]],
         "volumeMounts": [{"name": "mem", "mountPath": "/m"}, {"name": "disk", "mountPath": "/s", "subPath": "a"}]},
    ], volumes=[{"name": "mem", "emptyDir": {"medium": "Memory"}}, {"name": "disk", "emptyDir": {}}]))
    wait_for(lambda: one_running(runtime, "orph", "c"), msg="pod running")
    uid = pod_uid(runtime, "orph")
    pd = os.path.join(kubelet.root, "pods", uid)
    assert len(mounts_under(pd)) == 2  # the tmpfs and the subPath bind mount
    kubelet.remove("orph.json")
    wait_for(lambda: not runtime.pods_named(f"orph-{NODE}"), msg="pod gone from the runtime")
    wait_for(lambda: not os.path.exists(pd), timeout=30, msg="pod directory removed")
    assert mounts_under(pd) == []
    kubelet.wait_log(f'Cleaning up orphaned pod directories: podUID="{uid}"')


def test_downward_api_and_missing_objects(kubelet, runtime):
    # standalone: no API server, so no ConfigMap/Secret exists: optional ones give empty volumes
    kubelet.write("dw.json", json.dumps({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "dw", "labels": {"app": "web", "tier": "front"}, "annotations": {"note": "hi \"there\""}},
        "spec": {"containers": [{"name": "c", "image": BUSYBOX, "command": SLEEP,
                                 "resources": {"limits": {"memory": "64Mi", "cpu": "250m"}},
                                 "volumeMounts": [{"name": "info", "mountPath": "/etc/podinfo"},
                                                  {"name": "cm", "mountPath": "/cm"},
                                                  {"name": "sec", "mountPath": "/sec"}]}],
                 "volumes": [{"name": "info", "downwardAPI": {"items": [
                     {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
                     {"path": "name", "fieldRef": {"fieldPath": "metadata.name"}},
                     {"path": "sub/note", "fieldRef": {"fieldPath": "metadata.annotations['note']"}, "mode": 0o400},
                     {"path": "mem", "resourceFieldRef": {"containerName": "c", "resource": "limits.memory",
                                                          "divisor": "1Mi"}},
                     {"path": "cpu", "resourceFieldRef": {"containerName": "c", "resource": "limits.cpu",
                                                          "divisor": "1m"}}]}},
                     {"name": "cm", "configMap": {"name": "absent", "optional": True}},
                     {"name": "sec", "secret": {"secretName": "absent", "optional": True}}]}}))
    c = wait_for(lambda: one_running(runtime, "dw", "c"), msg="downward API pod running")
    out = sh(runtime, c["id"], "cat /etc/podinfo/labels; echo; cat /etc/podinfo/name; echo; "
                               "cat /etc/podinfo/sub/note; echo; cat /etc/podinfo/mem; echo; cat /etc/podinfo/cpu").stdout
    assert out == f'app="web"\ntier="front"\ndw-{NODE}\nhi "there"\n64\n250'
    uid = pod_uid(runtime, "dw")
    d = os.path.join(kubelet.root, "pods", uid, "volumes", "kubernetes.io~downward-api", "info")
    assert os.readlink(os.path.join(d, "labels")) == "..data/labels"
    assert os.readlink(os.path.join(d, "..data")).startswith("..")
    assert os.stat(os.path.join(d, "sub", "note")).st_mode & 0o777 == 0o400
    assert os.stat(os.path.join(d, "name")).st_mode & 0o777 == 0o644
    assert sh(runtime, c["id"], "ls /cm /sec").stdout.split() == ["/cm:", "/sec:"]
    # secrets live on a tmpfs
    assert sh(runtime, c["id"], "grep ' /sec ' /proc/mounts").stdout.split()[2] == "tmpfs"

    # a required ConfigMap or Secret that does not exist: FailedMount, no container
    kubelet.write("req.json", manifest("req", [
        {"name": "c", "command": SLEEP, "volumeMounts": [{"name": "cm", "mountPath": "/cm"}]},
    ], volumes=[{"name": "cm", "configMap": {"name": "settings"}}]))
    kubelet.wait_log(re.escape('MountVolume.SetUp failed for volume "cm" : configmap "settings" not found'))
    assert runtime.containers_of(f"req-{NODE}") == []


def test_fs_group_read_only_volume_types(kubelet, runtime):
    """fsGroup (issue 26 item 8, upstream's node conformance): a downwardAPI and a projected volume with
    defaultMode 0440 show their files -r--r----- in the container (roMask: the group gets read only), while an
    emptyDir gets the group's read and write (rwMask) and setgid."""
    items = [{"path": "name", "fieldRef": {"fieldPath": "metadata.name"}}]
    kubelet.write("fsg.json", json.dumps({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "fsg"},
        "spec": {"securityContext": {"fsGroup": 2000},
                 "containers": [{"name": "c", "image": BUSYBOX, "command": SLEEP,
                                 "volumeMounts": [{"name": "dw", "mountPath": "/dw"},
                                                  {"name": "pj", "mountPath": "/pj"},
                                                  {"name": "scratch", "mountPath": "/scratch"}]}],
                 "volumes": [{"name": "dw", "downwardAPI": {"defaultMode": 0o440, "items": items}},
                             {"name": "pj", "projected": {"defaultMode": 0o440,
                                                          "sources": [{"downwardAPI": {"items": items}}]}},
                             {"name": "scratch", "emptyDir": {}}]}}))
    c = wait_for(lambda: one_running(runtime, "fsg", "c"), msg="fsGroup pod running")
    out = sh(runtime, c["id"], "ls -lnL /dw/name /pj/name; ls -lnd /scratch").stdout.splitlines()
    assert [l.split()[0] for l in out] == ["-r--r-----", "-r--r-----", "drwxrwsrwx"], out
    assert [l.split()[3] for l in out] == ["2000", "2000", "2000"], out
    sh(runtime, c["id"], "touch /scratch/f")
    kubelet.remove("fsg.json")


def test_huge_empty_dir_removed_off_the_loop(kubelet, runtime):
    """A pod leaves 200,000 files and a 70-deep tree in its emptyDir, and goes: the removal of its directory runs on
    a worker (issue 26, item 2): /healthz answers every request within a second throughout, and the directory is
    gone within a minute (the old removal ran on the loop, 2.6 s for 200,000 files, and never removed a tree deeper
    than 64 levels)."""
    import threading
    import time
    from apiclient import Client
    fill = ("cd /data && for d in $(seq 200); do mkdir $d && (cd $d && seq 1000 | xargs touch); done && "
            "(for i in $(seq 70); do mkdir d && cd d; done; echo deep > f) && touch /data/FILLED; " + SLEEP[2])
    kubelet.write("huge.json", manifest("huge", [
        {"name": "c", "command": ["sh", "-c", fill], "volumeMounts": [{"name": "data", "mountPath": "/data"}]},
    ], volumes=[{"name": "data", "emptyDir": {}}]))
    wait_for(lambda: one_running(runtime, "huge", "c"), msg="pod running")
    uid = pod_uid(runtime, "huge")
    pd = os.path.join(kubelet.root, "pods", uid)
    vol = os.path.join(pd, "volumes", "kubernetes.io~empty-dir", "data")
    wait_for(lambda: os.path.exists(os.path.join(vol, "FILLED")), timeout=240, interval=1, msg="200,000 files written")
    assert len(os.listdir(os.path.join(vol, "200"))) == 1000
    healthz = Client(kubelet.healthz_port, tls=False)
    worst, failures, stop = [0.0], [], threading.Event()

    def probe():
        while not stop.is_set():
            t = time.monotonic()
            try:
                status, _, _ = healthz.request("/healthz", timeout=5)
                if status != 200:
                    failures.append(status)
            except Exception as e:  # a timeout counts as a failure
                failures.append(repr(e))
            worst[0] = max(worst[0], time.monotonic() - t)
            time.sleep(0.05)

    t = threading.Thread(target=probe)
    t.start()
    try:
        kubelet.remove("huge.json")
        wait_for(lambda: not runtime.pods_named(f"huge-{NODE}"), timeout=60, msg="pod gone from the runtime")
        gone = time.monotonic()
        wait_for(lambda: not os.path.exists(pd), timeout=60, interval=0.5, msg="pod directory removed")
        print(f"\npod directory removed {time.monotonic() - gone:.1f} s after the pod left the runtime; "
              f"worst /healthz latency {worst[0] * 1000:.0f} ms")
        time.sleep(1)
    finally:
        stop.set()
        t.join()
    assert not failures, failures
    assert worst[0] < 1.0, f"/healthz took {worst[0]:.2f} s"
    kubelet.wait_log(r"orphaned pod %s: pod directory removed" % uid)
