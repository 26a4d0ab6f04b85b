#!/usr/bin/python3
"""The cost of a /metrics/cadvisor scrape, on a private containerd.

  /usr/bin/python3 bench/cadvisor.py   (as root) [--pods 0,10,30] [--requests M]

For each pod count (each pod: one container, so three cgroups: the pod's, its sandbox's and its container's),
scrapes /metrics/cadvisor M times over TLS with a client certificate (a new connection per request, as for
bench/api.py) and prints the latency, ckubelet's CPU time per scrape (user + system from /proc) less that of
GET /healthz on the same connection pattern (the TLS handshake and HTTP), the series and bytes per scrape; then
the marginal cost of one more container from the largest and smallest pod counts. Figures only.
"""
import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
from harness import private_runtime  # noqa: E402
from apiclient import CA, Client  # noqa: E402
from conftest import SLEEPER, Kubelet, pod_manifest, wait_for  # noqa: E402
from startup import cpu_seconds, pct  # noqa: E402


def measure(k, c, path, m):
    lat, body = [], ""
    cpu0 = cpu_seconds(k.proc.pid)
    for _ in range(m):
        t = time.perf_counter()
        status, body, _ = c.get(path)
        lat.append(time.perf_counter() - t)
        assert status == 200, (path, status, body[:200])
    return (cpu_seconds(k.proc.pid) - cpu0) / m, lat, body


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pods", default="0,10,30")
    ap.add_argument("--requests", type=int, default=200)
    a = ap.parse_args()
    counts = [int(x) for x in a.pods.split(",")]
    m = a.requests

    k = None
    with private_runtime(62) as (rt, d):
        try:
            ca = CA(tempfile.mkdtemp(dir=d))
            k = Kubelet(rt, os.path.join(d, "kubelet"))
            k.extra_args = ["--v", "1", "--client-ca-file", ca.crt, "--authorization-mode", "AlwaysAllow"]
            k.start()
            c = Client(k.port, cert=ca.client("bench"))
            wait_for(lambda: c.get("/healthz")[0] == 200, timeout=30)
            print(f"/metrics/cadvisor benchmark: {m} scrapes per step, TLS with a client certificate, a new "
                  f"connection per request, {os.cpu_count()} CPUs")
            results = {}
            made = 0
            for n in counts:
                for i in range(made, n):
                    k.write(f"p{i}.yaml", pod_manifest(f"p{i}", [("c", SLEEPER)]))
                made = max(made, n)
                wait_for(lambda: sum(1 for x in rt.containers() if x["state"] == "CONTAINER_RUNNING") >= n,
                         timeout=300)
                time.sleep(3)
                base, _, _ = measure(k, c, "/healthz", m)
                cpu, lat, body = measure(k, c, "/metrics/cadvisor", m)
                series = sum(1 for l in body.splitlines() if l and not l.startswith("#"))
                cgroups = len({l.split('id="', 1)[1].split('"', 1)[0] for l in body.splitlines()
                               if l.startswith("container_start_time_seconds{")})
                net = cpu - base
                results[n] = net
                print(f"  {n:3d} pods ({cgroups:3d} cgroups): p50 {pct(lat, 50) * 1000:6.1f} ms  p99 "
                      f"{pct(lat, 99) * 1000:6.1f} ms  ckubelet CPU {cpu * 1000:6.2f} ms/scrape, "
                      f"{net * 1000:6.2f} ms above /healthz ({base * 1000:.2f}); {series} series, {len(body)} bytes")
            lo, hi = min(counts), max(counts)
            if hi > lo:
                per = (results[hi] - results[lo]) / (hi - lo)
                print(f"  one more container (its pod cgroup, sandbox and container): {per * 1e6:.0f} µs of ckubelet "
                      f"CPU per scrape")
        finally:
            if k and k.alive():
                k.term()


if __name__ == "__main__":
    main()
