"""API objects of pods against the fake kube-apiserver: the ConfigMaps and Secrets a pod refers to are listed
and watched before its sandbox is created, a required missing one blocks the pod with upstream's message
until it appears, an update of a watched ConfigMap syncs the pod again, and projected service account
tokens are requested with the pod's audience and bound to the pod."""
import base64
import time
import urllib.parse

from conftest import wait_for
from test_cluster import api_pod, apiserver, container, cstatus, join  # noqa: F401 (apiserver is a fixture)

SLEEP = ["sleep", "3600"]


def configmap(name, data):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"},
            "data": data}


def secret(name, data, type_="Opaque"):
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": "default"}, "type": type_,
            "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}}


def object_requests(apiserver, resource, name, watch):
    sel = "fieldSelector=" + urllib.parse.quote("metadata.name=" + name, safe="")
    return [r for r in list(apiserver.requests)
            if r.method == "GET" and r.path.startswith(f"/api/v1/namespaces/default/{resource}?")
            and sel in r.path and ("watch=true" in r.path) == watch]


def running(apiserver, name):
    p = apiserver.pod(name)
    c = p and cstatus(p, "app")
    return p if c and "running" in c.get("state", {}) else None


def events(apiserver, pod, reason):
    return [e for e in apiserver.list("events", "default")
            if e["involvedObject"]["name"] == pod and e["reason"] == reason]


def test_objects_fetched_watched_and_token(kubelet_factory, apiserver, runtime):
    k = join(kubelet_factory, apiserver)
    apiserver.create("configmaps", configmap("app-config", {"k": "v1"}), namespace="default")
    apiserver.create("secrets", secret("app-secret", {"p": "pw"}), namespace="default")
    apiserver.create("pods", api_pod("objs", [
        container("app", SLEEP, env=[
            {"name": "K", "valueFrom": {"configMapKeyRef": {"name": "app-config", "key": "k"}}},
            {"name": "O", "valueFrom": {"secretKeyRef": {"name": "absent-secret", "key": "x", "optional": True}}}]),
    ], extra_spec={"serviceAccountName": "builder", "volumes": [
        {"name": "cfg", "configMap": {"name": "app-config"}},
        {"name": "sec", "secret": {"secretName": "app-secret"}},
        {"name": "opt", "configMap": {"name": "absent-config", "optional": True}},
        {"name": "tok", "projected": {"sources": [
            {"serviceAccountToken": {"path": "token", "audience": "vault", "expirationSeconds": 3600}}]}}]}),
        namespace="default")
    uid = apiserver.pod("objs")["metadata"]["uid"]
    apiserver.wait(lambda: running(apiserver, "objs"), timeout=60)

    # listed, then watched, each once although referenced twice; optional missing ones do not block
    for resource, name in (("configmaps", "app-config"), ("secrets", "app-secret"),
                           ("configmaps", "absent-config"), ("secrets", "absent-secret")):
        assert len(object_requests(apiserver, resource, name, watch=False)) == 1, name
        wait_for(lambda: object_requests(apiserver, resource, name, watch=True), 10, msg=f"watch of {name}")
    # fetched before the sandbox was created
    log = k.log()
    sandbox_at = log.index('Creating pod sandbox: pod="default/objs"')
    for what in ("ConfigMap default/app-config: fetched", "Secret default/app-secret: fetched",
                 "ConfigMap default/absent-config: not found", "Secret default/absent-secret: not found",
                 "got a token for service account default/builder"):
        assert -1 < log.find(what) < sandbox_at, what

    # the TokenRequest: the pod's service account, audience and expiration, bound to the pod
    reqs = [b for b in apiserver.request_bodies
            if b.method == "POST" and b.path == "/api/v1/namespaces/default/serviceaccounts/builder/token"]
    assert len(reqs) == 1
    spec = reqs[0].body["spec"]
    assert reqs[0].body["kind"] == "TokenRequest"
    assert spec["audiences"] == ["vault"] and spec["expirationSeconds"] == 3600
    assert spec["boundObjectRef"] == {"apiVersion": "v1", "kind": "Pod", "name": "objs", "uid": uid}
    # the token itself never appears in the log
    issued = [t for t, (user, _) in apiserver.tokens.items() if user == "system:serviceaccount:default:builder"]
    assert issued and not any(t in k.log() for t in issued)

    # a change of the ConfigMap makes the pod sync again; the cached token is not requested again
    apiserver.update("configmaps", configmap("app-config", {"k": "v2"}))
    k.wait_log(r"ConfigMap default/app-config changed: syncing pod " + uid, timeout=20)
    apiserver.update("secrets", secret("app-secret", {"p": "pw2"}))
    k.wait_log(r"Secret default/app-secret changed: syncing pod " + uid, timeout=20)
    assert len([b for b in apiserver.request_bodies if b.path.endswith("/serviceaccounts/builder/token")]) == 1
    # the objects are not listed again: the watch keeps them current
    assert len(object_requests(apiserver, "configmaps", "app-config", watch=False)) == 1
    # a deletion also reaches the pod (a running pod keeps running)
    apiserver.delete("secrets", "app-secret", namespace="default")
    wait_for(lambda: k.log().count("Secret default/app-secret changed: syncing pod " + uid) >= 2, 20,
             msg="sync after the deletion")
    assert running(apiserver, "objs")

    # the pod goes away: its objects are no longer watched
    apiserver.delete("pods", "objs", namespace="default", grace_seconds=0)
    wait_for(lambda: not runtime.pods_named("objs"), 60, msg="pod gone")
    apiserver.update("configmaps", configmap("app-config", {"k": "v3"}))
    n = len(object_requests(apiserver, "configmaps", "app-config", watch=True))
    # no new watch is started for it (a stopped watch would otherwise be restarted at once)
    time.sleep(2)
    assert len(object_requests(apiserver, "configmaps", "app-config", watch=True)) == n


def test_required_missing_blocks_until_created(kubelet_factory, apiserver, runtime):
    k = join(kubelet_factory, apiserver)
    apiserver.create("pods", api_pod("blocked", [
        container("app", SLEEP, envFrom=[{"configMapRef": {"name": "late-config"}}]),
    ], extra_spec={"volumes": [{"name": "sec", "secret": {"secretName": "late-secret"}}]}), namespace="default")

    def waiting(reason):
        def check():
            p = apiserver.pod("blocked")
            c = p and cstatus(p, "app")
            w = c and c.get("state", {}).get("waiting")
            return w if w and w.get("reason") == reason else None
        return check

    # a volume's missing Secret blocks the whole pod before its sandbox (WaitForAttachAndMount)
    ev = apiserver.wait(lambda: events(apiserver, "blocked", "FailedMount"), timeout=30)
    assert ev[0]["message"] == 'MountVolume.SetUp failed for volume "sec" : secret "late-secret" not found'
    assert ev[0]["type"] == "Warning"
    apiserver.wait(waiting("ContainerCreating"), timeout=20)
    assert apiserver.pod("blocked")["status"]["phase"] == "Pending"
    assert not runtime.pods_named("blocked")  # nothing was created for it

    # with the Secret (delivered by its watch) the sandbox is made; the env's missing ConfigMap is that
    # container's CreateContainerConfigError
    apiserver.create("secrets", secret("late-secret", {"p": "pw"}), namespace="default")
    w = apiserver.wait(waiting("CreateContainerConfigError"), timeout=30)
    assert w["message"] == 'configmap "late-config" not found'
    assert apiserver.pod("blocked")["status"]["phase"] == "Pending"
    assert runtime.pods_named("blocked")
    assert 'configmap "late-config" not found' in k.log()

    # once the ConfigMap exists too, the pod starts
    apiserver.create("configmaps", configmap("late-config", {"A": "1"}), namespace="default")
    apiserver.wait(lambda: running(apiserver, "blocked"), timeout=60)
    assert len(object_requests(apiserver, "configmaps", "late-config", watch=False)) >= 1


def test_fetch_error_fails_the_pass_and_is_retried(kubelet_factory, apiserver, runtime):
    k = join(kubelet_factory, apiserver)
    apiserver.create("secrets", secret("guarded", {"p": "pw"}), namespace="default")
    rule = {"method": "GET", "path_re": "^/api/v1/namespaces/default/secrets$", "status": 403}
    apiserver.faults.append(rule)
    apiserver.create("pods", api_pod("forbidden", [container("app", SLEEP)], extra_spec={
        "volumes": [{"name": "sec", "secret": {"secretName": "guarded", "optional": True}}]}), namespace="default")
    ev = apiserver.wait(lambda: events(apiserver, "forbidden", "FailedMount"), timeout=30)
    assert "failed to get secret default/guarded" in ev[0]["message"]
    assert not runtime.pods_named("forbidden")
    apiserver.faults.remove(rule)
    apiserver.wait(lambda: running(apiserver, "forbidden"), timeout=60)
