"""A device plugin for the tests (deviceplugin/v1beta1 with Debian's python3-grpcio), advertising fake devices.

Run as a process: python3 deviceplugin.py --dir <root-dir>/device-plugins --resource example.com/fakedev
--devices 4 --state <dir>. It serves DevicePlugin on <dir>/<name>.sock, registers with the kubelet on
<dir>/kubelet.sock, and registers again whenever that socket is made anew (a kubelet restart) or its own socket
disappears (the kubelet removes stale ones at start), as real plugins do. Every call is appended to
<state>/calls.jsonl. Allocate gives each container: FAKE_DEVICES=<ids>, a read-only mount of <state>/share at
/fakedev, /dev/null as /dev/fake0 and an annotation (and with --cdi-kind K, the CDI device K=<id> of each). The health of a device can be flipped by writing its ID to
<state>/unhealthy (one per line): ListAndWatch sends the new list.

The protos are compiled at import time with grpc_tools (python3-grpc-tools) from the repository's proto/."""
import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from concurrent import futures

import protos

HERE = os.path.dirname(os.path.abspath(__file__))


def load_protos(names=("deviceplugin", "podresources")):
    return protos.load_protos(names)


class Plugin:
    def __init__(self, args):
        import grpc
        self.grpc = grpc
        self.args = args
        mods = load_protos(("deviceplugin",))
        self.pb, self.pbg = mods["deviceplugin"]
        self.ids = [f"dev-{i}" for i in range(args.devices)]
        self.socket = os.path.join(args.dir, args.endpoint)
        self.kubelet_socket = os.path.join(args.dir, "kubelet.sock")
        self.calls = os.path.join(args.state, "calls.jsonl")
        self.unhealthy_file = os.path.join(args.state, "unhealthy")
        self.share = os.path.join(args.state, "share")
        os.makedirs(self.share, exist_ok=True)
        with open(os.path.join(self.share, "hello"), "w") as f:
            f.write("from the device plugin\n")
        self.server = None
        self.stop = threading.Event()
        self.changed = threading.Condition()
        self.generation = 0

    def record(self, method, **kw):
        with open(self.calls, "a") as f:
            f.write(json.dumps({"method": method, "time": time.time(), **kw}) + "\n")

    def unhealthy(self):
        try:
            with open(self.unhealthy_file) as f:
                return {l.strip() for l in f if l.strip()}
        except FileNotFoundError:
            return set()

    def devices(self):
        bad = self.unhealthy()
        devs = [self.pb.Device(ID=i, health="Unhealthy" if i in bad else "Healthy") for i in self.ids]
        if self.args.numa is not None:  # every device on that NUMA node
            for d in devs:
                d.topology.nodes.add(ID=self.args.numa)
        return devs

    # ---- the DevicePlugin service ----
    def GetDevicePluginOptions(self, request, context):
        self.record("GetDevicePluginOptions")
        return self.options()

    def options(self):
        return self.pb.DevicePluginOptions(pre_start_required=self.args.pre_start,
                                           get_preferred_allocation_available=self.args.preferred)

    def ListAndWatch(self, request, context):
        self.record("ListAndWatch")
        last = None
        while not self.stop.is_set() and context.is_active():
            devs = self.devices()
            state = [(d.ID, d.health) for d in devs]
            if state != last:
                last = state
                yield self.pb.ListAndWatchResponse(devices=devs)
            time.sleep(0.1)

    def GetPreferredAllocation(self, request, context):
        resp = self.pb.PreferredAllocationResponse()
        for r in request.container_requests:
            # prefer the highest IDs, the ones the kubelet would not pick in name order
            pick = list(r.must_include_deviceIDs)
            for i in sorted(r.available_deviceIDs, reverse=True):
                if len(pick) >= r.allocation_size:
                    break
                if i not in pick:
                    pick.append(i)
            self.record("GetPreferredAllocation", available=list(r.available_deviceIDs),
                        must_include=list(r.must_include_deviceIDs), size=r.allocation_size, preferred=pick)
            resp.container_responses.append(self.pb.ContainerPreferredAllocationResponse(deviceIDs=pick))
        return resp

    def Allocate(self, request, context):
        resp = self.pb.AllocateResponse()
        for r in request.container_requests:
            ids = list(r.devicesIDs)
            self.record("Allocate", ids=ids)
            if self.args.fail_allocate:
                context.abort(self.grpc.StatusCode.INTERNAL, "the fake hardware is on fire")
            c = self.pb.ContainerAllocateResponse()
            c.envs["FAKE_DEVICES"] = ",".join(ids)
            c.mounts.append(self.pb.Mount(container_path="/fakedev", host_path=self.share, read_only=True))
            c.devices.append(self.pb.DeviceSpec(container_path="/dev/fake0", host_path="/dev/null", permissions="rw"))
            c.annotations["example.com/fakedev-ids"] = ",".join(ids)
            for i in ids if self.args.cdi_kind else ():
                c.cdi_devices.append(self.pb.CDIDevice(name=f"{self.args.cdi_kind}={i}"))
            resp.container_responses.append(c)
        return resp

    def PreStartContainer(self, request, context):
        self.record("PreStartContainer", ids=list(request.devicesIDs))
        return self.pb.PreStartContainerResponse()

    # ---- serving and registering ----
    def serve(self):
        if self.server:
            self.server.stop(0)
        if os.path.exists(self.socket):
            os.unlink(self.socket)
        self.server = self.grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        handlers = {
            "GetDevicePluginOptions": self.grpc.unary_unary_rpc_method_handler(
                self.GetDevicePluginOptions, request_deserializer=self.pb.Empty.FromString,
                response_serializer=self.pb.DevicePluginOptions.SerializeToString),
            "ListAndWatch": self.grpc.unary_stream_rpc_method_handler(
                self.ListAndWatch, request_deserializer=self.pb.Empty.FromString,
                response_serializer=self.pb.ListAndWatchResponse.SerializeToString),
            "GetPreferredAllocation": self.grpc.unary_unary_rpc_method_handler(
                self.GetPreferredAllocation, request_deserializer=self.pb.PreferredAllocationRequest.FromString,
                response_serializer=self.pb.PreferredAllocationResponse.SerializeToString),
            "Allocate": self.grpc.unary_unary_rpc_method_handler(
                self.Allocate, request_deserializer=self.pb.AllocateRequest.FromString,
                response_serializer=self.pb.AllocateResponse.SerializeToString),
            "PreStartContainer": self.grpc.unary_unary_rpc_method_handler(
                self.PreStartContainer, request_deserializer=self.pb.PreStartContainerRequest.FromString,
                response_serializer=self.pb.PreStartContainerResponse.SerializeToString),
        }
        self.server.add_generic_rpc_handlers((self.grpc.method_handlers_generic_handler("v1beta1.DevicePlugin",
                                                                                         handlers),))
        self.server.add_insecure_port("unix://" + self.socket)
        self.server.start()

    def register(self):
        with self.grpc.insecure_channel("unix://" + self.kubelet_socket) as ch:
            stub = self.pbg.RegistrationStub(ch)
            stub.Register(self.pb.RegisterRequest(version=self.args.version, endpoint=self.args.endpoint,
                                                  resource_name=self.args.resource, options=self.options()),
                          timeout=10)
        self.record("Registered")

    def run(self):
        signal.signal(signal.SIGTERM, lambda *a: self.stop.set())
        kubelet_ino = None
        while not self.stop.is_set():
            try:
                ino = os.stat(self.kubelet_socket).st_ino
            except FileNotFoundError:
                ino = None
            own = os.path.exists(self.socket)
            if ino is not None and (ino != kubelet_ino or not own):
                try:
                    self.serve()
                    self.register()
                    kubelet_ino = ino
                except Exception as e:  # the kubelet not there yet: try again
                    self.record("RegisterFailed", error=str(e))
                    kubelet_ino = None
            time.sleep(0.2)
        if self.server:
            self.server.stop(0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--state", required=True)
    ap.add_argument("--resource", default="example.com/fakedev")
    ap.add_argument("--endpoint", default="fakedev.sock")
    ap.add_argument("--devices", type=int, default=4)
    ap.add_argument("--version", default="v1beta1")
    ap.add_argument("--pre-start", action="store_true")
    ap.add_argument("--preferred", action="store_true")
    ap.add_argument("--fail-allocate", action="store_true")
    ap.add_argument("--numa", type=int, help="the devices' NUMA node (their topology)")
    ap.add_argument("--cdi-kind", help="also answer each device as the CDI device KIND=<id>")
    Plugin(ap.parse_args()).run()


if __name__ == "__main__":
    main()
