"""Helpers of the standalone tests that read what their containers print: a ckubelet with a read-only port (its
/pods is the pods' status), and a container's messages from its CRI log file."""
import os

from apiclient import Client
from conftest import free_port, wait_for


def start(kubelet_factory, *extra):
    """A ckubelet with a read-only port, started with extra flags; (the kubelet, a client of that port)."""
    k = kubelet_factory(start=False)
    ro = free_port()
    k.start("--read-only-port", str(ro), *extra)
    api = Client(ro, tls=False)
    wait_for(lambda: api.get("/pods")[0] == 200, msg="the read-only port")
    return k, api


def container_log(kubelet, runtime, pod, container):
    """The messages of the container's first instance (its 0.log; CRI lines "<time> <stream> <tag> <text>")."""
    cs = runtime.containers_of(pod, container)
    if not cs:
        return ""
    uid = cs[0]["labels"]["io.kubernetes.pod.uid"]
    path = os.path.join(kubelet.pod_log_dir(pod, uid), container, "0.log")
    if not os.path.exists(path):
        return ""
    return "\n".join(l.split(" ", 3)[3] for l in open(path).read().splitlines() if l.count(" ") >= 3)


def wait_output(kubelet, runtime, pod, container, marker="END", timeout=30):
    """The container's messages once they hold marker."""
    return wait_for(lambda: marker in container_log(kubelet, runtime, pod, container) and
                    container_log(kubelet, runtime, pod, container), timeout,
                    msg=f"{marker} in the log of {container}")
