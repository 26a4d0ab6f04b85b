#!/usr/bin/python3
"""ckubelet against the upstream Go kubelet (v1.37.2 by default, or v1.20.2 with --go-version; built by
scripts/build-kubernetes.sh) and against the CRI floor (tools/cri-floor.c), on one private containerd, one after the other, on identical work.

  /usr/bin/python3 bench/compare.py            (as root, after `ninja -C build`; see bench/README.md)
  /usr/bin/python3 bench/compare.py --quick    (a short development run: small N, short windows)

Scenarios (--only picks some):
  start   for each N in --pods: N static pods at once (manifests renamed into the directory in one burst) until
          all run: from the first rename to the last container's startedAt (per containerd); per pod, its own
          rename to its startedAt. The CRI floor starts the same pods with only the calls a start needs.
          Then, with the N pods running: the kubelet's CPU seconds per minute over --steady seconds, VmRSS,
          VmHWM, PSS and USS (smaps_rollup). Then all manifests removed at once: until no container runs and no
          sandbox is ready ("stopped"), and until the runtime is empty ("empty").
  probes  --probe-pods pods, each an httpd with an HTTP readiness and a TCP liveness probe, period 1 s: the
          kubelet's CPU per minute, the probes per second it actually ran (prober_probe_total on its
          /metrics/probes, read-only port), and how regularly they ran (the interval between two HTTP probes
          of one pod as seen by the pod: httpd -v logs every request, containerd stamps every log line).
  churn   pods created and deleted at --churn-rate per second for --churn-seconds (each lives
          --churn-lifetime s): pods per second started, start and stop latency, CPU, RSS drift after warm-up.
  api     API pods through the real apiserver: create → Ready, delete → gone, p50/p99 over --api-pods.
          (Needs tests/e2e/controlplane.py; skipped with a note until it exists.)

Before every measurement the runtime must be empty and the machine quiet (CPU busy fraction under
--max-busy, waited for up to --quiet-timeout; if it never gets quiet the figure is kept and flagged). Every
scenario writes bench/results/compare-<scenario>.json and .png; the table goes to stdout and to
bench/results/compare.md.
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
# the upstream kubelet compared against, and the control plane of the API scenario: --go-version, v1.37.2 (the tests'
# Go module, scripts/k8s) by default, or v1.20.2 (Debian's source, scripts/build-kubernetes-1.20.sh). Read before
# conftest and controlplane are imported: both take the version from the environment.
GO_VERSIONS = ("v1.37.2", "v1.20.2")


def _go_version_arg(argv):
    for i, x in enumerate(argv):
        if x == "--go-version" and i + 1 < len(argv):
            return argv[i + 1]
        if x.startswith("--go-version="):
            return x.split("=", 1)[1]
    return None


if _go_version_arg(sys.argv[1:]):
    os.environ["CKUBELET_K8S_VERSION"] = _go_version_arg(sys.argv[1:])
os.environ.setdefault("CKUBELET_K8S_VERSION", GO_VERSIONS[0])
GO_VERSION = os.environ["CKUBELET_K8S_VERSION"]
import conftest  # noqa: E402
from conftest import NODE, Kubelet, Runtime, free_port, make_cgroup_root, remove_cgroup_root, wait_for  # noqa: E402
import results  # noqa: E402

FLOOR = os.path.join(conftest.BUILD, "tools", "ckubelet-cri-floor")
SLEEPER = ["sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"]

SLEEP_POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: {name}
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - name: c
    image: docker.io/library/busybox:1.36
    command: {cmd}
"""

PROBE_POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: {name}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: web
    image: docker.io/library/busybox:1.36
    command: [sh, -c, "mkdir -p /www && echo ok > /www/index.html && exec httpd -f -v -p 8080 -h /www"]
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
      initialDelaySeconds: {delay}
"""
LIVENESS_DELAY = 15  # s: with 110 pods starting at once httpd may need seconds to listen (see bench/probes.py)


API_NAMESPACE = "bench-"  # + the kubelet's name


def log(msg):
    print(time.strftime("%H:%M:%S ") + msg, flush=True)


def pct(xs, p):
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


# ------------------------------------------------------------------------------------------------ the machine

def proc_cpu(pid):
    """user + system CPU seconds of the process and its waited-for children"""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def proc_status_kb(pid, keys):
    """the fields KEYS of /proc/PID/status (memory figures, kB), read at one moment; a missing one is None"""
    out = dict.fromkeys(keys)
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in out:
                out[k] = int(v.split()[0])
    return out


def proc_mem(pid):
    """(VmRSS, VmHWM) in kB"""
    m = proc_status_kb(pid, ("VmRSS", "VmHWM"))
    return m["VmRSS"], m["VmHWM"]


def smaps_rollup_kb(pid):
    """/proc/PID/smaps_rollup's figures in kB: Pss (each page divided among the processes that map it: what the
    node pays for this process), Private_Clean + Private_Dirty (USS: what its exit would free); {} when unreadable"""
    out = {}
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                k, _, v = line.partition(":")
                if v.strip().endswith("kB"):
                    out[k] = int(v.split()[0])
    except OSError:
        return {}
    return out


def proc_mem_detail(pid, top=10):
    """what VmRSS is made of: RssAnon (heap, stacks, written pages of mappings) and RssFile (pages of the binary
    and the shared libraries mapped in, shared with every other process mapping them), in kB, and the largest
    mappings by resident size ([name, kB], from /proc/PID/smaps; "[anon]" for anonymous mappings); also VmRSS and
    VmHWM, read with them"""
    out = proc_status_kb(pid, ("VmRSS", "VmHWM", "RssAnon", "RssFile"))
    by = {}
    name = ""
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            first = line.split(None, 5)
            if re.match(r"^[0-9a-f]+-[0-9a-f]+$", first[0]):
                name = first[5].strip() if len(first) > 5 else "[anon]"
            elif first[0] == "Rss:":
                by[name] = by.get(name, 0) + int(first[1])
    roll = smaps_rollup_kb(pid)
    return {"vmrss_kb": out["VmRSS"], "vmhwm_kb": out["VmHWM"],
            "rss_anon_kb": out["RssAnon"], "rss_file_kb": out["RssFile"],
            "pss_kb": roll.get("Pss"),
            "uss_kb": roll.get("Private_Clean", 0) + roll.get("Private_Dirty", 0) if roll else None,
            "smaps_top_kb": sorted(([n, v] for n, v in by.items() if v), key=lambda x: -x[1])[:top]}


def cpu_times():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + v[4]
    return sum(v[:8]), idle


def cpu_busy(seconds=2.0):
    """the fraction of all CPUs busy over the next seconds"""
    t0, i0 = cpu_times()
    time.sleep(seconds)
    t1, i1 = cpu_times()
    return 1 - (i1 - i0) / max(t1 - t0, 1)


def wait_quiet(a, what):
    """Wait until the machine is quiet (busy fraction <= --max-busy over 2 s); returns what was seen."""
    t0 = time.monotonic()
    busy = cpu_busy()
    while busy > a.max_busy and time.monotonic() - t0 < a.quiet_timeout:
        busy = cpu_busy()
    quiet = busy <= a.max_busy
    seen = {"busy": round(busy, 3), "load1": round(os.getloadavg()[0], 2), "quiet": quiet,
            "waited_s": round(time.monotonic() - t0, 1)}
    if not quiet:
        log(f"  WARNING: machine not quiet before {what}: {busy * 100:.0f}% busy, load {seen['load1']} "
            f"(figure kept, flagged)")
    return seen


# ------------------------------------------------------------------------------------------------ the runtime

def running(rt):
    return [c for c in rt.containers() if c["state"] == "CONTAINER_RUNNING"]


def stopped(rt):
    return not running(rt) and not [p for p in rt.pods() if p["state"] == "SANDBOX_READY"]


def empty(rt):
    return not rt.pods() and not rt.containers()


def ensure_empty(rt):
    if not empty(rt):
        log("  the runtime is not empty: cleaning it")
        rt.clean()


def started_at(rt):
    """pod name -> startedAt (unix seconds) of its running container"""
    out = {}
    for c in running(rt):
        out[c["labels"]["io.kubernetes.pod.name"]] = int(rt.inspect(c["id"])["startedAt"]) / 1e9
    return out


# ------------------------------------------------------------------------------------------------ the kubelets

def http_get(port, path, timeout=10):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as r:
        return r.read().decode(errors="replace")


def ready_count(pods_json):
    n = 0
    for p in json.loads(pods_json).get("items") or []:
        for c in (p.get("status") or {}).get("conditions") or []:
            if c.get("type") == "Ready" and c.get("status") == "True":
                n += 1
    return n


PROBE_LINE = re.compile(r"^prober_probe_total\{[^}]*\} (\S+)$", re.M)


class Subject:
    """A kubelet under test: its own manifest, root and log directories and cgroup root, a read-only port for
    /pods and /metrics/probes, a healthz port."""
    name = label = ""

    def __init__(self, rt, workdir, max_pods, verbosity, node=NODE, extra=()):
        self.rt, self.dir, self.max_pods, self.verbosity = rt, workdir, max_pods, verbosity
        self.node, self.extra = node, list(extra)
        self.proc = None
        self.ro_port = free_port()
        os.makedirs(workdir, exist_ok=True)

    @property
    def pid(self):
        return self.proc.pid

    def wait_started(self, timeout=120):
        def healthy():
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.label} exited with {self.proc.returncode}; log: {self.logfile}")
            try:
                return http_get(self.healthz_port, "/healthz", timeout=2).strip() == "ok"
            except OSError:
                return False
        wait_for(healthy, timeout, interval=0.2, msg=f"{self.label} healthz")

    def ready(self):
        return ready_count(http_get(self.ro_port, "/pods"))

    def probe_total(self):
        return sum(float(v) for v in PROBE_LINE.findall(http_get(self.ro_port, "/metrics/probes")))

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)

    def stage(self, pods):
        """write manifests as hidden files (both kubelets ignore them)"""
        for name, text in pods.items():
            with open(os.path.join(self.manifests, f".{name}.yaml"), "w") as f:
                f.write(text)

    def publish(self, names):
        """rename staged manifests into place in one burst; name -> time of its rename"""
        t = {}
        for name in names:
            t[name] = time.time()
            os.rename(os.path.join(self.manifests, f".{name}.yaml"), os.path.join(self.manifests, f"{name}.yaml"))
        return t

    def unpublish(self, names):
        t = {}
        for name in names:
            t[name] = time.time()
            os.unlink(os.path.join(self.manifests, f"{name}.yaml"))
        return t


class CKubelet(Subject):
    name, label = "ckubelet", "ckubelet"

    def __init__(self, rt, workdir, max_pods, verbosity, node=NODE, extra=()):
        super().__init__(rt, workdir, max_pods, verbosity, node, extra)
        self.k = Kubelet(rt, workdir)
        self.k.extra_args = ["--v", str(verbosity), "--max-pods", str(max_pods), "--read-only-port", str(self.ro_port),
                             "--hostname-override", node, *self.extra]
        self.manifests, self.logfile, self.healthz_port = self.k.manifests, self.k.logfile, self.k.healthz_port
        self.cgroup_root = self.k.cgroup_root

    def args(self):
        return self.k.args()

    def start(self):
        self.t_started = time.time()
        self.k.start()
        self.proc = self.k.proc
        self.wait_started()

    def cleanup(self):
        remove_cgroup_root(self.cgroup_root)


class GoKubelet(Subject):
    name, label = "go", "Go kubelet"

    def __init__(self, rt, workdir, max_pods, verbosity, binary, node=NODE, extra=()):
        super().__init__(rt, workdir, max_pods, verbosity, node, extra)
        self.binary = binary
        self.manifests = os.path.join(workdir, "manifests")
        self.logfile = os.path.join(workdir, "kubelet.log")
        self.healthz_port = free_port()
        self.cgroup_root = make_cgroup_root()
        os.makedirs(self.manifests, exist_ok=True)
        self.namespaces = (API_NAMESPACE + "go",)  # the API scenario's: /var/log/pods/<ns>_<pod>_<uid>
        self.var_log_before = {d: set(os.listdir(d)) if os.path.isdir(d) else set()
                               for d in ("/var/log/pods", "/var/log/containers")}

    def args(self):
        return self.args_v120() if GO_VERSION == "v1.20.2" else self.args_v137()

    def args_v120(self):
        w = self.dir
        return [self.binary,
                "--pod-manifest-path", self.manifests,
                "--container-runtime=remote", "--container-runtime-endpoint", self.rt.endpoint,
                "--containerd", self.rt.sock,  # cAdvisor's containerd handler, as on a containerd node
                "--cgroup-driver=cgroupfs", "--cgroup-root", self.cgroup_root, "--cgroups-per-qos=true",
                "--fail-swap-on=false",
                "--root-dir", os.path.join(w, "root"), "--cert-dir", os.path.join(w, "pki"),
                "--volume-plugin-dir", os.path.join(w, "volume-plugins"),
                "--hostname-override", self.node, "--max-pods", str(self.max_pods),
                "--port", str(free_port()), "--read-only-port", str(self.ro_port),
                "--healthz-port", str(self.healthz_port),
                # the busybox image must not be garbage-collected on a fullish disk in the middle of a run
                "--image-gc-high-threshold=100", "--image-gc-low-threshold=99",
                f"--v={self.verbosity}", *self.extra]

    def args_v137(self):
        """v1.37: the same settings as v1.20's flags, through a KubeletConfiguration (most of those flags are
        deprecated, --container-runtime and --containerd are gone), plus failCgroupV1: false (v1.35+ refuse a
        cgroup v1 host by default) and the v1.20 flags' defaults that v1beta1's config defaults changed
        (anonymous authentication and AlwaysAllow authorization, as the read-only scrape of /pods needs none)."""
        w = self.dir
        cfg = os.path.join(w, "kubelet-config.yaml")
        with open(cfg, "w") as f:
            f.write(f"""\
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
staticPodPath: {self.manifests}
cgroupDriver: cgroupfs
cgroupRoot: {self.cgroup_root}
cgroupsPerQOS: true
failSwapOn: false
failCgroupV1: false
maxPods: {self.max_pods}
port: {free_port()}
readOnlyPort: {self.ro_port}
healthzPort: {self.healthz_port}
healthzBindAddress: 127.0.0.1
volumePluginDir: {os.path.join(w, "volume-plugins")}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
authentication:
  anonymous:
    enabled: true
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow
""")
        return [self.binary, "--config", cfg,
                "--container-runtime-endpoint", self.rt.endpoint,
                "--root-dir", os.path.join(w, "root"), "--cert-dir", os.path.join(w, "pki"),
                "--hostname-override", self.node, f"--v={self.verbosity}", *self.extra]

    def start(self):
        with open(self.logfile, "a") as f:
            f.write(f"===== starting {' '.join(self.args())}\n")
            f.flush()
            self.t_started = time.time()
            self.proc = subprocess.Popen(self.args(), stdout=f, stderr=subprocess.STDOUT)
        self.wait_started()

    def cleanup(self):
        remove_cgroup_root(self.cgroup_root)
        # the Go kubelet writes container logs under /var/log/pods and links them from /var/log/containers
        # whatever its flags: remove what appeared there for our pods
        for d, before in self.var_log_before.items():
            if not os.path.isdir(d):
                continue
            for e in set(os.listdir(d)) - before:
                if f"-{self.node}_" in e or any(ns + "_" in e for ns in self.namespaces):
                    p = os.path.join(d, e)
                    if os.path.islink(p) or not os.path.isdir(p):
                        os.unlink(p)
                    else:
                        shutil.rmtree(p, ignore_errors=True)


class Bench:
    def __init__(self, a, rt, workdir):
        self.a, self.rt, self.workdir = a, rt, workdir
        self.count = 0

    def subject(self, kind, max_pods, node=NODE, extra=()):
        self.count += 1
        d = os.path.join(self.workdir, f"{kind}-{self.count}")
        if kind == "ckubelet":
            return CKubelet(self.rt, d, max_pods, self.a.verbosity, node, extra)
        return GoKubelet(self.rt, d, max_pods, self.a.verbosity, self.a.go_kubelet, node, extra)

    def run(self, kind, max_pods, fn, node=NODE, extra=(), before=None):
        """start a kubelet, run fn(subject), stop it and leave the runtime empty and its cgroups removed"""
        ensure_empty(self.rt)
        s = self.subject(kind, max_pods, node, extra)
        try:
            if before:
                before(s)
            s.start()
            return fn(s)
        except Exception as e:
            log(f"  {s.label} FAILED: {e}; log: {s.logfile}")
            keep = os.path.join("/var/tmp", f"compare-{s.name}-{os.getpid()}-{self.count}.log")
            shutil.copy(s.logfile, keep)
            log(f"  (log kept as {keep})")
            return {"error": str(e)}
        finally:
            s.stop()
            self.rt.clean()
            s.cleanup()

    # -------------------------------------------------------------------------------------------- start

    def start_cycle(self, s, n, cycle, res):
        """N pods at once until all run; returns their names"""
        a, rt = self.a, self.rt
        names = [f"s{cycle}-{i}" for i in range(n)]
        s.stage({nm: SLEEP_POD.format(name=nm, cmd=json.dumps(SLEEPER)) for nm in names})
        ensure_empty(rt)
        res.setdefault("machine_before", []).append(wait_quiet(a, f"{s.label} start N={n}"))
        t = s.publish(names)
        wait_for(lambda: len(running(rt)) >= n, 120 + 3 * n, interval=0.25, msg=f"{n} containers running")
        st = started_at(rt)
        lat = [st[f"{nm}-{NODE}"] - t[nm] for nm in names]
        res.setdefault("start_all_runs_s", []).append(round(max(st.values()) - min(t.values()), 4))
        res.setdefault("per_pod_p50_runs_s", []).append(round(pct(lat, 50), 4))
        res.setdefault("per_pod_p99_runs_s", []).append(round(pct(lat, 99), 4))
        log(f"  {s.label:<11} N={n:<4} start-all {res['start_all_runs_s'][-1]:8.3f} s   per pod p50 "
            f"{res['per_pod_p50_runs_s'][-1]:.3f} s p99 {res['per_pod_p99_runs_s'][-1]:.3f} s")
        return names

    def remove_cycle(self, s, n, names, res):
        a, rt = self.a, self.rt
        t = s.unpublish(names)
        t0 = min(t.values())
        wait_for(lambda: stopped(rt), 120 + n, interval=0.25, msg="all stopped")
        res.setdefault("remove_stopped_runs_s", []).append(round(time.time() - t0, 3))
        try:
            wait_for(lambda: empty(rt), a.remove_timeout, interval=0.5, msg="an empty runtime")
            res.setdefault("remove_empty_runs_s", []).append(round(time.time() - t0, 3))
        except AssertionError:
            res.setdefault("remove_empty_runs_s", []).append(None)
            res["remove_note"] = f"not empty after {a.remove_timeout} s"
        e = res["remove_empty_runs_s"][-1]
        log(f"  {s.label:<11} N={n:<4} remove: all stopped {res['remove_stopped_runs_s'][-1]:.2f} s, runtime empty "
            f"{e if e is not None else 'never'} s")

    def start_scenario(self, s, n):
        """--repeat cycles of start-all and remove-all; the steady window with N pods running after the first"""
        a = self.a
        res = {}
        for cycle in range(a.repeat):
            names = self.start_cycle(s, n, cycle, res)
            if cycle == 0 and n == 1 and a.verify and s.name == "ckubelet":
                self.request_snapshot = request_snapshot(self.rt, s.dir, s.cgroup_root)
            if cycle == 0:
                time.sleep(a.settle)
                res["machine_steady"] = wait_quiet(a, f"{s.label} steady N={n}")
                c0, t0 = proc_cpu(s.pid), time.monotonic()
                time.sleep(a.steady)
                c1, t1 = proc_cpu(s.pid), time.monotonic()
                res["steady_cpu_s_per_min"] = round((c1 - c0) * 60 / (t1 - t0), 3)
                res["steady_window_s"] = round(t1 - t0, 1)
                res.update(proc_mem_detail(s.pid))  # VmRSS, VmHWM, RssAnon, RssFile: one read of the status
                rss, hwm = res["vmrss_kb"], res["vmhwm_kb"]
                log(f"  {s.label:<11} N={n:<4} steady {res['steady_cpu_s_per_min']:.3f} CPU-s/min, VmRSS {rss} kB, "
                    f"VmHWM {hwm} kB (RssAnon {res['rss_anon_kb']} kB, RssFile {res['rss_file_kb']} kB; largest: "
                    + ", ".join(f"{os.path.basename(m)} {v}" for m, v in res["smaps_top_kb"][:4]) + ")")
            self.remove_cycle(s, n, names, res)
        summarize_runs(res)
        return res

    def floor_scenario(self, n, verify_against=None):
        """the same pods started by ckubelet-cri-floor with ckubelet's own flags, --repeat times"""
        a, rt = self.a, self.rt
        res = {}
        for cycle in range(a.repeat):
            ensure_empty(rt)
            self.count += 1
            k = Kubelet(rt, os.path.join(self.workdir, f"floor-{self.count}"))
            k.extra_args = ["--v", str(a.verbosity), "--max-pods", str(max(n, 110)), "--read-only-port",
                            str(free_port())]
            try:
                for i in range(n):
                    nm = f"s{cycle}-{i}"
                    k.write(f"{nm}.yaml", SLEEP_POD.format(name=nm, cmd=json.dumps(SLEEPER)))
                res.setdefault("machine_before", []).append(wait_quiet(a, f"floor N={n}"))
                p = subprocess.run([FLOOR, "--json", *a.floor_args.split(), "--", *k.args()[1:]], capture_output=True, text=True,
                                   timeout=120 + 3 * n)
                if p.returncode != 0:
                    raise RuntimeError(f"ckubelet-cri-floor failed ({p.returncode}): {p.stderr[-2000:]}")
                out = json.loads(p.stdout)
                st = started_at(rt)
                if len(st) != n:
                    raise RuntimeError(f"the floor started {len(st)} of {n} containers")
                res.setdefault("start_all_runs_s", []).append(round(max(st.values()) - out["t0_unix"], 4))
                res.setdefault("last_start_reply_runs_s", []).append(round(out["seconds"], 4))
                log(f"  {'CRI floor':<11} N={n:<4} start-all {res['start_all_runs_s'][-1]:8.3f} s   (last "
                    f"StartContainer reply {res['last_start_reply_runs_s'][-1]:.3f} s)")
                if verify_against is not None and cycle == 0:
                    res["requests_identical"], res["requests_diff"] = compare_snapshots(
                        verify_against, request_snapshot(rt, k.dir, k.cgroup_root))
                    log(f"  requests of ckubelet and the floor (containerd's stored configs): "
                        f"{'identical' if res['requests_identical'] else 'DIFFER: ' + '; '.join(res['requests_diff'])}")
            except Exception as e:
                log(f"  floor FAILED: {e}")
                res["error"] = str(e)
                break
            finally:
                rt.clean()
                remove_cgroup_root(k.cgroup_root)
        summarize_runs(res)
        return res

    # -------------------------------------------------------------------------------------------- probes

    def probe_scenario(self, s, n):
        a, rt = self.a, self.rt
        names = [f"p{i}" for i in range(n)]
        s.stage({nm: PROBE_POD.format(name=nm, delay=LIVENESS_DELAY) for nm in names})
        res = {"pods": n, "machine_before": wait_quiet(a, f"{s.label} probes")}
        t0 = time.time()
        s.publish(names)
        wait_for(lambda: s.ready() >= n, 300 + 3 * n, interval=1, msg=f"{n} pods Ready")
        res["all_ready_s"] = round(time.time() - t0, 1)
        # the window starts once every liveness probe runs too (initialDelaySeconds after its container started)
        t_live = max(started_at(rt).values()) + LIVENESS_DELAY + 1
        time.sleep(max(a.probe_settle, t_live - time.time()))
        p0, c0, w0, m0 = s.probe_total(), proc_cpu(s.pid), time.time(), time.monotonic()
        time.sleep(a.probe_seconds)
        p1, c1, w1, m1 = s.probe_total(), proc_cpu(s.pid), time.time(), time.monotonic()
        rss, hwm = proc_mem(s.pid)
        cpu, secs = c1 - c0, m1 - m0
        res.update({
            "window_s": round(secs, 1),
            "cpu_s_per_min": round(cpu * 60 / secs, 3),
            "probes_per_s": round((p1 - p0) / secs, 2),
            "probes_expected_per_s": 2 * n,
            "cpu_us_per_probe": round(cpu / (p1 - p0) * 1e6, 1) if p1 > p0 else None,
            "vmrss_kb": rss, "vmhwm_kb": hwm,
        })
        res["http_probe_interval"] = probe_intervals(rt, w0, w1)
        res["restarts"] = sum(1 for c in rt.containers() if c["metadata"].get("attempt", 0) > 0)
        res["not_ready_at_end"] = n - s.ready()
        iv = res["http_probe_interval"]
        log(f"  {s.label:<11} {n} pods: {res['cpu_s_per_min']:.3f} CPU-s/min, {res['probes_per_s']:.1f} probes/s "
            f"(of {2 * n}), {res['cpu_us_per_probe']} µs/probe, VmRSS {rss} kB; HTTP probe interval p50 "
            f"{iv['p50_ms']} ms p99 {iv['p99_ms']} ms max {iv['max_ms']} ms, {iv['late_50ms']} of {iv['intervals']} "
            f"over 1.05 s; restarts {res['restarts']}, not Ready {res['not_ready_at_end']}")
        s.unpublish(names)
        wait_for(lambda: stopped(rt), 300, interval=1, msg="probe pods stopped")
        return res

    # -------------------------------------------------------------------------------------------- churn

    def churn_scenario(self, s):
        a, rt = self.a, self.rt
        res = {"rate_per_s": a.churn_rate, "lifetime_s": a.churn_lifetime, "seconds": a.churn_seconds,
               "machine_before": wait_quiet(a, f"{s.label} churn")}
        written, deleted = {}, {}
        first_running, started, stopped_at = {}, {}, {}
        lock = threading.Lock()
        done = threading.Event()

        def poll():
            while not done.is_set():
                try:
                    cs = rt.containers()
                except Exception:
                    time.sleep(0.5)
                    continue
                now = time.time()
                run = {}
                for c in cs:
                    pod = c["labels"].get("io.kubernetes.pod.name", "")
                    if c["state"] == "CONTAINER_RUNNING":
                        run[pod] = c["id"]
                for pod, cid in run.items():
                    if pod not in first_running:
                        first_running[pod] = now
                        try:
                            started[pod] = int(rt.inspect(cid)["startedAt"]) / 1e9
                        except Exception:
                            pass
                with lock:
                    for pod in deleted:
                        if pod not in stopped_at and pod not in run and pod in first_running:
                            stopped_at[pod] = now
                done.wait(0.5)

        poller = threading.Thread(target=poll, daemon=True)
        poller.start()
        samples = []
        pid = s.pid
        t_begin = time.time()
        t_end = t_begin + a.churn_seconds
        i = 0
        next_sample = t_begin
        alive = []
        try:
            while True:
                now = time.time()
                if now >= t_end:
                    break
                if now >= next_sample:
                    rss, _ = proc_mem(pid)
                    samples.append((round(now - t_begin, 2), proc_cpu(pid), rss))
                    next_sample += 5
                while t_begin + i / a.churn_rate <= now:
                    nm = f"c{i}"
                    pod = f"{nm}-{NODE}"
                    path = os.path.join(s.manifests, f"{nm}.yaml")
                    with open(os.path.join(s.manifests, f".{nm}.yaml"), "w") as f:
                        f.write(SLEEP_POD.format(name=nm, cmd=json.dumps(SLEEPER)))
                    written[pod] = time.time()
                    os.rename(os.path.join(s.manifests, f".{nm}.yaml"), path)
                    alive.append((pod, path))
                    i += 1
                while alive and written[alive[0][0]] + a.churn_lifetime <= now:
                    pod, path = alive.pop(0)
                    with lock:
                        deleted[pod] = time.time()
                    os.unlink(path)
                nxt = min(t_begin + i / a.churn_rate, next_sample,
                          written[alive[0][0]] + a.churn_lifetime if alive else t_end, t_end)
                time.sleep(max(0.0, nxt - time.time()))
            rss, _ = proc_mem(pid)
            samples.append((round(time.time() - t_begin, 2), proc_cpu(pid), rss))
            for pod, path in alive:
                with lock:
                    deleted[pod] = time.time()
                os.unlink(path)
            wait_for(lambda: stopped(rt), 300, interval=1, msg="churn pods stopped")
            time.sleep(1)
        finally:
            done.set()
            poller.join(30)

        secs = samples[-1][0] - samples[0][0]
        in_window = [p for p, t in started.items() if t <= t_end]
        # sustained: the pods written in the window that started, over the time from the first write to the
        # last of their starts (equal to the offered rate when the kubelet keeps up)
        span = max(started.values()) - min(written.values()) if started else 0
        start_lat = [started[p] - written[p] for p in started if p in written]
        stop_lat = [stopped_at[p] - deleted[p] for p in stopped_at if p in deleted]
        warm = min(60.0, a.churn_seconds / 3)
        after = [x for x in samples if x[0] >= warm]
        slope = None
        if len(after) >= 3:
            xs, ys = [x[0] / 60 for x in after], [x[2] for x in after]
            mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
            den = sum((x - mx) ** 2 for x in xs)
            slope = round(sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / den, 1) if den else None
        res.update({
            "pods_written": len(written),
            "pods_started_in_window": len(in_window),
            "started_per_s": round(len(started) / span, 2) if span > 0 else None,
            "never_started": len([p for p in written if p not in started]),
            "start_latency_p50_s": round(pct(start_lat, 50), 3) if start_lat else None,
            "start_latency_p99_s": round(pct(start_lat, 99), 3) if start_lat else None,
            "stop_latency_p50_s": round(pct(stop_lat, 50), 2) if stop_lat else None,
            "stop_latency_p99_s": round(pct(stop_lat, 99), 2) if stop_lat else None,
            "stop_latency_resolution_s": 0.5,
            "cpu_s_per_min": round((samples[-1][1] - samples[0][1]) * 60 / secs, 3) if secs > 0 else None,
            "warmup_s": warm,
            "rss_after_warmup_kb": after[0][2] if after else None,
            "rss_end_kb": samples[-1][2],
            "rss_max_kb": max(x[2] for x in samples),
            "rss_drift_kb": samples[-1][2] - after[0][2] if after else None,
            "rss_slope_kb_per_min": slope,
            "samples": [{"t": x[0], "cpu_s": round(x[1], 2), "rss_kb": x[2]} for x in samples],
            "starts": sorted([round(written[p] - t_begin, 2), round(started[p] - written[p], 3)]
                             for p in started if p in written),
        })
        log(f"  {s.label:<11} churn {a.churn_rate}/s for {a.churn_seconds} s: {res['started_per_s']} pods/s started "
            f"({res['pods_started_in_window']} of {res['pods_written']}), start p50 {res['start_latency_p50_s']} s "
            f"p99 {res['start_latency_p99_s']} s, stop p50 {res['stop_latency_p50_s']} s, "
            f"{res['cpu_s_per_min']} CPU-s/min, RSS {res['rss_after_warmup_kb']} → {res['rss_end_kb']} kB "
            f"(drift {res['rss_drift_kb']} kB, {slope} kB/min)")
        return res

    # -------------------------------------------------------------------------------------------- api

    def api_scenario(self, kind, cp):
        """API pods through the real apiserver: the kubelet joins as node bench-<kind> (a client certificate of
        the control plane's CA), then --api-pods pods are created one after the other (bound to the node with
        spec.nodeName: there is no scheduler) and each deleted once Ready. Times are seen by a watch on the
        namespace: create → the status with Ready=True, delete → the DELETED event (the kubelet's final
        delete once the containers stopped)."""
        a = self.a
        node, ns = f"bench-{kind}", API_NAMESPACE + kind
        kubeconfig = cp.node_credentials(node)
        admin = cp.admin
        res = {"pods": a.api_pods}

        def prepare(s):
            admin.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
            # pods can be admitted once the namespace's default service account exists (v1.20: with its token
            # secret; v1.24+ make no such secret)
            wait_for(lambda: (sa := admin.get("serviceaccounts", "default", ns)) and
                     (GO_VERSION != "v1.20.2" or sa.get("secrets")), 120,
                     interval=0.2, msg=f"the service account {ns}/default")

        def scenario(s):
            t_start = s.t_started
            wait_for(lambda: node_ready(admin.get("nodes", node)), 120, interval=0.1, msg=f"node {node} Ready")
            res["node_ready_s"] = round(time.time() - t_start, 2)
            log(f"  {s.label:<11} node Ready {res['node_ready_s']} s after the kubelet started")
            w = PodWatch(cp, ns)
            try:
                res["machine_before"] = wait_quiet(a, f"{s.label} API pods")
                create, delete = [], []
                for i in range(a.api_pods):
                    name = f"api-{i}"
                    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
                           "spec": {"nodeName": node, "terminationGracePeriodSeconds": 5, "containers": [
                               {"name": "c", "image": "docker.io/library/busybox:1.36",
                                "imagePullPolicy": "IfNotPresent", "command": SLEEPER}]}}
                    t0 = time.time()
                    admin.create("pods", pod, ns)
                    wait_for(lambda: name in w.ready, 120, interval=0.01, msg=f"{name} Ready")
                    create.append(w.ready[name] - t0)
                    t0 = time.time()
                    admin.delete("pods", name, ns)
                    wait_for(lambda: name in w.deleted, 120, interval=0.01, msg=f"{name} gone")
                    delete.append(w.deleted[name] - t0)
                res.update({
                    "create_ready_p50_s": round(pct(create, 50), 3), "create_ready_p99_s": round(pct(create, 99), 3),
                    "delete_gone_p50_s": round(pct(delete, 50), 3), "delete_gone_p99_s": round(pct(delete, 99), 3),
                    "create_ready_s": [round(x, 3) for x in create], "delete_gone_s": [round(x, 3) for x in delete],
                })
                rss, hwm = proc_mem(s.pid)
                res["vmrss_kb"], res["vmhwm_kb"] = rss, hwm
                log(f"  {s.label:<11} {a.api_pods} API pods: create → Ready p50 {res['create_ready_p50_s']} s p99 "
                    f"{res['create_ready_p99_s']} s; delete → gone p50 {res['delete_gone_p50_s']} s p99 "
                    f"{res['delete_gone_p99_s']} s; VmRSS {rss} kB")
            finally:
                w.stop()
            return res

        try:
            return self.run(kind, 110, scenario, node=node, extra=["--kubeconfig", kubeconfig], before=prepare)
        finally:
            for fn in (lambda: admin.delete("namespaces", ns), lambda: admin.delete("nodes", node),
                       lambda: admin.delete("leases", node, "kube-node-lease")):
                try:
                    fn()
                except Exception as e:
                    log(f"  cleaning up the API objects of {node}: {e}")


def node_ready(n):
    return n and any(c["type"] == "Ready" and c["status"] == "True" for c in n.get("status", {}).get("conditions", []))


class PodWatch:
    """A watch on a namespace's pods: when each pod was first seen Ready, and when it was DELETED."""

    def __init__(self, cp, ns):
        import http.client
        self.ready, self.deleted = {}, {}
        rv = cp.admin.call("GET", f"/api/v1/namespaces/{ns}/pods")["metadata"]["resourceVersion"]
        self.conn = http.client.HTTPSConnection("127.0.0.1", cp.port, context=cp.admin.ctx, timeout=3600)
        self.conn.request("GET", f"/api/v1/namespaces/{ns}/pods?watch=true&resourceVersion={rv}")
        self.resp = self.conn.getresponse()
        if self.resp.status != 200:
            raise RuntimeError(f"watch on {ns}/pods: {self.resp.status} {self.resp.read()[:200]}")
        self.stopping = False
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        try:
            while not self.stopping:
                line = self.resp.readline()
                if not line:
                    break
                now = time.time()
                ev = json.loads(line)
                obj = ev.get("object", {})
                name = obj.get("metadata", {}).get("name")
                if ev.get("type") == "DELETED":
                    self.deleted.setdefault(name, now)
                elif any(c.get("type") == "Ready" and c.get("status") == "True"
                         for c in obj.get("status", {}).get("conditions") or []):
                    self.ready.setdefault(name, now)
        except Exception:  # stopped (the connection closed under the reader), or the apiserver went away
            pass

    def stop(self):
        self.stopping = True
        try:
            self.conn.sock.shutdown(2)
        except OSError:
            pass
        self.conn.close()
        self.thread.join(10)


# ---------------------------------------------------------------------------------------------------- helpers

def summarize_runs(res):
    """x_runs_s lists -> x_s: the median of the runs (None if a run never finished)"""
    for k in list(res):
        if k.endswith("_runs_s"):
            vals = [v for v in res[k] if v is not None]
            res[k[:-len("_runs_s")] + "_s"] = pct(vals, 50) if vals and len(vals) == len(res[k]) else None


def probe_intervals(rt, w0, w1):
    """The intervals between consecutive HTTP probe requests per pod inside [w0, w1], from the containers' logs
    (httpd -v writes a line per request, containerd stamps each line when it reads it)."""
    ivs = []
    for c in rt.containers():
        if c["state"] != "CONTAINER_RUNNING":
            continue
        path = rt.inspect(c["id"]).get("logPath")
        if not path or not os.path.exists(path):
            continue
        ts = []
        with open(path, errors="replace") as f:
            for line in f:
                if "response:" not in line:
                    continue
                t = parse_rfc3339(line.split(" ", 1)[0])
                if t is not None and w0 <= t <= w1:
                    ts.append(t)
        ivs += [b - a for a, b in zip(ts, ts[1:])]
    ms = [x * 1000 for x in ivs]
    return {
        "intervals": len(ms),
        "p50_ms": round(pct(ms, 50), 1) if ms else None,
        "p99_ms": round(pct(ms, 99), 1) if ms else None,
        "max_ms": round(max(ms), 1) if ms else None,
        "late_50ms": sum(1 for x in ms if x > 1050),
    }


def parse_rfc3339(s):
    m = re.match(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)$", s)
    if not m:
        return None
    import calendar
    y, mo, d, hh, mm, ss, frac, tz = m.groups()
    t = calendar.timegm((int(y), int(mo), int(d), int(hh), int(mm), int(ss))) + float(frac or 0)
    if tz != "Z":
        sign = 1 if tz[0] == "+" else -1
        t -= sign * (int(tz[1:3]) * 3600 + int(tz[4:6]) * 60)
    return t


def request_snapshot(rt, kdir, cgroup_root):
    """The sandbox and container configs containerd stored for the one pod running, with the kubelet's own
    directory, cgroup root and the per-instance names made neutral."""
    [c] = running(rt)
    [p] = rt.pods()
    cinfo = json.loads(rt.json("inspect", c["id"])["info"]["info"])
    pinfo = json.loads(rt.json("inspectp", p["id"]).get("info", {}).get("info", "{}"))

    uid = c["labels"]["io.kubernetes.pod.uid"]  # from the manifest's path: differs between the two

    def neutral(x):
        s = json.dumps(x, sort_keys=True)
        s = s.replace(kdir, "<DIR>").replace(cgroup_root, "<CGROUP_ROOT>").replace(uid, "<UID>")
        s = re.sub(r"(containers/[^/\"]+/)[0-9a-f]{8}\b", r"\1<ID>", s)
        return json.loads(s)
    pcfg = neutral(pinfo.get("config", {}))
    (pcfg.get("annotations") or {}).pop("kubernetes.io/config.seen", None)
    return {"container": neutral(cinfo.get("config", {})), "sandbox": pcfg}


def compare_snapshots(a, b, path=""):
    diffs = []

    def walk(x, y, p):
        if isinstance(x, dict) and isinstance(y, dict):
            for k in sorted(set(x) | set(y)):
                walk(x.get(k), y.get(k), f"{p}.{k}" if p else k)
        elif isinstance(x, list) and isinstance(y, list) and len(x) == len(y):
            for i, (u, v) in enumerate(zip(x, y)):
                walk(u, v, f"{p}[{i}]")
        elif x != y:
            diffs.append(f"{p}: {json.dumps(x)[:80]} vs {json.dumps(y)[:80]}")
    walk(a, b, path)
    return not diffs, diffs


# ---------------------------------------------------------------------------------------------------- report

def ratio(go, ck):
    if go is None or ck is None or ck == 0:
        return None
    return go / ck


def fmt(v, unit="", digits=2):
    if v is None:
        return "—"
    return f"{v:.{digits}f}{unit}"


def table(data):
    rows = []

    def row(what, ck, go, floor=None, digits=2, better="lower"):
        r = ratio(go, ck) if better == "lower" else ratio(ck, go) if better == "higher" else None
        rows.append((what, fmt(ck, digits=digits), fmt(go, digits=digits), f"{r:.1f}×" if r else "—",
                     fmt(floor, digits=digits) if floor is not None else "",
                     f"{ck / floor:.2f}" if floor and ck else ""))

    for e in data.get("start", []):
        n, ck, go, fl = e["n"], e.get("ckubelet", {}), e.get("go", {}), e.get("floor", {})
        row(f"start {pods(n)} at once: all running (s)", ck.get("start_all_s"), go.get("start_all_s"),
            fl.get("start_all_s"), 3)
        row("  per pod, p99 (s)", ck.get("per_pod_p99_s"), go.get("per_pod_p99_s"), digits=3)
        row(f"{pods(n)} running: CPU (s/min)", ck.get("steady_cpu_s_per_min"), go.get("steady_cpu_s_per_min"), digits=3)
        row(f"{pods(n)} running: VmRSS (MB)", kb_mb(ck.get("vmrss_kb")), kb_mb(go.get("vmrss_kb")), digits=1)
        row(f"{pods(n)} running: VmHWM (MB)", kb_mb(ck.get("vmhwm_kb")), kb_mb(go.get("vmhwm_kb")), digits=1)
        if ck.get("pss_kb") is not None or go.get("pss_kb") is not None:
            row(f"{pods(n)} running: PSS (MB)", kb_mb(ck.get("pss_kb")), kb_mb(go.get("pss_kb")), digits=1)
            row(f"{pods(n)} running: USS (MB)", kb_mb(ck.get("uss_kb")), kb_mb(go.get("uss_kb")), digits=1)
        if ck.get("rss_anon_kb") is not None or go.get("rss_anon_kb") is not None:
            row("  VmRSS: RssAnon (MB)", kb_mb(ck.get("rss_anon_kb")), kb_mb(go.get("rss_anon_kb")), digits=1)
            row("  VmRSS: RssFile (MB)", kb_mb(ck.get("rss_file_kb")), kb_mb(go.get("rss_file_kb")), digits=1,
                better="none")
        row(f"remove {pods(n)}: all stopped (s)", ck.get("remove_stopped_s"), go.get("remove_stopped_s"))
        row(f"remove {pods(n)}: runtime empty (s)", ck.get("remove_empty_s"), go.get("remove_empty_s"))
    p = data.get("probes")
    if p:
        ck, go = p.get("ckubelet", {}), p.get("go", {})
        n = ck.get("pods") or go.get("pods")
        row(f"probes, {n} pods × 2 at 1 s: CPU (s/min)", ck.get("cpu_s_per_min"), go.get("cpu_s_per_min"), digits=3)
        row(f"  probes run per s (of {2 * n})", ck.get("probes_per_s"), go.get("probes_per_s"), digits=1, better="none")
        row("  CPU per probe (µs)", ck.get("cpu_us_per_probe"), go.get("cpu_us_per_probe"), digits=0)
        row("  HTTP probe interval p99 (ms)", (ck.get("http_probe_interval") or {}).get("p99_ms"),
            (go.get("http_probe_interval") or {}).get("p99_ms"), digits=1, better="none")
        row("  HTTP probe interval max (ms)", (ck.get("http_probe_interval") or {}).get("max_ms"),
            (go.get("http_probe_interval") or {}).get("max_ms"), digits=1, better="none")
        row("  VmRSS (MB)", kb_mb(ck.get("vmrss_kb")), kb_mb(go.get("vmrss_kb")), digits=1)
    c = data.get("churn")
    if c:
        ck, go = c.get("ckubelet", {}), c.get("go", {})
        rate = ck.get("rate_per_s") or go.get("rate_per_s")
        row(f"churn {rate}/s: pods started per s", ck.get("started_per_s"), go.get("started_per_s"), better="higher")
        row("  start latency p99 (s)", ck.get("start_latency_p99_s"), go.get("start_latency_p99_s"), digits=3)
        row("  stop latency p99 (s, ±0.5)", ck.get("stop_latency_p99_s"), go.get("stop_latency_p99_s"))
        row("  CPU (s/min)", ck.get("cpu_s_per_min"), go.get("cpu_s_per_min"), digits=3)
        row("  RSS drift after warm-up (kB)", ck.get("rss_drift_kb"), go.get("rss_drift_kb"), digits=0, better="none")
        row("  VmRSS at the end (MB)", kb_mb(ck.get("rss_end_kb")), kb_mb(go.get("rss_end_kb")), digits=1)
    api = data.get("api")
    if api:
        ck, go = api.get("ckubelet", {}), api.get("go", {})
        if ck.get("node_ready_s") is not None or go.get("node_ready_s") is not None:
            row("API: kubelet started → node Ready (s)", ck.get("node_ready_s"), go.get("node_ready_s"))
        for k, what in (("create_ready_p50_s", "API pod create → Ready p50 (s)"),
                        ("create_ready_p99_s", "API pod create → Ready p99 (s)"),
                        ("delete_gone_p50_s", "API pod delete → gone p50 (s)"),
                        ("delete_gone_p99_s", "API pod delete → gone p99 (s)")):
            if ck.get(k) is not None or go.get(k) is not None:
                row(what, ck.get(k), go.get(k), digits=3)
        if ck.get("skipped"):
            rows.append(("API pods", "skipped: " + ck["skipped"], "", "", "", ""))
    head = ("", "ckubelet", f"Go kubelet {data.get('go_version', 'v1.20.2')}", "Go/ckubelet", "CRI floor",
            "ckubelet/floor")
    w = [max(len(r[i]) for r in rows + [head]) for i in range(6)]
    text = "\n".join(" | ".join(c.ljust(w[i]) if i == 0 else c.rjust(w[i]) for i, c in enumerate(r)).rstrip()
                     for r in [head] + rows)
    md = "| " + " | ".join(head) + " |\n|" + "|".join(["---"] + ["---:"] * 5) + "|\n" + \
        "\n".join("| " + " | ".join(r) + " |" for r in rows) + "\n"
    return text, md


def pods(n):
    return f"{n} pod" + ("" if n == 1 else "s")


def kb_mb(v):
    return v / 1024 if v is not None else None


def charts(data, sub):
    plt = results.pyplot()
    start = [e for e in data.get("start", [])]
    if start:
        groups = [f"N={e['n']}" for e in start]
        fig, ax = plt.subplots(figsize=(8, 4.5))
        results.grouped_bars(ax, groups, ["ckubelet", "go", "floor"],
                             {k: [e.get(k, {}).get("start_all_s") for e in start] for k in ("ckubelet", "go", "floor")},
                             "seconds (median of the runs)",
                             "N static pods at once: manifests renamed → last container started")
        results.save_png(fig, "compare-start", sub)
        fig, axs = plt.subplots(1, 2, figsize=(10, 4.5))
        results.grouped_bars(axs[0], groups, ["ckubelet", "go"],
                             {k: [e.get(k, {}).get("steady_cpu_s_per_min") for e in start] for k in ("ckubelet", "go")},
                             "CPU seconds per minute", "N pods running: kubelet CPU", fmt="{:.2f}")
        results.grouped_bars(axs[1], groups, ["ckubelet", "go"],
                             {k: [kb_mb(e.get(k, {}).get("vmrss_kb")) for e in start] for k in ("ckubelet", "go")},
                             "MB", "N pods running: kubelet VmRSS", fmt="{:.1f}")
        results.save_png(fig, "compare-steady", sub)
        fig, axs = plt.subplots(1, 2, figsize=(10, 4.5))
        results.grouped_bars(axs[0], groups, ["ckubelet", "go"],
                             {k: [e.get(k, {}).get("remove_stopped_s") for e in start] for k in ("ckubelet", "go")},
                             "seconds", "remove all: every container stopped")
        results.grouped_bars(axs[1], groups, ["ckubelet", "go"],
                             {k: [e.get(k, {}).get("remove_empty_s") for e in start] for k in ("ckubelet", "go")},
                             "seconds", "remove all: runtime empty")
        results.save_png(fig, "compare-remove", sub)
    p = data.get("probes")
    if p and any("cpu_s_per_min" in p.get(k, {}) for k in ("ckubelet", "go")):
        ks = [k for k in ("ckubelet", "go") if "cpu_s_per_min" in p.get(k, {})]
        fig, axs = plt.subplots(1, 3, figsize=(12, 4.5))
        n = p[ks[0]]["pods"]
        results.grouped_bars(axs[0], [f"{n} pods"], ks, {k: [p[k]["cpu_s_per_min"]] for k in ks},
                             "CPU seconds per minute", "probe load: kubelet CPU")
        results.grouped_bars(axs[1], [f"{n} pods"], ks, {k: [p[k]["probes_per_s"]] for k in ks},
                             f"probes per second (expected {2 * n})", "probes actually run", fmt="{:.1f}")
        results.grouped_bars(axs[2], ["p50", "p99", "max"], ks,
                             {k: [p[k]["http_probe_interval"].get(q) for q in ("p50_ms", "p99_ms", "max_ms")] for k in ks},
                             "ms (period 1000)", "interval between HTTP probes of a pod", fmt="{:.0f}")
        results.save_png(fig, "compare-probes", sub)
    c = data.get("churn")
    if c and any("samples" in c.get(k, {}) for k in ("ckubelet", "go")):
        fig, axs = plt.subplots(1, 3, figsize=(15, 4.5))
        for k in ("ckubelet", "go"):
            sm = c.get(k, {}).get("samples")
            if not sm:
                continue
            st = c[k].get("starts") or []
            axs[2].plot([x[0] for x in st], [x[1] for x in st], ".", markersize=3, label=results.LABELS[k],
                        color=results.COLORS[k])
            axs[0].plot([x["t"] for x in sm], [x["rss_kb"] / 1024 for x in sm], label=results.LABELS[k],
                        color=results.COLORS[k])
            axs[1].plot([x["t"] for x in sm], [x["cpu_s"] - sm[0]["cpu_s"] for x in sm], label=results.LABELS[k],
                        color=results.COLORS[k])
        axs[0].set_title(f"churn {c.get('ckubelet', c.get('go', {})).get('rate_per_s')} pods/s: VmRSS", fontsize=10)
        axs[0].set_xlabel("s")
        axs[0].set_ylabel("MB")
        axs[0].set_yscale("log")
        axs[1].set_title("churn: cumulative kubelet CPU", fontsize=10)
        axs[1].set_xlabel("s")
        axs[1].set_ylabel("CPU seconds")
        axs[2].set_title("churn: each pod's manifest written → container started", fontsize=10)
        axs[2].set_xlabel("written at (s)")
        axs[2].set_ylabel("s")
        for ax in axs:
            ax.legend(fontsize=8)
        results.save_png(fig, "compare-churn", sub)


# ---------------------------------------------------------------------------------------------------- main

def api_part(a, b, kinds, d):
    """the API scenario for each kubelet, on one real control plane (tests/e2e/controlplane.py)"""
    try:
        from controlplane import ControlPlane
    except ImportError:
        msg = "tests/e2e/controlplane.py (the real control plane) is not on this branch yet"
        log(f"api: skipped: {msg}")
        return {kind: {"skipped": msg} for kind in kinds}
    log(f"api: {a.api_pods} API pods one after the other through the real apiserver")
    cpdir = os.path.join(d, "controlplane")
    os.makedirs(cpdir)
    cp = ControlPlane(cpdir)
    try:
        cp.start()
        return {kind: b.api_scenario(kind, cp) for kind in kinds}
    except Exception as e:
        log(f"api: the control plane failed: {e}")
        return {kind: {"error": str(e)} for kind in kinds}
    finally:
        cp.stop()


def go_kubelet_binary():
    out = subprocess.run(["bash", os.path.join(conftest.SCRIPTS, "build-kubernetes.sh")], check=True,
                         capture_output=True, text=True).stdout
    return os.path.join(out.strip().splitlines()[-1], "kubelet")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pods", default="1,30,110,250", help="N for the start scenario (comma-separated)")
    ap.add_argument("--steady", type=float, default=60, help="seconds of the steady CPU window")
    ap.add_argument("--settle", type=float, default=15, help="seconds after all started before the steady window")
    ap.add_argument("--repeat", type=int, default=3, help="start-all/remove-all cycles per N (the median is shown)")
    ap.add_argument("--remove-timeout", type=float, default=240, help="how long to wait for an empty runtime")
    ap.add_argument("--probe-pods", type=int, default=110)
    ap.add_argument("--probe-seconds", type=float, default=60)
    ap.add_argument("--probe-settle", type=float, default=10)
    ap.add_argument("--churn-seconds", type=float, default=300)
    ap.add_argument("--churn-rate", type=float, default=4, help="pods created (and deleted) per second")
    ap.add_argument("--churn-lifetime", type=float, default=10, help="seconds from a pod's creation to its deletion")
    ap.add_argument("--api-pods", type=int, default=30)
    ap.add_argument("--only", default="start,probes,churn,api")
    ap.add_argument("--kubelets", default="ckubelet,go")
    ap.add_argument("--no-floor", action="store_true")
    ap.add_argument("--floor-args", default="", help="more options of ckubelet-cri-floor (e.g. \"--parallel 8\")")
    ap.add_argument("--no-verify", dest="verify", action="store_false",
                    help="do not compare ckubelet's and the floor's requests at N=1")
    ap.add_argument("--max-busy", type=float, default=0.15, help="quiet: at most this fraction of the CPUs busy")
    ap.add_argument("--quiet-timeout", type=float, default=120)
    ap.add_argument("--verbosity", type=int, default=0, help="--v of both kubelets")
    ap.add_argument("--net-index", type=int, default=63)
    ap.add_argument("--go-version", choices=GO_VERSIONS, default=GO_VERSION,
                    help="the upstream kubelet (and the API scenario's control plane) compared against")
    ap.add_argument("--go-kubelet", help="the upstream kubelet binary (default: scripts/build-kubernetes.sh)")
    ap.add_argument("--quick", action="store_true",
                    help="a development run: N=1,30, 20 s windows, 10 probe pods, churn 30 s")
    ap.add_argument("--merge", nargs="+", metavar="JSON",
                    help="measure nothing: build compare.json, the charts and the table from the "
                         "compare-<scenario>.json files of earlier runs (start entries are joined by N and kubelet, "
                         "later files winning)")
    if ap.parse_known_args()[0].quick:  # other defaults; options given explicitly still win
        ap.set_defaults(pods="1,30", steady=20, settle=5, probe_pods=10, probe_seconds=20, churn_seconds=30,
                        api_pods=5, repeat=1, quiet_timeout=20)
    a = ap.parse_args()
    if a.merge:
        return merge(a.merge)
    if os.geteuid() != 0:
        sys.exit("compare.py: run as root")
    for tool in (conftest.CKUBELET, conftest.CRICTL, FLOOR):
        if not os.access(tool, os.X_OK):
            sys.exit(f"compare.py: {tool} is not built (meson setup build && ninja -C build)")
    a.go_kubelet = a.go_kubelet or go_kubelet_binary()
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    only = set(a.only.split(","))
    kinds = a.kubelets.split(",")
    sizes = [int(x) for x in a.pods.split(",") if x]
    results.pyplot()  # install matplotlib now rather than after an hour of measuring

    data = results.header()
    data["go_kubelet"] = a.go_kubelet
    data["go_version"] = a.go_version
    data["options"] = {k: v for k, v in vars(a).items() if k != "go_kubelet"}
    data["quick"] = a.quick

    conftest_images = conftest.IMAGE_CACHE
    subprocess.run(["bash", os.path.join(conftest.SCRIPTS, "build-images.sh"), conftest_images], check=True)
    d = tempfile.mkdtemp(prefix="ckubelet-compare-", dir="/var/tmp")
    rt = Runtime(d, a.net_index)
    rt.start()
    log(f"compare: private containerd at {rt.endpoint}, {os.cpu_count()} CPUs, Go kubelet {a.go_kubelet}")
    try:
        subprocess.run(["bash", os.path.join(conftest.SCRIPTS, "containerd.sh"), "import", d,
                        os.path.join(conftest_images, "images.tar")], check=True)
        b = Bench(a, rt, os.path.join(d, "kubelets"))
        sub = (f"{data['date']}, {data['machine']['cpus']} CPUs {data['machine']['cpu_model']}, "
               f"{data['machine']['containerd']}" + (" — DEVELOPMENT RUN" if a.quick else ""))

        def save(name, part):
            results.write_json(f"compare-{name}", {**results.header(), "quick": a.quick,
                                                   "go_version": a.go_version, name: part})

        if "start" in only:
            data["start"] = []
            for n in sizes:
                log(f"start: {n} pods at once")
                e = {"n": n}
                b.request_snapshot = None
                for kind in kinds:
                    e[kind] = b.run(kind, max(n, 110), lambda s: b.start_scenario(s, n))
                    if kind == "ckubelet" and not a.no_floor:  # right after ckubelet: the same conditions
                        e["floor"] = b.floor_scenario(n, b.request_snapshot if n == 1 and a.verify else None)
                data["start"].append(e)
                save("start", data["start"])
        if "probes" in only:
            log(f"probes: {a.probe_pods} pods, HTTP readiness + TCP liveness at 1 s")
            data["probes"] = {kind: b.run(kind, max(a.probe_pods, 110), lambda s: b.probe_scenario(s, a.probe_pods))
                              for kind in kinds}
            save("probes", data["probes"])
        if "churn" in only:
            log(f"churn: {a.churn_rate} pods/s for {a.churn_seconds} s, each living {a.churn_lifetime} s")
            data["churn"] = {kind: b.run(kind, 110 + int(a.churn_rate * a.churn_lifetime), b.churn_scenario)
                             for kind in kinds}
            save("churn", data["churn"])
        if "api" in only:
            data["api"] = api_part(a, b, kinds, d)
            save("api", data["api"])
    except KeyboardInterrupt:
        log("interrupted: cleaning up")
    finally:
        try:
            rt.clean()
        except Exception as e:
            log(f"cleaning the runtime failed: {e}")
        rt.stop()
        shutil.rmtree(d, ignore_errors=True)

    report(data, sub)


def report(data, sub):
    results.write_json("compare", data)
    charts(data, sub)
    text, md = table(data)
    m = data["machine"]
    desc = (f"{data['date']} · {m['cpus']} CPUs ({m['cpu_model']}, {m['virtualization']}), {m['memory_gb']} GB, "
            f"kernel {m['kernel']}, Debian {m['debian']}, {m['containerd']}, runc {m['runc'].split()[-1] if m['runc'] else '?'}, "
            f"ckubelet {m['ckubelet_commit']}")
    with open(os.path.join(results.RESULTS, "compare.md"), "w") as f:
        f.write(("**DEVELOPMENT RUN (--quick)**\n\n" if data.get("quick") else "") + desc + "\n\n`" + data["command"] +
                "`\n\n" + md)
    print()
    print(desc)
    print(text)
    print(f"\nfigures: {results.RESULTS}/compare*.json, charts: {results.RESULTS}/compare-*.png")


def merge(paths):
    """compare.json, charts and table from the per-scenario files of several runs (each keeps its own header,
    under "parts", so every figure still says when, where and by which command it was made)."""
    data, starts = {"parts": []}, {}
    for p in paths:
        with open(p) as f:
            part = json.load(f)
        data["parts"].append({k: part.get(k) for k in ("date", "command", "machine", "quick")} | {"file": p})
        for k in ("date", "machine", "quick"):
            data.setdefault(k, part.get(k))
        v = part.get("go_version") or "v1.20.2"  # files from before --go-version compared against v1.20.2
        if data.setdefault("go_version", v) != v:
            sys.exit(f"compare.py --merge: {p} compares against the Go kubelet {v}, an earlier file against "
                     f"{data['go_version']}")
        data["quick"] = data["quick"] or part.get("quick")
        for e in part.get("start", []):  # by N, and within N by kubelet: a later file's ckubelet replaces an earlier's
            starts.setdefault(e["n"], {}).update(e)
        for k in ("probes", "churn", "api"):
            if k in part:
                data[k] = part[k]
    if starts:
        data["start"] = [starts[n] for n in sorted(starts)]
    data["command"] = "; ".join(sorted({q["command"] for q in data["parts"]}))
    data["date"] = " – ".join(sorted({q["date"] for q in data["parts"]}))
    m = data["machine"]
    report(data, f"{data['date']}, {m['cpus']} CPUs {m['cpu_model']}, {m['containerd']}")


if __name__ == "__main__":
    main()
