"""Self-tests of the fake kube-apiserver (fakeapi.py): no ckubelet, no containerd. Requests go over HTTPS with
the fake's own CA and client certificate; watches are read chunk by chunk to check the framing."""
import calendar
import http.client
import json
import socket
import ssl
import threading
import time
import urllib.parse

import pytest

from fakeapi import ApiError, FakeApiServer

PODS = "/api/v1/namespaces/default/pods"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"


class Client:
    """One HTTPS client of the fake: as the node (its client certificate), with a bearer token, or anonymous."""

    def __init__(self, api, cert=None, token=None):
        self.api, self.token = api, token
        self.ctx = ssl.create_default_context(cafile=api.ca_file)  # also checks the server's IP SAN
        if cert:
            self.ctx.load_cert_chain(*cert)

    def conn(self):
        return http.client.HTTPSConnection("127.0.0.1", self.api.port, context=self.ctx, timeout=10)

    def request(self, method, path, body=None, ctype="application/json", conn=None):
        """(status, parsed JSON or text, response headers)."""
        c = conn or self.conn()
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        if body is not None:
            headers["Content-Type"] = ctype
        try:
            c.request(method, path, None if body is None else json.dumps(body), headers)
            r = c.getresponse()
            raw = r.read()
        finally:
            if conn is None:
                c.close()
        data = json.loads(raw) if r.getheader("Content-Type", "").startswith("application/json") else raw.decode()
        return r.status, data, r

    def ok(self, method, path, body=None, ctype="application/json", status=200):
        code, data, _ = self.request(method, path, body, ctype)
        assert code == status, data
        return data

    def watch(self, path):
        return Watch(self, path)


class Watch:
    """A watch read at the HTTP chunk level: every chunk must hold exactly one JSON event line."""

    def __init__(self, client, path):
        raw = socket.create_connection(("127.0.0.1", client.api.port), timeout=10)
        self.sock = client.ctx.wrap_socket(raw, server_hostname="127.0.0.1")
        self.buf = b""
        self.sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
        self.status = int(self._line(10).split()[1])
        self.headers = {}
        while (line := self._line(10)):
            name, value = line.decode().split(":", 1)
            self.headers[name.lower()] = value.strip()

    def _fill(self, timeout):
        self.sock.settimeout(timeout)
        data = self.sock.recv(65536)
        if not data:
            raise EOFError("watch cut without a final chunk")
        self.buf += data

    def _line(self, timeout):
        while b"\r\n" not in self.buf:
            self._fill(timeout)
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _read(self, n, timeout):
        while len(self.buf) < n:
            self._fill(timeout)
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def next(self, timeout=10):
        """The next event; None when the stream ended cleanly (final chunk); EOFError when it was cut."""
        size = int(self._line(timeout), 16)
        if size == 0:
            assert self._line(timeout) == b""
            return None
        data = self._read(size + 2, timeout)
        assert data.endswith(b"\n\r\n") and data.count(b"\n") == 2, data  # one event line per chunk
        return json.loads(data)

    def events(self, n, timeout=10):
        return [self.next(timeout) for _ in range(n)]

    def silent_for(self, seconds):
        """True if nothing arrives for that long."""
        if self.buf:
            return False
        try:
            self._fill(seconds)
        except TimeoutError:
            return True
        return False

    def close(self):
        self.sock.close()


@pytest.fixture
def api(tmp_path):
    a = FakeApiServer(str(tmp_path / "fakeapi"))
    a.bookmark_interval = 0.2
    a.start()
    yield a
    a.stop()


@pytest.fixture
def node(api):
    return Client(api, cert=api.client_cert)


def pod(name, node_name=None, **spec):
    spec = dict(spec, containers=[{"name": "c", "image": "busybox:1.36"}])
    if node_name:
        spec["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": name}}, "spec": spec}


def q(path, **params):
    return path + "?" + urllib.parse.urlencode(params)


def ts(s):
    return calendar.timegm(time.strptime(s, "%Y-%m-%dT%H:%M:%SZ"))


def test_pods_create_get_list(api, node):
    created = node.ok("POST", PODS, pod("p1", "testnode"), status=201)
    meta = created["metadata"]
    assert (created["kind"], created["apiVersion"]) == ("Pod", "v1")
    assert meta["namespace"] == "default" and len(meta["uid"]) == 36 and meta["resourceVersion"].isdigit()
    assert abs(ts(meta["creationTimestamp"]) - time.time()) < 5
    assert created["status"] == {"phase": "Pending"}
    assert created["spec"]["restartPolicy"] == "Always" and created["spec"]["terminationGracePeriodSeconds"] == 30
    assert created["spec"]["containers"][0]["imagePullPolicy"] == "IfNotPresent"
    assert node.ok("GET", PODS + "/p1") == created == api.pod("p1")

    code, st, _ = node.request("POST", PODS, pod("p1"))
    assert code == 409 and st == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                  "message": 'pods "p1" already exists', "reason": "AlreadyExists",
                                  "details": {"name": "p1", "kind": "pods"}, "code": 409}
    code, st, _ = node.request("POST", PODS, {"metadata": {}, "spec": {}})
    assert code == 422 and st["reason"] == "Invalid" and st["message"].startswith('Pod "" is invalid: metadata.name')
    code, st, _ = node.request("GET", PODS + "/nope")
    assert code == 404 and st["message"] == 'pods "nope" not found' and st["details"] == {"name": "nope",
                                                                                          "kind": "pods"}

    api.create("pods", pod("p2"), namespace="other")
    listed = node.ok("GET", "/api/v1/pods")
    assert (listed["kind"], listed["apiVersion"]) == ("PodList", "v1")
    assert listed["metadata"]["resourceVersion"] == api.list("pods", "other")[0]["metadata"]["resourceVersion"]
    assert [p["metadata"]["name"] for p in listed["items"]] == ["p1", "p2"]
    assert all("kind" not in p and "apiVersion" not in p for p in listed["items"])
    assert [p["metadata"]["name"] for p in node.ok("GET", PODS)["items"]] == ["p1"]

    # keep-alive: several requests on one connection
    conn = node.conn()
    for _ in range(3):
        assert node.request("GET", "/healthz", conn=conn)[:2] == (200, "ok")
    conn.close()
    assert node.request("POST", PODS + "/p1")[1]["reason"] == "MethodNotAllowed"
    assert node.request("PUT", PODS)[0] == 405
    assert node.request("GET", "/api/v1/namespaces/default/widgets")[0] == 404


def test_field_and_label_selectors(api, node):
    api.create("pods", pod("a", "testnode"))
    api.create("pods", pod("b", "other"))
    api.create("pods", pod("c", "testnode"), namespace="kube-system")

    def names(**params):
        return [p["metadata"]["name"] for p in node.ok("GET", q("/api/v1/pods", **params))["items"]]
    assert names(fieldSelector="spec.nodeName=testnode") == ["a", "c"]
    assert names(fieldSelector="spec.nodeName!=testnode") == ["b"]
    assert names(fieldSelector="spec.nodeName==testnode,metadata.namespace=kube-system") == ["c"]
    assert names(fieldSelector="metadata.name=b") == ["b"]
    assert names(fieldSelector="spec.hostNetwork=false,status.phase=Pending") == ["a", "b", "c"]
    assert names(labelSelector="app in (a,b)") == ["a", "b"]
    assert names(labelSelector="app!=a,app") == ["b", "c"]
    assert names(labelSelector="!app") == []
    code, st, _ = node.request("GET", q("/api/v1/pods", fieldSelector="spec.bogus=x"))
    assert code == 400 and st["message"] == "field label not supported: spec.bogus"


def test_watch_replays_from_resource_version(api, node):
    api.create("pods", pod("p1", "testnode"))
    rv0 = node.ok("GET", PODS)["metadata"]["resourceVersion"]
    api.create("pods", pod("p2"))
    p1 = api.pod("p1")
    p1["status"] = {"phase": "Running"}
    api.update("pods", p1)
    node.ok("DELETE", PODS + "/p2")  # unscheduled: marked, then removed at once

    w = node.watch(q(PODS, watch="true", resourceVersion=rv0))
    assert w.status == 200
    assert w.headers["transfer-encoding"] == "chunked" and w.headers["content-type"] == "application/json"
    events = w.events(4)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("ADDED", "p2"), ("MODIFIED", "p1"), ("MODIFIED", "p2"), ("DELETED", "p2")]
    assert all(e["object"]["kind"] == "Pod" and e["object"]["apiVersion"] == "v1" for e in events)
    rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert rvs == sorted(rvs) and rvs[0] > int(rv0)
    assert events[1]["object"]["status"]["phase"] == "Running"
    assert events[2]["object"]["metadata"]["deletionGracePeriodSeconds"] == 0
    assert w.silent_for(0.3)
    api.create("pods", pod("p3"))
    assert (lambda e: (e["type"], e["object"]["metadata"]["name"]))(w.next()) == ("ADDED", "p3")
    w.close()

    # no resourceVersion: the current objects as ADDED first
    w = node.watch(q(PODS, watch="1"))
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in w.events(2)] == [("ADDED", "p1"), ("ADDED", "p3")]
    w.close()


def test_watch_field_selector_transitions(api, node):
    rv = node.ok("GET", "/api/v1/pods")["metadata"]["resourceVersion"]
    w = node.watch(q("/api/v1/pods", watch="true", resourceVersion=rv, fieldSelector="spec.nodeName=testnode"))
    api.create("pods", pod("x"))  # not on the node: not seen
    assert w.silent_for(0.3)
    x = api.pod("x")
    x["spec"]["nodeName"] = "testnode"
    api.update("pods", x)
    added = w.next()
    assert added["type"] == "ADDED" and added["object"]["spec"]["nodeName"] == "testnode"
    x = api.pod("x")
    x["spec"]["nodeName"] = "elsewhere"
    moved = api.update("pods", x)
    gone = w.next()
    # leaving the selection: DELETED with the last state it matched in, at the new resourceVersion
    assert gone["type"] == "DELETED" and gone["object"]["spec"]["nodeName"] == "testnode"
    assert gone["object"]["metadata"]["resourceVersion"] == moved["metadata"]["resourceVersion"]
    w.close()


def test_compaction_expires_watches_and_lists(api, node):
    for name in ("a", "b", "c"):
        api.create("pods", pod(name))
    old_rv = node.ok("GET", PODS)["metadata"]["resourceVersion"]
    page = node.ok("GET", q(PODS, limit=2))
    api.create("pods", pod("d"))
    api.compact()
    current = node.ok("GET", PODS)["metadata"]["resourceVersion"]

    w = node.watch(q(PODS, watch="true", resourceVersion=old_rv))
    assert w.status == 200  # the error is an event on a 200 stream, as apiservers >= 1.19 do
    err = w.next()
    assert err == {"type": "ERROR", "object": {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": f"too old resource version: {old_rv} ({current})", "reason": "Expired", "code": 410}}
    assert w.next() is None
    w.close()

    code, st, _ = node.request("GET", q(PODS, resourceVersion=old_rv, resourceVersionMatch="Exact"))
    assert code == 410 and st["reason"] == "Expired"
    code, st, _ = node.request("GET", q(PODS, limit=2, **{"continue": page["metadata"]["continue"]}))
    assert code == 410 and st["message"].startswith("The provided continue parameter is too old")
    # not older than the horizon: fine
    assert len(node.ok("GET", q(PODS, resourceVersion=current, resourceVersionMatch="Exact"))["items"]) == 4
    w = node.watch(q(PODS, watch="true", resourceVersion=current))
    api.create("pods", pod("e"))
    assert w.next()["object"]["metadata"]["name"] == "e"
    w.close()


def test_list_pages_and_history(api, node):
    for name in ("a", "b", "c", "d", "e"):
        api.create("pods", pod(name))
    first = node.ok("GET", q(PODS, limit=2))
    assert first["metadata"]["remainingItemCount"] == 3
    api.delete("pods", "a")
    api.create("pods", pod("f"))  # after the snapshot: not in the pages
    names = [p["metadata"]["name"] for p in first["items"]]
    token = first["metadata"]["continue"]
    while token:
        page = node.ok("GET", q(PODS, limit=2, **{"continue": token}))
        assert page["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
        names += [p["metadata"]["name"] for p in page["items"]]
        token = page["metadata"].get("continue")
    assert names == ["a", "b", "c", "d", "e"]
    exact = node.ok("GET", q(PODS, resourceVersion=first["metadata"]["resourceVersion"], resourceVersionMatch="Exact"))
    assert [p["metadata"]["name"] for p in exact["items"]] == ["a", "b", "c", "d", "e"]
    assert [p["metadata"]["name"] for p in node.ok("GET", PODS)["items"]] == ["b", "c", "d", "e", "f"]


def test_bookmarks_and_watch_timeouts(api, node):
    api.create("pods", pod("a"))
    rv = node.ok("GET", PODS)["metadata"]["resourceVersion"]
    w = node.watch(q(PODS, watch="true", resourceVersion=rv, allowWatchBookmarks="true"))
    mark = w.next(timeout=2)
    assert mark == {"type": "BOOKMARK", "object": {"kind": "Pod", "apiVersion": "v1", "metadata": {
        "resourceVersion": rv, "creationTimestamp": None}, "spec": {"containers": None}, "status": {}}}
    w.close()

    start = time.monotonic()
    w = node.watch(q(PODS, watch="true", resourceVersion=rv, timeoutSeconds=1))
    assert w.next(timeout=5) is None and 0.9 < time.monotonic() - start < 3  # clean end after timeoutSeconds
    w.close()
    api.max_watch_seconds = 0.5
    w = node.watch(q(PODS, watch="true", resourceVersion=rv, timeoutSeconds=300))
    assert w.next(timeout=5) is None
    w.close()


def test_stalled_and_dropped_watches(api, node):
    rv = node.ok("GET", PODS)["metadata"]["resourceVersion"]
    w = node.watch(q(PODS, watch="true", resourceVersion=rv, allowWatchBookmarks="true"))
    api.stall_watches(True)
    api.create("pods", pod("a"))
    assert w.silent_for(0.6)  # not even bookmarks
    api.stall_watches(False)
    assert w.next()["type"] == "ADDED"
    api.drop_watches()
    with pytest.raises(EOFError):
        while True:
            w.next()
    w.close()
    assert node.ok("GET", PODS + "/a")  # other requests are unaffected


def test_graceful_pod_deletion(api, node):
    created = node.ok("POST", PODS, pod("p", "testnode"), status=201)
    w = node.watch(q(PODS, watch="true", resourceVersion=created["metadata"]["resourceVersion"]))
    marked = node.ok("DELETE", PODS + "/p")
    meta = marked["metadata"]
    assert marked["kind"] == "Pod" and meta["deletionGracePeriodSeconds"] == 30
    assert abs(ts(meta["deletionTimestamp"]) - (time.time() + 30)) < 5
    assert node.ok("GET", PODS + "/p")["metadata"]["deletionTimestamp"] == meta["deletionTimestamp"]
    modified = w.next()
    assert modified["type"] == "MODIFIED" and modified["object"]["metadata"]["deletionGracePeriodSeconds"] == 30
    # a longer grace period changes nothing
    assert node.ok("DELETE", PODS + "/p", {"gracePeriodSeconds": 60}) == node.ok("GET", PODS + "/p")
    assert w.silent_for(0.3)

    final = node.ok("DELETE", PODS + "/p", {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0,
                                            "preconditions": {"uid": meta["uid"]}})
    assert final["metadata"]["deletionGracePeriodSeconds"] == 0
    assert [e["type"] for e in w.events(2)] == ["MODIFIED", "DELETED"]
    assert node.request("GET", PODS + "/p")[0] == 404 and api.pod("p") is None
    w.close()

    # unscheduled or terminated pods, and other kinds, go at once
    api.create("pods", pod("pending"))
    assert api.delete("pods", "pending") is None
    done = api.create("pods", pod("done", "testnode"))
    done["status"] = {"phase": "Succeeded"}
    api.update("pods", done)
    assert api.delete("pods", "done") is None
    assert api.delete("pods", api.create("pods", pod("slow", "testnode"))["metadata"]["name"],
                      grace_seconds=5)["metadata"]["deletionGracePeriodSeconds"] == 5
    n = api.create("nodes", {"metadata": {"name": "n1"}})
    st = node.ok("DELETE", "/api/v1/nodes/n1")
    assert st == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                  "details": {"name": "n1", "kind": "nodes", "uid": n["metadata"]["uid"]}}


def test_uid_preconditions_and_status_subresource(api, node):
    p = api.create("pods", pod("p", "testnode"))
    uid = p["metadata"]["uid"]
    code, st, _ = node.request("PATCH", PODS + "/p/status", {"metadata": {"uid": "other-uid"},
                                                             "status": {"phase": "Running"}}, MERGE)
    assert code == 409 and st["reason"] == "Conflict"
    assert st["message"].startswith('Operation cannot be fulfilled on pods "p": ')
    assert st["message"].endswith(f"Precondition failed: UID in precondition: other-uid, UID in object meta: {uid}")
    code, st, _ = node.request("DELETE", PODS + "/p", {"preconditions": {"uid": "other-uid"}})
    assert code == 409 and "the UID in the precondition (other-uid) does not match" in st["message"]

    # the status endpoint cannot change spec, the main endpoint cannot change status
    patched = node.ok("PATCH", PODS + "/p/status", {"metadata": {"uid": uid}, "spec": {"nodeName": "elsewhere"},
                                                    "status": {"phase": "Running"}}, MERGE)
    assert patched["status"]["phase"] == "Running" and patched["spec"]["nodeName"] == "testnode"
    body = dict(patched, status={"phase": "Failed"})
    body["metadata"] = dict(body["metadata"], labels={"new": "label"})
    put = node.ok("PUT", PODS + "/p", body)
    assert put["status"]["phase"] == "Running" and put["metadata"]["labels"] == {"new": "label"}
    # a write that changes nothing is not a write
    assert node.ok("PUT", PODS + "/p", put)["metadata"]["resourceVersion"] == put["metadata"]["resourceVersion"]
    code, st, _ = node.request("PUT", PODS + "/p", dict(put, metadata=dict(put["metadata"], name="q")))
    assert code == 400 and st["message"] == "the name of the object (q) does not match the name on the URL (p)"


def test_lease_optimistic_concurrency(api, node):
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
             "metadata": {"name": "testnode", "namespace": "kube-node-lease"},
             "spec": {"holderIdentity": "testnode", "leaseDurationSeconds": 40}}
    created = node.ok("POST", LEASES, lease, status=201)
    assert created["apiVersion"] == "coordination.k8s.io/v1"
    renewed = node.ok("PUT", LEASES + "/testnode", dict(created, spec=dict(created["spec"], renewTime="x")))
    assert int(renewed["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    code, st, _ = node.request("PUT", LEASES + "/testnode", dict(created, spec=dict(created["spec"], renewTime="y")))
    assert code == 409 and st == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": 'Operation cannot be fulfilled on leases.coordination.k8s.io "testnode": the object has been '
                   'modified; please apply your changes to the latest version and try again',
        "reason": "Conflict", "details": {"name": "testnode", "group": "coordination.k8s.io", "kind": "leases"},
        "code": 409}
    code, st, _ = node.request("GET", LEASES + "/missing")
    assert code == 404 and st["message"] == 'leases.coordination.k8s.io "missing" not found'
    assert api.get("leases", "testnode", "kube-node-lease")["spec"]["renewTime"] == "x"


def test_patch_types(api, node):
    api.create("nodes", {"metadata": {"name": "testnode", "labels": {"a": "1"}}, "spec": {"podCIDRs": ["10.0.0.0/24"]},
                         "status": {"conditions": [
                             {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory"},
                             {"type": "Ready", "status": "True", "reason": "KubeletReady"}],
                             "addresses": [{"type": "InternalIP", "address": "10.0.0.1"},
                                           {"type": "Hostname", "address": "testnode"}],
                             "images": [{"names": ["old"], "sizeBytes": 1}]}})
    path = "/api/v1/nodes/testnode/status"
    # as a kubelet sends it: changed conditions only, with the order of all; images replaced
    out = node.ok("PATCH", path, {"status": {
        "$setElementOrder/conditions": [{"type": "Ready"}, {"type": "MemoryPressure"}],
        "conditions": [{"type": "Ready", "status": "False", "lastHeartbeatTime": "2024-01-01T00:00:00Z"}],
        "addresses": [{"type": "Hostname", "address": "renamed"}],
        "images": [{"names": ["new"], "sizeBytes": 2}]}, "spec": {"unschedulable": True}}, STRATEGIC)
    assert out["status"]["conditions"] == [
        {"type": "Ready", "status": "False", "reason": "KubeletReady", "lastHeartbeatTime": "2024-01-01T00:00:00Z"},
        {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory"}]
    assert out["status"]["addresses"] == [{"type": "InternalIP", "address": "10.0.0.1"},
                                          {"type": "Hostname", "address": "renamed"}]
    assert out["status"]["images"] == [{"names": ["new"], "sizeBytes": 2}]
    assert "unschedulable" not in out["spec"]  # a status patch cannot change spec
    out = node.ok("PATCH", path, {"status": {"conditions": [{"type": "MemoryPressure", "$patch": "delete"}]}},
                  STRATEGIC)
    assert [c["type"] for c in out["status"]["conditions"]] == ["Ready"]
    out = node.ok("PATCH", "/api/v1/nodes/testnode", {"metadata": {"labels": {"b": "2", "a": None}},
                                                       "spec": {"podCIDRs": ["10.0.1.0/24"]}}, STRATEGIC)
    assert out["metadata"]["labels"] == {"b": "2"} and out["spec"]["podCIDRs"] == ["10.0.0.0/24", "10.0.1.0/24"]

    # a merge patch replaces lists
    out = node.ok("PATCH", path, {"status": {"conditions": [{"type": "PIDPressure", "status": "False"}]}}, MERGE)
    assert out["status"]["conditions"] == [{"type": "PIDPressure", "status": "False"}]
    # JSON patch
    out = node.ok("PATCH", path, [{"op": "test", "path": "/status/conditions/0/type", "value": "PIDPressure"},
                                  {"op": "replace", "path": "/status/conditions/0/status", "value": "True"},
                                  {"op": "add", "path": "/status/conditions/-", "value": {"type": "Ready"}},
                                  {"op": "remove", "path": "/status/images"}], JSON_PATCH)
    assert out["status"]["conditions"] == [{"type": "PIDPressure", "status": "True"}, {"type": "Ready"}]
    assert "images" not in out["status"]
    code, st, _ = node.request("PATCH", path, [{"op": "test", "path": "/status/conditions/0/type", "value": "x"}],
                               JSON_PATCH)
    assert code == 422 and st["reason"] == "Invalid"
    code, st, _ = node.request("PATCH", path, {"status": {}}, "text/plain")
    assert code == 415 and st["reason"] == "UnsupportedMediaType"
    assert node.request("PATCH", "/api/v1/nodes/nope/status", {}, MERGE)[0] == 404

    # pod status: conditions merge by type, containerStatuses has no merge key and is replaced (as upstream)
    p = api.create("pods", pod("p", "testnode"))
    status = {"conditions": [{"type": "Ready", "status": "False"}, {"type": "PodScheduled", "status": "True"}],
              "containerStatuses": [{"name": "a", "ready": False}, {"name": "b", "ready": False}]}
    node.ok("PATCH", PODS + "/p/status", {"status": status}, STRATEGIC)
    out = node.ok("PATCH", PODS + "/p/status", {"metadata": {"uid": p["metadata"]["uid"]}, "status": {
        "conditions": [{"type": "Ready", "status": "True"}], "containerStatuses": [{"name": "a", "ready": True}]}},
        STRATEGIC)
    assert out["status"]["conditions"] == [{"type": "Ready", "status": "True"},
                                           {"type": "PodScheduled", "status": "True"}]
    assert out["status"]["containerStatuses"] == [{"name": "a", "ready": True}]


def test_authentication(api, node):
    anon = Client(api)
    code, st, _ = anon.request("GET", PODS)
    assert code == 401 and st == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                  "message": "Unauthorized", "reason": "Unauthorized", "code": 401}
    assert Client(api, token="wrong").request("GET", PODS)[0] == 401
    api.tokens["s3cret"] = ("alice", ["admins"])
    assert Client(api, token="s3cret").request("GET", PODS)[0] == 200
    kubeconfig = open(api.kubeconfig_token("s3cret")).read()
    assert 'token: "s3cret"' in kubeconfig and f'server: "{api.url}"' in kubeconfig
    assert f'client-certificate: "{api.client_cert[0]}"' in open(api.kubeconfig).read()
    admin = Client(api, cert=api.issue_cert("admin", ["system:masters"]))
    assert admin.request("GET", "/version")[1]["gitVersion"].startswith("v1.")
    node.ok("GET", "/api/v1/nodes")
    assert [(r.path, r.status, r.user) for r in api.requests] == [
        (PODS, 401, None), (PODS, 401, None), (PODS, 200, "alice"), ("/version", 200, "admin"),
        ("/api/v1/nodes", 200, "system:node:testnode")]


def test_fault_injection(api, node):
    api.create("pods", pod("p", "testnode"))
    api.faults.append({"method": "PATCH", "path_re": r"/status$", "status": 500, "count": 1})
    patch = {"status": {"phase": "Running"}}
    code, st, _ = node.request("PATCH", PODS + "/p/status", patch, MERGE)
    assert code == 500 and st["reason"] == "InternalError"
    assert node.ok("PATCH", PODS + "/p/status", patch, MERGE)["status"]["phase"] == "Running"
    assert api.faults == []
    assert [(r.method, r.status) for r in api.requests if r.path.endswith("/status")] == [("PATCH", 500),
                                                                                         ("PATCH", 200)]
    assert api.request_bodies[-1].body == patch and api.request_bodies[-1].content_type == MERGE

    api.faults.append({"path_re": r"/p$", "status": 409, "count": 1})
    code, st, _ = node.request("GET", PODS + "/p")
    assert code == 409 and st["message"].startswith('Operation cannot be fulfilled on pods "p"')
    api.faults.append({"path_re": r"^/version$", "status": 429, "count": 1})
    code, st, r = node.request("GET", "/version")
    assert code == 429 and r.getheader("Retry-After") == "1"
    api.faults.append({"path_re": r"^/healthz$", "delay": 0.5, "count": 1})
    start = time.monotonic()
    assert node.request("GET", "/healthz")[:2] == (200, "ok") and time.monotonic() - start >= 0.5


def test_down_and_up_on_the_same_port(api, node):
    api.create("pods", pod("p"))
    port, url = api.port, api.url
    w = node.watch(q(PODS, watch="true"))
    assert w.next()["type"] == "ADDED"
    api.set_down(True)
    with pytest.raises(EOFError):
        w.next()
    w.close()
    with pytest.raises(ConnectionRefusedError):
        node.request("GET", PODS)
    api.set_down(False)
    assert (api.port, api.url) == (port, url)
    assert [p["metadata"]["name"] for p in node.ok("GET", PODS)["items"]] == ["p"]


def test_wait(api, node):
    threading.Timer(0.2, node.ok, ("POST", PODS, pod("late")), {"status": 201}).start()
    assert api.wait(lambda: api.pod("late"), timeout=5)["metadata"]["name"] == "late"
    with pytest.raises(AssertionError, match="timed out after 0.2s waiting for nothing"):
        api.wait(lambda: None, timeout=0.2, msg="nothing")


def test_token_request_and_reviews(api, node):
    p = api.create("pods", pod("p", "testnode"))
    tr = node.ok("POST", "/api/v1/namespaces/default/serviceaccounts/default/token", {
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {
            "audiences": ["api"], "expirationSeconds": 3600,
            "boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "p", "uid": p["metadata"]["uid"]}}},
        status=201)
    token = tr["status"]["token"]
    assert tr["kind"] == "TokenRequest" and token.count(".") == 2
    assert abs(ts(tr["status"]["expirationTimestamp"]) - (time.time() + 3600)) < 5
    assert node.request("POST", "/api/v1/namespaces/default/serviceaccounts/default/token",
                        {"spec": {"expirationSeconds": 60}})[0] == 422
    sa = Client(api, token=token)
    sa.ok("GET", PODS)
    assert api.requests[-1].user == "system:serviceaccount:default:default"

    reviews = "/apis/authentication.k8s.io/v1/tokenreviews"
    review = node.ok("POST", reviews, {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                                       "spec": {"token": token}}, status=201)
    assert review["status"]["authenticated"] is True
    assert review["status"]["user"]["username"] == "system:serviceaccount:default:default"
    assert "system:authenticated" in review["status"]["user"]["groups"]
    assert node.ok("POST", reviews, {"spec": {"token": "bogus"}}, status=201)["status"] == {"user": {}}

    sars = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
    spec = {"user": "admin", "groups": ["system:masters"], "resourceAttributes": {"verb": "get", "resource": "nodes",
                                                                                   "subresource": "proxy"}}
    assert node.ok("POST", sars, {"spec": spec}, status=201)["status"]["allowed"] is True
    assert node.ok("POST", sars, {"spec": dict(spec, groups=["x"])}, status=201)["status"] == {"allowed": False}
    api.sar_rules = lambda s: (s["user"] == "bob", "bob may")
    assert node.ok("POST", sars, {"spec": {"user": "bob"}}, status=201)["status"] == {"allowed": True,
                                                                                    "reason": "bob may"}
    assert [r["kind"] for r in api.reviews] == ["TokenReview"] * 2 + ["SubjectAccessReview"] * 3
    assert node.request("GET", sars)[0] == 405


def test_events_and_discovery(api, node):
    event = {"metadata": {"name": "p.1", "namespace": "default"}, "involvedObject": {"kind": "Pod", "name": "p"},
             "reason": "Started", "message": "Started container c", "type": "Normal", "count": 1,
             "source": {"component": "kubelet", "host": "testnode"}}
    node.ok("POST", "/api/v1/namespaces/default/events", event, status=201)
    out = node.ok("PATCH", "/api/v1/namespaces/default/events/p.1", {"count": 2}, STRATEGIC)
    assert out["count"] == 2
    new = node.ok("GET", "/apis/events.k8s.io/v1/namespaces/default/events")["items"][0]
    assert (new["note"], new["regarding"], new["deprecatedCount"]) == ("Started container c",
                                                                      {"kind": "Pod", "name": "p"}, 2)
    node.ok("POST", "/apis/events.k8s.io/v1/namespaces/default/events", {
        "apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "p.2"}, "note": "hello",
        "reason": "Pulled", "type": "Normal", "regarding": {"kind": "Pod", "name": "p"}}, status=201)
    core = node.ok("GET", q("/api/v1/namespaces/default/events", fieldSelector="reason=Pulled"))["items"]
    assert [(e["message"], e["involvedObject"]["name"]) for e in core] == [("hello", "p")]

    assert node.ok("GET", "/healthz") == "ok"
    assert node.ok("GET", "/api")["versions"] == ["v1"]
    groups = [g["name"] for g in node.ok("GET", "/apis")["groups"]]
    assert "coordination.k8s.io" in groups and "authentication.k8s.io" in groups
    assert "pods/status" in [r["name"] for r in node.ok("GET", "/api/v1")["resources"]]
    with pytest.raises(ApiError) as err:
        api.create("events", event)
    assert err.value.code == 409


def test_configmap_and_secret_watch_by_name(api, node):
    """What the kubelet's object manager does: list one object by name, then watch it from the list."""
    cms = "/api/v1/namespaces/default/configmaps"
    lst = node.ok("GET", q(cms, fieldSelector="metadata.name=cfg"))
    assert lst["items"] == [] and lst["kind"] == "ConfigMapList"
    w = node.watch(q(cms, watch="true", resourceVersion=lst["metadata"]["resourceVersion"],
                     fieldSelector="metadata.name=cfg"))
    node.ok("POST", cms, {"metadata": {"name": "other"}, "data": {"a": "1"}}, status=201)  # not selected
    assert w.silent_for(0.3)
    node.ok("POST", cms, {"metadata": {"name": "cfg"}, "data": {"a": "1"}}, status=201)
    ev = w.next()
    assert ev["type"] == "ADDED" and ev["object"]["data"] == {"a": "1"} and ev["object"]["kind"] == "ConfigMap"
    node.ok("PUT", cms + "/cfg", {"metadata": {"name": "cfg"}, "data": {"a": "2"}})
    ev = w.next()
    assert ev["type"] == "MODIFIED" and ev["object"]["data"] == {"a": "2"}
    node.ok("DELETE", cms + "/cfg")
    assert w.next()["type"] == "DELETED"
    w.close()
    # a secret by name, and a 404 with the apiserver's message
    node.ok("POST", "/api/v1/namespaces/default/secrets",
            {"metadata": {"name": "s"}, "type": "kubernetes.io/dockerconfigjson", "data": {".dockerconfigjson": "e30="}},
            status=201)
    got = node.ok("GET", q("/api/v1/namespaces/default/secrets", fieldSelector="metadata.name=s"))
    assert [i["metadata"]["name"] for i in got["items"]] == ["s"] and got["items"][0]["type"].endswith("dockerconfigjson")
    code, body, _ = node.request("GET", "/api/v1/namespaces/default/secrets/nope")
    assert code == 404 and body["message"] == 'secrets "nope" not found' and body["reason"] == "NotFound"
