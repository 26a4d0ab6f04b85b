# The systemd cgroup driver (--cgroup-driver=systemd) against a fake systemd (tests/e2e/fakesystemd.py) on a
# private D-Bus daemon: this machine runs no systemd. What is checked is ckubelet's side: the slices it asks
# systemd for (names, properties), the values it writes to cgroupfs itself, the sandbox's cgroup_parent, the
# pod's slice stopped once the pod is gone, a failed job, and the start-up error without a bus. containerd here
# runs runc with its cgroupfs driver: it is given the systemd form of the container's cgroup
# ("<pod slice>:cri-containerd:<id>"), which runc's cgroupfs driver does not put below the slice, so the
# containers' placement inside the pod slice is not tested here.
import json
import os
import shutil
import subprocess
import tempfile
import textwrap

import pytest

from conftest import (private_system_bus, terminate, BUSYBOX, SLEEPER, cgroup_hierarchies, containerd_major,
                      remove_cgroup_root, wait_for)

# --cgroup-driver=systemd is the kubelet's choice only with a runtime that does not report its own driver: containerd
# 2.x answers RuntimeConfig (cgroupfs as the harness configures it) and the kubelet follows it, as upstream
# (KEP-4033; test_runtime_features.py checks that). The systemd driver with containerd 2.x is tested under systemd
# itself in the VM tier (tests/vm).
pytestmark = pytest.mark.skipif(containerd_major() >= 2, reason="containerd 2.x decides the cgroup driver (RuntimeConfig)")

HERE = os.path.dirname(os.path.abspath(__file__))
MEMORY = "/sys/fs/cgroup/memory"
CPU = "/sys/fs/cgroup/cpu"
V1 = os.path.isdir(MEMORY) and os.path.isdir(CPU)


class FakeSystemd:
    def __init__(self, dirpath, *fake_args):
        self.dir = dirpath
        self.socket = os.path.join(dirpath, "system_bus_socket")
        self.address = f"unix:path={self.socket}"
        self.calls_file = os.path.join(dirpath, "calls.jsonl")
        self.daemon, _, _ = private_system_bus(dirpath)
        env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=self.address)
        self.fake = subprocess.Popen(["/usr/bin/python3", os.path.join(HERE, "fakesystemd.py"), self.calls_file,
                                      *fake_args], env=env, stdout=subprocess.PIPE,
                                     stderr=open(os.path.join(dirpath, "fake.log"), "w"), text=True)
        assert self.fake.stdout.readline().strip() == "ready", open(os.path.join(dirpath, "fake.log")).read()

    def calls(self, method=None, name=None):
        if not os.path.exists(self.calls_file):
            return []
        with open(self.calls_file) as f:
            out = [json.loads(l) for l in f if l.strip()]
        return [c for c in out if (method is None or c["method"] == method) and (name is None or c.get("name") == name)]

    def stop(self):
        terminate(self.fake, self.daemon)


@pytest.fixture
def fake_systemd(runtime):
    d = tempfile.mkdtemp(prefix="fakesystemd-", dir=runtime.dir)
    fs = FakeSystemd(d)
    yield fs
    fs.stop()
    shutil.rmtree(d, ignore_errors=True)


def slice_root():
    """A private root per kubelet (kubelets never share cgroups): the slice "ckubelet_<pid>_<n>.slice", made as
    systemd would have it; --cgroup-root gives it in the cgroupfs form, "/ckubelet-<pid>-<n>", which upstream's
    kubelet reads as that slice (ParseCgroupfsToCgroupName, then ToSystemd). Returns the slice's base name."""
    n = slice_root.n = getattr(slice_root, "n", 0) + 1
    base = f"ckubelet_{os.getpid()}_{n}"
    for h in cgroup_hierarchies():
        os.makedirs(f"{h}/{base}.slice", exist_ok=True)
        for f in ("cpuset.cpus", "cpuset.mems"):
            if os.path.exists(os.path.join(h, f)):
                with open(os.path.join(h, f)) as src, open(f"{h}/{base}.slice/{f}", "w") as dst:
                    dst.write(src.read().strip())
    return base


def pod_yaml(name, resources="{}"):
    return f"""\
        apiVersion: v1
        kind: Pod
        metadata: {{name: {name}}}
        spec:
          containers:
          - name: a
            image: {BUSYBOX}
            command: {json.dumps(SLEEPER)}
            resources: {resources}
        """


def props(call):
    return {k: v for k, v in call["properties"]}


def read(path):
    with open(path) as f:
        return f.read().strip()


def start_kubelet(kubelet_factory, fake):
    k = kubelet_factory(start=False)
    remove_cgroup_root(k.cgroup_root)  # the cgroupfs root the fixture made: not used here
    base = slice_root()
    k.cgroup_root = f"/{base}.slice"  # what the fixture removes at the end
    k.env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=fake.address)
    k.start("--cgroup-driver", "systemd", "--cgroup-root", "/" + base.replace("_", "-"))
    return k, base


def test_slices_made_and_stopped_over_dbus(kubelet_factory, runtime, fake_systemd):
    assert V1, "this test reads cgroup v1 files"
    fake = fake_systemd
    k, base = start_kubelet(kubelet_factory, fake)
    k.wait_log(r"QoS cgroups ready", 60)
    assert k.alive()

    # the QoS slices, in upstream's order, each with runc's properties for a slice
    kp, bu, be = f"{base}-kubepods.slice", f"{base}-kubepods-burstable.slice", f"{base}-kubepods-besteffort.slice"
    starts = fake.calls("StartTransientUnit")
    assert [c["name"] for c in starts] == [kp, bu, be]
    for c, parent in zip(starts, (f"{base}.slice", kp, kp)):
        p = props(c)
        assert c["mode"] == "replace" and c["aux"] == []
        assert p["Description"] == "libcontainer container " + c["name"]
        assert p["Wants"] == [parent]
        assert p["MemoryAccounting"] is True and p["CPUAccounting"] is True and p["BlockIOAccounting"] is True
        assert p["DefaultDependencies"] is False
        assert p["DevicePolicy"] == "auto" and p["DeviceAllow"] == []
        assert [n for n, _ in c["properties"]][:8] == ["Description", "Wants", "MemoryAccounting", "CPUAccounting",
                                                       "BlockIOAccounting", "DefaultDependencies", "DevicePolicy",
                                                       "DeviceAllow"]
    mem_total = int([l for l in read("/proc/meminfo").splitlines() if l.startswith("MemTotal:")][0].split()[1]) * 1024
    assert props(starts[0])["CPUShares"] == os.cpu_count() * 1024
    assert props(starts[0])["MemoryLimit"] == mem_total
    pid_max = int(read("/proc/sys/kernel/pid_max"))  # the pid capacity, node allocatable's "pid"
    assert props(starts[0])["TasksAccounting"] is True and props(starts[0])["TasksMax"] == pid_max
    assert "CPUShares" not in props(starts[1])
    assert props(starts[2])["CPUShares"] == 2
    # the values are also written to cgroupfs, at the expanded paths
    kdir = f"{base}.slice/{kp}"
    assert read(f"{CPU}/{kdir}/{be}/cpu.shares") == "2"
    assert int(read(f"{MEMORY}/{kdir}/memory.limit_in_bytes")) == mem_total // 4096 * 4096
    assert read(f"/sys/fs/cgroup/pids/{kdir}/pids.max") == str(pid_max)

    # a Guaranteed pod: its slice below kubepods, with its resources
    k.write("g.yaml", pod_yaml("g", "{limits: {cpu: 250m, memory: 64Mi}}"))
    full = f"g-{k.node}"
    wait_for(lambda: runtime.pods_named(full), 90, msg="the sandbox of pod g")
    [sb] = runtime.pods_named(full)
    uid = sb["metadata"]["uid"]
    unit = f"{base}-kubepods-pod{uid.replace('-', '_')}.slice"
    [c] = fake.calls("StartTransientUnit", unit)
    p = props(c)
    assert p["Wants"] == [kp]
    assert p["MemoryLimit"] == 64 * 1024 * 1024
    assert p["CPUShares"] == 256
    assert p["CPUQuotaPeriodUSec"] == 100000  # the fake says systemd 247
    assert p["CPUQuotaPerSecUSec"] == 250000
    # the sandbox's cgroup_parent is upstream's cgroupManager.Name(): the expanded slices
    want_parent = f"/{base}.slice/{kp}/{unit}"
    info = json.loads(runtime.json("inspectp", sb["id"])["info"]["info"])  # containerd's copy of the request
    assert info["config"]["linux"]["cgroup_parent"] == want_parent, info["config"]["linux"]
    wait_for(lambda: runtime.running(full), 90, msg="pod g running")
    # the sandbox was asked for once the slice's job had ended
    log = k.log()
    job_done = log.index(f"for StartTransientUnit({unit}) removed: done")
    assert job_done < log.index(f'Creating pod sandbox: pod="default/{full}"'), log[job_done - 500:job_done + 2000]
    # containerd turns a ".slice" parent into the systemd form "<slice>:cri-containerd:<id>" for runc; runc here
    # runs with its cgroupfs driver (no systemd for it), so where the container lands is not the slice: only
    # what ckubelet asked for and wrote is checked. The values it writes to cgroupfs itself, at the expanded paths:
    [ctr] = runtime.running(full)
    spec = json.loads(runtime.json("inspect", ctr["id"])["info"]["info"])["runtimeSpec"]
    assert spec["linux"]["cgroupsPath"] == f"{unit}:cri-containerd:{ctr['id']}"
    assert read(f"{MEMORY}{want_parent}/memory.limit_in_bytes") == str(64 * 1024 * 1024)
    assert read(f"{CPU}{want_parent}/cpu.cfs_quota_us") == "25000"

    # a BestEffort pod: below kubepods-besteffort
    k.write("b.yaml", pod_yaml("b"))
    wait_for(lambda: runtime.running(f"b-{k.node}"), 90, msg="pod b running")
    [bsb] = runtime.pods_named(f"b-{k.node}")
    bunit = f"{base}-kubepods-besteffort-pod{bsb['metadata']['uid'].replace('-', '_')}.slice"
    [bc] = fake.calls("StartTransientUnit", bunit)
    assert props(bc)["Wants"] == [be] and props(bc)["CPUShares"] == 2

    # a Burstable pod: the burstable QoS slice's CPUShares follows its pods' requests (100m: 102 shares), set on
    # the unit (systemd would otherwise write its own value back whenever it realizes the slice) and in cgroupfs
    k.write("bu.yaml", pod_yaml("bu", "{requests: {cpu: 100m}, limits: {cpu: 300m}}"))
    wait_for(lambda: runtime.running(f"bu-{k.node}"), 90, msg="pod bu running")
    sp = wait_for(lambda: [c for c in fake.calls("SetUnitProperties", bu) if props(c).get("CPUShares") == 102], 60,
                  msg=f"SetUnitProperties {bu} CPUShares=102")
    assert sp[0]["runtime"] is True and [n for n, _ in sp[0]["properties"]] == ["CPUShares"]
    assert read(f"{CPU}/{kdir}/{bu}/cpu.shares") == "102"
    k.remove("bu.yaml")
    wait_for(lambda: not runtime.pods_named(f"bu-{k.node}"), 90, msg="pod bu's sandbox removed")

    # the pod removed: its slice is stopped and its directories go
    k.remove("g.yaml")
    wait_for(lambda: not runtime.pods_named(full), 90, msg="pod g's sandbox removed")
    wait_for(lambda: fake.calls("StopUnit", unit), 60, msg=f"StopUnit {unit}")
    assert fake.calls("StopUnit", unit)[0]["mode"] == "replace"
    wait_for(lambda: not any(os.path.exists(h + want_parent) for h in cgroup_hierarchies()), 60,
             msg="the pod slice's directories removed")
    assert not fake.calls("StopUnit", bunit)  # the other pod keeps its slice
    assert runtime.running(f"b-{k.node}")

    # a restart finds the slices there: nothing is asked again for them
    n_before = len(fake.calls("StartTransientUnit"))
    k.restart()
    wait_for(lambda: k.log().count("QoS cgroups ready") == 2, 60)
    assert len(fake.calls("StartTransientUnit")) == n_before
    k.remove("b.yaml")
    wait_for(lambda: fake.calls("StopUnit", bunit), 90, msg=f"StopUnit {bunit}")


def test_failed_slice_job_keeps_the_sandbox_out(kubelet_factory, runtime):
    """a pod slice whose job fails: no sandbox, the error named; the QoS slices were fine"""
    d = tempfile.mkdtemp(prefix="fakesystemd-", dir=runtime.dir)
    # the unit name depends on the pod UID: a static pod's UID is a hash of its manifest, known only once read,
    # so every pod slice of this root fails (--fail-unit takes a prefix)
    base = slice_root()
    fake = FakeSystemd(d, "--fail-prefix", f"{base}-kubepods-pod")
    try:
        k = kubelet_factory(start=False)
        remove_cgroup_root(k.cgroup_root)
        k.cgroup_root = f"/{base}.slice"
        k.env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=fake.address)
        k.start("--cgroup-driver", "systemd", "--cgroup-root", "/" + base.replace("_", "-"))
        k.wait_log(r"QoS cgroups ready", 60)
        k.write("g.yaml", pod_yaml("g", "{limits: {cpu: 100m, memory: 32Mi}}"))
        k.wait_log(r"failed to ensure that the pod: [0-9a-f]+ cgroups exist and are correctly applied: failed to "
                   r"create container for \[[^]]*kubepods pod[0-9a-f]+\] : error creating systemd unit `" + base +
                   r"-kubepods-pod[0-9a-f_]+\.slice`: got `failed`", 60)
        k.wait_log(r'reason="FailedCreatePodContainer" message="unable to ensure pod container exists: failed to '
                   r"create container for", 30)
        wait_for(lambda: len(fake.calls("ResetFailedUnit")) >= 1, 30, msg="ResetFailedUnit")
        # retried with back-off, never run without its cgroup
        wait_for(lambda: len([c for c in fake.calls("StartTransientUnit") if "-pod" in c["name"]]) >= 2, 60,
                 msg="a second attempt")
        assert not runtime.pods_named(f"g-{k.node}")
        assert k.alive()
    finally:
        fake.stop()


def test_no_bus_is_a_clear_startup_error(kubelet_factory, runtime):
    k = kubelet_factory(start=False)
    remove_cgroup_root(k.cgroup_root)
    base = slice_root()
    k.cgroup_root = f"/{base}.slice"
    missing = os.path.join(k.dir, "no-such-bus")
    k.env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=f"unix:path={missing}")
    k.start("--cgroup-driver", "systemd", "--cgroup-root", "/" + base.replace("_", "-"))
    assert k.proc.wait(60) != 0
    log = k.log()
    assert f"failed to connect to systemd over D-Bus for --cgroup-driver=systemd (system bus unix:path={missing})" \
        in log, log[-2000:]
    assert "QoS cgroups ready" not in log


def test_bus_lost_and_back_and_no_job_signal(kubelet_factory, runtime):
    """systemd's bus goes away: ckubelet keeps running, the next call connects again; a systemd that never sends
    JobRemoved costs a second per slice (runc's wait) and a warning, not the pod"""
    d = tempfile.mkdtemp(prefix="fakesystemd-", dir=runtime.dir)
    fake = FakeSystemd(d)
    try:
        k, base = start_kubelet(kubelet_factory, fake)
        k.wait_log(r"QoS cgroups ready", 60)
        fake.stop()
        k.wait_log(r"systemd cgroup driver: D-Bus connection: ", 30)
        assert k.alive()
        # a new systemd on the same socket, one that never signals its jobs' ends
        fake = FakeSystemd(d, "--no-job-signal")
        k.write("p.yaml", pod_yaml("p"))
        wait_for(lambda: runtime.running(f"p-{k.node}"), 90, msg="pod p running")
        [sb] = runtime.pods_named(f"p-{k.node}")
        unit = f"{base}-kubepods-besteffort-pod{sb['metadata']['uid'].replace('-', '_')}.slice"
        assert fake.calls("StartTransientUnit", unit)
        k.wait_log(r"Timed out while waiting for StartTransientUnit\(" + unit +
                   r"\) completion signal from dbus. Continuing...", 30)
        k.remove("p.yaml")
        wait_for(lambda: fake.calls("StopUnit", unit), 90, msg=f"StopUnit {unit}")
        k.wait_log(r"Timed out while waiting for StopUnit\(" + unit + r"\) completion signal from dbus", 30)
    finally:
        fake.stop()  # the kubelet is stopped (exit status checked) and its root removed by the fixture
