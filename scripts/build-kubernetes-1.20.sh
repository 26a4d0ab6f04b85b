#!/bin/bash
# Build the old v1.20.2 control plane and upstream kubelet from Debian's `kubernetes` source package (vendored)
# with Debian's golang-go, once per machine: kept for bench/ (bench/compare.py, bench/scale.py compare against the
# v1.20.2 kubelet) and run through `CKUBELET_K8S_VERSION=v1.20.2 scripts/build-kubernetes.sh`. The result is cached
# outside the checkout (default /var/cache/ckubelet-k8s, or $CKUBELET_K8S_CACHE) and reused by later runs:
#   <cache>/bin/{kube-apiserver,kube-controller-manager,kubectl,kubelet}
# Prints the bin directory on its last line. Idempotent; safe to run while another run waits on the lock.
set -euo pipefail
cache=${CKUBELET_K8S_CACHE:-/var/cache/ckubelet-k8s}
bins=(kube-apiserver kube-controller-manager kubectl kubelet)
mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9
have_all() { for b in "${bins[@]}"; do [ -x "$cache/bin/$b" ] || return 1; done; }
if have_all; then echo "$cache/bin"; exit 0; fi

export DEBIAN_FRONTEND=noninteractive
need=()
for p in golang-go dpkg-dev rsync etcd-server; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
if ! grep -rqsE '^(Types: deb-src|deb-src )' /etc/apt/sources.list /etc/apt/sources.list.d/; then
        cat >/etc/apt/sources.list.d/ckubelet-deb-src.sources <<'SRC'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
        apt-get update -qq
fi
if [ ${#need[@]} -gt 0 ]; then
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

cd "$cache"
src=$(ls -d kubernetes-*/ 2>/dev/null | head -n1 || true)
if [ -z "$src" ] || [ ! -f "$src/Makefile" ]; then
        rm -rf kubernetes-* kubernetes_*
        apt-get source -qq kubernetes >/dev/null 2>&1
        src=$(ls -d kubernetes-*/ | head -n1)
fi
cd "$src"
mkdir -p .go/src/k8s.io
[ -L .go/src/k8s.io/kubernetes ] || ln -s ../../.. .go/src/k8s.io/kubernetes
echo "build-kubernetes.sh: building ${bins[*]} in $cache/$src (10-20 min on 2 cores)" >&2
mkdir -p "$cache/home"  # HOME of the build: Go keeps its settings there (it was /tmp, which kept a .config/go)
env GOPATH="$PWD/.go" CGO_ENABLED=0 HOME="$cache/home" \
    KUBE_GIT_VERSION=v1.20.2 KUBE_GIT_TREE_STATE=clean KUBE_GIT_MAJOR=1 KUBE_GIT_MINOR=20 \
    make WHAT="$(printf 'cmd/%s ' "${bins[@]}")" >"$cache/build.log" 2>&1 || {
        tail -n 40 "$cache/build.log" >&2
        echo "build-kubernetes.sh: make failed (log: $cache/build.log)" >&2
        exit 1
}
mkdir -p "$cache/bin.tmp"
for b in "${bins[@]}"; do cp "_output/bin/$b" "$cache/bin.tmp/$b"; done
rm -rf "$cache/bin"
mv "$cache/bin.tmp" "$cache/bin"
echo "$cache/bin"
