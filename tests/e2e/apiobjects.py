"""Small builders and readers of API objects (pods, ConfigMaps, Secrets, conditions) shared by the cluster
tests, against the real control plane (controlplane.py) and the fake apiserver (fakeapi.py) alike."""
import base64

from conftest import BUSYBOX

SLEEP = ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 0.2; done"]


def api_pod(name, containers, node, restart_policy="Always", grace=None, extra_spec=None, namespace=None):
    spec = {"nodeName": node, "restartPolicy": restart_policy, "containers": containers}
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    spec.update(extra_spec or {})
    meta = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def container(name, command, **kw):
    c = {"name": name, "image": BUSYBOX, "command": command}
    c.update(kw)
    return c


def configmap(name, data, namespace=None):
    meta = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


def secret(name, data, type_="Opaque", namespace=None):
    meta = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": "v1", "kind": "Secret", "metadata": meta, "type": type_,
            "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}}


def cond(obj, type_):
    return next((c for c in (obj or {}).get("status", {}).get("conditions", []) if c["type"] == type_), None)


def cstatus(pod, name):
    return next((c for c in (pod or {}).get("status", {}).get("containerStatuses", []) if c["name"] == name), None)


def running(api, name, cname="app"):
    """The pod if its container cname is running, as the API shows it."""
    p = api.pod(name)
    c = p and cstatus(p, cname)
    return p if c and "running" in c.get("state", {}) else None


def jwt_claims(token):
    """The claims of a JWT (a service account token), unverified."""
    import json
    part = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
