"""configMap, secret and projected volumes of API pods, fed from the real kube-apiserver (the object managers of
src/objects/ and the volume writers of src/volumes/ together, on a real containerd): files, contents and modes
as the container sees them, an update of a ConfigMap reaching a running container atomically (the ..data
symlink swap), a projected volume with every source kind including the issued service account token, and
optional / required missing ConfigMaps."""
import base64
import glob
import os
import time

from apiobjects import api_pod as _api_pod
from apiobjects import configmap, container, cstatus, jwt_claims, running, secret  # noqa: F401
from conftest import wait_for
from test_objects import service_account, token_requests

SLEEP = ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 0.2; done"]


def api_pod(kube, name, containers, **kw):
    return _api_pod(name, containers, kube.node, **kw)


def events(kube, pod, reason):
    return kube.events(pod, reason)


def cid_of(runtime, pod, cname="app"):
    [c] = runtime.running(pod, cname)
    return c["id"]


def sh(runtime, cid, script):
    p = runtime.crictl("exec", cid, "--", "sh", "-c", script, check=False)
    assert p.returncode == 0, f"{script!r}: rc={p.returncode} {p.stdout!r} {p.stderr!r}"
    return p.stdout


def volume_dir(kubelet, uid, plugin, name):
    return os.path.join(kubelet.root, "pods", uid, "volumes", f"kubernetes.io~{plugin}", name)


def container_log(kubelet, pod, uid, cname="app"):
    """The container's messages (CRI log lines: time stream tag message), all its log files joined."""
    [d] = glob.glob(os.path.join(kubelet.logs, f"*_{pod}_{uid}", cname)) or [""]
    out = []
    for f in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        with open(os.path.join(d, f), errors="replace") as fh:
            out += [l.rstrip("\n").split(" ", 3)[3] for l in fh if l.count(" ") >= 3]
    return out


def test_configmap_and_secret_files_modes_tmpfs(kube, runtime):
    k = kube.kubelet()
    kube.create("configmaps", configmap("web-config", {"a": "alpha\n", "b": "beta", "c": "not projected"}))
    kube.create("secrets", secret("web-secret", {"user": "admin", "pass": "s3cr3t"}))
    kube.create("pods", api_pod(kube, "files", [
        container("app", SLEEP, volumeMounts=[{"name": "cfg", "mountPath": "/cfg"},
                                              {"name": "sec", "mountPath": "/sec", "readOnly": True}]),
    ], extra_spec={"volumes": [
        {"name": "cfg", "configMap": {"name": "web-config", "defaultMode": 0o440, "items": [
            {"key": "a", "path": "dir/a.txt", "mode": 0o600},
            {"key": "b", "path": "b.txt"}]}},
        {"name": "sec", "secret": {"secretName": "web-secret", "defaultMode": 0o400}}]}))
    kube.wait(lambda: running(kube, "files"), timeout=60)
    uid = kube.pod("files")["metadata"]["uid"]
    cid = cid_of(runtime, "files")

    # what the container sees: only the listed keys at their paths, with their modes (the item's own mode,
    # else defaultMode); every key of the secret with its defaultMode
    assert sh(runtime, cid, "cat /cfg/dir/a.txt") == "alpha\n"
    assert sh(runtime, cid, "cat /cfg/b.txt") == "beta"
    assert sh(runtime, cid, "ls /cfg").split() == ["b.txt", "dir"]
    assert sh(runtime, cid, "stat -L -c '%a' /cfg/dir/a.txt /cfg/b.txt").split() == ["600", "440"]
    assert sh(runtime, cid, "cat /sec/user; echo; cat /sec/pass") == "admin\ns3cr3t"
    assert sh(runtime, cid, "ls /sec").split() == ["pass", "user"]
    assert sh(runtime, cid, "stat -L -c '%a' /sec/user /sec/pass").split() == ["400", "400"]
    # the secret volume is a tmpfs, read-only as mounted; the configMap volume is not a tmpfs
    sec_mount = sh(runtime, cid, "grep ' /sec ' /proc/mounts").split()
    assert sec_mount[2] == "tmpfs" and "ro" in sec_mount[3].split(","), sec_mount
    assert sh(runtime, cid, "grep ' /cfg ' /proc/mounts").split()[2] != "tmpfs"

    # on the node: the atomic writer's layout (user-visible symlinks into ..data, a timestamped directory)
    d = volume_dir(k, uid, "configmap", "cfg")
    assert os.readlink(os.path.join(d, "b.txt")) == "..data/b.txt"
    assert os.readlink(os.path.join(d, "dir")) == "..data/dir"
    assert os.readlink(os.path.join(d, "..data")).startswith("..")
    sd = volume_dir(k, uid, "secret", "sec")
    assert os.readlink(os.path.join(sd, "pass")) == "..data/pass"
    with open("/proc/self/mountinfo") as f:
        fstype = {l.split()[4]: l.split(" - ")[1].split()[0] for l in f}
    assert fstype.get(sd) == "tmpfs" and d not in fstype
    assert "s3cr3t" not in k.log()


def test_configmap_update_reaches_running_container_atomically(kube, runtime):
    # Two values of the same length, so a reader of a half-written file would see neither whole value.
    one, two = "one-" + "a" * 300, "two-" + "b" * 300
    k = kube.kubelet()
    kube.create("configmaps", configmap("live", {"value": one}))
    # The reader re-opens the file 20 times per round with the shell's builtin read (no fork), checks every
    # read is one of the two whole values (a missing file, an empty or mixed content is BAD), and logs each
    # change of value; a round ends with a 0.2 s sleep.
    reader = ('last=; while true; do i=0; while [ $i -lt 20 ]; do v=; read -r v < /cfg/value; '
              'if [ "$v" != "$ONE" ] && [ "$v" != "$TWO" ]; then echo "BAD [$v]"; '
              'elif [ "$v" != "$last" ]; then echo "SEEN ${v%%-*}"; last=$v; fi; i=$((i+1)); done; '
              'echo tick; sleep 0.2; done')
    kube.create("pods", api_pod(kube, "live", [
        container("app", ["sh", "-c", reader], env=[{"name": "ONE", "value": one}, {"name": "TWO", "value": two}],
                  volumeMounts=[{"name": "cfg", "mountPath": "/cfg"}]),
    ], extra_spec={"volumes": [{"name": "cfg", "configMap": {"name": "live"}}]}))
    kube.wait(lambda: running(kube, "live"), timeout=60)
    uid = kube.pod("live")["metadata"]["uid"]
    wait_for(lambda: "SEEN one" in container_log(k, "live", uid), 20, msg="the reader sees the first value")
    d = volume_dir(k, uid, "configmap", "cfg")
    first_data = os.readlink(os.path.join(d, "..data"))

    # Flip the value a few times. What sets the delay: nothing periodic (upstream's kubelet only rewrites the
    # volume on its next periodic sync, up to the sync period plus the ConfigMap cache TTL, about a minute).
    # Here the apiserver's WATCH event reaches the object manager (src/objects/) at once, which requests a
    # sync of the pods using the ConfigMap (kubelet_worker_request_sync: immediate, or right after a pass in
    # progress, no back-off), and that sync's volume setup runs the atomic writer: milliseconds, plus up to
    # the reader's 0.2 s sleep. 30 s bounds it generously for a loaded machine.
    values = [two, one, two, one, two]
    for n, v in enumerate(values):
        kube.update("configmaps", configmap("live", {"value": v}))
        seen = ["SEEN " + x.split("-")[0] for x in [one] + values[:n + 1]]
        t0 = time.monotonic()
        def reads():
            return [l for l in container_log(k, "live", uid) if l.startswith(("SEEN", "BAD"))]
        wait_for(lambda: reads() == seen or any(l.startswith("BAD") for l in reads()), 30,
                 msg=f"the running container sees update {n + 1}")
        assert reads() == seen, reads()[:10]
        print(f"update {n + 1} seen by the container after {time.monotonic() - t0:.2f}s")
        # some reads of this value happened before the next flip
        ticks = container_log(k, "live", uid).count("tick")
        wait_for(lambda: container_log(k, "live", uid).count("tick") >= ticks + 2, 10, msg="more reads")

    log = container_log(k, "live", uid)
    assert not [l for l in log if l.startswith("BAD")], [l for l in log if l.startswith("BAD")][:5]
    assert [l for l in log if l.startswith("SEEN")] == ["SEEN " + x.split("-")[0] for x in [one] + values]
    # the swap was the ..data symlink: a new timestamped directory, the old one removed, same user symlink
    new_data = os.readlink(os.path.join(d, "..data"))
    assert new_data != first_data and new_data.startswith("..")
    assert not os.path.exists(os.path.join(d, first_data))
    assert os.readlink(os.path.join(d, "value")) == "..data/value"
    assert open(os.path.join(d, "value")).read() == two
    assert [e for e in os.listdir(d) if e.startswith("..") and e != "..data"] == [new_data]
    # the container was never restarted for it
    assert cstatus(kube.pod("live"), "app")["restartCount"] == 0


def test_projected_all_sources_and_token(kube, runtime):
    k = kube.kubelet()
    service_account(kube, "runner")
    kube.create("configmaps", configmap("proj-config", {"mode": "fast", "other": "x"}))
    kube.create("secrets", secret("proj-secret", {"key": "k3y"}))
    pod = api_pod(kube, "proj", [
        container("app", SLEEP, volumeMounts=[{"name": "all", "mountPath": "/all"}]),
    ], extra_spec={"serviceAccountName": "runner", "automountServiceAccountToken": False, "volumes": [
        {"name": "all", "projected": {"defaultMode": 0o440, "sources": [
            {"configMap": {"name": "proj-config", "items": [{"key": "mode", "path": "cfg/mode"}]}},
            {"secret": {"name": "proj-secret", "items": [{"key": "key", "path": "sec/key", "mode": 0o400}]}},
            {"downwardAPI": {"items": [{"path": "info/name", "fieldRef": {"fieldPath": "metadata.name"}},
                                       {"path": "info/labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}},
            {"serviceAccountToken": {"path": "token", "audience": "api", "expirationSeconds": 7200}}]}}]})
    pod["metadata"]["labels"] = {"app": "proj", "tier": "back"}  # for the downwardAPI source
    kube.create("pods", pod)
    kube.wait(lambda: running(kube, "proj"), timeout=60)
    uid = kube.pod("proj")["metadata"]["uid"]
    cid = cid_of(runtime, "proj")

    assert sh(runtime, cid, "cd /all && find -L . -type f | grep -v '/\\.\\.' | sort").split() == \
        ["./cfg/mode", "./info/labels", "./info/name", "./sec/key", "./token"]
    assert sh(runtime, cid, "cat /all/cfg/mode") == "fast"
    assert sh(runtime, cid, "cat /all/sec/key") == "k3y"
    assert sh(runtime, cid, "cat /all/info/name") == "proj"
    assert sh(runtime, cid, "cat /all/info/labels") == 'app="proj"\ntier="back"'
    assert sh(runtime, cid, "stat -L -c '%a' /all/cfg/mode /all/sec/key /all/token").split() == ["440", "400", "440"]
    assert sh(runtime, cid, "grep ' /all ' /proc/mounts").split()[2] == "tmpfs"

    # the token file holds a token the apiserver issued for the pod's service account, bound to the pod
    token = sh(runtime, cid, "cat /all/token")
    review = kube.token_review(token, ["api"])
    assert review.get("authenticated"), review
    assert review["user"]["username"] == f"system:serviceaccount:{kube.ns}:runner"
    assert review["user"]["extra"]["authentication.kubernetes.io/pod-name"] == ["proj"]
    assert review["user"]["extra"]["authentication.kubernetes.io/pod-uid"] == [uid]
    assert len(token_requests(kube, "runner")) == 1
    claims = jwt_claims(token)
    assert claims["aud"] == ["api"] and claims["exp"] - claims["iat"] == 7200
    assert claims["kubernetes.io"]["pod"] == {"name": "proj", "uid": uid}
    assert token not in k.log()

    # the kubelet killed and restarted: the token cache was in memory only, so a new token is requested and
    # written (as upstream); the file always holds a token the apiserver issued, the container keeps running.
    # (Tokens are issued with times in seconds: one asked in the same second would be the same bytes.)
    wait_for(lambda: time.time() >= claims["iat"] + 1.1, 5, msg="the next second")
    k.kill9()
    k.start()
    wait_for(lambda: len(token_requests(kube, "runner")) == 2, 30, msg="a new TokenRequest after the restart")
    wait_for(lambda: sh(runtime, cid, "cat /all/token") != token, 30, msg="the new token written")
    new = sh(runtime, cid, "cat /all/token")
    assert kube.token_review(new, ["api"])["user"]["username"] == f"system:serviceaccount:{kube.ns}:runner"
    assert runtime.running("proj", "app")[0]["id"] == cid
    assert sh(runtime, cid, "cat /all/cfg/mode /all/sec/key") == "fastk3y"


def test_optional_and_required_missing_configmap(kube, runtime):
    k = kube.kubelet()
    # optional and missing: an empty volume, the pod runs
    kube.create("pods", api_pod(kube, "opt", [
        container("app", SLEEP, volumeMounts=[{"name": "cfg", "mountPath": "/cfg"}]),
    ], extra_spec={"volumes": [{"name": "cfg", "configMap": {"name": "nowhere", "optional": True}}]}))
    kube.wait(lambda: running(kube, "opt"), timeout=60)
    assert sh(runtime, cid_of(runtime, "opt"), "ls -A /cfg | grep -v '^\\.\\.' | wc -l").strip() == "0"
    assert not events(kube, "opt", "FailedMount")

    # required and missing: FailedMount, the container waits in ContainerCreating, nothing is created
    kube.create("pods", api_pod(kube, "req", [
        container("app", SLEEP, volumeMounts=[{"name": "cfg", "mountPath": "/cfg"}]),
    ], extra_spec={"volumes": [{"name": "cfg", "configMap": {"name": "later", "items": [
        {"key": "greeting", "path": "hello"}]}}]}))
    ev = kube.wait(lambda: events(kube, "req", "FailedMount"), timeout=30)
    assert ev[0]["message"] == 'MountVolume.SetUp failed for volume "cfg" : configmap "later" not found'
    assert ev[0]["type"] == "Warning"

    def creating():
        c = cstatus(kube.pod("req"), "app")
        w = c and c.get("state", {}).get("waiting")
        return w if w and w.get("reason") == "ContainerCreating" else None
    kube.wait(creating, timeout=30)
    assert kube.pod("req")["status"]["phase"] == "Pending"
    assert not runtime.containers_of("req")

    # once it is created (delivered by the watch), the pod starts with its content
    kube.create("configmaps", configmap("later", {"greeting": "hi there"}))
    kube.wait(lambda: running(kube, "req"), timeout=60)
    assert sh(runtime, cid_of(runtime, "req"), "cat /cfg/hello") == "hi there"
    # a required key missing from an existing ConfigMap also blocks the pod, until the key is added
    kube.create("pods", api_pod(kube, "key", [
        container("app", SLEEP, volumeMounts=[{"name": "cfg", "mountPath": "/cfg"}]),
    ], extra_spec={"volumes": [{"name": "cfg", "configMap": {"name": "later", "items": [
        {"key": "farewell", "path": "bye"}]}}]}))
    ev = kube.wait(lambda: events(kube, "key", "FailedMount"), timeout=30)
    assert ev[0]["message"] == ('MountVolume.SetUp failed for volume "cfg" : '
                                'configmap references non-existent config key: farewell')
    assert not runtime.containers_of("key")
    kube.update("configmaps", configmap("later", {"greeting": "hi there", "farewell": "bye now"}))
    kube.wait(lambda: running(kube, "key"), timeout=60)
    assert sh(runtime, cid_of(runtime, "key"), "cat /cfg/bye") == "bye now"
    # the optional one appears later too: the running pod's volume gets it
    kube.create("configmaps", configmap("nowhere", {"f": "now here"}))
    wait_for(lambda: sh(runtime, cid_of(runtime, "opt"), "cat /cfg/f 2>/dev/null || true") == "now here", 30,
             msg="the optional ConfigMap's content in the running pod")
    assert running(kube, "opt")


def test_keys_change_binary_data_restart_and_cleanup(kube, runtime):
    k = kube.kubelet()
    # near the API's 1 MiB object limit
    kube.create("configmaps", {**configmap("keys", {"a": "1", "b": "2", "big": "x" * 900_000}),
                                    "binaryData": {"bin": base64.b64encode(b"\x00\x01\xfe\xff").decode()}})
    kube.create("secrets", secret("pw", {"p": "old"}))
    kube.create("pods", api_pod(kube, "keys", [
        container("app", SLEEP, volumeMounts=[{"name": "cfg", "mountPath": "/cfg"},
                                              {"name": "sec", "mountPath": "/sec"}]),
    ], extra_spec={"volumes": [{"name": "cfg", "configMap": {"name": "keys"}},
                               {"name": "sec", "secret": {"secretName": "pw"}}]}))
    kube.wait(lambda: running(kube, "keys"), timeout=60)
    uid = kube.pod("keys")["metadata"]["uid"]
    cid = cid_of(runtime, "keys")
    assert sh(runtime, cid, "ls /cfg").split() == ["a", "b", "big", "bin"]
    assert sh(runtime, cid, "wc -c < /cfg/big; tr -d x < /cfg/big | wc -c").split() == ["900000", "0"]
    assert sh(runtime, cid, "od -An -tx1 /cfg/bin").split() == ["00", "01", "fe", "ff"]

    # a key removed and one added: the user-visible names follow
    kube.update("configmaps", configmap("keys", {"a": "1", "c": "3"}))
    wait_for(lambda: sh(runtime, cid, "ls /cfg").split() == ["a", "c"], 30, msg="keys b and bin gone, c there")
    assert sh(runtime, cid, "cat /cfg/c") == "3"
    # a Secret update reaches the running container too
    kube.update("secrets", secret("pw", {"p": "new"}))
    wait_for(lambda: sh(runtime, cid, "cat /sec/p") == "new", 30, msg="the new secret value")

    # the kubelet killed; the ConfigMap changes meanwhile; after the restart the volume converges and the
    # container keeps running (not restarted)
    k.kill9()
    kube.update("configmaps", configmap("keys", {"a": "after restart"}))
    k.start()
    wait_for(lambda: sh(runtime, cid, "ls /cfg; cat /cfg/a") == "a\nafter restart", 60,
             msg="the volume rewritten after the restart")
    assert runtime.running("keys", "app")[0]["id"] == cid
    d = volume_dir(k, uid, "configmap", "cfg")
    assert len([e for e in os.listdir(d) if e.startswith("..") and e != "..data"]) == 1
    sd = volume_dir(k, uid, "secret", "sec")
    with open("/proc/self/mountinfo") as f:
        assert sum(1 for l in f if l.split()[4] == sd) == 1, "the secret tmpfs is mounted once"

    # a required ConfigMap deleted while the pod runs: the pod keeps running with the content it had
    # (upstream: the volume's SetUp fails, FailedMount, the files stay as they were)
    kube.delete("configmaps", "keys")
    ev = kube.wait(lambda: events(kube, "keys", "FailedMount"), timeout=30)
    assert ev[0]["message"] == 'MountVolume.SetUp failed for volume "cfg" : configmap "keys" not found'
    assert running(kube, "keys") and sh(runtime, cid, "cat /cfg/a") == "after restart"
    assert runtime.running("keys", "app")[0]["id"] == cid

    # the pod deleted: its tmpfs is unmounted and its directory removed
    kube.delete("pods", "keys", grace_seconds=0)
    wait_for(lambda: not runtime.pods_named("keys"), 60, msg="pod gone")
    pd = os.path.join(k.root, "pods", uid)
    wait_for(lambda: not os.path.exists(pd), 30, msg="pod directory removed")
    with open("/proc/self/mountinfo") as f:
        assert not [l for l in f if pd in l]


def test_subpath_file_and_downward_labels_update(kube, runtime):
    k = kube.kubelet()
    kube.create("configmaps", configmap("conf", {"nginx.conf": "worker 1;\n", "other": "o"}))
    pod = api_pod(kube, "sp", [
        container("app", SLEEP, volumeMounts=[{"name": "cfg", "mountPath": "/etc/app/nginx.conf", "subPath": "nginx.conf"},
                                              {"name": "info", "mountPath": "/info"}]),
    ], extra_spec={"volumes": [{"name": "cfg", "configMap": {"name": "conf"}},
                               {"name": "info", "projected": {"sources": [{"downwardAPI": {"items": [
                                   {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}}]}}]})
    pod["metadata"]["labels"] = {"v": "1"}
    kube.create("pods", pod)
    kube.wait(lambda: running(kube, "sp"), timeout=60)
    cid = cid_of(runtime, "sp")
    # a single key mounted as a file with subPath (through the ..data symlink, which stays inside the volume)
    assert sh(runtime, cid, "cat /etc/app/nginx.conf") == "worker 1;\n"
    assert sh(runtime, cid, "ls /etc/app").split() == ["nginx.conf"]
    assert sh(runtime, cid, "cat /info/labels") == 'v="1"'
    # the pod's labels change: the downwardAPI file follows
    p = kube.pod("sp")
    p["metadata"]["labels"] = {"v": "2"}
    kube.update("pods", p)
    wait_for(lambda: sh(runtime, cid, "cat /info/labels") == 'v="2"', 30, msg="the new labels in the volume")
    assert runtime.running("sp", "app")[0]["id"] == cid


def test_required_configmap_deleted_while_kubelet_down(kube, runtime):
    k = kube.kubelet()
    kube.create("configmaps", configmap("gone-later", {"a": "kept"}))
    kube.create("pods", api_pod(kube, "down", [
        container("app", SLEEP, volumeMounts=[{"name": "cfg", "mountPath": "/cfg"}]),
    ], extra_spec={"volumes": [{"name": "cfg", "configMap": {"name": "gone-later"}}]}))
    kube.wait(lambda: running(kube, "down"), timeout=60)
    cid = cid_of(runtime, "down")
    k.kill9()
    kube.delete("configmaps", "gone-later")
    k.start()
    # as upstream: the volume cannot be set up (FailedMount) but the running container is left alone
    ev = kube.wait(lambda: events(kube, "down", "FailedMount"), timeout=30)
    assert ev[0]["message"] == 'MountVolume.SetUp failed for volume "cfg" : configmap "gone-later" not found'
    k.wait_log(rf"ConfigMap {kube.ns}/gone-later: not found", timeout=30)
    assert runtime.running("down", "app")[0]["id"] == cid
    assert sh(runtime, cid, "cat /cfg/a") == "kept"
    assert running(kube, "down")
    # it comes back: the volume is set up again with the new content
    kube.create("configmaps", configmap("gone-later", {"a": "back"}))
    wait_for(lambda: sh(runtime, cid, "cat /cfg/a") == "back", 30, msg="the new content")
    assert runtime.running("down", "app")[0]["id"] == cid


def test_shared_configmap_outlives_one_of_its_pods(kube, runtime):
    k = kube.kubelet()
    kube.create("configmaps", configmap("shared", {"v": "1"}))
    for name in ("p1", "p2"):
        kube.create("pods", api_pod(kube, name, [
            container("app", SLEEP, volumeMounts=[{"name": "cfg", "mountPath": "/cfg"},
                                                  {"name": "proj", "mountPath": "/proj"}]),
        ], extra_spec={"volumes": [{"name": "cfg", "configMap": {"name": "shared"}},
                                   {"name": "proj", "projected": {"sources": [
                                       {"configMap": {"name": "shared", "items": [{"key": "v", "path": "pv"}]}}]}}]}))
    for name in ("p1", "p2"):
        kube.wait(lambda: running(kube, name), timeout=60)
    c2 = cid_of(runtime, "p2")
    kube.update("configmaps", configmap("shared", {"v": "2"}))
    for name in ("p1", "p2"):
        wait_for(lambda: sh(runtime, cid_of(runtime, name), "cat /cfg/v /proj/pv") == "22", 30,
                 msg=f"{name} sees the update in both volumes")
    # one pod goes: the other keeps getting updates (the watch is shared, stopped only with the last pod)
    kube.delete("pods", "p1", grace_seconds=0)
    wait_for(lambda: not runtime.pods_named("p1"), 60, msg="p1 gone")
    kube.update("configmaps", configmap("shared", {"v": "3"}))
    wait_for(lambda: sh(runtime, c2, "cat /cfg/v /proj/pv") == "33", 30, msg="p2 sees the update after p1 went")
