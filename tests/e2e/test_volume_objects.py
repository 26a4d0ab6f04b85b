"""configMap, secret and projected volumes of API pods, fed from the fake kube-apiserver (the object managers of
src/objects/ and the volume writers of src/volumes/ together, on a real containerd): files, contents and modes
as the container sees them, an update of a ConfigMap reaching a running container atomically (the ..data
symlink swap), a projected volume with every source kind including the issued service account token, and
optional / required missing ConfigMaps."""
import base64
import os
import time

from conftest import wait_for
from test_cluster import api_pod, apiserver, container, cstatus, join  # noqa: F401 (apiserver is a fixture)

SLEEP = ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 0.2; done"]


def configmap(name, data):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"},
            "data": data}


def secret(name, data):
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": "default"},
            "type": "Opaque", "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}}


def running(apiserver, name, cname="app"):
    p = apiserver.pod(name)
    c = p and cstatus(p, cname)
    return p if c and "running" in c.get("state", {}) else None


def events(apiserver, pod, reason):
    return [e for e in apiserver.list("events", "default")
            if e["involvedObject"]["name"] == pod and e["reason"] == reason]


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
    d = os.path.join(kubelet.pod_log_dir(pod, uid), cname)
    out = []
    for f in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        with open(os.path.join(d, f), errors="replace") as fh:
            out += [l.rstrip("\n").split(" ", 3)[3] for l in fh if l.count(" ") >= 3]
    return out


def test_configmap_and_secret_files_modes_tmpfs(kubelet_factory, apiserver, runtime):
    k = join(kubelet_factory, apiserver)
    apiserver.create("configmaps", configmap("web-config", {"a": "alpha\n", "b": "beta", "c": "not projected"}))
    apiserver.create("secrets", secret("web-secret", {"user": "admin", "pass": "s3cr3t"}))
    apiserver.create("pods", api_pod("files", [
        container("app", SLEEP, volumeMounts=[{"name": "cfg", "mountPath": "/cfg"},
                                              {"name": "sec", "mountPath": "/sec", "readOnly": True}]),
    ], extra_spec={"volumes": [
        {"name": "cfg", "configMap": {"name": "web-config", "defaultMode": 0o440, "items": [
            {"key": "a", "path": "dir/a.txt", "mode": 0o600},
            {"key": "b", "path": "b.txt"}]}},
        {"name": "sec", "secret": {"secretName": "web-secret", "defaultMode": 0o400}}]}))
    apiserver.wait(lambda: running(apiserver, "files"), timeout=60)
    uid = apiserver.pod("files")["metadata"]["uid"]
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


def test_configmap_update_reaches_running_container_atomically(kubelet_factory, apiserver, runtime):
    # Two values of the same length, so a reader of a half-written file would see neither whole value.
    one, two = "one-" + "a" * 300, "two-" + "b" * 300
    k = join(kubelet_factory, apiserver)
    apiserver.create("configmaps", configmap("live", {"value": one}))
    # The reader re-opens the file 20 times per round with the shell's builtin read (no fork), checks every
    # read is one of the two whole values (a missing file, an empty or mixed content is BAD), and logs each
    # change of value; a round ends with a 0.2 s sleep.
    reader = ('last=; while true; do i=0; while [ $i -lt 20 ]; do v=; read -r v < /cfg/value; '
              'if [ "$v" != "$ONE" ] && [ "$v" != "$TWO" ]; then echo "BAD [$v]"; '
              'elif [ "$v" != "$last" ]; then echo "SEEN ${v%%-*}"; last=$v; fi; i=$((i+1)); done; '
              'echo tick; sleep 0.2; done')
    apiserver.create("pods", api_pod("live", [
        container("app", ["sh", "-c", reader], env=[{"name": "ONE", "value": one}, {"name": "TWO", "value": two}],
                  volumeMounts=[{"name": "cfg", "mountPath": "/cfg"}]),
    ], extra_spec={"volumes": [{"name": "cfg", "configMap": {"name": "live"}}]}))
    apiserver.wait(lambda: running(apiserver, "live"), timeout=60)
    uid = apiserver.pod("live")["metadata"]["uid"]
    wait_for(lambda: "SEEN one" in container_log(k, "live", uid), 20, msg="the reader sees the first value")
    d = volume_dir(k, uid, "configmap", "cfg")
    first_data = os.readlink(os.path.join(d, "..data"))

    # Flip the value a few times. What sets the delay: nothing periodic (upstream's kubelet only rewrites the
    # volume on its next periodic sync, up to the sync period plus the ConfigMap cache TTL, about a minute).
    # Here the fake apiserver's WATCH event reaches the object manager (src/objects/) at once, which requests a
    # sync of the pods using the ConfigMap (kubelet_worker_request_sync: immediate, or right after a pass in
    # progress, no back-off), and that sync's volume setup runs the atomic writer: milliseconds, plus up to
    # the reader's 0.2 s sleep. 30 s bounds it generously for a loaded machine.
    values = [two, one, two, one, two]
    for n, v in enumerate(values):
        apiserver.update("configmaps", configmap("live", {"value": v}))
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
    assert cstatus(apiserver.pod("live"), "app")["restartCount"] == 0


def test_projected_all_sources_and_token(kubelet_factory, apiserver, runtime):
    k = join(kubelet_factory, apiserver)
    apiserver.create("configmaps", configmap("proj-config", {"mode": "fast", "other": "x"}))
    apiserver.create("secrets", secret("proj-secret", {"key": "k3y"}))
    pod = api_pod("proj", [
        container("app", SLEEP, volumeMounts=[{"name": "all", "mountPath": "/all"}]),
    ], extra_spec={"serviceAccountName": "runner", "volumes": [
        {"name": "all", "projected": {"defaultMode": 0o440, "sources": [
            {"configMap": {"name": "proj-config", "items": [{"key": "mode", "path": "cfg/mode"}]}},
            {"secret": {"name": "proj-secret", "items": [{"key": "key", "path": "sec/key", "mode": 0o400}]}},
            {"downwardAPI": {"items": [{"path": "info/name", "fieldRef": {"fieldPath": "metadata.name"}},
                                       {"path": "info/labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}},
            {"serviceAccountToken": {"path": "token", "audience": "api", "expirationSeconds": 7200}}]}}]})
    pod["metadata"]["labels"] = {"app": "proj", "tier": "back"}  # for the downwardAPI source
    apiserver.create("pods", pod)
    apiserver.wait(lambda: running(apiserver, "proj"), timeout=60)
    uid = apiserver.pod("proj")["metadata"]["uid"]
    cid = cid_of(runtime, "proj")

    assert sh(runtime, cid, "cd /all && find -L . -type f | grep -v '/\\.\\.' | sort").split() == \
        ["./cfg/mode", "./info/labels", "./info/name", "./sec/key", "./token"]
    assert sh(runtime, cid, "cat /all/cfg/mode") == "fast"
    assert sh(runtime, cid, "cat /all/sec/key") == "k3y"
    assert sh(runtime, cid, "cat /all/info/name") == "proj"
    assert sh(runtime, cid, "cat /all/info/labels") == 'app="proj"\ntier="back"'
    assert sh(runtime, cid, "stat -L -c '%a' /all/cfg/mode /all/sec/key /all/token").split() == ["440", "400", "440"]
    assert sh(runtime, cid, "grep ' /all ' /proc/mounts").split()[2] == "tmpfs"

    # the token file holds the token the fake apiserver issued for the pod's service account, bound to the pod
    token = sh(runtime, cid, "cat /all/token")
    assert token in apiserver.tokens, "the token file holds no token the apiserver issued"
    assert apiserver.tokens[token][0] == "system:serviceaccount:default:runner"
    reqs = [b for b in apiserver.request_bodies
            if b.method == "POST" and b.path == "/api/v1/namespaces/default/serviceaccounts/runner/token"]
    assert len(reqs) == 1
    spec = reqs[0].body["spec"]
    assert spec["audiences"] == ["api"] and spec["expirationSeconds"] == 7200
    assert spec["boundObjectRef"] == {"apiVersion": "v1", "kind": "Pod", "name": "proj", "uid": uid}
    claims = token.split(".")[1]
    claims = base64.urlsafe_b64decode(claims + "=" * (-len(claims) % 4))
    assert uid.encode() in claims
    assert token not in k.log()

    # the kubelet killed and restarted: the token cache was in memory only, so a new token is requested and
    # written (as upstream); the file always holds a token the apiserver issued, the container keeps running
    k.kill9()
    k.start()
    wait_for(lambda: len([b for b in apiserver.request_bodies
                          if b.path == "/api/v1/namespaces/default/serviceaccounts/runner/token"]) == 2, 30,
             msg="a new TokenRequest after the restart")
    wait_for(lambda: sh(runtime, cid, "cat /all/token") != token, 30, msg="the new token written")
    new = sh(runtime, cid, "cat /all/token")
    assert apiserver.tokens.get(new, ("",))[0] == "system:serviceaccount:default:runner"
    assert runtime.running("proj", "app")[0]["id"] == cid
    assert sh(runtime, cid, "cat /all/cfg/mode /all/sec/key") == "fastk3y"


def test_optional_and_required_missing_configmap(kubelet_factory, apiserver, runtime):
    k = join(kubelet_factory, apiserver)
    # optional and missing: an empty volume, the pod runs
    apiserver.create("pods", api_pod("opt", [
        container("app", SLEEP, volumeMounts=[{"name": "cfg", "mountPath": "/cfg"}]),
    ], extra_spec={"volumes": [{"name": "cfg", "configMap": {"name": "nowhere", "optional": True}}]}))
    apiserver.wait(lambda: running(apiserver, "opt"), timeout=60)
    assert sh(runtime, cid_of(runtime, "opt"), "ls -A /cfg | grep -v '^\\.\\.' | wc -l").strip() == "0"
    assert not events(apiserver, "opt", "FailedMount")

    # required and missing: FailedMount, the container waits in ContainerCreating, nothing is created
    apiserver.create("pods", api_pod("req", [
        container("app", SLEEP, volumeMounts=[{"name": "cfg", "mountPath": "/cfg"}]),
    ], extra_spec={"volumes": [{"name": "cfg", "configMap": {"name": "later", "items": [
        {"key": "greeting", "path": "hello"}]}}]}))
    ev = apiserver.wait(lambda: events(apiserver, "req", "FailedMount"), timeout=30)
    assert ev[0]["message"] == 'MountVolume.SetUp failed for volume "cfg" : configmap "later" not found'
    assert ev[0]["type"] == "Warning"

    def creating():
        c = cstatus(apiserver.pod("req"), "app")
        w = c and c.get("state", {}).get("waiting")
        return w if w and w.get("reason") == "ContainerCreating" else None
    apiserver.wait(creating, timeout=30)
    assert apiserver.pod("req")["status"]["phase"] == "Pending"
    assert not runtime.containers_of("req")

    # once it is created (delivered by the watch), the pod starts with its content
    apiserver.create("configmaps", configmap("later", {"greeting": "hi there"}))
    apiserver.wait(lambda: running(apiserver, "req"), timeout=60)
    assert sh(runtime, cid_of(runtime, "req"), "cat /cfg/hello") == "hi there"
    # a required key missing from an existing ConfigMap also blocks the pod, until the key is added
    apiserver.create("pods", api_pod("key", [
        container("app", SLEEP, volumeMounts=[{"name": "cfg", "mountPath": "/cfg"}]),
    ], extra_spec={"volumes": [{"name": "cfg", "configMap": {"name": "later", "items": [
        {"key": "farewell", "path": "bye"}]}}]}))
    ev = apiserver.wait(lambda: events(apiserver, "key", "FailedMount"), timeout=30)
    assert ev[0]["message"] == ('MountVolume.SetUp failed for volume "cfg" : '
                                'configmap references non-existent config key: farewell')
    assert not runtime.containers_of("key")
    apiserver.update("configmaps", configmap("later", {"greeting": "hi there", "farewell": "bye now"}))
    apiserver.wait(lambda: running(apiserver, "key"), timeout=60)
    assert sh(runtime, cid_of(runtime, "key"), "cat /cfg/bye") == "bye now"
    # the optional one appears later too: the running pod's volume gets it
    apiserver.create("configmaps", configmap("nowhere", {"f": "now here"}))
    wait_for(lambda: sh(runtime, cid_of(runtime, "opt"), "cat /cfg/f 2>/dev/null || true") == "now here", 30,
             msg="the optional ConfigMap's content in the running pod")
    assert running(apiserver, "opt")


def test_keys_change_binary_data_restart_and_cleanup(kubelet_factory, apiserver, runtime):
    k = join(kubelet_factory, apiserver)
    # near the API's 1 MiB object limit
    apiserver.create("configmaps", {**configmap("keys", {"a": "1", "b": "2", "big": "x" * 900_000}),
                                    "binaryData": {"bin": base64.b64encode(b"\x00\x01\xfe\xff").decode()}})
    apiserver.create("secrets", secret("pw", {"p": "old"}))
    apiserver.create("pods", api_pod("keys", [
        container("app", SLEEP, volumeMounts=[{"name": "cfg", "mountPath": "/cfg"},
                                              {"name": "sec", "mountPath": "/sec"}]),
    ], extra_spec={"volumes": [{"name": "cfg", "configMap": {"name": "keys"}},
                               {"name": "sec", "secret": {"secretName": "pw"}}]}))
    apiserver.wait(lambda: running(apiserver, "keys"), timeout=60)
    uid = apiserver.pod("keys")["metadata"]["uid"]
    cid = cid_of(runtime, "keys")
    assert sh(runtime, cid, "ls /cfg").split() == ["a", "b", "big", "bin"]
    assert sh(runtime, cid, "wc -c < /cfg/big; tr -d x < /cfg/big | wc -c").split() == ["900000", "0"]
    assert sh(runtime, cid, "od -An -tx1 /cfg/bin").split() == ["00", "01", "fe", "ff"]

    # a key removed and one added: the user-visible names follow
    apiserver.update("configmaps", configmap("keys", {"a": "1", "c": "3"}))
    wait_for(lambda: sh(runtime, cid, "ls /cfg").split() == ["a", "c"], 30, msg="keys b and bin gone, c there")
    assert sh(runtime, cid, "cat /cfg/c") == "3"
    # a Secret update reaches the running container too
    apiserver.update("secrets", secret("pw", {"p": "new"}))
    wait_for(lambda: sh(runtime, cid, "cat /sec/p") == "new", 30, msg="the new secret value")

    # the kubelet killed; the ConfigMap changes meanwhile; after the restart the volume converges and the
    # container keeps running (not restarted)
    k.kill9()
    apiserver.update("configmaps", configmap("keys", {"a": "after restart"}))
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
    apiserver.delete("configmaps", "keys", namespace="default")
    ev = apiserver.wait(lambda: events(apiserver, "keys", "FailedMount"), timeout=30)
    assert ev[0]["message"] == 'MountVolume.SetUp failed for volume "cfg" : configmap "keys" not found'
    assert running(apiserver, "keys") and sh(runtime, cid, "cat /cfg/a") == "after restart"
    assert runtime.running("keys", "app")[0]["id"] == cid

    # the pod deleted: its tmpfs is unmounted and its directory removed
    apiserver.delete("pods", "keys", namespace="default", grace_seconds=0)
    wait_for(lambda: not runtime.pods_named("keys"), 60, msg="pod gone")
    pd = os.path.join(k.root, "pods", uid)
    wait_for(lambda: not os.path.exists(pd), 30, msg="pod directory removed")
    with open("/proc/self/mountinfo") as f:
        assert not [l for l in f if pd in l]


def test_subpath_file_and_downward_labels_update(kubelet_factory, apiserver, runtime):
    k = join(kubelet_factory, apiserver)
    apiserver.create("configmaps", configmap("conf", {"nginx.conf": "worker 1;\n", "other": "o"}))
    pod = api_pod("sp", [
        container("app", SLEEP, volumeMounts=[{"name": "cfg", "mountPath": "/etc/app/nginx.conf", "subPath": "nginx.conf"},
                                              {"name": "info", "mountPath": "/info"}]),
    ], extra_spec={"volumes": [{"name": "cfg", "configMap": {"name": "conf"}},
                               {"name": "info", "projected": {"sources": [{"downwardAPI": {"items": [
                                   {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}}]}}]})
    pod["metadata"]["labels"] = {"v": "1"}
    apiserver.create("pods", pod)
    apiserver.wait(lambda: running(apiserver, "sp"), timeout=60)
    cid = cid_of(runtime, "sp")
    # a single key mounted as a file with subPath (through the ..data symlink, which stays inside the volume)
    assert sh(runtime, cid, "cat /etc/app/nginx.conf") == "worker 1;\n"
    assert sh(runtime, cid, "ls /etc/app").split() == ["nginx.conf"]
    assert sh(runtime, cid, "cat /info/labels") == 'v="1"'
    # the pod's labels change: the downwardAPI file follows
    p = apiserver.pod("sp")
    p["metadata"]["labels"] = {"v": "2"}
    apiserver.update("pods", p)
    wait_for(lambda: sh(runtime, cid, "cat /info/labels") == 'v="2"', 30, msg="the new labels in the volume")
    assert runtime.running("sp", "app")[0]["id"] == cid


def test_required_configmap_deleted_while_kubelet_down(kubelet_factory, apiserver, runtime):
    k = join(kubelet_factory, apiserver)
    apiserver.create("configmaps", configmap("gone-later", {"a": "kept"}))
    apiserver.create("pods", api_pod("down", [
        container("app", SLEEP, volumeMounts=[{"name": "cfg", "mountPath": "/cfg"}]),
    ], extra_spec={"volumes": [{"name": "cfg", "configMap": {"name": "gone-later"}}]}))
    apiserver.wait(lambda: running(apiserver, "down"), timeout=60)
    cid = cid_of(runtime, "down")
    k.kill9()
    apiserver.delete("configmaps", "gone-later", namespace="default")
    k.start()
    # as upstream: the volume cannot be set up (FailedMount) but the running container is left alone
    ev = apiserver.wait(lambda: events(apiserver, "down", "FailedMount"), timeout=30)
    assert ev[0]["message"] == 'MountVolume.SetUp failed for volume "cfg" : configmap "gone-later" not found'
    k.wait_log(r"ConfigMap default/gone-later: not found", timeout=30)
    assert runtime.running("down", "app")[0]["id"] == cid
    assert sh(runtime, cid, "cat /cfg/a") == "kept"
    assert running(apiserver, "down")
    # it comes back: the volume is set up again with the new content
    apiserver.create("configmaps", configmap("gone-later", {"a": "back"}))
    wait_for(lambda: sh(runtime, cid, "cat /cfg/a") == "back", 30, msg="the new content")
    assert runtime.running("down", "app")[0]["id"] == cid


def test_shared_configmap_outlives_one_of_its_pods(kubelet_factory, apiserver, runtime):
    k = join(kubelet_factory, apiserver)
    apiserver.create("configmaps", configmap("shared", {"v": "1"}))
    for name in ("p1", "p2"):
        apiserver.create("pods", api_pod(name, [
            container("app", SLEEP, volumeMounts=[{"name": "cfg", "mountPath": "/cfg"},
                                                  {"name": "proj", "mountPath": "/proj"}]),
        ], extra_spec={"volumes": [{"name": "cfg", "configMap": {"name": "shared"}},
                                   {"name": "proj", "projected": {"sources": [
                                       {"configMap": {"name": "shared", "items": [{"key": "v", "path": "pv"}]}}]}}]}))
    for name in ("p1", "p2"):
        apiserver.wait(lambda: running(apiserver, name), timeout=60)
    c2 = cid_of(runtime, "p2")
    apiserver.update("configmaps", configmap("shared", {"v": "2"}))
    for name in ("p1", "p2"):
        wait_for(lambda: sh(runtime, cid_of(runtime, name), "cat /cfg/v /proj/pv") == "22", 30,
                 msg=f"{name} sees the update in both volumes")
    # one pod goes: the other keeps getting updates (the watch is shared, stopped only with the last pod)
    apiserver.delete("pods", "p1", namespace="default", grace_seconds=0)
    wait_for(lambda: not runtime.pods_named("p1"), 60, msg="p1 gone")
    apiserver.update("configmaps", configmap("shared", {"v": "3"}))
    wait_for(lambda: sh(runtime, c2, "cat /cfg/v /proj/pv") == "33", 30, msg="p2 sees the update after p1 went")
