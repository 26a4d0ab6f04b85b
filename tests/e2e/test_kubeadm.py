"""kubeadm, for real (issue 30): `kubeadm init` v1.37.2 with ckubelet as the kubelet, one init for the module.

kubeadm (the cached v1.37.2 build of scripts/build-kubernetes.sh) writes its certificates, kubeconfigs,
/var/lib/kubelet/config.yaml, kubeadm-flags.env and the static pod manifests of etcd, kube-apiserver,
kube-controller-manager and kube-scheduler. With no init system here it only warns that it cannot start the
kubelet, so the fixture starts ckubelet the way kubeadm's systemd drop-in does: debian/10-kubeadm.conf (the
package's drop-in) is read here, its Environment= and EnvironmentFile= lines give the environment and its ExecStart
the command line. The control-plane images are built from the cached binaries (scripts/build-kubeadm-images.py)
under the names `kubeadm config images list` gives for imageRepository registry.local/k8s, and imported into the
module's own private containerd (the kubeadm_runtime fixture), whose socket is the InitConfiguration's criSocket.

kubeadm's kubeconfig and manifest directory (/etc/kubernetes) and the kubelet directory (/var/lib/kubelet) are
fixed paths in kubeadm: they are the real ones, so the module refuses to start when /etc/kubernetes holds anything
or when kubeadm's ports are taken, and cleans both before and after (kubeadm reset -f, then what reset leaves).
The certificates (certificatesDir) and etcd's data (etcd.local.dataDir) are private directories.

Phase skipped: addon/coredns (no CoreDNS image can be built from Debian's packages or the Kubernetes source).
kube-proxy runs as kubeadm deploys it (a DaemonSet, its ConfigMap and service account), its image with Debian's
iptables (nf_tables, as the machine's); it leaves conntrack settings alone and localhost NodePorts off (the machine
is shared), and its rules are removed afterwards with `kube-proxy --cleanup`, which kubeadm reset does not do.

The checks share the init and run in order: the init itself, workloads, a ckubelet restart, a manifest edit, and
kubeadm reset last."""
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import textwrap
import threading
import time

import pytest

import controlplane
from conftest import CKUBELET, CRICTL, REPO, SCRIPTS, IMAGE_CACHE, Runtime, make_cgroup_root, \
    remove_cgroup_root, cgroup_hierarchies, wait_for

pytestmark = pytest.mark.skipif(controlplane.LEGACY, reason="kubeadm v1.37.2 with its own control plane")

IMAGE_REPO = "registry.local/k8s"
NODE_NAME = "ckubelet-kubeadm"   # not the hostname: "vm" resolves to 127.0.0.1 here (see NODE_IP)
KUBE_DIR = "/etc/kubernetes"
KUBELET_DIR = "/var/lib/kubelet"
DROP_IN = os.path.join(REPO, "debian", "10-kubeadm.conf")
PORTS = (6443, 2379, 2380, 2381, 10250, 10248, 10257, 10259, 10249, 10256)
COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")
# hostPath directories kubeadm's manifests create (DirectoryOrCreate) when missing: removed again afterwards
CREATED_DIRS = ("/usr/libexec/kubernetes/kubelet-plugins/volume/exec", "/usr/local/share/ca-certificates",
                "/etc/ca-certificates", "/usr/share/ca-certificates", "/etc/ssl/certs")

# preflight checks that cannot pass on this machine, each ignored by name (nodeRegistration.ignorePreflightErrors)
IGNORED_PREFLIGHT = [
    # this machine's cgroups are v1 (hybrid): kubeadm v1.37 refuses them unless the kubelet has failCgroupV1: false
    # (the KubeletConfiguration below) and this check is skipped explicitly, as its message asks. Everything
    # else it verifies (kernel config, cgroup controllers, the kubelet's version) passes here.
    "SystemVerification",
]


def node_ip():
    """The address the node advertises: the machine's first non-loopback address (kube-apiserver v1.37 does not
    proxy logs, exec and port-forward to a loopback one)."""
    out = subprocess.run(["hostname", "-I"], capture_output=True, text=True).stdout.split()
    v4 = [a for a in out if ":" not in a and not a.startswith("127.")]
    return v4[0] if v4 else None


def port_taken(port):
    """Something listens on port (a connection in TIME-WAIT left by an earlier kubelet does not count: the
    components bind with SO_REUSEADDR)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("0.0.0.0", port))
            return False
        except OSError:
            return True


def mounts_under(prefix):
    with open("/proc/self/mountinfo") as f:
        return [l.split()[4] for l in f if l.split()[4] == prefix or l.split()[4].startswith(prefix + "/")]


def unmount_under(prefix):
    for m in sorted(mounts_under(prefix), key=len, reverse=True):
        subprocess.run(["umount", "-l", m], capture_output=True)


def env_file(path):
    """systemd's EnvironmentFile= format: KEY=VALUE lines, VALUE maybe quoted."""
    env = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith(("#", ";")) or "=" not in line:
                continue
            k, _, v = line.partition("=")
            v = v.strip()
            if len(v) >= 2 and v[0] == v[-1] and v[0] in "\"'":
                v = v[1:-1]
            env[k.strip()] = v
    return env


def drop_in_command(extra_args, paths=None):
    """The command line and environment of debian/10-kubeadm.conf's ExecStart, as systemd builds them:
    Environment= first, then each EnvironmentFile= that exists (kubeadm-flags.env; /etc/default/kubelet and
    /etc/default/ckubelet when the machine has them), unquoted $VARS split on whitespace. /usr/bin/ckubelet is the
    build's; extra_args stand for the administrator's KUBELET_EXTRA_ARGS (/etc/default/kubelet); paths
    maps a directory to where it lives for a node in its own mount namespace (its EnvironmentFile= paths)."""
    env, execstart = {}, None
    with open(DROP_IN) as f:
        for line in f:
            line = line.strip()
            if line.startswith("Environment="):
                for kv in shlex.split(line[len("Environment="):]):
                    k, _, v = kv.partition("=")
                    env[k] = v
            elif line.startswith("EnvironmentFile="):
                path = line[len("EnvironmentFile="):].lstrip("-")
                for top, there in (paths or {}).items():  # a node whose directories live elsewhere here
                    if path.startswith(top + "/"):
                        path = there + path[len(top):]
                if os.path.exists(path):
                    env.update(env_file(path))
            elif line.startswith("ExecStart=") and line != "ExecStart=":
                execstart = line[len("ExecStart="):]
    assert execstart, f"{DROP_IN} has no ExecStart"
    env["KUBELET_EXTRA_ARGS"] = (env.get("KUBELET_EXTRA_ARGS", "") + " " + " ".join(extra_args)).strip()
    argv = []
    for word in execstart.split():
        if word.startswith("$"):
            argv += env.get(word[1:], "").split()
        else:
            argv.append(CKUBELET if word == "/usr/bin/ckubelet" else word)
    return argv, env


def read_log(path):
    with open(path, errors="replace") as f:
        return f.read()


def run_kubeadm(argv, bindir, log_path, start_kubelet, timeout):
    """kubeadm (init or join) in the background, bindir first on its PATH (its `kubelet`); start_kubelet() as soon
    as kubeadm's kubelet-start phase has written the kubelet's files, as systemd would start the unit. Returns
    kubeadm's exit status and output."""
    with open(log_path, "w") as log:
        kubeadm = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   env=dict(os.environ, PATH=bindir + os.pathsep + os.environ["PATH"]))
    try:
        wait_for(lambda: kubeadm.poll() is not None or "[kubelet-start] Starting the kubelet" in read_log(log_path),
                 300, interval=0.2, msg=f"the kubelet-start phase of {' '.join(argv[:3])}")
        if kubeadm.poll() is None:
            start_kubelet()
        rc = kubeadm.wait(timeout=timeout)
    finally:
        if kubeadm.poll() is None:
            kubeadm.kill()
            kubeadm.wait()
    return rc, read_log(log_path)


class KubeadmNode:
    """One `kubeadm init` node: kubeadm's files, ckubelet started from the drop-in, kubectl with admin.conf."""

    def __init__(self, runtime, bindir):
        self.runtime = runtime
        self.bin = bindir
        self.kubeadm = os.path.join(bindir, "kubeadm")
        self.dir = tempfile.mkdtemp(prefix="kubeadm-", dir=runtime.dir)
        self.certs = os.path.join(self.dir, "pki")
        self.etcd = tempfile.mkdtemp(prefix="ckubelet-kubeadm-etcd-", dir="/dev/shm")
        self.logs = os.path.join(self.dir, "pods")
        self.kubelet_log = os.path.join(self.dir, "kubelet.log")
        self.kubeadm_log = os.path.join(self.dir, "kubeadm-init.log")
        self.config = os.path.join(self.dir, "kubeadm.yaml")
        self.cgroup_root = make_cgroup_root()
        self.ip = node_ip()
        self.proc = None
        self.existed = {d for d in CREATED_DIRS if os.path.exists(d)}
        self.admin = os.path.join(KUBE_DIR, "admin.conf")

    # ------------------------------------------------------------------ kubeadm

    def write_config(self):
        with open(self.config, "w") as f:
            f.write(textwrap.dedent(f"""\
                apiVersion: kubeadm.k8s.io/v1beta4
                kind: InitConfiguration
                localAPIEndpoint:
                  advertiseAddress: {self.ip}
                  bindPort: 6443
                nodeRegistration:
                  name: {NODE_NAME}
                  criSocket: {self.runtime.endpoint}
                  imagePullPolicy: IfNotPresent
                  ignorePreflightErrors: {json.dumps(IGNORED_PREFLIGHT)}
                skipPhases: ["addon/coredns"]
                ---
                apiVersion: kubeadm.k8s.io/v1beta4
                kind: ClusterConfiguration
                kubernetesVersion: v1.37.2
                imageRepository: {IMAGE_REPO}
                certificatesDir: {self.certs}
                etcd:
                  local:
                    dataDir: {self.etcd}/data
                networking:
                  serviceSubnet: 10.96.0.0/12
                # one node: no leader election (a lease lost on a loaded machine makes the component exit, a
                # restart the restart and manifest tests would count against ckubelet)
                controllerManager:
                  extraArgs:
                  - name: leader-elect
                    value: "false"
                scheduler:
                  extraArgs:
                  - name: leader-elect
                    value: "false"
                ---
                apiVersion: kubelet.config.k8s.io/v1beta1
                kind: KubeletConfiguration
                cgroupDriver: cgroupfs
                cgroupRoot: {self.cgroup_root}
                failCgroupV1: false
                failSwapOn: false
                podLogsDir: {self.logs}
                ---
                # kube-proxy leaves the machine's conntrack settings alone and does not open NodePorts on
                # localhost (no route_localnet): the machine is shared with the other tests
                apiVersion: kubeproxy.config.k8s.io/v1alpha1
                kind: KubeProxyConfiguration
                mode: iptables
                iptables:
                  localhostNodePorts: false
                conntrack:
                  maxPerCore: 0
                  min: 0
                  tcpEstablishedTimeout: 0s
                  tcpCloseWaitTimeout: 0s
                """))

    def images(self):
        p = subprocess.run([self.kubeadm, "config", "images", "list", "--config", self.config],
                           capture_output=True, text=True, check=True)
        return p.stdout.split()

    def import_images(self):
        refs = self.images()
        tags = {r.rsplit("/", 1)[1].split(":")[0]: r.rsplit(":", 1)[1] for r in refs}
        out = os.path.join(IMAGE_CACHE, "kubeadm", "images.tar")
        os.makedirs(os.path.dirname(out), exist_ok=True)
        subprocess.run(["python3", os.path.join(SCRIPTS, "build-kubeadm-images.py"), out, self.bin, IMAGE_REPO,
                        tags["kube-apiserver"], tags["etcd"], tags["pause"]], check=True)
        subprocess.run(["bash", os.path.join(SCRIPTS, "containerd.sh"), "import", self.runtime.dir, out],
                       check=True)
        return refs

    def reset(self):
        """kubeadm reset -f with the node's CRI socket and certificates directory (kubeadm reads the rest from
        the cluster while it answers). Returns the process."""
        cfg = os.path.join(self.dir, "reset.yaml")
        with open(cfg, "w") as f:
            f.write(textwrap.dedent(f"""\
                apiVersion: kubeadm.k8s.io/v1beta4
                kind: ResetConfiguration
                force: true
                criSocket: {self.runtime.endpoint}
                certificatesDir: {self.certs}
                """))
        return subprocess.run([self.kubeadm, "reset", "--config", cfg], capture_output=True, text=True,
                              timeout=300)

    def proxy_cleanup(self):
        """kube-proxy --cleanup on the machine: the KUBE-* rules kube-proxy's iptables mode made (kubeadm reset
        leaves them, saying so)."""
        return subprocess.run([os.path.join(self.bin, "kube-proxy"), "--cleanup"], capture_output=True, text=True,
                              timeout=120)

    def init(self):
        """kubeadm init in the background; ckubelet started as soon as kubeadm has written the kubelet's files
        (kubeadm's kubelet-start phase). Returns kubeadm's exit status and output."""
        # kubeadm's preflight runs `kubelet --version` (KubeletVersion, SystemVerification): the kubelet on its
        # PATH is ckubelet (which says "Kubernetes v1.37.2", the version it implements)
        bindir = os.path.join(self.dir, "bin")
        os.makedirs(bindir, exist_ok=True)
        if not os.path.lexists(os.path.join(bindir, "kubelet")):
            os.symlink(CKUBELET, os.path.join(bindir, "kubelet"))
        return run_kubeadm([self.kubeadm, "init", "--config", self.config, "--v=1"], bindir, self.kubeadm_log,
                           self.start_kubelet, 600)

    def init_log(self):
        return read_log(self.kubeadm_log)

    # ------------------------------------------------------------------ ckubelet

    def start_kubelet(self):
        argv, env = drop_in_command(["--container-logs-dir", os.path.join(self.dir, "containers"),
                                     "--v", os.environ.get("CKUBELET_V", "4")])
        self.argv = argv
        with open(self.kubelet_log, "a") as log:
            log.write(f"===== starting {' '.join(argv)}\n")
            log.flush()
            self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         env=dict(os.environ, **env))

    def kubelet_alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop_kubelet(self, sig=signal.SIGTERM):
        if not self.kubelet_alive():
            return None if self.proc is None else self.proc.returncode
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return "hung"

    def kubelet_tail(self, n=150):
        try:
            with open(self.kubelet_log, errors="replace") as f:
                return "\n".join(f.read().splitlines()[-n:])
        except FileNotFoundError:
            return ""

    # ------------------------------------------------------------------ kubectl

    def kubectl(self, *args, check=True, timeout=120, input=None):
        p = subprocess.run([os.path.join(self.bin, "kubectl"), "--kubeconfig", self.admin, *args],
                           capture_output=True, text=True, timeout=timeout, input=input)
        if check and p.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)}: {p.stderr.strip()}")
        return p

    def get(self, *args):
        return json.loads(self.kubectl("get", "-o", "json", *args).stdout)

    def mirror(self, component):
        return self.get("pod", "-n", "kube-system", f"{component}-{NODE_NAME}")

    def static_containers(self):
        """component -> (container id, attempt) of its running container, from the runtime."""
        out = {}
        for c in self.runtime.containers():
            if c["state"] == "CONTAINER_RUNNING" and c["metadata"]["name"] in COMPONENTS and \
                    c["labels"].get("io.kubernetes.pod.namespace") == "kube-system":
                out[c["metadata"]["name"]] = (c["id"], c["metadata"].get("attempt", 0))
        return out

    def apiserver_ready(self):
        p = self.kubectl("get", "--raw", "/readyz", check=False, timeout=20)
        return p.returncode == 0 and p.stdout.strip() == "ok"

    # ------------------------------------------------------------------ clean-up

    def cleanup(self):
        """Everything the module made, whatever state it is in: kubeadm reset, ckubelet stopped, the runtime
        emptied, mounts under /var/lib/kubelet undone, kubeadm's and the kubelet's directories emptied, the
        cgroup root and the hostPath directories the manifests created removed, the images removed."""
        problems = []
        # the order of kubeadm reset on a systemd node: the kubelet stopped first, then reset
        rc = self.stop_kubelet()
        if rc not in (None, 0):
            problems.append(f"ckubelet exited {rc} on SIGTERM")
        try:
            r = self.reset()
            if r.returncode != 0:
                problems.append(f"kubeadm reset -f exited {r.returncode}: {r.stderr[-2000:]}")
        except Exception as e:
            problems.append(f"kubeadm reset -f: {e}")
        r = self.proxy_cleanup()
        if r.returncode != 0:
            problems.append(f"kube-proxy --cleanup exited {r.returncode}: {r.stderr[-2000:]}")
        try:
            self.runtime.clean("test_kubeadm.py")
        except Exception as e:
            problems.append(f"emptying the runtime: {e}")
        unmount_under(KUBELET_DIR)
        for d in (KUBE_DIR,):
            shutil.rmtree(d, ignore_errors=True)
        if os.path.isdir(KUBELET_DIR):
            for name in os.listdir(KUBELET_DIR):
                p = os.path.join(KUBELET_DIR, name)
                shutil.rmtree(p, ignore_errors=True) if os.path.isdir(p) and not os.path.islink(p) else os.unlink(p)
        shutil.rmtree(self.etcd, ignore_errors=True)
        for d in CREATED_DIRS:
            if d not in self.existed:
                # only what kubeadm's manifests made (empty), and its parents up to the first that existed
                while d != "/" and not any(d == e or e.startswith(d + "/") for e in self.existed):
                    try:
                        os.rmdir(d)
                    except OSError:
                        break
                    d = os.path.dirname(d)
        try:
            remove_cgroup_root(self.cgroup_root)
        except AssertionError as e:
            problems.append(str(e))
        imgs = subprocess.run(["ctr", "--address", self.runtime.sock, "-n", "k8s.io", "images", "ls", "-q"],
                              capture_output=True, text=True).stdout.split()
        mine = [i for i in imgs if i.startswith(IMAGE_REPO + "/")]
        if mine:
            subprocess.run(["ctr", "--address", self.runtime.sock, "-n", "k8s.io", "images", "rm", *mine],
                           capture_output=True)
        return problems


def precheck():
    """What must hold before kubeadm may use the machine's fixed paths and ports."""
    if os.path.isdir(KUBE_DIR) and os.listdir(KUBE_DIR):
        pytest.fail(f"{KUBE_DIR} is not empty ({sorted(os.listdir(KUBE_DIR))}): another kubeadm node or test uses "
                    f"it; refusing to run kubeadm here")
    taken = [p for p in PORTS if port_taken(p)]
    if taken:
        pytest.fail(f"ports kubeadm's control plane and kubelet need are taken: {taken}")
    if mounts_under(KUBELET_DIR):
        pytest.fail(f"{KUBELET_DIR} has mounts ({mounts_under(KUBELET_DIR)}): a kubelet uses it")
    if not node_ip():
        pytest.skip("no non-loopback IPv4 address to advertise")


@pytest.fixture(scope="module")
def kubeadm_runtime():
    """The module's own containerd (scripts/containerd.sh, bridge ck9N): the session's runtime is emptied before
    every test that uses it, and the control plane must outlive each test of this module. The harness' busybox
    images are imported into it."""
    for tool in (CKUBELET, CRICTL):
        if not os.access(tool, os.X_OK):
            pytest.exit(f"{tool} is not built (run: meson setup build && ninja -C build)", 2)
    subprocess.run(["bash", os.path.join(SCRIPTS, "build-images.sh"), IMAGE_CACHE], check=True)
    rt = Runtime(tempfile.mkdtemp(prefix="ckubelet-kubeadm-", dir="/var/tmp"), 90 + os.getpid() % 10)
    try:
        rt.start()
        subprocess.run(["bash", os.path.join(SCRIPTS, "containerd.sh"), "import", rt.dir,
                        os.path.join(IMAGE_CACHE, "images.tar")], check=True)
        yield rt
    finally:
        rt.stop()
        if os.environ.get("CKUBELET_E2E_KEEP"):
            print(f"kept {rt.dir}")
        else:
            shutil.rmtree(rt.dir, ignore_errors=True)


@pytest.fixture(scope="module")
def node(kubeadm_runtime):
    runtime = kubeadm_runtime
    bindir = controlplane.build_kubernetes()
    precheck()
    n = KubeadmNode(runtime, bindir)
    ok = False
    try:
        # what an earlier run may have left (a leftover pki/kubelet.crt of another kubelet included)
        n.cleanup()
        n.cgroup_root = make_cgroup_root()
        n.write_config()
        n.refs = n.import_images()
        t0 = time.monotonic()
        n.rc, n.out = n.init()
        n.init_seconds = time.monotonic() - t0
        print(f"kubeadm init: exit {n.rc} in {n.init_seconds:.1f}s")
        ok = True
        yield n
    finally:
        if not ok:
            print("----- kubeadm init output\n" + (n.init_log()[-6000:] if os.path.exists(n.kubeadm_log) else ""))
            print("----- ckubelet log (tail)\n" + n.kubelet_tail())
        problems = n.cleanup()
        assert not problems, f"cleaning up the kubeadm node: {problems}"


@pytest.fixture
def up(node, request):
    """The node, its init having succeeded; the logs printed when the test fails."""
    if node.rc != 0:
        pytest.fail(f"kubeadm init failed (exit {node.rc}):\n{node.out[-6000:]}\n----- ckubelet:\n"
                    f"{node.kubelet_tail()}")
    yield node
    rep = getattr(request.node, "rep_call", None)
    if rep is not None and rep.failed:
        print("----- ckubelet log (tail)\n" + node.kubelet_tail(300))


# ---------------------------------------------------------------------------------------------------- init


def test_init_completes_with_ckubelet(up):
    out = up.out
    for phase in ("[preflight]", "[certs]", "[kubeconfig]", "[etcd]", "[control-plane]", "[kubelet-start]",
                  "[wait-control-plane]", "[upload-config]", "[mark-control-plane]", "[bootstrap-token]",
                  "[kubelet-finalize]"):
        assert phase in out, f"kubeadm's output has no {phase} phase"
    assert "Your Kubernetes control-plane has initialized successfully!" in out
    # the kubelet-finalize phase switched kubelet.conf to the client certificate ckubelet rotates
    with open(os.path.join(KUBE_DIR, "kubelet.conf")) as f:
        kc = f.read()
    assert "/var/lib/kubelet/pki/kubelet-client-current.pem" in kc, kc
    # the files the drop-in reads, and ckubelet started from them
    flags = env_file(os.path.join(KUBELET_DIR, "kubeadm-flags.env"))["KUBELET_KUBEADM_ARGS"]
    assert f"--hostname-override={NODE_NAME}" in flags.split(), flags
    assert "--config=/var/lib/kubelet/config.yaml" in up.argv
    # the node, its control-plane label and taint (mark-control-plane)
    n = up.get("node", NODE_NAME)
    assert "node-role.kubernetes.io/control-plane" in n["metadata"]["labels"]
    assert any(t["key"] == "node-role.kubernetes.io/control-plane" for t in n["spec"].get("taints", []))
    wait_for(lambda: any(c["type"] == "Ready" and c["status"] == "True"
                         for c in up.get("node", NODE_NAME)["status"]["conditions"]), 120, interval=1,
             msg="the node Ready")
    addrs = {a["type"]: a["address"] for a in up.get("node", NODE_NAME)["status"]["addresses"]}
    assert addrs.get("InternalIP") == up.ip, addrs
    # the mirror pods of the static pods: running, ready, system-node-critical, hostNetwork
    for c in COMPONENTS:
        def ready(c=c):
            p = up.mirror(c)
            return p["status"].get("phase") == "Running" and any(
                x["type"] == "Ready" and x["status"] == "True" for x in p["status"].get("conditions", [])) and p
        p = wait_for(ready, 180, interval=1, msg=f"mirror pod of {c} Running and Ready")
        assert p["metadata"]["annotations"].get("kubernetes.io/config.mirror"), p["metadata"]
        assert p["spec"]["priorityClassName"] == "system-node-critical"
        assert p["spec"]["hostNetwork"] is True
        assert p["status"]["podIP"] == up.ip
    # the kube-proxy addon: its DaemonSet's pod on the node (a ConfigMap, a service account token, hostPath
    # xtables.lock and /lib/modules, privileged, hostNetwork) running, its rules in the machine's iptables
    wait_for(lambda: up.get("daemonset", "-n", "kube-system", "kube-proxy")["status"].get("numberReady") == 1, 180,
             interval=1, msg="kube-proxy's DaemonSet pod Ready")
    wait_for(lambda: "KUBE-SERVICES" in iptables_save(), 60, interval=1, msg="kube-proxy's KUBE-SERVICES chain")
    # upload-config and bootstrap-token
    up.get("configmap", "-n", "kube-system", "kubeadm-config")
    up.get("configmap", "-n", "kube-system", "kubelet-config")
    secrets = up.get("secret", "-n", "kube-system")["items"]
    assert any(s["type"] == "bootstrap.kubernetes.io/token" for s in secrets)
    up.get("configmap", "-n", "kube-public", "cluster-info")


# ---------------------------------------------------------------------------------------------------- workloads

DEPLOYMENT = {
    "apiVersion": "apps/v1", "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {
        "replicas": 3, "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"terminationGracePeriodSeconds": 2, "containers": [{
                "name": "web", "image": "docker.io/library/busybox:1.36", "imagePullPolicy": "IfNotPresent",
                "command": ["sh", "-c", "mkdir -p /www && echo hello-from-$(hostname) > /www/index.html && "
                            "echo serving $(hostname) && exec httpd -f -p 8080 -h /www"],
                "ports": [{"containerPort": 8080}],
                "readinessProbe": {"httpGet": {"path": "/index.html", "port": 8080}, "periodSeconds": 2}}]}}},
}


def test_deployment_scheduled_logs_exec_port_forward_scale(up):
    up.kubectl("taint", "node", NODE_NAME, "node-role.kubernetes.io/control-plane:NoSchedule-")
    up.kubectl("apply", "-f", "-", input=json.dumps(DEPLOYMENT))
    try:
        wait_for(lambda: up.get("deployment", "web")["status"].get("readyReplicas") == 3, 180, interval=1,
                 msg="the Deployment's 3 replicas Ready")
        pods = up.get("pod", "-l", "app=web")["items"]
        assert len(pods) == 3
        for p in pods:
            assert p["spec"]["nodeName"] == NODE_NAME
            assert any(c["type"] == "PodScheduled" and c["status"] == "True" for c in p["status"]["conditions"])
        name = pods[0]["metadata"]["name"]
        assert up.kubectl("logs", name).stdout.strip() == f"serving {name}"
        assert up.kubectl("exec", name, "--", "cat", "/www/index.html").stdout.strip() == f"hello-from-{name}"
        port = controlplane.free_port()
        pf = subprocess.Popen([os.path.join(up.bin, "kubectl"), "--kubeconfig", up.admin, "port-forward",
                               f"pod/{name}", f"{port}:8080"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
        try:
            def fetch():
                with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
                    s.sendall(b"GET /index.html HTTP/1.0\r\n\r\n")
                    data = b""
                    while chunk := s.recv(4096):
                        data += chunk
                    return data.decode(errors="replace")
            body = wait_for(lambda: "hello-from-" in (r := fetch()) and r, 60, interval=0.5,
                            msg="a page through kubectl port-forward")
            assert f"hello-from-{name}" in body
        finally:
            pf.terminate()
            pf.wait(10)
        # a ClusterIP Service: kube-proxy's rules (from the pods' EndpointSlices) carry the machine's connection
        # to one of the pods
        up.kubectl("expose", "deployment", "web", "--port=80", "--target-port=8080")
        ip = up.get("service", "web")["spec"]["clusterIP"]

        def via_service():
            with socket.create_connection((ip, 80), timeout=5) as s:
                s.sendall(b"GET /index.html HTTP/1.0\r\n\r\n")
                data = b""
                while chunk := s.recv(4096):
                    data += chunk
                return data.decode(errors="replace")
        body = wait_for(lambda: "hello-from-web-" in (r := via_service()) and r, 60, interval=0.5,
                        msg=f"a page through the Service's ClusterIP {ip}")
        assert any(f"hello-from-{p['metadata']['name']}" in body for p in pods), body
        sandboxes = {p["metadata"]["uid"] for p in pods}
        up.kubectl("scale", "deployment", "web", "--replicas=0")
        wait_for(lambda: not up.get("pod", "-l", "app=web")["items"], 120, interval=1, msg="the pods deleted")
        wait_for(lambda: not [s for s in up.runtime.pods() if s["metadata"]["uid"] in sandboxes], 120, interval=1,
                 msg="the pods' sandboxes gone from the runtime")
        assert not [c for c in up.runtime.containers() if c["labels"].get("io.kubernetes.pod.uid") in sandboxes]
    finally:
        up.kubectl("delete", "deployment,service", "web", "--ignore-not-found", check=False)


# ---------------------------------------------------------------------------------------------------- join

JOIN_NAME = "ckubelet-join"
JOIN_NETNS = "ckubelet-join"
JOIN_HOST_IP, JOIN_NODE_IP = "10.231.7.1", "10.231.7.2"


def nsrun(mntns, argv, **kw):
    """argv in the joining node's mount and network namespaces."""
    return subprocess.run(["nsenter", f"--mount={mntns}", f"--net=/run/netns/{JOIN_NETNS}", *argv], **kw)


class JoinRuntime(Runtime):
    """The joining node's containerd: started and stopped inside its namespaces (its CNI bridge, its sandboxes'
    network namespaces and its mounts are the node's own), queried from here over its socket."""

    def __init__(self, dirpath, net_index, mntns):
        super().__init__(dirpath, net_index)
        self.mntns = mntns

    def start(self):
        nsrun(self.mntns, ["bash", os.path.join(SCRIPTS, "containerd.sh"), "start", self.dir, str(self.net_index)],
              check=True)

    def stop(self):
        nsrun(self.mntns, ["bash", os.path.join(SCRIPTS, "containerd.sh"), "stop", self.dir, str(self.net_index)],
              check=False)


class JoinNode:
    """A second node on this machine that joins the kubeadm cluster with a bootstrap token: its own network
    namespace (a veth pair to the machine, JOIN_NODE_IP, which the apiserver reaches for logs and exec), its own
    mount namespace (a private /etc/kubernetes, /var/lib/kubelet, and empty directories over the paths the cluster's
    configuration names for the first node: its certificatesDir and podLogsDir), its own containerd, ckubelet, cgroup
    root (--cgroup-root: the kubelet-config ConfigMap carries the first node's) and node name."""

    def __init__(self, first):
        self.first = first
        self.dir = tempfile.mkdtemp(prefix="ckubelet-join-", dir="/var/tmp")
        self.mntdir = os.path.join(self.dir, "ns")
        self.mntns = os.path.join(self.mntdir, "mnt")
        self.kube_dir = os.path.join(self.dir, "etc-kubernetes")
        self.kubelet_dir = os.path.join(self.dir, "var-lib-kubelet")
        self.kubelet_log = os.path.join(self.dir, "kubelet.log")
        self.join_log = os.path.join(self.dir, "kubeadm-join.log")
        self.cgroup_root = make_cgroup_root()
        self.runtime = None
        self.proc = None

    def setup(self):
        subprocess.run(["ip", "netns", "add", JOIN_NETNS], check=True)
        for cmd in (["ip", "link", "add", "ckj-host", "type", "veth", "peer", "name", "ckj-node"],
                    ["ip", "link", "set", "ckj-node", "netns", JOIN_NETNS],
                    ["ip", "addr", "add", f"{JOIN_HOST_IP}/24", "dev", "ckj-host"],
                    ["ip", "link", "set", "ckj-host", "up"],
                    ["ip", "netns", "exec", JOIN_NETNS, "ip", "addr", "add", f"{JOIN_NODE_IP}/24", "dev", "ckj-node"],
                    ["ip", "netns", "exec", JOIN_NETNS, "ip", "link", "set", "ckj-node", "up"],
                    ["ip", "netns", "exec", JOIN_NETNS, "ip", "link", "set", "lo", "up"],
                    ["ip", "netns", "exec", JOIN_NETNS, "ip", "route", "add", "default", "via", JOIN_HOST_IP],
                    # kubeadm's preflight wants forwarding on (a new network namespace starts with it off)
                    ["ip", "netns", "exec", JOIN_NETNS, "sysctl", "-qw", "net.ipv4.ip_forward=1"]):
            subprocess.run(cmd, check=True)
        # a persistent mount namespace (unshare --mount=FILE needs FILE on a private mount)
        os.makedirs(self.mntdir)
        subprocess.run(["mount", "--bind", self.mntdir, self.mntdir], check=True)
        subprocess.run(["mount", "--make-private", self.mntdir], check=True)
        open(self.mntns, "w").close()
        subprocess.run(["unshare", f"--mount={self.mntns}", "--propagation", "private", "true"], check=True)
        for i, target in enumerate((KUBE_DIR, KUBELET_DIR, self.first.certs, self.first.logs)):
            src = os.path.join(self.dir, f"private-{i}")
            os.makedirs(src)
            if target == KUBE_DIR:
                self.kube_dir = src
            elif target == KUBELET_DIR:
                self.kubelet_dir = src
            os.makedirs(target, exist_ok=True)
            subprocess.run(["nsenter", f"--mount={self.mntns}", "mount", "--bind", src, target], check=True)
        self.runtime = JoinRuntime(os.path.join(self.dir, "containerd"), 80 + os.getpid() % 10, self.mntns)
        os.makedirs(self.runtime.dir)
        self.runtime.start()
        for tar in (os.path.join(IMAGE_CACHE, "images.tar"), os.path.join(IMAGE_CACHE, "kubeadm", "images.tar")):
            subprocess.run(["bash", os.path.join(SCRIPTS, "containerd.sh"), "import", self.runtime.dir, tar],
                           check=True)

    def join(self, token_command):
        """kubeadm join with the bootstrap token and CA hash of `kubeadm token create --print-join-command`;
        ckubelet started from the drop-in once kubeadm's kubelet-start phase has written its files. Returns
        kubeadm's exit status and output."""
        words = token_command.split()
        endpoint = words[2]
        token = words[words.index("--token") + 1]
        ca_hash = words[words.index("--discovery-token-ca-cert-hash") + 1]
        config = os.path.join(self.dir, "join.yaml")
        with open(config, "w") as f:
            f.write(textwrap.dedent(f"""\
                apiVersion: kubeadm.k8s.io/v1beta4
                kind: JoinConfiguration
                # where the kubelet-config ConfigMap's clientCAFile points (the cluster's certificatesDir, here
                # not the default /etc/kubernetes/pki): this node's own directory there
                caCertPath: {self.first.certs}/ca.crt
                discovery:
                  bootstrapToken:
                    apiServerEndpoint: {endpoint}
                    token: {token}
                    caCertHashes: ["{ca_hash}"]
                nodeRegistration:
                  name: {JOIN_NAME}
                  criSocket: {self.runtime.endpoint}
                  imagePullPolicy: IfNotPresent
                  ignorePreflightErrors: {json.dumps(IGNORED_PREFLIGHT)}
                  kubeletExtraArgs:
                  - name: node-ip
                    value: {JOIN_NODE_IP}
                """))
        bindir = os.path.join(self.dir, "bin")
        os.makedirs(bindir, exist_ok=True)
        os.symlink(CKUBELET, os.path.join(bindir, "kubelet"))
        return run_kubeadm(["nsenter", f"--mount={self.mntns}", f"--net=/run/netns/{JOIN_NETNS}",
                            self.first.kubeadm, "join", "--config", config, "--v=1"], bindir, self.join_log,
                           self.start_kubelet, 400)

    def start_kubelet(self):
        # the drop-in's EnvironmentFile= paths are this node's (its private /var/lib/kubelet)
        argv, env = drop_in_command(["--container-logs-dir", os.path.join(self.dir, "containers"),
                                     "--cgroup-root", self.cgroup_root, "--v", os.environ.get("CKUBELET_V", "4")],
                                    {KUBELET_DIR: self.kubelet_dir})
        with open(self.kubelet_log, "a") as log:
            log.write(f"===== starting {' '.join(argv)}\n")
            log.flush()
            self.proc = subprocess.Popen(["nsenter", f"--mount={self.mntns}", f"--net=/run/netns/{JOIN_NETNS}",
                                          *argv], stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         env=dict(os.environ, **env))

    def kubelet_tail(self, n=150):
        try:
            with open(self.kubelet_log, errors="replace") as f:
                return "\n".join(f.read().splitlines()[-n:])
        except FileNotFoundError:
            return ""

    def cleanup(self):
        problems = []
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                rc = self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                rc = self.proc.wait()
            if rc != 0:
                problems.append(f"the joined node's ckubelet exited {rc} on SIGTERM")
        if self.runtime is not None:
            try:
                self.runtime.clean("test_kubeadm.py (joined node)")
            except Exception as e:
                problems.append(f"emptying the joined node's runtime: {e}")
            self.runtime.stop()
        if os.path.exists(self.mntns):
            # the pod volumes ckubelet mounted in the node's namespace go with it; the namespace itself last
            subprocess.run(["umount", self.mntns], capture_output=True)
        if self.mntdir in mounts_under(self.mntdir):  # a bind mount of a directory: os.path.ismount misses it
            subprocess.run(["umount", self.mntdir], capture_output=True)
        subprocess.run(["ip", "link", "del", "ckj-host"], capture_output=True)
        subprocess.run(["ip", "netns", "del", JOIN_NETNS], capture_output=True)
        try:
            remove_cgroup_root(self.cgroup_root)
        except AssertionError as e:
            problems.append(str(e))
        shutil.rmtree(self.dir, ignore_errors=True)
        return problems


BUSY = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "on-joined", "namespace": "default"},
        "spec": {"nodeSelector": {"kubernetes.io/hostname": JOIN_NAME}, "terminationGracePeriodSeconds": 1,
                 "containers": [{"name": "c", "image": "docker.io/library/busybox:1.36",
                                 "imagePullPolicy": "IfNotPresent",
                                 "command": ["sh", "-c", "echo joined-$(hostname); exec sleep 3600"]}]}}


def test_join_second_node(up):
    """kubeadm join: a second node with a bootstrap token and --discovery-token-ca-cert-hash; its client
    certificate from the CSR the controller manager approves (kubeadm's auto-approval RBAC); Ready; a pod the
    scheduler places on it runs, and kubectl logs and exec reach it through the apiserver's proxy to the node."""
    if subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.count(JOIN_NETNS):
        pytest.fail(f"network namespace {JOIN_NETNS} exists: another run left it or uses it")
    cmd = up.kubectl  # admin
    token_command = subprocess.run([up.kubeadm, "token", "create", "--print-join-command", "--kubeconfig", up.admin],
                                   capture_output=True, text=True, check=True, timeout=120).stdout.strip()
    assert token_command.startswith("kubeadm join "), token_command
    j = JoinNode(up)
    ok = False
    try:
        j.setup()
        rc, out = j.join(token_command)
        assert rc == 0, f"kubeadm join exited {rc}:\n{out[-6000:]}\n----- ckubelet:\n{j.kubelet_tail()}"
        assert "This node has joined the cluster" in out, out[-3000:]
        # TLS bootstrap through the CSR: approved and issued for system:node:<name>; kubelet.conf uses the
        # rotated client certificate
        csrs = [c for c in up.get("csr")["items"]
                if c["spec"].get("username", "").startswith("system:bootstrap:") and
                c["spec"]["signerName"] == "kubernetes.io/kube-apiserver-client-kubelet"]
        assert any(any(x["type"] == "Approved" for x in c["status"].get("conditions", [])) and
                   c["status"].get("certificate") for c in csrs), csrs
        with open(os.path.join(j.kube_dir, "kubelet.conf")) as f:
            assert "/var/lib/kubelet/pki/kubelet-client-current.pem" in f.read()
        assert os.path.lexists(os.path.join(j.kubelet_dir, "pki", "kubelet-client-current.pem"))  # a symlink
        wait_for(lambda: any(c["type"] == "Ready" and c["status"] == "True"
                             for c in up.get("node", JOIN_NAME)["status"]["conditions"]), 120, interval=1,
                 msg="the joined node Ready")
        n = up.get("node", JOIN_NAME)
        addrs = {a["type"]: a["address"] for a in n["status"]["addresses"]}
        assert addrs.get("InternalIP") == JOIN_NODE_IP, addrs
        assert not any(t["key"] == "node-role.kubernetes.io/control-plane" for t in n["spec"].get("taints", []))
        cmd("apply", "-f", "-", input=json.dumps(BUSY))
        try:
            p = wait_for(lambda: (x := up.get("pod", "on-joined"))["status"].get("phase") == "Running" and x, 120,
                         interval=1, msg="the pod on the joined node Running")
            assert p["spec"]["nodeName"] == JOIN_NAME
            ip = p["status"]["podIP"]
            assert ip.startswith(f"10.{100 + j.runtime.net_index}."), ip  # the joined node's own CNI bridge
            assert j.runtime.running("on-joined", "c")
            assert not up.runtime.pods_named("on-joined")
            assert wait_for(lambda: cmd("logs", "on-joined").stdout.strip(), 60, interval=1,
                            msg="the pod's log") == "joined-on-joined"
            assert cmd("exec", "on-joined", "--", "cat", "/proc/1/cmdline").stdout.startswith("sleep")
        finally:
            cmd("delete", "pod", "on-joined", "--ignore-not-found", "--wait=true", check=False)
        wait_for(lambda: not j.runtime.pods_named("on-joined"), 60, interval=1,
                 msg="the deleted pod's sandbox gone from the joined node")
        ok = True
    finally:
        if not ok:
            print("----- joined node's ckubelet log (tail)\n" + j.kubelet_tail(300))
        problems = j.cleanup()
        cmd("delete", "node", JOIN_NAME, "--ignore-not-found", check=False)
        # the DaemonSet pod (kube-proxy) bound to the node goes with it
        assert not problems, f"cleaning up the joined node: {problems}"


# ---------------------------------------------------------------------------------------------------- restarts


def test_kubelet_restart_adopts_static_pods(up):
    before = wait_for(lambda: len(c := up.static_containers()) == 4 and c, 60, msg="4 control-plane containers")
    mirrors = {c: up.mirror(c)["metadata"]["uid"] for c in COMPONENTS}
    down = []
    stop = threading.Event()

    def watch():  # the apiserver answers throughout
        while not stop.is_set():
            if not up.apiserver_ready():
                down.append(time.monotonic())
            stop.wait(0.5)
    t = threading.Thread(target=watch)
    t.start()
    try:
        readies = up.kubelet_tail(100000).count("Kubelet is ready")
        up.stop_kubelet(signal.SIGKILL)
        up.start_kubelet()
        # ckubelet's "Kubelet is ready": the runtime listed, every source delivered, every desired pod (the four
        # static pods) through one sync pass, the Node registered
        wait_for(lambda: up.kubelet_tail(100000).count("Kubelet is ready") > readies, 120, interval=0.5,
                 msg="ckubelet ready again (every static pod synced once)")
        wait_for(lambda: all(any(x["type"] == "Ready" and x["status"] == "True"
                                 for x in up.mirror(c)["status"].get("conditions", [])) for c in COMPONENTS),
                 120, interval=1, msg="the mirror pods Ready after the restart")
    finally:
        stop.set()
        t.join()
    assert up.kubelet_alive()
    after = up.static_containers()
    assert after == before, f"static pod containers changed across the ckubelet restart: {before} -> {after}"
    assert not down, f"kube-apiserver was not ready {len(down)} times during the ckubelet restart"
    assert {c: up.mirror(c)["metadata"]["uid"] for c in COMPONENTS} == mirrors


def test_manifest_edit_replaces_only_that_component(up):
    before = wait_for(lambda: len(c := up.static_containers()) == 4 and c, 60, msg="4 control-plane containers")
    path = os.path.join(KUBE_DIR, "manifests", "kube-scheduler.yaml")
    with open(path) as f:
        text = f.read()
    assert "- --v=3" not in text
    # as `kubeadm upgrade` does: the manifest rewritten in place with a new flag
    new = text.replace("    - kube-scheduler\n", "    - kube-scheduler\n    - --v=3\n", 1)
    assert new != text, text
    tmp = os.path.join(KUBE_DIR, "kube-scheduler.yaml.tmp")
    with open(tmp, "w") as f:
        f.write(new)
    os.rename(tmp, path)
    after = wait_for(lambda: len(c := up.static_containers()) == 4 and
                     c["kube-scheduler"][0] != before["kube-scheduler"][0] and c, 120, interval=1,
                     msg="a new kube-scheduler container")
    for c in ("etcd", "kube-apiserver", "kube-controller-manager"):
        assert after[c] == before[c], f"{c} changed when only kube-scheduler's manifest did"
    wait_for(lambda: "--v=3" in up.mirror("kube-scheduler")["spec"]["containers"][0]["command"] and
             any(x["type"] == "Ready" and x["status"] == "True"
                 for x in up.mirror("kube-scheduler")["status"].get("conditions", [])), 120, interval=1,
             msg="the mirror pod of the new kube-scheduler Ready")


# ---------------------------------------------------------------------------------------------------- reset


def test_reset_leaves_node_clean(up):
    """kubeadm reset as on a systemd node, where it stops the kubelet first ("[reset] Stopping the kubelet
    service"): here, without an init system, ckubelet is stopped (SIGTERM, exit 0) just before. reset then removes
    every container through CRI, unmounts and empties /var/lib/kubelet, removes the manifests, certificates and
    kubeconfigs. What it cannot remove, checked here: the pod cgroups under ckubelet's cgroup root (empty of
    tasks) and kube-proxy's rules (kube-proxy --cleanup)."""
    assert any(p["metadata"]["name"].startswith("kube-proxy-") for p in up.get("pod", "-n", "kube-system")["items"])
    rc = up.stop_kubelet()
    assert rc == 0, f"ckubelet exited {rc} on SIGTERM"
    r = up.reset()
    assert r.returncode == 0, r.stdout + r.stderr
    assert not up.runtime.pods() and not up.runtime.containers(), up.runtime.describe()
    assert not mounts_under(KUBELET_DIR), mounts_under(KUBELET_DIR)
    left = sorted(os.listdir(KUBELET_DIR)) if os.path.isdir(KUBELET_DIR) else []
    assert not left, f"{KUBELET_DIR} not empty after kubeadm reset: {left}"
    kube_left = [os.path.join(d, f) for d, _, files in os.walk(KUBE_DIR) for f in files]
    assert not kube_left, kube_left
    assert not os.listdir(up.certs), os.listdir(up.certs)
    # the pod cgroups reset leaves (the kubelet's to remove, and it was stopped): no task in any
    left_cgroups = pod_cgroups(up.cgroup_root)
    busy = [d for d in left_cgroups if open(os.path.join(d, "cgroup.procs")).read().strip()]
    assert not busy, busy
    # kube-proxy's rules: reset leaves them, kube-proxy --cleanup removes them
    assert "KUBE-SERVICES" in iptables_save()
    r = up.proxy_cleanup()
    assert r.returncode == 0, r.stderr
    assert "KUBE-SERVICES" not in iptables_save()
    print(f"left after ckubelet's stop and kubeadm reset: {len(left_cgroups)} empty pod cgroups "
          f"({len({os.path.basename(d) for d in left_cgroups})} pods), removed by the test")


def iptables_save():
    return subprocess.run(["iptables-save"], capture_output=True, text=True, check=True).stdout


def pod_cgroups(root):
    return [d for h in cgroup_hierarchies() for d, _, _ in os.walk(h + root) if os.path.basename(d).startswith("pod")]
