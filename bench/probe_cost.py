#!/usr/bin/python3
"""The probe engine against the kernel's floor, per probe.

  /usr/bin/python3 bench/probe_cost.py   (as root, after ninja -C build) [--pods 110] [--seconds 30]
                                          [--ops 20000] [--settle 30] [--callgrind] [--callgrind-pods 20] [--hold]

On a private containerd, ckubelet starts N busybox httpd pods (port 8080, no probes: ckubelet only keeps them
running), then --settle seconds pass (starting the pods loads the machine). Against their pod IPs, one after the
other:

  floor   build/tools/ckubelet-probe-floor: --ops TCP connects (SO_LINGER 0 close) and --ops HTTP GETs
          (Connection: close), back to back, round-robin over the pods: the kernel's work per probe and the
          least user-space work a non-blocking prober needs (CPU µs per operation, user and system, from
          getrusage; system calls per operation by construction);
  paced floor  the same operations at the engine's pace (--rate 2 N per second, one mode after the other,
          --seconds each, a nanosleep until each is due): the same work spread over time as a prober must
          spread it (caches and branch predictors no longer warm from the operation before), with one wake-up
          per operation where the engine runs the probes of a 100 ms slot together: not a lower bound, but what
          the simplest paced loop pays;
  engine  build/tools/ckubelet-probe-bench: ckubelet's prober (src/prober: the manager, its timers, the HTTP and
          TCP handlers) alone on an event loop, each pod with an HTTP readiness and a TCP liveness probe every
          second (2 N probes/s, the work of bench/probes.py): CPU µs per probe, system calls per probe (perf's
          raw_syscalls:sys_enter tracepoint, exact), how late the probes started (the prober's histogram);
  --callgrind  the engine again under valgrind's callgrind with --callgrind-pods pods (callgrind runs code
          ~50× slower): user-space instructions per probe (exact and repeatable, whatever the load) and the
          functions that cost the most.

CPU times are noise on a loaded machine: every figure is printed with the machine's load. The instruction and
system call counts are not. Writes bench/results/probe_cost.json and .png.
--hold: start the pods, print their IPs and wait (Enter) before cleaning up, for experiments by hand.
"""
import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
from harness import private_runtime  # noqa: E402
from conftest import BUILD, Kubelet, wait_for  # noqa: E402
import results  # noqa: E402

FLOOR = os.path.join(BUILD, "tools", "ckubelet-probe-floor")
ENGINE = os.path.join(BUILD, "tools", "ckubelet-probe-bench")

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
"""


def loadavg():
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def pod_ips(rt, n):
    ips = []
    for p in rt.pods():
        if p["state"] != "SANDBOX_READY":
            continue
        ip = rt.inspectp(p["id"]).get("network", {}).get("ip")
        if ip:
            ips.append(ip)
    running = [c for c in rt.containers() if c["state"] == "CONTAINER_RUNNING"]
    return sorted(ips) if len(ips) == n and len(running) == n else None


def http_ok(ips):
    """every httpd answers (one GET each through the floor tool)"""
    out = subprocess.run([FLOOR, "--mode", "http", "--ops", str(len(ips))] + [f"{ip}:8080" for ip in ips],
                         capture_output=True, text=True).stdout
    return re.search(r", 0 failed", out) is not None


FLOOR_LINE = re.compile(r"^(tcp|http) .*CPU ([\d.]+) µs/op \(user ([\d.]+), sys ([\d.]+)\), wall ([\d.]+) µs/op, "
                        r"([\d.]+) syscalls/op, (\d+) failed", re.M)


def run_floor(ips, ops, rate=0):
    cmd = [FLOOR, "--ops", str(ops)] + (["--rate", str(rate)] if rate else []) + [f"{ip}:8080" for ip in ips]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    print("  " + out.strip().replace("\n", "\n  "))
    res = {}
    for m in FLOOR_LINE.finditer(out):
        res[m.group(1)] = {"cpu_us": float(m.group(2)), "user_us": float(m.group(3)), "sys_us": float(m.group(4)),
                           "wall_us": float(m.group(5)), "syscalls": float(m.group(6)), "failed": int(m.group(7))}
    return res


def parse_engine(out):
    res = {}
    m = re.search(r"probes run: (\d+) in ([\d.]+) s \(([\d.]+)/s\); (\d+) successful, (\d+) failed", out)
    if m:
        res.update(probes=int(m.group(1)), seconds=float(m.group(2)), probes_per_s=float(m.group(3)),
                   successful=int(m.group(4)), failed=int(m.group(5)))
    m = re.search(r"CPU per probe: ([\d.]+) µs \(user ([\d.]+), sys ([\d.]+)\)", out)
    if m:
        res.update(cpu_us=float(m.group(1)), user_us=float(m.group(2)), sys_us=float(m.group(3)))
    m = re.search(r"lateness .*?: (\d+) starts, p50 <= ([\d.inf]+) s, p99 <= ([\d.inf]+) s, max ([\d.]+) s", out)
    if m:
        res["lateness"] = {"starts": int(m.group(1)), "p50_le_s": float(m.group(2)), "p99_le_s": float(m.group(3)),
                           "max_s": float(m.group(4))}
    return res


def run_engine(ips, seconds, warmup=5):
    """the engine with perf counting its system calls after the warm-up"""
    cmd = [ENGINE, "--seconds", str(seconds), "--warmup", str(warmup)] + ips
    perf = ["perf", "stat", "-x", ",", "-D", str(warmup * 1000 + 200), "-e",
            "raw_syscalls:sys_enter,syscalls:sys_enter_connect,syscalls:sys_enter_epoll_wait"]
    p = subprocess.run(perf + ["--"] + cmd, capture_output=True, text=True)
    if p.returncode != 0 and "probes run" not in p.stdout:  # perf unusable here: without the counts
        p = subprocess.run(cmd, capture_output=True, text=True, check=True)
    print("  " + p.stdout.strip().replace("\n", "\n  "))
    res = parse_engine(p.stdout)
    counts = {}
    for line in p.stderr.splitlines():
        f = line.split(",")
        if len(f) > 2 and f[0].strip().isdigit():
            counts[f[2]] = int(f[0])
    if counts and res.get("probes"):
        res["syscalls_per_probe"] = round(counts.get("raw_syscalls:sys_enter", 0) / res["probes"], 2)
        res["epoll_waits_per_probe"] = round(counts.get("syscalls:sys_enter_epoll_wait", 0) / res["probes"], 2)
        res["connects"] = counts.get("syscalls:sys_enter_connect")
        print(f"  system calls per probe: {res['syscalls_per_probe']} (perf raw_syscalls:sys_enter), "
              f"epoll_wait per probe {res['epoll_waits_per_probe']}")
    return res


def run_callgrind(ips, seconds):
    d = tempfile.mkdtemp(prefix="ckubelet-callgrind-", dir="/var/tmp")
    out_file = os.path.join(d, "callgrind.out")
    cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out_file}", ENGINE, "--seconds", str(seconds),
           "--warmup", "5"] + ips
    p = subprocess.run(cmd, capture_output=True, text=True, check=True)
    print("  " + p.stdout.strip().replace("\n", "\n  "))
    res = parse_engine(p.stdout)
    dumps = [f for f in glob.glob(out_file + "*") if f != out_file]
    window = None
    for f in dumps:
        with open(f, errors="replace") as fh:
            text = fh.read()
        if "window" in text.split("\n\n", 1)[0] or re.search(r"^trigger: .*window", text, re.M):
            window = f
    if window is None and dumps:
        window = sorted(dumps)[0]
    if not window:
        print("  callgrind wrote no dump of the window")
        return res
    with open(window, errors="replace") as fh:
        m = re.search(r"^(?:summary|totals): (\d+)", fh.read(), re.M)
    ir = int(m.group(1)) if m else None
    res["instructions"] = ir
    if ir and res.get("probes"):
        res["instructions_per_probe"] = round(ir / res["probes"])
        print(f"  user-space instructions per probe: {res['instructions_per_probe']} "
              f"({ir} over {res['probes']} probes, callgrind)")
    # --auto=no: the function list only (valgrind 3.19 annotates the sources by default, whose lines look alike);
    # the 100% lines are the call chain down to the loop (main, event_base_dispatch, libc's start), not self costs
    ann = subprocess.run(["callgrind_annotate", "--auto=no", "--inclusive=no", "--threshold=100", window],
                         capture_output=True, text=True).stdout
    top = [line for line in ann.splitlines()
           if re.match(r"^\s*[\d,]+ \(", line) and "(100.0%)" not in line][:25]
    res["top_functions"] = [line.strip() for line in top]
    print("  top functions (self, callgrind):\n    " + "\n    ".join(res["top_functions"][:15]))
    return res


FLOORS = (("floor", "floor"), ("paced_floor", "paced"))  # the key in the results, its label


def floor_mean(floor):
    """CPU µs of a mean probe (one TCP, one HTTP) by a floor's figures; None when it lacks one of them"""
    if "tcp" in floor and "http" in floor:
        return (floor["tcp"]["cpu_us"] + floor["http"]["cpu_us"]) / 2
    return None


def save(out):
    results.write_json("probe_cost", out)
    plt = results.pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    labels, values = [], []
    for key, name in FLOORS:
        for mode in ("tcp", "http"):
            if mode in out.get(key, {}):
                labels.append(f"{name} {mode}")
                values.append(out[key][mode]["cpu_us"])
    if out.get("engine", {}).get("cpu_us") is not None:
        for key, name in FLOORS:
            f = floor_mean(out.get(key, {}))
            if f is not None:
                labels.append(f"{name}\n(tcp+http)/2")
                values.append(f)
        labels.append("ckubelet prober")
        values.append(out["engine"]["cpu_us"])
    bars = ax.bar(range(len(values)), values, color=["#7f7f7f"] * (len(values) - 1) + ["#1f77b4"])
    for b, v in zip(bars, values):
        ax.annotate(f"{v:.0f}", (b.get_x() + b.get_width() / 2, b.get_height()), ha="center", va="bottom",
                    fontsize=8)
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, fontsize=8)
    ax.set_ylabel("CPU µs per probe (user + system)")
    ax.set_title(f"probe cost, {out['pods']} pods (load {out.get('load_before')})", fontsize=10)
    results.save_png(fig, "probe_cost", f"{out['date']}, {out['machine']['cpus']} CPUs {out['machine']['cpu_model']}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pods", type=int, default=110)
    ap.add_argument("--seconds", type=int, default=30, help="the engine's measuring window")
    ap.add_argument("--ops", type=int, default=20000, help="operations per floor mode")
    ap.add_argument("--settle", type=int, default=30,
                    help="seconds between the last pod answering and the floor (the start of N pods loads the machine)")
    ap.add_argument("--callgrind", action="store_true")
    ap.add_argument("--callgrind-pods", type=int, default=20)
    ap.add_argument("--callgrind-seconds", type=int, default=20)
    ap.add_argument("--hold", action="store_true")
    a = ap.parse_args()
    n = a.pods
    out = {**results.header(), "pods": n}

    with private_runtime(93) as (rt, d):  # 90-99: never an e2e session's bridge (pid % 90)
        k = Kubelet(rt, os.path.join(d, "kubelet"))
        k.extra_args = ["--v", "1", "--max-pods", str(max(n, 110))]
        k.start()
        try:
            print(f"probe cost: {n} httpd pods on containerd at {rt.endpoint}, {os.cpu_count()} CPUs")
            for i in range(n):
                k.write(f"p{i}.yaml", POD.format(name=f"p{i}"))
            ips = wait_for(lambda: pod_ips(rt, n), 900, interval=2, msg=f"{n} pods running with an IP")
            wait_for(lambda: http_ok(ips), 120, interval=1, msg="every httpd answering")
            print(f"  {len(ips)} pods running, {ips[0]} … {ips[-1]}")
            if a.hold:
                print("  endpoints: " + " ".join(f"{ip}:8080" for ip in ips))
                input("  holding; Enter to clean up ")
                return
            time.sleep(a.settle)
            out["load_before"] = loadavg()
            print(f"floor (load {out['load_before']}):")
            out["floor"] = run_floor(ips, a.ops)
            rate = 2 * len(ips)
            out["load_paced_floor"] = loadavg()
            print(f"paced floor, {rate} operations per second (load {out['load_paced_floor']}):")
            out["paced_floor"] = run_floor(ips, rate * a.seconds, rate)
            out["load_engine"] = loadavg()
            print(f"engine, {n} pods (load {out['load_engine']}):")
            out["engine"] = run_engine(ips, a.seconds)
            f, pf = floor_mean(out["floor"]), floor_mean(out["paced_floor"])
            if f and out["engine"].get("cpu_us"):
                out["engine_over_floor"] = round(out["engine"]["cpu_us"] / f, 2)
                print(f"  engine ÷ floor (mean of a TCP and an HTTP probe): {out['engine_over_floor']} "
                      f"(CPU time on a machine at load {out['load_engine']}: indicative only)")
            if pf and out["engine"].get("cpu_us"):
                out["engine_over_paced_floor"] = round(out["engine"]["cpu_us"] / pf, 2)
                print(f"  engine ÷ paced floor: {out['engine_over_paced_floor']}")
            if a.callgrind:
                cips = ips[:a.callgrind_pods]
                print(f"engine under callgrind, {len(cips)} pods:")
                out["callgrind"] = run_callgrind(cips, a.callgrind_seconds)
            save(out)
        finally:
            for i in range(n):
                try:
                    k.remove(f"p{i}.yaml")
                except FileNotFoundError:
                    pass
            try:
                wait_for(lambda: not rt.pods(), 600, interval=1, msg="pods removed")
            except AssertionError as e:
                print(e)
            k.term(60)


if __name__ == "__main__":
    main()
