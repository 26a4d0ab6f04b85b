#!/usr/bin/python3
"""The kubelet API's latency and cost, on a private containerd.

  /usr/bin/python3 bench/api.py   (as root) [--pods N] [--requests M]

Starts N pods, then over TLS with a client certificate (a new connection per request, as kubectl and
metrics-server use keep-alive, this is the worse case) measures the latency of GET /pods, /stats/summary,
/metrics, /containerLogs (tailLines=10) and /healthz, M requests each; then ckubelet's CPU time per request
and its VmRSS/VmHWM before and after. Prints figures only.
"""
import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
from harness import private_runtime  # noqa: E402
from apiclient import CA, Client  # noqa: E402
from conftest import Kubelet, pod_manifest, wait_for  # noqa: E402
from startup import cpu_seconds, pct, proc_status  # noqa: E402
import results  # noqa: E402


def save(out):
    """bench/results/api.json and .png"""
    results.write_json("api", out)
    plt = results.pyplot()
    fig, axs = plt.subplots(1, 2, figsize=(11, 4.5))
    groups = [e["path"].split("?")[0].replace("/containerLogs/default/p0-testnode/c", "/containerLogs/…")
              for e in out["endpoints"]]
    results.grouped_bars(axs[0], groups, ["ckubelet"], {"ckubelet": [e["p50_ms"] for e in out["endpoints"]]},
                         "ms", "latency p50 (a new TLS connection per request)", fmt="{:.1f}")
    results.grouped_bars(axs[1], groups, ["ckubelet"],
                         {"ckubelet": [e["cpu_ms_per_request"] for e in out["endpoints"]]},
                         "ms", "ckubelet CPU per request", fmt="{:.2f}")
    for ax in axs:
        ax.tick_params(axis="x", labelrotation=30, labelsize=7)
    results.save_png(fig, "api", f"{out['date']}, {out['machine']['cpus']} CPUs {out['machine']['cpu_model']}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pods", type=int, default=30)
    ap.add_argument("--requests", type=int, default=200)
    a = ap.parse_args()
    n, m = a.pods, a.requests

    k = None
    with private_runtime(61) as (rt, d):
        try:
            ca = CA(tempfile.mkdtemp(dir=d))
            k = Kubelet(rt, os.path.join(d, "kubelet"))
            k.extra_args = ["--v", "1", "--client-ca-file", ca.crt, "--authorization-mode", "AlwaysAllow"]
            k.start()
            c = Client(k.port, cert=ca.client("bench"))
            wait_for(lambda: c.get("/healthz")[0] == 200, timeout=30)
            for i in range(n):
                k.write(f"p{i}.yaml", pod_manifest(f"p{i}", [("c", ["sh", "-c", "i=0; while [ $i -lt 50 ]; do "
                                                                   "echo line $i; i=$((i+1)); done; sleep 3600"])]))
            wait_for(lambda: sum(1 for x in rt.containers() if x["state"] == "CONTAINER_RUNNING") >= n, timeout=300)
            time.sleep(3)
            pid = k.proc.pid
            st = proc_status(pid)
            print(f"ckubelet API benchmark: {n} pods, {m} requests per endpoint, TLS with a client certificate, "
                  f"a new connection per request, {os.cpu_count()} CPUs")
            print(f"  before: VmRSS {st['VmRSS']}, VmHWM {st['VmHWM']}")
            out = {**results.header(), "pods": n, "requests": m, "before": {"vmrss": st["VmRSS"], "vmhwm": st["VmHWM"]},
                   "endpoints": []}
            paths = ["/healthz", "/pods", "/stats/summary", "/metrics", "/containerLogs/default/p0-testnode/c?tailLines=10"]
            for path in paths:
                lat = []
                cpu0 = cpu_seconds(pid)
                for _ in range(m):
                    t = time.perf_counter()
                    status, body, _ = c.get(path)
                    lat.append(time.perf_counter() - t)
                    assert status == 200, (path, status, body[:200])
                cpu = cpu_seconds(pid) - cpu0
                print(f"  GET {path:<52} p50 {pct(lat, 50) * 1000:6.1f} ms  p99 {pct(lat, 99) * 1000:6.1f} ms  "
                      f"ckubelet CPU {cpu / m * 1000:6.2f} ms/request  ({len(body)} bytes)")
                out["endpoints"].append({"path": path, "p50_ms": round(pct(lat, 50) * 1000, 2),
                                         "p99_ms": round(pct(lat, 99) * 1000, 2),
                                         "cpu_ms_per_request": round(cpu / m * 1000, 3), "bytes": len(body)})
            st = proc_status(pid)
            print(f"  after:  VmRSS {st['VmRSS']}, VmHWM {st['VmHWM']}")
            out["after"] = {"vmrss": st["VmRSS"], "vmhwm": st["VmHWM"]}
            save(out)
        finally:
            if k and k.alive():
                k.term()


if __name__ == "__main__":
    main()
