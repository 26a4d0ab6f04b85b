"""The evented PLEG (feature gate EventedPLEG, upstream v1.37's design): with a runtime that serves the CRI
GetContainerEvents stream (containerd 2.1), a container's exit (CONTAINER_STOPPED_EVENT) makes the kubelet look at
its pod at once; the periodic relist stays. Here the relist is stretched to 10 minutes (CKUBELET_TEST_PLEG_RELIST_SECONDS)
and the pod resync too (--sync-frequency), so that only the event can explain an exit seen and restarted within
seconds; with the gate off the same exit goes unseen. containerd 1.6.20 answers Unimplemented: after 5 attempts the
kubelet says it disables the fast path, and the relist at its usual period sees the exit."""
import os
import time

import pytest

from apiclient import Client
from conftest import BUSYBOX, NODE, containerd_major, free_port, wait_for

pytestmark = pytest.mark.runtime

POD = f"""\
apiVersion: v1
kind: Pod
metadata: {{name: ev}}
spec:
  containers:
  - name: c
    image: {BUSYBOX}
    command: ["sh", "-c", "echo START; sleep 3; exit 7"]
"""
DISABLED = "Evented PLEG: disabling container-termination fast path after exhausting event stream retries"


def start(kubelet_factory, gate, long_relist):
    k = kubelet_factory(start=False)
    if long_relist:
        k.env = dict(os.environ, CKUBELET_TEST_PLEG_RELIST_SECONDS="600")
    ro = free_port()
    k.start("--read-only-port", str(ro), "--feature-gates", f"EventedPLEG={'true' if gate else 'false'}",
            *(["--sync-frequency", "10m"] if long_relist else []))
    api = Client(ro, tls=False)
    wait_for(lambda: api.get("/pods")[0] == 200, msg="the read-only port")
    return k, api


def status(api):
    for p in api.json("/pods")["items"]:
        if p["metadata"]["name"] == f"ev-{NODE}":
            for c in p.get("status", {}).get("containerStatuses", []):
                if c["name"] == "c":
                    return c
    return {}


def exit_seen(api):
    c = status(api)
    term = (c.get("lastState") or {}).get("terminated") or (c.get("state") or {}).get("terminated")
    return term and term.get("exitCode") == 7 and c


def test_exit_from_event(kubelet_factory, runtime):
    if containerd_major() < 2:
        pytest.skip("containerd 1.x serves no GetContainerEvents (test_fallback_without_events)")
    k, api = start(kubelet_factory, True, True)
    k.write("ev.yaml", POD)
    wait_for(lambda: (status(api).get("state") or {}).get("running"), 60, msg="the container running")
    # the exit (3 s after the start), seen and restarted with the relist 10 minutes away
    c = wait_for(lambda: exit_seen(api), 30, msg="the exit in the status")
    wait_for(lambda: status(api).get("restartCount", 0) >= 1, 30, msg="the container restarted")
    assert DISABLED not in k.log()
    assert "Evented PLEG: requested pod relist after container termination" in k.log(), c


def test_no_event_without_gate(kubelet_factory, runtime):
    """The control: the same pod, the gate off, the relist 10 minutes away: the exit is not seen."""
    if containerd_major() < 2:
        pytest.skip("the control is for the runtime that serves events")
    k, api = start(kubelet_factory, False, True)
    k.write("ev.yaml", POD)
    wait_for(lambda: (status(api).get("state") or {}).get("running"), 60, msg="the container running")
    wait_for(lambda: runtime.containers_of(f"ev-{NODE}", "c", "CONTAINER_EXITED"), 30, msg="the exit in the runtime")
    time.sleep(10)  # not a speed bound: what the event path would have reported by now goes unreported
    assert not exit_seen(api) and status(api).get("restartCount", 0) == 0, status(api)


def test_fallback_without_events(kubelet_factory, runtime):
    """containerd 1.6.20: Unimplemented, the fast path given up after 5 attempts; the usual relist sees the exit."""
    if containerd_major() >= 2:
        pytest.skip("containerd 2.x serves GetContainerEvents")
    k, api = start(kubelet_factory, True, False)
    k.wait_log(DISABLED, 30)
    assert "method GetContainerEvents not implemented" in k.log()  # containerd 1.6.20's Unimplemented
    k.write("ev.yaml", POD)
    wait_for(lambda: exit_seen(api), 60, msg="the exit in the status")
    wait_for(lambda: status(api).get("restartCount", 0) >= 1, 60, msg="the container restarted")
