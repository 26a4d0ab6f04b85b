#!/usr/bin/python3
"""Probe engine cost: N pods (default 110), each with one HTTP readiness and one TCP liveness probe at
periodSeconds 1, on a private containerd.

  /usr/bin/python3 bench/probes.py   (as root) [--pods 110] [--seconds 60]

Starts the pods, waits until every pod is Ready (all readiness probes passing), then measures ckubelet's
CPU time (user+sys from /proc) over the measuring window, its VmRSS/VmHWM, and the TIME-WAIT sockets in the
node's network namespace. Prints figures only.

The liveness probe has initialDelaySeconds 15: with 110 pods starting at once on 2 CPUs, StartContainer
takes up to ~20 s and httpd needs seconds more to listen, so without a delay a third of the containers are
(correctly) killed by their liveness probe during start-up, which is not what this measures.
"""
import argparse
import os
import re
import subprocess
import shutil
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
from harness import private_runtime  # noqa: E402
from conftest import NODE, Kubelet, wait_for  # noqa: E402
from startup import cpu_seconds, proc_status  # noqa: E402
import results  # noqa: E402

POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: {name}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: web
    image: busybox:1.36
    command: [sh, -c, "mkdir -p /www && echo ok > /www/index.html && exec httpd -f -p 8080 -h /www"]
    ports:
    - name: http
      containerPort: 8080
    readinessProbe:
      httpGet:
        path: /index.html
        port: http
      periodSeconds: 1
    livenessProbe:
      tcpSocket:
        port: 8080
      periodSeconds: 1
      initialDelaySeconds: 15
"""


def ready_pods(k):
    ready = {}
    for m in re.finditer(r'Pod condition changed: pod="default/([^"]+)" podUID="[^"]*" type="Ready" status="(\w+)"',
                         k.log()):
        ready[m.group(1)] = m.group(2) == "True"
    return sum(ready.values())


def time_wait():
    out = subprocess.run(["ss", "-Htan", "state", "time-wait"], capture_output=True, text=True).stdout
    return len(out.splitlines())


def save(out):
    """bench/results/probes.json and .png"""
    results.write_json("probes", out)
    plt = results.pyplot()
    fig, axs = plt.subplots(1, 2, figsize=(8, 4.5))
    results.grouped_bars(axs[0], [f"{out['pods']} pods"], ["ckubelet"], {"ckubelet": [out["cpu_s_per_min"]]},
                         "CPU seconds per minute", "probe engine CPU")
    results.grouped_bars(axs[1], [f"{out['pods']} pods"], ["ckubelet"], {"ckubelet": [out["cpu_us_per_probe"]]},
                         "µs", "CPU per probe (nominal rate)", fmt="{:.0f}")
    results.save_png(fig, "probes", f"{out['date']}, {out['machine']['cpus']} CPUs {out['machine']['cpu_model']}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pods", type=int, default=110)
    ap.add_argument("--seconds", type=int, default=60)
    ap.add_argument("--keep-log", metavar="FILE", help="copy ckubelet's log there")
    a = ap.parse_args()
    n = a.pods

    k = None
    with private_runtime(61) as (rt, d):
        try:
            k = Kubelet(rt, os.path.join(d, "kubelet"))
            k.extra_args = ["--v", "2", "--max-pods", str(max(n, 110))]  # --v 2: no per-probe log lines
            k.start()
            print(f"ckubelet probe benchmark: {n} pods × (HTTP readiness + TCP liveness) every 1 s, "
                  f"{os.cpu_count()} CPUs, containerd at {rt.endpoint}")
            t0 = time.time()
            for i in range(n):
                k.write(f"p{i}.yaml", POD.format(name=f"p{i}"))
            wait_for(lambda: ready_pods(k) == n, 600, interval=1, msg=f"{n} pods Ready")
            print(f"  all {n} pods Ready after {time.time() - t0:.1f} s")
            time.sleep(5)  # let the start-up settle

            pid = k.proc.pid
            c0, tw0 = cpu_seconds(pid), time_wait()
            time.sleep(a.seconds)
            c1 = cpu_seconds(pid)
            st = proc_status(pid)
            cpu = c1 - c0
            print(f"  ckubelet CPU: {cpu:.2f} s over {a.seconds} s = {cpu * 60 / a.seconds:.3f} CPU-s/min "
                  f"({cpu / a.seconds * 100:.2f}% of one core)")
            print(f"  ckubelet VmRSS {st['VmRSS']}, VmHWM {st['VmHWM']}")
            print(f"  TIME-WAIT sockets in the node's namespace: {tw0} at the start, {time_wait()} at the end")
            restarts = sum(1 for c in rt.containers() if c["metadata"]["attempt"] > 0)
            not_ready = n - ready_pods(k)
            print(f"  containers restarted: {restarts}; pods not Ready at the end: {not_ready}")
            save({**results.header(), "pods": n, "seconds": a.seconds, "cpu_s_per_min": round(cpu * 60 / a.seconds, 3),
                  "cpu_us_per_probe": round(cpu / (2 * n * a.seconds) * 1e6, 1), "vmrss": st["VmRSS"],
                  "vmhwm": st["VmHWM"], "restarts": restarts, "not_ready": not_ready})
            if a.keep_log:
                shutil.copy(k.logfile, a.keep_log)
        finally:
            if k and k.alive():
                for i in range(n):
                    try:
                        k.remove(f"p{i}.yaml")
                    except FileNotFoundError:
                        pass
                try:
                    wait_for(lambda: not rt.pods(), 300, interval=1, msg="pods removed")
                except AssertionError as e:
                    print(e)
                k.term(30)
                m = re.search(r"Probes run since start: (\d+) successful, (\d+) failed, (\d+) unknown", k.log())
                if m:
                    print(f"  probes run in the whole run (ckubelet's counters): {m.group(1)} successful, "
                          f"{m.group(2)} failed, {m.group(3)} unknown")


if __name__ == "__main__":
    main()
