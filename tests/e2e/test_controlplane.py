"""The control plane of the cluster tests itself (controlplane.py): what the TLS bootstrap of a kubelet meets,
as kubeadm sets it up. A client holding only the bootstrap token creates a CertificateSigningRequest for a node
client certificate; the controller-manager approves (csrapproving, kubeadm's auto-approve binding) and signs it
(csrsigning, the session CA); the issued certificate is a node's identity for the Node authorizer."""
import base64
import os
import subprocess
import time

from controlplane import BOOTSTRAP_GROUP, Client, kubeconfig


def test_bootstrap_token_csr_is_approved_and_signed(cluster, tmp_path):
    node = "bootstrap-" + os.urandom(3).hex()
    key, csr = tmp_path / "key.pem", tmp_path / "csr.pem"
    subprocess.run(["openssl", "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-keyout", str(key), "-out", str(csr), "-subj", f"/O=system:nodes/CN=system:node:{node}"],
                   check=True, capture_output=True)
    boot = Client(cluster.port, cluster.ca, token=cluster.bootstrap_token)
    # the token authenticates in kubeadm's group, and may do nothing else than CSRs and reading nodes
    review = cluster.admin.create("tokenreviews", {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                                                   "spec": {"token": cluster.bootstrap_token}})["status"]
    assert review["authenticated"] and BOOTSTRAP_GROUP in review["user"]["groups"]
    assert review["user"]["username"] == "system:bootstrap:" + cluster.bootstrap_token.split(".")[0]
    assert boot.raw("GET", "/api/v1/namespaces/default/pods")[0] == 403
    name = f"node-csr-{node}"
    boot.create("certificatesigningrequests", {
        "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest", "metadata": {"name": name},
        "spec": {"request": base64.b64encode(csr.read_bytes()).decode(),
                 "signerName": "kubernetes.io/kube-apiserver-client-kubelet",
                 "usages": ["digital signature", "key encipherment", "client auth"]}})
    deadline = time.monotonic() + 60
    while True:
        obj = cluster.admin.get("certificatesigningrequests", name)
        if obj.get("status", {}).get("certificate"):
            break
        assert time.monotonic() < deadline, obj
        time.sleep(0.2)
    # kubeadm's bootstrap-kubelet.conf equivalent reads it back as the bootstrapping node would
    bootcfg = cluster.bootstrap_kubeconfig(str(tmp_path / "bootstrap.kubeconfig"))
    got = cluster.kubectl("get", "csr", name, "-o", "jsonpath={.spec.username}", kubeconfig=bootcfg, text=True)
    assert got.stdout == review["user"]["username"]
    conds = {c["type"]: c for c in obj["status"]["conditions"]}
    assert conds["Approved"]["reason"] == "AutoApproved"
    crt = tmp_path / "crt.pem"
    crt.write_bytes(base64.b64decode(obj["status"]["certificate"]))
    text = subprocess.run(["openssl", "x509", "-in", str(crt), "-noout", "-subject", "-issuer"], capture_output=True,
                          text=True, check=True).stdout
    assert f"CN = system:node:{node}" in text and "O = system:nodes" in text and "ckubelet-e2e-ca" in text
    # the certificate is the node's identity: it may register its Node
    cfg = kubeconfig(str(tmp_path / "kubeconfig"), cluster.server, cluster.ca, "n", str(crt), str(key))
    as_node = Client(cluster.port, cluster.ca, cert=(str(crt), str(key)))
    assert as_node.create("nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}})
    # the Node authorizer: no Secret that none of its pods refers to
    tid = cluster.bootstrap_token.split(".")[0]
    assert as_node.raw("GET", f"/api/v1/namespaces/kube-system/secrets/bootstrap-token-{tid}")[0] == 403
    assert cluster.kubectl("get", "node", node, "-o", "name", kubeconfig=cfg, text=True).stdout == f"node/{node}\n"
    cluster.admin.delete("nodes", node)
    cluster.admin.delete("certificatesigningrequests", name)
