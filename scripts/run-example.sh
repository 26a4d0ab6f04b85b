#!/bin/bash
# The main job: a private containerd plus ckubelet running the static pods of examples/ (copied to DIR/manifests).
# Run as root on Debian 12:  bash scripts/run-example.sh
# Stops on Ctrl-C (or SIGTERM), or after CKUBELET_EXAMPLE_SECONDS seconds if set, and leaves nothing behind: the
# example pods, their containers, network namespaces, mounts, cgroups (under /ckubelet-example) and
# /var/log/containers links are removed, then containerd is stopped. DIR: CKUBELET_EXAMPLE_DIR, default
# /var/tmp/ckubelet-example (kept between runs: state, images, certificates, logs).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
dir=${CKUBELET_EXAMPLE_DIR:-/var/tmp/ckubelet-example}
dir=$(realpath -m "$dir")
ep="unix://$dir/containerd.sock"
crictl="$repo/build/tools/ckubelet-crictl --runtime-endpoint $ep"
net=50                         # containerd.sh's NET_INDEX: bridge ck50, 10.150.0.0/16
cgroup_root=/ckubelet-example  # the kubelet's --cgroup-root: its QoS and pod cgroups, removed on the way out
manifests=$dir/manifests

# the sandboxes containerd knows (pods of this instance, whoever made them)
sandboxes() {
        [ -S "$dir/containerd.sock" ] || return 0
        ctr --connect-timeout 2s -a "$dir/containerd.sock" -n k8s.io containers list -q \
                'labels."io.cri-containerd.kind"==sandbox' 2>/dev/null || true
}

# every cgroup hierarchy's mount point (v1 controllers and the unified one)
cgroup_mounts() {
        awk '$3 == "cgroup" || $3 == "cgroup2" { print $2 }' /proc/mounts | sort -u
}

cleanup_started=0
cleanup() {
        # once only; a second Ctrl-C during the clean-up would leave half of it undone
        trap - EXIT
        trap '' INT TERM
        [ "$cleanup_started" = 1 ] && return
        cleanup_started=1
        echo
        echo "stopping ckubelet, removing the example pods, stopping containerd"
        [ -n "${tail_pid:-}" ] && { kill "$tail_pid" 2>/dev/null || true; }
        # a containerd still starting is let come up (20 s at most), then stopped below
        [ -n "${containerd_start:-}" ] && { wait "$containerd_start" 2>/dev/null || true; }
        if [ -n "${kubelet_pid:-}" ]; then
                kill "$kubelet_pid" 2>/dev/null || true
                wait "$kubelet_pid" 2>/dev/null || true
                rm -f "$dir/kubelet.pid"
        fi
        # again while some are found: a sandbox ckubelet asked for just before it stopped is still being made (stopping
        # it fails until it is ready) or appears a little later
        local id ids round
        for round in 1 2 3 4 5; do
                ids=$(sandboxes)
                [ -n "$ids" ] || break
                [ "$round" = 1 ] || sleep 1
                for id in $ids; do
                        $crictl stopp "$id" >/dev/null 2>&1 && $crictl rmp "$id" >/dev/null 2>&1 || true
                done
        done
        ids=$(sandboxes)
        [ -z "$ids" ] || echo "run-example.sh: could not remove the pod sandboxes" $ids "(containerd.sh stop kills them)" >&2
        bash scripts/containerd.sh stop "$dir" "$net"
        # what the kubelet made on the host: the links to the pods' logs, and its cgroups (empty now)
        local l
        for l in /var/log/containers/*.log; do
                if [ -L "$l" ] && [[ "$(readlink "$l")" == "$dir/"* ]]; then rm -f "$l"; fi
        done
        local h
        for h in $(cgroup_mounts); do
                [ -d "$h$cgroup_root" ] || continue
                find "$h$cgroup_root" -depth -type d -exec rmdir {} + 2>/dev/null ||
                        echo "run-example.sh: could not remove the cgroup $h$cgroup_root (processes left in it?)" >&2
        done
        echo "stopped"
}
# set before anything starts: a Ctrl-C at any point runs the clean-up (once the command it interrupted returns)
# and ends the script
trap 'cleanup; exit 130' INT
trap 'cleanup; exit 143' TERM
trap cleanup EXIT

bash scripts/install-deps.sh
[ -f build/build.ninja ] || meson setup build >/dev/null
ninja -C build >/dev/null
bash scripts/build-images.sh /var/tmp/ckubelet-images
mkdir -p "$dir"

# a ckubelet left by a run that was killed (kill -9) holds the ports: stop it
if [ -f "$dir/kubelet.pid" ]; then
        old=$(cat "$dir/kubelet.pid")
        if [ "$(cat "/proc/$old/comm" 2>/dev/null)" = ckubelet ]; then kill "$old" 2>/dev/null || true; sleep 1; fi
        rm -f "$dir/kubelet.pid"
fi

# containerd in a session of its own: a Ctrl-C in the terminal goes to this script's process group (the script,
# ckubelet, the log tail) and must not stop containerd before the clean-up has removed the pods through it.
# Waited for with the wait builtin, which a Ctrl-C interrupts at once (the trap would otherwise run only when
# containerd answers; the clean-up then waits for the start before it stops containerd).
setsid bash scripts/containerd.sh start "$dir" "$net" &
containerd_start=$!
wait "$containerd_start"
containerd_start=
bash scripts/containerd.sh import "$dir" /var/tmp/ckubelet-images/images.tar

# the kubelet API: a throwaway client CA and an "admin" client certificate; requests with it are allowed
pki="$dir/pki"
mkdir -p "$pki"
if [ ! -f "$pki/admin.crt" ]; then
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$pki/ca.key" \
                -out "$pki/ca.crt" -days 30 -subj "/CN=ckubelet-example-ca" 2>/dev/null
        openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$pki/admin.key" \
                -out "$pki/admin.csr" -subj "/O=system:masters/CN=admin" 2>/dev/null
        openssl x509 -req -in "$pki/admin.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
                -out "$pki/admin.crt" -days 30 2>/dev/null
fi

# the kubelet's cgroup root, in every hierarchy (a new v1 cpuset cgroup starts with no CPUs and memory nodes)
for h in $(cgroup_mounts); do
        mkdir -p "$h$cgroup_root"
        for f in cpuset.cpus cpuset.mems; do
                if [ -f "$h/$f" ] && [ -z "$(cat "$h$cgroup_root/$f")" ]; then cat "$h/$f" >"$h$cgroup_root/$f"; fi
        done
done

cat > "$dir/kubelet-config.yaml" <<EOC
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
podLogsDir: $dir/pods
cgroupRoot: $cgroup_root
# a machine with swap on runs the example too (the kubelet's default refuses to start there); the containers get
# no swap (memorySwap.swapBehavior NoSwap)
failSwapOn: false
authentication:
  x509:
    clientCAFile: $pki/ca.crt
authorization:
  mode: AlwaysAllow
EOC

# the manifests: a fresh copy of examples/ at each start, to edit freely (the checkout is not touched)
rm -rf "$manifests"
cp -r examples "$manifests"

# the log of this run (the previous run's is kept as kubelet.log.1)
[ -f "$dir/kubelet.log" ] && mv "$dir/kubelet.log" "$dir/kubelet.log.1"
: >"$dir/kubelet.log"
build/ckubelet --config "$dir/kubelet-config.yaml" --pod-manifest-path "$manifests" \
        --container-runtime-endpoint "$ep" --hostname-override "$(hostname | tr 'A-Z' 'a-z')" \
        --root-dir "$dir/kubelet" --cert-dir "$pki" --v 2 >>"$dir/kubelet.log" 2>&1 &
kubelet_pid=$!
echo "$kubelet_pid" >"$dir/kubelet.pid"

cat <<EOM

ckubelet is running the pods in $manifests (pid $kubelet_pid).
  manifests:        $manifests (a copy of examples/, made afresh at each start)
  kubelet log:      $dir/kubelet.log
  pods:             $crictl pods
  containers:       $crictl ps
  container logs:   $dir/pods/<namespace>_<pod>_<uid>/<container>/<restart>.log
  the web example:  curl http://\$($crictl inspectp <web pod id> | grep '"ip"' | cut -d'"' -f4):8080/
  the kubelet API:  curl -sk --cert $pki/admin.crt --key $pki/admin.key https://127.0.0.1:10250/pods
                    (also /stats/summary, /metrics, /containerLogs/<ns>/<pod>/<container>, ...;
                     curl http://127.0.0.1:10248/healthz needs no certificate)
Edit, add or remove files in $manifests and watch the pods follow.
Ctrl-C stops everything and removes the example pods.

EOM

if [ -n "${CKUBELET_EXAMPLE_SECONDS:-}" ]; then
        sleep "$CKUBELET_EXAMPLE_SECONDS"
        $crictl ps
        exit 0
fi
tail -n +1 -F "$dir/kubelet.log" &
tail_pid=$!
wait "$kubelet_pid"
