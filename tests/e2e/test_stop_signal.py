"""A container's stop signal (KEP-4960, feature gate ContainerStopSignals): lifecycle.stopSignal goes to the runtime
in the CRI ContainerConfig (stop_signal) and the effective stop signal the runtime reports (ContainerStatus
stop_signal: the container's, else its image's, else SIGTERM) is containerStatuses[].stopSignal. Neither containerd
1.6.20 nor 2.1.9 acts on the field (2.1.9 answers SIGNAL_RUNTIME_DEFAULT in ContainerStatus): as upstream's kubelet,
the container is then stopped with the runtime's default (SIGTERM) and no stopSignal is reported; the assertions
for a runtime that reports one are kept for a newer runtime. With the gate off the field is not acted on."""
import os

import pytest

from conftest import BUSYBOX, NODE, wait_for
from standalone import start, wait_output

pytestmark = pytest.mark.runtime

# writes which signal stopped it to the hostPath, then exits
TRAPS = ("trap 'echo USR1 > /out/$0; exit 0' USR1; trap 'echo TERM > /out/$0; exit 0' TERM; "
         "echo END; while true; do sleep 0.2; done")


def pod(name, out, stop_signal):
    lc = f"\n    lifecycle: {{stopSignal: {stop_signal}}}" if stop_signal else ""
    return f"""\
apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  os: {{name: linux}}
  terminationGracePeriodSeconds: 20
  volumes: [{{name: out, hostPath: {{path: {out}}}}}]
  containers:
  - name: c
    image: {BUSYBOX}
    command: ["sh", "-c", "{TRAPS}", "{name}"]
    volumeMounts: [{{name: out, mountPath: /out}}]{lc}
"""


def container_status(api, pod, name):
    for p in api.json("/pods")["items"]:
        if p["metadata"]["name"] == pod:
            for c in p.get("status", {}).get("containerStatuses", []):
                if c["name"] == name:
                    return c
    return None


def stopped_by(out, name):
    path = os.path.join(out, name)
    return os.path.exists(path) and open(path).read().strip()


@pytest.mark.parametrize("gate", [True, False], ids=["gate-on", "gate-off"])
def test_stop_signal(kubelet_factory, runtime, tmp_path, gate):
    out = str(tmp_path / "out")
    os.makedirs(out)
    k, api = start(kubelet_factory, "--feature-gates", f"ContainerStopSignals={'true' if gate else 'false'}")
    k.write("usr1.yaml", pod("usr1", out, "SIGUSR1"))
    k.write("plain.yaml", pod("plain", out, None))
    for name in ("usr1", "plain"):
        wait_output(k, runtime, f"{name}-{NODE}", "c", timeout=60)
        wait_for(lambda: (container_status(api, f"{name}-{NODE}", "c") or {}).get("state", {}).get("running"), 30,
                 msg=f"{name} running in the status")
    usr1 = container_status(api, f"usr1-{NODE}", "c")
    plain = container_status(api, f"plain-{NODE}", "c")
    # a runtime that honours the field reports the effective stop signal (the container's, else the image's default:
    # busybox has none, SIGTERM); one that does not (containerd 1.6.20, and 2.1.9 too: it answers
    # SIGNAL_RUNTIME_DEFAULT, checked 2026-11-28) reports none, and then nothing is reported, as upstream
    honoured = gate and "stopSignal" in plain
    if honoured:
        assert usr1.get("stopSignal") == "SIGUSR1", usr1
        assert plain.get("stopSignal") == "SIGTERM", plain
    else:
        assert "stopSignal" not in usr1 and "stopSignal" not in plain, (usr1, plain)
    if not gate:
        wait_for(lambda: "lifecycle.stopSignal" in k.log(), 10, msg="the field said not acted on")

    k.remove("usr1.yaml")
    k.remove("plain.yaml")
    wait_for(lambda: stopped_by(out, "usr1") and stopped_by(out, "plain"), 60, msg="both containers stopped")
    assert stopped_by(out, "usr1") == ("USR1" if honoured else "TERM")
    assert stopped_by(out, "plain") == "TERM"
