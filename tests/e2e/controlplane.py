"""A real Kubernetes control plane for the end-to-end tests: etcd, kube-apiserver, kube-controller-manager and
kube-scheduler, all on loopback with their own data directories and free ports, and kubectl. The version is
CKUBELET_K8S_VERSION: v1.37.2 by default (etcd 3.7.0 and the Kubernetes commands built from the tests' own Go
module scripts/k8s by scripts/build-kubernetes.sh into a cache outside the checkout), or v1.20.2 on demand
(Debian's source package and Debian's etcd 3.4, no scheduler).

One ControlPlane per pytest session (the `cluster` fixture in conftest.py). What runs:

- etcd: plain HTTP on 127.0.0.1, its data directory on /dev/shm (tmpfs: fsync costs nothing).
- kube-apiserver: TLS with a certificate of the session's CA (made here with the openssl CLI), client
  certificate authentication, bootstrap token authentication, service account tokens signed with the
  session's RSA key (so TokenRequest works), authorization Node,RBAC, the default admission plugins plus
  NodeRestriction, an audit log (level Request) of every request made by nodes and bootstrapping nodes, and a
  client certificate (O=system:masters) for its calls to kubelets (logs, exec, attach, port-forward).
- kube-controller-manager: its own kubeconfig (CN=system:kube-controller-manager), the controllers a node
  meets (csrsigning with the session CA and a configurable --cluster-signing-duration, csrapproving,
  csrcleaner, namespace, garbagecollector, nodelifecycle, serviceaccount, serviceaccount-token,
  root-ca-cert-publisher, bootstrapsigner, tokencleaner), each with its own service account credentials.
- What kubeadm creates for TLS bootstrapping: a bootstrap token Secret in kube-system, the ClusterRoleBindings
  of system:node-bootstrapper and the CSR auto-approval roles, the kube-public/cluster-info ConfigMap.

- kube-scheduler (v1.37): its own kubeconfig (CN=system:kube-scheduler); tests still bind their pods with
  spec.nodeName, so it only schedules what a test leaves unbound.

kube-apiserver v1.37 does not proxy to a node whose address is a loopback one (logs, exec, port-forward):
ckubelet reports the machine's own address (NODE_IP, its default detection, `hostname -I`'s first) as InternalIP.
No kube-proxy. Everything uses only the Python standard
library and the openssl command."""
import base64
import datetime
import http.client
import json
import os
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import textwrap
import threading
import time
import urllib.parse

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD_SCRIPT = os.path.join(REPO, "scripts", "build-kubernetes.sh")
VERSION = os.environ.get("CKUBELET_K8S_VERSION", "v1.37.2")
LEGACY = VERSION == "v1.20.2"  # Debian's v1.20.2: Debian's etcd 3.4, no scheduler, the flags v1.20 had


def version_tuple(v=VERSION):
    return tuple(int(x) for x in v.lstrip("v").split(".")[:2])

# the resources the tests use: name -> (API path prefix, namespaced)
RESOURCES = {
    "pods": ("/api/v1", True), "nodes": ("/api/v1", False), "events": ("/api/v1", True),
    "configmaps": ("/api/v1", True), "secrets": ("/api/v1", True), "serviceaccounts": ("/api/v1", True),
    "namespaces": ("/api/v1", False), "services": ("/api/v1", True), "endpoints": ("/api/v1", True),
    "leases": ("/apis/coordination.k8s.io/v1", True),
    "runtimeclasses": ("/apis/node.k8s.io/v1", False),
    "certificatesigningrequests": ("/apis/certificates.k8s.io/v1", False),
    "clusterroles": ("/apis/rbac.authorization.k8s.io/v1", False),
    "clusterrolebindings": ("/apis/rbac.authorization.k8s.io/v1", False),
    "roles": ("/apis/rbac.authorization.k8s.io/v1", True),
    "rolebindings": ("/apis/rbac.authorization.k8s.io/v1", True),
    "tokenreviews": ("/apis/authentication.k8s.io/v1", False),
    "subjectaccessreviews": ("/apis/authorization.k8s.io/v1", False),
    "persistentvolumes": ("/api/v1", False), "persistentvolumeclaims": ("/api/v1", True),
    "csidrivers": ("/apis/storage.k8s.io/v1", False), "csinodes": ("/apis/storage.k8s.io/v1", False),
    "volumeattachments": ("/apis/storage.k8s.io/v1", False),
    "deviceclasses": ("/apis/resource.k8s.io/v1", False), "resourceslices": ("/apis/resource.k8s.io/v1", False),
    "resourceclaims": ("/apis/resource.k8s.io/v1", True),
}

# what kubeadm's bootstrap tokens carry
BOOTSTRAP_GROUP = "system:bootstrappers:kubeadm:default-node-token"


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("0.0.0.0", 0))  # free on every address (a client's TIME-WAIT on another one would refuse it)
        return s.getsockname()[1]


def build_kubernetes():
    """The bin directory of the cached build of VERSION (built now if it is not there; waits for a build
    running elsewhere). Raises with the script's output when it cannot."""
    p = subprocess.run(["bash", BUILD_SCRIPT], capture_output=True, text=True,
                       env=dict(os.environ, CKUBELET_K8S_VERSION=VERSION))
    lines = p.stdout.strip().splitlines()
    if p.returncode != 0 or not lines or not os.path.isdir(lines[-1]):
        raise RuntimeError(f"scripts/build-kubernetes.sh failed (exit {p.returncode}); the control plane cannot "
                           f"start:\n{p.stdout[-4000:]}\n{p.stderr[-4000:]}")
    return lines[-1]


class ApiError(Exception):
    def __init__(self, method, path, status, body):
        super().__init__(f"{method} {path}: {status} {body if isinstance(body, str) else json.dumps(body)}")
        self.status = status
        self.body = body


class Pki:
    """The session's certificate authority (EC P-256) and the certificates it issues, with the openssl CLI."""

    def __init__(self, d, name="ckubelet-e2e-ca"):
        self.d = d
        os.makedirs(d, exist_ok=True)
        self.crt, self.key = os.path.join(d, "ca.crt"), os.path.join(d, "ca.key")
        self._openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                      "-keyout", self.key, "-out", self.crt, "-days", "7", "-subj", f"/CN={name}",
                      "-addext", "basicConstraints=critical,CA:TRUE",
                      "-addext", "keyUsage=critical,digitalSignature,keyEncipherment,keyCertSign")
        self._lock = threading.Lock()

    def _openssl(self, *args):
        p = subprocess.run(["openssl", *args], cwd=self.d, capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"openssl {' '.join(args)}: {p.stderr}")

    def issue(self, name, cn, orgs=(), client=True, sans=(), days=2):
        """A key and certificate signed by the CA: (crt path, key path). sans: 'IP:..' / 'DNS:..' entries
        make it a serving certificate."""
        with self._lock:
            base = os.path.join(self.d, name)
            subj = "".join(f"/O={o}" for o in orgs) + f"/CN={cn}"
            self._openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                          "-keyout", base + ".key", "-out", base + ".csr", "-subj", subj)
            usages = (["clientAuth"] if client else []) + (["serverAuth"] if sans else [])
            with open(base + ".ext", "w") as f:
                f.write("basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
                        f"extendedKeyUsage={','.join(usages)}\n")
                if sans:
                    f.write(f"subjectAltName={','.join(sans)}\n")
            self._openssl("x509", "-req", "-in", base + ".csr", "-CA", self.crt, "-CAkey", self.key,
                          "-CAcreateserial", "-out", base + ".crt", "-days", str(days), "-extfile", base + ".ext")
            os.chmod(base + ".key", 0o600)
            return base + ".crt", base + ".key"


def kubeconfig(path, server, ca, user, cert=None, key=None, token=None, embed=False):
    """Write a v1 Config with one cluster, user and context."""
    def data(p):
        with open(p, "rb") as f:
            return base64.b64encode(f.read()).decode()
    cluster = {"server": server}
    cluster.update({"certificate-authority-data": data(ca)} if embed else {"certificate-authority": ca})
    u = {}
    if cert:
        u.update({"client-certificate-data": data(cert), "client-key-data": data(key)} if embed else
                 {"client-certificate": cert, "client-key": key})
    if token:
        u["token"] = token
    cfg = {"apiVersion": "v1", "kind": "Config", "clusters": [{"name": "e2e", "cluster": cluster}],
           "users": [{"name": user, "user": u}],
           "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": user}}], "current-context": "e2e"}
    with open(path, "w") as f:
        json.dump(cfg, f, indent=1)
    os.chmod(path, 0o600)
    return path


class Client:
    """A small REST client for the kube-apiserver (HTTPS, client certificate or bearer token)."""

    def __init__(self, port, ca, cert=None, token=None, host="127.0.0.1"):
        self.host, self.port, self.token = host, port, token
        self.ctx = ssl.create_default_context(cafile=ca)
        if cert:
            self.ctx.load_cert_chain(*cert)

    def raw(self, method, path, body=None, ctype="application/json", timeout=60, headers=None):
        """(status, decoded JSON or text) of one request."""
        c = http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=timeout)
        try:
            h = dict(headers or {})
            if body is not None:
                h["Content-Type"] = ctype
                if not isinstance(body, (bytes, str)):
                    body = json.dumps(body)
            if self.token:
                h["Authorization"] = "Bearer " + self.token
            c.request(method, path, body=body, headers=h)
            r = c.getresponse()
            data = r.read().decode(errors="replace")
            try:
                return r.status, json.loads(data)
            except ValueError:
                return r.status, data
        finally:
            c.close()

    def call(self, method, path, body=None, ctype="application/json", ok=(200, 201, 202), **kw):
        st, out = self.raw(method, path, body, ctype, **kw)
        if st not in ok:
            raise ApiError(method, path, st, out)
        return out

    @staticmethod
    def path(resource, namespace=None, name=None, sub=None, query=None):
        prefix, namespaced = RESOURCES[resource]
        p = prefix
        if namespaced and namespace:
            p += f"/namespaces/{namespace}"
        p += f"/{resource}"
        if name:
            p += f"/{name}"
        if sub:
            p += f"/{sub}"
        if query:
            p += "?" + urllib.parse.urlencode(query)
        return p

    def create(self, resource, obj, namespace=None):
        ns = namespace or obj.get("metadata", {}).get("namespace")
        return self.call("POST", self.path(resource, ns), obj)

    def get(self, resource, name, namespace=None, sub=None):
        st, out = self.raw("GET", self.path(resource, namespace, name, sub))
        if st == 404:
            return None
        if st != 200:
            raise ApiError("GET", self.path(resource, namespace, name, sub), st, out)
        return out

    def list(self, resource, namespace=None, **query):
        return self.call("GET", self.path(resource, namespace, query=query or None))["items"]

    def update(self, resource, obj, sub=None):
        m = obj["metadata"]
        return self.call("PUT", self.path(resource, m.get("namespace"), m["name"], sub), obj)

    def patch(self, resource, name, patch, namespace=None, sub=None, kind="merge"):
        return self.call("PATCH", self.path(resource, namespace, name, sub), patch,
                         ctype=f"application/{kind}-patch+json")

    def delete(self, resource, name, namespace=None, grace_seconds=None, uid=None):
        opts = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if grace_seconds is not None:
            opts["gracePeriodSeconds"] = grace_seconds
        if uid:
            opts["preconditions"] = {"uid": uid}
        st, out = self.raw("DELETE", self.path(resource, namespace, name), opts)
        if st not in (200, 202, 404):
            raise ApiError("DELETE", self.path(resource, namespace, name), st, out)
        return out if st != 404 else None


class ControlPlane:
    """etcd + kube-apiserver + kube-controller-manager for one test session (see the module docstring)."""

    def __init__(self, workdir, signing_duration=None, kubelet_ca=False, serving_sans=()):
        self.dir = workdir
        self.serving_sans = tuple(serving_sans)  # more names for the apiserver's certificate ("IP:10.0.2.2")
        self.signing_duration = signing_duration or os.environ.get("CKUBELET_E2E_SIGNING_DURATION", "24h")
        self.kubelet_ca = kubelet_ca
        self.procs = {}
        self.logs = {}
        self.etcd_dir = None
        self._audit_pos, self._audit = 0, {}
        self._audit_lock = threading.Lock()
        self.start_seconds = None

    # -------------------------------------------------------------- start and stop

    def start(self):
        t0 = time.monotonic()
        self.bin = build_kubernetes()
        self.build_seconds = time.monotonic() - t0
        t1 = time.monotonic()
        self.kubectl_bin = os.path.join(self.bin, "kubectl")
        self.etcd_bin = os.environ.get("CKUBELET_ETCD") or ("/usr/bin/etcd" if LEGACY else os.path.join(self.bin, "etcd"))
        self._make_pki()
        try:
            self._start_etcd()
            self._start_apiserver()
            self._start_controller_manager()
            if not LEGACY:
                self._start_scheduler()
            self._bootstrap_objects()
        except BaseException:
            print(self.tail_logs(80))
            self.stop()
            raise
        self.start_seconds = time.monotonic() - t1
        print(f"control plane up in {self.start_seconds:.1f}s (build check {self.build_seconds:.1f}s): "
              f"https://127.0.0.1:{self.port}, logs in {self.dir}")
        return self

    def _make_pki(self):
        d = os.path.join(self.dir, "pki")
        self.pki = Pki(d)
        self.ca = self.pki.crt
        self.port = free_port()
        self.server = f"https://127.0.0.1:{self.port}"
        self.serving = self.pki.issue("apiserver", "kube-apiserver", client=False, sans=(
            "IP:127.0.0.1", "IP:10.96.0.1", "DNS:localhost", "DNS:kubernetes", "DNS:kubernetes.default",
            "DNS:kubernetes.default.svc", "DNS:kubernetes.default.svc.cluster.local", *self.serving_sans))
        self.kubelet_client = self.pki.issue("apiserver-kubelet-client", "kube-apiserver-kubelet-client",
                                             ["system:masters"])
        self.admin_cert = self.pki.issue("admin", "kubernetes-admin", ["system:masters"])
        self.cm_cert = self.pki.issue("controller-manager", "system:kube-controller-manager")
        # the front proxy's CA and client (kubeadm's front-proxy-ca): aggregated APIs are not used, but without
        # it the components complain about the missing requestheader CA in a loop
        self.front_proxy = Pki(os.path.join(d, "front-proxy"), name="front-proxy-ca")
        self.front_proxy_client = self.front_proxy.issue("front-proxy-client", "front-proxy-client")
        self.sa_key = os.path.join(d, "sa.key")
        self.sa_pub = os.path.join(d, "sa.pub")
        self.pki._openssl("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", self.sa_key)
        self.pki._openssl("pkey", "-in", self.sa_key, "-pubout", "-out", self.sa_pub)
        self.admin_kubeconfig = kubeconfig(os.path.join(self.dir, "admin.kubeconfig"), self.server, self.ca,
                                           "kubernetes-admin", *self.admin_cert)
        self.cm_kubeconfig = kubeconfig(os.path.join(self.dir, "controller-manager.kubeconfig"), self.server,
                                        self.ca, "system:kube-controller-manager", *self.cm_cert)
        self.admin = Client(self.port, self.ca, cert=self.admin_cert)

    def _spawn(self, name, args):
        logpath = os.path.join(self.dir, name + ".log")
        self.logs[name] = logpath
        with open(logpath, "ab") as log:
            log.write(f"===== {' '.join(args)}\n".encode())
            log.flush()
            self.procs[name] = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT,
                                                stdin=subprocess.DEVNULL, start_new_session=True)

    def _wait(self, name, cond, timeout, what):
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            if self.procs[name].poll() is not None:
                raise RuntimeError(f"{name} exited with {self.procs[name].returncode} while waiting for {what}:\n"
                                   + self.tail(name, 40))
            try:
                if cond():
                    return
            except Exception as e:
                last = e
            time.sleep(0.2)
        raise RuntimeError(f"timed out after {timeout}s waiting for {what} (last error: {last}):\n"
                           + self.tail(name, 40))

    def _start_etcd(self):
        self.etcd_dir = tempfile.mkdtemp(prefix="ckubelet-etcd-", dir="/dev/shm" if os.path.isdir("/dev/shm")
                                         else self.dir)
        client, peer = free_port(), free_port()
        self.etcd_url = f"http://127.0.0.1:{client}"
        self._spawn("etcd", [self.etcd_bin, "--name", "e2e", "--data-dir", os.path.join(self.etcd_dir, "data"),
                             "--listen-client-urls", self.etcd_url, "--advertise-client-urls", self.etcd_url,
                             "--listen-peer-urls", f"http://127.0.0.1:{peer}",
                             "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
                             "--initial-cluster", f"e2e=http://127.0.0.1:{peer}",
                             "--logger", "zap", "--log-outputs", "stderr", "--log-level", "warn"])

        def healthy():
            c = http.client.HTTPConnection("127.0.0.1", client, timeout=5)
            try:
                c.request("GET", "/health")
                return json.loads(c.getresponse().read()).get("health") == "true"
            finally:
                c.close()
        self._wait("etcd", healthy, 60, "etcd /health")

    def _start_apiserver(self):
        self.audit_log = os.path.join(self.dir, "audit.log")
        policy = os.path.join(self.dir, "audit-policy.yaml")
        with open(policy, "w") as f:
            f.write(textwrap.dedent("""\
                apiVersion: audit.k8s.io/v1
                kind: Policy
                omitStages: [RequestReceived]
                rules:
                - level: Request
                  userGroups: ["system:nodes", "system:bootstrappers"]
                - level: None
                """))
        args = [os.path.join(self.bin, "kube-apiserver"),
                "--etcd-servers", self.etcd_url,
                "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
                "--secure-port", str(self.port),
                "--endpoint-reconciler-type", "none",
                "--cert-dir", os.path.join(self.dir, "apiserver-certs"),
                "--tls-cert-file", self.serving[0], "--tls-private-key-file", self.serving[1],
                "--client-ca-file", self.ca,
                "--authorization-mode", "Node,RBAC",
                "--enable-admission-plugins", "NodeRestriction",
                "--enable-bootstrap-token-auth",
                "--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
                "--service-account-key-file", self.sa_pub, "--service-account-signing-key-file", self.sa_key,
                "--service-cluster-ip-range", "10.96.0.0/12",
                "--kubelet-client-certificate", self.kubelet_client[0],
                "--kubelet-client-key", self.kubelet_client[1],
                "--kubelet-preferred-address-types", "InternalIP,ExternalIP,Hostname",
                "--allow-privileged",
                "--requestheader-client-ca-file", self.front_proxy.crt,
                "--requestheader-allowed-names", "front-proxy-client",
                "--requestheader-username-headers", "X-Remote-User",
                "--requestheader-group-headers", "X-Remote-Group",
                "--requestheader-extra-headers-prefix", "X-Remote-Extra-",
                "--proxy-client-cert-file", self.front_proxy_client[0],
                "--proxy-client-key-file", self.front_proxy_client[1],
                "--audit-policy-file", policy, "--audit-log-path", self.audit_log,
                "--profiling=false"]
        if self.kubelet_ca:
            args += ["--kubelet-certificate-authority", self.ca]
        if LEGACY:
            # generic ephemeral volumes and kubectl debug's ephemeral containers were alpha in 1.20
            args += ["--insecure-port", "0", "--feature-gates", "GenericEphemeralVolume=true,EphemeralContainers=true"]
        self._spawn("kube-apiserver", args)

        def ready():
            st, out = self.admin.raw("GET", "/readyz", timeout=10)
            return st == 200
        self._wait("kube-apiserver", ready, 180, "kube-apiserver /readyz")

    def _start_controller_manager(self):
        controllers = ["csrsigning", "csrapproving", "csrcleaner", "namespace", "garbagecollector", "nodelifecycle",
                       "serviceaccount", "serviceaccount-token", "root-ca-cert-publisher", "bootstrapsigner",
                       "tokencleaner",
                       # storage (test_storage.py): binding, attaching, protection, generic ephemeral volumes
                       "persistentvolume-binder", "attachdetach", "pv-protection", "pvc-protection", "ephemeral-volume"]
        self.cm_port = free_port()
        self._spawn("kube-controller-manager", [
            os.path.join(self.bin, "kube-controller-manager"),
            "--kubeconfig", self.cm_kubeconfig,
            "--authentication-kubeconfig", self.cm_kubeconfig, "--authorization-kubeconfig", self.cm_kubeconfig,
            "--bind-address", "127.0.0.1", "--secure-port", str(self.cm_port),
            "--cert-dir", os.path.join(self.dir, "controller-manager-certs"),
            "--leader-elect=false", "--controllers", ",".join(controllers),
            *(["--port", "0", "--feature-gates", "GenericEphemeralVolume=true"] if LEGACY else []),
            "--cluster-name", "ckubelet-e2e",
            "--cluster-signing-cert-file", self.ca, "--cluster-signing-key-file", self.pki.key,
            "--cluster-signing-duration", self.signing_duration,
            "--root-ca-file", self.ca, "--service-account-private-key-file", self.sa_key,
            "--use-service-account-credentials=true", "--profiling=false"])

        def healthy():
            ctx = ssl._create_unverified_context()
            c = http.client.HTTPSConnection("127.0.0.1", self.cm_port, timeout=5, context=ctx)
            try:
                c.request("GET", "/healthz")
                return c.getresponse().status == 200
            finally:
                c.close()
        self._wait("kube-controller-manager", healthy, 120, "kube-controller-manager /healthz")
        # its service account controller works once default/default exists
        self._wait("kube-controller-manager",
                   lambda: self.admin.get("serviceaccounts", "default", "default"), 120, "the default service account")

    def _start_scheduler(self):
        cert = self.pki.issue("scheduler", "system:kube-scheduler")
        kc = kubeconfig(os.path.join(self.dir, "scheduler.kubeconfig"), self.server, self.ca, "system:kube-scheduler",
                        *cert)
        self.sched_port = free_port()
        self._spawn("kube-scheduler", [
            os.path.join(self.bin, "kube-scheduler"), "--kubeconfig", kc,
            "--authentication-kubeconfig", kc, "--authorization-kubeconfig", kc,
            "--bind-address", "127.0.0.1", "--secure-port", str(self.sched_port),
            "--leader-elect=false", "--profiling=false"])

        def healthy():
            ctx = ssl._create_unverified_context()
            c = http.client.HTTPSConnection("127.0.0.1", self.sched_port, timeout=5, context=ctx)
            try:
                c.request("GET", "/healthz")
                return c.getresponse().status == 200
            finally:
                c.close()
        self._wait("kube-scheduler", healthy, 120, "kube-scheduler /healthz")

    def _bootstrap_objects(self):
        """What kubeadm init creates for nodes joining with a bootstrap token."""
        a = self.admin
        self.bootstrap_token = self.new_bootstrap_token()

        def crb(name, role, kind, subject):
            a.create("clusterrolebindings", {
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": name},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": subject}]})
        crb("kubeadm:kubelet-bootstrap", "system:node-bootstrapper", "Group", BOOTSTRAP_GROUP)
        crb("kubeadm:node-autoapprove-bootstrap",
            "system:certificates.k8s.io:certificatesigningrequests:nodeclient", "Group", BOOTSTRAP_GROUP)
        crb("kubeadm:node-autoapprove-certificate-rotation",
            "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", "Group", "system:nodes")
        a.create("clusterroles", {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                                  "metadata": {"name": "kubeadm:get-nodes"},
                                  "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}]})
        crb("kubeadm:get-nodes", "kubeadm:get-nodes", "Group", BOOTSTRAP_GROUP)
        with open(self.ca) as f:
            ca_data = base64.b64encode(f.read().encode()).decode()
        info = {"apiVersion": "v1", "kind": "Config",
                "clusters": [{"name": "", "cluster": {"certificate-authority-data": ca_data, "server": self.server}}],
                "contexts": [], "users": [], "current-context": "", "preferences": {}}
        a.create("configmaps", {"apiVersion": "v1", "kind": "ConfigMap",
                                "metadata": {"name": "cluster-info", "namespace": "kube-public"},
                                "data": {"kubeconfig": json.dumps(info)}})

    def stop(self):
        """Stop every component (SIGTERM, then SIGKILL after 20 s), controller-manager first, etcd last."""
        for name in ("kube-scheduler", "kube-controller-manager", "kube-apiserver", "etcd"):
            p = self.procs.get(name)
            if not p or p.poll() is not None:
                continue
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(10)
        if self.etcd_dir:
            shutil.rmtree(self.etcd_dir, ignore_errors=True)
            self.etcd_dir = None

    def alive(self):
        return {n: p.poll() is None for n, p in self.procs.items()}

    # -------------------------------------------------------------- logs

    def tail(self, name, n=60):
        path = self.logs.get(name)
        if not path or not os.path.exists(path):
            return ""
        with open(path, errors="replace") as f:
            lines = f.read().splitlines()
        return f"----- {path} (last {min(n, len(lines))} lines)\n" + "\n".join(lines[-n:])

    def tail_logs(self, n=60):
        return "\n".join(self.tail(name, n) for name in ("etcd", "kube-apiserver", "kube-controller-manager",
                                                          "kube-scheduler") if name in self.logs)

    def audit(self, user=None):
        """The audit events logged so far, in the order the requests arrived, of one user if given: each
        request once, as completed (stage ResponseComplete), or as started for a watch still running."""
        with self._audit_lock:
            if os.path.exists(self.audit_log):
                with open(self.audit_log, "rb") as f:
                    f.seek(self._audit_pos)
                    data = f.read()
                end = data.rfind(b"\n") + 1
                self._audit_pos += end
                for line in data[:end].splitlines():
                    try:
                        ev = json.loads(line)
                    except ValueError:
                        continue
                    if ev.get("stage") in ("ResponseStarted", "ResponseComplete"):
                        self._audit[ev["auditID"]] = ev  # dicts keep the first insertion's place
            evs = list(self._audit.values())
        return [e for e in evs if user is None or e["user"]["username"] == user]

    # -------------------------------------------------------------- credentials for nodes and clients

    def node_credentials(self, node, days=2):
        """A client certificate for the node (CN=system:node:<node>, O=system:nodes) and a kubeconfig with
        it, for ckubelet's --kubeconfig."""
        d = os.path.join(self.dir, "nodes", node)
        os.makedirs(d, exist_ok=True)
        cert = self.pki.issue(f"node-{node}", f"system:node:{node}", ["system:nodes"], days=days)
        return kubeconfig(os.path.join(d, "kubelet.kubeconfig"), self.server, self.ca, f"system:node:{node}",
                          *cert)

    def user_kubeconfig(self, name, user, orgs=()):
        cert = self.pki.issue(f"user-{name}", user, orgs)
        return kubeconfig(os.path.join(self.dir, f"{name}.kubeconfig"), self.server, self.ca, user, *cert), cert

    def token_kubeconfig(self, path, token, user="token-user"):
        return kubeconfig(path, self.server, self.ca, user, token=token)

    def new_bootstrap_token(self, expiration=None, extra_groups=BOOTSTRAP_GROUP):
        """A bootstrap token (<id>.<secret>) as kubeadm makes them: the Secret bootstrap-token-<id> in
        kube-system, for authentication and signing, in the kubeadm default node token group."""
        alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
        tid = "".join(secrets.choice(alphabet) for _ in range(6))
        tsecret = "".join(secrets.choice(alphabet) for _ in range(16))
        data = {"token-id": tid, "token-secret": tsecret, "usage-bootstrap-authentication": "true",
                "usage-bootstrap-signing": "true", "auth-extra-groups": extra_groups,
                "description": "ckubelet e2e bootstrap token"}
        if expiration:
            data["expiration"] = expiration
        self.admin.create("secrets", {
            "apiVersion": "v1", "kind": "Secret", "type": "bootstrap.kubernetes.io/token",
            "metadata": {"name": f"bootstrap-token-{tid}", "namespace": "kube-system"},
            "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}})
        return f"{tid}.{tsecret}"

    def bootstrap_kubeconfig(self, path, token=None):
        """A kubeconfig authenticating with a bootstrap token (kubeadm's bootstrap-kubelet.conf)."""
        return kubeconfig(path, self.server, self.ca, "tls-bootstrap-token-user",
                          token=token or self.bootstrap_token, embed=True)

    def kubectl_args(self, *args, kubeconfig=None):
        return [self.kubectl_bin, "--kubeconfig", kubeconfig or self.admin_kubeconfig,
                "--cache-dir", os.path.join(self.dir, "kubectl-cache"), *args]

    def kubectl(self, *args, kubeconfig=None, input=None, timeout=120, check=True, **kw):
        """Run kubectl (as the admin by default) to completion: the CompletedProcess."""
        p = subprocess.run(self.kubectl_args(*args, kubeconfig=kubeconfig), input=input, capture_output=True,
                           timeout=timeout, **kw)
        if check and p.returncode != 0:
            err = p.stderr.decode(errors="replace") if isinstance(p.stderr, bytes) else p.stderr
            raise RuntimeError(f"kubectl {' '.join(args)}: exit {p.returncode}: {err}")
        return p


def _dns_label(text, limit):
    out = "".join(c if c.isalnum() else "-" for c in text.lower())
    while "--" in out:
        out = out.replace("--", "-")
    return out.strip("-")[:limit].strip("-")


def in_flight_at(event, stops, grace=10.0):
    """Was the audited request in flight when the kubelet was stopped: received before one of the times in stops
    and completed at or after it, or received while that kubelet was stopping (within `grace` seconds of the
    signal: a stopping kubelet still sends what its loop had queued) and ended by the client going away ("context
    canceled")?"""
    try:
        received = datetime.datetime.fromisoformat(event["requestReceivedTimestamp"].replace("Z", "+00:00")).timestamp()
        done = datetime.datetime.fromisoformat(event["stageTimestamp"].replace("Z", "+00:00")).timestamp()
    except (KeyError, ValueError):
        return False
    gone = "context canceled" in event.get("responseStatus", {}).get("message", "")
    return any(received <= t <= done or (gone and t <= received <= t + grace) for t in stops)


class Kube:
    """One test's part of the cluster (the `kube` fixture): a node name of its own, also the name of its
    namespace, so that tests never see each other's objects; the node's kubeconfig; ckubelets joining as that
    node; the admin client's verbs defaulting to the test's namespace; the node's audit trail."""

    def __init__(self, cp, kubelets, test_name):
        self.cp = cp
        self.kubelets = kubelets
        base = _dns_label(test_name[5:] if test_name.startswith("test_") else test_name, 40)
        self.node = f"{base}-{secrets.token_hex(3)}"
        self.ns = self.node
        self.user = f"system:node:{self.node}"
        self.admin = cp.admin
        self.expected_errors = set()  # (verb, HTTP status) pairs the test provokes on purpose
        self._kubeconfig = None

    @property
    def kubeconfig(self):
        if not self._kubeconfig:
            self._kubeconfig = self.cp.node_credentials(self.node)
        return self._kubeconfig

    def setup(self):
        self.admin.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.ns}})
        # pods can be created once the namespace's default service account exists (and, before v1.24, has its
        # token Secret)
        self.wait(lambda: (sa := self.get("serviceaccounts", "default")) and (sa.get("secrets") or not LEGACY), 60,
                  msg=f"the service account {self.ns}/default and its token")

    def kubelet(self, *extra, start=True):
        """A ckubelet joining the cluster as this test's node (its client certificate; the cluster CA as its
        --client-ca-file, so the apiserver's kubelet client is authenticated)."""
        k = self.kubelets.make(False, node=self.node)
        k.cluster_args = ["--kubeconfig", self.kubeconfig, "--node-status-update-frequency", "1s",
                          "--client-ca-file", self.cp.ca]
        if start:
            k.start(*k.cluster_args, *extra)
        return k

    # ------------------------------------------------------------------ the admin's verbs, in our namespace

    def _ns(self, resource, namespace):
        return (namespace or self.ns) if RESOURCES[resource][1] else None

    def create(self, resource, obj, namespace=None):
        obj = dict(obj)
        ns = self._ns(resource, namespace or obj.get("metadata", {}).get("namespace"))
        if ns:
            obj["metadata"] = dict(obj.get("metadata", {}), namespace=ns)
        return self.admin.create(resource, obj, ns)

    def get(self, resource, name, namespace=None, sub=None):
        return self.admin.get(resource, name, self._ns(resource, namespace), sub)

    def list(self, resource, namespace=None, **query):
        return self.admin.list(resource, self._ns(resource, namespace), **query)

    def update(self, resource, obj, retries=10):
        """PUT obj; on a conflict, re-read the object and apply obj's data/spec/labels again."""
        obj = dict(obj)
        ns = self._ns(resource, obj.get("metadata", {}).get("namespace"))
        for i in range(retries):
            cur = self.admin.get(resource, obj["metadata"]["name"], ns)
            new = dict(obj)
            new["metadata"] = dict(cur["metadata"], **{k: v for k, v in obj["metadata"].items()
                                                       if k in ("labels", "annotations")}, namespace=ns)
            try:
                return self.admin.update(resource, new)
            except ApiError as e:
                if e.status != 409 or i == retries - 1:
                    raise

    def patch(self, resource, name, patch, namespace=None, sub=None, kind="merge"):
        return self.admin.patch(resource, name, patch, self._ns(resource, namespace), sub, kind)

    def delete(self, resource, name, namespace=None, grace_seconds=None):
        return self.admin.delete(resource, name, self._ns(resource, namespace), grace_seconds)

    def pod(self, name, namespace=None):
        return self.get("pods", name, namespace)

    def node_obj(self):
        return self.admin.get("nodes", self.node)

    def lease(self):
        return self.admin.get("leases", self.node, "kube-node-lease")

    def events(self, involved=None, reason=None, namespace=None):
        return [e for e in self.list("events", namespace)
                if (involved is None or e["involvedObject"]["name"] == involved) and
                (reason is None or e["reason"] == reason)]

    def wait(self, predicate, timeout=30, msg="condition", interval=0.2):
        deadline = time.monotonic() + timeout
        last = None
        while True:
            try:
                v = predicate()
                if v:
                    return v
            except Exception as e:  # an object not there yet
                last = e
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout}s waiting for {msg}" +
                                     (f" (last error: {last})" if last else ""))
            time.sleep(interval)

    def kubectl(self, *args, **kw):
        return self.cp.kubectl(*args, **kw)

    def token_review(self, token, audiences=None):
        """The apiserver's view of a bearer token (a TokenReview by the admin): its status."""
        spec = {"token": token}
        if audiences:
            spec["audiences"] = audiences
        return self.admin.create("tokenreviews", {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                                                  "spec": spec})["status"]

    # ------------------------------------------------------------------ what the node asked for

    def audit(self):
        """The kubelet's requests (audit events, level Request: verb, requestURI, requestObject,
        responseStatus)."""
        return self.cp.audit(self.user)

    def refused_requests(self):
        """The node's requests refused with 400, 403, 422 or 5xx, except those the test expects and the Node
        authorizer's transient 403s: it learns of a new pod's Secrets, ConfigMaps and service account from its
        own watch, so a read (or TokenRequest) for a pod the kubelet has just been given can be refused for a
        moment; such a refusal followed by the same request succeeding is not counted. Nor is a 5xx of a request
        that was in flight when the test stopped a kubelet (SIGTERM or SIGKILL, its teardown included): the kubelet
        exits without waiting for its requests, as upstream's does, and the apiserver logs a request whose client
        went away as 500 ("context canceled")."""
        evs = self.audit()
        stops = [t for k in getattr(self.kubelets, "made", []) for t in getattr(k, "stops", [])]
        out = []
        for i, e in enumerate(evs):
            code = e.get("responseStatus", {}).get("code", 0)
            if not (code in (400, 403, 422) or code >= 500) or (e["verb"], code) in self.expected_errors:
                continue
            if code >= 500 and in_flight_at(e, stops):
                continue
            if code == 403 and e["objectRef"].get("resource") in ("secrets", "configmaps", "serviceaccounts",
                                                                  "persistentvolumeclaims", "persistentvolumes",
                                                                  "volumeattachments") and \
                    any(l["verb"] == e["verb"] and l["requestURI"] == e["requestURI"] and
                        l.get("responseStatus", {}).get("code", 0) < 400 for l in evs[i + 1:]):
                continue
            out.append(f"{e['verb']} {e['requestURI']}: {code} {e['responseStatus'].get('message', '')}")
        return out

    def cleanup(self):
        """Remove the test's pods (bound to its node, in any namespace), namespace, node and lease."""
        try:
            for p in self.admin.list("pods", fieldSelector=f"spec.nodeName={self.node}"):
                self.admin.delete("pods", p["metadata"]["name"], p["metadata"]["namespace"], grace_seconds=0)
            for p in self.admin.list("pods", self.ns):
                self.admin.delete("pods", p["metadata"]["name"], self.ns, grace_seconds=0)
            self.admin.delete("namespaces", self.ns)
            self.admin.delete("nodes", self.node)
            self.admin.delete("leases", self.node, "kube-node-lease")
        except Exception as e:  # the control plane is gone: nothing left to clean
            print(f"cleaning up {self.node}: {e}")
