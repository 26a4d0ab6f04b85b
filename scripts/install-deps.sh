#!/bin/bash
# Install the Debian 12 packages ckubelet needs to build, run and test. Idempotent; installs only what is
# missing.
set -euo pipefail
pkgs=(
        # build
        gcc meson ninja-build pkg-config protobuf-c-compiler libprotobuf-c-dev libnghttp2-dev
        libcurl4-openssl-dev libyaml-dev libjansson-dev libevent-dev libssl-dev libcmocka-dev zlib1g-dev libhttp-parser-dev
        clang-format   # the format check of tests/run.sh (.clang-format)
        clang libclang-rt-14-dev  # the libFuzzer targets of tests/fuzz (libFuzzer and the sanitizers' runtimes)
        libsystemd-dev
        # runtime
        containerd runc containernetworking-plugins iproute2 iptables procps
        # tests and examples
        busybox-static python3 python3-pytest python3-grpcio docker-registry skopeo curl openssl
        e2fsprogs util-linux mount  # mkfs.ext4, losetup and mount for the small filesystem of the node-pressure tests
        valgrind       # the leak check of tests/run.sh (tests/valgrind.py: memcheck on a smoke run of build/)
        apache2-utils  # htpasswd -B for the authenticated registry of the pull secret tests
        python3-grpc-tools  # compiles proto/csi.proto and proto/pluginregistration.proto for the test CSI plugin
        debhelper help2man lintian  # the Debian package (debian/) and its test (with dpkg-dev below)
        # the real control plane of the cluster tests (tests/e2e/controlplane.py): etcd, the WebSocket client,
        # and what scripts/build-kubernetes.sh needs to build kube-apiserver, kube-controller-manager and kubectl
        etcd-server python3-websocket golang-go dpkg-dev rsync
        prometheus           # a real Prometheus scrapes the metrics endpoints (test_prometheus.py)
        python3-grpc-tools   # compiles the device plugin and pod resources protos for the test plugin and client
        dbus python3-dbus python3-gi  # the fake systemd of the systemd cgroup driver test (test_systemd_cgroup.py)
)
missing=()
for p in "${pkgs[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
        echo "install-deps.sh: installing ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# Debian's docker-registry and prometheus packages start system services where an init system runs; the tests
# run their own, so stop those if they are there.
for svc in docker-registry prometheus; do
        if command -v systemctl >/dev/null && systemctl is-active --quiet "$svc" 2>/dev/null; then
                systemctl stop "$svc" || true
        fi
done
