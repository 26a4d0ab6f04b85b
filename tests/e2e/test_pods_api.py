# The pods API (pods/v1alpha1, feature gate PodsAPI, beta and on in v1.37): ListPods, GetPod and WatchPods on
# <root-dir>/pods-api/pods-api.sock, each pod the protobuf encoding of a v1.Pod. The pods are checked field by
# field with upstream's field numbers (k8s.io/api core/v1 generated.proto), and, where the Go module cache holds
# k8s.io/api (scripts/build-kubernetes.sh), parsed whole with upstream's own .proto files.
import glob
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading

import pytest

import protos
import standalone
from conftest import NODE, SLEEPER, pod_manifest, wait_for

API_PROTO_DIRS = sorted(glob.glob("/var/cache/ckubelet-go/mod/k8s.io/api@v0.37.*"))


def fields(buf):
    """A protobuf message's fields: {number: [value, ...]}, varints as ints, length-delimited as bytes."""
    out, i = {}, 0

    def varint():
        nonlocal i
        v, shift = 0, 0
        while True:
            b = buf[i]
            i += 1
            v |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                return v

    while i < len(buf):
        tag = varint()
        num, wire = tag >> 3, tag & 7
        if wire == 0:
            v = varint()
        elif wire == 2:
            n = varint()
            v = bytes(buf[i:i + n])
            i += n
        elif wire == 1:
            v = bytes(buf[i:i + 8])
            i += 8
        elif wire == 5:
            v = bytes(buf[i:i + 4])
            i += 4
        else:
            raise AssertionError(f"wire type {wire} at offset {i}")
        out.setdefault(num, []).append(v)
    assert i == len(buf), "trailing bytes"
    return out


def one(f, num):
    [v] = f[num]
    return v


def pod_facts(data):
    """name, namespace, uid, container names, phase, {container: ready} of an encoded v1.Pod"""
    pod = fields(data)
    meta = fields(one(pod, 1))
    spec = fields(one(pod, 2)) if 2 in pod else {}  # a DELETED event's pod has its metadata only
    status = fields(one(pod, 3)) if 3 in pod else {}
    ready = {}
    for cs in status.get(8, []):
        c = fields(cs)
        ready[one(c, 1).decode()] = bool(c.get(4, [0])[0])
    return {
        "name": one(meta, 1).decode(), "namespace": one(meta, 3).decode(), "uid": one(meta, 5).decode(),
        "containers": [one(fields(c), 1).decode() for c in spec.get(2, [])],
        "phase": one(status, 1).decode() if 1 in status else None, "ready": ready,
    }


def upstream_pod_class():
    """k8s.io.api.core.v1.Pod compiled from upstream's .proto files, or None without the module cache."""
    if not API_PROTO_DIRS:
        return None
    api = API_PROTO_DIRS[-1]
    machinery = api.replace("/k8s.io/api@", "/k8s.io/apimachinery@")
    tree = tempfile.mkdtemp(prefix="ckubelet-k8sproto-")
    try:
        os.makedirs(os.path.join(tree, "in", "k8s.io"))
        os.symlink(api, os.path.join(tree, "in", "k8s.io", "api"))
        os.symlink(machinery, os.path.join(tree, "in", "k8s.io", "apimachinery"))
        os.makedirs(os.path.join(tree, "out"))
        subprocess.run([sys.executable, "-m", "grpc_tools.protoc", "-I" + os.path.join(tree, "in"),
                        "--include_imports", "--descriptor_set_out=" + os.path.join(tree, "out", "set.pb"),
                        "k8s.io/api/core/v1/generated.proto"], check=True, capture_output=True)
        from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
        fds = descriptor_pb2.FileDescriptorSet()
        with open(os.path.join(tree, "out", "set.pb"), "rb") as f:
            fds.ParseFromString(f.read())
        pool = descriptor_pool.DescriptorPool()
        for fd in fds.file:
            pool.Add(fd)
        desc = pool.FindMessageTypeByName("k8s.io.api.core.v1.Pod")
        if hasattr(message_factory, "GetMessageClass"):
            return message_factory.GetMessageClass(desc)
        return message_factory.MessageFactory(pool).GetPrototype(desc)
    finally:
        shutil.rmtree(tree, ignore_errors=True)


class PodsAPI:
    def __init__(self, kubelet):
        import grpc
        self.grpc = grpc
        self.pb, self.pbg = protos.load_protos(("pods",))["pods"]
        self.socket = os.path.join(kubelet.root, "pods-api", "pods-api.sock")
        self.channel = grpc.insecure_channel("unix://" + self.socket)
        self.stub = self.pbg.PodsStub(self.channel)

    def list(self):
        return [pod_facts(p) for p in self.stub.ListPods(self.pb.ListPodsRequest(), timeout=10).pods]

    def get(self, uid):
        return self.stub.GetPod(self.pb.GetPodRequest(podUID=uid), timeout=10).pod

    def close(self):
        self.channel.close()


def started(kubelet_factory):
    k, ro = standalone.start(kubelet_factory)
    api = PodsAPI(k)
    wait_for(lambda: os.path.exists(api.socket), msg="the pods API socket")
    return k, ro, api


def test_list_and_get_pods_as_protobuf(kubelet_factory, runtime):
    k, ro, api = started(kubelet_factory)
    try:
        k.write("web.yaml", pod_manifest("web", [("app", SLEEPER), ("side", SLEEPER)]))
        name = f"web-{NODE}"
        wait_for(lambda: any(p["name"] == name and p["phase"] == "Running" and all(p["ready"].values())
                             and len(p["ready"]) == 2 for p in api.list()), 60, msg="web Running and ready")
        [pod] = [p for p in api.list() if p["name"] == name]
        assert pod["namespace"] == "default"
        assert pod["containers"] == ["app", "side"]
        [sb] = runtime.pods_named(name)
        assert pod["uid"] == sb["metadata"]["uid"]
        # GetPod by UID; an unknown UID is NotFound with upstream's message
        data = api.get(pod["uid"])
        assert pod_facts(data)["name"] == name
        with pytest.raises(api.grpc.RpcError) as e:
            api.get("no-such-uid")
        assert e.value.code() == api.grpc.StatusCode.NOT_FOUND
        assert e.value.details() == "pod with UID no-such-uid not found"
        # the whole pod parses with upstream's own schema, and says what /pods says
        Pod = upstream_pod_class()
        if Pod is not None:
            p = Pod()
            p.ParseFromString(data)
            js = ro.json("/pods")
            [want] = [i for i in js["items"] if i["metadata"]["uid"] == pod["uid"]]
            assert p.metadata.name == want["metadata"]["name"]
            assert [c.name for c in p.spec.containers] == [c["name"] for c in want["spec"]["containers"]]
            assert [c.image for c in p.spec.containers] == [c["image"] for c in want["spec"]["containers"]]
            assert p.status.phase == want["status"]["phase"]
            assert p.status.podIP == want["status"].get("podIP", "")
            assert {c.type: c.status for c in p.status.conditions} == \
                {c["type"]: c["status"] for c in want["status"]["conditions"]}
            assert p.status.startTime.seconds > 0
            for c in p.status.containerStatuses:
                assert c.state.running.startedAt.seconds > 0
    finally:
        api.close()


def test_watch_sees_added_modified_deleted(kubelet_factory, runtime):
    k, ro, api = started(kubelet_factory)
    k.write("first.yaml", pod_manifest("first", [("c", SLEEPER)]))
    first = f"first-{NODE}"
    wait_for(lambda: any(p["name"] == first and p["phase"] == "Running" for p in api.list()), 60,
             msg="first Running")
    events = queue.Queue()
    call = api.stub.WatchPods(api.pb.WatchPodsRequest())

    def reader():
        try:
            for ev in call:
                events.put((api.pb.EventType.Name(ev.type), pod_facts(ev.pod) if ev.pod else None))
        except api.grpc.RpcError as e:
            events.put(("ERROR", e.code()))
        except Exception as e:  # a pod the test cannot read: fail the wait with it, not silently
            events.put(("BROKEN", repr(e)))

    t = threading.Thread(target=reader, daemon=True)
    t.start()

    def next_event(pred, what, timeout=60):
        seen = []

        def got():
            while True:
                try:
                    ev = events.get_nowait()
                except queue.Empty:
                    return False
                seen.append(ev)
                if pred(ev):
                    return ev
        return wait_for(got, timeout, msg=f"{what} (seen: {seen})")

    try:
        # the initial list, then the marker
        ev = next_event(lambda e: e[0] in ("ADDED", "INITIAL_SYNC_COMPLETE"), "the initial ADDED")
        assert ev[0] == "ADDED" and ev[1]["name"] == first and ev[1]["phase"] == "Running"
        next_event(lambda e: e[0] == "INITIAL_SYNC_COMPLETE", "INITIAL_SYNC_COMPLETE")
        # a new pod: ADDED, then MODIFIED until it runs
        k.write("second.yaml", pod_manifest("second", [("c", SLEEPER)]))
        second = f"second-{NODE}"
        ev = next_event(lambda e: e[1] and e[1]["name"] == second, "second's first event")
        assert ev[0] == "ADDED", ev
        next_event(lambda e: e[0] == "MODIFIED" and e[1]["name"] == second and e[1]["phase"] == "Running",
                   "second MODIFIED to Running")
        uid = [p["uid"] for p in api.list() if p["name"] == second][0]
        # its manifest goes: DELETED with its name, namespace and UID only
        k.remove("second.yaml")
        ev = next_event(lambda e: e[0] == "DELETED", "DELETED")
        assert ev[1]["name"] == second and ev[1]["uid"] == uid and ev[1]["namespace"] == "default"
        assert ev[1]["containers"] == [] and ev[1]["phase"] is None
        assert all(p["name"] != second for p in api.list())
        # the first pod was not touched meanwhile: no event repeats what the watcher already has
        assert not any(e[1] and e[1]["name"] == first and e[0] == "MODIFIED" for e in list(events.queue))
    finally:
        call.cancel()
        api.close()
    # the kubelet forgot the watcher: a new watch works, and the kubelet is healthy
    api = PodsAPI(k)
    try:
        call = api.stub.WatchPods(api.pb.WatchPodsRequest(), timeout=10)
        first_ev = next(iter(call))
        assert api.pb.EventType.Name(first_ev.type) == "ADDED"
        call.cancel()
    finally:
        api.close()
    assert ro.get("/healthz")[0] == 200


def test_list_is_rate_limited_and_gate_turns_it_off(kubelet_factory, runtime):
    k, ro, api = started(kubelet_factory)
    try:
        futures = [api.stub.ListPods.future(api.pb.ListPodsRequest(), timeout=30) for _ in range(80)]
        codes = []
        for f in futures:
            try:
                f.result()
                codes.append("OK")
            except api.grpc.RpcError as e:
                codes.append((e.code(), e.details()))
        assert "OK" in codes
        assert (api.grpc.StatusCode.RESOURCE_EXHAUSTED, "rejected by rate limit") in codes
        assert codes.count("OK") < 80
    finally:
        api.close()
    # the socket goes with the kubelet, and the gate off serves none
    k.term()
    assert not os.path.exists(api.socket)
    k.start(*k.extra_args, "--feature-gates", "PodsAPI=false")

    def up():
        try:
            return ro.get("/pods")[0] == 200
        except OSError:
            return False
    wait_for(up, 30, msg="the read-only port after the restart")
    assert not os.path.exists(api.socket)
