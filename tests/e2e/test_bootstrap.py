"""TLS bootstrapping, client certificate rotation and the serving certificate from the certificates API, against
a control plane of this module's own (controlplane.py): kube-controller-manager signs certificates that have 2.5
minutes left when they are issued (--cluster-signing-duration 2m30s on v1.37; 7m30s on v1.20, whose signer
backdates by 5 minutes), rotated 15 s to 105 s later, and kube-apiserver verifies the kubelets' serving
certificates (--kubelet-certificate-authority). kubeadm's objects are there: a bootstrap token in the group its
CSRs are auto-approved for (csrapproving), and the rotation auto-approval for system:nodes.

Every bad input is a test of its own: the error names the file or object, and the node joins once it is fixed."""
import base64
import json
import os
import re
import signal
import socket
import ssl
import subprocess
import time

import pytest

import controlplane
from apiobjects import api_pod, cond, container, cstatus
from conftest import KubeletSet, failed_in_call, wait_for

# certificates that live 2.5 minutes: kube-controller-manager v1.20 backdates a certificate's notBefore by 5 minutes
# and counts the duration from there, v1.37 counts it from the issuance
SIGNING_DURATION = "7m30s" if controlplane.LEGACY else "2m30s"
CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client-kubelet"
SERVING_SIGNER = "kubernetes.io/kubelet-serving"


@pytest.fixture(scope="module")
def bootcp(runtime):
    from controlplane import ControlPlane
    d = os.path.join(runtime.dir, "cluster-bootstrap")
    os.makedirs(d)
    cp = ControlPlane(d, signing_duration=SIGNING_DURATION, kubelet_ca=True)
    try:
        cp.start()
        yield cp
    finally:
        cp.stop()


class BootNode:
    """One test's node (controlplane.Kube) joining by TLS bootstrap."""

    def __init__(self, kube):
        self.kube = kube
        self.cp = kube.cp

    def __getattr__(self, name):
        return getattr(self.kube, name)

    def kubelet(self, *extra, bootstrap=None, rotate=True, serving=False, start=True):
        """A ckubelet with an empty --cert-dir, --kubeconfig not there yet and --bootstrap-kubeconfig (the module's
        kubeadm token unless given)."""
        k = self.kube.kubelets.make(False, node=self.kube.node)
        k.kubeconfig = os.path.join(k.dir, "kubelet.conf")
        k.bootstrap = bootstrap or self.cp.bootstrap_kubeconfig(os.path.join(k.dir, "bootstrap-kubelet.conf"))
        args = ["--kubeconfig", k.kubeconfig, "--bootstrap-kubeconfig", k.bootstrap, "--client-ca-file", self.cp.ca,
                "--node-status-update-frequency", "1s"]
        if rotate:
            args.append("--rotate-certificates")
        if serving:
            args.append("--rotate-server-certificates")
        k.cluster_args = args
        if start:
            k.start(*args, *extra)
        return k

    def csrs(self, signer=None, username=None):
        return [c for c in self.cp.admin.list("certificatesigningrequests")
                if (signer is None or c["spec"]["signerName"] == signer) and
                (username is None or c["spec"].get("username") == username)]

    def wait_ready(self, timeout=120):
        return self.kube.wait(lambda: (n := self.kube.node_obj()) and (c := cond(n, "Ready")) and
                              c["status"] == "True" and n, timeout, msg=f"node {self.kube.node} Ready")


@pytest.fixture
def bnode(bootcp, runtime, request):
    """As conftest's kube fixture, on this module's control plane."""
    from controlplane import Kube
    ks = KubeletSet(runtime)
    k = Kube(bootcp, ks, request.node.name)
    try:
        k.setup()
        yield BootNode(k)
    finally:
        failed = failed_in_call(request)
        try:
            ks.teardown(failed)
        finally:
            refused = k.refused_requests()
            if failed or refused:
                print(bootcp.tail_logs(40))
            k.cleanup()
        assert not refused, "the apiserver refused requests of the kubelet:\n" + "\n".join(refused)


def token_id(kubeconfig):
    with open(kubeconfig) as f:
        return json.load(f)["users"][0]["user"]["token"].split(".")[0]


def cert_facts(path):
    """(serial, notAfter as a Unix time) of a PEM certificate file."""
    out = subprocess.run(["openssl", "x509", "-in", path, "-noout", "-serial", "-enddate"], capture_output=True,
                         text=True, check=True).stdout
    f = dict(line.split("=", 1) for line in out.splitlines())
    end = subprocess.run(["date", "-d", f["notAfter"], "+%s"], capture_output=True, text=True, check=True).stdout
    return f["serial"], int(end)


def link(k, name):
    """The file <cert-dir>/<name> points at, None while it is not there."""
    try:
        return os.readlink(os.path.join(k.pki, name))
    except FileNotFoundError:
        return None


def tls_handshake(port, ca):
    """Connect to the kubelet API verifying its certificate against CA: the peer certificate, or the exception."""
    ctx = ssl.create_default_context(cafile=ca)
    ctx.check_hostname = False
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            with ctx.wrap_socket(s) as t:
                return t.getpeercert()
    except (ssl.SSLError, OSError) as e:
        return e


def rotation_outage(bnode, k, length=8.0):
    """Stop the kube-apiserver (SIGSTOP) from 2 s before the client certificate's rotation deadline (as the kubelet
    logs it) for LENGTH seconds. Returns (start, end) as Unix times, or None when the deadline is too close."""
    m = re.findall(r"client certificate expiration is \S+, rotation deadline is (\S+)", k.log())
    deadline = time.mktime(time.strptime(m[-1], "%Y-%m-%dT%H:%M:%SZ")) - time.timezone if m else 0
    if deadline - time.time() < 4:
        print(f"rotation deadline {m[-1] if m else None} too close: no outage this time")
        return None
    time.sleep(deadline - 2 - time.time())
    pid = bnode.cp.procs["kube-apiserver"].pid
    start = time.time()
    os.kill(pid, signal.SIGSTOP)
    try:
        time.sleep(length)
    finally:
        os.kill(pid, signal.SIGCONT)
    print(f"kube-apiserver stopped from {start:.1f} to {time.time():.1f} around the rotation deadline {m[-1]}")
    return start, time.time()


def approve(node, csr_name):
    node.kubectl("certificate", "approve", csr_name)


# ---------------------------------------------------------------- joining, rotating, serving


def test_tls_bootstrap_joins_rotates_and_serves(bnode, runtime):
    start = time.monotonic()
    k = bnode.kubelet(serving=True)
    bnode.wait_ready()
    join_s = time.monotonic() - start
    print(f"TLS bootstrap: the node joined and was Ready {join_s:.1f}s after the start")

    # the client certificate: issued from a CSR the controller-manager approved, stored 0600 behind the link
    first = link(k, "kubelet-client-current.pem")
    assert first and os.path.isabs(first) and os.path.dirname(first) == k.pki
    assert os.stat(first).st_mode & 0o777 == 0o600
    with open(k.kubeconfig) as f:
        kc = json.load(f)
    assert kc["users"][0]["user"] == {"client-certificate": os.path.join(k.pki, "kubelet-client-current.pem"),
                                      "client-key": os.path.join(k.pki, "kubelet-client-current.pem")}
    assert kc["clusters"][0]["cluster"]["server"] == bnode.cp.server
    assert os.stat(k.kubeconfig).st_mode & 0o777 == 0o600
    csrs = bnode.csrs(CLIENT_SIGNER, f"system:bootstrap:{token_id(k.bootstrap)}")
    assert len(csrs) == 1, csrs
    csr = csrs[0]
    assert csr["spec"]["usages"] == ["digital signature", "key encipherment", "client auth"]
    assert "system:bootstrappers:kubeadm:default-node-token" in csr["spec"]["groups"]
    approved = cond(csr, "Approved")
    assert approved and approved["reason"] == "AutoApproved", csr["status"]
    subject = subprocess.run(["openssl", "x509", "-in", first, "-noout", "-subject", "-nameopt", "RFC2253"],
                             capture_output=True, text=True, check=True).stdout.strip()
    assert subject == f"subject=CN=system:node:{bnode.node},O=system:nodes", subject
    serial1, not_after1 = cert_facts(first)

    # an API server outage across the rotation deadline: the rotation waits it out, nothing is lost
    outage = rotation_outage(bnode, k)

    # the serving certificate: requested once the node reported its addresses, not served before approval
    serving = bnode.wait(lambda: bnode.csrs(SERVING_SIGNER, f"system:node:{bnode.node}"), 60,
                         msg="the serving CSR")
    assert len(serving) == 1
    assert serving[0]["spec"]["usages"] == ["digital signature", "key encipherment", "server auth"]
    assert cond(serving[0], "Approved") is None
    assert isinstance(tls_handshake(k.port, bnode.cp.ca), Exception)  # no self-signed fallback
    k.wait_log("no serving certificate available for the kubelet")
    approve(bnode, serving[0]["metadata"]["name"])
    bnode.wait(lambda: link(k, "kubelet-server-current.pem"), 60, msg="the serving certificate stored")
    peer = wait_for(lambda: (p := tls_handshake(k.port, bnode.cp.ca)) and not isinstance(p, Exception) and p, 30,
                    msg="a TLS handshake verified against the cluster CA")
    node_ip = next(a["address"] for a in bnode.node_obj()["status"]["addresses"] if a["type"] == "InternalIP")
    assert ("IP Address", node_ip) in peer["subjectAltName"], peer["subjectAltName"]
    assert ("DNS", bnode.node) in peer["subjectAltName"], peer["subjectAltName"]

    # a pod whose logs the apiserver fetches from the kubelet, verifying its certificate
    bnode.create("pods", api_pod("talker", [container("app", ["sh", "-c", "i=0; while true; do echo line $i; "
                                                                          "i=$((i+1)); sleep 1; done"])],
                                 bnode.node))
    running = bnode.wait(lambda: (p := bnode.pod("talker")) and (c := cstatus(p, "app")) and
                         "running" in c["state"] and c, 90, msg="pod talker running")
    cid = running["containerID"]
    logs = bnode.wait(lambda: "line " in (o := bnode.kubectl("-n", bnode.ns, "logs", "talker", text=True,
                                                             check=False)).stdout and o, 60,
                      msg="kubectl logs through the verified kubelet certificate")
    assert logs.returncode == 0

    # rotation of the client certificate at 70-90% of its life, while the node stays Ready and the pod runs
    ready_seen = []

    def rotated():
        n = bnode.node_obj()
        ready_seen.append(cond(n, "Ready")["status"])
        return link(k, "kubelet-client-current.pem") != first
    bnode.wait(rotated, 150, msg="the client certificate rotated", interval=1)
    rotation_s = time.monotonic() - start
    second = link(k, "kubelet-client-current.pem")
    serial2, not_after2 = cert_facts(second)
    assert serial2 != serial1 and not_after2 > not_after1
    assert os.stat(second).st_mode & 0o777 == 0o600
    print(f"client certificate rotated {rotation_s:.1f}s after the start (its lifetime from issuance: "
          f"{not_after1 - (time.time() - (time.monotonic() - start) + join_s):.0f}s): serial {serial1} -> {serial2}")
    # the rotation CSR was made with the old certificate and auto-approved (selfnodeclient)
    rot = [c for c in bnode.csrs(CLIENT_SIGNER, f"system:node:{bnode.node}")]
    assert rot and all(cond(c, "Approved") for c in rot), rot
    if outage:
        # the request the kubelet sent into the outage reached the API server when it came back
        first_rot = min(rot, key=lambda c: c["metadata"]["creationTimestamp"])
        created = time.mktime(time.strptime(first_rot["metadata"]["creationTimestamp"], "%Y-%m-%dT%H:%M:%SZ")) - \
            time.timezone
        assert created >= outage[0] - 1, (first_rot["metadata"]["creationTimestamp"], outage)
    k.wait_log("certificate rotation detected, shutting down client connections")

    # every connection uses the new certificate: the kubelet keeps working once the old one has expired
    wait_for(lambda: time.time() > not_after1 + 5, 200, interval=1, msg="the first client certificate expired")
    lease_before = bnode.lease()["spec"]["renewTime"]
    bnode.wait(lambda: bnode.lease()["spec"]["renewTime"] != lease_before, 60, msg="a lease renewal after expiry")
    assert set(ready_seen) == {"True"}, ready_seen
    n = bnode.wait_ready(30)
    assert cond(n, "Ready")["status"] == "True"
    p = bnode.pod("talker")
    assert cstatus(p, "app")["containerID"] == cid and cstatus(p, "app")["restartCount"] == 0
    assert "Unauthorized" not in k.log()

    # the serving certificate is rotated the same way (a new CSR, approved as the first)
    second_serving = bnode.wait(lambda: [c for c in bnode.csrs(SERVING_SIGNER, f"system:node:{bnode.node}")
                                         if cond(c, "Approved") is None], 120, msg="the serving rotation CSR")
    served_before = link(k, "kubelet-server-current.pem")
    approve(bnode, second_serving[0]["metadata"]["name"])
    bnode.wait(lambda: link(k, "kubelet-server-current.pem") != served_before, 60, msg="the serving certificate rotated")
    logs = bnode.wait(lambda: (o := bnode.kubectl("-n", bnode.ns, "logs", "--tail", "1", "talker", text=True,
                                                  check=False)).returncode == 0 and o, 60,
                      msg="kubectl logs with the new serving certificate")
    assert logs.stdout.startswith("line ")
    print(f"joined in {join_s:.1f}s, client certificate rotated at {rotation_s:.1f}s, "
          f"whole test {time.monotonic() - start:.1f}s")


# ---------------------------------------------------------------- bad input, and recovery once it is fixed


@pytest.mark.parametrize("bad", ["missing", "garbage"])
def test_bad_bootstrap_kubeconfig(bnode, bad):
    path = os.path.join(bnode.cp.dir, f"bootstrap-{bnode.node}.conf")
    if bad == "garbage":
        with open(path, "w") as f:
            f.write("clusters: [this is not: a kubeconfig\n")
    k = bnode.kubelet(bootstrap=path)
    # the error names the file; the kubelet keeps running and tries again
    k.wait_log(r"unable to load bootstrap kubeconfig: " + path.replace(".", r"\."), timeout=30)
    assert k.alive()
    assert bnode.node_obj() is None and not os.path.exists(k.kubeconfig)
    bnode.cp.bootstrap_kubeconfig(path)
    bnode.wait_ready()
    assert link(k, "kubelet-client-current.pem")


def test_denied_csr(bnode):
    # a token whose CSRs nobody approves automatically (not in kubeadm's auto-approved group), allowed to make them
    group = f"system:bootstrappers:manual-{bnode.node}"
    token = bnode.cp.new_bootstrap_token(extra_groups=group)
    bnode.cp.admin.create("clusterrolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": f"bootstrap-{bnode.node}"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:node-bootstrapper"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group}]})
    try:
        path = bnode.cp.bootstrap_kubeconfig(os.path.join(bnode.cp.dir, f"bootstrap-{bnode.node}.conf"), token)
        # without rotation: upstream's LoadClientCert, a request named after the key and the subject
        k = bnode.kubelet(bootstrap=path, rotate=False)
        user = f"system:bootstrap:{token.split('.')[0]}"
        first = bnode.wait(lambda: bnode.csrs(CLIENT_SIGNER, user), 30, msg="the node's CSR")[0]["metadata"]["name"]
        assert first.startswith("node-csr-")
        bnode.kubectl("certificate", "deny", first)
        k.wait_log(rf"certificate signing request {first} is denied, reason: KubectlDeny", timeout=30)
        # a new key, so a new request
        second = bnode.wait(lambda: [c for c in bnode.csrs(CLIENT_SIGNER, user) if c["metadata"]["name"] != first],
                            60, msg="a second CSR")[0]["metadata"]["name"]
        assert second.startswith("node-csr-")
        assert bnode.node_obj() is None
        approve(bnode, second)
        bnode.wait_ready()
        assert not os.path.exists(os.path.join(k.pki, "kubelet-client.key.tmp"))
    finally:
        bnode.cp.admin.raw("DELETE", f"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/bootstrap-{bnode.node}")


def test_unwritable_cert_dir(bnode):
    k = bnode.kubelet(start=False)
    os.makedirs(k.pki)
    subprocess.run(["mount", "--bind", k.pki, k.pki], check=True)
    subprocess.run(["mount", "-o", "remount,ro,bind", k.pki], check=True)
    try:
        k.start(*k.cluster_args)
        k.wait_log(r"client certificate: unable to store the new cert/key pair from certificate signing request "
                   r"csr-\w+: could not open " + k.pki + r"/kubelet-client-[0-9-]+\.pem: Read-only file system",
                   timeout=30)
        assert bnode.node_obj() is None
    finally:
        subprocess.run(["umount", k.pki], check=True)
    bnode.wait_ready()
    assert os.stat(link(k, "kubelet-client-current.pem")).st_mode & 0o777 == 0o600


def test_corrupt_client_certificate(bnode):
    k = bnode.kubelet()
    bnode.wait_ready()
    first = link(k, "kubelet-client-current.pem")
    serial, _ = cert_facts(first)
    assert k.term() == 0
    with open(first, "w") as f:  # through the link: the file it points at
        f.write("-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n")
    k.start(*k.cluster_args)
    # the error names the file; the bootstrap credentials get a new certificate
    k.wait_log(r"client certificate: could not convert data from " + k.pki + r"/kubelet-client-current\.pem into "
               r"cert/key pair: no certificate in it", timeout=30)
    # (within the same second the new pair gets the same file name: compare what the link leads to)
    bnode.wait(lambda: cert_facts(os.path.join(k.pki, "kubelet-client-current.pem"))[0] != serial, 60,
               msg="a new client certificate")
    lease = bnode.lease()["spec"]["renewTime"]
    bnode.wait(lambda: bnode.lease()["spec"]["renewTime"] != lease, 60, msg="the lease renewed after the restart")
    bnode.wait_ready()


def test_corrupt_client_certificate_without_bootstrap(bnode):
    """With no --bootstrap-kubeconfig nothing can request a new certificate: the error names --kubeconfig and the
    file, the kubelet keeps retrying (reading --cert-dir again each time, not a copy kept from the first attempt)
    and carries on once the file is repaired."""
    k = bnode.kubelet()
    bnode.wait_ready()
    assert k.term() == 0
    current = link(k, "kubelet-client-current.pem")
    with open(current) as f:
        good = f.read()
    requests = len(bnode.csrs(CLIENT_SIGNER))
    with open(current, "w") as f:
        f.write("-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n")
    i = k.cluster_args.index("--bootstrap-kubeconfig")
    k.start(*(k.cluster_args[:i] + k.cluster_args[i + 2:]))
    error = re.compile(r"no usable client certificate: " + re.escape(k.kubeconfig) +
                       r": unable to load its client certificate")
    bnode.wait(lambda: len(error.findall(k.log())) >= 2, 60, msg="the error, then a retry failing again")
    assert len(bnode.csrs(CLIENT_SIGNER)) == requests  # no credentials to ask with
    lease = bnode.lease()["spec"]["renewTime"]
    with open(current, "w") as f:
        f.write(good)
    bnode.wait(lambda: bnode.lease()["spec"]["renewTime"] != lease, 90, msg="the lease renewed after the repair")
    bnode.wait_ready()
    # the repaired pair is the certificate manager's (so that it is rotated), not only the kubeconfig's
    run = k.log().rsplit("===== starting ckubelet", 1)[1]
    assert re.search(r"Loaded the client certificate from " + re.escape(k.pki), run), run[-3000:]

def test_expired_bootstrap_token(bnode):
    past = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 3600))
    expired = bnode.cp.new_bootstrap_token(expiration=past)
    path = bnode.cp.bootstrap_kubeconfig(os.path.join(bnode.cp.dir, f"bootstrap-{bnode.node}.conf"), expired)
    k = bnode.kubelet(bootstrap=path)
    k.wait_log(r"client certificate: cannot create certificate signing request: Unauthorized", timeout=30)
    k.wait_log(r"Requesting a client certificate with the credentials of the bootstrap kubeconfig " + path)
    assert bnode.node_obj() is None
    # a new token in the same file, as an administrator would hand out
    bnode.cp.bootstrap_kubeconfig(path, bnode.cp.new_bootstrap_token())
    bnode.wait_ready()
