"""The node conformance tier (tests/conformance.sh): upstream's node e2e suite e2e_node.test v1.37.2, its
NodeConformance specs minus [Serial], [Disruptive], [Flaky], [Slow] and those in skip.txt, run against ckubelet
(build/ckubelet of the checkout) and against the upstream kubelet v1.37.2, each on a fresh private containerd
(scripts/containerd.sh through the e2e harness's Runtime) and a fresh v1.37.2 control plane
(tests/e2e/controlplane.py), with the stand-in images of images.py; then both results side by side.

    run.py [--ci] [--kubelet ckubelet|upstream|both] [--shards N] [--focus REGEX] [--out DIR]

--ci runs the fixed subset of ci-specs.txt (ckubelet only unless --kubelet says otherwise) and exits 1 when
ckubelet fails one of them; without it the whole tier runs on both kubelets. Needs root (containerd, mounts).

The kubelets get the configuration upstream's node e2e gives its kubelet (test/e2e_node/services/kubelet.go and
jenkins/default-kubelet-config.yaml): anonymous authentication, no webhook authentication, AlwaysAllow,
read-only port 10255, cgroupfs, the eviction thresholds, volumeStatsAggPeriod and fileCheckFrequency 10s,
serializeImagePulls false, a static pod directory, root directory /var/lib/kubelet; the upstream kubelet also
failCgroupV1: false (cgroup v1 here). Differences: a private cgroup root (/ckubelet-<pid>-<n>) instead of "/",
and /var/lib/kubelet, /var/log/pods and /var/log/containers are bind mounts of private directories for the run
(the suite's device plugins and log path specs use those fixed paths; the machine's own stay untouched). The
node's name is the machine's host name (the suite lists the cluster's only node); the kubelets report the
machine's non-loopback address (kube-apiserver v1.37 proxies to no loopback address).

The suite runs with --start-services=false --prepull-images=false --host (the apiserver) --bearer-token (a
cluster-admin service account's token) --node-name; the specs are split into --shards processes (2 by default: the
machine has 2 cores), each spec to the process with the fewest so far and the specs of one ginkgo Ordered container
together, each process focused on its specs by an anchored regular expression of their full names. Results (the JSON reports, logs, summary.txt, results.json) go to --out."""
import argparse
import functools
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "e2e"))
VERSION = "v1.37.2"
os.environ["CKUBELET_K8S_VERSION"] = VERSION
import controlplane  # noqa: E402
from conftest import Runtime, make_cgroup_root, remove_cgroup_root, wait_for  # noqa: E402

BUILD = os.environ.get("CKUBELET_BUILD", os.path.join(REPO, "build"))
CACHE = os.environ.get("CKUBELET_CONFORMANCE_CACHE", "/var/tmp/ckubelet-conformance-images")
TAGS = re.compile(r" \[(NodeConformance|Conformance)\]")
SKIP_RE = r"\[Serial\]|\[Disruptive\]|\[Flaky\]|\[Slow\]"
GOMODCACHE = os.path.join(os.environ.get("CKUBELET_GO_CACHE", "/var/cache/ckubelet-go"), "mod")
BOUND = ("/var/lib/kubelet", "/var/log/pods", "/var/log/containers")


def log(msg):
    print(f"[conformance {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def norm(name):
    return TAGS.sub("", name)


def go_quote(s):
    """s as a Go regular expression; spaces as ' +' (ginkgo joins its texts leaving out empty ones, so the
    report's hierarchy can show two spaces where the focused text has one)."""
    return re.sub(r" +", " +", re.sub(r"([\\.+*?()|\[\]{}^$])", r"\\\1", s))


# ------------------------------------------------------------------------------------------- building


def build_k8s():
    p = subprocess.run(["bash", os.path.join(REPO, "scripts", "build-kubernetes.sh")], capture_output=True, text=True,
                       env=dict(os.environ, CKUBELET_K8S_VERSION=VERSION, CKUBELET_K8S_E2E_NODE="1"))
    lines = p.stdout.strip().splitlines()
    if p.returncode != 0 or not lines:
        sys.exit(f"scripts/build-kubernetes.sh failed:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return lines[-1]


def build_images(bindir):
    """The stand-in images' tar (rebuilt when an input is newer), and its directory."""
    os.makedirs(CACHE, exist_ok=True)
    tar = os.path.join(CACHE, "images.tar")
    inputs = [os.path.join(HERE, f) for f in ("images.py", "nmeter.c", "pause.c")] + \
        [os.path.join(bindir, b) for b in ("agnhost", "nonewprivs")] + ["/bin/busybox"]
    if os.path.exists(tar) and all(os.path.getmtime(tar) > os.path.getmtime(i) for i in inputs):
        return tar
    tools = os.path.join(CACHE, "tools")
    os.makedirs(tools, exist_ok=True)
    for prog in ("nmeter", "pause"):
        subprocess.run(["cc", "-static", "-O2", "-Wall", "-Wextra", "-o", os.path.join(tools, prog),
                        os.path.join(HERE, prog + ".c")], check=True)
    shutil.rmtree(tar + ".dir", ignore_errors=True)
    subprocess.run([sys.executable, os.path.join(HERE, "images.py"), tar, bindir, tools], check=True,
                   stdout=subprocess.DEVNULL)
    return tar


# ------------------------------------------------------------------------------------------- the spec list


@functools.lru_cache(maxsize=None)
def source_lines(path):
    """A Go source file's lines (each read once: the suite's 432 specs name the same few files)."""
    with open(path) as f:
        return f.read().split("\n")


def ordered_container(spec):
    """The location of the outermost ginkgo.Ordered container a spec is in, or None. Ginkgo's dry-run report does
    not say (IsInOrderedContainer is false there), so the containers' lines are read in the module's source, which
    scripts/build-kubernetes.sh left in Go's module cache."""
    for loc in spec["ContainerHierarchyLocations"]:
        path = os.path.join(GOMODCACHE, loc["FileName"])
        try:
            line = source_lines(path)[loc["LineNumber"] - 1]
        except (OSError, IndexError) as e:
            sys.exit(f"cannot read {path}:{loc['LineNumber']} to find the suite's Ordered containers: {e}")
        if re.search(r"\bginkgo\.Ordered\b", line):
            return f"{loc['FileName']}:{loc['LineNumber']}"
    return None


def dry_run(e2e, workdir):
    """{normalized name: full name} of the tier (NodeConformance minus Serial/Disruptive/Flaky/Slow), and
    {normalized name: its Ordered container} for the specs in one (they share state: one shard runs them all)."""
    report = os.path.join(workdir, "dry-run.json")
    subprocess.run([e2e, "--ginkgo.dry-run", "--ginkgo.focus=NodeConformance", f"--ginkgo.skip={SKIP_RE}",
                    f"--ginkgo.json-report={report}", "--ginkgo.no-color"], cwd=workdir, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(report) as f:
        r = json.load(f)
    out, ordered = {}, {}
    for s in r[0]["SpecReports"]:
        if s["LeafNodeType"] == "It" and s["State"] == "passed":
            full = " ".join(s["ContainerHierarchyTexts"] + [s["LeafNodeText"]])
            out[norm(full)] = full
            group = ordered_container(s)
            if group:
                ordered[norm(full)] = group
    return out, ordered


def deal(names, ordered, shards):
    """The specs split into shards: an Ordered container's specs together in one shard (its later specs read what
    the first one recorded: split across processes they fail on any kubelet), each unit to the shard with the
    fewest specs so far, in the order of names."""
    units, index = [], {}
    for n in names:
        g = ordered.get(n)
        if g is None:
            units.append([n])
        elif g in index:
            units[index[g]].append(n)
        else:
            index[g] = len(units)
            units.append([n])
    groups = [[] for _ in range(shards)]
    for u in units:
        min(groups, key=len).extend(u)
    return groups


def read_list(path):
    with open(path) as f:
        return [l.rstrip("\n") for l in f if l.strip() and not l.startswith("#")]


def select(tier, ci, focus):
    skips = [tuple(l.split("\t", 1)) for l in read_list(os.path.join(HERE, "skip.txt"))]
    excluded = {n: why for n in tier for rx, why in skips if re.search(rx, n)}
    if ci:
        names = read_list(os.path.join(HERE, "ci-specs.txt"))
        missing = [n for n in names if n not in tier]
        if missing:
            sys.exit("ci-specs.txt names specs that are not in the tier:\n" + "\n".join(missing))
    else:
        names = sorted(n for n in tier if n not in excluded)
    if focus:
        names = [n for n in names if re.search(focus, n)]
    return names, excluded


# ------------------------------------------------------------------------------------------- one kubelet


def node_ip():
    out = subprocess.run(["hostname", "-I"], capture_output=True, text=True).stdout.split()
    return next((a for a in out if ":" not in a and not a.startswith("127.")), "127.0.0.1")


def admin_token(cp):
    """A token of the service account kube-system/conformance, bound to cluster-admin (the suite's
    --bearer-token)."""
    a = cp.admin
    a.create("serviceaccounts", {"apiVersion": "v1", "kind": "ServiceAccount",
                                 "metadata": {"name": "conformance", "namespace": "kube-system"}})
    a.create("clusterrolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "conformance"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"kind": "ServiceAccount", "name": "conformance", "namespace": "kube-system"}]})
    tr = a.call("POST", "/api/v1/namespaces/kube-system/serviceaccounts/conformance/token",
                {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                 "spec": {"expirationSeconds": 6 * 3600}})
    return tr["status"]["token"]


def kubelet_config(path, which, work, cp, cgroup_root):
    static = os.path.join(work, "static-pods")
    os.makedirs(static, exist_ok=True)
    text = textwrap.dedent(f"""\
        apiVersion: kubelet.config.k8s.io/v1beta1
        kind: KubeletConfiguration
        cgroupDriver: cgroupfs
        cgroupRoot: {cgroup_root}
        podCIDR: 10.100.0.0/24
        volumeStatsAggPeriod: 10s
        fileCheckFrequency: 10s
        evictionPressureTransitionPeriod: 30s
        evictionHard:
          memory.available: 250Mi
          nodefs.available: 10%
          nodefs.inodesFree: 5%
        evictionMinimumReclaim:
          nodefs.available: 5%
          nodefs.inodesFree: 5%
        serializeImagePulls: false
        authentication:
          anonymous:
            enabled: true
          webhook:
            enabled: false
          x509:
            clientCAFile: {cp.ca}
        authorization:
          mode: AlwaysAllow
        readOnlyPort: 10255
        staticPodPath: {static}
        """)
    if which == "upstream":
        text += "failCgroupV1: false\n"
    with open(path, "w") as f:
        f.write(text)
    return path


class BindMounts:
    """/var/lib/kubelet, /var/log/pods and /var/log/containers as private directories for the run."""

    def __init__(self, work):
        self.work = work
        self.done = []
        self.created = []

    def __enter__(self):
        try:
            self._mount()
        except BaseException:
            self.__exit__()
            raise
        return self

    def _mount(self):
        for p in BOUND:
            src = os.path.join(self.work, "host" + p.replace("/", "_"))
            os.makedirs(src, exist_ok=True)
            if not os.path.isdir(p):
                os.makedirs(p)
                self.created.append(p)
            subprocess.run(["mount", "--bind", src, p], check=True)
            self.done.append(p)

    def __exit__(self, *exc):
        for p in reversed(self.done):
            # the upstream kubelet bind-mounts its root directory onto itself (to make it rshared): every mount
            # stacked there from our directory goes
            src = os.path.join(self.work, "host" + p.replace("/", "_"))
            for _ in range(10):
                with open("/proc/self/mountinfo") as f:
                    ours = [l for l in f if l.split()[4] == p and l.split()[3].startswith(src)]
                if not ours or subprocess.run(["umount", "-l", p], check=False).returncode != 0:
                    break
        for p in reversed(self.created):
            try:
                os.rmdir(p)
            except OSError:
                pass


def start_kubelet(which, work, cp, rt, bindir, node, ip, cgroup_root):
    cfg = kubelet_config(os.path.join(work, "kubelet-config.yaml"), which, work, cp, cgroup_root)
    kubeconfig = cp.node_credentials(node, days=2)
    if which == "ckubelet":
        args = [os.path.join(BUILD, "ckubelet"), "--v", os.environ.get("CKUBELET_V", "2")]
    else:
        args = [os.path.join(bindir, "kubelet"), "--v", "2", "--node-ip", ip]
    args += ["--config", cfg, "--kubeconfig", kubeconfig, "--root-dir", "/var/lib/kubelet",
             "--hostname-override", node, "--container-runtime-endpoint", rt.endpoint]
    logf = open(os.path.join(work, "kubelet.log"), "w")
    logf.write(" ".join(args) + "\n")
    logf.flush()
    p = subprocess.Popen(args, stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                         start_new_session=True)
    logf.close()

    def ready():
        if p.poll() is not None:
            raise SystemExit(f"{which} exited with {p.returncode}; see {work}/kubelet.log")
        n = cp.admin.get("nodes", node)
        return n and any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"].get("conditions", []))
    wait_for(ready, 120, interval=1, msg=f"node {node} Ready ({which})")
    return p


def stop_kubelet(p):
    if p.poll() is None:
        os.killpg(p.pid, signal.SIGTERM)
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait(10)


def run_shards(e2e, names, tier, ordered, shards, work, cp, token, node, rt, timeout):
    groups = deal(names, ordered, shards)
    procs = []
    for i, g in enumerate(groups):
        if not g:
            continue
        d = os.path.join(work, f"shard-{i}")
        os.makedirs(d, exist_ok=True)
        focus = "^E2eNode Suite (?:" + "|".join(go_quote(tier[n]) for n in g) + ")$"
        args = [e2e, "--start-services=false", "--prepull-images=false", "--host", cp.server, "--bearer-token", token,
                "--node-name", node, "--container-runtime-endpoint", rt.endpoint, "--report-dir", d,
                f"--ginkgo.focus={focus}", f"--ginkgo.json-report={d}/report.json", "--ginkgo.no-color",
                f"--ginkgo.timeout={timeout}", "--ginkgo.v"]
        out = open(os.path.join(d, "e2e.log"), "w")
        procs.append((subprocess.Popen(args, cwd=d, stdout=out, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL), d, out, set(g)))
        log(f"shard {i}: {len(g)} specs, log {d}/e2e.log")
    try:
        for p, _, _, _ in procs:
            p.wait()
    finally:
        for p, _, out, _ in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
            out.close()
    results = {}
    for p, d, out, n in procs:
        try:
            with open(os.path.join(d, "report.json")) as f:
                r = json.load(f)
        except (OSError, ValueError) as e:
            log(f"{d}: no report ({e}); exit {p.returncode}")
            continue
        for s in r[0]["SpecReports"]:
            if s["LeafNodeType"] == "It":
                name = norm(" ".join(s["ContainerHierarchyTexts"] + [s["LeafNodeText"]]))
                if name not in n:  # the other shards' specs, reported skipped here
                    continue
                fail = s.get("Failure") or {}
                results[name] = {"state": s["State"], "seconds": round(s.get("RunTime", 0) / 1e9, 1),
                                 "message": (fail.get("Message") or "")[:2000],
                                 "location": (fail.get("Location") or {}).get("FileName", "")}
            elif s["State"] not in ("passed", "skipped"):  # a failed BeforeSuite fails every spec of the shard
                log(f"{d}: {s['LeafNodeType']} {s['State']}: {(s.get('Failure') or {}).get('Message', '')[:500]}")
    for n in names:
        results.setdefault(n, {"state": "not run", "seconds": 0, "message": "no result (see the shard's log)"})
    return results


def run_one(which, args, names, tier, ordered, bindir, e2e, images_tar, node, ip):
    work = os.path.join(args.out, which)
    os.makedirs(work, exist_ok=True)
    t0 = time.monotonic()
    rt = Runtime(os.path.join(work, "containerd"), os.getpid() % 90)
    cp = controlplane.ControlPlane(os.path.join(work, "cluster"))
    cgroup_root = make_cgroup_root()
    kubelet = None
    try:
        rt.start(env=dict(os.environ, CKUBELET_CONTAINERD_TEST_HANDLER="1"))  # upstream's node e2e has it too
        subprocess.run(["bash", os.path.join(REPO, "scripts", "containerd.sh"), "import", rt.dir, images_tar],
                       check=True)
        os.makedirs(cp.dir, exist_ok=True)
        cp.start()
        token = admin_token(cp)
        with BindMounts(work):
            try:
                kubelet = start_kubelet(which, work, cp, rt, bindir, node, ip, cgroup_root)
                log(f"{which}: node {node} Ready after {time.monotonic() - t0:.0f} s; running {len(names)} specs")
                t1 = time.monotonic()
                results = run_shards(e2e, names, tier, ordered, args.shards, work, cp, token, node, rt, args.timeout)
                spent = time.monotonic() - t1
            finally:
                if kubelet:
                    stop_kubelet(kubelet)
                try:
                    rt.clean(f"the conformance run of {which}")
                except Exception as e:
                    log(f"cleaning the runtime: {e}")
    finally:
        cp.stop()
        rt.stop()
        try:
            remove_cgroup_root(cgroup_root)
        except AssertionError as e:
            log(str(e))
    return results, spent


# ------------------------------------------------------------------------------------------- main


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ci", action="store_true", help="the fixed subset of ci-specs.txt")
    ap.add_argument("--kubelet", choices=("ckubelet", "upstream", "both"))
    ap.add_argument("--shards", type=int, default=2)
    ap.add_argument("--focus", help="only the specs whose name matches this regular expression")
    ap.add_argument("--out", help="the results directory (default /var/tmp/ckubelet-conformance/<time>)")
    ap.add_argument("--timeout", default="", help="ginkgo's suite timeout per shard (default 1h, 6h for the tier)")
    ap.add_argument("--list", action="store_true", help="print the specs that would run and exit")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # clean up (finally) on SIGTERM too
    args.kubelet = args.kubelet or ("ckubelet" if args.ci else "both")
    args.timeout = args.timeout or ("1h" if args.ci else "6h")
    args.out = args.out or os.path.join("/var/tmp/ckubelet-conformance", time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()))
    os.makedirs(args.out, exist_ok=True)

    t0 = time.monotonic()
    bindir = build_k8s()
    e2e = os.path.join(bindir, "e2e_node.test")
    tier, ordered = dry_run(e2e, args.out)
    names, excluded = select(tier, args.ci, args.focus)
    if args.list:
        print("\n".join(names))
        return 0
    if not os.access(os.path.join(BUILD, "ckubelet"), os.X_OK) and args.kubelet != "upstream":
        sys.exit(f"{BUILD}/ckubelet is not built (meson setup build && ninja -C build)")
    images_tar = build_images(bindir)
    node = socket.gethostname().lower()
    ip = node_ip()
    log(f"tier: {len(tier)} specs, {len(excluded)} left out (skip.txt); running {len(names)} "
        f"({'CI subset' if args.ci else 'whole tier'}) on node {node} ({ip}); results in {args.out}; "
        f"set-up {time.monotonic() - t0:.0f} s")

    kubelets = ["ckubelet", "upstream"] if args.kubelet == "both" else [args.kubelet]
    all_results, times = {}, {}
    for k in kubelets:
        all_results[k], times[k] = run_one(k, args, names, tier, ordered, bindir, e2e, images_tar, node, ip)
        with open(os.path.join(args.out, "results.json"), "w") as f:
            json.dump({"specs": names, "excluded": excluded, "results": all_results, "seconds": times}, f, indent=1)

    # the summary
    lines = []
    counts = {k: {s: sum(1 for r in all_results[k].values() if r["state"] == s)
                  for s in ("passed", "failed", "skipped", "other")} for k in kubelets}
    for k in kubelets:
        counts[k]["other"] = len(names) - counts[k]["passed"] - counts[k]["failed"] - counts[k]["skipped"]
    lines.append(f"node conformance {VERSION}: {len(names)} specs ({'CI subset' if args.ci else 'whole tier'}), "
                 f"{args.shards} shards")
    lines.append(f"{'':10}" + "".join(f"{k:>12}" for k in kubelets))
    for s in ("passed", "failed", "skipped", "other"):
        lines.append(f"{s:10}" + "".join(f"{counts[k][s]:>12}" for k in kubelets))
    lines.append(f"{'minutes':10}" + "".join(f"{times[k] / 60:>12.1f}" for k in kubelets))
    lines.append("")
    for n in names:
        st = {k: all_results[k][n]["state"] for k in kubelets}
        if any(v != "passed" for v in st.values()):
            lines.append(" | ".join(f"{k}: {st[k]}" for k in kubelets) + f" | {n}")
            for k in kubelets:
                if st[k] not in ("passed", "skipped") and all_results[k][n]["message"]:
                    msg = all_results[k][n]["message"].strip().replace("\n", " ")[:400]
                    lines.append(f"    {k}: {msg}")
    text = "\n".join(lines)
    with open(os.path.join(args.out, "summary.txt"), "w") as f:
        f.write(text + "\n")
    print(text)
    log(f"done in {(time.monotonic() - t0) / 60:.1f} min; {args.out}/summary.txt")
    if "ckubelet" in kubelets and args.ci and counts["ckubelet"]["passed"] + counts["ckubelet"]["skipped"] < len(names):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
