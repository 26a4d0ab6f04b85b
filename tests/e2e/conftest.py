# End-to-end harness: a private containerd (scripts/containerd.sh) per test session, images built from
# busybox-static, and a ckubelet per test. Only the Python standard library and pytest.
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import textwrap
import time
import warnings

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("CKUBELET_BUILD", os.path.join(REPO, "build"))
CKUBELET = os.path.join(BUILD, "ckubelet")
CRICTL = os.path.join(BUILD, "tools", "ckubelet-crictl")
SCRIPTS = os.path.join(REPO, "scripts")
IMAGE_CACHE = os.environ.get("CKUBELET_IMAGE_CACHE", "/var/tmp/ckubelet-images")
NODE = "testnode"
BUSYBOX = "docker.io/library/busybox:1.36"
# The runtime (scripts/containerd.sh): Debian 12's containerd 1.6.20 and runc by default; CKUBELET_CONTAINERD_BIN
# (containerd 2.1.9 from scripts/build-runtime.sh) puts its containerd, shim and ctr first on PATH, for the
# harness's own ctr calls too; CKUBELET_OCI_RUNTIME (crun) is the runc shim's binary.
CONTAINERD_BIN = os.environ.get("CKUBELET_CONTAINERD_BIN")
if CONTAINERD_BIN:
    os.environ["PATH"] = CONTAINERD_BIN + os.pathsep + os.environ.get("PATH", "")


def containerd_major():
    """The major version of the containerd the tests run (1 or 2)."""
    out = subprocess.run(["containerd", "--version"], capture_output=True, text=True).stdout.split()
    return int(out[2].lstrip("v").split(".")[0]) if len(out) > 2 else 1


_ports_given = set()


def free_port():
    """A TCP port nothing listens on now (never the same twice in one test session). Asked for on every address:
    ckubelet binds its ports on 0.0.0.0, which a socket on any address holding the port refuses (EADDRINUSE), a
    client's TIME-WAIT from an earlier probe to a pod IP included; a port free on 127.0.0.1 alone may be such."""
    import socket
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("0.0.0.0", 0))
            port = s.getsockname()[1]
        if port not in _ports_given:
            _ports_given.add(port)
            return port


def wait_for(cond, timeout=30.0, interval=0.05, msg="condition"):
    """Poll cond() until it returns a truthy value; return that value or fail after timeout seconds."""
    deadline = time.monotonic() + timeout
    last_exc = None
    while True:
        try:
            v = cond()
            if v:
                return v
        except Exception as e:  # a transient error while the runtime changes is not a failure yet
            last_exc = e
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {msg}" +
                                 (f" (last error: {last_exc})" if last_exc else ""))
        time.sleep(interval)


def terminate(*procs):
    """SIGTERM each process still running, SIGKILL after 10 s; each reaped."""
    for p in procs:
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def private_system_bus(dirpath):
    """A dbus-daemon of the test's own on <dirpath>/system_bus_socket (a fake systemd or logind owns names on it;
    ckubelet is pointed at it with DBUS_SYSTEM_BUS_ADDRESS). Returns (daemon process, address, socket path)."""
    sock = os.path.join(dirpath, "system_bus_socket")
    if os.path.exists(sock):
        os.unlink(sock)  # a bus before this one
    address = f"unix:path={sock}"
    conf = os.path.join(dirpath, "bus.conf")
    with open(conf, "w") as f:
        f.write(textwrap.dedent(f"""\
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>session</type>
              <listen>{address}</listen>
              <auth>EXTERNAL</auth>
              <policy context="default">
                <allow send_destination="*" eavesdrop="true"/>
                <allow eavesdrop="true"/>
                <allow own="*"/>
              </policy>
            </busconfig>
            """))
    daemon = subprocess.Popen(["dbus-daemon", "--nofork", "--nopidfile", f"--config-file={conf}"],
                              stdout=subprocess.DEVNULL, stderr=open(os.path.join(dirpath, "dbus.log"), "w"))
    wait_for(lambda: os.path.exists(sock), 20, msg="the private bus' socket")
    return daemon, address, sock


class Runtime:
    """The private containerd, queried over CRI with ckubelet-crictl."""

    def __init__(self, dirpath, net_index):
        self.dir = dirpath
        self.net_index = net_index
        self.sock = os.path.join(dirpath, "containerd.sock")
        self.endpoint = "unix://" + self.sock

    def start(self, env=None):
        """env: containerd.sh's environment (its CKUBELET_CONTAINERD_* switches), None: the test's own."""
        subprocess.run(["bash", os.path.join(SCRIPTS, "containerd.sh"), "start", self.dir, str(self.net_index)],
                       check=True, env=env)

    def import_images(self, tar=None):
        """The tests' images (build-images.sh's tar, or another OCI layout tar) into the k8s.io namespace."""
        subprocess.run(["bash", os.path.join(SCRIPTS, "containerd.sh"), "import", self.dir,
                        tar or os.path.join(IMAGE_CACHE, "images.tar")], check=True)

    def stop(self):
        subprocess.run(["bash", os.path.join(SCRIPTS, "containerd.sh"), "stop", self.dir, str(self.net_index)],
                       check=False)

    def plain_http(self, hostport):
        """Let the runtime reach a registry of the tests at hostport (127.0.0.1:<port>) over plain HTTP: a
        hosts.toml in the config_path of containerd 2.x, which, unlike 1.6, tries HTTPS first on any port but the
        one its configuration names (1.6 ignores the file)."""
        d = os.path.join(self.dir, "certs.d", hostport)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "hosts.toml"), "w") as f:
            f.write(f'server = "http://{hostport}"\n[host."http://{hostport}"]\n  capabilities = ["pull", "resolve"]\n')

    def kill_daemon(self):
        """Stop containerd itself, leaving shims and containers running (like a daemon restart)."""
        with open(os.path.join(self.dir, "containerd.pid")) as f:
            pid = int(f.read())
        os.kill(pid, signal.SIGTERM)
        wait_for(lambda: not os.path.exists(f"/proc/{pid}") or _is_zombie(pid), 20, msg="containerd to exit")
        os.unlink(os.path.join(self.dir, "containerd.pid"))

    def crictl(self, *args, check=True, timeout=60):
        p = subprocess.run([CRICTL, "--runtime-endpoint", self.endpoint, *args], capture_output=True, text=True,
                           timeout=timeout)
        if check and p.returncode != 0:
            raise RuntimeError(f"ckubelet-crictl {' '.join(args)}: {p.stderr.strip()}")
        return p

    def json(self, *args):
        return json.loads(self.crictl(*args).stdout)

    def pods(self):
        return self.json("pods", "-o", "json")["items"]

    def containers(self):
        return self.json("ps", "-a", "-o", "json")["containers"]

    def inspect(self, cid):
        return self.json("inspect", cid)["status"]

    def container_pid(self, cid):
        """The container's init pid, from ContainerStatus' verbose info."""
        return json.loads(self.json("inspect", cid)["info"]["info"])["pid"]

    def inspectp(self, sid):
        return self.json("inspectp", sid)["status"]

    def pods_named(self, name, ready_only=False):
        return [p for p in self.pods() if p["metadata"]["name"] == name and
                (not ready_only or p["state"] == "SANDBOX_READY")]

    def containers_of(self, pod_name, name=None, state=None):
        return [c for c in self.containers()
                if c["labels"].get("io.kubernetes.pod.name") == pod_name and
                (name is None or c["metadata"]["name"] == name) and (state is None or c["state"] == state)]

    def running(self, pod_name, name=None):
        return self.containers_of(pod_name, name, "CONTAINER_RUNNING")

    def tasks(self):
        """containerd's own view: task id -> status (CREATED, RUNNING, STOPPED...), through its client ctr."""
        p = subprocess.run(["ctr", "--address", self.sock, "-n", "k8s.io", "task", "ls"], capture_output=True,
                           text=True, timeout=30)
        return {f[0]: f[2] for f in (l.split() for l in p.stdout.splitlines()[1:]) if len(f) >= 3}

    def delete_task(self, tid):
        """Delete a task through containerd's own client (not CRI): kill -9 and delete (ctr task delete -f);
        then, if it is still there, kill, wait for it to stop and delete again. True when it is gone."""
        ctr = ["ctr", "--address", self.sock, "-n", "k8s.io", "task"]
        subprocess.run(ctr + ["delete", "-f", tid], capture_output=True, timeout=30)
        if tid in self.tasks():
            subprocess.run(ctr + ["kill", "-a", "-s", "SIGKILL", tid], capture_output=True, timeout=30)
            try:
                wait_for(lambda: self.tasks().get(tid) in (None, "STOPPED"), 10, interval=0.2,
                         msg=f"task {tid} to stop")
            except AssertionError:
                pass
            subprocess.run(ctr + ["delete", tid], capture_output=True, timeout=30)
        return tid not in self.tasks()

    def _remove(self, kind, obj, recovered):
        """RemoveContainer / RemovePodSandbox; when the runtime refuses because containerd still holds a task
        for it (TASK_HELD), that task is deleted through ctr and the removal tried again."""
        rm = "rm" if kind == "container" else "rmp"
        p = self.crictl(rm, obj["id"], check=False)
        if p.returncode == 0:
            return
        held = set(TASK_HELD.findall(p.stderr))
        if not held:
            return  # another failure (a request still in flight...): the next pass tries again
        for tid in sorted(held):
            status = self.tasks().get(tid, "gone")
            gone = self.delete_task(tid)
            recovered.append((kind, obj, tid, status, p.stderr.strip(), gone))
        self.crictl(rm, obj["id"], check=False)

    def restart_daemon(self):
        """Stop containerd and its shims (so every task is gone) and start it again on the same root."""
        self.stop()
        self.start()

    def clean(self, who=None):
        """Stop and remove every container and sandbox. Repeated until the runtime is empty: a request the
        kubelet sent before it stopped may still create something after a pass has listed.

        Recovery from a runtime bug (issue 36, docs/testing.md): containerd 1.6 can keep the runc task of a
        container it reports CONTAINER_EXITED (a StartContainer whose caller gave up); RemoveContainer and
        RemovePodSandbox then fail for ever ("cannot delete running task ...: failed precondition"). Such a task is
        deleted through containerd's own client and the removal retried, with a warning naming `who` (the test
        that left it). Anything still there after 60 s: containerd is restarted (its shims killed) and the runtime
        emptied again, with a warning. Returns the recoveries made."""
        recovered = []

        def one_pass():
            for c in self.containers():
                self.crictl("stop", c["id"], "--timeout", "0", check=False)
                self._remove("container", c, recovered)
            for p in self.pods():
                self.crictl("stopp", p["id"], check=False)
                self._remove("sandbox", p, recovered)
            return not self.pods() and not self.containers()

        try:
            wait_for(one_pass, 60, interval=0.5, msg="an empty runtime")
        except AssertionError as e:
            left = self.describe()
            warnings.warn(RuntimeLeftoverWarning(
                f"{who or 'a test'} left {left} that the runtime would not remove in 60 s ({e}); "
                f"containerd restarted to empty it"))
            self.restart_daemon()
            wait_for(one_pass, 60, interval=0.5, msg="an empty runtime after restarting containerd")
        for kind, obj, tid, status, message, gone in recovered:
            pod = (obj.get("labels") or {}).get("io.kubernetes.pod.name") or obj["metadata"].get("name")
            warnings.warn(RuntimeLeftoverWarning(
                f"{who or 'a test'} left {kind} {obj['id'][:13]} of pod {pod} that containerd would not remove "
                f"because it still held task {tid[:13]} ({status}): {message!r}; the harness deleted the task with "
                f"`ctr task delete -f`{'' if gone else ' (it was still listed afterwards)'}. Runtime bug: containerd "
                f"1.6 keeps the runc task of a container whose StartContainer was abandoned by its caller and "
                f"reports the container CONTAINER_EXITED (issue 36, docs/testing.md)"))
        return recovered

    def describe(self):
        """The sandboxes and containers there now, for a message."""
        return (f"sandboxes {sorted((p['metadata']['name'], p['state']) for p in self.pods())}, containers "
                f"{sorted((c['labels'].get('io.kubernetes.pod.name'), c['metadata']['name'], c['state']) for c in self.containers())}")


class RuntimeLeftoverWarning(UserWarning):
    """A test left something in the runtime that the harness had to recover (shown in pytest's warnings summary)."""


# containerd's refusal to remove a container or sandbox whose task it still holds
TASK_HELD = re.compile(r"cannot delete running task ([0-9a-f]{64})")


def _is_zombie(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def cgroup_hierarchies():
    """Mount points of the cgroup v1 hierarchies and of the unified one (alone on a pure v2 host)."""
    v1, v2 = [], []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            fstype, mnt = right.split()[0], left.split()[4]
            if fstype == "cgroup" and mnt not in v1:
                v1.append(mnt)
            elif fstype == "cgroup2":
                v2.append(mnt)
    return v1 + v2[:1]


_cgroup_roots = 0


def make_cgroup_root():
    """A private --cgroup-root (/ckubelet-<pid>-<n>) in every hierarchy: kubelets never share cgroups."""
    global _cgroup_roots
    _cgroup_roots += 1
    name = f"/ckubelet-{os.getpid()}-{_cgroup_roots}"
    for h in cgroup_hierarchies():
        os.makedirs(h + name, exist_ok=True)
        for f in ("cpuset.cpus", "cpuset.mems"):  # a new v1 cpuset cgroup starts empty
            if os.path.exists(os.path.join(h, f)):
                with open(os.path.join(h, f)) as src, open(h + name + "/" + f, "w") as dst:
                    dst.write(src.read().strip())
    return name


def remove_cgroup_root(name):
    """Remove the kubelet's cgroup root, children first (the runtime is empty by now)."""
    def one_pass():
        left = False
        for h in cgroup_hierarchies():
            top = h + name
            for d, _, _ in sorted(os.walk(top), key=lambda t: -t[0].count("/")) if os.path.isdir(top) else []:
                try:
                    os.rmdir(d)
                except FileNotFoundError:
                    pass
                except OSError:
                    left = True
        return not left
    wait_for(one_pass, 30, interval=0.2, msg=f"cgroup root {name} removed")


class Kubelet:
    """One ckubelet process with its own manifest dir, root dir and pod logs dir."""

    def __init__(self, runtime, dirpath, node=NODE):
        self.runtime = runtime
        self.dir = dirpath
        self.node = node
        self.manifests = os.path.join(dirpath, "manifests")
        self.root = os.path.join(dirpath, "root")
        self.logs = os.path.join(dirpath, "pods")
        self.config = os.path.join(dirpath, "kubelet-config.yaml")
        self.logfile = os.path.join(dirpath, "kubelet.log")
        self.proc = None
        self.stops = []  # time.time() of every SIGTERM/SIGKILL sent (Kube.refused_requests reads them)
        self.extra_args = []
        self.env = None                  # the environment to start with (None: the test's own)
        self.pki = os.path.join(dirpath, "pki")
        self.port = free_port()          # the kubelet API (TLS)
        self.healthz_port = free_port()
        self.cgroup_root = make_cgroup_root()
        os.makedirs(self.manifests, exist_ok=True)
        with open(self.config, "w") as f:
            f.write(textwrap.dedent(f"""\
                apiVersion: kubelet.config.k8s.io/v1beta1
                kind: KubeletConfiguration
                podLogsDir: {self.logs}
                """))

    def args(self):
        return [CKUBELET, "--config", self.config, "--pod-manifest-path", self.manifests,
                "--container-runtime-endpoint", self.runtime.endpoint, "--hostname-override", self.node,
                "--root-dir", self.root, "--v", os.environ.get("CKUBELET_V", "4"), "--cert-dir", self.pki, "--port", str(self.port),
                "--healthz-port", str(self.healthz_port), "--cgroup-root", self.cgroup_root,
                # the links log shippers read: the kubelet's own, not the machine's /var/log/containers
                "--container-logs-dir", os.path.join(self.dir, "containers"), *self.extra_args]

    def start(self, *extra):
        if extra:
            self.extra_args = list(extra)
        assert self.proc is None or self.proc.poll() is not None
        log = open(self.logfile, "a")
        log.write(f"===== starting ckubelet {' '.join(self.args())}\n")
        log.flush()
        self.proc = subprocess.Popen(self.args(), stdout=log, stderr=subprocess.STDOUT, env=self.env)
        log.close()
        return self

    def kill9(self):
        self.stops.append(time.time())
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def term(self, timeout=10):
        self.stops.append(time.time())
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)

    def restart(self):
        if self.proc.poll() is None:
            self.term()
        return self.start()

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def write(self, filename, text):
        """Write a manifest atomically (as editors and config management do)."""
        path = os.path.join(self.manifests, filename)
        tmp = os.path.join(self.manifests, "." + filename + ".tmp")
        with open(tmp, "w") as f:
            f.write(textwrap.dedent(text))
        os.rename(tmp, path)
        return path

    def remove(self, filename):
        os.unlink(os.path.join(self.manifests, filename))

    def log(self):
        with open(self.logfile, errors="replace") as f:
            return f.read()

    def wait_log(self, pattern, timeout=30, msg=None):
        rx = re.compile(pattern)
        return wait_for(lambda: rx.search(self.log()), timeout, msg=msg or f"kubelet log matching {pattern!r}")

    def pod_log_dir(self, pod_name, uid, namespace="default"):
        return os.path.join(self.logs, f"{namespace}_{pod_name}_{uid}")


def pod_manifest(name, containers, restart_policy=None, grace=None, extra_spec="", kind_header=True):
    """A small v1 Pod in YAML. containers: list of (name, command-list[, image[, pull_policy]])."""
    lines = []
    if kind_header:
        lines += ["apiVersion: v1", "kind: Pod"]
    lines += ["metadata:", f"  name: {name}", "spec:"]
    if restart_policy:
        lines.append(f"  restartPolicy: {restart_policy}")
    if grace is not None:
        lines.append(f"  terminationGracePeriodSeconds: {grace}")
    if extra_spec:
        lines += ["  " + l for l in textwrap.dedent(extra_spec).strip().splitlines()]
    lines.append("  containers:")
    for c in containers:
        cname, cmd = c[0], c[1]
        image = c[2] if len(c) > 2 else BUSYBOX
        lines += [f"  - name: {cname}", f"    image: {image}", f"    command: {json.dumps(cmd)}"]
        if len(c) > 3:
            lines.append(f"    imagePullPolicy: {c[3]}")
    return "\n".join(lines) + "\n"


SLEEPER = ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 0.2; done"]


@pytest.fixture(scope="session")
def runtime():
    for tool in (CKUBELET, CRICTL):
        if not os.access(tool, os.X_OK):
            pytest.exit(f"{tool} is not built (run: meson setup build && ninja -C build)", 2)
    subprocess.run(["bash", os.path.join(SCRIPTS, "build-images.sh"), IMAGE_CACHE], check=True)
    d = tempfile.mkdtemp(prefix="ckubelet-e2e-", dir="/var/tmp")
    rt = Runtime(d, os.getpid() % 90)
    rt.start()
    try:
        rt.import_images()
        yield rt
    finally:
        try:
            rt.clean(_last_runtime_test[0])
        except Exception as e:
            print(f"cleaning the runtime failed: {e}")
        rt.stop()
        if os.environ.get("CKUBELET_E2E_KEEP"):
            print(f"kept the session directory {d}")
        else:
            shutil.rmtree(d, ignore_errors=True)


_last_runtime_test = [None]  # the node id of the last test that used the session's runtime


@pytest.fixture(autouse=True)
def runtime_empty_at_start(request):
    """Every test that uses the session's runtime starts from an empty one, checked: what an earlier test left
    (a clean-up that failed, a runtime bug) is reported as that test's and removed here (Runtime.clean, which
    recovers from tasks containerd keeps and, as a last resort, restarts containerd), so that it never fails this
    test."""
    if "runtime" not in request.fixturenames:
        yield
        return
    rt = request.getfixturevalue("runtime")
    if rt.pods() or rt.containers():
        prev = _last_runtime_test[0] or "an earlier test"
        warnings.warn(RuntimeLeftoverWarning(
            f"the runtime was not empty when {request.node.nodeid} started: {prev} left {rt.describe()}; removed"))
        rt.clean(prev)
    assert not rt.pods() and not rt.containers(), f"the runtime is not empty: {rt.describe()}"
    _last_runtime_test[0] = request.node.nodeid
    yield


class KubeletSet:
    """The kubelets of one test: made on demand, stopped at its end (exit status 0 required, so sanitizer
    reports fail the test), their logs printed when the test failed, the runtime emptied."""

    def __init__(self, runtime, who=None):
        self.runtime = runtime
        self.who = who  # the test's node id, for the harness's warnings
        self.made = []

    def make(self, start=True, *extra, node=NODE):
        d = tempfile.mkdtemp(prefix="kubelet-", dir=self.runtime.dir)
        k = Kubelet(self.runtime, d, node=node)
        self.made.append(k)
        if start:
            k.start(*extra)
        return k

    def teardown(self, failed):
        bad_exits = []
        for k in self.made:
            if k.alive():
                try:
                    rc = k.term(10)
                except subprocess.TimeoutExpired:
                    k.proc.kill()
                    rc = "hung on SIGTERM"
                if rc != 0:  # a sanitizer report (leak, UB) or a crash on the way out
                    bad_exits.append((k, rc))
            if failed or any(b[0] is k for b in bad_exits):
                print(f"----- {k.logfile} (last 200 lines)")
                print("\n".join(k.log().splitlines()[-200:]))
        self.runtime.clean(self.who)
        for k in self.made:
            remove_cgroup_root(k.cgroup_root)
        assert not bad_exits, \
            f"ckubelet did not exit cleanly on SIGTERM: {[(b[0].logfile, b[1]) for b in bad_exits]}"


def failed_in_call(request):
    return getattr(request.node, "rep_call", None) is not None and request.node.rep_call.failed


@pytest.fixture
def kubelet_factory(runtime, request):
    ks = KubeletSet(runtime, request.node.nodeid)
    yield ks.make
    ks.teardown(failed_in_call(request))


@pytest.fixture
def kubelet(kubelet_factory):
    return kubelet_factory()


@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, "rep_" + rep.when, rep)
    # a failed test that used the control plane shows the end of its components' logs
    cp = item.funcargs.get("cluster") if rep.failed and hasattr(item, "funcargs") else None
    if cp is not None:
        rep.sections.append(("control plane logs", cp.tail_logs(40)))


# ---------------------------------------------------------------- the real control plane (controlplane.py)


@pytest.fixture(scope="session")
def cluster(runtime):
    """etcd + kube-apiserver + kube-controller-manager + kube-scheduler v1.37.2 (CKUBELET_K8S_VERSION=v1.20.2:
    v1.20.2, no scheduler) for the whole session (built first if the cache has no build: scripts/build-kubernetes.sh).
    Its logs are under <session dir>/cluster."""
    from controlplane import ControlPlane
    d = os.path.join(runtime.dir, "cluster")
    os.makedirs(d)
    cp = ControlPlane(d)
    try:
        cp.start()
        yield cp
    finally:
        cp.stop()


@pytest.fixture
def kube(cluster, runtime, request):
    """One test's part of the cluster: its own node name (= namespace), its kubelets (kube.kubelet()), the
    admin client. At the end the kubelets stop, the node's requests that the apiserver refused with 400, 403,
    422 or 5xx fail the test (unless the test expects them: kube.expected_errors), and the test's node,
    namespace and pods are removed."""
    from controlplane import Kube
    ks = KubeletSet(runtime, request.node.nodeid)
    k = Kube(cluster, ks, request.node.name)
    try:
        k.setup()
        yield k
    finally:
        failed = failed_in_call(request)
        try:
            ks.teardown(failed)
        finally:
            refused = k.refused_requests()
            if refused:
                print(cluster.tail_logs(40))
            k.cleanup()
        assert not refused, "the apiserver refused requests of the kubelet:\n" + "\n".join(refused)


def pytest_configure(config):
    config.addinivalue_line("markers", "runtime: depends on the container runtime's version: tests/run.sh runs "
                            "these on containerd 2.1.9 with crun too (the whole suite runs on 1.6.20 with runc)")


def pytest_collection_modifyitems(session, config, items):
    """Tests without the control plane first (it may still be building in the background); kubeadm's
    (test_kubeadm.py) use the same build."""
    items.sort(key=lambda item: bool({"cluster", "kubeadm_runtime"} & set(getattr(item, "fixturenames", ()))))
