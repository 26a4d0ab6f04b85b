"""imagePullSecrets (through the real kube-apiserver): an API pod pulls from a registry that requires basic authentication (Debian
docker-registry with an htpasswd file, on a free 127.0.0.1 port, which containerd reaches over plain HTTP
as a loopback registry) with the credentials of its kubernetes.io/dockerconfigjson Secret; without them,
or with wrong ones, the pull fails with ErrImagePull and backs off."""
import base64
import hashlib
import json
import os
import shutil
import subprocess
import tempfile

import pytest

from conftest import IMAGE_CACHE, SCRIPTS, free_port, wait_for
from apiobjects import api_pod, cstatus

USER, PASSWORD = "puller", "s3cret-Pa55"


@pytest.fixture(scope="module")
def auth_registry():
    d = tempfile.mkdtemp(prefix="ckubelet-authreg-", dir="/var/tmp")
    port = free_port()
    htpasswd = os.path.join(d, "htpasswd")
    subprocess.run(["htpasswd", "-B", "-b", "-c", htpasswd, USER, PASSWORD], check=True, capture_output=True)
    subprocess.run(["bash", os.path.join(SCRIPTS, "registry.sh"), "start", d, str(port), htpasswd], check=True)
    reg = f"127.0.0.1:{port}"
    try:
        src = os.path.join(IMAGE_CACHE, "images.tar.dir")
        subprocess.run(["skopeo", "copy", "--quiet", "--dest-tls-verify=false", "--dest-creds", f"{USER}:{PASSWORD}",
                        f"oci:{src}:docker.io/library/busybox:1.36", f"docker://{reg}/private/busybox:1"], check=True)
        yield reg
    finally:
        subprocess.run(["bash", os.path.join(SCRIPTS, "registry.sh"), "stop", d], check=False)
        shutil.rmtree(d, ignore_errors=True)


def dockerconfig_secret(name, registry, user, password, type_="kubernetes.io/dockerconfigjson"):
    entry = {"auth": base64.b64encode(f"{user}:{password}".encode()).decode()}
    if type_ == "kubernetes.io/dockerconfigjson":
        key, cfg = ".dockerconfigjson", {"auths": {registry: entry}}
    else:
        key, cfg = ".dockercfg", {registry: entry}
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "type": type_,
            "data": {key: base64.b64encode(json.dumps(cfg).encode()).decode()}}


def private_pod(kube, name, image, secrets):
    return api_pod(name, [{"name": "app", "image": image, "command": ["sleep", "3600"],
                           "imagePullPolicy": "Always"}], kube.node,
                   extra_spec={"imagePullSecrets": [{"name": s} for s in secrets]})


def reported_waiting(kube, name, reason):
    """The waiting state with that reason of container app, as the kubelet PATCHed it (from the audit log: a
    short-lived state such as ErrImagePull is easily missed by polling the pod)."""
    for e in kube.audit():
        ref = e["objectRef"]
        if e["verb"] == "patch" and ref.get("name") == name and ref.get("subresource") == "status":
            for c in e["requestObject"].get("status", {}).get("containerStatuses", []):
                w = c.get("state", {}).get("waiting", {})
                if c["name"] == "app" and w.get("reason") == reason:
                    return w
    return None


def state(kube, name):
    p = kube.pod(name)
    c = p and cstatus(p, "app")
    return (c or {}).get("state", {})


def test_pull_with_and_without_secret(kube, auth_registry, runtime):
    image = f"{auth_registry}/private/busybox:1"
    k = kube.kubelet()
    kube.create("secrets", dockerconfig_secret("regcred", f"https://{auth_registry}/v2/", USER, PASSWORD))
    kube.create("secrets", dockerconfig_secret("wrongcred", auth_registry + "/private", USER, "nope",
                                                    type_="kubernetes.io/dockercfg"))

    # without a secret: ErrImagePull (with the runtime's message), then ImagePullBackOff
    kube.create("pods", private_pod(kube, "nocreds", image, []))
    w = kube.wait(lambda: reported_waiting(kube, "nocreds", "ErrImagePull"), 60, msg="ErrImagePull reported")
    kube.wait(lambda: state(kube, "nocreds").get("waiting", {}).get("reason") == "ImagePullBackOff",
              timeout=60, msg="ImagePullBackOff")
    assert 'Failed to pull image "' + image + '"' in k.log()
    nocreds_msg = w["message"]

    # a wrong credential first, then the right one: each is tried in turn, the pull succeeds
    kube.create("pods", private_pod(kube, "withcreds", image, ["wrongcred", "missing", "regcred"]))
    kube.wait(lambda: "running" in state(kube, "withcreds"), timeout=90)
    assert runtime.running("withcreds", "app")
    ev = [e for e in kube.list("events") if e["involvedObject"]["name"] == "withcreds"]
    missing = [e for e in ev if e["reason"] == "FailedToRetrieveImagePullSecret"]
    assert missing and missing[0]["message"] == (
        f"Unable to retrieve some image pull secrets ({kube.ns}/missing); attempting to pull the image may not succeed.")
    assert any(e["reason"] == "Pulled" for e in ev)
    # the more specific key (with the path) first, then the registry's
    tries = [line.split("with the credentials for ")[1] for line in k.log().splitlines()
             if 'pulling image "' + image + '" with the credentials for' in line and "withcreds" in line]
    assert tries[:2] == [auth_registry + "/private", auth_registry], tries
    # secrets never reach the log
    log = k.log()
    assert PASSWORD not in log and base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode() not in log

    # only wrong credentials: ErrImagePull with the runtime's message
    kube.create("pods", private_pod(kube, "badcreds", image, ["wrongcred"]))
    w = kube.wait(lambda: reported_waiting(kube, "badcreds", "ErrImagePull"), 60, msg="ErrImagePull reported")
    assert not runtime.pods_named("badcreds") or not runtime.running("badcreds", "app")
    # the registry's refusal in the runtime's words (containerd 1.6: "401 Unauthorized"; 2.1 names the missing
    # credentials: "authorization failed: no basic auth credentials")
    refused = ("401 Unauthorized", "authorization failed")
    assert any(s in nocreds_msg for s in refused) and any(s in w["message"] for s in refused), (nocreds_msg, w)


def pod_with_policy(kube, name, image, secrets, policy="IfNotPresent"):
    return api_pod(name, [{"name": "app", "image": image, "command": ["sleep", "3600"],
                           "imagePullPolicy": policy}], kube.node,
                   extra_spec={"imagePullSecrets": [{"name": s} for s in secrets]})


def pulled_this(k, kube, name):
    return f'Pulling image: pod="{kube.ns}/{name}"' in k.log()


def test_pulled_image_credentials_verified(kube, auth_registry, runtime):
    """KubeletEnsureSecretPulledImages (beta, on): an image pulled with a pull secret's credentials is not used
    by a pod without them: with IfNotPresent it is pulled again with the pod's (none: the registry's 401,
    ErrImagePull), with Never it fails (ErrImageNeverPull); a pod with the same secret uses it without a pull.
    The records (<root-dir>/image_manager) survive a kill -9 of ckubelet."""
    image = f"{auth_registry}/private/ensured:1"
    src = os.path.join(IMAGE_CACHE, "images.tar.dir")
    subprocess.run(["skopeo", "copy", "--quiet", "--dest-tls-verify=false", "--dest-creds", f"{USER}:{PASSWORD}",
                    f"oci:{src}:docker.io/library/busybox:1.36", f"docker://{image}"], check=True)
    k = kube.kubelet()
    secret = kube.create("secrets", dockerconfig_secret("regcred", auth_registry, USER, PASSWORD))

    kube.create("pods", pod_with_policy(kube, "a", image, ["regcred"]))
    kube.wait(lambda: "running" in state(kube, "a"), timeout=90, msg="pod a running")
    assert pulled_this(k, kube, "a")
    pulled_dir = os.path.join(k.root, "image_manager", "pulled")
    wait_for(lambda: os.listdir(pulled_dir), timeout=10, msg="a pulled record")
    [name] = os.listdir(pulled_dir)
    with open(os.path.join(pulled_dir, name)) as f:
        rec = json.load(f)
    assert rec["kind"] == "ImagePulledRecord" and rec["apiVersion"] == "kubelet.config.k8s.io/v1alpha1"
    [coords] = rec["credentialMapping"][f"{auth_registry}/private/ensured"]["kubernetesSecretCoordinates"]
    assert coords["namespace"] == kube.ns and coords["name"] == "regcred"
    assert coords["uid"] == secret["metadata"]["uid"] and len(coords["credentialHash"]) == 64
    assert name == "sha256-" + hashlib.sha256(rec["imageRef"].encode()).hexdigest()
    assert os.listdir(os.path.join(k.root, "image_manager", "pulling")) == []
    assert PASSWORD not in json.dumps(rec)

    # no secret: the image present is not used, it is pulled again without credentials and refused
    kube.create("pods", pod_with_policy(kube, "b", image, []))
    w = kube.wait(lambda: reported_waiting(kube, "b", "ErrImagePull"), 60, msg="pod b ErrImagePull")
    assert any(s in w["message"] for s in ("401 Unauthorized", "authorization failed")), w
    assert pulled_this(k, kube, "b")
    assert not runtime.pods_named("b") or not runtime.running("b", "app")
    # Never: refused at once
    kube.create("pods", pod_with_policy(kube, "never", image, [], policy="Never"))
    w = kube.wait(lambda: reported_waiting(kube, "never", "ErrImageNeverPull"), 60, msg="ErrImageNeverPull")
    assert w["message"] == (f'Container image "{image}" is present with pull policy of "Never" but does not have '
                            'the proper auth (image secret) that was used to pull the image'), w
    # the same secret: used as it is
    kube.create("pods", pod_with_policy(kube, "c", image, ["regcred"]))
    kube.wait(lambda: "running" in state(kube, "c"), timeout=90, msg="pod c running")
    assert not pulled_this(k, kube, "c")
    kube.wait(lambda: [e for e in kube.events("c", "Pulled") if e["message"] == (
        f'Container image "{image}" already present on machine and can be accessed by the pod')], 30,
        msg="pod c's Pulled event")

    # the records survive a kill -9
    k.kill9()
    k.start()
    kube.create("pods", pod_with_policy(kube, "d", image, []))
    kube.wait(lambda: reported_waiting(kube, "d", "ErrImagePull"), 90, msg="pod d ErrImagePull after the restart")
    kube.create("pods", pod_with_policy(kube, "e", image, ["regcred"]))
    kube.wait(lambda: "running" in state(kube, "e"), timeout=90, msg="pod e running")
    assert not pulled_this(k, kube, "e")
