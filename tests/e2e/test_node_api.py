"""Upstream v1.37 behaviours of the node's API surface (issues 37 and 32): node.status.declaredFeatures against
the real v1.37 control plane, 405 Method Not Allowed from the read-only endpoints, the pod resources API's Get,
the client CA bundle reloaded without a restart, and the node log query on files under /var/log."""
import os
import shutil
import time

from apiobjects import SLEEP, api_pod, cond, container
from apiclient import Client
from conftest import wait_for
from test_api import cas, start_api  # noqa: F401 (cas is a fixture)


# ---------------------------------------------------------------- declaredFeatures (NodeDeclaredFeatures, GA v1.37)


def test_declared_features_only_what_ckubelet_implements(kube):
    """Upstream v1.37 declares RestartAllContainersOnContainerExits, InPlacePodLevelResourcesVerticalScaling,
    ExtendWebSocketsToKubelet and InPlacePodVerticalScalingInitContainers by default; ckubelet implements
    InPlacePodLevelResourcesVerticalScaling and ExtendWebSocketsToKubelet, so its node declares those two (sorted,
    as the apiserver requires), and the v1.37 scheduler keeps a pod that needs one of the others off it."""
    kube.kubelet()
    node = kube.wait(lambda: (n := kube.node_obj()) and cond(n, "Ready") and cond(n, "Ready")["status"] == "True"
                     and n, 60, msg="the node Ready")
    assert node["status"].get("declaredFeatures") == ["ExtendWebSocketsToKubelet",
                                                      "InPlacePodLevelResourcesVerticalScaling"], node["status"]

    # a pod with a RestartAllContainers rule needs RestartAllContainersOnContainerExits declared by its node
    p = api_pod("restart-all", [container("app", SLEEP, restartPolicy="Never",
                                          restartPolicyRules=[{"action": "RestartAllContainers",
                                                               "exitCodes": {"operator": "In", "values": [42]}}])],
                kube.node, restart_policy="Never", grace=1)
    del p["spec"]["nodeName"]
    p["spec"]["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [kube.node]}]}]}}}
    kube.create("pods", p)
    sched = kube.wait(lambda: (q := kube.pod("restart-all")) and cond(q, "PodScheduled") and q, 60,
                      msg="the scheduler's verdict")
    c = cond(sched, "PodScheduled")
    assert c["status"] == "False" and c["reason"] == "Unschedulable", c
    assert "didn't match Pod's required features" in c.get("message", ""), c
    assert not sched["spec"].get("nodeName")


# ---------------------------------------------------------------- 405 from the read-only endpoints (v1.37)


def test_read_only_endpoints_refuse_other_methods(kubelet_factory, cas):  # noqa: F811
    api = start_api(kubelet_factory, cas)
    for path in ("/pods", "/runningpods/", "/containerLogs/default/p/c", "/logs/"):
        for method in ("POST", "PUT", "DELETE", "PATCH", "HEAD"):
            status, body, headers = api.admin.request(path, method=method)
            assert status == 405, (path, method, status, body)
            assert headers.get("Allow") == "GET", (path, method, headers)
            if method != "HEAD":
                assert body == "405: Method Not Allowed", (path, method, body)
        assert api.admin.request(path)[0] != 405, path
    # GET and POST routes: /stats/summary and the streaming endpoints
    for path in ("/stats/summary", "/exec/default/p/c"):
        status, body, headers = api.admin.request(path, method="PUT")
        assert (status, body, headers.get("Allow")) == (405, "405: Method Not Allowed", "GET, POST"), path
    status, _, headers = api.admin.request("/run/default/p/c", method="GET")
    assert (status, headers.get("Allow")) == (405, "POST")
    # the read-only port too
    status, body, headers = api.readonly.request("/pods", method="DELETE")
    assert (status, body, headers.get("Allow")) == (405, "405: Method Not Allowed", "GET")


# ---------------------------------------------------------------- --client-ca-file reloaded (issue 32 item 5)


def test_client_ca_file_reloaded_without_restart(kubelet_factory, cas, tmp_path):  # noqa: F811
    ca, other = cas
    bundle = tmp_path / "client-ca.crt"
    shutil.copy(ca.crt, bundle)
    k = kubelet_factory(start=False)
    k.start("--client-ca-file", str(bundle), "--authorization-mode", "AlwaysAllow")
    admin = Client(k.port, cert=ca.client("admin", ["system:masters"]))
    newcomer = Client(k.port, cert=other.client("newcomer"))
    wait_for(lambda: admin.get("/pods")[0] == 200, msg="the API")
    pid = k.proc.pid
    # a certificate from a CA not in the bundle is not authenticated
    assert newcomer.get("/pods")[0] == 401

    # a broken bundle keeps the one in use, with an error
    bundle.write_text("-----BEGIN CERTIFICATE-----\nbroken\n-----END CERTIFICATE-----\n")
    wait_for(lambda: "Failed to reload the client CA bundle" in k.log(), msg="the reload error")
    assert admin.get("/pods")[0] == 200
    assert newcomer.get("/pods")[0] == 401

    # both CAs: the newcomer is accepted on a new connection, the old CA still works, nothing restarted
    with open(ca.crt) as a, open(other.crt) as b:
        tmp = tmp_path / "client-ca.crt.new"
        tmp.write_text(a.read() + b.read())
        os.rename(tmp, bundle)
    wait_for(lambda: newcomer.get("/pods")[0] == 200, msg="the new CA accepted")
    assert admin.get("/pods")[0] == 200
    assert "Loaded a new client CA bundle" in k.log()

    # the old CA dropped: its clients are refused from then on
    shutil.copy(other.crt, bundle)
    wait_for(lambda: admin.get("/pods")[0] == 401, msg="the old CA refused")
    assert newcomer.get("/pods")[0] == 200
    assert k.proc.pid == pid and k.proc.poll() is None


# ---------------------------------------------------------------- node log query on files (issue 32 item 15)


def test_node_log_query_on_files(kubelet_factory, cas):  # noqa: F811
    ca, _ = cas
    name = f"ckubelet-nlq-{os.getpid()}.log"
    path = os.path.join("/var/log", name)
    with open(path, "w") as f:
        f.write("first line\nsecond line\n")
    try:
        k = kubelet_factory(start=False)
        with open(k.config, "a") as f:
            f.write("enableSystemLogQuery: true\n")
        k.start("--client-ca-file", ca.crt, "--authorization-mode", "AlwaysAllow")
        admin = Client(k.port, cert=ca.client("admin", ["system:masters"]))
        wait_for(lambda: admin.get("/healthz")[0] == 200, msg="the API")

        # a query naming a file under /var/log serves it
        status, body, _ = admin.get(f"/logs/?query=/{name}")
        assert (status, body) == (200, "first line\nsecond line\n")
        # without the query's parameters, /logs/ is the file server as before
        assert admin.get(f"/logs/{name}")[:2] == (200, "first line\nsecond line\n")

        # upstream's checks and messages: 400 for what does not parse, 406 for what does not validate
        assert admin.get("/logs/?query=a&tailLines=x")[:2] == (
            400, 'tailLines: Invalid value: "x": strconv.Atoi: parsing "x": invalid syntax\n')
        assert admin.get("/logs/?query=%20")[:2] == (400, 'query: Invalid value: [" "]: may not be empty\n')
        assert admin.get(f"/logs/{name}?query=/{name}")[:2] == (406, "path not allowed in query mode\n")
        assert admin.get(f"/logs/?query=/{name}&tailLines=1")[:2] == (
            406, f'query: Invalid value: ["/{name}"]: cannot specify file with options\n')
        assert admin.get("/logs/?query=/nope-ckubelet.log")[:2] == (
            406, 'query: Invalid value: ["/nope-ckubelet.log"]: statat /nope-ckubelet.log: no such file or '
            'directory\n')
        assert admin.get("/logs/?query=../etc/passwd")[:2] == (
            406, 'query: Invalid value: ["../etc/passwd"]: statat ../etc/passwd: path escapes from parent\n')
        assert admin.get("/logs/?query=kubelet&boot=1")[:2] == (406, "boot: Invalid value: 1: must be less than 1\n")
        # a service journald does not know (no journald here; the VM tier queries it): upstream's heuristics find
        # /var/log/<service>.log, refuse options for it, and say when there is no such file
        svc = name[:-len(".log")]
        assert admin.get(f"/logs/?query={svc}")[:2] == (200, "first line\nsecond line\n")
        assert admin.get(f"/logs/?query={svc}&tailLines=1")[:2] == (
            200, f"\noptions present and query resolved to log files for [{svc}]\ntry without specifying options\n")
        assert admin.get("/logs/?query=ckubelet-nlq-none")[:2] == (200, "\nlog not found for ckubelet-nlq-none\n")
        # only GET, as upstream's route
        assert admin.request(f"/logs/?query=/{name}", method="POST")[0] == 405
    finally:
        os.unlink(path)


def test_system_log_handler_disabled(kubelet_factory, cas):  # noqa: F811
    ca, _ = cas
    k = kubelet_factory(start=False)
    with open(k.config, "a") as f:
        f.write("enableSystemLogHandler: false\n")
    k.start("--client-ca-file", ca.crt, "--authorization-mode", "AlwaysAllow")
    admin = Client(k.port, cert=ca.client("admin", ["system:masters"]))
    wait_for(lambda: admin.get("/healthz")[0] == 200, msg="the API")
    assert admin.get("/logs/")[:2] == (405, "logs endpoint is disabled.\n")
