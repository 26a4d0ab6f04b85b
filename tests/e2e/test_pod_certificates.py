"""The projected podCertificate and clusterTrustBundle volume sources (GA in v1.37) against the real v1.37.2
control plane: the test is the signer (a signerName of its own: it watches the node's PodCertificateRequests and
issues each through the /status subresource with a CA it makes), the pod's container reads the key and the chain
and they match; the ClusterTrustBundles the test creates (by name, and by signerName + labelSelector) appear in
the pod's files, and a changed bundle reaches them."""
import base64
import datetime
import json
import re

import pytest

import controlplane
from apiobjects import api_pod, container

pytestmark = pytest.mark.skipif(controlplane.LEGACY, reason="needs kube-apiserver v1.37 (PodCertificateRequest)")

x509 = pytest.importorskip("cryptography.x509")
from cryptography.hazmat.primitives import hashes, serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec, ed25519  # noqa: E402
from cryptography.x509.oid import NameOID  # noqa: E402

CERTS = "/apis/certificates.k8s.io/v1"
SIGNER = "ckubelet.test/e2e-signer"


def make_ca(cn):
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.timezone.utc)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True).sign(key, hashes.SHA256()))
    return key, cert


def pem(cert):
    return cert.public_bytes(serialization.Encoding.PEM).decode()


def rfc3339(t):
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def issue(kube, ca_key, ca_cert, pcr):
    """Sign the request's public key (from its stub PKCS#10 request) as a signer does: leaf valid for 2 h, refresh
    from 1 h."""
    csr = x509.load_der_x509_csr(base64.b64decode(pcr["spec"]["stubPKCS10Request"]))
    assert csr.is_signature_valid, "the stub PKCS#10 request must be signed by its key (proof of possession)"
    now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    not_after = now + datetime.timedelta(hours=2)
    leaf = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "pod")]))
            .issuer_name(ca_cert.subject).public_key(csr.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now).not_valid_after(not_after).sign(ca_key, hashes.SHA256()))
    pcr["status"] = {
        "conditions": [{"type": "Issued", "status": "True", "reason": "Signed", "message": "by the e2e test",
                        "lastTransitionTime": rfc3339(now)}],
        "certificateChain": pem(leaf),
        "notBefore": rfc3339(now), "notAfter": rfc3339(not_after),
        "beginRefreshAt": rfc3339(now + datetime.timedelta(hours=1)),
    }
    ns, name = pcr["metadata"]["namespace"], pcr["metadata"]["name"]
    kube.admin.call("PUT", f"{CERTS}/namespaces/{ns}/podcertificaterequests/{name}/status", pcr)
    return leaf


def exec_cat(kube, pod, path):
    p = kube.kubectl("exec", "-n", kube.ns, pod, "--", "cat", path, check=False, text=True)
    return p.stdout if p.returncode == 0 else None


def ctb(name, ca_pems, signer=None, labels=None):
    spec = {"trustBundle": "".join(ca_pems)}
    if signer:
        spec["signerName"] = signer
    return {"apiVersion": "certificates.k8s.io/v1", "kind": "ClusterTrustBundle",
            "metadata": {"name": name, "labels": labels or {}}, "spec": spec}


def certs_of(text):
    """The DER of each CERTIFICATE block, sorted (cryptography 38 has no load_pem_x509_certificates)."""
    blocks = re.findall(r"-----BEGIN CERTIFICATE-----\n.*?-----END CERTIFICATE-----\n", text, re.S)
    return sorted(x509.load_pem_x509_certificate(b.encode()).public_bytes(serialization.Encoding.DER)
                  for b in blocks)


def test_pod_certificate_and_trust_bundles(kube):
    kube.kubelet()
    ca_key, ca_cert = make_ca("e2e signer CA")
    _, other_ca = make_ca("e2e other CA")
    _, third_ca = make_ca("e2e third CA")
    named = f"e2e-{kube.ns}"[:60]
    by_signer = f"ckubelet.test:e2e-signer:{kube.ns}"[:200]
    kube.admin.call("POST", f"{CERTS}/clustertrustbundles", ctb(named, [pem(other_ca)]))
    try:
        kube.admin.call("POST", f"{CERTS}/clustertrustbundles",
                        ctb(by_signer, [pem(ca_cert), pem(other_ca)], SIGNER, {"e2e": kube.ns}))
        mnt = "/var/run/creds"
        volume = {"name": "creds", "projected": {"sources": [
            {"clusterTrustBundle": {"name": named, "path": "named-ca.pem"}},
            {"clusterTrustBundle": {"signerName": SIGNER, "labelSelector": {"matchLabels": {"e2e": kube.ns}},
                                    "path": "signer-ca.pem"}},
            {"clusterTrustBundle": {"name": "absent-bundle", "path": "absent.pem", "optional": True}},
            {"podCertificate": {"signerName": SIGNER, "keyType": "ECDSAP256", "credentialBundlePath": "bundle.pem",
                                "keyPath": "key.pem", "certificateChainPath": "chain.pem",
                                "userAnnotations": {"ckubelet.test/purpose": "e2e"}}},
            {"podCertificate": {"signerName": SIGNER, "keyType": "ED25519", "credentialBundlePath": "ed.pem",
                                "maxExpirationSeconds": 7200}},
        ]}}
        kube.create("pods", api_pod("certs", [container("app", ["sleep", "3600"],
                                                            volumeMounts=[{"name": "creds", "mountPath": mnt}])],
                                    kube.node, grace=1, extra_spec={"volumes": [volume]}))
        pod = kube.wait(lambda: (p := kube.pod("certs")) and p["metadata"].get("uid") and p, 30, msg="the pod")
        uid = pod["metadata"]["uid"]

        # the kubelet's requests: one per podCertificate source, for this pod, its service account and the node
        def requests():
            items = kube.admin.call("GET", f"{CERTS}/namespaces/{kube.ns}/podcertificaterequests")["items"]
            mine = [r for r in items if r["spec"]["podUID"] == uid]
            return len(mine) == 2 and mine
        pcrs = kube.wait(requests, 60, msg="two PodCertificateRequests for the pod")
        node = kube.node_obj()
        sa = kube.get("serviceaccounts", "default")
        for r in pcrs:
            s = r["spec"]
            assert s["signerName"] == SIGNER and s["podName"] == "certs" and s["nodeName"] == kube.node, s
            assert s["nodeUID"] == node["metadata"]["uid"] and s["serviceAccountName"] == "default", s
            assert s["serviceAccountUID"] == sa["metadata"]["uid"], s
            assert r["metadata"]["ownerReferences"][0]["uid"] == uid, r["metadata"]
        by_key = {("ED25519" if s["spec"].get("maxExpirationSeconds") == 7200 else "ECDSAP256"): s for s in pcrs}
        assert by_key["ECDSAP256"]["spec"].get("unverifiedUserAnnotations") == {"ckubelet.test/purpose": "e2e"}
        assert by_key["ECDSAP256"]["spec"]["maxExpirationSeconds"] == 86400  # the apiserver's default
        csr = x509.load_der_x509_csr(base64.b64decode(by_key["ED25519"]["spec"]["stubPKCS10Request"]))
        assert isinstance(csr.public_key(), ed25519.Ed25519PublicKey), csr.public_key()

        # until the signer answers, the volume cannot be set up: upstream's message
        kube.wait(lambda: any("credential bundle is not issued yet" in e.get("message", "")
                              for e in kube.events(involved="certs", reason="FailedMount")), 60,
                  msg="a FailedMount event saying the credential bundle is not issued yet")
        assert "running" not in json.dumps(kube.pod("certs")["status"].get("containerStatuses", []))

        leaf = issue(kube, ca_key, ca_cert, by_key["ECDSAP256"])
        ed_leaf = issue(kube, ca_key, ca_cert, by_key["ED25519"])
        kube.wait(lambda: kube.pod("certs")["status"].get("phase") == "Running", 90, msg="the pod running")

        key_text = exec_cat(kube, "certs", f"{mnt}/key.pem")
        chain_text = exec_cat(kube, "certs", f"{mnt}/chain.pem")
        bundle_text = exec_cat(kube, "certs", f"{mnt}/bundle.pem")
        assert key_text.startswith("-----BEGIN PRIVATE KEY-----"), key_text[:40]
        key = serialization.load_pem_private_key(key_text.encode(), None)
        assert isinstance(key, ec.EllipticCurvePrivateKey) and key.curve.name == "secp256r1"
        pub = serialization.PublicFormat.SubjectPublicKeyInfo
        assert key.public_key().public_bytes(serialization.Encoding.DER, pub) == \
            leaf.public_key().public_bytes(serialization.Encoding.DER, pub), "the key and the leaf certificate match"
        assert certs_of(chain_text) == certs_of(pem(leaf))
        assert bundle_text == key_text + chain_text  # the key first, then the chain
        ed_text = exec_cat(kube, "certs", f"{mnt}/ed.pem")
        ed_key = serialization.load_pem_private_key(ed_text.encode(), None)
        assert ed_key.public_key().public_bytes(serialization.Encoding.DER, pub) == \
            ed_leaf.public_key().public_bytes(serialization.Encoding.DER, pub)
        assert certs_of(ed_text) == certs_of(pem(ed_leaf))

        assert certs_of(exec_cat(kube, "certs", f"{mnt}/named-ca.pem")) == certs_of(pem(other_ca))
        assert certs_of(exec_cat(kube, "certs", f"{mnt}/signer-ca.pem")) == certs_of(pem(ca_cert) + pem(other_ca))
        assert exec_cat(kube, "certs", f"{mnt}/absent.pem") == ""  # optional and absent: an empty file

        # a changed bundle reaches the pod's file
        b = kube.admin.call("GET", f"{CERTS}/clustertrustbundles/{named}")
        b["spec"]["trustBundle"] = pem(other_ca) + pem(third_ca)
        kube.admin.call("PUT", f"{CERTS}/clustertrustbundles/{named}", b)
        kube.wait(lambda: (t := exec_cat(kube, "certs", f"{mnt}/named-ca.pem")) and
                  certs_of(t) == certs_of(pem(other_ca) + pem(third_ca)), 90,
                  msg="the changed ClusterTrustBundle in the pod's file")
    finally:
        for n in (named, by_signer):
            kube.admin.raw("DELETE", f"{CERTS}/clustertrustbundles/{n}")


def test_pod_certificate_denied(kube):
    """A denied request is final: the volume's error says so (upstream's message), the pod does not start."""
    kube.kubelet()
    volume = {"name": "creds", "projected": {"sources": [
        {"podCertificate": {"signerName": SIGNER, "keyType": "ECDSAP384", "keyPath": "key.pem"}}]}}
    kube.create("pods", api_pod("denied", [container("app", ["sleep", "3600"],
                                                         volumeMounts=[{"name": "creds", "mountPath": "/c"}])],
                                kube.node, grace=1, extra_spec={"volumes": [volume]}))

    def request():
        items = kube.admin.call("GET", f"{CERTS}/namespaces/{kube.ns}/podcertificaterequests")["items"]
        return items and items[0]
    pcr = kube.wait(request, 60, msg="the PodCertificateRequest")
    now = rfc3339(datetime.datetime.now(datetime.timezone.utc))
    pcr["status"] = {"conditions": [{"type": "Denied", "status": "True", "reason": "NotToday",
                                     "message": "the e2e signer says no", "lastTransitionTime": now}]}
    kube.admin.call("PUT", f"{CERTS}/namespaces/{kube.ns}/podcertificaterequests/{pcr['metadata']['name']}/status",
                    pcr)
    kube.wait(lambda: any('PodCertificateRequest was permanently denied: reason="NotToday"' in e.get("message", "")
                          for e in kube.events(involved="denied", reason="FailedMount")), 90,
              msg="a FailedMount event saying the request was denied")
    assert kube.pod("denied")["status"].get("phase") == "Pending"
