# Huge pages, standalone on cgroup v1 (the hugetlb hierarchy): the pod cgroup's hugetlb limits from the pod's huge
# page requests, 0 for every other page size of the machine (upstream's cgroup manager); each container's from its
# own limits through the CRI's hugepage_limits, or the pod-level ones (GetHugepageLimitsFromResources); a pod that
# asks for none gets 0 everywhere. Reserves 8 pages of 2 MiB for the test and gives them back. A containerd of its
# own with disable_hugetlb_controller = false (containerd drops the CRI's hugepage_limits by default).
import json
import os
import shutil
import tempfile

import pytest

from conftest import BUSYBOX, NODE, SLEEPER, KubeletSet, Runtime, failed_in_call, wait_for
from test_qos import container_cgroups, pod_uid, read

MI = 1024 * 1024
HUGETLB = "/sys/fs/cgroup/hugetlb"
NR = "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"


@pytest.fixture
def hugepages():
    if not os.path.isfile(f"{HUGETLB}/hugetlb.2MB.limit_in_bytes") or not os.path.isfile(NR):
        pytest.skip("needs 2 MiB huge pages and the cgroup v1 hugetlb hierarchy")
    before = read(NR)
    with open(NR, "w") as f:
        f.write("8")
    if int(read(NR)) < 8:
        with open(NR, "w") as f:
            f.write(before)
        pytest.skip("the kernel could not reserve 8 huge pages of 2 MiB")
    try:
        yield
    finally:
        with open(NR, "w") as f:
            f.write(before)


def manifest(name, pod_resources, containers):
    lines = ["apiVersion: v1", "kind: Pod", "metadata:", f"  name: {name}", "spec:"]
    if pod_resources:
        lines.append(f"  resources: {json.dumps(pod_resources)}")
    lines.append("  containers:")
    for cname, res in containers:
        lines += [f"  - name: {cname}", f"    image: {BUSYBOX}", f"    command: {json.dumps(SLEEPER)}"]
        if res:
            lines.append(f"    resources: {json.dumps({'requests': res, 'limits': res})}")
    return "\n".join(lines) + "\n"


def limits(path):
    sizes = sorted(f.split(".")[1] for f in os.listdir(path) if f.startswith("hugetlb.") and
                   f.endswith(".limit_in_bytes") and not f.endswith(".rsvd.limit_in_bytes"))
    return {s: int(read(f"{path}/hugetlb.{s}.limit_in_bytes")) for s in sizes}


@pytest.fixture
def hugetlb_runtime():
    d = tempfile.mkdtemp(prefix="ckubelet-hugetlb-", dir="/var/tmp")
    rt = Runtime(d, 90 + os.getpid() % 10)
    rt.start(env=dict(os.environ, CKUBELET_CONTAINERD_HUGETLB="1"))
    try:
        rt.import_images()
        yield rt
    finally:
        try:
            rt.clean()
        finally:
            rt.stop()
            shutil.rmtree(d, ignore_errors=True)


def test_hugepages_limits(hugepages, hugetlb_runtime, request):
    ks = KubeletSet(hugetlb_runtime, request.node.nodeid)
    try:
        check(ks.make(), hugetlb_runtime)
    finally:
        ks.teardown(failed_in_call(request))


def check(k, runtime):
    kubepods = HUGETLB + k.cgroup_root + "/kubepods"

    def start(name, text, n):
        k.write(f"{name}.yaml", text)
        full = f"{name}-{NODE}"
        wait_for(lambda: len(runtime.running(full)) == n, 60, msg=f"pod {name} running")
        return full, pod_uid(runtime, full)

    # two containers with their own 2Mi pages: the pod cgroup gets their sum, each container its own, 1GB pages 0
    c, cuid = start("c", manifest("c", None, [("a", {"cpu": "100m", "memory": "32Mi", "hugepages-2Mi": "4Mi"}),
                                              ("b", {"cpu": "100m", "memory": "32Mi", "hugepages-2Mi": "2Mi"})]), 2)
    pod = limits(f"{kubepods}/pod{cuid}")
    assert pod["2MB"] == 6 * MI, pod
    assert all(v == 0 for s, v in pod.items() if s != "2MB"), pod
    got = {}
    for cname, paths in container_cgroups(runtime, c):
        assert paths["hugetlb"].startswith(f"{k.cgroup_root}/kubepods/pod{cuid}/"), paths
        got[cname] = limits(HUGETLB + paths["hugetlb"])
    assert sorted(v["2MB"] for v in got.values()) == [2 * MI, 4 * MI], got
    assert all(v == 0 for lim in got.values() for s, v in lim.items() if s != "2MB"), got

    # pod-level huge pages: the pod cgroup's, and the container without its own gets the pod's
    p, puid = start("p", manifest("p", {"requests": {"memory": "64Mi", "hugepages-2Mi": "8Mi"},
                                        "limits": {"memory": "64Mi", "hugepages-2Mi": "8Mi"}}, [("a", None)]), 1)
    assert limits(f"{kubepods}/burstable/pod{puid}")["2MB"] == 8 * MI
    [(_, paths)] = container_cgroups(runtime, p)
    assert limits(HUGETLB + paths["hugetlb"])["2MB"] == 8 * MI

    # no huge pages asked for: none allowed, in the pod cgroup and in the container's
    n, nuid = start("n", manifest("n", None, [("a", None)]), 1)
    assert set(limits(f"{kubepods}/besteffort/pod{nuid}").values()) == {0}
    [(_, paths)] = container_cgroups(runtime, n)
    assert set(limits(HUGETLB + paths["hugetlb"]).values()) == {0}
