"""Running under systemd (Type=notify, WatchdogSec=): the notifications ckubelet sends to $NOTIFY_SOCKET, read
here from a unix datagram socket of the test's own, and the JSON log format (--logging-format=json) with
component-base's schema."""
import json
import os
import signal
import socket
import tempfile
import threading
import time

from conftest import SLEEPER, pod_manifest, wait_for


class NotifySocket:
    """$NOTIFY_SOCKET: every datagram with the monotonic time it came."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="ck-notify-", dir="/tmp")
        self.path = os.path.join(self.dir, "notify.sock")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.sock.settimeout(0.2)
        self.messages = []
        self.lock = threading.Lock()
        self.stop = False
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        while not self.stop:
            try:
                data = self.sock.recv(4096)
            except socket.timeout:
                continue
            with self.lock:
                self.messages.append((time.monotonic(), data.decode(), time.time()))

    def lines(self, prefix, since=0.0):
        with self.lock:
            return [(t, line, wall) for t, m, wall in self.messages if t >= since for line in m.splitlines()
                    if line.startswith(prefix)]

    def close(self):
        self.stop = True
        self.thread.join()
        self.sock.close()
        os.unlink(self.path)
        os.rmdir(self.dir)


def test_sd_notify_ready_watchdog_stopping_and_json_logs(kubelet_factory, runtime):
    ns = NotifySocket()
    try:
        k = kubelet_factory(False)
        k.env = dict(os.environ, NOTIFY_SOCKET=ns.path, WATCHDOG_USEC="1000000")
        k.write("web.yaml", pod_manifest("web", [("app", SLEEPER)]))
        k.start("--logging-format", "json")

        # READY=1 once the first sync pass ran: the static pod's sandbox is there by then
        ready_wall = wait_for(lambda: ns.lines("READY=1"), 60, msg="READY=1")[0][2]
        sandboxes = runtime.pods_named(f"web-{k.node}")
        assert sandboxes, "READY=1 came before the first sync of the static pod"
        assert int(sandboxes[0]["createdAt"]) / 1e9 < ready_wall, (sandboxes[0]["createdAt"], ready_wall)
        assert ns.lines("STATUS=1 pods")
        assert len(ns.lines("READY=1")) == 1

        # WATCHDOG=1 twice per WatchdogSec (1 s here), from the loop
        since = time.monotonic()
        wait_for(lambda: len(ns.lines("WATCHDOG=1", since)) >= 4, 10, msg="four watchdog pings")
        # a loop that does not run (stopped here) misses its pings; they resume with it
        k.proc.send_signal(signal.SIGSTOP)
        time.sleep(0.3)  # a ping already on its way may still arrive
        stopped_at = time.monotonic()
        time.sleep(2)
        missed = ns.lines("WATCHDOG=1", stopped_at)
        k.proc.send_signal(signal.SIGCONT)
        assert missed == [], missed
        resumed = time.monotonic()
        wait_for(lambda: len(ns.lines("WATCHDOG=1", resumed)) >= 2, 10, msg="pings after SIGCONT")

        # STOPPING=1 on SIGTERM, and a clean exit
        assert k.term(20) == 0
        assert ns.lines("STOPPING=1")
        assert len(ns.lines("READY=1")) == 1
    finally:
        ns.close()

    # every line of the log (after the harness's header) is one JSON object in component-base's schema
    lines = [l for l in k.log().splitlines() if not l.startswith("=====")]
    assert len(lines) > 10
    kv_seen = False
    for line in lines:
        e = json.loads(line)
        assert isinstance(e["ts"], float) and e["ts"] > 1.5e12, line  # milliseconds since the epoch
        assert ":" in e["caller"] and e["caller"].split(":")[1].isdigit(), line
        assert isinstance(e["msg"], str)
        if "v" in e:
            assert isinstance(e["v"], int)
        if e["msg"] == "Kubelet is ready":
            assert e["v"] == 0 and e["node"] == k.node and e["pods"] == "1" and e["registered"] == "false", line
            kv_seen = True
    assert kv_seen
