#!/usr/bin/python3
"""Per-pod costs as the number of pods grows: is any of them superlinear?

  /usr/bin/python3 bench/scale.py                          (as root, after `ninja -C build`; see bench/README.md)
  /usr/bin/python3 bench/scale.py --pods 30,110,250 --kubelets ckubelet,go

One private containerd. For each kubelet (--kubelets, default ckubelet; `go` is the upstream v1.20.2 kubelet run
as compare.py runs it) and each N in --pods: a fresh kubelet with `--max-pods N`, N hostNetwork busybox sleepers
(static pods; host networking so that the CNI bridge is not what is measured) renamed into the manifest directory
in one burst, until all N containers run (start-all: the first rename to the last container's startedAt). Then,
after --settle, over --window seconds with the N pods running and nothing else happening:
  - the PLEG relist duration: kubelet_pleg_relist_duration_seconds on the kubelet's /metrics (read-only port),
    the histogram's change over the window: mean (sum ÷ count, exact) and the bucket holding p50 and p99
    (upstream's buckets: ≤5 ms, ≤10 ms, ≤25 ms, ...);
  - the kubelet's CPU seconds per minute (user + system, /proc/PID/stat) and its VmRSS.
Per pod: RSS per pod = (VmRSS with N pods − VmRSS of the same process before its first pod) ÷ N; CPU per pod =
(CPU/min at N − CPU/min at 0 pods, measured once per kubelet over the same window) ÷ N. A per-pod figure that
grows with N beyond --superlinear (1.5×) of the smallest N's is flagged.

Before each N the free memory is checked (each pod is a containerd shim and a sleeper, a few MB): below
--min-free-gb the run stops and says so. An N whose pods do not all run within --start-timeout (900 s) stops the
series there (the larger N are not tried). Every pod is removed after each N, and the runtime emptied, also on a
failure or Ctrl-C. Writes bench/results/scale.json and scale.png.
"""
import argparse
import json
import os
import re
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare  # noqa: E402  (its kubelets, its runtime helpers)
from compare import Bench, log, proc_cpu, proc_mem, running, stopped, wait_quiet, http_get  # noqa: E402
from conftest import NODE, wait_for  # noqa: E402
from harness import private_runtime  # noqa: E402
import results  # noqa: E402

SLEEPER_POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: {name}
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 5
  containers:
  - name: c
    image: docker.io/library/busybox:1.36
    command: ["sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"]
"""

RELIST = "kubelet_pleg_relist_duration_seconds"
BUCKET = re.compile(r'^' + RELIST + r'_bucket\{le="([^"]+)"\} (\S+)$', re.M)


def mem_available_kb():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1])
    return 0


def relist_histogram(s):
    """(buckets [(le, cumulative count)], sum, count) of the kubelet's PLEG relist histogram, None if absent"""
    m = http_get(s.ro_port, "/metrics", timeout=30)
    b = [(float(le), float(v)) for le, v in BUCKET.findall(m)]
    sm = re.search(r'^' + RELIST + r'_sum (\S+)$', m, re.M)
    ct = re.search(r'^' + RELIST + r'_count (\S+)$', m, re.M)
    if not b or not sm or not ct:
        return None
    return b, float(sm.group(1)), float(ct.group(1))


def quantile(q, buckets):
    """the upper bound of the bucket holding the q-th observation (upstream's buckets: 5 ms, 10 ms, 25 ms, ...;
    the quantile is known to that resolution only)"""
    total = buckets[-1][1]
    if total <= 0:
        return None
    for le, c in buckets:
        if c >= q * total:
            return le
    return float("inf")


def relist_delta(h0, h1):
    if not h0 or not h1:
        return None
    buckets = [(le, c1 - c0) for (le, c0), (_, c1) in zip(h0[0], h1[0])]
    n = h1[2] - h0[2]
    if n <= 0:
        return None
    return {"relists": int(n), "mean_ms": round((h1[1] - h0[1]) / n * 1000, 2),
            "p50_le_ms": round(quantile(0.5, buckets) * 1000, 2), "p99_le_ms": round(quantile(0.99, buckets) * 1000, 2)}


class Scale:
    def __init__(self, a, b):
        self.a, self.b, self.rt = a, b, b.rt

    def window(self, s):
        """CPU-s/min, VmRSS and the relist histogram's change over --window seconds"""
        h0 = relist_histogram(s)
        c0, t0 = proc_cpu(s.pid), time.monotonic()
        time.sleep(self.a.window)
        c1, t1 = proc_cpu(s.pid), time.monotonic()
        h1 = relist_histogram(s)
        rss, hwm = proc_mem(s.pid)
        return {"cpu_s_per_min": round((c1 - c0) * 60 / (t1 - t0), 3), "window_s": round(t1 - t0, 1),
                "vmrss_kb": rss, "vmhwm_kb": hwm, "relist": relist_delta(h0, h1)}

    def idle(self, s):
        """the kubelet with no pod at all"""
        time.sleep(self.a.settle)
        res = {"machine": wait_quiet(self.a, f"{s.label} 0 pods"), **self.window(s)}
        log(f"  {s.label:<11} N=0    {res['cpu_s_per_min']:.3f} CPU-s/min, VmRSS {res['vmrss_kb']} kB, relist "
            f"{res['relist']}")
        return res

    def run_n(self, s, n):
        a, rt = self.a, self.rt
        res = {"n": n}
        time.sleep(2)
        res["vmrss_0_kb"] = proc_mem(s.pid)[0]
        names = [f"sc{i}" for i in range(n)]
        s.stage({nm: SLEEPER_POD.format(name=nm) for nm in names})
        res["machine_before"] = wait_quiet(a, f"{s.label} start N={n}")
        res["mem_available_before_mb"] = mem_available_kb() // 1024
        t = s.publish(names)
        t0 = min(t.values())
        last_log = time.monotonic()
        while True:
            up = len(running(rt))
            if up >= n:
                break
            if time.monotonic() - last_log > 30:
                last_log = time.monotonic()
                log(f"  {s.label:<11} N={n:<4} {up} running after {time.time() - t0:.0f} s, "
                    f"{mem_available_kb() // 1024} MB available")
            if time.time() - t0 > a.start_timeout:
                res["error"] = f"only {up} of {n} running after {a.start_timeout:.0f} s"
                break
            if mem_available_kb() < a.min_free_gb * 1024 * 1024:
                res["error"] = f"memory: under {a.min_free_gb} GB available with {up} of {n} running"
                break
            if s.proc.poll() is not None:
                res["error"] = f"{s.label} exited with {s.proc.returncode}"
                break
            time.sleep(2 if n > 100 else 0.5)
        if "error" not in res:
            st = [int(rt.inspect(c["id"])["startedAt"]) / 1e9 for c in running(rt)]
            res["start_all_s"] = round(max(st) - t0, 2)
            res["mem_available_running_mb"] = mem_available_kb() // 1024
            log(f"  {s.label:<11} N={n:<4} start-all {res['start_all_s']:.1f} s "
                f"({res['mem_available_running_mb']} MB available)")
            time.sleep(a.settle)
            res["machine_steady"] = wait_quiet(a, f"{s.label} steady N={n}")
            res.update(self.window(s))
            res["rss_per_pod_kb"] = round((res["vmrss_kb"] - res["vmrss_0_kb"]) / n, 2)
            log(f"  {s.label:<11} N={n:<4} {res['cpu_s_per_min']:.3f} CPU-s/min, VmRSS {res['vmrss_kb']} kB "
                f"({res['rss_per_pod_kb']} kB/pod), relist {res['relist']}")
        else:
            log(f"  {s.label:<11} N={n:<4} STOPPED: {res['error']}")
        t = s.unpublish(names)
        r0 = time.time()
        try:
            wait_for(lambda: stopped(rt), 300 + n, interval=2, msg="all stopped")
            res["remove_stopped_s"] = round(time.time() - r0, 1)
        except AssertionError as e:
            res["remove_note"] = str(e)
        return res


def per_pod(data):
    """the per-pod figures side by side, with the superlinear ones flagged"""
    out = {}
    for kind, series in data["kubelets"].items():
        idle_cpu = (series.get("idle") or {}).get("cpu_s_per_min")  # None when it failed
        rows = []
        for r in series["runs"]:
            if "error" in r or "cpu_s_per_min" not in r:
                continue
            n = r["n"]
            rel = r.get("relist") or {}
            rows.append({
                "n": n,
                "start_all_s": r["start_all_s"], "start_per_pod_ms": round(r["start_all_s"] / n * 1000, 1),
                "relist_mean_ms": rel.get("mean_ms"), "relist_p50_le_ms": rel.get("p50_le_ms"),
                "relist_p99_le_ms": rel.get("p99_le_ms"),
                "relist_us_per_pod": round(rel["mean_ms"] * 1000 / n, 1) if rel.get("mean_ms") is not None else None,
                "vmrss_mb": round(r["vmrss_kb"] / 1024, 1), "rss_per_pod_kb": r["rss_per_pod_kb"],
                "cpu_s_per_min": r["cpu_s_per_min"],
                "cpu_ms_per_min_per_pod": (round((r["cpu_s_per_min"] - idle_cpu) * 1000 / n, 2)
                                           if idle_cpu is not None else None),
                "load1_steady": (r.get("machine_steady") or {}).get("load1"),
            })
        out[kind] = rows
    return out


def flags(rows, limit):
    """per-pod columns whose value at a larger N exceeds limit × the one at the smallest N"""
    found = []
    cols = ("start_per_pod_ms", "relist_us_per_pod", "rss_per_pod_kb", "cpu_ms_per_min_per_pod")
    if len(rows) < 2:
        return found
    base = rows[0]
    for col in cols:
        b = base.get(col)
        if b is None or b <= 0:
            continue
        for r in rows[1:]:
            v = r.get(col)
            if v is not None and v > limit * b:
                found.append(f"{col} at N={r['n']}: {v} vs {b} at N={base['n']} ({v / b:.1f}×)")
    return found


def table(data, pp, limit):
    lines = []
    hdr = (f"{'kubelet':<11}{'N':>6}{'start-all s':>12}{'ms/pod':>8}{'relist mean ms':>15}{'p50':>7}{'p99':>7}"
           f"{'µs/pod':>8}{'VmRSS MB':>10}{'kB/pod':>8}{'CPU s/min':>10}{'CPU ms/min/pod':>15}{'load':>7}")
    lines.append(hdr)
    for kind, rows in pp.items():
        idle = data["kubelets"][kind].get("idle") or {}
        if "error" in idle:
            lines.append(f"{kind:<11}{0:>6}  not measured: {idle['error']}")
        elif idle:
            rel = idle.get("relist") or {}
            lines.append(f"{kind:<11}{0:>6}{'':>12}{'':>8}{fmt(rel.get('mean_ms')):>15}{fmt(rel.get('p50_le_ms'), 0, '≤'):>7}"
                         f"{fmt(rel.get('p99_le_ms'), 0, '≤'):>7}{'':>8}{idle['vmrss_kb'] / 1024:>10.1f}{'':>8}"
                         f"{idle['cpu_s_per_min']:>10.3f}{'':>15}{fmt((idle.get('machine') or {}).get('load1'), 1):>7}")
        for r in rows:
            lines.append(f"{kind:<11}{r['n']:>6}{r['start_all_s']:>12.1f}{r['start_per_pod_ms']:>8.0f}"
                         f"{fmt(r['relist_mean_ms']):>15}{fmt(r['relist_p50_le_ms'], 0, '≤'):>7}{fmt(r['relist_p99_le_ms'], 0, '≤'):>7}"
                         f"{fmt(r['relist_us_per_pod'], 1):>8}{r['vmrss_mb']:>10.1f}{r['rss_per_pod_kb']:>8.1f}"
                         f"{r['cpu_s_per_min']:>10.3f}{fmt(r['cpu_ms_per_min_per_pod']):>15}{fmt(r['load1_steady'], 1):>7}")
        for r in data["kubelets"][kind]["runs"]:
            if "error" in r:
                lines.append(f"{kind:<11}{r['n']:>6}  not measured: {r['error']}")
        f = flags(rows, limit)
        lines.append(f"{kind}: superlinear (> {limit}× the smallest N's per-pod figure): " +
                     ("; ".join(f) if f else "none"))
    return "\n".join(lines)


def fmt(v, digits=2, prefix=""):
    return "—" if v is None else f"{prefix}{v:.{digits}f}"


def chart(pp, sub):
    plt = results.pyplot()
    fig, axes = plt.subplots(1, 4, figsize=(15, 4))
    panels = [("relist_mean_ms", "PLEG relist, mean (ms)"), ("rss_per_pod_kb", "kubelet RSS per pod (kB)"),
              ("cpu_ms_per_min_per_pod", "kubelet CPU per pod (ms per min)"),
              ("start_per_pod_ms", "start-all ÷ N (ms)")]
    for ax, (col, title) in zip(axes, panels):
        for kind, rows in pp.items():
            xs = [r["n"] for r in rows if r.get(col) is not None]
            ys = [r[col] for r in rows if r.get(col) is not None]
            ax.plot(xs, ys, marker="o", color=results.COLORS.get(kind), label=results.LABELS.get(kind, kind))
            for x, y in zip(xs, ys):
                ax.annotate(f"{y:.3g}", (x, y), fontsize=7, ha="center", va="bottom")
        ax.set_xscale("log")
        ax.set_xlabel("pods running (N)")
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=8)
    results.save_png(fig, "scale", sub)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pods", default="30,110,250,1000", help="the N (comma-separated, ascending)")
    ap.add_argument("--kubelets", default="ckubelet", help="ckubelet and/or go (the upstream v1.20.2 kubelet)")
    ap.add_argument("--window", type=float, default=60, help="seconds of each steady window")
    ap.add_argument("--settle", type=float, default=15, help="seconds after all started before the window")
    ap.add_argument("--start-timeout", type=float, default=900, help="seconds for N pods to run, else stop there")
    ap.add_argument("--min-free-gb", type=float, default=3, help="stop when less memory than this is available")
    ap.add_argument("--superlinear", type=float, default=1.5, help="flag a per-pod figure above this × the first")
    ap.add_argument("--no-idle", action="store_true", help="skip the 0-pod window (no CPU per pod then)")
    ap.add_argument("--max-busy", type=float, default=0.15, help="quiet: at most this fraction of the CPUs busy")
    ap.add_argument("--quiet-timeout", type=float, default=60)
    ap.add_argument("--verbosity", type=int, default=0, help="--v of the kubelets")
    ap.add_argument("--net-index", type=int, default=62)
    ap.add_argument("--go-kubelet", help="the upstream kubelet binary (default: scripts/build-kubernetes.sh)")
    ap.add_argument("--report", metavar="JSON", help="print the table (and redraw the chart) of an earlier run")
    a = ap.parse_args()
    if a.report:
        with open(a.report) as f:
            data = json.load(f)
        report(data, a.superlinear, write=False)
        return
    if os.geteuid() != 0:
        sys.exit("scale.py: run as root")
    sizes = sorted(int(x) for x in a.pods.split(",") if x)
    kinds = a.kubelets.split(",")
    if "go" in kinds:
        a.go_kubelet = a.go_kubelet or compare.go_kubelet_binary()
    results.pyplot()
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))

    data = {**results.header(), "options": vars(a), "pod_network": "hostNetwork", "kubelets": {}}
    with private_runtime(a.net_index) as (rt, d):
        b = Bench(a, rt, os.path.join(d, "kubelets"))
        sc = Scale(a, b)
        log(f"scale: private containerd at {rt.endpoint}, {os.cpu_count()} CPUs, N = {sizes}, kubelets {kinds}")
        try:
            for kind in kinds:
                series = data["kubelets"][kind] = {"runs": []}
                if not a.no_idle:
                    series["idle"] = b.run(kind, 110, sc.idle)
                for n in sizes:
                    avail = mem_available_kb() / 1024 / 1024
                    if avail < a.min_free_gb * 2:
                        series["runs"].append({"n": n, "error": f"only {avail:.1f} GB available before starting"})
                        log(f"  {kind} N={n}: not tried, {avail:.1f} GB available")
                        break
                    log(f"{kind}: {n} pods")
                    r = b.run(kind, n, lambda s: sc.run_n(s, n))
                    r.setdefault("n", n)  # Bench.run's own failure ({"error": ...}) does not say which N
                    series["runs"].append(r)
                    results.write_json("scale", data)
                    if "error" in r:
                        break  # the larger N would not hold either
        except KeyboardInterrupt:
            log("interrupted: cleaning up")
        except AssertionError as e:  # a cleanup that timed out (Bench.run's): the figures so far are still printed
            log(f"stopped: {e}")
    report(data, a.superlinear)


def report(data, limit, write=True):
    """the table and the chart (bench/results/scale.png); WRITE: also the figures (scale.json), after a run"""
    pp = per_pod(data)
    data["per_pod"] = pp
    data["superlinear"] = {k: flags(rows, limit) for k, rows in pp.items()}
    m = data["machine"]
    if write:
        results.write_json("scale", data)
    chart(pp, f"{data['date']}, {m['cpus']} CPUs {m['cpu_model']}, {m['containerd']}, hostNetwork sleepers")
    print()
    print(f"{data['date']} · {m['cpus']} CPUs ({m['cpu_model']}), {m['memory_gb']} GB, kernel {m['kernel']}, "
          f"{m['containerd']}, ckubelet {m['ckubelet_commit']}; pods: hostNetwork busybox sleepers")
    print(table(data, pp, limit))
    written = f"figures: {results.RESULTS}/scale.json, " if write else ""
    print(f"\n{written}chart: {results.RESULTS}/scale.png")


if __name__ == "__main__":
    main()
