#!/usr/bin/python3
"""Soak: ckubelet under steady churn for a long time; its memory and file descriptors must stay flat.

  /usr/bin/python3 bench/soak.py   (as root, after `ninja -C build`) [--seconds 600] [--rate 2] [--lifetime 10]

One private containerd (bench/harness.py) and one ckubelet (CKUBELET_BUILD, default build/). For --seconds, a
new static pod every 1/--rate s, each deleted --lifetime s after it was written; each pod is a busybox httpd
with an HTTP readiness probe and a TCP liveness probe (compare.py's probe pod), period 1 s. Meanwhile a poller
GETs /pods, /stats/summary, /metrics and /metrics/cadvisor on the read-only port, one after the other, about
once a second. ckubelet's VmRSS, open fds (/proc/PID/fd) and CPU time are sampled every --sample s. After the
warm-up (2 minutes, or a third of the run if shorter) the figures: RSS and fds at the end of the warm-up and at
the end, drift, least-squares slope per minute, maximum; CPU s/min; pods started and seen Ready.
Then every manifest is removed and, once ckubelet has converged, the run checks (and prints) that nothing is
left behind: no mount under the root dir, no pod cgroup under the cgroup root, no sandbox or container in the
runtime, no pod directory. Writes bench/results/soak.json and soak.png (RSS and fds over time); exits 1 when
something was left behind or ckubelet did not exit cleanly on SIGTERM.
"""
import argparse
import collections
import json
import os
import shlex
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from harness import private_runtime  # noqa: E402  (it puts tests/e2e on the path)
import conftest  # noqa: E402
from compare import PROBE_POD, http_get, log, pct, proc_cpu, proc_mem  # noqa: E402
from conftest import NODE, Kubelet, free_port, wait_for  # noqa: E402
import results  # noqa: E402

ENDPOINTS = ["/pods", "/stats/summary", "/metrics", "/metrics/cadvisor"]


def fd_count(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def rss_anon(pid):
    """RssAnon in kB: the heap and stacks, without the mapped binary and libraries (RssFile)"""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1])
    return None


def fd_kinds(pid):
    """what the open fds are: 'socket', 'pipe', 'anon_inode:[eventfd]', a path's directory... -> count"""
    out = collections.Counter()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            t = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if t.startswith(("socket:", "pipe:")):
            t = t.split(":")[0]
        elif t.startswith("/"):
            t = os.path.dirname(t)
        out[t] += 1
    return dict(out.most_common())


def slope(points):
    """least-squares slope of [(t_minutes, y)]"""
    if len(points) < 3:
        return None
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return round(sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / den, 2) if den else None


def leftovers(k, rt):
    """what ckubelet left behind: mounts under its root dir, pod cgroups under its cgroup root, sandboxes and
    containers in the runtime, pod directories"""
    root = os.path.realpath(k.root)
    mounts = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            mnt = line.split()[4]
            if mnt == root or mnt.startswith(root + "/"):
                mounts.append(mnt)
    cgroups = []
    for h in conftest.cgroup_hierarchies():
        top = h + k.cgroup_root
        for d, dirs, _ in os.walk(top) if os.path.isdir(top) else []:
            for x in dirs:
                if x.startswith("pod"):
                    cgroups.append(os.path.join(d, x))
    pods_dir = os.path.join(k.root, "pods")
    return {
        "mounts": mounts,
        "pod_cgroups": cgroups,
        "sandboxes": [p["metadata"]["name"] for p in rt.pods()],
        "containers": [c["metadata"]["name"] for c in rt.containers()],
        "pod_dirs": sorted(os.listdir(pods_dir)) if os.path.isdir(pods_dir) else [],
    }


class Poller(threading.Thread):
    """The API clients: each endpoint in turn on the read-only port, then a pause (--poll s per round); also
    the pods seen Ready and their containers' restarts (liveness kills)."""

    def __init__(self, port, interval):
        super().__init__(daemon=True)
        self.port, self.interval = port, interval
        self.done = threading.Event()
        self.ok = collections.Counter()
        self.errors = collections.Counter()
        self.last_error = {}
        self.latency = collections.defaultdict(list)
        self.ready = set()
        self.restarts = {}

    def pods(self, body):
        for p in json.loads(body).get("items") or []:
            name = p["metadata"]["name"]
            st = p.get("status") or {}
            if any(c.get("type") == "Ready" and c.get("status") == "True" for c in st.get("conditions") or []):
                self.ready.add(name)
            n = sum(c.get("restartCount", 0) for c in st.get("containerStatuses") or [])
            self.restarts[name] = max(n, self.restarts.get(name, 0))

    def run(self):
        while not self.done.is_set():
            t_round = time.monotonic()
            for ep in ENDPOINTS:
                t0 = time.monotonic()
                try:
                    body = http_get(self.port, ep, timeout=30)
                    self.latency[ep].append(time.monotonic() - t0)
                    self.ok[ep] += 1
                    if ep == "/pods":
                        self.pods(body)
                except Exception as e:
                    self.errors[ep] += 1
                    self.last_error[ep] = str(e)
            self.done.wait(max(0.0, self.interval - (time.monotonic() - t_round)))


class Starts(threading.Thread):
    """Watches the runtime (ckubelet-crictl ps, every 2 s): the pods whose container was seen running."""

    def __init__(self, rt):
        super().__init__(daemon=True)
        self.rt = rt
        self.done = threading.Event()
        self.started = set()

    def run(self):
        while not self.done.is_set():
            try:
                for c in self.rt.containers():
                    if c["state"] == "CONTAINER_RUNNING":
                        self.started.add(c["labels"].get("io.kubernetes.pod.name", ""))
            except Exception:
                pass
            self.done.wait(2)


def chart(out):
    plt = results.pyplot()
    sm = out["samples"]
    t = [x["t"] / 60 for x in sm]
    fig, axs = plt.subplots(1, 2, figsize=(12, 4.5))
    axs[0].plot(t, [x["rss_kb"] / 1024 for x in sm], color=results.COLORS["ckubelet"])
    axs[0].set_ylabel("VmRSS (MB)")
    axs[0].set_ylim(bottom=0)
    axs[0].set_title(f"ckubelet VmRSS, churn {out['rate_per_s']} pods/s with probes + API polling", fontsize=10)
    axs[1].plot(t, [x["fds"] for x in sm], color=results.COLORS["ckubelet"])
    axs[1].set_ylabel("open fds")
    axs[1].set_ylim(bottom=0)
    axs[1].set_title("ckubelet open file descriptors", fontsize=10)
    for ax in axs:
        ax.axvline(out["warmup_s"] / 60, color="#999999", linestyle="--", linewidth=1)
        ax.set_xlabel("minutes (dashed: end of the warm-up)")
    results.save_png(fig, "soak", f"{out['date']}, {out['machine']['cpus']} CPUs {out['machine']['cpu_model']}, "
                     f"{out['machine']['containerd']}, ckubelet {out['machine']['ckubelet_commit']}")


def run(a, k, rt, ro_port, out, warm):
    """the churn, the figures and the check for leftovers; sets out['bad']"""
    bad = False
    wait_for(lambda: http_get(k.healthz_port, "/healthz", timeout=2).strip() == "ok", 120, interval=0.2,
             msg="ckubelet healthz")
    pid = k.proc.pid
    log(f"soak: {a.rate} pods/s, each living {a.lifetime} s, for {a.seconds:.0f} s; ckubelet {conftest.CKUBELET} "
        f"pid {pid}, containerd at {rt.endpoint}, {os.cpu_count()} CPUs, load {out['load1_before']}")
    poller, starts = Poller(ro_port, a.poll), Starts(rt)
    poller.start()
    starts.start()
    samples, alive, written = [], collections.deque(), 0
    fds_at = {}
    t_begin = time.time()
    t_end = t_begin + a.seconds
    next_sample = t_begin
    try:
        while True:
            now = time.time()
            if now >= t_end:
                break
            if now >= next_sample:
                rss, _ = proc_mem(pid)
                samples.append({"t": round(now - t_begin, 1), "rss_kb": rss, "rss_anon_kb": rss_anon(pid),
                                "fds": fd_count(pid),
                                "cpu_s": round(proc_cpu(pid), 2), "pods": len(alive)})
                if "warmup_end" not in fds_at and now - t_begin >= warm:
                    fds_at["warmup_end"] = fd_kinds(pid)
                if len(samples) % 12 == 1:
                    s = samples[-1]
                    log(f"  t={s['t']:6.0f} s  VmRSS {s['rss_kb']} kB  fds {s['fds']}  CPU {s['cpu_s']} s  "
                        f"written {written}  started {len(starts.started)}  Ready {len(poller.ready)}  "
                        f"load {os.getloadavg()[0]:.1f}")
                next_sample += a.sample
            while t_begin + written / a.rate <= now:
                nm = f"s{written}"
                tmp = os.path.join(k.manifests, f".{nm}.yaml")
                with open(tmp, "w") as f:
                    f.write(PROBE_POD.format(name=nm, delay=a.liveness_delay))
                os.rename(tmp, os.path.join(k.manifests, f"{nm}.yaml"))
                alive.append((time.time(), nm))
                written += 1
            while alive and alive[0][0] + a.lifetime <= now:
                _, nm = alive.popleft()
                os.unlink(os.path.join(k.manifests, f"{nm}.yaml"))
            nxt = min(t_begin + written / a.rate, next_sample,
                      alive[0][0] + a.lifetime if alive else t_end, t_end)
            time.sleep(max(0.0, nxt - time.time()))
        rss, _ = proc_mem(pid)
        samples.append({"t": round(time.time() - t_begin, 1), "rss_kb": rss, "rss_anon_kb": rss_anon(pid),
                    "fds": fd_count(pid),
                        "cpu_s": round(proc_cpu(pid), 2), "pods": len(alive)})
        fds_at["end"] = fd_kinds(pid)
    finally:
        poller.done.set()
        starts.done.set()
        poller.join(60)
        starts.join(60)

    # figures
    after = [s for s in samples if s["t"] >= warm] or samples[-1:]
    w, e = after[0], samples[-1]
    secs = e["t"] - samples[0]["t"]
    out.update({
        "pods_written": written,
        "pods_started": len(starts.started - {""}),
        "pods_ready": len(poller.ready),
        "container_restarts": sum(poller.restarts.values()),
        "cpu_s_per_min": round((e["cpu_s"] - samples[0]["cpu_s"]) * 60 / secs, 3) if secs > 0 else None,
        "rss_warmup_end_kb": w["rss_kb"], "rss_end_kb": e["rss_kb"], "rss_drift_kb": e["rss_kb"] - w["rss_kb"],
        "rss_slope_kb_per_min": slope([(s["t"] / 60, s["rss_kb"]) for s in after]),
        "rss_max_kb": max(s["rss_kb"] for s in samples),
        "rss_anon_warmup_end_kb": w["rss_anon_kb"], "rss_anon_end_kb": e["rss_anon_kb"],
        "rss_anon_slope_kb_per_min": slope([(s["t"] / 60, s["rss_anon_kb"]) for s in after]),
        "fds_warmup_end": w["fds"], "fds_end": e["fds"], "fds_drift": e["fds"] - w["fds"],
        "fds_slope_per_min": slope([(s["t"] / 60, s["fds"]) for s in after]),
        "fds_max": max(s["fds"] for s in samples),
        "fd_kinds": fds_at,
        "api": {ep: {"ok": poller.ok[ep], "errors": poller.errors[ep],
                     "p50_ms": round(pct(poller.latency[ep], 50) * 1000, 1) if poller.latency[ep] else None,
                     "p99_ms": round(pct(poller.latency[ep], 99) * 1000, 1) if poller.latency[ep] else None,
                     "last_error": poller.last_error.get(ep)} for ep in ENDPOINTS},
        "load1_end": round(os.getloadavg()[0], 2),
        "samples": samples,
    })
    print(f"soak: {a.seconds:.0f} s of churn at {a.rate} pods/s ({written} pods written, "
          f"{out['pods_started']} seen running, {out['pods_ready']} seen Ready, "
          f"{out['container_restarts']} container restarts), warm-up {warm:.0f} s")
    print(f"  VmRSS  warm-up end {w['rss_kb']} kB, end {e['rss_kb']} kB: drift {out['rss_drift_kb']:+d} kB, "
          f"slope {out['rss_slope_kb_per_min']} kB/min, max {out['rss_max_kb']} kB")
    print(f"  RssAnon (heap) warm-up end {w['rss_anon_kb']} kB, end {e['rss_anon_kb']} kB, "
          f"slope {out['rss_anon_slope_kb_per_min']} kB/min")
    print(f"  fds    warm-up end {w['fds']}, end {e['fds']}: drift {out['fds_drift']:+d}, "
          f"slope {out['fds_slope_per_min']} fds/min, max {out['fds_max']}")
    print(f"  CPU    {out['cpu_s_per_min']} s/min")
    for ep, v in out["api"].items():
        print(f"  GET {ep:<20} {v['ok']} ok, {v['errors']} failed, p50 {v['p50_ms']} ms, p99 {v['p99_ms']} ms"
              + (f" (last error: {v['last_error']})" if v["errors"] else ""))

    # remove everything; ckubelet must leave nothing behind
    t0 = time.time()
    for _, nm in alive:
        os.unlink(os.path.join(k.manifests, f"{nm}.yaml"))
    left = {}

    def clean():
        left.update(leftovers(k, rt))
        return not any(left.values())
    try:
        wait_for(clean, a.converge_timeout, interval=2, msg="nothing left behind")
    except AssertionError:
        bad = True
    out["converge_s"] = round(time.time() - t0, 1)
    out["left_behind"] = left
    out["fds_after_cleanup"] = fd_count(pid)
    rss, _ = proc_mem(pid)
    out["rss_after_cleanup_kb"] = rss
    print(f"  after removing every pod ({out['converge_s']} s): VmRSS {rss} kB, fds {out['fds_after_cleanup']}")
    for what, v in left.items():
        print(f"  left behind: {what:<12} {len(v)}" + (f"  {v[:5]}" if v else ""))
    rc = k.term(30)
    out["exit_status"] = rc
    print(f"  ckubelet exit status on SIGTERM: {rc}")
    out["bad"] = bad or rc != 0



def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=600, help="how long the churn lasts")
    ap.add_argument("--rate", type=float, default=2, help="pods created (and deleted) per second")
    ap.add_argument("--lifetime", type=float, default=10, help="seconds from a pod's creation to its deletion")
    ap.add_argument("--poll", type=float, default=1, help="seconds per round of API requests")
    ap.add_argument("--sample", type=float, default=5, help="seconds between samples of RSS, fds and CPU")
    ap.add_argument("--liveness-delay", type=int, default=2, help="initialDelaySeconds of the liveness probe")
    ap.add_argument("--converge-timeout", type=float, default=300,
                    help="how long to wait, after the last manifest is removed, for nothing to be left")
    ap.add_argument("--verbosity", type=int, default=0, help="ckubelet's --v")
    ap.add_argument("--net-index", type=int, default=66)
    ap.add_argument("--wrapper", default="",
                    help="a command ckubelet runs under, to find a leak: e.g. 'valgrind --tool=massif "
                    "--massif-out-file=/tmp/massif.out' (the figures are then the wrapper's)")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("soak.py: run as root")
    for tool in (conftest.CKUBELET, conftest.CRICTL):
        if not os.access(tool, os.X_OK):
            sys.exit(f"soak.py: {tool} is not built (meson setup build && ninja -C build)")
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    results.pyplot()  # install matplotlib now rather than after the run

    out = {**results.header(), "rate_per_s": a.rate, "lifetime_s": a.lifetime, "seconds": a.seconds,
           "options": vars(a), "load1_before": round(os.getloadavg()[0], 2)}
    warm = min(120.0, a.seconds / 3)
    out["warmup_s"] = warm
    with private_runtime(a.net_index) as (rt, d):
        k = Kubelet(rt, os.path.join(d, "kubelet"))
        if a.wrapper:
            plain = k.args
            k.args = lambda: shlex.split(a.wrapper) + plain()
        ro_port = free_port()
        k.extra_args = ["--v", str(a.verbosity), "--read-only-port", str(ro_port),
                        "--max-pods", str(110 + int(a.rate * a.lifetime))]
        k.start()
        try:
            run(a, k, rt, ro_port, out, warm)
        finally:
            if k.alive():  # interrupted: SIGTERM first (a wrapper such as massif writes its output then)
                k.proc.terminate()
                try:
                    k.proc.wait(60)
                except subprocess.TimeoutExpired:
                    k.proc.kill()
                    k.proc.wait(10)
        if "samples" in out:  # written before the harness cleans up, which may be slow or fail on a swamped machine
            results.write_json("soak", out)
            chart(out)
            print(f"wrote {os.path.join(results.RESULTS, 'soak.json')} and soak.png")
    sys.exit(1 if out["bad"] else 0)


if __name__ == "__main__":
    main()
