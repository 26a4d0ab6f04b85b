"""A DRA driver's kubelet plugin for the tests (k8s.io/kubelet/pkg/apis/dra/v1 with Debian's python3-grpcio),
registered through <root-dir>/plugins_registry (type DRAPlugin) as upstream's kubeletplugin helper does.

    python3 draplugin.py --name DRIVER --registry <root-dir>/plugins_registry --state <dir>

It serves pluginregistration.Registration on <registry>/<name>-reg.sock (GetInfo names <state>/dra.sock, service
v1.DRAPlugin) and DRAPlugin on <state>/dra.sock: NodePrepareResources answers each claim with one device
(request "req", CDI device "ckubelet.test/dra=<claim name>"), NodeUnprepareResources succeeds. Every call is
appended to <state>/calls.jsonl. The messages come from proto/dra.proto (compiled at start with grpc_tools); the
service is registered by its upstream path.

With --health it also names v1.DRAResourceHealth among its services and serves NodeWatchResources
(k8s.io/kubelet/pkg/apis/dra-health/v1, proto/drahealth.proto): the stream sends the health of device dev0 of its
pool at once, whenever it changes and every --health-every seconds. The test sets it by writing "Healthy",
"Unhealthy" or "Unknown" (and optionally a message after a space) to <state>/health; no file: Healthy."""
import argparse
import json
import os
import signal
import sys
import threading
import time
from concurrent import futures

import grpc

import protos

SERVICE = "k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin"
HEALTH_SERVICE = "v1.DRAResourceHealth"


class Plugin:
    def __init__(self, args):
        self.args = args
        mods = protos.load_protos(("pluginregistration", "dra", "drahealth"))
        self.rpb, self.rpbg = mods["pluginregistration"]
        self.dpb = mods["dra"][0]
        self.hpb = mods["drahealth"][0]
        self.stopping = threading.Event()
        self.lock = threading.Lock()
        self.sock = os.path.join(args.state, "dra.sock")
        self.reg_sock = os.path.join(args.registry, f"{args.name}-reg.sock")

    def record(self, method, **kw):
        with self.lock, open(os.path.join(self.args.state, "calls.jsonl"), "a") as f:
            f.write(json.dumps(dict(method=method, **kw)) + "\n")

    def GetInfo(self, request, context):
        return self.rpb.PluginInfo(type="DRAPlugin", name=self.args.name, endpoint=self.sock,
                                   supported_versions=["v1.DRAPlugin"] +
                                   ([HEALTH_SERVICE] if self.args.health else []))

    def NotifyRegistrationStatus(self, request, context):
        self.record("NotifyRegistrationStatus", registered=request.plugin_registered, error=request.error)
        return self.rpb.RegistrationStatusResponse()

    def prepare(self, request, context):
        resp = self.dpb.NodePrepareResourcesResponse()
        for c in request.claims:
            self.record("NodePrepareResources", uid=c.uid, name=c.name, namespace=c.namespace)
            r = resp.claims[c.uid]
            r.devices.add(request_names=["req"], pool_name=self.args.pool, device_name="dev0",
                          cdi_device_ids=[f"ckubelet.test/dra={c.name}"])
            if self.args.cdi_dir:
                self.write_cdi_spec(c)
        return resp

    def write_cdi_spec(self, c):
        """The claim's CDI device ckubelet.test/dra=<claim name>: an environment variable and a file mounted at
        /dra/claim (a bind of <state>/claim-<uid>), as a driver's NodePrepareResources does."""
        host = os.path.join(self.args.state, f"claim-{c.uid}")
        with open(host, "w") as f:
            f.write(f"claim {c.namespace}/{c.name}\n")
        spec = {"cdiVersion": "0.6.0", "kind": "ckubelet.test/dra",
                "devices": [{"name": c.name, "containerEdits": {
                    "env": [f"DRA_CLAIM={c.name}"],
                    "mounts": [{"hostPath": host, "containerPath": "/dra/claim", "options": ["ro", "bind"]}]}}]}
        path = os.path.join(self.args.cdi_dir, f"ckubelet-dra-{c.uid}.json")
        with open(path + ".tmp", "w") as f:
            json.dump(spec, f)
        os.rename(path + ".tmp", path)

    def unprepare(self, request, context):
        resp = self.dpb.NodeUnprepareResourcesResponse()
        for c in request.claims:
            if self.args.cdi_dir:
                for p in (os.path.join(self.args.cdi_dir, f"ckubelet-dra-{c.uid}.json"),
                          os.path.join(self.args.state, f"claim-{c.uid}")):
                    try:
                        os.unlink(p)
                    except FileNotFoundError:
                        pass
            self.record("NodeUnprepareResources", uid=c.uid, name=c.name, namespace=c.namespace)
            resp.claims[c.uid].error = ""
        return resp

    def health(self):
        try:
            with open(os.path.join(self.args.state, "health")) as f:
                text = f.read().strip()
        except FileNotFoundError:
            text = "Healthy"
        state, _, message = text.partition(" ")
        return state, message

    def watch(self, request, context):
        """NodeWatchResources: the complete list (one device) now, on every change and every --health-every s."""
        self.record("NodeWatchResources")
        last, sent = None, 0.0
        values = {"Healthy": self.hpb.HEALTHY, "Unhealthy": self.hpb.UNHEALTHY, "Unknown": self.hpb.UNKNOWN}
        while context.is_active() and not self.stopping.is_set():
            cur = self.health()
            if cur != last or time.monotonic() - sent >= self.args.health_every:
                resp = self.hpb.NodeWatchResourcesResponse()
                resp.devices.add(device=self.hpb.DeviceIdentifier(pool_name=self.args.pool, device_name="dev0"),
                                 health=values.get(cur[0], self.hpb.UNKNOWN), last_updated_time=int(time.time()),
                                 message=cur[1])
                yield resp
                if cur != last:
                    self.record("health-sent", health=cur[0])
                last, sent = cur, time.monotonic()
            time.sleep(0.2)

    def serve(self):
        os.makedirs(self.args.state, exist_ok=True)
        for s in (self.sock, self.reg_sock):
            if os.path.exists(s):
                os.unlink(s)
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        handlers = {
            "NodePrepareResources": grpc.unary_unary_rpc_method_handler(
                self.prepare, request_deserializer=self.dpb.NodePrepareResourcesRequest.FromString,
                response_serializer=self.dpb.NodePrepareResourcesResponse.SerializeToString),
            "NodeUnprepareResources": grpc.unary_unary_rpc_method_handler(
                self.unprepare, request_deserializer=self.dpb.NodeUnprepareResourcesRequest.FromString,
                response_serializer=self.dpb.NodeUnprepareResourcesResponse.SerializeToString),
        }
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))
        if self.args.health:
            server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(HEALTH_SERVICE, {
                "NodeWatchResources": grpc.unary_stream_rpc_method_handler(
                    self.watch, request_deserializer=self.hpb.NodeWatchResourcesRequest.FromString,
                    response_serializer=self.hpb.NodeWatchResourcesResponse.SerializeToString)}),))
        server.add_insecure_port("unix:" + self.sock)
        server.start()
        reg = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        self.rpbg.add_RegistrationServicer_to_server(self, reg)
        reg.add_insecure_port("unix:" + self.reg_sock)
        reg.start()
        self.record("started")
        done = threading.Event()
        signal.signal(signal.SIGTERM, lambda *a: done.set())
        done.wait()
        self.stopping.set()
        reg.stop(0)
        server.stop(0)
        for s in (self.sock, self.reg_sock):
            if os.path.exists(s):
                os.unlink(s)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--name", required=True)
    ap.add_argument("--registry", required=True)
    ap.add_argument("--state", required=True)
    ap.add_argument("--pool", default="pool")
    ap.add_argument("--health", action="store_true", help="serve v1.DRAResourceHealth (NodeWatchResources)")
    ap.add_argument("--health-every", type=float, default=5.0, help="resend the health this often (seconds)")
    ap.add_argument("--cdi-dir", help="write each prepared claim's CDI spec here (removed when unprepared)")
    Plugin(ap.parse_args()).serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())
