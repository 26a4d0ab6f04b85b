#!/usr/bin/python3
"""What the evented PLEG (feature gate EventedPLEG) changes: reaction time to a container exit, and the kubelet's
CPU while nothing happens (the relist's cost), with the gate off and on.

  /usr/bin/python3 bench/evented_pleg.py   (as root, after ninja -C build) [--pods 110] [--window 30]
                                            [--relist-seconds 0] [--samples 20] [--burst]

On a private containerd (2.1.9 for the events: CKUBELET_CONTAINERD_BIN and CKUBELET_OCI_RUNTIME as for the e2e
tests; 1.6.20 answers Unimplemented and the gate changes nothing), ckubelet with the gate off starts N pods whose
container blocks reading its FIFO on a shared hostPath (no CPU while it waits); then, for each mode (gate off, then
on: the kubelet restarted with the gate on adopts the N running pods):

  cpu       the kubelet's CPU time (user + system, /proc/PID/stat) over --window seconds with the pods running;
  single    --samples pods' containers (each mode its own) exit (code 3, a line written to the FIFO) one at a time, 1.5 s apart: per exit,
            from the exited instance's finishedAt to the next instance's createdAt (containerd's times): p50, max.
            The next instance finds its pod's marker and keeps running.
  burst     (--burst) then half of the other pods' containers (each mode its own half) exit at once: the same, p50, p99, max (the restarts
            queue behind one another, so this measures the start path more than the PLEG).

--relist-seconds S (test-only CKUBELET_TEST_PLEG_RELIST_SECONDS) stretches the relist in both modes, to see the
event path alone. Upstream v1.37's evented PLEG keeps the 1 s relist, so by default the CPU figures differ only
by the stream's cost. Writes bench/results/evented_pleg-<N>.json. Figures, not pass/fail.
"""
import argparse
import datetime
import os
import shutil
import signal
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
from harness import private_runtime  # noqa: E402
from conftest import NODE, Kubelet, containerd_major, wait_for  # noqa: E402
import results  # noqa: E402

POD = """\
apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  terminationGracePeriodSeconds: 1
  volumes: [{{name: x, hostPath: {{path: {shared}}}}}]
  containers:
  - name: c
    image: busybox:1.36
    command: [sh, -c, "h=$(hostname); if [ -f /x/seen-$h ]; then exec sleep 1000000; fi; read x < /x/fifo-$h; touch /x/seen-$h; exit 3"]
    volumeMounts: [{{name: x, mountPath: /x}}]
"""


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def ts(s):
    """containerd's time (crictl inspect: nanoseconds since the epoch, or RFC 3339) as seconds since the epoch."""
    if str(s).isdigit():
        return int(s) / 1e9
    s = s.rstrip("Z")
    base, _, frac = s.partition(".")
    t = datetime.datetime.strptime(base, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc).timestamp()
    return t + (float("0." + frac[:9]) if frac else 0.0)


def restarted(rt, pods):
    """pod index -> {attempt: container} for those of `pods` whose container was restarted once (one crictl ps)."""
    by_pod = {}
    for c in rt.containers():
        pod = c["labels"].get("io.kubernetes.pod.name", "")
        by_pod.setdefault(pod, {})[c["metadata"].get("attempt", 0)] = c
    out = {}
    for i in pods:
        a = by_pod.get(f"p{i}-{NODE}", {})
        if 0 in a and 1 in a:
            out[i] = a
    return out


def reactions(rt, pods):
    """Per pod, from the first instance's finishedAt to the second's createdAt (containerd's times)."""
    return [ts(rt.inspect(a[1]["id"])["createdAt"]) - ts(rt.inspect(a[0]["id"])["finishedAt"])
            for a in restarted(rt, pods).values()]


def wait_restarted(rt, pods, timeout):
    try:
        wait_for(lambda: len(restarted(rt, pods)) >= len(pods), timeout, interval=1,
                 msg=f"{len(pods)} containers restarted once")
    except AssertionError:
        done = restarted(rt, pods)
        for i in [i for i in pods if i not in done][:5]:
            print(f"  p{i}: " + ", ".join(f"{c['metadata'].get('attempt', 0)}:{c['state']}"
                                         for c in rt.containers_of(f"p{i}-{NODE}", "c")))
        raise


def figures(r):
    r = sorted(r)
    return {"p50": statistics.median(r), "p99": r[min(len(r) - 1, int(0.99 * len(r)))], "max": r[-1], "n": len(r)}


def fifo(shared, i):
    return os.path.join(shared, f"fifo-p{i}-{NODE}")  # the container's hostname is the pod's name


def release(shared, i):
    """A line into pod i's FIFO: its container's read returns and it exits."""
    fd = os.open(fifo(shared, i), os.O_WRONLY | os.O_NONBLOCK)
    try:
        os.write(fd, b"go\n")
    finally:
        os.close(fd)


def start_kubelet(k, n, gate, relist_seconds):
    k.extra_args = ["--v", "1", "--max-pods", str(max(n, 110)), "--feature-gates",
                    f"EventedPLEG={'true' if gate else 'false'}"]
    if relist_seconds:
        k.env = dict(os.environ, CKUBELET_TEST_PLEG_RELIST_SECONDS=str(relist_seconds))
    k.start()


def one_mode(rt, k, n, gate, window, relist_seconds, sample, rest):
    """One mode on the N running pods: the kubelet (re)started with the gate as asked adopts them; then the CPU
    window, the sample pods' exits one at a time and, with rest, those pods' exits at once."""
    log_from = len(k.log()) if os.path.exists(k.logfile) else 0
    start_kubelet(k, n, gate, relist_seconds)
    wait_for(lambda: len([c for c in rt.containers() if c["state"] == "CONTAINER_RUNNING"]) >= n, 900,
             interval=2, msg=f"{n} containers running")
    time.sleep(5 + n / 50)  # a restarted kubelet adopts the running pods: its first passes over them
    c0 = cpu_seconds(k.proc.pid)
    time.sleep(window)
    cpu = cpu_seconds(k.proc.pid) - c0
    # one exit at a time: the sample pods exit 1.5 s apart, each alone among the N (the reaction at N pods)
    for i in sample:
        release(k.shared, i)
        time.sleep(1.5)
    wait_restarted(rt, sample, 120 + 2 * (relist_seconds or 0))
    single = figures(reactions(rt, sample))
    res = {"gate": gate, "pods": n, "cpu_seconds_per_minute": cpu * 60 / window, "single": single}
    line = (f"  EventedPLEG={gate}: CPU {res['cpu_seconds_per_minute']:.2f} s/min; one exit at a time "
            f"(n={single['n']}): p50 {single['p50']:.3f} s, max {single['max']:.3f} s")
    if rest:
        # these containers at once: the restarts queue behind one another
        for i in rest:
            release(k.shared, i)
        wait_restarted(rt, rest, 120 + 2 * len(rest) + 2 * (relist_seconds or 0))
        res["burst"] = figures(reactions(rt, rest))
        line += (f"; {len(rest)} at once: p50 {res['burst']['p50']:.3f} s, p99 {res['burst']['p99']:.3f} s, "
                 f"max {res['burst']['max']:.3f} s")
    res["fast_path_disabled"] = "disabling container-termination fast path" in k.log()[log_from:]
    print(line, flush=True)
    k.term(60)
    return res


def run(rt, d, a, out):
    """The N pods are started once, by the first mode's kubelet; the second mode's kubelet adopts them (a kubelet
    restart leaves pods running), so each mode runs at N pods without paying for N starts and N stops twice. Each
    mode has its own sample pods (a pod whose container exited once keeps running after its restart) and, with
    --burst, its own half of the others. The results file is written after each mode."""
    n = a.pods
    k = Kubelet(rt, os.path.join(d, "kubelet"))
    k.shared = tempfile.mkdtemp(prefix="evented-", dir=d)
    for i in range(n):
        os.mkfifo(fifo(k.shared, i))
    m = min(a.samples, n // 2)
    samples = [list(range(0, m)), list(range(m, 2 * m))]
    others = list(range(2 * m, n))
    try:
        for i in range(n):
            k.write(f"p{i}.yaml", POD.format(name=f"p{i}", shared=k.shared))
        for j, gate in enumerate((False, True)):
            out["modes"].append(one_mode(rt, k, n, gate, a.window, a.relist_seconds, samples[j],
                                         others[j::2] if a.burst else []))
            results.write_json(f"evented_pleg-{n}", out)
    finally:
        if not k.alive():
            start_kubelet(k, n, False, 0)
        for i in range(n):
            k.remove(f"p{i}.yaml")
        try:
            wait_for(lambda: not [c for c in rt.containers() if c["state"] == "CONTAINER_RUNNING"], 300 + n,
                     interval=2, msg="every container stopped")
        finally:
            k.term(60)
            rt.clean()
            shutil.rmtree(k.shared, ignore_errors=True)


def main():
    # a SIGTERM (timeout, kill) unwinds like an error, so that the pods, the kubelet and containerd are cleaned up
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    ap = argparse.ArgumentParser()
    ap.add_argument("--pods", type=int, default=110)
    ap.add_argument("--window", type=int, default=30, help="seconds of the CPU window")
    ap.add_argument("--relist-seconds", type=int, default=0)
    ap.add_argument("--samples", type=int, default=20, help="pods that exit one at a time")
    ap.add_argument("--burst", action="store_true", help="then every other pod's container exits at once")
    a = ap.parse_args()
    out = {**results.header(), "pods": a.pods, "modes": []}
    with private_runtime(94) as (rt, d):  # 90-99: never an e2e session's bridge
        out["containerd_major"] = containerd_major()
        print(f"evented PLEG: {a.pods} pods on containerd {out['containerd_major']}.x, {os.cpu_count()} CPUs")
        run(rt, d, a, out)


if __name__ == "__main__":
    main()
