#!/bin/bash
# A one-node Kubernetes cluster made by kubeadm v1.37.2 whose kubelet is ckubelet: what tests/e2e/test_kubeadm.py
# does, for a person on a Debian 12 machine (docs/cluster.md, "A one-node cluster with kubeadm").
#   kubeadm-node.sh up [DIR]     build what is missing, start containerd, kubeadm init, start ckubelet
#   kubeadm-node.sh down [DIR]   stop ckubelet, kubeadm reset -f, kube-proxy --cleanup, stop containerd
# DIR (default /var/lib/ckubelet-kubeadm) holds containerd (scripts/containerd.sh: its socket, root, CNI bridge
# ck0 with 10.100.0.0/16), the certificates, etcd's data, kubeadm's config and the logs. kubeadm's own fixed
# paths are used too: /etc/kubernetes (kubeconfigs, manifests) and /var/lib/kubelet (the kubelet's files).
# Needs: root; Debian 12 with containerd, runc, containernetworking-plugins, busybox-static, iptables, python3
# (scripts/install-deps.sh); Go >= 1.26 for the first build of Kubernetes v1.37.2 (scripts/build-kubernetes.sh,
# about 8 minutes on 2 cores, cached in /var/cache/ckubelet-k8s); ckubelet: CKUBELET=PATH, else `ckubelet` on
# PATH (the package), else build/ckubelet of this checkout.
# Then: export KUBECONFIG=/etc/kubernetes/admin.conf; kubectl get nodes (kubectl is in the printed bin dir).
# Phase skipped: addon/coredns (no image built here). The control-plane taint stays (remove it to run pods:
# kubectl taint node ckubelet-kubeadm node-role.kubernetes.io/control-plane:NoSchedule-).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
cmd=${1:?usage: kubeadm-node.sh up|down [DIR]}
dir=$(realpath -m "${2:-/var/lib/ckubelet-kubeadm}")
node=${CKUBELET_NODE_NAME:-ckubelet-kubeadm}
image_repo=registry.local/k8s
[ "$(id -u)" = 0 ] || { echo "kubeadm-node.sh: run as root" >&2; exit 1; }

ckubelet=${CKUBELET:-$(command -v ckubelet || echo "$repo/build/ckubelet")}
[ -x "$ckubelet" ] || { echo "kubeadm-node.sh: no ckubelet ($ckubelet): meson setup build && ninja -C build" >&2; exit 1; }

bins() { bash "$here/build-kubernetes.sh" | tail -n 1; }

up() {
        local bin ip
        if [ -n "$(ls -A /etc/kubernetes 2>/dev/null)" ]; then
                echo "kubeadm-node.sh: /etc/kubernetes is not empty: a node is set up already (kubeadm-node.sh down)" >&2
                exit 1
        fi
        bin=$(bins)
        # the node's address: the first non-loopback IPv4 one (kube-apiserver does not proxy to loopback ones)
        ip=$(hostname -I | tr ' ' '\n' | grep -v ':' | grep -v '^127\.' | head -n 1)
        [ -n "$ip" ] || { echo "kubeadm-node.sh: no non-loopback IPv4 address" >&2; exit 1; }
        mkdir -p "$dir/pki" "$dir/etcd" "$dir/pods" "$dir/bin"
        # containerd, with busybox images (its sandbox image registry.k8s.io/pause:3.9 among them)
        bash "$here/build-images.sh" "$dir/images"
        bash "$here/containerd.sh" start "$dir/containerd" 0
        bash "$here/containerd.sh" import "$dir/containerd" "$dir/images/images.tar"
        cat >"$dir/kubeadm.yaml" <<EOF
apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: $ip
  bindPort: 6443
nodeRegistration:
  name: $node
  criSocket: unix://$dir/containerd/containerd.sock
  imagePullPolicy: IfNotPresent
  # on a cgroup v1 machine kubeadm v1.37 asks for this check to be skipped (and failCgroupV1: false below)
  ignorePreflightErrors: [SystemVerification]
skipPhases: [addon/coredns]
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.37.2
imageRepository: $image_repo
certificatesDir: $dir/pki
etcd:
  local:
    dataDir: $dir/etcd/data
---
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
podLogsDir: $dir/pods
---
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
EOF
        # the images kubeadm asks for, built from the binaries (kube-proxy's with the machine's iptables)
        local tags
        tags=$("$bin/kubeadm" config images list --config "$dir/kubeadm.yaml")
        tag() { echo "$tags" | grep "/$1:" | sed 's/.*://'; }
        python3 "$here/build-kubeadm-images.py" "$dir/images/kubeadm.tar" "$bin" "$image_repo" \
                "$(tag kube-apiserver)" "$(tag etcd)" "$(tag pause)"
        bash "$here/containerd.sh" import "$dir/containerd" "$dir/images/kubeadm.tar"
        # kubeadm's preflight runs `kubelet --version`: ckubelet answers with the version it implements
        ln -sf "$ckubelet" "$dir/bin/kubelet"
        PATH="$dir/bin:$PATH" "$bin/kubeadm" init --config "$dir/kubeadm.yaml" >"$dir/kubeadm-init.log" 2>&1 &
        local kpid=$!
        # no init system: start ckubelet as kubeadm's drop-in (debian/10-kubeadm.conf) would, once kubeadm has
        # written the kubelet's files
        for _ in $(seq 1 600); do
                grep -q '\[kubelet-start\] Starting the kubelet' "$dir/kubeadm-init.log" && break
                kill -0 "$kpid" 2>/dev/null || break
                sleep 0.5
        done
        (
                KUBELET_KUBECONFIG_ARGS="--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf"
                KUBELET_CONFIG_ARGS="--config=/var/lib/kubelet/config.yaml"
                KUBELET_KUBEADM_ARGS=""
                # shellcheck disable=SC1091
                [ -f /var/lib/kubelet/kubeadm-flags.env ] && . /var/lib/kubelet/kubeadm-flags.env
                KUBELET_EXTRA_ARGS="--container-logs-dir=$dir/containers"
                # shellcheck disable=SC2086
                exec setsid "$ckubelet" $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS \
                        $KUBELET_EXTRA_ARGS </dev/null >>"$dir/ckubelet.log" 2>&1
        ) &
        echo $! >"$dir/ckubelet.pid"
        if ! wait "$kpid"; then
                tail -n 40 "$dir/kubeadm-init.log" >&2
                echo "kubeadm-node.sh: kubeadm init failed (log: $dir/kubeadm-init.log, ckubelet: $dir/ckubelet.log)" >&2
                exit 1
        fi
        tail -n 12 "$dir/kubeadm-init.log"
        echo "kubeadm-node.sh: node $node is up: KUBECONFIG=/etc/kubernetes/admin.conf $bin/kubectl get nodes" \
                "(ckubelet pid $(cat "$dir/ckubelet.pid"), log $dir/ckubelet.log; kubeadm-node.sh down to remove)"
}

down() {
        local bin pid
        bin=$(bins)
        # kubeadm reset on a systemd node stops the kubelet first: so does this
        if [ -f "$dir/ckubelet.pid" ]; then
                pid=$(cat "$dir/ckubelet.pid")
                kill "$pid" 2>/dev/null || true
                for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
                rm -f "$dir/ckubelet.pid"
        fi
        cat >"$dir/reset.yaml" <<EOF
apiVersion: kubeadm.k8s.io/v1beta4
kind: ResetConfiguration
force: true
criSocket: unix://$dir/containerd/containerd.sock
certificatesDir: $dir/pki
EOF
        "$bin/kubeadm" reset --config "$dir/reset.yaml" || true
        # what kubeadm reset leaves: kube-proxy's rules, the pod cgroups (empty), containerd
        "$bin/kube-proxy" --cleanup || true
        bash "$here/containerd.sh" stop "$dir/containerd" 0
        find /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/kubepods -depth -type d -exec rmdir {} \; 2>/dev/null || true
        rm -rf /etc/kubernetes "$dir"
        echo "kubeadm-node.sh: node removed"
}

case "$cmd" in
up) up ;;
down) down ;;
*) echo "usage: kubeadm-node.sh up|down [DIR]" >&2; exit 2 ;;
esac
