# Static pods from a manifest directory: start, labels, logs, multi-document files, PodList, dotfiles,
# removal, replacement on edit, unowned pods.
import os
import textwrap
import threading
import time

import pytest

from conftest import BUSYBOX, NODE, SLEEPER, pod_manifest, wait_for

# run on both runtimes (tests/run.sh: the whole suite on containerd 1.6.20, the `runtime` tests on 2.1.9 too)
pytestmark = pytest.mark.runtime


def test_pod_starts_with_upstream_labels_and_logs(kubelet, runtime):
    kubelet.write("web.yaml", pod_manifest("web", [
        ("app", ["sh", "-c", "echo hello from app; trap 'exit 0' TERM; while true; do sleep 0.2; done"]),
        ("side", SLEEPER),
    ]))
    name = f"web-{NODE}"
    wait_for(lambda: len(runtime.running(name)) == 2, msg="both containers running")
    [sb] = runtime.pods_named(name)
    assert sb["state"] == "SANDBOX_READY"
    assert sb["metadata"]["namespace"] == "default"
    uid = sb["metadata"]["uid"]
    assert sb["labels"]["io.kubernetes.pod.name"] == name
    assert sb["labels"]["io.kubernetes.pod.namespace"] == "default"
    assert sb["labels"]["io.kubernetes.pod.uid"] == uid
    assert sb["annotations"]["kubernetes.io/config.source"] == "file"
    assert sb["annotations"]["kubernetes.io/config.hash"] == uid
    for c in runtime.running(name):
        assert c["labels"]["io.kubernetes.container.name"] == c["metadata"]["name"]
        assert c["labels"]["io.kubernetes.pod.uid"] == uid
        assert c["annotations"]["io.kubernetes.container.restartCount"] == "0"
        assert c["annotations"]["io.kubernetes.container.hash"]
        assert c["podSandboxId"] == sb["id"]
    logfile = os.path.join(kubelet.pod_log_dir(name, uid), "app", "0.log")
    wait_for(lambda: os.path.exists(logfile) and "hello from app" in open(logfile).read(), 10,
             msg=f"container output in {logfile}")
    # the pod has an IP on the CNI bridge
    st = runtime.inspectp(sb["id"])
    assert st["network"]["ip"].startswith("10.")


def test_multi_document_file_and_podlist(kubelet, runtime):
    kubelet.write("multi.yaml", pod_manifest("one", [("c", SLEEPER)]) + "---\n" +
                  pod_manifest("two", [("c", SLEEPER)]))
    kubelet.write("list.json", """\
        {"apiVersion": "v1", "kind": "PodList", "items": [
          {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "three"},
           "spec": {"containers": [{"name": "c", "image": "%s", "command": ["sleep", "3600"]}]}},
          {"metadata": {"name": "four", "namespace": "kube-system"},
           "spec": {"containers": [{"name": "c", "image": "%s", "command": ["sleep", "3600"]}]}}
        ]}
        """ % (BUSYBOX, BUSYBOX))
    for n in ("one", "two", "three", "four"):
        wait_for(lambda: runtime.running(f"{n}-{NODE}"), msg=f"pod {n} running")
    [four] = runtime.pods_named(f"four-{NODE}")
    assert four["metadata"]["namespace"] == "kube-system"


def test_dotfiles_and_editor_temporaries_are_ignored(kubelet, runtime):
    kubelet.write(".hidden.yaml", pod_manifest("hidden", [("c", SLEEPER)]))
    kubelet.write("shown.yaml", pod_manifest("shown", [("c", SLEEPER)]))
    wait_for(lambda: runtime.running(f"shown-{NODE}"), msg="pod shown running")
    time.sleep(1)  # give the hidden one every chance to appear
    assert not runtime.pods_named(f"hidden-{NODE}")


def test_deleted_manifest_stops_pod_gracefully(kubelet, runtime):
    kubelet.write("bye.yaml", pod_manifest("bye", [
        ("app", ["sh", "-c", "trap 'echo got SIGTERM; exit 0' TERM; while true; do sleep 0.2; done"]),
    ], grace=20))
    name = f"bye-{NODE}"
    [c] = wait_for(lambda: runtime.running(name), msg="pod running")
    uid = c["labels"]["io.kubernetes.pod.uid"]
    time.sleep(0.5)  # let the shell install its trap
    kubelet.remove("bye.yaml")
    wait_for(lambda: not runtime.pods_named(name) and not runtime.containers_of(name), 40,
             msg="sandbox and containers removed")
    log = open(os.path.join(kubelet.pod_log_dir(name, uid), "app", "0.log")).read()
    assert "got SIGTERM" in log, "the container was not asked to stop gracefully"


def test_manifest_removed_and_written_again_restarts_the_pod(kubelet, runtime):
    """A manifest deleted and written again at once, unchanged (e2e_node's "should successfully recreate when file is
    removed and recreated"): as upstream, the pod (same UID) is stopped, then runs again, its container's restart
    count 1; never two running copies."""
    name = f"again-{NODE}"
    text = pod_manifest("again", [("app", SLEEPER)], grace=2)
    kubelet.write("again.yaml", text)
    [first] = wait_for(lambda: runtime.running(name), msg="the pod running")
    uid = first["labels"]["io.kubernetes.pod.uid"]
    path = os.path.join(kubelet.manifests, "again.yaml")
    os.unlink(path)
    with open(path, "w") as f:  # as the suite's createStaticPod: in place, not renamed
        f.write(textwrap.dedent(text))
    [second] = wait_for(lambda: [c for c in runtime.running(name) if c["id"] != first["id"]], 40,
                        msg="the pod running again")
    assert second["labels"]["io.kubernetes.pod.uid"] == uid
    assert second["annotations"]["io.kubernetes.container.restartCount"] == "1"
    assert [c["id"] for c in runtime.running(name)] == [second["id"]]
    kubelet.wait_log(r"SyncLoop REMOVE: pod=\"default/" + name + r"\"", 5)
    kubelet.wait_log(r"Pod is terminating but has been requested to restart with same UID|is desired again", 5)


def test_edited_manifest_replaces_pod_exactly_once(kubelet, runtime):
    name = f"edit-{NODE}"
    kubelet.write("edit.yaml", pod_manifest("edit", [("app", SLEEPER)], grace=5))
    [first] = wait_for(lambda: runtime.running(name), msg="first version running")
    old_uid = first["labels"]["io.kubernetes.pod.uid"]

    # Watch the runtime at a high rate during the switch: never two ready sandboxes or two running
    # containers for this pod name, and exactly one new UID.
    seen_uids, violations, stop = set(), [], threading.Event()

    def watch():
        while not stop.is_set():
            try:
                ready = runtime.pods_named(name, ready_only=True)
                running = runtime.running(name)
            except Exception:
                continue
            if len(ready) > 1 or len(running) > 1:
                violations.append((ready, running))
            for p in ready:
                seen_uids.add(p["metadata"]["uid"])

    t = threading.Thread(target=watch)
    t.start()
    try:
        kubelet.write("edit.yaml", pod_manifest("edit", [("app", SLEEPER + ["#v2"])], grace=5))
        new = wait_for(lambda: [c for c in runtime.running(name)
                                if c["labels"]["io.kubernetes.pod.uid"] != old_uid], 40, msg="new version running")
        time.sleep(2)  # keep watching: nothing else may appear
    finally:
        stop.set()
        t.join()
    assert not violations, f"two copies at once: {violations[:1]}"
    assert len(new) == 1
    new_uid = new[0]["labels"]["io.kubernetes.pod.uid"]
    assert seen_uids <= {old_uid, new_uid}
    assert len(runtime.pods_named(name)) == 1, "the old sandbox was not removed"
    assert len(runtime.containers_of(name)) == 1


def test_unowned_pods_are_killed(kubelet, runtime):
    kubelet.write("mine.yaml", pod_manifest("mine", [("c", SLEEPER)]))
    wait_for(lambda: runtime.running(f"mine-{NODE}"), msg="own pod running")
    sid = runtime.crictl("runp", "--name", "stranger", "--namespace", "default", "--uid", "0000-stranger").stdout.strip()
    try:
        cid = runtime.crictl("create", "--pod", sid, "--name", "c", "--image", BUSYBOX, "--pod-name", "stranger",
                             "--namespace", "default", "--uid", "0000-stranger", "--", "sleep", "3600").stdout.strip()
        runtime.crictl("start", cid)
    except RuntimeError:
        pass  # the kubelet's relist (every second) found the stranger sandbox first and is already removing it
    wait_for(lambda: not runtime.pods_named("stranger") and not runtime.containers_of("stranger"), 60,
             msg="the unowned pod killed and removed")
    assert runtime.running(f"mine-{NODE}"), "the owned pod was disturbed"
    kubelet.wait_log(r"not desired, killing it: podUID=\"0000-stranger\"")


def test_resources_reach_the_container_cgroup(kubelet, runtime):
    kubelet.write("res.yaml", """\
        apiVersion: v1
        kind: Pod
        metadata: {name: res}
        spec:
          containers:
          - name: c
            image: docker.io/library/busybox:1.36
            command: ["sleep", "3600"]
            resources:
              requests: {cpu: 250m, memory: 32Mi}
              limits: {cpu: 500m, memory: 64Mi}
        """)
    [c] = wait_for(lambda: runtime.running(f"res-{NODE}"), msg="pod running")
    st = runtime.json("inspect", c["id"])
    # the runtime reports what it applied
    lin = st["status"]["resources"]["linux"]
    assert lin["memoryLimitInBytes"] == str(64 * 1024 * 1024)
    assert lin["cpuShares"] == "256"
    assert lin["cpuQuota"] == "50000" and lin["cpuPeriod"] == "100000"
    # and the kernel enforces it (cgroup v1 or v2)
    out = runtime.crictl("exec", c["id"], "--", "sh", "-c",
                         "cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max").stdout
    assert out.strip() == str(64 * 1024 * 1024)


def test_max_pods_admission(kubelet_factory, runtime):
    k = kubelet_factory(False)
    for n in ("a1", "a2", "a3"):
        k.write(f"{n}.yaml", pod_manifest(n, [("c", SLEEPER)]))
    k.start("--max-pods", "2")
    wait_for(lambda: len([c for c in runtime.containers() if c["state"] == "CONTAINER_RUNNING"]) == 2,
             msg="two pods running")
    k.wait_log(r'Pod admission denied: pod="default/a\d-testnode" .*reason="OutOfpods"')
    time.sleep(1)
    assert len(runtime.pods()) == 2, "the third pod must not be started"
    # removing one admitted pod does not admit the rejected one (rejection is final, as upstream) ...
    running = {c["labels"]["io.kubernetes.pod.name"] for c in runtime.containers()}
    rejected = ({f"{n}-{NODE}" for n in ("a1", "a2", "a3")} - running).pop()
    # ... but writing it again as a new version (new UID) is a new pod and is admitted once there is room
    gone = sorted(running)[0]
    k.remove(gone.split("-")[0] + ".yaml")
    wait_for(lambda: not runtime.pods_named(gone), 60, msg="the removed pod gone")
    time.sleep(1.5)
    assert not runtime.pods_named(rejected), "a rejected pod must stay rejected"
    base = rejected.split("-")[0]
    k.write(f"{base}.yaml", pod_manifest(base, [("c", SLEEPER + ["#v2"])]))
    wait_for(lambda: runtime.running(rejected), 60, msg="the re-submitted pod admitted")


def test_probes_are_validated(kubelet, runtime):
    # a valid probe runs: its command leaves a line in the container at every period
    kubelet.write("probed.yaml", pod_manifest("probed", [("c", SLEEPER)]).replace(
        "    command:", "    livenessProbe: {exec: {command: [sh, -c, \"echo ran >> /tmp/probed\"]}, periodSeconds: 1}\n"
                       "    command:"))
    c = wait_for(lambda: runtime.running(f"probed-{NODE}"), msg="pod with a probe running")[0]

    def probe_runs():
        p = runtime.crictl("exec", c["id"], "--", "sh", "-c", "cat /tmp/probed 2>/dev/null", check=False)
        return p.stdout.count("ran") >= 2
    wait_for(probe_runs, 60, 0.5, msg="the liveness probe ran twice")
    assert [x["id"] for x in runtime.running(f"probed-{NODE}")] == [c["id"]], "a succeeding probe kills nothing"
    bad = kubelet.write("badprobe.yaml", pod_manifest("badprobe", [("c", SLEEPER)]).replace(
        "    command:", "    livenessProbe: {tcpSocket: {port: 0}}\n    command:"))
    kubelet.wait_log(r'Could not process manifest file "' + bad +
                     r'": .*spec\.containers\[0\]\.livenessProbe\.tcpSocket\.port: Invalid value: 0')
