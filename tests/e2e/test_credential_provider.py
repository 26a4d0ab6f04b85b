"""Credential provider plugins (--image-credential-provider-config, credentialprovider.kubelet.k8s.io/v1) in
front of a registry that requires basic authentication (Debian's docker-registry with an htpasswd file): shell
script plugins answer for their images; the image pulls with the plugin's credentials; the answer is cached by
its cacheKeyType for its cacheDuration (the plugin runs once per period); a plugin that hangs is killed at the
one-minute timeout and one that answers garbage gives no credentials: each pull fails with ErrImagePull saying
why, while the other pods start meanwhile."""
import json
import os
import re
import shutil
import subprocess
import tempfile
import textwrap
import time

import pytest

from conftest import IMAGE_CACHE, SCRIPTS, free_port, wait_for

USER, PASSWORD = "plugged", "pr0vided-Pa55"


@pytest.fixture(scope="module")
def registry():
    d = tempfile.mkdtemp(prefix="ckubelet-credreg-", dir="/var/tmp")
    port = free_port()
    htpasswd = os.path.join(d, "htpasswd")
    subprocess.run(["htpasswd", "-B", "-b", "-c", htpasswd, USER, PASSWORD], check=True, capture_output=True)
    subprocess.run(["bash", os.path.join(SCRIPTS, "registry.sh"), "start", d, str(port), htpasswd], check=True)
    reg = f"127.0.0.1:{port}"
    try:
        src = os.path.join(IMAGE_CACHE, "images.tar.dir")
        for repo in ("good", "hang", "garbage"):
            subprocess.run(["skopeo", "copy", "--quiet", "--dest-tls-verify=false", "--dest-creds",
                            f"{USER}:{PASSWORD}", f"oci:{src}:docker.io/library/busybox:1.36",
                            f"docker://{reg}/{repo}/busybox:1"], check=True)
        yield reg
    finally:
        subprocess.run(["bash", os.path.join(SCRIPTS, "registry.sh"), "stop", d], check=False)
        shutil.rmtree(d, ignore_errors=True)


def write_exec(path, text):
    with open(path, "w") as f:
        f.write(textwrap.dedent(text))
    os.chmod(path, 0o755)


def gone(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def pod(name, image):
    return f"""\
apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  containers:
  - name: app
    image: {image}
    imagePullPolicy: Always
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 0.2; done"]
"""


def test_credential_provider_plugins(kubelet_factory, runtime, registry, tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    calls = tmp_path / "calls"
    # the good plugin: logs its request, answers for the registry (cacheKeyType Registry, 4 s)
    write_exec(bindir / "good", f"""\
        #!/bin/sh
        req=$(cat)
        echo "$req $PLUGIN_ARG1 $@" >> {calls}
        cat <<EOF
        {{"kind":"CredentialProviderResponse","apiVersion":"credentialprovider.kubelet.k8s.io/v1",
          "cacheKeyType":"Registry","cacheDuration":"4s",
          "auth":{{"{registry}":{{"username":"{USER}","password":"{PASSWORD}"}}}}}}
        EOF
        """)
    write_exec(bindir / "hang", f"""\
        #!/bin/sh
        echo "about to hang" >&2
        echo $$ > {tmp_path}/hang.pid
        sleep 3600 &
        echo $! > {tmp_path}/hang.child
        wait
        """)
    write_exec(bindir / "garbage", """\
        #!/bin/sh
        cat >/dev/null
        echo "this is not a CredentialProviderResponse, and the password is hunter2"
        """)
    config = tmp_path / "credential-providers.yaml"
    config.write_text(textwrap.dedent(f"""\
        apiVersion: kubelet.config.k8s.io/v1
        kind: CredentialProviderConfig
        providers:
        - name: good
          matchImages: ["{registry}/good"]
          defaultCacheDuration: 1h
          apiVersion: credentialprovider.kubelet.k8s.io/v1
          args: [--from-config]
          env: [{{name: PLUGIN_ARG1, value: from-env}}]
        - name: hang
          matchImages: ["{registry}/hang"]
          defaultCacheDuration: 1h
          apiVersion: credentialprovider.kubelet.k8s.io/v1
        - name: garbage
          matchImages: ["{registry}/garbage"]
          defaultCacheDuration: 1h
          apiVersion: credentialprovider.kubelet.k8s.io/v1
        """))
    k = kubelet_factory(False)
    k.start("--image-credential-provider-config", str(config), "--image-credential-provider-bin-dir", str(bindir))

    # the hanging plugin first: its pod waits for it, the others start meanwhile
    t_hang = time.monotonic()
    k.write("hang.yaml", pod("hang", f"{registry}/hang/busybox:1"))
    k.wait_log(r'Pulling image: pod="default/hang-testnode"', timeout=30)
    k.write("p1.yaml", pod("p1", f"{registry}/good/busybox:1"))
    wait_for(lambda: runtime.running("p1-testnode", "app"), timeout=60, msg="p1 running with the plugin's credentials")
    k.write("p2.yaml", pod("p2", f"{registry}/good/busybox:1"))
    wait_for(lambda: runtime.running("p2-testnode", "app"), timeout=60, msg="p2 running")
    lines = calls.read_text().splitlines()
    # one run for both pulls (the Registry key, within 4 s); the request as upstream sends it
    assert len(lines) == 1, lines
    req = json.loads(lines[0].rsplit("}", 1)[0] + "}")
    assert req == {"kind": "CredentialProviderRequest", "apiVersion": "credentialprovider.kubelet.k8s.io/v1",
                   "image": f"{registry}/good/busybox"}, req
    assert lines[0].endswith(" from-env --from-config"), lines[0]
    # after the cache period: the plugin runs again
    time.sleep(4.5)
    k.write("p3.yaml", pod("p3", f"{registry}/good/busybox:1"))
    wait_for(lambda: runtime.running("p3-testnode", "app"), timeout=60, msg="p3 running")
    assert len(calls.read_text().splitlines()) == 2

    # garbage: no credentials, the pull fails (the registry wants them) and says why, without the output
    k.write("garbage.yaml", pod("garbage", f"{registry}/garbage/busybox:1"))
    m = k.wait_log(r'container app: Failed to pull image "[^"]+/garbage/busybox:1": (.*) \(ErrImagePull\)', timeout=60)
    assert "credential provider plugin failed: error reading GVK from response" in m.group(1), m.group(1)
    assert "hunter2" not in k.log()

    # the hang: killed at the timeout (one minute), then the same clear error; it never held up the others
    assert not re.search(r'Failed to pull image "[^"]+/hang/busybox:1"', k.log())
    m = k.wait_log(r'container app: Failed to pull image "[^"]+/hang/busybox:1": (.*) \(ErrImagePull\)', timeout=120)
    assert time.monotonic() - t_hang >= 55
    assert (f"credential provider plugin failed: error execing credential provider plugin hang for image "
            f"{registry}/hang/busybox: context deadline exceeded: about to hang") in m.group(1), m.group(1)
    assert not runtime.pods_named("hang-testnode") or not runtime.running("hang-testnode", "app")
    # and its process group is gone: the script and the child it started
    for f in ("hang.pid", "hang.child"):
        pid = int((tmp_path / f).read_text())
        wait_for(lambda: gone(pid), timeout=10, msg=f"process {pid} of the hanging plugin gone")


def test_credential_provider_bad_config(kubelet_factory, tmp_path):
    """An invalid config stops the kubelet at start with upstream's message."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    config = tmp_path / "bad.yaml"
    config.write_text("apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n"
                      "- {name: a/b, matchImages: [x.io], defaultCacheDuration: 1m, "
                      "apiVersion: credentialprovider.kubelet.k8s.io/v1}\n")
    k = kubelet_factory(False)
    k.start("--image-credential-provider-config", str(config), "--image-credential-provider-bin-dir", str(bindir))
    assert k.proc.wait(30) != 0
    assert ("Failed to register CRI auth plugins: failed to validate credential provider config: providers.name: "
            "Invalid value: \"a/b\": provider name cannot contain '/'") in k.log()


def test_credential_provider_service_account_token(kube, registry, tmp_path):
    """tokenAttributes (KubeletServiceAccountTokenForCredentialProviders) against the real control plane: the
    plugin gets a token of the pod's service account for its audience, bound to the pod, and the service account's
    annotations it lists; a pod whose service account lacks the required annotation gets no run of the plugin."""
    from apiobjects import SLEEP, api_pod, container, jwt_claims, running
    bindir = tmp_path / "bin"
    bindir.mkdir()
    calls = tmp_path / "calls"
    write_exec(bindir / "sa", f"""\
        #!/bin/sh
        cat >> {calls}
        echo >> {calls}
        cat <<EOF
        {{"kind":"CredentialProviderResponse","apiVersion":"credentialprovider.kubelet.k8s.io/v1",
          "cacheKeyType":"Image",
          "auth":{{"{registry}":{{"username":"{USER}","password":"{PASSWORD}"}}}}}}
        EOF
        """)
    config = tmp_path / "credential-providers.yaml"
    config.write_text(textwrap.dedent(f"""\
        apiVersion: kubelet.config.k8s.io/v1
        kind: CredentialProviderConfig
        providers:
        - name: sa
          matchImages: ["{registry}/good"]
          defaultCacheDuration: 1h
          apiVersion: credentialprovider.kubelet.k8s.io/v1
          tokenAttributes:
            serviceAccountTokenAudience: my-registry.example
            requireServiceAccount: true
            requiredServiceAccountAnnotationKeys: [example.com/role]
            optionalServiceAccountAnnotationKeys: [example.com/team, example.com/absent]
            cacheType: ServiceAccount
        """))
    kube.create("serviceaccounts", {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {
        "name": "builder", "annotations": {"example.com/role": "puller", "example.com/team": "blue",
                                           "example.com/unlisted": "x"}}})
    sa = kube.get("serviceaccounts", "builder")
    # the node may ask tokens for the plugin's audience (ServiceAccountNodeAudienceRestriction: the admin grants
    # the verb request-serviceaccounts-token-audience on the audience, as the KEP documents)
    kube.create("roles", {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                          "metadata": {"name": "registry-audience"},
                          "rules": [{"apiGroups": [""], "resources": ["my-registry.example"],
                                     "verbs": ["request-serviceaccounts-token-audience"]}]})
    kube.create("rolebindings", {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                                 "metadata": {"name": "registry-audience"},
                                 "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                             "name": "registry-audience"},
                                 "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                                               "name": kube.user}]})
    kube.kubelet("--image-credential-provider-config", str(config), "--image-credential-provider-bin-dir",
                 str(bindir))
    image = f"{registry}/good/busybox:1"
    p = kube.create("pods", api_pod("withsa", [container("app", SLEEP, image=image, imagePullPolicy="Always")],
                                    kube.node, grace=1, extra_spec={"serviceAccountName": "builder"}))
    kube.wait(lambda: running(kube, "withsa"), 90, msg="the pod running with the plugin's credentials")
    [line] = [l for l in calls.read_text().splitlines() if l.strip()]
    req = json.loads(line)
    assert req["image"] == f"{registry}/good/busybox", req
    assert req["serviceAccountAnnotations"] == {"example.com/role": "puller", "example.com/team": "blue"}, req
    claims = jwt_claims(req["serviceAccountToken"])
    assert claims["aud"] == ["my-registry.example"], claims
    assert claims["sub"] == f"system:serviceaccount:{kube.ns}:builder", claims
    k8s = claims["kubernetes.io"]
    assert k8s["serviceaccount"]["uid"] == sa["metadata"]["uid"], claims
    assert k8s["pod"] == {"name": "withsa", "uid": p["metadata"]["uid"]}, claims
    # the token is a real one for that audience
    review = kube.token_review(req["serviceAccountToken"], audiences=["my-registry.example"])
    assert review.get("authenticated"), review

    # the default service account has no example.com/role: the plugin is not run, the pull has no credentials
    kube.create("pods", api_pod("nosa", [container("app", SLEEP, image=image, imagePullPolicy="Always")],
                                kube.node, grace=1))
    kube.wait(lambda: (q := kube.pod("nosa")) and any(
        (c.get("state", {}).get("waiting") or {}).get("reason") in ("ErrImagePull", "ImagePullBackOff")
        for c in q.get("status", {}).get("containerStatuses", [])), 90, msg="nosa failing to pull")
    assert len([l for l in calls.read_text().splitlines() if l.strip()]) == 1
