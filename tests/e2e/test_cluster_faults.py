"""Faults a real kube-apiserver cannot produce on demand, against the fake one (fakeapi.py): watches that
expire every few seconds, dropped mid-stream, compacted away (410 on resume), quiet watches kept alive by
bookmarks, and the whole API server down for a minute and back on the same port. Everything else about joining
a cluster runs against the real control plane (test_cluster.py and the tests using the kube fixture)."""
import time

import pytest

from apiobjects import api_pod as _api_pod
from apiobjects import container, cstatus, secret
from conftest import BUSYBOX, NODE, SLEEPER
from fakeapi import FakeApiServer


@pytest.fixture
def apiserver(tmp_path):
    a = FakeApiServer(str(tmp_path / "apiserver"), node_name=NODE)
    a.bookmark_interval = 1.0
    a.start()
    yield a
    a.stop()


def join(kubelet_factory, apiserver, *extra):
    k = kubelet_factory(start=False)
    k.start("--kubeconfig", apiserver.kubeconfig, "--node-status-update-frequency", "1s", *extra)
    return k


def api_pod(name, containers, **kw):
    return _api_pod(name, containers, NODE, namespace=kw.pop("namespace", "default"), **kw)


# ---------------------------------------------------------------- watch robustness


def test_watch_expiry_and_drops_lose_nothing(kubelet_factory, apiserver, runtime):
    apiserver.max_watch_seconds = 2  # watches end often: resumed from the last resourceVersion
    k = join(kubelet_factory, apiserver)
    apiserver.create("pods", api_pod("w1", [container("c", SLEEPER)]))
    apiserver.wait(lambda: runtime.running("w1", "c"), timeout=60)
    time.sleep(3)  # a watch expired and was resumed
    apiserver.create("pods", api_pod("w2", [container("c", SLEEPER)]))
    apiserver.wait(lambda: runtime.running("w2", "c"), timeout=60)

    # a connection dropped mid-stream, a compaction (410 on resume: relist), more pods meanwhile
    apiserver.drop_watches()
    apiserver.create("pods", api_pod("w3", [container("c", SLEEPER)]))
    apiserver.compact()
    apiserver.drop_watches()
    apiserver.create("pods", api_pod("w4", [container("c", SLEEPER)]))
    apiserver.wait(lambda: runtime.running("w3", "c") and runtime.running("w4", "c"), timeout=60)
    k.wait_log(r"too old|listing again|relist", timeout=30)
    # nothing duplicated: one sandbox per pod, never restarted
    for n in ("w1", "w2", "w3", "w4"):
        assert len(runtime.pods_named(n)) == 1, n
        assert len(runtime.containers_of(n, "c")) == 1, n


def test_stalled_watch_detected(kubelet_factory, apiserver, runtime):
    # no bookmarks and no bytes: the kubelet's idle timer must notice (it is 120 s in production; this test
    # checks the bookmarks keep a quiet watch alive instead, and that a stall does not wedge pod delivery)
    k = join(kubelet_factory, apiserver)
    apiserver.create("pods", api_pod("s1", [container("c", SLEEPER)]))
    apiserver.wait(lambda: runtime.running("s1", "c"), timeout=60)
    time.sleep(3)  # bookmarks only
    apiserver.create("pods", api_pod("s2", [container("c", SLEEPER)]))
    apiserver.wait(lambda: runtime.running("s2", "c"), timeout=30)
    assert "watch ended" not in k.log()


def test_apiserver_down_loses_nothing(kubelet_factory, apiserver, runtime):
    k = join(kubelet_factory, apiserver)
    k.write("st.yaml", f"""
        apiVersion: v1
        kind: Pod
        metadata: {{name: st}}
        spec:
          containers:
          - name: c
            image: {BUSYBOX}
            command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 0.2; done"]
        """)
    apiserver.create("pods", api_pod("a1", [container("c", SLEEPER)]))
    apiserver.wait(lambda: runtime.running("a1", "c") and apiserver.pod(f"st-{NODE}"), timeout=60)
    apiserver.set_down(True)
    time.sleep(60)
    # everything kept running; the kubelet is alive
    assert k.alive() and runtime.running("a1", "c") and runtime.running(f"st-{NODE}", "c")
    apiserver.set_down(False)
    # changes made while it was down (simulated: right after it is back) are picked up
    apiserver.create("pods", api_pod("a2", [container("c", SLEEPER)]))
    apiserver.wait(lambda: runtime.running("a2", "c"), timeout=60)
    # status and the lease flow again
    apiserver.wait(lambda: (p := apiserver.pod("a2")) and p["status"].get("phase") == "Running", timeout=60)
    before = apiserver.get("leases", NODE, namespace="kube-node-lease")["spec"]["renewTime"]
    apiserver.wait(lambda: apiserver.get("leases", NODE, namespace="kube-node-lease")["spec"]["renewTime"] != before,
                   timeout=30)
    assert len(runtime.containers_of("a1", "c")) == 1


# ---------------------------------------------------------------- a refused object fetch


def test_object_fetch_error_fails_the_pass_and_is_retried(kubelet_factory, apiserver, runtime):
    # a 403 on the LIST of a Secret the pod refers to (the Node authorizer of a real apiserver allows what the
    # node's pods refer to, so this comes from the fake's fault injection)
    join(kubelet_factory, apiserver)
    apiserver.create("secrets", secret("guarded", {"p": "pw"}, namespace="default"), namespace="default")
    rule = {"method": "GET", "path_re": "^/api/v1/namespaces/default/secrets$", "status": 403}
    apiserver.faults.append(rule)
    apiserver.create("pods", api_pod("forbidden", [container("app", ["sleep", "3600"])], extra_spec={
        "volumes": [{"name": "sec", "secret": {"secretName": "guarded", "optional": True}}]}), namespace="default")
    ev = apiserver.wait(lambda: [e for e in apiserver.list("events", "default")
                                 if e["involvedObject"]["name"] == "forbidden" and e["reason"] == "FailedMount"],
                        timeout=30)
    assert "failed to get secret default/guarded" in ev[0]["message"]
    assert not runtime.pods_named("forbidden")
    apiserver.faults.remove(rule)
    apiserver.wait(lambda: (c := cstatus(apiserver.pod("forbidden"), "app")) and "running" in c.get("state", {}),
                   timeout=60)
