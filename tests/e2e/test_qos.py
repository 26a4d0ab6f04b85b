# QoS cgroups (--cgroups-per-qos): kubepods/{burstable,besteffort}, one cgroup per pod with upstream's
# ResourceConfigForPod values, the sandbox and containers inside it, orphaned pod cgroups removed.
import json
import os
import re

from conftest import BUSYBOX, NODE, SLEEPER, cgroup_hierarchies, containerd_major, wait_for

V1 = os.path.isdir("/sys/fs/cgroup/memory") and os.path.isdir("/sys/fs/cgroup/cpu")
CPU = "/sys/fs/cgroup/cpu"
MEMORY = "/sys/fs/cgroup/memory"


def manifest(name, containers):
    """containers: list of (name, requests dict, limits dict)"""
    lines = ["apiVersion: v1", "kind: Pod", "metadata:", f"  name: {name}", "spec:", "  containers:"]
    for cname, req, lim in containers:
        lines += [f"  - name: {cname}", f"    image: {BUSYBOX}", f"    command: {json.dumps(SLEEPER)}",
                  "    resources:"]
        for key, vals in (("requests", req), ("limits", lim)):
            if vals:
                lines.append(f"      {key}:")
                lines += [f"        {k}: {v}" for k, v in vals.items()]
        if not req and not lim:
            lines[-1] = "    resources: {}"
    return "\n".join(lines) + "\n"


def read(path):
    with open(path) as f:
        return f.read().strip()


def pod_uid(runtime, name):
    [sb] = runtime.pods_named(name, ready_only=True)
    return sb["metadata"]["uid"]


def container_cgroups(runtime, pod_name):
    """For each running container of the pod: its init process' cgroup paths by controller."""
    out = []
    for c in runtime.running(pod_name):
        pid = runtime.container_pid(c["id"])
        paths = {}
        for line in read(f"/proc/{pid}/cgroup").splitlines():
            _, ctrls, path = line.split(":", 2)
            for ctrl in ctrls.split(","):
                paths[ctrl] = path
        out.append((c["metadata"]["name"], paths))
    return out


def start(kubelet, runtime, filename, name, text, n=1):
    kubelet.write(filename, text)
    full = f"{name}-{NODE}"
    wait_for(lambda: len(runtime.running(full)) == n, 60, msg=f"pod {name} running")
    return full, pod_uid(runtime, full)


def test_qos_hierarchy_and_pod_cgroups(kubelet, runtime):
    assert V1, "this test reads cgroup v1 files"
    root = kubelet.cgroup_root
    kubepods = root + "/kubepods"
    # the QoS cgroups exist in every hierarchy; besteffort has 2 shares; kubepods the node's capacity
    for h in cgroup_hierarchies():
        for q in ("", "/burstable", "/besteffort"):
            wait_for(lambda: os.path.isdir(h + kubepods + q), 20, msg=f"{h}{kubepods}{q}")
    assert read(f"{CPU}{kubepods}/besteffort/cpu.shares") == "2"
    assert int(read(f"{CPU}{kubepods}/cpu.shares")) == os.cpu_count() * 1024
    mem_total = int([l for l in read("/proc/meminfo").splitlines() if l.startswith("MemTotal:")][0].split()[1]) * 1024
    assert int(read(f"{MEMORY}{kubepods}/memory.limit_in_bytes")) == mem_total // 4096 * 4096

    # Guaranteed: kubepods/pod<uid>, memory limit = sum of the limits, cfs quota from the cpu limits
    g, guid = start(kubelet, runtime, "g.yaml", "g", manifest("g", [
        ("a", None, {"cpu": "250m", "memory": "64Mi"}),
        ("b", None, {"cpu": "250m", "memory": "32Mi"}),
    ]), 2)
    gdir = f"{kubepods}/pod{guid}"
    assert read(f"{MEMORY}{gdir}/memory.limit_in_bytes") == str(96 * 1024 * 1024)
    assert read(f"{CPU}{gdir}/cpu.cfs_period_us") == "100000"
    assert read(f"{CPU}{gdir}/cpu.cfs_quota_us") == "50000"
    assert read(f"{CPU}{gdir}/cpu.shares") == str(500 * 1024 // 1000)
    # the containers (and so their processes) live inside the pod cgroup, in every hierarchy
    cgs = container_cgroups(runtime, g)
    assert len(cgs) == 2
    for cname, paths in cgs:
        for ctrl in ("cpu", "memory", "pids", "cpuacct"):
            assert paths[ctrl].startswith(gdir + "/"), (cname, ctrl, paths[ctrl])
    # the sandbox's CRI cgroup parent is the pod cgroup: the pause process runs in <pod cgroup>/<sandbox id>
    [sb] = runtime.pods_named(g, ready_only=True)
    assert read(f"{CPU}{gdir}/{sb['id']}/cgroup.procs")

    # Burstable: kubepods/burstable/pod<uid>, shares from the requests, no quota (one container has no
    # cpu limit), no memory limit; the burstable QoS cgroup gets the sum of the burstable requests
    b, buid = start(kubelet, runtime, "b.yaml", "b", manifest("b", [
        ("a", {"cpu": "300m", "memory": "16Mi"}, {"cpu": "600m"}),
        ("b", {"cpu": "100m"}, None),
    ]), 2)
    bdir = f"{kubepods}/burstable/pod{buid}"
    assert read(f"{CPU}{bdir}/cpu.shares") == str(400 * 1024 // 1000)
    assert read(f"{CPU}{bdir}/cpu.cfs_quota_us") == "-1"
    assert int(read(f"{MEMORY}{bdir}/memory.limit_in_bytes")) > 1 << 50  # unlimited
    wait_for(lambda: read(f"{CPU}{kubepods}/burstable/cpu.shares") == str(400 * 1024 // 1000), 20,
             msg="burstable QoS shares from the burstable pods' requests")
    for cname, paths in container_cgroups(runtime, b):
        assert paths["cpu"].startswith(bdir + "/") and paths["memory"].startswith(bdir + "/"), paths

    # BestEffort: kubepods/besteffort/pod<uid> with 2 shares
    e, euid = start(kubelet, runtime, "e.yaml", "e", manifest("e", [("a", None, None)]))
    edir = f"{kubepods}/besteffort/pod{euid}"
    assert read(f"{CPU}{edir}/cpu.shares") == "2"
    for cname, paths in container_cgroups(runtime, e):
        assert paths["cpu"].startswith(edir + "/"), paths

    # removing a manifest removes its pod cgroup in every hierarchy (once nothing is left in the runtime)
    kubelet.remove("g.yaml")
    kubelet.remove("b.yaml")
    for h in cgroup_hierarchies():
        wait_for(lambda: not os.path.exists(h + gdir), 60, msg=f"{h}{gdir} removed")
        wait_for(lambda: not os.path.exists(h + bdir), 60, msg=f"{h}{bdir} removed")
    assert not runtime.pods_named(g) and not runtime.pods_named(b)
    wait_for(lambda: read(f"{CPU}{kubepods}/burstable/cpu.shares") == "2", 20,
             msg="burstable QoS shares back to the minimum")
    # the other pod is untouched
    assert os.path.isdir(CPU + edir) and runtime.running(e)


def test_orphaned_pod_cgroup_removed_only_under_own_root(kubelet_factory, runtime):
    assert V1
    k = kubelet_factory()
    kubepods = k.cgroup_root + "/kubepods"
    wait_for(lambda: os.path.isdir(f"{CPU}{kubepods}/besteffort"), 20, msg="QoS cgroups")
    # a pod cgroup of a pod nobody wants (a kubelet killed before it cleaned up, say) goes away...
    orphan = f"{kubepods}/burstable/pod00000000-1111-2222-3333-444444444444"
    for h in cgroup_hierarchies():
        os.makedirs(h + orphan + "/child")
    # ...while a lookalike outside our cgroup root stays
    other = k.cgroup_root + "/elsewhere/pod00000000-1111-2222-3333-555555555555"
    os.makedirs(CPU + other)
    for h in cgroup_hierarchies():
        wait_for(lambda: not os.path.exists(h + orphan), 30, msg=f"orphaned {h}{orphan} removed")
    assert os.path.isdir(CPU + other)
    os.rmdir(CPU + other)
    os.rmdir(CPU + k.cgroup_root + "/elsewhere")


def test_pod_cgroup_survives_kubelet_restart(kubelet, runtime):
    p, uid = start(kubelet, runtime, "r.yaml", "r", manifest("r", [("a", {"cpu": "100m"}, None)]))
    pdir = f"{CPU}{kubelet.cgroup_root}/kubepods/burstable/pod{uid}"
    assert os.path.isdir(pdir)
    [c] = runtime.running(p)
    kubelet.kill9()
    n = len(kubelet.log())
    kubelet.start()
    # the new kubelet has listed the runtime and set the burstable shares from this pod again
    wait_for(lambda: "runtime listed" in kubelet.log()[n:], 30, msg="relist after restart")
    wait_for(lambda: re.search(r"QoS cgroup \S*burstable: cpu shares 102\b", kubelet.log()[n:]), 30,
             msg="burstable shares set after restart")
    assert os.path.isdir(pdir)
    assert [x["id"] for x in runtime.running(p)] == [c["id"]]


def test_cgroups_per_qos_false_unchanged(kubelet_factory, runtime):
    k = kubelet_factory(True, "--cgroups-per-qos=false", "--enforce-node-allocatable=")
    p, uid = start(k, runtime, "n.yaml", "n", manifest("n", [("a", {"cpu": "100m"}, {"memory": "32Mi"})]))
    assert not os.path.exists(f"{CPU}{k.cgroup_root}/kubepods")
    for cname, paths in container_cgroups(runtime, p):
        assert "kubepods" not in paths["cpu"] and f"pod{uid}" not in paths["cpu"], paths
    [sb] = runtime.pods_named(p, ready_only=True)
    assert read(f"{CPU}/k8s.io/{sb['id']}/cgroup.procs")  # containerd's default place


def test_bad_cgroup_flags_refused(kubelet_factory, runtime):
    # the systemd driver reads the root "/ckubelet-<pid>-<n>" as the slice ckubelet_<pid>_<n>.slice, which does
    # not exist (test_systemd_cgroup.py tests the driver); a runtime that reports its own cgroup driver (containerd
    # 2.x, RuntimeConfig) decides the driver instead of the flag, as upstream (KEP-4033)
    if containerd_major() < 2:
        k = kubelet_factory(True, "--cgroup-driver=systemd")
        wait_for(lambda: not k.alive(), 20,
                 msg="ckubelet to refuse a missing cgroup root with --cgroup-driver=systemd")
        slice_dir = k.cgroup_root.replace("-", "_") + ".slice"
        assert f'cgroup-root "{k.cgroup_root}" doesn\'t exist (no /sys/fs/cgroup/' in k.log()
        assert f"{slice_dir})" in k.log()
    k2 = kubelet_factory(True, "--cgroup-root=/does-not-exist-ckubelet")
    wait_for(lambda: not k2.alive(), 20, msg="ckubelet to refuse a missing cgroup root")
    # said once, by the one who decides (main: "failed to start: <reason>"), not also where it was found
    assert k2.log().count('cgroup-root "/does-not-exist-ckubelet" doesn\'t exist') == 1, k2.log()
    assert 'failed to start: invalid configuration: cgroup-root "/does-not-exist-ckubelet"' in k2.log()
    k3 = kubelet_factory(True, "--cgroups-per-qos=false")
    wait_for(lambda: not k3.alive(), 20, msg="ckubelet to refuse enforce-node-allocatable without QoS cgroups")
    assert "is not supported unless cgroupsPerQOS (--cgroups-per-qos) feature is turned on" in k3.log()


def test_reserved_and_pod_max_pids(kubelet_factory, runtime):
    assert V1
    k = kubelet_factory(True, "--kube-reserved=cpu=500m,memory=1Gi", "--system-reserved=memory=512Mi",
                        "--pod-max-pids=100")
    kubepods = k.cgroup_root + "/kubepods"
    p, uid = start(k, runtime, "p.yaml", "p", manifest("p", [("a", None, None)]))
    # kubepods: node allocatable (capacity less the reservations) when "pods" is enforced (the default)
    mem_total = int([l for l in read("/proc/meminfo").splitlines() if l.startswith("MemTotal:")][0].split()[1]) * 1024
    want = mem_total - (1024 + 512) * 1024 * 1024
    assert int(read(f"{MEMORY}{kubepods}/memory.limit_in_bytes")) == want // 4096 * 4096
    assert int(read(f"{CPU}{kubepods}/cpu.shares")) == (os.cpu_count() * 1000 - 500) * 1024 // 1000
    # every pod cgroup gets pids.max from --pod-max-pids
    assert read(f"/sys/fs/cgroup/pids{kubepods}/besteffort/pod{uid}/pids.max") == "100"
