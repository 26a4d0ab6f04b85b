# Container lifecycle: how a container ended (OOMKilled).
import os

from apiclient import Client
from conftest import BUSYBOX, NODE, free_port, wait_for


def start(kubelet_factory):
    k = kubelet_factory(start=False)
    ro = free_port()
    k.start("--read-only-port", str(ro))
    api = Client(ro, tls=False)
    wait_for(lambda: _ok(api), msg="the read-only port")
    return k, api


def _ok(api):
    try:
        return api.get("/pods")[0] == 200
    except OSError:
        return False


def pod_status(api, name):
    for p in api.json("/pods")["items"]:
        if p["metadata"]["name"] == name:
            return p.get("status")
    return None


def test_oom_killed(kubelet_factory, runtime):
    k, api = start(kubelet_factory)
    k.write("oom.yaml", f"""\
        apiVersion: v1
        kind: Pod
        metadata: {{name: oom}}
        spec:
          restartPolicy: Never
          containers:
          - name: hog
            image: {BUSYBOX}
            command: [sh, -c, "head -c 200m /dev/zero | tail"]
            resources: {{limits: {{memory: 20Mi}}}}
        """)
    name = f"oom-{NODE}"
    st = wait_for(lambda: (s := pod_status(api, name)) and s["phase"] == "Failed" and s, 60, msg="pod Failed")
    [c] = st["containerStatuses"]
    t = c["state"]["terminated"]
    assert t["reason"] == "OOMKilled", t
    assert t["exitCode"] == 137


def test_termination_messages(kubelet_factory, runtime):
    k, api = start(kubelet_factory)
    k.write("msg.yaml", f"""\
        apiVersion: v1
        kind: Pod
        metadata: {{name: msg}}
        spec:
          restartPolicy: Never
          containers:
          - name: file
            image: {BUSYBOX}
            command: [sh, -c, "printf 'bye from file' > /dev/termination-log"]
          - name: custom
            image: {BUSYBOX}
            command: [sh, -c, "printf 'custom path' > /tmp/msg; exit 4"]
            terminationMessagePath: /tmp/msg
          - name: big
            image: {BUSYBOX}
            command: [sh, -c, "head -c 5000 /dev/zero | tr '\\\\0' a > /dev/termination-log; printf END >> /dev/termination-log"]
          - name: fallback
            image: {BUSYBOX}
            command: [sh, -c, "echo first; echo last words; exit 2"]
            terminationMessagePolicy: FallbackToLogsOnError
          - name: fallback-ok
            image: {BUSYBOX}
            command: [sh, -c, "echo only in the log"]
            terminationMessagePolicy: FallbackToLogsOnError
          - name: nofallback
            image: {BUSYBOX}
            command: [sh, -c, "echo only in the log; exit 1"]
        """)
    name = f"msg-{NODE}"
    st = wait_for(lambda: (s := pod_status(api, name)) and s["phase"] == "Failed" and s, 60, msg="pod done")
    term = {c["name"]: c["state"]["terminated"] for c in st["containerStatuses"]}
    assert term["file"]["message"] == "bye from file"
    assert term["custom"]["message"] == "custom path" and term["custom"]["exitCode"] == 4
    # at most 4096 bytes, the end of the file
    assert len(term["big"]["message"]) == 4096 and term["big"]["message"].endswith("aaaEND")
    # FallbackToLogsOnError: an empty file and a non-zero exit code give the end of the log
    assert term["fallback"]["message"] == "first\nlast words\n"
    assert "message" not in term["fallback-ok"]
    assert "message" not in term["nofallback"]
    # the file lives under the root dir, one per instance
    [c] = runtime.containers_of(name, "file")
    uid = c["labels"]["io.kubernetes.pod.uid"]
    d = os.path.join(k.root, "pods", uid, "containers", "file")
    [f] = os.listdir(d)
    assert open(os.path.join(d, f)).read() == "bye from file"
