"""The VM tier: a real node. A Debian trixie guest (scripts/build-vm-image.sh, cached outside the checkout) booted
under QEMU's software emulation with systemd as PID 1 and the unified cgroup hierarchy only, containerd with
SystemdCgroup = true, and ckubelet's own Debian package (built from this tree as tests/e2e/test_deb.py does)
installed with dpkg and run by systemd as ckubelet.service.

One boot per run (CPU work is about 20x slower than on the host): every check runs in that boot, in the order of
the tests below (module scope, the tests depend on each other's state: run the module as a whole).
The fixture also starts the tests' real control plane (tests/e2e/controlplane.py, v1.37) on the host while the guest
boots; the last test makes the guest's ckubelet join it with a bootstrap token.
The VM is quit through QMP and killed in the fixture's finally, the control plane stopped. Run it under the e2e
lock: it uses both cores."""
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import urllib.error
import urllib.request

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))

from conftest import IMAGE_CACHE, SCRIPTS, free_port  # noqa: E402
from controlplane import ControlPlane, Kube  # noqa: E402
from fakeapi import FakeApiServer  # noqa: E402
from test_deb import deb  # noqa: E402,F401  (the module-scoped fixture that builds the package)

# QEMU's user networking: the guest reaches the host's loopback at 10.0.2.2
HOST_ALIAS = "10.0.2.2"
BOOT_TIMEOUT = 400  # seconds from qemu's start to ssh (52-98 s measured)
CMD_TIMEOUT = 120
GUEST_PORT = 10250


def host_address():
    """The host's own non-loopback IPv4 address (the default route's source, else `hostname -I`'s first):
    kube-apiserver does not proxy logs and exec to a node whose address is a loopback one."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.254", 9))  # no packet is sent: the kernel picks the route's source address
            ip = s.getsockname()[0]
            if not ip.startswith("127."):
                return ip
    except OSError:
        pass
    out = subprocess.run(["hostname", "-I"], capture_output=True, text=True).stdout.split()
    ips = [a for a in out if "." in a and not a.startswith("127.")]
    if not ips:
        raise RuntimeError("no non-loopback IPv4 address on the host for the joined node's InternalIP")
    return ips[0]


def wait_for(cond, timeout, interval=1.0, msg="condition"):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            v = cond()
            if v:
                return v
        except Exception as e:  # noqa: BLE001 (the last error is reported on timeout)
            last = e
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {msg} (last error: {last!r})")


class VM:
    def __init__(self, paths, share, workdir):
        self.paths = paths
        self.share = share
        self.dir = workdir
        self.ssh_port = free_port()
        self.kubelet_port = free_port()
        # the node joining the real control plane: its kubelet port, the same in the guest and on the host's own
        # address (the node's InternalIP), so that kube-apiserver reaches it through this forward for logs/exec
        self.host_ip = host_address()
        self.join_port = free_port()
        self.qmp_path = os.path.join(workdir, "qmp.sock")
        self.console = os.path.join(workdir, "console.log")
        self.proc = None

    def start(self):
        append = ("root=/dev/vda rw console=ttyS0 systemd.unified_cgroup_hierarchy=1 net.ifnames=0 quiet "
                  "systemd.show_status=0 panic=-1")
        argv = ["qemu-system-x86_64", "-machine", "q35", "-accel", "tcg,thread=multi", "-cpu", "max",
                "-m", "4G", "-smp", "2", "-nodefaults", "-display", "none", "-no-reboot",
                "-kernel", self.paths["KERNEL"], "-initrd", self.paths["INITRD"], "-append", append,
                "-drive", f"file={self.paths['ROOTFS']},if=virtio,format=raw,snapshot=on",
                "-netdev", f"user,id=n0,hostfwd=tcp:127.0.0.1:{self.ssh_port}-:22,"
                           f"hostfwd=tcp:127.0.0.1:{self.kubelet_port}-:{GUEST_PORT},"
                           f"hostfwd=tcp:{self.host_ip}:{self.join_port}-:{self.join_port}",
                "-device", "virtio-net-pci,netdev=n0",
                "-virtfs", f"local,path={self.share},mount_tag=host,security_model=none,id=host,readonly=on",
                "-serial", f"file:{self.console}",
                "-qmp", f"unix:{self.qmp_path},server=on,wait=off"]
        self.t0 = time.monotonic()
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=open(os.path.join(self.dir, "qemu.log"), "w"),
                                     stderr=subprocess.STDOUT, start_new_session=True)

    def ssh(self, cmd, timeout=CMD_TIMEOUT, check=True):
        argv = ["ssh", "-i", self.paths["SSH_KEY"], "-p", str(self.ssh_port), "-o", "BatchMode=yes",
                "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR",
                "-o", "ConnectTimeout=10", "-o", "ServerAliveInterval=10", "root@127.0.0.1", cmd]
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        if check and p.returncode != 0:
            raise AssertionError(f"in the guest: {cmd!r} exited {p.returncode}:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
        return p.stdout

    def wait_ssh(self):
        def up():
            if self.proc.poll() is not None:
                raise RuntimeError(f"qemu exited {self.proc.returncode}: {self.tail()}")
            return self.ssh("true", timeout=30, check=False) == "" and self.ssh("echo up", timeout=30,
                                                                                 check=False).strip() == "up"
        wait_for(up, BOOT_TIMEOUT, interval=3, msg="ssh into the guest")
        self.boot_seconds = time.monotonic() - self.t0

    def tail(self):
        try:
            with open(self.console, errors="replace") as f:
                return "\n".join(f.read().splitlines()[-40:])
        except OSError:
            return ""

    def qmp_quit(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(10)
        try:
            s.connect(self.qmp_path)
            f = s.makefile("rw")
            f.readline()  # the greeting
            for cmd in ("qmp_capabilities", "quit"):
                f.write(json.dumps({"execute": cmd}) + "\n")
                f.flush()
                f.readline()
        finally:
            s.close()

    def stop(self):
        if not self.proc or self.proc.poll() is not None:
            return
        try:
            self.qmp_quit()
            self.proc.wait(20)
        except Exception as e:  # noqa: BLE001
            print(f"QMP quit failed ({e!r}): killing qemu")
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(20)


@pytest.fixture(scope="module")
def image():
    if shutil.which("qemu-system-x86_64") is None:
        pytest.fail("qemu-system-x86_64 is missing (scripts/install-deps.sh --test installs qemu-system-x86)")
    t0 = time.monotonic()
    p = subprocess.run(["nice", "-n", "10", "bash", os.path.join(SCRIPTS, "build-vm-image.sh")], capture_output=True,
                       text=True, timeout=1800)
    if p.returncode != 0:
        pytest.fail(f"build-vm-image.sh failed ({p.returncode}):\n{p.stderr[-4000:]}")
    paths = dict(line.split("=", 1) for line in p.stdout.split() if "=" in line)
    print(f"VM image ready in {time.monotonic() - t0:.1f}s: {paths['DIR']}")
    return paths


@pytest.fixture(scope="module")
def vm_deb(request):
    """CKUBELET_VM_DEB: a package built before (to iterate on the tests); otherwise built from this tree."""
    return os.environ.get("CKUBELET_VM_DEB") or request.getfixturevalue("deb")


class Terminated(KeyboardInterrupt):  # pytest stops the session and runs the teardowns
    pass


def on_sigterm(signum, frame):
    raise Terminated("SIGTERM")  # the fixture's finally quits the VM (tests/run.sh's timeout sends SIGTERM)


@pytest.fixture(scope="module")
def vm(image, vm_deb):
    deb = vm_deb
    old = signal.signal(signal.SIGTERM, on_sigterm)
    subprocess.run(["bash", os.path.join(SCRIPTS, "build-images.sh"), IMAGE_CACHE], check=True)
    work = tempfile.mkdtemp(prefix="ckubelet-vm-", dir="/var/tmp")
    share = os.path.join(work, "share")
    os.makedirs(share)
    shutil.copy(deb, os.path.join(share, "ckubelet.deb"))
    shutil.copy(os.path.join(IMAGE_CACHE, "images.tar"), os.path.join(share, "images.tar"))
    # the fake apiserver on the host, reached from the guest through QEMU's user networking (10.0.2.2 is the host's
    # loopback); its server certificate names localhost, which the guest's kubeconfig asks for (tls-server-name)
    api = FakeApiServer(os.path.join(work, "fakeapi"), node_name="ckvm")
    api.start()
    os.makedirs(os.path.join(share, "api"))
    for src, name in ((api.ca_file, "ca.crt"), (api.client_cert[0], "node.crt"), (api.client_cert[1], "node.key")):
        shutil.copy(src, os.path.join(share, "api", name))
    m = VM(image, share, work)
    m.api = api
    # the real control plane (v1.37) the node joins at the end, started while the guest boots (one boot, shared
    # time); its certificate also names 10.0.2.2, the address the guest reaches it at
    cp = ControlPlane(os.path.join(work, "cp"), serving_sans=(f"IP:{HOST_ALIAS}",))
    cp_state = {}

    def start_cp():
        try:
            cp.start()
        except BaseException as e:  # noqa: BLE001 (reported by the test that needs it)
            cp_state["error"] = e
    cp_thread = threading.Thread(target=start_cp, daemon=True)
    os.makedirs(cp.dir)

    def control_plane():
        cp_thread.join(300)
        if cp_thread.is_alive() or "error" in cp_state:
            raise AssertionError(f"the control plane did not start: {cp_state.get('error')!r}\n{cp.tail_logs(40)}")
        return cp
    m.control_plane = control_plane
    m.start()
    cp_thread.start()
    try:
        m.wait_ssh()
        print(f"boot to ssh: {m.boot_seconds:.1f}s")
        m.ssh("mountpoint -q /mnt/host || mount -t 9p -o trans=virtio,version=9p2000.L host /mnt/host")
        yield m
    finally:
        try:
            if m.proc.poll() is None:
                print(m.ssh("journalctl -u ckubelet --no-pager -o cat | tail -n 60", timeout=60, check=False))
        except Exception as e:  # noqa: BLE001
            print(f"no journal: {e!r}")
        m.stop()
        api.stop()
        cp_thread.join(300)
        cp.stop()
        print(f"console tail:\n{m.tail()}")
        if not os.environ.get("CKUBELET_E2E_KEEP"):
            shutil.rmtree(work, ignore_errors=True)
        signal.signal(signal.SIGTERM, old)


CONFIG = textwrap.dedent(f"""\
    apiVersion: kubelet.config.k8s.io/v1beta1
    kind: KubeletConfiguration
    staticPodPath: /etc/kubernetes/manifests
    containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
    cgroupDriver: systemd
    podPidsLimit: 1024
    port: {GUEST_PORT}
    authentication:
      anonymous:
        enabled: true
    authorization:
      mode: AlwaysAllow
    healthzBindAddress: 127.0.0.1
    healthzPort: 10248
    enableSystemLogQuery: true
    """)
# NodeSwap: the guest gets a swap file; failSwapOn's default (true) must refuse it, then this lets ckubelet run
SWAP_CONFIG = "failSwapOn: false\nmemorySwap:\n  swapBehavior: LimitedSwap\n"
KUBECONFIG = "\n".join([
    "apiVersion: v1", "kind: Config", "clusters:", "- name: fakeapi", "  cluster:",
    "    server: https://10.0.2.2:{port}", "    certificate-authority: /etc/ckubelet/api/ca.crt",
    "    tls-server-name: localhost", "users:", "- name: node", "  user:",
    "    client-certificate: /etc/ckubelet/api/node.crt", "    client-key: /etc/ckubelet/api/node.key",
    "contexts:", "- name: fakeapi", "  context:", "    cluster: fakeapi", "    user: node",
    "current-context: fakeapi", ""])
ARGS = "--kubeconfig=/etc/ckubelet/kubeconfig"

# The test's drop-in: the package's WatchdogSec=2min and RestartSec=10 would make the watchdog check take minutes
# under emulation; the mechanism is the same.
DROPIN = "[Service]\nWatchdogSec=20s\nRestartSec=2\n"


def pod(name, resources):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"hostNetwork": True, "containers": [{"name": "c", "image": "docker.io/library/busybox:1.36",
                                     "imagePullPolicy": "Never", "command": ["sleep", "100000"],
                                     "resources": resources}]}}


PODS = {
    "guaranteed": pod("guaranteed", {"requests": {"cpu": "500m", "memory": "64Mi"},
                                     "limits": {"cpu": "500m", "memory": "64Mi"}}),
    "burstable": pod("burstable", {"requests": {"cpu": "100m", "memory": "32Mi"},
                                   "limits": {"cpu": "300m", "memory": "128Mi"}}),
    "besteffort": pod("besteffort", {}),
}


# upstream's formulas (pkg/kubelet/cm/helpers_linux.go, and libcontainer's cgroups.ConvertCPUSharesToCgroupV2Value
# for the v2 weight): shares = milliCPU * 1024 / 1000 (at least 2), weight = 1 + (shares - 2) * 9999 / 262142,
# quota = milliCPU * period / 1000 with the 100 ms period
def shares(milli):
    return max(2, milli * 1024 // 1000)


def weight(s):
    return 1 + ((s - 2) * 9999) // 262142


EXPECTED = {  # pod cgroup: cpu.weight, cpu.max, memory.max, pids.max
    "guaranteed": (weight(shares(500)), f"{500 * 100000 // 1000} 100000", str(64 << 20), "1024"),
    "burstable": (weight(shares(100)), f"{300 * 100000 // 1000} 100000", str(128 << 20), "1024"),
    "besteffort": (weight(2), "max 100000", "max", "1024"),
}
QOS_SLICE = {"guaranteed": "kubepods.slice", "burstable": "kubepods.slice/kubepods-burstable.slice",
             "besteffort": "kubepods.slice/kubepods-besteffort.slice"}


def systemctl_show(vm, prop):
    return vm.ssh(f"systemctl show -p {prop} --value ckubelet").strip()


def crictl_ps(vm):
    """{pod name: container id} of the containers (not sandboxes), through ctr (no crictl in the guest), in one
    ssh round trip (each costs a second or two under emulation)."""
    out = vm.ssh("for c in $(ctr -n k8s.io containers ls -q); do echo \"=== $c\"; ctr -n k8s.io containers info $c | "
                 "grep -E '\"io.(kubernetes.pod.name|cri-containerd.kind)\"'; done")
    ids = {}
    for block in out.split("=== ")[1:]:
        cid, _, rest = block.partition("\n")
        labels = dict(re.findall(r'"([^"]+)": "([^"]*)"', rest))
        if labels.get("io.cri-containerd.kind") == "container":
            ids[labels.get("io.kubernetes.pod.name")] = cid.strip()
    return ids


def running_tasks(vm):
    return {line.split()[0] for line in vm.ssh("ctr -n k8s.io tasks ls").splitlines()[1:]
            if line.split() and line.split()[-1] == "RUNNING"}


def test_package_installs_and_service_reaches_active(vm):
    vm.ssh("dpkg -i /mnt/host/ckubelet.deb")
    vm.ssh("ctr -n k8s.io images import /mnt/host/images.tar >/dev/null")
    assert vm.ssh("stat -f -c %T /sys/fs/cgroup").strip() == "cgroup2fs"
    assert vm.ssh("ps -p 1 -o comm=").strip() == "systemd"
    # swap on: failSwapOn's default refuses to start, with upstream's message
    vm.ssh("fallocate -l 256M /swapfile && chmod 600 /swapfile && mkswap -q /swapfile && swapon /swapfile")
    vm.ssh("cat > /etc/ckubelet/config-swap.yaml <<'EOF'\n" + CONFIG + "EOF\n")
    out = vm.ssh("timeout 120 /usr/bin/ckubelet --config=/etc/ckubelet/config-swap.yaml 2>&1; echo rc=$?",
                 timeout=180)
    assert "rc=0" not in out and "rc=124" not in out, out[-2000:]
    assert "running with swap on is not supported, please disable swap or set --fail-swap-on flag to false" in out, \
        out[-2000:]
    vm.ssh("cat > /etc/ckubelet/config.yaml <<'EOF'\n" + CONFIG + SWAP_CONFIG + "EOF\n"
           "mkdir -p /etc/ckubelet/api && cp /mnt/host/api/* /etc/ckubelet/api/ && chmod 600 /etc/ckubelet/api/*\n"
           "cat > /etc/ckubelet/kubeconfig <<'EOF'\n" + KUBECONFIG.format(port=vm.api.port) + "EOF\n"
           f"echo 'CKUBELET_ARGS=\"{ARGS}\"' > /etc/default/ckubelet\n"
           "mkdir -p /etc/systemd/system/ckubelet.service.d /etc/kubernetes/manifests\n"
           "printf '" + DROPIN.replace("\n", "\\n") + "' > /etc/systemd/system/ckubelet.service.d/test.conf\n"
           "systemctl daemon-reload")
    t0 = time.monotonic()
    # Type=notify: systemctl start returns once READY=1 came, and fails if it did not
    vm.ssh("systemctl start ckubelet", timeout=300)
    print(f"systemctl start ckubelet: {time.monotonic() - t0:.1f}s")
    assert systemctl_show(vm, "ActiveState") == "active"
    assert systemctl_show(vm, "Type") == "notify"
    status = systemctl_show(vm, "StatusText")
    print(f"StatusText: {status}")
    assert status, "no STATUS= line"
    assert "Status:" in vm.ssh("systemctl status ckubelet --no-pager", check=False)
    wait_for(lambda: vm.ssh("journalctl -u ckubelet --no-pager -o cat | grep -c . ", check=False).strip() not in
             ("", "0"), 30, msg="ckubelet's logs in the journal")


def test_static_pods_of_the_three_qos_classes_in_systemd_slices(vm):
    for name, manifest in PODS.items():
        vm.ssh(f"cat > /etc/kubernetes/{name}.json.tmp <<'EOF'\n{json.dumps(manifest)}\nEOF\n"
               f"mv /etc/kubernetes/{name}.json.tmp /etc/kubernetes/manifests/{name}.json")
    wait_for(lambda: set(crictl_ps(vm)) >= {f"{n}-ckvm" for n in PODS} and len(running_tasks(vm)) >= 6, 300,
             interval=3,
             msg="the three pods' containers running")
    for name, (w, cpu_max, mem_max, pids_max) in EXPECTED.items():
        qos = QOS_SLICE[name]
        prefix = qos.split("/")[-1][: -len(".slice")]
        out = vm.ssh(f"ls -d /sys/fs/cgroup/{qos}/{prefix}-pod*.slice")
        slices = out.split()
        assert len(slices) == 1, out
        d = slices[0]
        got = {f: vm.ssh(f"cat {d}/{f}").strip() for f in ("cpu.weight", "cpu.max", "memory.max", "pids.max")}
        print(f"{name}: {d}: {got}")
        assert got == {"cpu.weight": str(w), "cpu.max": cpu_max, "memory.max": mem_max, "pids.max": pids_max}, name
        # the slice is a systemd unit, and the container's scope (containerd's SystemdCgroup) is below it
        unit = os.path.basename(d)
        assert vm.ssh(f"systemctl show -p ActiveState --value {unit}").strip() == "active"
        scopes = vm.ssh(f"ls -d {d}/cri-containerd-*.scope")
        assert len(scopes.split()) == 2, scopes  # the sandbox and the container
    # the QoS slices: BestEffort gets the minimum shares; the node allocatable's shares on kubepods.slice (2 CPUs)
    assert vm.ssh("cat /sys/fs/cgroup/kubepods.slice/kubepods-besteffort.slice/cpu.weight").strip() == str(weight(2))
    assert vm.ssh("cat /sys/fs/cgroup/kubepods.slice/cpu.weight").strip() == str(weight(shares(2000)))


def test_burstable_qos_slice_follows_its_pods(vm):
    # upstream: the sum of the Burstable pods' requests (100m: weight 4), set through systemd as well (a value
    # written to cgroupfs only is overwritten by systemd's own CPUWeight= when it realizes the slice again)
    want = str(weight(shares(100)))
    wait_for(lambda: vm.ssh("cat /sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/cpu.weight").strip() == want,
             60, interval=2, msg=f"kubepods-burstable.slice cpu.weight {want}")
    assert vm.ssh("systemctl show -p CPUWeight kubepods-burstable.slice").strip() == f"CPUWeight={want}"


def test_summary_api_from_cgroup_v2(vm):
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE

    def summary():
        body = urllib.request.urlopen(f"https://127.0.0.1:{vm.kubelet_port}/stats/summary", timeout=30,
                                      context=ctx).read()
        s = json.loads(body)
        return s if "usageNanoCores" in s["node"].get("cpu", {}) else None
    s = wait_for(summary, 120, interval=5, msg="node cpu.usageNanoCores in /stats/summary")
    node = s["node"]
    print(f"node cpu {node['cpu']} memory {node.get('memory')}")
    assert node["cpu"]["usageCoreNanoSeconds"] > 0
    assert node["memory"]["workingSetBytes"] > 0 and node["memory"]["availableBytes"] > 0
    names = {p["podRef"]["name"] for p in s.get("pods", [])}
    assert {n + "-ckvm" for n in PODS} <= names, names


def test_no_eviction_notifier_errors(vm):
    # the notifier is refreshed at every 10 s housekeeping: give it two rounds
    time.sleep(25)
    log = vm.ssh("journalctl -u ckubelet --no-pager -o cat")
    bad = [l for l in log.splitlines() if "failed to update" in l and "eviction threshold" in l]
    assert not bad, "\n".join(bad[-5:])


def kubelet_get(vm, path):
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return urllib.request.urlopen(f"https://127.0.0.1:{vm.kubelet_port}{path}", timeout=60, context=ctx).read()


def api_pod(name, resources):
    p = pod(name, resources)
    p["spec"]["nodeName"] = "ckvm"
    return p


def node_log_query(vm, query):
    """/logs/?<query> (the node log query): (status, body)"""
    try:
        return 200, kubelet_get(vm, "/logs/?" + query).decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")


# journalctl --output=short-precise --utc: "Nov 28 17:01:02.123456 host unit[pid]: message"
SHORT_PRECISE = re.compile(r"^(\w{3} [ \d]\d \d\d:\d\d:\d\d\.\d{6}) (\S+) ([^\[: ]+)\[\d+\]: (.*)$")


def journal_lines(body):
    """the entries of journalctl's answer (its "-- ... --" notes left out), each (time, unit-ish, message)"""
    out = []
    for line in body.splitlines():
        if not line.strip() or line.startswith("-- ") or line[0].isspace():  # notes, a message's next lines
            continue
        m = SHORT_PRECISE.match(line)
        assert m, f"not a short-precise journal line: {line!r}"
        out.append((m.group(1), m.group(3), m.group(4)))
    return out


def test_node_log_query_from_journald(vm):
    """/logs/?query=<unit> (enableSystemLogQuery): journalctl run by ckubelet for units logging to journald, with
    upstream's parameters, through the kubelet port the tier forwards (anonymous, AlwaysAllow)."""
    year = vm.ssh("date -u +%Y").strip()

    def when(ts):
        return time.strptime(f"{year} {ts.split('.')[0]}", "%Y %b %d %H:%M:%S")

    code, body = node_log_query(vm, "query=ckubelet")
    assert code == 200, body[-2000:]
    all_lines = journal_lines(body)
    assert len(all_lines) >= 10, body[-2000:]
    # the unit's own lines, and systemd's about it (--unit= matches both)
    units = {u for _, u, _ in all_lines}
    assert "ckubelet" in units and units <= {"ckubelet", "systemd"}, units
    print(f"query=ckubelet: {len(all_lines)} lines")

    # tailLines: the last N
    code, body = node_log_query(vm, "query=ckubelet&tailLines=3")
    tail = journal_lines(body)
    assert code == 200 and len(tail) == 3, body[-2000:]
    assert all(u in ("ckubelet", "systemd") for _, u, _ in tail), tail

    # two units: containerd's lines too
    code, body = node_log_query(vm, "query=ckubelet&query=containerd")
    units = {u for _, u, _ in journal_lines(body)}
    assert code == 200 and {"ckubelet", "containerd"} <= units <= {"ckubelet", "containerd", "systemd"}, \
        (units, body[-2000:])

    # sinceTime / untilTime: a second within the log splits it (times in UTC, RFC 3339)
    mid = when(all_lines[len(all_lines) // 2][0])
    since = time.strftime("%Y-%m-%dT%H:%M:%SZ", mid)
    code, body = node_log_query(vm, f"query=ckubelet&sinceTime={since}")
    after = journal_lines(body)
    assert code == 200 and 0 < len(after) < len(all_lines) + 50, body[-2000:]
    assert all(when(ts) >= mid for ts, _, _ in after), (since, after[:3])
    code, body = node_log_query(vm, f"query=ckubelet&untilTime={since}")
    before = journal_lines(body)
    assert code == 200 and before, body[-2000:]
    assert all(when(ts) <= mid for ts, _, _ in before), (since, before[-3:])
    code, body = node_log_query(vm, "query=ckubelet&sinceTime=2999-01-01T00:00:00Z")
    assert code == 200 and journal_lines(body) == [], body[-2000:]

    # pattern: journalctl --grep, case-insensitive for an all lower-case pattern (journalctl's smart case)
    words = [w for w in ("containerd", "pod", "cgroup", "node", "started", "config") if
             0 < sum(w in m.lower() for _, _, m in all_lines) < len(all_lines)]
    assert words, "no word to grep for in ckubelet's log"
    code, body = node_log_query(vm, f"query=ckubelet&pattern={words[0]}")
    matched = journal_lines(body)
    assert code == 200 and matched, body[-2000:]
    assert all(words[0] in m.lower() for _, _, m in matched), (words[0], matched[:3])
    assert len(matched) < len(all_lines) + 50
    print(f"pattern={words[0]}: {len(matched)} lines")

    # a service not in the journal: upstream's file heuristics under /var/log
    code, body = node_log_query(vm, "query=ckvm-no-such-service")
    assert code == 200 and "log not found for ckvm-no-such-service" in body, body
    vm.ssh("mkdir -p /var/log/ckvmtest && echo 'a line of ckvmtest' > /var/log/ckvmtest/ckvmtest.log")
    code, body = node_log_query(vm, "query=ckvmtest")
    assert code == 200 and body == "a line of ckvmtest\n", body
    code, body = node_log_query(vm, "query=ckvmtest&tailLines=1")
    assert code == 200 and "options present and query resolved to log files for [ckvmtest]" in body, body
    # upstream's validation
    code, body = node_log_query(vm, "query=ckubelet&tailLines=100001")
    assert code == 406 and "tailLines: Invalid value: 100001: must be between 0 and 100000, inclusive" in body, body


CNI_CONF = json.dumps({
    "cniVersion": "1.0.0", "name": "ckvm", "plugins": [
        {"type": "bridge", "bridge": "cni0", "isGateway": True, "ipMasq": True,
         "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.88.7.0/24"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
        {"type": "portmap", "capabilities": {"portMappings": True}}]})


def test_pod_network_from_cni_bridge(vm):
    """A pod without hostNetwork in the guest: containerd's CRI sets it up with the bridge plugin (Debian's
    containernetworking-plugins), ckubelet reports its IP in the pod's status, and the guest reaches it there."""
    vm.ssh("mkdir -p /etc/cni/net.d /opt/cni/bin && for p in /usr/lib/cni/*; do ln -sf $p /opt/cni/bin/; done && "
           "cat > /etc/cni/net.d/10-ckvm.conflist <<'EOF'\n" + CNI_CONF + "\nEOF\n")
    p = pod("cni-web", {})
    p["spec"]["hostNetwork"] = False
    p["spec"]["containers"][0]["command"] = ["sh", "-c", "echo hello-from-the-pod > /tmp/index.html && "
                                             "exec httpd -f -p 8080 -h /tmp"]
    vm.ssh(f"cat > /etc/kubernetes/cni-web.json.tmp <<'EOF'\n{json.dumps(p)}\nEOF\n"
           "mv /etc/kubernetes/cni-web.json.tmp /etc/kubernetes/manifests/cni-web.json")
    try:
        def pod_ip():  # the mirror pod's status, as ckubelet wrote it to the apiserver
            ip = ((vm.api.pod("cni-web-ckvm") or {}).get("status") or {}).get("podIP", "")
            return ip if ip.startswith("10.88.7.") else None
        ip = wait_for(pod_ip, 240, interval=3, msg="the CNI pod's IP in its mirror pod's status")
        body = wait_for(lambda: vm.ssh(f"timeout 10 bash -c 'exec 3<>/dev/tcp/{ip}/8080; "
                                       "printf \"GET /index.html HTTP/1.0\\r\\n\\r\\n\" >&3; cat <&3'",
                                       check=False), 120, interval=3, msg=f"an answer from {ip}:8080")
        print(f"the CNI pod at {ip}: {body.splitlines()[:1]}")
        assert "hello-from-the-pod" in body, body
        route = vm.ssh("ip -4 route get " + ip)
        assert "dev cni0" in route, route  # through the bridge, not the guest's own address
    finally:
        vm.ssh("rm -f /etc/kubernetes/manifests/cni-web.json")
    wait_for(lambda: "cni-web-ckvm" not in crictl_ps(vm), 180, interval=3, msg="the CNI pod removed")


API_PODS = {  # from the (fake) apiserver: not static, so not critical: LimitedSwap applies to them
    "burstable-api": api_pod("burstable-api", {"requests": {"cpu": "100m", "memory": "64Mi"},
                                               "limits": {"memory": "256Mi"}}),
    "guaranteed-api": api_pod("guaranteed-api", {"requests": {"cpu": "100m", "memory": "64Mi"},
                                                 "limits": {"cpu": "100m", "memory": "64Mi"}}),
}


def scope_file(vm, cid, f):
    return vm.ssh(f"cat $(find /sys/fs/cgroup/kubepods.slice -type d -name cri-containerd-{cid}.scope)/{f}").strip()


def test_limited_swap_per_container(vm):
    # the node registered with the fake apiserver; pods from it run in the guest
    wait_for(lambda: vm.api.get("nodes", "ckvm"), 120, interval=2, msg="the node registered")
    for name, p in API_PODS.items():
        vm.api.create("pods", p, namespace="default")
    wait_for(lambda: set(crictl_ps(vm)) >= set(API_PODS), 300, interval=3, msg="the API pods' containers")
    ids = crictl_ps(vm)
    wait_for(lambda: set(ids[n] for n in API_PODS) <= running_tasks(vm), 120, interval=3, msg="running")
    mi = dict(re.findall(r"^(\w+):\s+(\d+) kB$", vm.ssh("cat /proc/meminfo"), re.M))
    mem, swap = int(mi["MemTotal"]) * 1024, int(mi["SwapTotal"]) * 1024
    assert swap > 0
    # kuberuntime_container_linux.go calcSwapForBurstablePods: float64(request) / float64(node memory) * swap
    want = int((64 << 20) / mem * swap)
    spec = vm.ssh(f"ctr -n k8s.io containers info {ids['burstable-api']}")
    m = re.search(r'"memory\.swap\.max": "(\d+)"', spec)
    assert m and int(m.group(1)) == want, (want, m and m.group(0))  # what the CRI carried (unified)
    got = int(scope_file(vm, ids["burstable-api"], "memory.swap.max"))
    print(f"LimitedSwap: MemTotal {mem} SwapTotal {swap}: want {want}, the CRI {m.group(1)}, the cgroup {got}")
    assert got == want - want % 4096  # the kernel keeps whole pages
    # Guaranteed, BestEffort and static (critical) pods: NoSwap, 0
    for name in ("guaranteed-api", "guaranteed-ckvm", "besteffort-ckvm", "burstable-ckvm"):
        assert scope_file(vm, ids[name], "memory.swap.max") == "0", name


def test_psi_swap_and_cadvisor_metrics_from_cgroup_v2(vm):
    s = json.loads(kubelet_get(vm, "/stats/summary"))
    node = s["node"]
    for res in ("cpu", "memory", "io"):
        psi = node[res]["psi"]
        assert set(psi) == {"some", "full"} and set(psi["some"]) == {"total", "avg10", "avg60", "avg300"}, psi
    assert isinstance(node["cpu"]["psi"]["some"]["total"], int) and isinstance(node["io"]["psi"]["full"]["avg10"],
                                                                                 float), node["cpu"]
    swap_total = int(re.search(r"^SwapTotal:\s+(\d+) kB$", vm.ssh("cat /proc/meminfo"), re.M).group(1)) * 1024
    assert node["swap"]["swapAvailableBytes"] + node["swap"]["swapUsageBytes"] == swap_total, node["swap"]
    pods = {p["podRef"]["name"]: p for p in s["pods"]}
    b = pods["burstable-api"]
    print(f"burstable-api: cpu {b['cpu']} swap {b.get('swap')}")
    for res in ("cpu", "memory", "io"):
        assert "psi" in b[res], (res, b)
    c = b["containers"][0]
    assert "psi" in c["cpu"] and "psi" in c["memory"] and "psi" in c["io"], c
    assert c["swap"]["swapUsageBytes"] >= 0 and "swapAvailableBytes" in c["swap"], c
    assert pods["guaranteed-api"]["containers"][0]["swap"]["swapAvailableBytes"] == 0
    text = kubelet_get(vm, "/metrics/cadvisor").decode()
    for fam in ("cpu", "memory", "io"):
        for kind in ("stalled", "waiting"):
            name = f"container_pressure_{fam}_{kind}_seconds_total"
            assert f"# TYPE {name} counter" in text, name
            assert re.search(rf'^{name}{{container="c",.*pod="burstable-api"}} ', text, re.M), name
    # the other families from v2 files: the Guaranteed container's memory limit, working set and CPU
    m = re.search(r'^container_spec_memory_limit_bytes{container="c",.*pod="guaranteed-api"} (\S+)', text, re.M)
    assert m and float(m.group(1)) == 64 << 20, m and m.group(0)
    assert re.search(r'^container_memory_working_set_bytes{container="c",.*pod="guaranteed-api"} [1-9]', text, re.M)
    assert re.search(r'^container_cpu_usage_seconds_total{container="c",cpu="total",.*pod="guaranteed-api"} ', text,
                     re.M)


def test_in_place_resize_on_cgroup_v2(vm):
    """InPlacePodVerticalScaling on v2: the (fake) apiserver's pod gets new resources (what pods/resize writes);
    ckubelet resizes the running container (UpdateContainerResources) and the pod cgroup, same container."""
    cid = crictl_ps(vm)["guaranteed-api"]
    p = vm.api.get("pods", "guaranteed-api", namespace="default")
    res = {"requests": {"cpu": "200m", "memory": "96Mi"}, "limits": {"cpu": "200m", "memory": "96Mi"}}
    p["spec"]["containers"][0]["resources"] = res
    t0 = time.monotonic()
    vm.api.update("pods", p)
    want = {"cpu.max": f"{200 * 100000 // 1000} 100000", "memory.max": str(96 << 20)}
    wait_for(lambda: {f: scope_file(vm, cid, f) for f in want} == want, 180, interval=3,
             msg=f"the container's cgroup at {want}")
    print(f"in-place resize on v2: the container's cpu.max/memory.max after {time.monotonic() - t0:.1f}s")
    pod_dir = vm.ssh(f"dirname $(find /sys/fs/cgroup/kubepods.slice -type d -name cri-containerd-{cid}.scope)").strip()
    wait_for(lambda: {f: vm.ssh(f"cat {pod_dir}/{f}").strip() for f in want} == want, 120, interval=3,
             msg=f"the pod cgroup {pod_dir} at {want}")
    assert crictl_ps(vm)["guaranteed-api"] == cid and cid in running_tasks(vm)  # resized in place, not restarted


def test_restart_keeps_pods_running(vm):
    before = crictl_ps(vm)
    pid = systemctl_show(vm, "MainPID")
    # restarted with --logging-format=json: journald carries JSON lines (issue 31)
    vm.ssh(f"echo 'CKUBELET_ARGS=\"{ARGS} --logging-format=json\"' > /etc/default/ckubelet")
    since = vm.ssh("date +%s").strip()
    vm.ssh("systemctl restart ckubelet", timeout=300)
    assert systemctl_show(vm, "ActiveState") == "active"
    assert systemctl_show(vm, "MainPID") != pid
    time.sleep(15)
    after = crictl_ps(vm)
    assert after == before, (before, after)
    assert set(before.values()) <= running_tasks(vm)
    lines = [l for l in vm.ssh(f"journalctl --no-pager -o cat --since=@{since} _PID=$(systemctl show -p MainPID "
                                "--value ckubelet)").splitlines() if l.strip()]
    assert lines, "no log lines from the restarted ckubelet"
    docs = [json.loads(l) for l in lines]  # every line is a JSON object
    assert all("msg" in d and "ts" in d for d in docs), lines[:5]
    print(f"{len(docs)} JSON log lines, the first: {lines[0][:200]}")


def test_memory_pressure_eviction_on_cgroup_v2(vm):
    """Memory pressure on v2 (PSI-free path: memory.available from the root's v2 files and the threshold
    notifier): a hard threshold just below what is available now, a BestEffort hog from the apiserver; it is
    evicted with upstream's reason and message. The time from the hog's start to the eviction is reported."""
    avail = json.loads(kubelet_get(vm, "/stats/summary"))["node"]["memory"]["availableBytes"]
    thr = (avail >> 20) - 400  # the hog's 600Mi crosses it
    vm.ssh(f"echo 'CKUBELET_ARGS=\"{ARGS} --logging-format=json --eviction-hard=memory.available<{thr}Mi "
           "--enforce-node-allocatable=none\"' > /etc/default/ckubelet")
    vm.ssh("systemctl restart ckubelet", timeout=300)
    assert systemctl_show(vm, "ActiveState") == "active"
    hog = api_pod("hog", {})
    hog["spec"]["containers"][0]["command"] = ["sh", "-c", "sleep 2; dd if=/dev/zero bs=600M count=1 | sleep 3600"]
    vm.api.create("pods", hog, namespace="default")
    t0 = time.monotonic()
    try:
        st = wait_for(lambda: (lambda s: s if s.get("reason") == "Evicted" else None)(
            (vm.api.get("pods", "hog", namespace="default") or {}).get("status") or {}), 300, interval=1,
            msg="the hog evicted")
        print(f"memory pressure eviction on v2: threshold {thr}Mi, the hog created to evicted in "
              f"{time.monotonic() - t0:.1f}s (its start and the dd included); {st['message']}")
        assert st["phase"] == "Failed"
        assert re.fullmatch(rf"The node was low on resource: memory\. Threshold quantity: {thr}Mi, available: "
                            r"\d+Ki\. Container c was using \d+Ki, which exceeds its request of 0\. ",
                            st["message"]), st["message"]
        log = vm.ssh("journalctl -u ckubelet --no-pager -o cat")
        assert "failed to update hard memory eviction threshold" not in log
    finally:
        vm.api.delete("pods", "hog", namespace="default", grace_seconds=0)
    # the other API pods (Guaranteed, Burstable within requests) were not evicted
    for name in API_PODS:
        assert ((vm.api.get("pods", name, namespace="default") or {}).get("status") or {}).get("reason") != "Evicted"


def test_graceful_node_shutdown_takes_the_logind_inhibitor_lock(vm):
    """GracefulNodeShutdown against the real logind (the host tests use a fake one): with shutdownGracePeriod set,
    ckubelet raises logind's InhibitDelayMaxUSec through upstream's drop-in and holds a delay lock on shutdown
    (`systemctl poweroff` itself would take minutes under emulation)."""
    assert "kubelet" not in vm.ssh("systemd-inhibit --list --no-pager --no-legend", check=False)
    vm.ssh("printf 'shutdownGracePeriod: 30s\nshutdownGracePeriodCriticalPods: 10s\n' >> /etc/ckubelet/config.yaml")
    vm.ssh("systemctl restart ckubelet", timeout=300)
    assert systemctl_show(vm, "ActiveState") == "active"

    def locked():
        out = vm.ssh("systemd-inhibit --list --no-pager --no-legend", check=False)
        return [l for l in out.splitlines() if "kubelet" in l.split() and "shutdown" in l and "delay" in l]
    lines = wait_for(locked, 120, interval=3, msg="ckubelet's delay lock in systemd-inhibit --list")
    print(f"systemd-inhibit --list: {lines}")
    assert "Kubelet needs time to handle node shutdown" in vm.ssh("systemd-inhibit --list --no-pager")
    delay = vm.ssh("busctl get-property org.freedesktop.login1 /org/freedesktop/login1 "
                   "org.freedesktop.login1.Manager InhibitDelayMaxUSec").split()
    print(f"InhibitDelayMaxUSec: {delay}")
    assert delay[0] == "t" and int(delay[1]) >= 30_000_000, delay
    assert "InhibitDelayMaxSec=30" in vm.ssh("cat /etc/systemd/logind.conf.d/99-kubelet.conf")


def test_watchdog_restarts_a_stopped_ckubelet(vm):
    pid = systemctl_show(vm, "MainPID")
    restarts = int(systemctl_show(vm, "NRestarts") or 0)
    vm.ssh(f"kill -STOP {pid}")
    wait_for(lambda: int(systemctl_show(vm, "NRestarts") or 0) > restarts and
             systemctl_show(vm, "ActiveState") == "active" and systemctl_show(vm, "MainPID") not in (pid, "0"),
             180, interval=3, msg="systemd's watchdog restarting the stopped ckubelet")
    log = vm.ssh("journalctl -u ckubelet --no-pager -o cat")
    assert re.search(r"[Ww]atchdog timeout", log), log[-2000:]


def test_pod_slice_gone_after_the_pod_is_removed(vm):
    cid = crictl_ps(vm)["burstable-ckvm"]
    d = os.path.dirname(vm.ssh(f"find /sys/fs/cgroup/kubepods.slice -type d -name cri-containerd-{cid}.scope").strip())
    assert os.path.basename(d).startswith("kubepods-burstable-pod"), d
    vm.ssh("rm /etc/kubernetes/manifests/burstable.json")
    wait_for(lambda: vm.ssh(f"test -e {d} && echo yes || echo no").strip() == "no", 180, interval=3,
             msg=f"{d} removed")
    unit = os.path.basename(d)
    assert vm.ssh(f"systemctl show -p LoadState,ActiveState {unit}", check=False).count("active") <= 1
    assert vm.ssh(f"systemctl is-active {unit}", check=False).strip() != "active"


CFS_PODS = {"cfs-" + n: dict(p, metadata=dict(p["metadata"], name="cfs-" + n)) for n, p in PODS.items()}
CFS_DIR = {"guaranteed": "kubepods", "burstable": "kubepods/burstable", "besteffort": "kubepods/besteffort"}


def test_cgroupfs_driver_on_the_same_node(vm):
    # every pod of the systemd-driver run goes first (a driver change with pods running is not supported upstream)
    vm.ssh("rm -f /etc/kubernetes/manifests/*.json")
    for name in API_PODS:
        vm.api.delete("pods", name, namespace="default")
    wait_for(lambda: not running_tasks(vm), 300, interval=3, msg="every pod's containers stopped")
    # containerd without SystemdCgroup, ckubelet with cgroupDriver: cgroupfs (issue 31)
    vm.ssh("systemctl stop ckubelet && sed -i 's/SystemdCgroup = true/SystemdCgroup = false/' "
           "/etc/containerd/config.toml && systemctl restart containerd && "
           "sed -i 's/^cgroupDriver: systemd$/cgroupDriver: cgroupfs/' /etc/ckubelet/config.yaml && "
           "grep -q '^cgroupDriver: cgroupfs$' /etc/ckubelet/config.yaml", timeout=180)
    vm.ssh("systemctl start ckubelet", timeout=300)
    assert systemctl_show(vm, "ActiveState") == "active"
    for name, manifest in CFS_PODS.items():
        vm.ssh(f"cat > /etc/kubernetes/{name}.json.tmp <<'EOF'\n{json.dumps(manifest)}\nEOF\n"
               f"mv /etc/kubernetes/{name}.json.tmp /etc/kubernetes/manifests/{name}.json")
    wait_for(lambda: set(crictl_ps(vm)) >= {f"{n}-ckvm" for n in CFS_PODS} and len(running_tasks(vm)) >= 6, 300,
             interval=3, msg="the three cgroupfs pods' containers running")
    for name, (w, cpu_max, mem_max, pids_max) in EXPECTED.items():
        out = vm.ssh(f"ls -d /sys/fs/cgroup/{CFS_DIR[name]}/pod*")
        dirs = out.split()
        assert len(dirs) == 1, out
        d = dirs[0]
        got = {f: vm.ssh(f"cat {d}/{f}").strip() for f in ("cpu.weight", "cpu.max", "memory.max", "pids.max")}
        print(f"cgroupfs {name}: {d}: {got}")
        assert got == {"cpu.weight": str(w), "cpu.max": cpu_max, "memory.max": mem_max, "pids.max": pids_max}, name
        # the sandbox and the container in it (containerd's cgroupfs placement: <pod cgroup>/<id>)
        kids = vm.ssh(f"find {d} -mindepth 1 -maxdepth 1 -type d").split()
        assert len(kids) == 2, kids
    assert vm.ssh("cat /sys/fs/cgroup/kubepods/besteffort/cpu.weight").strip() == str(weight(2))
    assert vm.ssh("cat /sys/fs/cgroup/kubepods/cpu.weight").strip() == str(weight(shares(2000)))
    want = str(weight(shares(100)))
    wait_for(lambda: vm.ssh("cat /sys/fs/cgroup/kubepods/burstable/cpu.weight").strip() == want, 60, interval=2,
             msg=f"kubepods/burstable cpu.weight {want}")
    # the Summary's PSI from the cgroupfs driver's paths (<pod cgroup>/<container id>)
    def psi_ready():
        pods = {p["podRef"]["name"]: p for p in json.loads(kubelet_get(vm, "/stats/summary"))["pods"]}
        b = pods.get("cfs-burstable-ckvm")
        return b and "psi" in b.get("cpu", {}) and b["containers"] and "psi" in b["containers"][0].get("memory", {})
    wait_for(psi_ready, 60, interval=3, msg="psi of the cgroupfs pods in /stats/summary")


JOIN_POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "joined", "namespace": "default"},
            "spec": {"nodeName": "ckvm", "automountServiceAccountToken": False, "terminationGracePeriodSeconds": 1,
                     "containers": [{"name": "c", "image": "docker.io/library/busybox:1.36",
                                     "imagePullPolicy": "Never",
                                     "command": ["sh", "-c", "echo hello from the guest; exec sleep 100000"]}]}}


def test_node_joins_the_control_plane(vm):
    """Issue 31 item 4: the guest's ckubelet joins the real v1.37 control plane running on the host, TLS
    bootstrapping with a kubeadm-style bootstrap token through QEMU's user networking (the apiserver at 10.0.2.2, the
    host's loopback); the node is Ready with the host's own address as InternalIP and a kubelet port that QEMU
    forwards from that address to the guest, so that kube-apiserver's logs and exec reach the guest's ckubelet; a
    pod created through the API runs in the guest."""
    cp = vm.control_plane()
    t0 = time.monotonic()
    d = os.path.join(cp.dir, "ckvm")
    os.makedirs(d, exist_ok=True)
    boot = cp.bootstrap_kubeconfig(os.path.join(d, "bootstrap-kubelet.conf"))
    with open(boot) as f:
        boot_cfg = json.load(f)
    boot_cfg["clusters"][0]["cluster"]["server"] = f"https://{HOST_ALIAS}:{cp.port}"
    # a CNI configuration (the network test writes the same): containerd reports NetworkReady, the node Ready
    vm.ssh("mkdir -p /etc/cni/net.d /opt/cni/bin && for p in /usr/lib/cni/*; do ln -sf $p /opt/cni/bin/; done && "
           "cat > /etc/cni/net.d/10-ckvm.conflist <<'EOF'\n" + CNI_CONF + "\nEOF\n")
    # the node as the tests before left it (its cgroup driver), with the forwarded kubelet port; kubeadm's paths:
    # a bootstrap kubeconfig, the node's kubeconfig written by the TLS bootstrap
    vm.ssh("set -e\nsystemctl stop ckubelet && mkdir -p /etc/kubernetes && rm -f /etc/kubernetes/kubelet.conf && "
           "rm -rf /var/lib/kubelet/pki\n"
           "cat > /etc/kubernetes/bootstrap-kubelet.conf <<'EOF'\n" + json.dumps(boot_cfg) + "\nEOF\n"
           "chmod 600 /etc/kubernetes/bootstrap-kubelet.conf\n"
           f"sed -i 's/^port: {GUEST_PORT}$/port: {vm.join_port}/' /etc/ckubelet/config.yaml\n"
           f"grep -q '^port: {vm.join_port}$' /etc/ckubelet/config.yaml\n"
           "echo 'CKUBELET_ARGS=\"--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf "
           f"--kubeconfig=/etc/kubernetes/kubelet.conf --rotate-certificates --node-ip={vm.host_ip}\"' "
           "> /etc/default/ckubelet", timeout=180)
    vm.ssh("systemctl start ckubelet", timeout=300)  # READY=1 once the node is registered with the cluster
    assert systemctl_show(vm, "ActiveState") == "active"
    print(f"joined: systemctl start returned after {time.monotonic() - t0:.1f}s")

    def ready():
        n = cp.admin.get("nodes", "ckvm")
        conds = {c["type"]: c["status"] for c in (n or {}).get("status", {}).get("conditions", [])}
        return n if conds.get("Ready") == "True" else None
    node = wait_for(ready, 240, interval=2, msg="the node ckvm Ready in the cluster")
    print(f"node ckvm Ready {time.monotonic() - t0:.1f}s after the join began")
    addrs = {a["type"]: a["address"] for a in node["status"]["addresses"]}
    assert addrs.get("InternalIP") == vm.host_ip, addrs
    assert node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"] == vm.join_port, node["status"]
    assert node["status"]["nodeInfo"]["kubeletVersion"].startswith("v1."), node["status"]["nodeInfo"]
    # the client certificate came from the CSR the bootstrap token made, approved and signed by the controllers
    csrs = [c for c in cp.admin.list("certificatesigningrequests")
            if c["spec"].get("username", "").startswith("system:bootstrap:")]
    assert csrs and any(c.get("status", {}).get("certificate") for c in csrs), csrs
    assert "/var/lib/kubelet/pki/kubelet-client-current.pem" in vm.ssh("cat /etc/kubernetes/kubelet.conf")

    cp.admin.create("pods", JOIN_POD, namespace="default")

    def running():
        st = (cp.admin.get("pods", "joined", "default") or {}).get("status", {})
        return st if st.get("phase") == "Running" else None
    st = wait_for(running, 300, interval=2, msg="the API pod Running in the guest")
    print(f"pod joined Running {time.monotonic() - t0:.1f}s after the join began: hostIP {st.get('hostIP')}")
    assert st.get("hostIP") == vm.host_ip, st
    cid = crictl_ps(vm)["joined"]  # in the guest's containerd
    assert cid in running_tasks(vm)

    # kube-apiserver -> <host address>:<port> -> QEMU's forward -> the guest's ckubelet
    def kubectl_logs():
        p = cp.kubectl("logs", "-n", "default", "joined", timeout=60, check=False, text=True)
        if p.returncode != 0:
            raise RuntimeError(p.stderr[-1000:])
        return p
    logs = wait_for(kubectl_logs, 60, interval=3, msg="kubectl logs")
    assert logs.stdout == "hello from the guest\n", (logs.stdout, logs.stderr)
    ex = cp.kubectl("exec", "-n", "default", "joined", "--", "sh", "-c", "cat /proc/1/cgroup; hostname",
                    timeout=120, check=False, text=True)
    print(f"kubectl exec: rc {ex.returncode} {ex.stdout!r} {ex.stderr[-500:]!r}")
    assert ex.returncode == 0, ex.stderr
    # the container's own cgroup namespace on the unified hierarchy, its own UTS namespace (the pod's name)
    assert ex.stdout == "0::/\njoined\n", ex.stdout
    # a static pod of the node got its mirror pod in the cluster
    wait_for(lambda: cp.admin.get("pods", "cfs-guaranteed-ckvm", "default"), 60, interval=2,
             msg="the static pod's mirror pod in the cluster")
    cp.admin.delete("pods", "joined", "default", grace_seconds=0)
    wait_for(lambda: cid not in running_tasks(vm), 120, interval=3, msg="the deleted pod's container stopped")
    # every request of the node authorized (Node authorizer, NodeRestriction), as the host's cluster tests check
    k = Kube(cp, None, "ckvm")
    k.node, k.user = "ckvm", "system:node:ckvm"
    refused = k.refused_requests()
    print(f"the node's requests: {len(k.audit())} audited, refused: {refused}")
    assert not refused, "the apiserver refused requests of the node:\n" + "\n".join(refused)
    print(f"the join test took {time.monotonic() - t0:.1f}s")
