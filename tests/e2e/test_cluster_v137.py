"""What the v1.37 control plane lets the cluster tests check that v1.20 could not (issue 37): the termination of
API pods with restartable init containers (sidecars), as upstream's node conformance specs "... restartable init
containers exit with non-zero exit code should mark pod as succeeded ..." and "... prestop hook ... should mark pod
as failed ..." do it (a finalizer keeps the deleted pod, whose final status must reach a terminal phase), and
envFrom's variable names as kube-apiserver v1.37 validates them (RelaxedEnvironmentVariableValidation, GA).
Skipped on the v1.20.2 control plane (CKUBELET_K8S_VERSION=v1.20.2), which drops sidecars' restartPolicy."""
import pytest

import controlplane
from apiobjects import api_pod, configmap, container, secret

pytestmark = pytest.mark.skipif(controlplane.LEGACY, reason="needs kube-apiserver v1.37 (sidecars, relaxed names)")

FINALIZER = "ckubelet.test/keep"



def exits_on_term(code, seconds=1):
    """A container that runs until SIGTERM, then exits with code after seconds (upstream's ExecCommand with
    TerminationSeconds and ExitCode)."""
    return ["sh", "-c", f"trap 'sleep {seconds}; exit {code}' TERM; while true; do sleep 0.2; done"]


def sidecar(name, code=0, seconds=1, **kw):
    return container(name, exits_on_term(code, seconds), restartPolicy="Always", **kw)


def terminated(pod, list_name):
    return {c["name"]: (c["state"].get("terminated", {}).get("exitCode"),
                        c["state"].get("terminated", {}).get("reason"))
            for c in pod["status"].get(list_name, [])}


def delete_and_wait_terminal(kube, name, grace, timeout):
    kube.delete("pods", name, grace_seconds=grace)
    return kube.wait(lambda: (p := kube.pod(name)) and p["status"].get("phase") in ("Succeeded", "Failed") and
                     all("terminated" in c["state"] for c in p["status"].get("containerStatuses", []) +
                         p["status"].get("initContainerStatuses", [])) and p, timeout,
                     msg=f"the deleted pod {name} in a terminal phase with every container terminated")


@pytest.fixture
def release(kube):
    """Removes the test's finalizer from its pods at the end, so that the namespace can go."""
    yield
    for p in kube.list("pods"):
        if FINALIZER in p["metadata"].get("finalizers", []):
            kube.patch("pods", p["metadata"]["name"], {"metadata": {"finalizers": None}})


def run_sidecar_pod(kube, name, sidecars, app, grace):
    kube.create("pods", api_pod(name, [app], kube.node, restart_policy="Never", grace=grace,
                                extra_spec={"initContainers": sidecars}) |
                {"metadata": {"name": name, "finalizers": [FINALIZER]}})
    kube.wait(lambda: (p := kube.pod(name)) and p["status"].get("phase") == "Running" and
              all("running" in c["state"] for c in p["status"].get("containerStatuses", [])) and p, 90,
              msg=f"{name} running")


def test_sidecar_non_zero_exit_on_termination_pod_succeeds(kube, release):
    kube.kubelet()
    run_sidecar_pod(kube, "sidecar-exit", [sidecar("s1", 0), sidecar("s2", 1), sidecar("s3", 0)],
                    container("app", exits_on_term(0)), 30)
    p = delete_and_wait_terminal(kube, "sidecar-exit", 30, 60)
    assert p["status"]["phase"] == "Succeeded", p["status"]
    assert terminated(p, "containerStatuses") == {"app": (0, "Completed")}
    assert terminated(p, "initContainerStatuses") == {"s1": (0, "Completed"), "s2": (1, "Error"),
                                                      "s3": (0, "Completed")}


def test_sidecar_prestop_failing_pod_succeeds(kube, release):
    kube.kubelet()
    prestop = {"preStop": {"exec": {"command": ["sh", "-c", "sleep 1; exit 1"]}}}
    run_sidecar_pod(kube, "sidecar-prestop",
                    [sidecar("s1", lifecycle={"preStop": {"exec": {"command": ["sh", "-c", "sleep 1"]}}}),
                     sidecar("s2", lifecycle=prestop),
                     sidecar("s3", lifecycle={"preStop": {"exec": {"command": ["sh", "-c", "sleep 1"]}}})],
                    container("app", exits_on_term(0)), 30)
    p = delete_and_wait_terminal(kube, "sidecar-prestop", 30, 60)
    assert p["status"]["phase"] == "Succeeded", p["status"]
    assert terminated(p, "containerStatuses") == {"app": (0, "Completed")}
    assert terminated(p, "initContainerStatuses") == {"s1": (0, "Completed"), "s2": (0, "Completed"),
                                                      "s3": (0, "Completed")}


def test_regular_prestop_past_grace_pod_fails(kube, release):
    """The app's preStop outlasts the 5 s grace period: the app is killed (137), so is the sidecar that takes
    20 s to stop; the pod is Failed."""
    kube.kubelet()
    app = container("app", exits_on_term(0, 20), lifecycle={"preStop": {"exec": {"command": ["sh", "-c", "sleep 20"]}}})
    run_sidecar_pod(kube, "prestop-grace", [sidecar("s1"), sidecar("s2", 0, 20), sidecar("s3")], app, 5)
    p = delete_and_wait_terminal(kube, "prestop-grace", 5, 60)
    assert p["status"]["phase"] == "Failed", p["status"]
    assert terminated(p, "containerStatuses") == {"app": (137, "Error")}
    assert terminated(p, "initContainerStatuses") == {"s1": (0, "Completed"), "s2": (137, "Error"),
                                                      "s3": (0, "Completed")}


def test_env_from_relaxed_names(kube):
    """Secrets should be consumable via the environment ... with various prefixes (upstream's conformance). The
    container prints the environment it was started with (/proc/1/environ: its shell's), not `env`: Debian's
    busybox ash drops variables whose names are not shell identifiers (data-1) from what it passes on, so `sh -c
    env` shows none of these whatever the kubelet gave it (upstream's busybox image keeps them)."""
    kube.kubelet()
    kube.create("secrets", secret("s", {"data-1": "value-1", "data-2": "value-2"}))
    kube.create("configmaps", configmap("c", {"data-3": "value-3"}))
    env_from = [{"secretRef": {"name": "s"}}, {"prefix": "1-", "secretRef": {"name": "s"}},
                {"prefix": "$_-", "secretRef": {"name": "s"}}, {"prefix": "#@!", "configMapRef": {"name": "c"}}]
    kube.create("pods", api_pod("env", [container("app", ["sh", "-c", "tr '\\0' '\\n' </proc/1/environ; sleep 3600"],
                                                      envFrom=env_from)],
                                kube.node, grace=1))
    want = ["data-1=value-1", "data-2=value-2", "1-data-1=value-1", "$_-data-2=value-2", "#@!data-3=value-3"]

    last = []

    def logs():
        p = kube.kubectl("logs", "-n", kube.ns, "env", check=False, text=True)
        last[:] = [p.stdout + p.stderr]
        return p.returncode == 0 and all(w in p.stdout.splitlines() for w in want) and p.stdout
    try:
        kube.wait(logs, 90, msg=f"the container's environment with {want}")
    finally:
        print("kubectl logs:", last)
    assert not kube.events(involved="env", reason="InvalidEnvironmentVariableNames")
