#!/usr/bin/python3
"""kubeadm init side by side (issue 30 item 5): the same `kubeadm init` (v1.37.2, the configuration and images of
tests/e2e/test_kubeadm.py) with ckubelet and with the upstream kubelet v1.37.2 as the node's kubelet, one after the
other on one private containerd, `--repeat` times each.

Figures per run, from the start of `kubeadm init`:
- kubelet started: kubeadm's kubelet-start phase (the harness starts the kubelet then, as systemd would);
- control plane healthy: kubeadm's `[control-plane-check]` (v1.37: each component's own health endpoint) has
  reported the last of kube-apiserver, kube-controller-manager and kube-scheduler healthy (seen in its output,
  polled every 0.1 s);
- init done: kubeadm exits 0;
- node Ready: the Node's Ready condition True (polled every 0.5 s after init);
then, with the control plane running on the node, after `--settle` seconds, over `--steady` seconds: the kubelet's
CPU (user + system, with reaped children, per minute), VmRSS, and PSS (/proc/PID/smaps_rollup: shared pages divided
among their users). Each run ends with kubeadm reset and the clean-up of test_kubeadm.py.

    /usr/bin/python3 bench/kubeadm.py [--repeat 2] [--steady 60] [--settle 20]

Needs the v1.37.2 build (scripts/build-kubernetes.sh) and `ninja -C build`. Writes bench/results/kubeadm.json."""
import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
import conftest  # noqa: E402
import controlplane  # noqa: E402
import test_kubeadm as tk  # noqa: E402

COMPONENTS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler")
HEALTHY = re.compile(r"\[control-plane-check\] (kube-apiserver|kube-controller-manager|kube-scheduler) is healthy")


class Node(tk.KubeadmNode):
    """A kubeadm node whose kubelet is `kubelet` (ckubelet, or the upstream binary); stamps kubeadm's phases."""

    def __init__(self, runtime, bindir, kubelet):
        super().__init__(runtime, bindir)
        self.kubelet = kubelet
        self.stamps = {}

    def start_kubelet(self):
        self.stamps.setdefault("kubelet_started", time.monotonic())
        if self.kubelet == "ckubelet":
            return super().start_kubelet()
        argv, env = tk.drop_in_command(["--v", "0"])
        argv[0] = os.path.join(self.bin, "kubelet")
        self.argv = argv
        with open(self.kubelet_log, "a") as log:
            self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         env=dict(os.environ, **env))


def proc_cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")  # utime stime cutime cstime


def proc_memory(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                out["rss_mb"] = int(line.split()[1]) / 1024
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            if line.startswith("Pss:"):
                out["pss_mb"] = int(line.split()[1]) / 1024
    return out


def one_run(runtime, bindir, kubelet, args):
    n = Node(runtime, bindir, kubelet)
    run = {"kubelet": kubelet}
    try:
        n.cleanup()
        n.cgroup_root = conftest.make_cgroup_root()
        n.write_config()
        n.import_images()
        if kubelet != "ckubelet":  # kubeadm's preflight runs `kubelet --version` from its PATH
            d = os.path.join(n.dir, "bin")
            os.makedirs(d, exist_ok=True)
            os.symlink(os.path.join(bindir, "kubelet"), os.path.join(d, "kubelet"))
        t0 = time.monotonic()
        healthy = {}

        def watch():
            for m in HEALTHY.finditer(n.init_log() if os.path.exists(n.kubeadm_log) else ""):
                healthy.setdefault(m.group(1), time.monotonic())

        stop = threading.Event()

        def poller():
            while not stop.is_set():
                watch()
                stop.wait(0.1)
        t = threading.Thread(target=poller)
        t.start()
        try:
            rc, out = n.init()
        finally:
            stop.set()
            t.join()
        watch()
        run["init_exit"] = rc
        run["init_done_s"] = time.monotonic() - t0
        if rc != 0:
            run["error"] = out[-3000:]
            return run
        run["kubelet_started_s"] = n.stamps["kubelet_started"] - t0
        if all(c in healthy for c in COMPONENTS):
            run["control_plane_healthy_s"] = max(healthy.values()) - t0
        conftest.wait_for(lambda: any(c["type"] == "Ready" and c["status"] == "True"
                                      for c in n.get("node", tk.NODE_NAME)["status"]["conditions"]), 300,
                          interval=0.5, msg="the node Ready")
        run["node_ready_s"] = time.monotonic() - t0
        time.sleep(args.settle)
        pid = n.proc.pid
        c0, w0 = proc_cpu_seconds(pid), time.monotonic()
        time.sleep(args.steady)
        c1, w1 = proc_cpu_seconds(pid), time.monotonic()
        run["cpu_s_per_min"] = (c1 - c0) / (w1 - w0) * 60
        run.update(proc_memory(pid))
        run["load_avg_1m"] = os.getloadavg()[0]
        return run
    finally:
        problems = n.cleanup()
        if problems:
            run["cleanup_problems"] = problems


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--steady", type=float, default=60)
    ap.add_argument("--settle", type=float, default=20)
    ap.add_argument("--out", default=os.path.join(HERE, "results", "kubeadm.json"))
    args = ap.parse_args()
    bindir = controlplane.build_kubernetes()

    runs = []
    rt = conftest.Runtime(tempfile.mkdtemp(prefix="ckubelet-bench-kubeadm-", dir="/var/tmp"), 90 + os.getpid() % 10)
    rt.start()
    try:
        subprocess.run(["bash", os.path.join(conftest.SCRIPTS, "build-images.sh"), conftest.IMAGE_CACHE], check=True)
        subprocess.run(["bash", os.path.join(conftest.SCRIPTS, "containerd.sh"), "import", rt.dir,
                        os.path.join(conftest.IMAGE_CACHE, "images.tar")], check=True)
        for i in range(args.repeat):
            for kubelet in ("ckubelet", "kubelet-v1.37.2"):
                tk.precheck()
                r = one_run(rt, bindir, kubelet, args)
                r["round"] = i + 1
                print(json.dumps(r), flush=True)
                runs.append(r)
    finally:
        rt.stop()
        subprocess.run(["rm", "-rf", rt.dir])
    table = {}
    for k in ("ckubelet", "kubelet-v1.37.2"):
        mine = [r for r in runs if r["kubelet"] == k and r.get("init_exit") == 0]
        table[k] = {f: statistics.median(r[f] for r in mine if f in r) if any(f in r for r in mine) else None
                    for f in ("kubelet_started_s", "control_plane_healthy_s", "init_done_s", "node_ready_s",
                              "cpu_s_per_min", "rss_mb", "pss_mb")}
    print(f"\n{'median of ' + str(args.repeat):<26}{'ckubelet':>12}{'kubelet v1.37.2':>18}{'ratio':>8}")
    for f in table["ckubelet"]:
        a, b = table["ckubelet"][f], table["kubelet-v1.37.2"][f]
        ratio = f"{b / a:.1f}x" if a and b else "-"
        print(f"{f:<26}{(f'{a:.2f}' if a is not None else '-'):>12}{(f'{b:.2f}' if b is not None else '-'):>18}"
              f"{ratio:>8}")
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "machine": platform.node(),
                   "cpus": os.cpu_count(), "command": " ".join(sys.argv), "runs": runs, "median": table}, f,
                  indent=1)


if __name__ == "__main__":
    main()
