# Hostile pods and clients (issue 14): each test plays an attack that took a node down or crossed a boundary
# before the fix, and checks what ckubelet does now. docs/security.md lists them.
import json
import os
import re

from conftest import BUSYBOX, NODE, wait_for


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return ""


def container_log(kubelet, pod, container, uid=None):
    """Everything the runtime wrote for the container so far (all instances), raw CRI lines."""
    out = ""
    for d in os.listdir(kubelet.logs) if os.path.isdir(kubelet.logs) else []:
        if d.startswith(f"default_{pod}_") and (uid is None or d.endswith("_" + uid)):
            cdir = os.path.join(kubelet.logs, d, container)
            for f in sorted(os.listdir(cdir)) if os.path.isdir(cdir) else []:
                out += read(os.path.join(cdir, f))
    return out


# ---------------------------------------------------------------- 5: CR/LF in httpHeaders

def test_crlf_in_probe_and_hook_headers_is_refused(kubelet, runtime):
    # a listener that prints every request it gets; a header value with CR/LF would add a header line of the
    # pod author's choosing to a request sent from the node's network namespace (hostNetwork probes)
    listener = "while true; do nc -l -p 8080 < /dev/null; done"
    bad = [{"name": "X-Test", "value": "a\r\nX-Injected: yes"}]

    def pod(name, **extra):
        c = {"name": "c", "image": BUSYBOX, "command": ["sh", "-c", listener]}
        c.update(extra)
        return json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                           "spec": {"terminationGracePeriodSeconds": 1, "containers": [c]}})

    kubelet.write("hook.json", pod("crlf-hook", lifecycle={
        "postStart": {"httpGet": {"port": 8080, "path": "/hook", "httpHeaders": bad}}}))
    kubelet.write("probe.json", pod("crlf-probe", readinessProbe={
        "httpGet": {"port": 8080, "path": "/probe", "httpHeaders": bad}, "periodSeconds": 1}))
    # the hook fails (Go's HTTP client refuses such a value, and so do we) and the container is restarted
    kubelet.wait_log(r'Failed to execute PostStartHook.*invalid header field value "a\\r\\nX-Injected: yes" '
                     r'for key X-Test', 60)
    wait_for(lambda: any(int(c["annotations"]["io.kubernetes.container.restartCount"]) >= 1
                         for c in runtime.containers_of(f"crlf-hook-{NODE}", "c")), 60, interval=0.5,
             msg="the container restarted")
    # the readiness probe fails with the same clear error
    kubelet.wait_log(r'Probe failed: probeType="Readiness" pod="default/crlf-probe-%s".*invalid header field value'
                     % NODE, 60)
    # and nothing was ever sent: the listeners printed no request at all
    for name in ("crlf-hook", "crlf-probe"):
        log = container_log(kubelet, f"{name}-{NODE}", "c")
        assert "X-Injected" not in log and "GET /" not in log, log
