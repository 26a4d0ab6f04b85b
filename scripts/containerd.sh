#!/bin/bash
# A private containerd for ckubelet's example and tests: root, state, socket, CNI config and logs under DIR.
#   containerd.sh start DIR [NET_INDEX]   start it (and wait until it answers); NET_INDEX (0-99) picks the
#                                         bridge ck<N> and subnet 10.<100+N>.0.0/16 so instances don't clash
#   containerd.sh stop DIR                stop it, its shims, and unmount what it left
#   containerd.sh import DIR TAR          import an OCI image tar into the k8s.io namespace
# CKUBELET_CONTAINERD_STATS_PERIOD=N (start): the CRI plugin's stats_collect_period, how often (seconds) it
# measures the snapshots' usage (the containers' writable layers); containerd's default is 10.
# CKUBELET_CONTAINERD_BIN=DIR: the containerd, containerd-shim-runc-v2 and ctr of DIR (first on PATH) instead of
# Debian 12's 1.6.20, e.g. containerd 2.1.9 from scripts/build-runtime.sh; a 2.x gets a version 3 configuration.
# CKUBELET_OCI_RUNTIME=PATH: the OCI runtime the runc shim runs (BinaryName), e.g. crun; default runc on PATH.
# CKUBELET_CONTAINERD_TEST_HANDLER=1 (start): a second runtime handler "test-handler" (the runc shim), the RuntimeClass
#   handler upstream's node e2e configures (its PodOverhead spec runs a pod with it).
# CKUBELET_CONTAINERD_HUGETLB=1 (start): disable_hugetlb_controller = false, so that the containers' hugepage_limits
# from the CRI reach their hugetlb cgroups (containerd leaves them out by default).
set -euo pipefail
if [ -n "${CKUBELET_CONTAINERD_BIN:-}" ]; then
        export PATH="$CKUBELET_CONTAINERD_BIN:$PATH"
fi
cmd=${1:?usage: containerd.sh start|stop|import DIR}
dir=$(realpath -m "${2:?DIR}")
sock="$dir/containerd.sock"

oci_runtime() { # CRI plugin name: the runc runtime's binary, when CKUBELET_OCI_RUNTIME says
        if [ -n "${CKUBELET_CONTAINERD_TEST_HANDLER:-}" ]; then
                # a runtimes table of our own replaces containerd 1.6's default one: runc named again
                printf '  [plugins.%s.containerd.runtimes.runc]\n    runtime_type = "io.containerd.runc.v2"\n' "$1"
                printf '  [plugins.%s.containerd.runtimes.test-handler]\n    runtime_type = "io.containerd.runc.v2"\n' "$1"
                [ -z "${CKUBELET_OCI_RUNTIME:-}" ] ||
                        printf '  [plugins.%s.containerd.runtimes.test-handler.options]\n    BinaryName = "%s"\n' "$1" \
                                "$CKUBELET_OCI_RUNTIME"
        fi
        [ -n "${CKUBELET_OCI_RUNTIME:-}" ] || return 0
        printf '  [plugins.%s.containerd.runtimes.runc.options]\n    BinaryName = "%s"\n' "$1" "$CKUBELET_OCI_RUNTIME"
}

config_v2() { # containerd 1.x
        cat <<EOC
version = 2
root = "$dir/root"
state = "$dir/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
                    "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper",
                    "io.containerd.internal.v1.tracing"]
[grpc]
  address = "$sock"
[ttrpc]
  address = "$sock.ttrpc"
[plugins."io.containerd.grpc.v1.cri"]
  restrict_oom_score_adj = true${CKUBELET_CONTAINERD_HUGETLB:+
  disable_hugetlb_controller = false}${CKUBELET_CONTAINERD_STATS_PERIOD:+
  stats_collect_period = $CKUBELET_CONTAINERD_STATS_PERIOD}
  sandbox_image = "registry.k8s.io/pause:3.9"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$dir/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".registry.mirrors."127.0.0.1:5000"]
    endpoint = ["http://127.0.0.1:5000"]
$(oci_runtime '"io.containerd.grpc.v1.cri"')
EOC
}

config_v3() { # containerd 2.x: the CRI plugin split in images and runtime; registry hosts in hosts.toml files
        mkdir -p "$dir/certs.d/127.0.0.1:5000" "$dir/cdi" # cdi: this instance's CDI specs (the tests' DRA driver)
        cat >"$dir/certs.d/127.0.0.1:5000/hosts.toml" <<EOC
server = "http://127.0.0.1:5000"
[host."http://127.0.0.1:5000"]
  capabilities = ["pull", "resolve"]
EOC
        cat <<EOC
version = 3
root = "$dir/root"
state = "$dir/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
                    "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper",
                    "io.containerd.snapshotter.v1.erofs", "io.containerd.differ.v1.erofs",
                    "io.containerd.internal.v1.tracing"]
[grpc]
  address = "$sock"
[ttrpc]
  address = "$sock.ttrpc"
[plugins."io.containerd.cri.v1.images"]${CKUBELET_CONTAINERD_STATS_PERIOD:+
  stats_collect_period = $CKUBELET_CONTAINERD_STATS_PERIOD}
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = "registry.k8s.io/pause:3.9"
  [plugins."io.containerd.cri.v1.images".registry]
    config_path = "$dir/certs.d"
[plugins."io.containerd.cri.v1.runtime"]
  restrict_oom_score_adj = true${CKUBELET_CONTAINERD_HUGETLB:+
  disable_hugetlb_controller = false}
  enable_cdi = true
  cdi_spec_dirs = ["$dir/cdi", "/etc/cdi", "/var/run/cdi"]
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = ["/usr/lib/cni"]
    conf_dir = "$dir/cni/net.d"
$(oci_runtime '"io.containerd.cri.v1.runtime"')
EOC
}

# crun refuses a hybrid cgroup host whose unified hierarchy holds a controller (hugetlb on these machines): each
# such controller is mounted as a v1 hierarchy first (it then leaves the unified one; left mounted afterwards: once
# crun made cgroups there the hierarchy outlives an unmount, /proc/PID/cgroup keeps naming it, and containerd 1.6
# then fails its sandbox and container stats for want of its mount point).
prepare_crun() {
        local u=/sys/fs/cgroup/unified c
        [ -f "$u/cgroup.controllers" ] || return 0
        for c in $(cat "$u/cgroup.controllers"); do
                mountpoint -q "/sys/fs/cgroup/$c" && continue
                mkdir -p "/sys/fs/cgroup/$c"
                mount -t cgroup -o "$c" cgroup "/sys/fs/cgroup/$c"
                echo "containerd.sh: mounted the cgroup v1 hierarchy $c for crun (a hybrid host)" >&2
        done
}

start() {
        local n=${1:-0}
        mkdir -p "$dir/cni/net.d" "$dir/cni/data"
        cat > "$dir/cni/net.d/10-ckubelet.conflist" <<EOC
{
  "cniVersion": "1.0.0",
  "name": "ckubelet$n",
  "plugins": [
    {"type": "bridge", "bridge": "ck$n", "isGateway": true, "ipMasq": true, "hairpinMode": true,
     "ipam": {"type": "host-local", "dataDir": "$dir/cni/data",
              "ranges": [[{"subnet": "10.$((100 + n)).0.0/16"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "portmap", "capabilities": {"portMappings": true}},
    {"type": "loopback"}
  ]
}
EOC
        case "${CKUBELET_OCI_RUNTIME:-}" in *crun) prepare_crun ;; esac
        local major
        major=$(containerd --version | awk '{print $3}' | sed 's/^v//; s/\..*//')
        if [ "$major" -ge 2 ]; then
                config_v3 >"$dir/config.toml"
        else
                config_v2 >"$dir/config.toml"
        fi
        if [ -S "$sock" ] && ctr -a "$sock" version >/dev/null 2>&1; then
                return 0
        fi
        containerd --config "$dir/config.toml" >>"$dir/containerd.log" 2>&1 &
        echo $! > "$dir/containerd.pid"
        for _ in $(seq 1 200); do
                if ctr -a "$sock" version >/dev/null 2>&1; then
                        return 0
                fi
                sleep 0.1
        done
        echo "containerd.sh: containerd did not come up, see $dir/containerd.log" >&2
        tail -20 "$dir/containerd.log" >&2 || true
        exit 1
}

stop() {
        if [ -f "$dir/containerd.pid" ]; then
                local pid
                pid=$(cat "$dir/containerd.pid")
                kill "$pid" 2>/dev/null || true
                for _ in $(seq 1 100); do
                        kill -0 "$pid" 2>/dev/null || break
                        sleep 0.1
                done
                kill -9 "$pid" 2>/dev/null || true
                rm -f "$dir/containerd.pid"
        fi
        # shims (and their containers) started by this instance
        pkill -9 -f "containerd-shim-runc-v2 .*-address $sock" 2>/dev/null || true
        for _ in $(seq 1 50); do
                pgrep -f "containerd-shim-runc-v2 .*-address $sock" >/dev/null || break
                sleep 0.1
        done
        # leftover mounts (rootfs, shm, netns) under DIR
        { grep -o " $dir/[^ ]*" /proc/mounts || true; } | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
        ip link del "ck${1:-0}" 2>/dev/null || true
}

case "$cmd" in
start) start "${3:-0}" ;;
stop) stop "${3:-0}" ;;
import) ctr -a "$sock" -n k8s.io images import "${3:?TAR}" >/dev/null ;;
*) echo "usage: containerd.sh start|stop|import DIR" >&2; exit 2 ;;
esac
