#!/usr/bin/python3
"""A short smoke run of ckubelet under valgrind's memcheck, on a private containerd.

  /usr/bin/python3 tests/valgrind.py      (as root; uses build/ as is, or CKUBELET_BUILD; builds nothing)

Two static pods (a sleeper, and a busybox httpd with an HTTP readiness and a TCP liveness probe) until both
run and the second is Ready; a few requests on the read-only port (/healthz, /pods, /stats/summary, /metrics,
/metrics/cadvisor); the first pod's manifest removed until its sandbox is gone from the runtime; then SIGTERM.
Fails (exit 1) when memcheck reports any memory error or a definite leak (--error-exitcode), when ckubelet did
not exit cleanly, or when it left a file descriptor open at exit beyond stdin, stdout, stderr and its log
(--track-fds). tests/valgrind.supp holds the suppressions (library-internal noise only). The valgrind log is
kept next to the kubelet's and printed when the check fails.
"""
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "bench"))
from harness import private_runtime  # noqa: E402  (it puts tests/e2e on the path)
import conftest  # noqa: E402
from conftest import NODE, SLEEPER, Kubelet, free_port, pod_manifest, wait_for  # noqa: E402
from compare import PROBE_POD  # noqa: E402  (the httpd pod with an HTTP readiness and a TCP liveness probe)

SUPP = os.path.join(HERE, "valgrind.supp")
TIMEOUT = 180  # s, for each step: memcheck makes ckubelet 20-50 times slower, and the machine may be loaded


class ValgrindKubelet(Kubelet):
    def __init__(self, rt, d):
        super().__init__(rt, d)
        self.vglog = os.path.join(d, "valgrind.log")

    def args(self):
        return ["valgrind", "--tool=memcheck", "--leak-check=full", "--show-leak-kinds=definite",
                "--errors-for-leak-kinds=definite", "--error-exitcode=99", "--track-fds=yes", "--num-callers=40",
                f"--suppressions={SUPP}", f"--log-file={self.vglog}"] + super().args()


def get(port, path):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=60) as r:
        return r.read()


def ready(port, name):
    for p in json.loads(get(port, "/pods")).get("items") or []:
        if p["metadata"]["name"] == name:
            return any(c.get("type") == "Ready" and c.get("status") == "True"
                       for c in (p.get("status") or {}).get("conditions") or [])
    return False


def open_fds_at_exit(vglog):
    """the fds valgrind listed as open at exit, less the standard three and its own log: [(fd, description)]"""
    fds = []
    with open(vglog, errors="replace") as f:
        text = f.read()
    for m in re.finditer(r"==\d+== Open (?:file descriptor|AF_\w+ socket) (\d+): ?(.*)", text):
        fd, what = int(m.group(1)), m.group(2)
        if fd > 2 and what != vglog:
            fds.append((fd, what))
    return fds


def main():
    if os.geteuid() != 0:
        sys.exit("valgrind.py: run as root")
    with open(conftest.CKUBELET, "rb") as f:
        if b"__asan_init" in f.read():
            sys.exit(f"valgrind.py: {conftest.CKUBELET} is built with AddressSanitizer; give a plain build "
                     "(CKUBELET_BUILD)")
    t0 = time.monotonic()
    ok = True
    with private_runtime(os.getpid() % 90) as (rt, d):
        k = ValgrindKubelet(rt, os.path.join(d, "kubelet"))
        ro = free_port()
        k.extra_args = ["--v", "2", "--read-only-port", str(ro)]
        k.write("sleeper.yaml", pod_manifest("sleeper", [("c", SLEEPER)], grace=2))
        k.write("web.yaml", PROBE_POD.format(name="web", delay=0))
        k.start()
        try:
            wait_for(lambda: k.alive() and rt.running(f"sleeper-{NODE}") and rt.running(f"web-{NODE}"), TIMEOUT,
                     interval=1, msg="both pods running")
            wait_for(lambda: ready(ro, f"web-{NODE}"), TIMEOUT, interval=1, msg="web Ready (readiness probe)")
            print(f"valgrind.py: both pods running, web Ready ({time.monotonic() - t0:.0f} s)")
            for path in ("/healthz", "/pods", "/stats/summary", "/metrics", "/metrics/cadvisor"):
                print(f"valgrind.py: GET {path}: {len(get(ro, path))} bytes")
            k.remove("sleeper.yaml")
            wait_for(lambda: not rt.pods_named(f"sleeper-{NODE}"), TIMEOUT, interval=1,
                     msg="the sleeper's sandbox removed")
            print(f"valgrind.py: sleeper removed ({time.monotonic() - t0:.0f} s); SIGTERM")
            k.proc.send_signal(signal.SIGTERM)
            rc = k.proc.wait(TIMEOUT)
        except BaseException:
            print("----- kubelet log (last 100 lines)\n" + "\n".join(k.log().splitlines()[-100:]))
            if k.alive():
                k.proc.kill()
                k.proc.wait(30)
            raise
        with open(k.vglog, errors="replace") as f:
            vg = f.read()
        # memcheck's verdict: the heap and leak summaries, the fds at exit, the error count
        keep = ("HEAP SUMMARY", "in use at exit", "total heap usage", "All heap blocks", "LEAK SUMMARY", "lost:",
                "reachable:", "suppressed:", "FILE DESCRIPTORS", "ERROR SUMMARY")
        print("\n".join(line for line in vg.splitlines() if any(x in line for x in keep)))
        fds = open_fds_at_exit(k.vglog)
        if rc != 0:
            ok = False
            print(f"valgrind.py: FAILED: exit status {rc} ({'memcheck errors or definite leaks' if rc == 99 else ''})")
        if fds:
            ok = False
            print(f"valgrind.py: FAILED: file descriptors open at exit: {fds}")
        if not ok:
            print(f"----- {k.vglog}\n{vg}")
            print("----- kubelet log (last 100 lines)\n" + "\n".join(k.log().splitlines()[-100:]))
    print(f"valgrind.py: {'passed' if ok else 'FAILED'} in {time.monotonic() - t0:.0f} s")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
