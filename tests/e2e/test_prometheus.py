"""A real Prometheus (Debian's) scrapes the kubelet's metrics endpoints over TLS with a client certificate, as a
monitoring stack does; PromQL through its HTTP API checks what dashboards read: a CPU-burning container's rate
and a memory-holding container's working set against the cgroups themselves, the series cAdvisor emits
(root, pod, sandbox network), and a clean scrape (up, no duplicate or rejected samples)."""
import json
import os
import re
import shutil
import subprocess
import time
import urllib.parse
import urllib.request

import pytest

from apiclient import CA, Client
from conftest import BUSYBOX, free_port, wait_for

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
JOBS = {"cadvisor": "/metrics/cadvisor", "kubelet": "/metrics", "probes": "/metrics/probes",
        "resource": "/metrics/resource", "slis": "/metrics/slis"}


class Prometheus:
    def __init__(self, d, kubelet_port, cert, key):
        self.d = d
        self.port = free_port()
        self.proc = None
        # every second for quick rates; the timeout as long as the interval lets it be (the machine may be busy)
        cfg = {"global": {"scrape_interval": "1s", "scrape_timeout": "1s"}, "scrape_configs": []}
        for job, path in JOBS.items():
            cfg["scrape_configs"].append({
                "job_name": job, "metrics_path": path, "scheme": "https",
                # the kubelet's serving certificate is self-signed (no --tls-cert-file): not verified, as
                # kube-prometheus does for the kubelet by default
                "tls_config": {"cert_file": cert, "key_file": key, "insecure_skip_verify": True},
                "static_configs": [{"targets": [f"127.0.0.1:{kubelet_port}"]}],
            })
        self.config = os.path.join(d, "prometheus.yml")
        with open(self.config, "w") as f:
            json.dump(cfg, f)  # YAML is a superset of JSON
        self.log = os.path.join(d, "prometheus.log")

    def start(self):
        with open(self.log, "w") as log:
            self.proc = subprocess.Popen([PROMETHEUS, "--config.file", self.config,
                                          "--storage.tsdb.path", os.path.join(self.d, "data"),
                                          "--web.listen-address", f"127.0.0.1:{self.port}",
                                          "--storage.tsdb.retention.time", "1h"], stdout=log, stderr=subprocess.STDOUT)
        wait_for(lambda: self.get("/-/ready")[0] == 200, timeout=60, interval=0.2, msg="prometheus ready")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)

    def get(self, path):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=10) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()
        except OSError:
            return 0, ""

    def query(self, q, at=None):
        params = {"query": q}
        if at is not None:
            params["time"] = f"{at:.3f}"
        status, body = self.get("/api/v1/query?" + urllib.parse.urlencode(params))
        assert status == 200, (q, status, body)
        data = json.loads(body)
        assert data["status"] == "success", data
        return data["data"]["result"]

    def value(self, q, at=None):
        """The one sample of an instant query, or None when there is none yet."""
        r = self.query(q, at)
        assert len(r) <= 1, (q, r)
        return float(r[0]["value"][1]) if r else None


@pytest.fixture
def prom(kubelet_factory, tmp_path):
    ca = CA(str(tmp_path / "ca"))
    cert, key = ca.client("prometheus", ["system:monitoring"])
    k = kubelet_factory(start=False)
    k.start("--client-ca-file", ca.crt, "--authorization-mode", "AlwaysAllow")
    healthz = Client(k.healthz_port, tls=False)
    wait_for(lambda: healthz.get("/healthz")[0] == 200, msg="the healthz port")
    p = Prometheus(str(tmp_path), k.port, cert, key)
    p.start()
    try:
        yield k, p, Client(k.port, cert=(cert, key)), healthz
    finally:
        p.stop()


class CgroupOf:
    """A container's own cgroup counters, read as the test's reference: cgroup v1 (cpuacct, memory; the hybrid
    layout too) or the unified hierarchy of a pure v2 host."""

    def __init__(self, runtime, cid):
        pid = runtime.container_pid(cid)
        paths = {}
        with open(f"/proc/{pid}/cgroup") as f:
            for line in f:
                _, ctrls, path = line.strip().split(":", 2)
                for c in (ctrls.split(",") if ctrls else [""]):
                    paths[c] = path
        self.v2 = os.path.exists("/sys/fs/cgroup/cgroup.controllers")
        if self.v2:
            self.dir = "/sys/fs/cgroup" + paths[""]
            self.id = paths[""]
        else:
            cpu = "/sys/fs/cgroup/cpu,cpuacct" if os.path.isdir("/sys/fs/cgroup/cpu,cpuacct") else "/sys/fs/cgroup/cpuacct"
            self.cpu_dir = cpu + paths["cpuacct"]
            self.mem_dir = "/sys/fs/cgroup/memory" + paths["memory"]
            self.id = paths["memory"]

    @staticmethod
    def keyed(path):
        out = {}
        with open(path) as f:
            for line in f:
                k, v = line.split()[:2]
                out[k] = int(v)
        return out

    def cpu_ns(self):
        if self.v2:
            return self.keyed(self.dir + "/cpu.stat")["usage_usec"] * 1000
        with open(self.cpu_dir + "/cpuacct.usage") as f:
            return int(f.read())

    def working_set(self):
        """usage less the inactive file pages, as cAdvisor and the kubelet define it"""
        if self.v2:
            with open(self.dir + "/memory.current") as f:
                usage = int(f.read())
            return max(usage - self.keyed(self.dir + "/memory.stat")["inactive_file"], 0)
        with open(self.mem_dir + "/memory.usage_in_bytes") as f:
            usage = int(f.read())
        return max(usage - self.keyed(self.mem_dir + "/memory.stat")["total_inactive_file"], 0)


def test_prometheus_scrapes_kubelet(prom, runtime):
    k, p, client, healthz = prom
    # the busy loop requests a core so that it gets one on a busy machine; the holder keeps 40 MB (and requests half
    # a core: next to the busy loop, BestEffort's 2 CPU shares left it filling them for over a minute)
    k.write("burn.yaml", f"""\
apiVersion: v1
kind: Pod
metadata: {{name: burn}}
spec:
  containers:
  - name: cpu
    image: {BUSYBOX}
    command: ["sh", "-c", "while true; do :; done"]
    resources: {{requests: {{cpu: "1"}}, limits: {{cpu: "2"}}}}
""")
    k.write("hold.yaml", f"""\
apiVersion: v1
kind: Pod
metadata: {{name: hold}}
spec:
  containers:
  - name: mem
    image: {BUSYBOX}
    command: ["sh", "-c", "x=$(head -c 40000000 /dev/zero | tr '\\\\0' a); while true; do sleep 1; done"]
    resources: {{requests: {{cpu: "500m"}}}}
    readinessProbe:
      exec: {{command: ["true"]}}
      periodSeconds: 1
""")
    cpu_c = wait_for(lambda: runtime.running("burn-testnode", "cpu"), timeout=60, msg="cpu container")[0]
    mem_c = wait_for(lambda: runtime.running("hold-testnode", "mem"), timeout=60, msg="mem container")[0]
    cpu_cg = CgroupOf(runtime, cpu_c["id"])
    mem_cg = CgroupOf(runtime, mem_c["id"])
    for _ in range(3):
        assert healthz.get("/healthz")[0] == 200

    # every endpoint is scraped without error
    def all_up():
        r = {s["metric"]["job"]: float(s["value"][1]) for s in p.query("up")}
        return set(r) == set(JOBS) and all(v == 1 for v in r.values()) and r
    wait_for(all_up, timeout=60, interval=0.5, msg="every job up")

    # the cAdvisor series dashboards select on: container and pod labels, id as the cgroup path, the image
    sel = ('container_cpu_usage_seconds_total{job="cadvisor",pod="burn-testnode",container="cpu",namespace="default",'
           'cpu="total"}')
    series = wait_for(lambda: p.query(sel), timeout=60, interval=0.5, msg="the burning container's series")
    labels = series[0]["metric"]
    assert labels["id"] == cpu_cg.id, (labels, cpu_cg.id)
    assert labels["image"] == BUSYBOX and labels["name"] == cpu_c["id"], labels

    # the CPU rate over a window, against the cgroup's own counter over the same window
    wait_for(lambda: (p.value(f"count_over_time({sel}[30s])") or 0) >= 5, timeout=60, interval=1,
             msg="samples for a rate")
    t0, u0 = time.time(), cpu_cg.cpu_ns()
    time.sleep(15)
    t1, u1 = time.time(), cpu_cg.cpu_ns()
    cgroup_rate = (u1 - u0) / 1e9 / (t1 - t0)
    time.sleep(2.5)  # the scrapes up to t1 are stored
    prom_rate = p.value(f"rate({sel}[{int((t1 - t0) * 1000)}ms])", at=t1)
    print(f"cpu rate: prometheus {prom_rate:.3f} cores, cgroup {cgroup_rate:.3f} cores")
    assert cgroup_rate > 0.05, cgroup_rate
    assert abs(prom_rate - cgroup_rate) <= 0.2 * cgroup_rate, (prom_rate, cgroup_rate)

    # the memory holder's working set, against usage - total_inactive_file read now
    msel = 'container_memory_working_set_bytes{job="cadvisor",pod="hold-testnode",container="mem",namespace="default"}'

    last = {}

    def ws_close():
        last["cgroup"] = want = mem_cg.working_set()
        last["prometheus"] = got = p.value(msel)
        return got is not None and want > 40_000_000 and abs(got - want) <= 0.1 * want and (got, want)
    try:
        got, want = wait_for(ws_close, timeout=60, interval=1, msg="the working set within 10% of the cgroup's")
    except AssertionError as e:
        d = mem_cg.dir if mem_cg.v2 else mem_cg.mem_dir
        dbg = open(d + "/memory.stat").read()
        for pid in open(d + "/cgroup.procs").read().split():
            try:
                st = open(f"/proc/{pid}/status").read()
                dbg += f"\n{pid} " + " ".join(l for l in st.splitlines() if l.startswith(("Name", "VmRSS", "VmHWM", "State")))
            except OSError:
                pass
        raise AssertionError(f"{e}: last seen {last}\n{dbg}") from None
    print(f"working set: prometheus {got:.0f} B, cgroup {want} B")

    # the pod-level cgroup (pod and namespace, no container), the sandbox's network, the root and the machine
    pod_id = os.path.dirname(mem_cg.id)
    pod_series = p.query(f'container_memory_working_set_bytes{{id="{pod_id}"}}')
    assert len(pod_series) == 1 and pod_series[0]["metric"]["pod"] == "hold-testnode" and \
        "container" not in pod_series[0]["metric"], json.dumps(pod_series)
    assert float(pod_series[0]["value"][1]) >= got
    rx = p.query('container_network_receive_bytes_total{pod="hold-testnode",interface="eth0"}')
    assert len(rx) == 1 and "container" not in rx[0]["metric"], rx  # counted once, on the sandbox
    assert p.value('container_cpu_usage_seconds_total{id="/",cpu="total"}') > 0
    assert p.value('machine_cpu_cores') == os.cpu_count()
    assert p.value('container_spec_cpu_quota{pod="burn-testnode",container="cpu"}') == 200000
    assert p.value('container_threads{pod="hold-testnode",container="mem"}') >= 1
    assert p.value('container_last_seen{pod="hold-testnode",container="mem"}') > time.time() - 60

    # the other endpoints through PromQL too
    assert p.value('kubelet_running_pods') >= 2
    assert p.value('sum(prober_probe_total{pod="hold-testnode",result="successful"})') >= 1
    assert p.value('container_memory_working_set_bytes{job="resource",pod="hold-testnode",container="mem"}') > 0
    wait_for(lambda: p.value('kubernetes_healthcheck{name="syncloop",type="healthz"}') == 1, timeout=10,
             msg="the syncloop SLI")
    assert p.value('kubernetes_healthchecks_total{name="ping",status="success",type="healthz"}') >= 3

    # a clean scrape: no duplicate series or timestamps, nothing out of order or rejected, no target errors
    for r in p.query("max by (job) (max_over_time(scrape_duration_seconds[5m]))"):
        print(f"slowest scrape of {r['metric']['job']}: {float(r['value'][1]) * 1000:.1f} ms")
    targets = json.loads(p.get("/api/v1/targets")[1])["data"]["activeTargets"]
    assert {t["labels"]["job"] for t in targets} == set(JOBS)
    for t in targets:
        assert t["health"] == "up" and t["lastError"] == "", (t["scrapePool"], t["health"], t["lastError"])
    with open(p.log) as f:
        print("PROMLOG", f.read()[-4000:])
    own = p.get("/metrics")[1]
    for name in ("prometheus_target_scrapes_sample_duplicate_timestamp_total",
                 "prometheus_target_scrapes_sample_out_of_order_total",
                 "prometheus_target_scrapes_sample_out_of_bounds_total",
                 "prometheus_target_scrapes_exceeded_sample_limit_total",
                 "prometheus_target_scrape_pool_exceeded_label_limits_total"):
        m = re.search(rf"^{name} (\S+)$", own, re.M)
        assert m and float(m.group(1)) == 0, (name, m and m.group(0))
    for job in JOBS:
        assert p.value(f'scrape_samples_scraped{{job="{job}"}}') > 0, job
    with open(p.log) as f:
        log = f.read()
    assert "Error on ingesting" not in log and "duplicate" not in log.lower(), log[-3000:]

    # the text itself: every series once
    status, text, _ = client.get("/metrics/cadvisor")
    assert status == 200
    samples = [l.rsplit(" ", 2)[0] if re.search(r"\} \S+ \d+$", l) else l.rsplit(" ", 1)[0]
               for l in text.splitlines() if l and not l.startswith("#")]
    assert len(samples) == len(set(samples))


def test_metrics_cadvisor_authorization(kubelet_factory, tmp_path):
    """/metrics/cadvisor and /metrics/slis are the metrics subresource, as upstream authorizes them."""
    ca = CA(str(tmp_path / "ca"))
    cert = ca.client("someone")
    k = kubelet_factory(start=False)
    k.start("--client-ca-file", ca.crt, "--authorization-mode", "Webhook")
    wait_for(lambda: Client(k.healthz_port, tls=False).get("/healthz")[0] == 200, msg="the healthz port")
    c = Client(k.port, cert=cert)
    for path in ("/metrics/cadvisor", "/metrics/slis"):
        status, body, _ = c.get(path)
        assert status == 403, (path, status, body)
        assert "subresource(s)=[metrics]" in body and "user=someone" in body, body
    assert Client(k.port).get("/metrics/cadvisor")[0] == 401
