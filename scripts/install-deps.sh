#!/bin/bash
# Install the Debian 12 packages ckubelet needs. Idempotent; installs only what is missing.
#   install-deps.sh          what building and running need (scripts/run-example.sh): the compiler and
#                            libraries, containerd, runc, the CNI plugins, busybox for the example's images
#   install-deps.sh --deb    that and what building the Debian package needs (dpkg-buildpackage -us -uc -b)
#   install-deps.sh --test   all of the above and what the test suite needs (tests/run.sh): clang, valgrind, a
#                            registry, etcd and Go for the control plane of the cluster tests, Prometheus, ...
# The lists: one or more Debian package names a line, a comment saying what needs them.
set -euo pipefail
case "${1:-}" in
"") deb=0 test=0 ;;
--deb) deb=1 test=0 ;;
--test) deb=1 test=1 ;;
*) echo "usage: install-deps.sh [--deb | --test]" >&2; exit 2 ;;
esac

run_pkgs=(
        # build (libcmocka-dev: meson's default build/ also builds the unit tests)
        gcc meson ninja-build pkg-config protobuf-c-compiler libprotobuf-c-dev libnghttp2-dev
        libyaml-dev libjansson-dev libevent-dev libssl-dev libcmocka-dev zlib1g-dev
        libhttp-parser-dev libsystemd-dev
        # runtime
        containerd runc containernetworking-plugins iproute2 iptables procps
        # the example: its images are built from busybox-static by a Python script; openssl makes its kubelet
        # API certificates; curl to try the API
        busybox-static python3 openssl curl
)
deb_pkgs=(
        debhelper help2man dpkg-dev  # the Debian package (debian/)
)
test_pkgs=(
        clang-format   # the format check of tests/run.sh (.clang-format)
        clang libclang-rt-14-dev  # the libFuzzer targets of tests/fuzz (libFuzzer and the sanitizers' runtimes)
        python3-pytest python3-grpcio docker-registry skopeo
        python3-h2     # the HTTP/2 test apiserver of the client unit test (tests/unit/client/h2server.py)
        e2fsprogs util-linux mount  # mkfs.ext4, losetup and mount for the small filesystem of the node-pressure tests
        valgrind       # the leak check of tests/run.sh (tests/valgrind.py: memcheck on a smoke run of build/)
        apache2-utils  # htpasswd -B for the authenticated registry of the pull secret tests
        python3-grpc-tools  # compiles the CSI, plugin registration, device plugin and pod resources protos
        lintian        # the Debian package's test (test_deb.py)
        # the real control plane of the cluster tests (tests/e2e/controlplane.py): etcd, the WebSocket client,
        # and what scripts/build-kubernetes.sh needs to build kube-apiserver, kube-controller-manager and kubectl
        # (with dpkg-dev, in deb_pkgs)
        etcd-server python3-websocket golang-go rsync
        prometheus           # a real Prometheus scrapes the metrics endpoints (test_prometheus.py)
        dbus python3-dbus python3-gi  # the fake systemd of the systemd cgroup driver test (test_systemd_cgroup.py)
        # crun, built from Debian trixie's source by scripts/build-runtime.sh for the containerd 2.1 tier
        make gperf libyajl-dev libseccomp-dev libcap-dev
        # the VM tier (tests/vm): the Debian trixie guest built by scripts/build-vm-image.sh, booted under QEMU
        qemu-system-x86 mmdebstrap openssh-client
        bash-static    # bash in the conformance tier's agnhost stand-in, as upstream's (tests/conformance/images.py)
)
pkgs=("${run_pkgs[@]}")
[ "$deb" = 1 ] && pkgs+=("${deb_pkgs[@]}")
[ "$test" = 1 ] && pkgs+=("${test_pkgs[@]}")

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
if [ "$test" = 1 ]; then
        for svc in docker-registry prometheus; do
                if command -v systemctl >/dev/null && systemctl is-active --quiet "$svc" 2>/dev/null; then
                        systemctl stop "$svc" || true
                fi
        done
fi
