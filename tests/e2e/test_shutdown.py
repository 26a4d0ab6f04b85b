# Graceful node shutdown (shutdownGracePeriodByPodPriority) against a fake logind (tests/e2e/fakelogind.py) on a
# private D-Bus daemon and the fake apiserver: this machine runs no systemd. Checked: logind's delay raised as
# upstream does it (the drop-in, then the SIGHUP through systemd's KillUnit), the "delay" inhibitor lock taken,
# and on PrepareForShutdown(true) the node NotReady ("node is shutting down"), new pods rejected, the pods of
# three priorities stopped lowest priority first, each pod's final status (Failed, Terminated, DisruptionTarget)
# at the apiserver before the next group starts and before the lock is released; then the cancellation
# (PrepareForShutdown(false)): Ready again and the lock taken again.
import json
import os
import shutil
import subprocess
import tempfile
import textwrap
import time

import pytest

from apiobjects import api_pod, cond, container
from conftest import private_system_bus, terminate, NODE, wait_for
from fakeapi import FakeApiServer

HERE = os.path.dirname(os.path.abspath(__file__))
# stops at once on TERM
IDLE = ["sh", "-c", "trap 'exit 0' TERM; sleep 100000 & wait"]
MESSAGE = "Pod was terminated in response to imminent node shutdown."
PRIORITIES = {"low": 0, "mid": 100000, "high": 2000000000}


class FakeLogind:
    def __init__(self, dirpath, *fake_args):
        self.dir = dirpath
        self.socket = os.path.join(dirpath, "system_bus_socket")
        self.address = f"unix:path={self.socket}"
        self.calls_file = os.path.join(dirpath, "calls.jsonl")
        self.conf_dir = os.path.join(dirpath, "logind.conf.d")
        self.daemon, _, _ = private_system_bus(dirpath)
        self.env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=self.address)
        self.fake = subprocess.Popen(["/usr/bin/python3", os.path.join(HERE, "fakelogind.py"), self.calls_file,
                                      self.conf_dir, *fake_args], env=self.env, stdout=subprocess.PIPE,
                                     stderr=open(os.path.join(dirpath, "fake.log"), "w"), text=True)
        assert self.fake.stdout.readline().strip() == "ready", open(os.path.join(dirpath, "fake.log")).read()

    def calls(self, method=None):
        if not os.path.exists(self.calls_file):
            return []
        with open(self.calls_file) as f:
            out = [json.loads(line) for line in f if line.strip()]
        return [c for c in out if method is None or c["method"] == method]

    def fire(self, active):
        subprocess.run(["dbus-send", f"--bus={self.address}", "--print-reply", "--dest=org.freedesktop.login1",
                        "/org/freedesktop/login1", "org.ckubelet.FakeLogind.Fire", f"boolean:{str(active).lower()}"],
                       check=True, capture_output=True, timeout=10)

    def stop(self):
        terminate(self.fake, self.daemon)


@pytest.fixture
def fake_logind(runtime):
    d = tempfile.mkdtemp(prefix="fakelogind-", dir=runtime.dir)
    fl = FakeLogind(d)
    yield fl
    fl.stop()
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def apiserver(tmp_path):
    a = FakeApiServer(str(tmp_path / "apiserver"), node_name=NODE)
    a.start()
    yield a
    a.stop()


class TimedBodies(list):
    """FakeApiServer.request_bodies with the time each request reached the apiserver."""

    def append(self, body):
        super().append((time.time(), body))


def _node_ready(apiserver):
    c = cond(apiserver.get("nodes", NODE), "Ready")
    return (c["status"], c.get("message", "")) if c else (None, "")


def _final(status):
    """The status of a pod stopped by the shutdown: Failed/Terminated, no container running."""
    return (status.get("phase") == "Failed" and status.get("reason") == "Terminated"
            and all("running" not in c.get("state", {}) for c in status.get("containerStatuses", [])))


def test_graceful_shutdown_by_priority(kubelet_factory, runtime, apiserver, fake_logind):
    fl = fake_logind
    apiserver.request_bodies = TimedBodies()
    k = kubelet_factory(start=False)
    with open(k.config, "a") as f:
        f.write(textwrap.dedent("""\
            shutdownGracePeriodByPodPriority:
            - {priority: 0, shutdownGracePeriodSeconds: 20}
            - {priority: 100000, shutdownGracePeriodSeconds: 20}
            - {priority: 2000000000, shutdownGracePeriodSeconds: 20}
            """))
    k.env = dict(fl.env, CKUBELET_LOGIND_CONF_DIR=fl.conf_dir)
    k.start("--kubeconfig", apiserver.kubeconfig, "--node-status-update-frequency", "1s")

    # logind's 5 s raised to the 60 s asked for, as upstream: the drop-in, a SIGHUP, the value read again
    wait_for(lambda: fl.calls("Inhibit"), 60, msg="the inhibitor lock taken")
    with open(os.path.join(fl.conf_dir, "99-kubelet.conf")) as f:
        assert f.read() == "# Kubelet logind override\n[Login]\nInhibitDelayMaxSec=60\n"
    assert [(c["name"], c["who"], c["signal"]) for c in fl.calls("KillUnit")] == [("systemd-logind.service", "all", 1)]
    gets = fl.calls("Get")
    assert len(gets) >= 2 and all(g["property"] == "InhibitDelayMaxUSec" for g in gets)
    inhibit = fl.calls("Inhibit")
    assert [(c["what"], c["who"], c["why"], c["mode"]) for c in inhibit] == [
        ("shutdown", "kubelet", "Kubelet needs time to handle node shutdown", "delay")]
    assert fl.calls("Reloaded")[0]["InhibitDelayMaxUSec"] == 60000000
    assert not fl.calls("InhibitReleased")

    for name, prio in PRIORITIES.items():
        apiserver.create("pods", api_pod(name, [container("app", IDLE)], NODE, namespace="default", grace=30,
                                         extra_spec={"priority": prio}))
    apiserver.wait(lambda: all((p := apiserver.pod(n)) and p["status"].get("phase") == "Running" for n in PRIORITIES),
                   timeout=90, msg="the three pods running")
    apiserver.wait(lambda: _node_ready(apiserver)[0] == "True", timeout=30, msg="node Ready")

    fl.fire(True)
    wait_for(lambda: fl.calls("InhibitReleased"), 90, msg="the inhibitor lock released")
    released = fl.calls("InhibitReleased")[0]["time"]

    # each pod's final status, as upstream sets it
    for name in PRIORITIES:
        st = apiserver.pod(name)["status"]
        assert _final(st), (name, st)
        assert st["message"] == MESSAGE
        dt = cond(apiserver.pod(name), "DisruptionTarget")
        assert dt and dt["status"] == "True" and dt["reason"] == "TerminationByKubelet" and dt["message"] == MESSAGE, dt

    # in priority order: a group is told to stop only once the one before has its final status at the apiserver,
    # and the last one's is there before the lock is released
    def patches(name):
        return [(t, b.body["status"]) for t, b in apiserver.request_bodies
                if b.method == "PATCH" and b.path.startswith(f"/api/v1/namespaces/default/pods/{name}/status")]

    first_stop = {n: min(t for t, s in patches(n) if s.get("reason") == "Terminated") for n in PRIORITIES}
    final = {n: min(t for t, s in patches(n) if _final(s)) for n in PRIORITIES}
    print({n: (round(first_stop[n] - released, 3), round(final[n] - released, 3)) for n in PRIORITIES})
    assert final["low"] < first_stop["mid"], "the mid-priority pod was stopped before the low one's final status"
    assert final["mid"] < first_stop["high"], "the high-priority pod was stopped before the mid one's final status"
    assert final["high"] < released, "the lock was released before the last pod's final status reached the API"

    # the node is shutting down: NotReady with upstream's message, new pods rejected
    apiserver.wait(lambda: _node_ready(apiserver) == ("False", "node is shutting down"), timeout=30,
                   msg="node NotReady: node is shutting down")
    apiserver.create("pods", api_pod("late", [container("app", IDLE)], NODE, namespace="default"))
    late = apiserver.wait(lambda: (p := apiserver.pod("late")) and p["status"].get("phase") == "Failed" and p,
                          timeout=30, msg="the late pod rejected")
    assert late["status"]["reason"] == "NodeShutdown"
    assert late["status"]["message"] == "Pod was rejected as the node is shutting down."

    # cancelled: Ready again, the lock taken again
    fl.fire(False)
    wait_for(lambda: len(fl.calls("Inhibit")) == 2, 30, msg="the lock taken again")
    apiserver.wait(lambda: _node_ready(apiserver)[0] == "True", timeout=30, msg="node Ready after the cancellation")
    assert k.alive()


def test_graceful_shutdown_critical_split_and_budget(kubelet_factory, runtime, apiserver, fake_logind):
    """shutdownGracePeriod 6s with 3s for the critical pods: a pod that ignores SIGTERM (grace 30 s) is stopped
    with the group's 3 s and the critical pod only after that budget was spent."""
    fl = fake_logind
    apiserver.request_bodies = TimedBodies()
    k = kubelet_factory(start=False)
    with open(k.config, "a") as f:
        f.write("shutdownGracePeriod: 6s\nshutdownGracePeriodCriticalPods: 3s\n")
    k.env = dict(fl.env, CKUBELET_LOGIND_CONF_DIR=fl.conf_dir)
    k.start("--kubeconfig", apiserver.kubeconfig, "--node-status-update-frequency", "1s")
    wait_for(lambda: fl.calls("Inhibit"), 60, msg="the inhibitor lock taken")
    with open(os.path.join(fl.conf_dir, "99-kubelet.conf")) as f:
        assert f.read() == "# Kubelet logind override\n[Login]\nInhibitDelayMaxSec=6\n"

    stubborn = ["sh", "-c", "trap '' TERM; while true; do sleep 1; done"]
    apiserver.create("pods", api_pod("stubborn", [container("app", stubborn)], NODE, namespace="default", grace=30,
                                     extra_spec={"priority": 1000}))
    apiserver.create("pods", api_pod("critical", [container("app", IDLE)], NODE, namespace="default", grace=30,
                                     extra_spec={"priority": 2000001000}))
    apiserver.wait(lambda: all((p := apiserver.pod(n)) and p["status"].get("phase") == "Running"
                               for n in ("stubborn", "critical")), timeout=90, msg="the pods running")

    fl.fire(True)
    fired = fl.calls("PrepareForShutdown")[0]["time"]
    wait_for(lambda: fl.calls("InhibitReleased"), 60, msg="the inhibitor lock released")
    released = fl.calls("InhibitReleased")[0]["time"]
    # the first group's budget may end before the stubborn pod's final status is in: it comes soon after
    for name in ("stubborn", "critical"):
        st = apiserver.wait(lambda: (p := apiserver.pod(name)) and _final(p["status"]) and p["status"], timeout=30,
                            msg=f"{name}'s final status")
        assert st["message"] == MESSAGE, (name, st)
    # the stubborn pod was killed at the end of its 3 s (not its own 30 s), and the critical group started only then
    code = apiserver.pod("stubborn")["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"]
    assert code == 137, code
    first_stop = min(t for t, b in apiserver.request_bodies
                     if b.method == "PATCH" and "/pods/critical/status" in b.path
                     and b.body["status"].get("reason") == "Terminated")
    print(f"critical group started {first_stop - fired:.2f}s after the event; lock released after "
          f"{released - fired:.2f}s")
    assert first_stop - fired >= 2.5, "the critical pod was stopped before the first group's budget was spent"
    assert released - fired < 30, "the stubborn pod's own grace period was used"
