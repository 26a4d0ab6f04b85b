"""A CSI node plugin for the tests (csi.v1 Identity and Node with Debian's python3-grpcio), with loop-device-backed
ext4 volumes, registered with the kubelet through <root-dir>/plugins_registry as node-driver-registrar does.

Run as a process:

    python3 csiplugin.py --name csi.ckubelet.test --registry <root-dir>/plugins_registry --state <dir>
                         [--no-stage] [--node-id ID] [--max-volumes N]

It serves pluginregistration.Registration on <registry>/<name>-reg.sock (GetInfo names the CSI endpoint
<state>/csi.sock) and Identity + Node on <state>/csi.sock. A volume handle is a backing file
<state>/images/<handle>.img (64 MiB, or the volume attribute "size" in MiB):

- NodeStageVolume: attach the file to a loop device, make an ext4 filesystem when it has none, mount it on the
  staging path (idempotent: a staging path already mounted is fine);
- NodePublishVolume: bind mount the staging path onto the target (read-only when asked); without staging
  (--no-stage, or an inline ephemeral volume) the loop device is mounted on the target directly; an ephemeral
  volume's file is made for it and removed by NodeUnpublishVolume;
- NodeUnpublishVolume / NodeUnstageVolume: unmount (and detach the loop device) when mounted, and succeed when
  there is nothing to do;
- NodeGetVolumeStats: statvfs of the volume path; NodeGetInfo: the node ID and a topology segment.

Every call is appended to <state>/calls.jsonl. Faults are asked for with files in <state>: a line "Method" in
"hang" makes the method hang until the line goes (a hung plugin); "block-<Method>" makes the method do its work
and then wait until the file is removed (a kubelet can be killed in the middle of the call); "fail-<Method>"
makes it fail with INTERNAL and the file's content as message.

The protos (proto/csi.proto, proto/pluginregistration.proto) are compiled at start with grpc_tools
(python3-grpc-tools)."""
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


def load_protos(names=("csi", "pluginregistration")):
    return protos.load_protos(names)


def mount_points():
    """The mount points of this mount namespace, as /proc/self/mountinfo lists them (unescaped)."""
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            mp = line.split()[4]
            out.append(mp.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\"))
    return out


def is_mounted(path):
    return os.path.realpath(path) in mount_points() or path in mount_points()


def run(*cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.strip()}")
    return p.stdout.strip()


class Plugin:
    def __init__(self, args):
        import grpc
        self.grpc = grpc
        self.args = args
        mods = load_protos()
        self.pb, self.pbg = mods["csi"]
        self.rpb, self.rpbg = mods["pluginregistration"]
        self.state = args.state
        self.images = os.path.join(self.state, "images")
        os.makedirs(self.images, exist_ok=True)
        self.csi_sock = os.path.join(self.state, "csi.sock")
        self.reg_sock = os.path.join(args.registry, f"{args.name}-reg.sock")
        self.calls = os.path.join(self.state, "calls.jsonl")
        self.lock = threading.Lock()  # one volume operation at a time (a real driver locks per volume)
        self.server = None

    # ---- faults and the call log ----
    def record(self, method, **kw):
        with open(self.calls, "a") as f:
            f.write(json.dumps({"method": method, "time": time.time(), **kw}) + "\n")

    def faults(self, method, context):
        while True:
            try:
                with open(os.path.join(self.state, "hang")) as f:
                    hung = method in {l.strip() for l in f}
            except FileNotFoundError:
                hung = False
            if not hung or not context.is_active():
                break
            time.sleep(0.1)
        path = os.path.join(self.state, f"fail-{method}")
        if os.path.exists(path):
            with open(path) as f:
                msg = f.read().strip() or "injected failure"
            context.abort(self.grpc.StatusCode.INTERNAL, msg)

    def block(self, method):
        path = os.path.join(self.state, f"block-{method}")
        if os.path.exists(path):
            self.record(method + ":blocked")
            while os.path.exists(path):
                time.sleep(0.05)

    # ---- volumes ----
    def image(self, handle, size_mb=64):
        name = "".join(c if c.isalnum() or c in "-_." else "_" for c in handle)
        path = os.path.join(self.images, name + ".img")
        if not os.path.exists(path):
            with open(path, "wb") as f:
                f.truncate(size_mb * 1024 * 1024)
        return path

    def loop_device(self, image):
        found = run("losetup", "-j", image)
        if found:
            return found.split(":")[0]
        return run("losetup", "-f", "--show", image)

    def detach(self, image):
        for line in run("losetup", "-j", image).splitlines():
            run("losetup", "-d", line.split(":")[0])

    def mount_device(self, handle, target, readonly=False, size_mb=64):
        dev = self.loop_device(self.image(handle, size_mb))
        if not subprocess.run(["blkid", "-p", dev], capture_output=True).stdout:
            run("mkfs.ext4", "-q", "-F", dev)
        os.makedirs(target, exist_ok=True)
        if not is_mounted(target):
            run("mount", "-t", "ext4", *(["-o", "ro"] if readonly else []), dev, target)

    def unmount(self, path):
        if is_mounted(path):
            run("umount", path)

    # ---- Identity ----
    def GetPluginInfo(self, request, context):
        return self.pb.GetPluginInfoResponse(name=self.args.name, vendor_version="0.1")

    def GetPluginCapabilities(self, request, context):
        return self.pb.GetPluginCapabilitiesResponse()

    def Probe(self, request, context):
        return self.pb.ProbeResponse(ready=self.pb.BoolValue(value=True))

    # ---- Node ----
    def NodeGetInfo(self, request, context):
        self.record("NodeGetInfo")
        self.faults("NodeGetInfo", context)
        topo = self.pb.Topology(segments={"topology.csi.ckubelet.test/zone": "zone-a"})
        return self.pb.NodeGetInfoResponse(node_id=self.args.node_id, max_volumes_per_node=self.args.max_volumes,
                                           accessible_topology=topo)

    def NodeGetCapabilities(self, request, context):
        self.record("NodeGetCapabilities")
        self.faults("NodeGetCapabilities", context)
        rpc = self.pb.NodeServiceCapability.RPC
        types = [rpc.GET_VOLUME_STATS, rpc.EXPAND_VOLUME]
        if not self.args.no_stage:
            types.append(rpc.STAGE_UNSTAGE_VOLUME)
        return self.pb.NodeGetCapabilitiesResponse(
            capabilities=[self.pb.NodeServiceCapability(rpc=rpc(type=t)) for t in types])

    def _capability(self, cap):
        mode = self.pb.VolumeCapability.AccessMode.Mode.Name(cap.access_mode.mode)
        return {"access_mode": mode, "fs_type": cap.mount.fs_type, "mount_flags": list(cap.mount.mount_flags)}

    def NodeStageVolume(self, request, context):
        self.record("NodeStageVolume", volume_id=request.volume_id, staging_target_path=request.staging_target_path,
                    publish_context=dict(request.publish_context), volume_context=dict(request.volume_context),
                    secrets=dict(request.secrets), **self._capability(request.volume_capability))
        self.faults("NodeStageVolume", context)
        if not request.volume_id or not request.staging_target_path:
            context.abort(self.grpc.StatusCode.INVALID_ARGUMENT, "volume id and staging target path are required")
        with self.lock:
            self.mount_device(request.volume_id, request.staging_target_path,
                              size_mb=int(request.volume_context.get("size", "64")))
        self.block("NodeStageVolume")
        return self.pb.NodeStageVolumeResponse()

    def NodeUnstageVolume(self, request, context):
        self.record("NodeUnstageVolume", volume_id=request.volume_id, staging_target_path=request.staging_target_path)
        self.faults("NodeUnstageVolume", context)
        with self.lock:
            self.unmount(request.staging_target_path)
            self.detach(self.image(request.volume_id))
        self.block("NodeUnstageVolume")
        return self.pb.NodeUnstageVolumeResponse()

    def NodePublishVolume(self, request, context):
        ctx = dict(request.volume_context)
        self.record("NodePublishVolume", volume_id=request.volume_id, target_path=request.target_path,
                    staging_target_path=request.staging_target_path, readonly=request.readonly,
                    publish_context=dict(request.publish_context), volume_context=ctx, secrets=dict(request.secrets),
                    **self._capability(request.volume_capability))
        self.faults("NodePublishVolume", context)
        if not request.volume_id or not request.target_path:
            context.abort(self.grpc.StatusCode.INVALID_ARGUMENT, "volume id and target path are required")
        with self.lock:
            if request.staging_target_path:
                if not is_mounted(request.staging_target_path):
                    context.abort(self.grpc.StatusCode.FAILED_PRECONDITION,
                                  f"{request.staging_target_path} is not staged")
                os.makedirs(request.target_path, exist_ok=True)
                if not is_mounted(request.target_path):
                    run("mount", "--bind", request.staging_target_path, request.target_path)
                    if request.readonly:
                        run("mount", "-o", "remount,bind,ro", request.target_path)
            else:
                self.mount_device(request.volume_id, request.target_path, request.readonly,
                                  int(ctx.get("size", "16" if ctx.get("csi.storage.k8s.io/ephemeral") == "true"
                                              else "64")))
        self.block("NodePublishVolume")
        return self.pb.NodePublishVolumeResponse()

    def NodeUnpublishVolume(self, request, context):
        self.record("NodeUnpublishVolume", volume_id=request.volume_id, target_path=request.target_path)
        self.faults("NodeUnpublishVolume", context)
        with self.lock:
            self.unmount(request.target_path)
            if self.args.no_stage or request.volume_id.startswith("csi-"):
                image = self.image(request.volume_id)
                self.detach(image)
                if request.volume_id.startswith("csi-"):  # an inline ephemeral volume: its data goes with it
                    os.unlink(image)
            if os.path.isdir(request.target_path):
                os.rmdir(request.target_path)
        self.block("NodeUnpublishVolume")
        return self.pb.NodeUnpublishVolumeResponse()

    def NodeGetVolumeStats(self, request, context):
        self.record("NodeGetVolumeStats", volume_id=request.volume_id, volume_path=request.volume_path)
        self.faults("NodeGetVolumeStats", context)
        if not is_mounted(request.volume_path):
            context.abort(self.grpc.StatusCode.NOT_FOUND, f"{request.volume_path} is not mounted")
        st = os.statvfs(request.volume_path)
        u = self.pb.VolumeUsage
        return self.pb.NodeGetVolumeStatsResponse(usage=[
            u(unit=u.BYTES, total=st.f_blocks * st.f_frsize, available=st.f_bavail * st.f_frsize,
              used=(st.f_blocks - st.f_bfree) * st.f_frsize),
            u(unit=u.INODES, total=st.f_files, available=st.f_ffree, used=st.f_files - st.f_ffree)])

    def NodeExpandVolume(self, request, context):
        self.record("NodeExpandVolume", volume_id=request.volume_id, volume_path=request.volume_path,
                    required_bytes=request.capacity_range.required_bytes)
        self.faults("NodeExpandVolume", context)
        return self.pb.NodeExpandVolumeResponse(capacity_bytes=request.capacity_range.required_bytes)

    # ---- Registration ----
    def GetInfo(self, request, context):
        self.record("GetInfo")
        return self.rpb.PluginInfo(type="CSIPlugin", name=self.args.name, endpoint=self.csi_sock,
                                   supported_versions=self.args.versions.split(","))

    def NotifyRegistrationStatus(self, request, context):
        self.record("NotifyRegistrationStatus", registered=request.plugin_registered, error=request.error)
        return self.rpb.RegistrationStatusResponse()

    def serve(self):
        grpc = self.grpc
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=16))
        self.pbg.add_IdentityServicer_to_server(self, self.server)
        self.pbg.add_NodeServicer_to_server(self, self.server)
        reg = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        self.rpbg.add_RegistrationServicer_to_server(self, reg)
        for p in (self.csi_sock, self.reg_sock):
            if os.path.exists(p):
                os.unlink(p)
        self.server.add_insecure_port("unix:" + self.csi_sock)
        self.server.start()
        os.makedirs(os.path.dirname(self.reg_sock), exist_ok=True)
        reg.add_insecure_port("unix:" + self.reg_sock)
        reg.start()
        self.record("started", pid=os.getpid())
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *a: stop.set())
        signal.signal(signal.SIGINT, lambda *a: stop.set())
        stop.wait()
        # going away: the registration socket goes first (the kubelet deregisters the driver)
        reg.stop(0)
        for p in (self.reg_sock,):
            if os.path.exists(p):
                os.unlink(p)
        self.server.stop(0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--name", default="csi.ckubelet.test")
    ap.add_argument("--registry", required=True)
    ap.add_argument("--state", required=True)
    ap.add_argument("--node-id", default="test-node-id")
    ap.add_argument("--max-volumes", type=int, default=16)
    ap.add_argument("--no-stage", action="store_true")
    ap.add_argument("--versions", default="1.0.0")
    Plugin(ap.parse_args()).serve()


if __name__ == "__main__":
    main()
