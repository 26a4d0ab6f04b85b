"""API objects of pods against the real kube-apiserver (the Node authorizer lets a node read only what its
pods refer to): the ConfigMaps and Secrets a pod refers to are listed and watched by name before its sandbox
is created, a required missing one blocks the pod with upstream's message until it appears, an update of a
watched ConfigMap syncs the pod again, and projected service account tokens are requested with the pod's
audience and bound to the pod (TokenRequest, checked by a TokenReview)."""
import re
import time
import urllib.parse

import controlplane
from apiobjects import api_pod as _api_pod
from apiobjects import configmap, container, cstatus, jwt_claims, running, secret  # noqa: F401
from conftest import wait_for

SLEEP = ["sleep", "3600"]


def api_pod(kube, name, containers, **kw):
    return _api_pod(name, containers, kube.node, **kw)


def object_requests(kube, resource, name, watch):
    """The kubelet's answered LISTs (or WATCHes) of one object by name, from the audit log (a refusal by the Node
    authorizer while it learns of a new pod is retried, and is not a list)."""
    sel = "fieldSelector=" + urllib.parse.quote("metadata.name=" + name, safe="")
    return [e for e in kube.audit()
            if e["verb"] == ("watch" if watch else "list") and e.get("responseStatus", {}).get("code") == 200 and
            e["requestURI"].startswith(f"/api/v1/namespaces/{kube.ns}/{resource}?") and sel in e["requestURI"]]


def token_requests(kube, sa):
    return [e for e in kube.audit() if e["verb"] == "create" and e["objectRef"].get("resource") == "serviceaccounts"
            and e["objectRef"].get("name") == sa and e["objectRef"].get("subresource") == "token"]


def events(kube, pod, reason):
    return kube.events(pod, reason)


def service_account(kube, name):
    """A service account; before v1.24 also its token Secret (the ServiceAccount admission plugin needed it; since
    v1.24 no token Secret is made for it)."""
    kube.create("serviceaccounts", {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}})
    if controlplane.LEGACY:
        kube.wait(lambda: kube.get("serviceaccounts", name).get("secrets"), 60, msg=f"the token of {name}")


def test_objects_fetched_watched_and_token(kube, runtime):
    k = kube.kubelet()
    ns = kube.ns
    service_account(kube, "builder")
    kube.create("configmaps", configmap("app-config", {"k": "v1"}))
    kube.create("secrets", secret("app-secret", {"p": "pw"}))
    kube.create("pods", api_pod(kube, "objs", [
        container("app", SLEEP, env=[
            {"name": "K", "valueFrom": {"configMapKeyRef": {"name": "app-config", "key": "k"}}},
            {"name": "O", "valueFrom": {"secretKeyRef": {"name": "absent-secret", "key": "x", "optional": True}}}],
            volumeMounts=[{"name": "tok", "mountPath": "/tok"}]),
    ], extra_spec={"serviceAccountName": "builder", "automountServiceAccountToken": False, "volumes": [
        {"name": "cfg", "configMap": {"name": "app-config"}},
        {"name": "sec", "secret": {"secretName": "app-secret"}},
        {"name": "opt", "configMap": {"name": "absent-config", "optional": True}},
        {"name": "tok", "projected": {"sources": [
            {"serviceAccountToken": {"path": "token", "audience": "vault", "expirationSeconds": 3600}}]}}]}))
    uid = kube.pod("objs")["metadata"]["uid"]
    kube.wait(lambda: running(kube, "objs"), timeout=90, msg="pod objs running")

    # listed, then watched, each once although referenced twice; optional missing ones do not block
    for resource, name in (("configmaps", "app-config"), ("secrets", "app-secret"),
                           ("configmaps", "absent-config"), ("secrets", "absent-secret")):
        assert len(object_requests(kube, resource, name, watch=False)) == 1, name
        # (kube-apiserver 1.20 audits a watch only when it ends: the kubelet says it watches)
        k.wait_log(rf"watching {'ConfigMap' if resource == 'configmaps' else 'Secret'} {ns}/{name}\b", 10)
    # fetched before the sandbox was created
    log = k.log()
    sandbox_at = log.index(f'Creating pod sandbox: pod="{ns}/objs"')
    for what in (f"ConfigMap {ns}/app-config: fetched", f"Secret {ns}/app-secret: fetched",
                 f"ConfigMap {ns}/absent-config: not found", f"Secret {ns}/absent-secret: not found",
                 f"got a token for service account {ns}/builder"):
        assert -1 < log.find(what) < sandbox_at, what

    # one TokenRequest, for the pod's service account; the token in the volume is one the apiserver accepts for
    # the pod's audience only, as that service account, bound to the pod, with the asked expiration
    # (kube-apiserver 1.20 cannot write a TokenRequest body to its audit log: the token says what was asked)
    reqs = token_requests(kube, "builder")
    assert len(reqs) == 1 and reqs[0]["responseStatus"]["code"] == 201
    cid = runtime.running("objs", "app")[0]["id"]
    token = runtime.crictl("exec", cid, "--", "cat", "/tok/token").stdout
    review = kube.token_review(token, ["vault"])
    assert review["authenticated"] and review["user"]["username"] == f"system:serviceaccount:{ns}:builder"
    assert review["user"]["extra"]["authentication.kubernetes.io/pod-uid"] == [uid]
    assert not kube.token_review(token, ["another-audience"]).get("authenticated")
    claims = jwt_claims(token)
    assert claims["aud"] == ["vault"] and claims["exp"] - claims["iat"] == 3600
    assert claims["kubernetes.io"]["pod"] == {"name": "objs", "uid": uid}
    # the token itself never appears in the log
    assert token not in k.log()

    # a change of the ConfigMap makes the pod sync again; the cached token is not requested again
    kube.update("configmaps", configmap("app-config", {"k": "v2"}))
    k.wait_log(rf"ConfigMap {ns}/app-config changed: syncing pod " + uid, timeout=20)
    kube.update("secrets", secret("app-secret", {"p": "pw2"}))
    k.wait_log(rf"Secret {ns}/app-secret changed: syncing pod " + uid, timeout=20)
    assert len(token_requests(kube, "builder")) == 1
    # the objects are not listed again: the watch keeps them current
    assert len(object_requests(kube, "configmaps", "app-config", watch=False)) == 1
    # a deletion also reaches the pod (a running pod keeps running)
    kube.delete("secrets", "app-secret")
    wait_for(lambda: k.log().count(f"Secret {ns}/app-secret changed: syncing pod " + uid) >= 2, 20,
             msg="sync after the deletion")
    assert running(kube, "objs")

    # the pod goes away: its objects are no longer watched
    kube.delete("pods", "objs", grace_seconds=0)
    wait_for(lambda: not runtime.pods_named("objs"), 60, msg="pod gone")
    k.wait_log(rf"no longer watching ConfigMap {ns}/app-config", 30)
    # the watch's connection was closed (the apiserver audits it as complete)
    kube.wait(lambda: [e for e in object_requests(kube, "configmaps", "app-config", watch=True)
                       if e["stage"] == "ResponseComplete"], 30, msg="the watch of app-config ended")
    kube.update("configmaps", configmap("app-config", {"k": "v3"}))
    # no new watch is started for it (a stopped watch would otherwise be restarted at once)
    time.sleep(2)
    assert len(re.findall(rf"\] watching ConfigMap {ns}/app-config\b", k.log())) == 1


def test_required_missing_blocks_until_created(kube, runtime):
    k = kube.kubelet()
    kube.create("pods", api_pod(kube, "blocked", [
        container("app", SLEEP, envFrom=[{"configMapRef": {"name": "late-config"}}]),
    ], extra_spec={"volumes": [{"name": "sec", "secret": {"secretName": "late-secret"}}]}))

    def waiting(reason):
        def check():
            p = kube.pod("blocked")
            c = p and cstatus(p, "app")
            w = c and c.get("state", {}).get("waiting")
            return w if w and w.get("reason") == reason else None
        return check

    # a volume's missing Secret blocks the whole pod before its sandbox (WaitForAttachAndMount)
    ev = kube.wait(lambda: events(kube, "blocked", "FailedMount"), timeout=30)
    assert ev[0]["message"] == 'MountVolume.SetUp failed for volume "sec" : secret "late-secret" not found'
    assert ev[0]["type"] == "Warning"
    kube.wait(waiting("ContainerCreating"), timeout=20)
    assert kube.pod("blocked")["status"]["phase"] == "Pending"
    assert not runtime.pods_named("blocked")  # nothing was created for it

    # with the Secret (delivered by its watch) the sandbox is made; the env's missing ConfigMap is that
    # container's CreateContainerConfigError
    kube.create("secrets", secret("late-secret", {"p": "pw"}))
    w = kube.wait(waiting("CreateContainerConfigError"), timeout=30)
    assert w["message"] == 'configmap "late-config" not found'
    assert kube.pod("blocked")["status"]["phase"] == "Pending"
    assert runtime.pods_named("blocked")
    assert 'configmap "late-config" not found' in k.log()

    # once the ConfigMap exists too, the pod starts
    kube.create("configmaps", configmap("late-config", {"A": "1"}))
    kube.wait(lambda: running(kube, "blocked"), timeout=60)
    assert len(object_requests(kube, "configmaps", "late-config", watch=False)) >= 1
