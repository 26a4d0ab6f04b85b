#!/usr/bin/python3
"""Static pod start-up latency and ckubelet's footprint, on a private containerd.

  /usr/bin/python3 bench/startup.py   (as root) [--pods N]

(a) N manifests written one at a time: for each, the time from the manifest's rename into the directory to
    its container's startedAt (set by the runtime), and the kubelet-side part (log: SyncLoop ADD → Started
    container);
(b) N manifests written at once: the same per pod;
(c) with N pods running: ckubelet's VmRSS/VmHWM, and its CPU time over 30 s idle.
Prints figures only.
"""
import argparse
import os
import re
import sys
import time
from datetime import datetime, timezone

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
from harness import private_runtime  # noqa: E402
from conftest import NODE, Kubelet, pod_manifest, wait_for  # noqa: E402
import results  # noqa: E402

SLEEP = ["sleep", "3600"]


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def figures(xs):
    return {"p50_ms": round(pct(xs, 50) * 1000, 1), "p99_ms": round(pct(xs, 99) * 1000, 1),
            "max_ms": round(max(xs) * 1000, 1)}


def summary(label, xs):
    print(f"  {label:<44} p50 {pct(xs, 50) * 1000:7.1f} ms   p99 {pct(xs, 99) * 1000:7.1f} ms   "
          f"max {max(xs) * 1000:7.1f} ms")


def started_at(runtime, pod_name):
    [c] = runtime.running(pod_name)
    return int(runtime.inspect(c["id"])["startedAt"]) / 1e9


def klog_time(line):
    # I1122 15:20:10.067082 — today's date, local time of the kubelet (UTC here)
    m = re.match(r"[IWE](\d\d)(\d\d) (\d\d):(\d\d):(\d\d\.\d+)", line)
    mo, d, hh, mm, ss = m.groups()
    now = datetime.now(timezone.utc)
    return datetime(now.year, int(mo), int(d), int(hh), int(mm), tzinfo=timezone.utc).timestamp() + float(ss)


def kubelet_side(k, pod_name):
    add = started = None
    for line in k.log().splitlines():
        if add is None and f'SyncLoop ADD: pod="default/{pod_name}"' in line:
            add = klog_time(line)
        if add is not None and f'Started container: pod="default/{pod_name}"' in line:
            started = klog_time(line)
            break
    return started - add


def proc_status(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            out[k] = v.strip()
    return out


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def write(k, name):
    t = time.time()
    k.write(f"{name}.yaml", pod_manifest(name, [("c", SLEEP)]))
    return t


def save(out):
    """bench/results/startup.json and .png"""
    results.write_json("startup", out)
    plt = results.pyplot()
    fig, ax = plt.subplots(figsize=(8, 4.5))
    groups = ["one at a time: p50", "one at a time: p99", "all at once: p50", "all at once: p99"]
    vals = {"ckubelet": [out[w]["e2e"][q] for w in ("one_at_a_time", "at_once") for q in ("p50_ms", "p99_ms")]}
    results.grouped_bars(ax, groups, ["ckubelet"], vals, "ms",
                         f"{out['pods']} static pods: manifest written → container started", fmt="{:.0f}")
    results.save_png(fig, "startup", f"{out['date']}, {out['machine']['cpus']} CPUs {out['machine']['cpu_model']}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pods", type=int, default=30)
    n = ap.parse_args().pods

    k = None
    out = {**results.header(), "pods": n}
    with private_runtime(60) as (rt, d):
        try:
            k = Kubelet(rt, os.path.join(d, "kubelet"))
            k.extra_args = ["--v", "2"]
            k.start()
            time.sleep(1)
            print(f"ckubelet start-up benchmark: {n} pods, {os.cpu_count()} CPUs, containerd at {rt.endpoint}")

            # (a) one at a time
            e2e, kside = [], []
            for i in range(n):
                name = f"seq{i}"
                t = write(k, name)
                wait_for(lambda: rt.running(f"{name}-{NODE}"), 60, interval=0.01, msg=f"{name} running")
                e2e.append(started_at(rt, f"{name}-{NODE}") - t)
                kside.append(kubelet_side(k, f"{name}-{NODE}"))
            print(f"(a) {n} manifests written one at a time:")
            summary("manifest written → container started", e2e)
            summary("kubelet: SyncLoop ADD → Started container", kside)
            out["one_at_a_time"] = {"e2e": figures(e2e), "kubelet": figures(kside)}

            # (c) footprint with n pods
            st = proc_status(k.proc.pid)
            c0 = cpu_seconds(k.proc.pid)
            time.sleep(30)
            c1 = cpu_seconds(k.proc.pid)
            st = proc_status(k.proc.pid)
            print(f"(c) with {n} running pods: VmRSS {st['VmRSS']}, VmHWM {st['VmHWM']}, "
                  f"CPU {c1 - c0:.2f} s over 30 s idle ({(c1 - c0) * 2:.2f} CPU-s/min)")
            out["idle"] = {"vmrss": st["VmRSS"], "vmhwm": st["VmHWM"], "cpu_s_per_min": round((c1 - c0) * 2, 3)}

            # (b) all at once (after removing the first set)
            for i in range(n):
                k.remove(f"seq{i}.yaml")
            wait_for(lambda: not rt.pods(), 120, interval=0.2, msg="first set removed")
            times = {}
            for i in range(n):
                times[f"par{i}"] = write(k, f"par{i}")
            wait_for(lambda: len([c for c in rt.containers() if c["state"] == "CONTAINER_RUNNING"]) == n, 180,
                     interval=0.05, msg="all running")
            e2e = [started_at(rt, f"{name}-{NODE}") - t for name, t in times.items()]
            kside = [kubelet_side(k, f"{name}-{NODE}") for name in times]
            print(f"(b) {n} manifests written at once:")
            summary("manifest written → container started", e2e)
            summary("kubelet: SyncLoop ADD → Started container", kside)
            st = proc_status(k.proc.pid)
            print(f"    after: VmRSS {st['VmRSS']}, VmHWM {st['VmHWM']}")
            out["at_once"] = {"e2e": figures(e2e), "kubelet": figures(kside), "vmrss_after": st["VmRSS"],
                              "vmhwm_after": st["VmHWM"]}
            save(out)
        finally:
            if k and k.alive():
                k.term()


if __name__ == "__main__":
    main()
