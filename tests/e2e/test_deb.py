"""The Debian package: built from this tree with dpkg-buildpackage -us -uc -b (in a copy of the tree, so that
the checkout stays clean), checked by lintian, installed with dpkg -i, and its ckubelet started the way systemd
would start the unit (its ExecStart line, its EnvironmentFile, NOTIFY_SOCKET and WATCHDOG_USEC from
WatchdogSec=). No systemd runs here: the unit and the kubeadm drop-in are checked with systemd-analyze verify.
The package is purged at the end."""
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request

import pytest

from conftest import REPO, free_port, make_cgroup_root, remove_cgroup_root, wait_for
from test_systemd import NotifySocket

UNIT = "/lib/systemd/system/ckubelet.service"
DROPIN = "/usr/share/ckubelet/10-kubeadm.conf"


def source_files():
    """The tree as git sees it: tracked files and untracked ones that are not ignored."""
    out = subprocess.run(["git", "-C", REPO, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                         capture_output=True, check=True).stdout
    return sorted({f for f in out.decode().split("\0") if f and os.path.lexists(os.path.join(REPO, f))})


@pytest.fixture(scope="module")
def deb(tmp_path_factory):
    if shutil.which("dpkg-buildpackage") is None:
        pytest.fail("dpkg-buildpackage is missing (scripts/install-deps.sh --deb installs dpkg-dev and debhelper)")
    top = tmp_path_factory.mktemp("deb")
    src = top / "ckubelet"
    src.mkdir()
    for f in source_files():
        dst = src / f
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(os.path.join(REPO, f), dst, follow_symlinks=False)
    t0 = time.monotonic()
    env = dict(os.environ, DEB_BUILD_OPTIONS="nocheck parallel=2")
    p = subprocess.run(["dpkg-buildpackage", "-us", "-uc", "-b"], cwd=src, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        pytest.fail(f"dpkg-buildpackage failed ({p.returncode}):\n{p.stdout[-4000:]}\n{p.stderr[-4000:]}")
    with open(os.path.join(REPO, "debian", "changelog")) as f:
        version = re.match(r"ckubelet \(([^)]+)\)", f.readline()).group(1)
    path = top / f"ckubelet_{version}_amd64.deb"
    assert path.exists(), os.listdir(top)
    print(f"dpkg-buildpackage built {path.name} in {time.monotonic() - t0:.1f}s")
    return path


def test_lintian_is_clean(deb):
    changes = str(deb).replace(".deb", ".changes")
    p = subprocess.run(["lintian", "--fail-on", "error,warning,info", "-I", changes], capture_output=True, text=True)
    report = (p.stdout + p.stderr).replace("running with root privileges is not recommended!\n", "")
    print(f"lintian: {report.strip() or 'nothing to report'}")
    assert p.returncode == 0, report


def parse_unit(path):
    """{section: [(key, value), ...]} of a unit or drop-in file (no line continuations are used in ours)."""
    sections, cur = {}, None
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith("["):
                cur = sections.setdefault(line.strip("[]"), [])
                continue
            k, _, v = line.partition("=")
            cur.append((k, v))
    return sections


def environment_file(path):
    """KEY=value lines of an EnvironmentFile, as systemd reads them (quotes removed)."""
    env = {}
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line and not line.startswith("#") and "=" in line:
                    k, _, v = line.partition("=")
                    env[k] = shlex.split(v)[0] if v.strip() else ""
    return env


def exec_start(unit_sections, env):
    """The ExecStart command line with $VAR expanded as systemd does (split on whitespace)."""
    cmd = [v for k, v in unit_sections["Service"] if k == "ExecStart" and v][-1]
    argv = []
    for word in cmd.split():
        if word.startswith("$") and not word.startswith("${"):
            argv += env.get(word[1:], "").split()
        else:
            argv.append(word)
    return argv


def systemd_seconds(value):
    m = re.fullmatch(r"(\d+)(min|s)?", value)
    return int(m.group(1)) * (60 if m.group(2) == "min" else 1)


@pytest.fixture
def installed(deb):
    p = subprocess.run(["dpkg", "-i", str(deb)], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    try:
        yield
    finally:
        subprocess.run(["dpkg", "--purge", "ckubelet"], capture_output=True)
        assert not os.path.exists("/usr/bin/ckubelet")


def test_installed_and_started_as_the_unit_would(installed, runtime):
    # what the package put where
    for path in ("/usr/bin/ckubelet", UNIT, DROPIN, "/etc/ckubelet/config.yaml", "/etc/default/ckubelet",
                 "/usr/share/man/man8/ckubelet.8.gz", "/usr/share/doc/ckubelet/cluster.md.gz"):
        assert os.path.exists(path), path
    assert subprocess.run(["/usr/bin/ckubelet", "--version"], capture_output=True, text=True).stdout.startswith(
        "Kubernetes v1.")
    unit = parse_unit(UNIT)
    service = dict(unit["Service"])
    assert service["Type"] == "notify" and service["Restart"] == "always"
    # the unit and the kubeadm drop-in with it, as systemd would load them
    if shutil.which("systemd-analyze"):
        d = tempfile.mkdtemp(prefix="ck-units-")
        try:
            shutil.copy(UNIT, d)
            os.makedirs(os.path.join(d, "ckubelet.service.d"))
            shutil.copy(DROPIN, os.path.join(d, "ckubelet.service.d"))
            for target in (UNIT, os.path.join(d, "ckubelet.service")):
                env = dict(os.environ, SYSTEMD_UNIT_PATH=f"{d}:")
                p = subprocess.run(["systemd-analyze", "verify", "--man=no", target], capture_output=True,
                                   text=True, env=env)
                out = (p.stdout + p.stderr).strip()
                print(f"systemd-analyze verify {target}: exit {p.returncode} {out}")
                assert p.returncode == 0, out
        finally:
            shutil.rmtree(d)
    dropin = parse_unit(DROPIN)
    kubeadm_argv = exec_start(dropin, {
        **{k: v for k, v in (e.split("=", 1) for e in (v.strip('"') for k, v in dropin["Service"]
                                                         if k == "Environment"))},
        "KUBELET_KUBEADM_ARGS": "--container-runtime-endpoint=unix:///run/containerd/containerd.sock"})
    assert kubeadm_argv[:5] == ["/usr/bin/ckubelet", "--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf",
                                "--kubeconfig=/etc/kubernetes/kubelet.conf", "--config=/var/lib/kubelet/config.yaml",
                                "--container-runtime-endpoint=unix:///run/containerd/containerd.sock"], kubeadm_argv

    # start it as systemd would: ExecStart with the EnvironmentFile's variables (CKUBELET_ARGS set here to this
    # test's runtime, directories and ports, as an administrator would in /etc/default/ckubelet)
    work = tempfile.mkdtemp(prefix="ck-deb-", dir=runtime.dir)
    cgroup_root = make_cgroup_root()
    healthz = free_port()
    env = environment_file("/etc/default/ckubelet")
    assert "CKUBELET_ARGS" in env
    env["CKUBELET_ARGS"] = " ".join([
        f"--container-runtime-endpoint={runtime.endpoint}", f"--root-dir={work}/root", f"--cert-dir={work}/pki",
        f"--pod-manifest-path={work}/manifests", f"--port={free_port()}", f"--healthz-port={healthz}",
        f"--cgroup-root={cgroup_root}", "--hostname-override=debnode"])
    argv = exec_start(unit, env)
    assert argv[:2] == ["/usr/bin/ckubelet", "--config=/etc/ckubelet/config.yaml"]
    ns = NotifySocket()
    log = open(os.path.join(work, "ckubelet.log"), "w")
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                            env=dict(os.environ, NOTIFY_SOCKET=ns.path,
                                     WATCHDOG_USEC=str(systemd_seconds(service["WatchdogSec"]) * 1000000)))
    try:
        wait_for(lambda: ns.lines("READY=1"), 60, msg="READY=1 from the installed ckubelet")
        assert ns.lines("WATCHDOG=1")
        body = wait_for(lambda: urllib.request.urlopen(f"http://127.0.0.1:{healthz}/healthz", timeout=5).read(), 30,
                        msg="/healthz")
        assert body == b"ok"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0
        assert ns.lines("STOPPING=1")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        ns.close()
        log.close()
        with open(os.path.join(work, "ckubelet.log")) as f:
            print("\n".join(f.read().splitlines()[-40:]))
        remove_cgroup_root(cgroup_root)
