# Container lifecycle: how a container ended (OOMKilled).
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
