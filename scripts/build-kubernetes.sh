#!/bin/bash
# Build the upstream Kubernetes the cluster tests run against, once per machine and version:
#   CKUBELET_K8S_VERSION=v1.37.2 (the default): from the tests' own Go module scripts/k8s (go.mod requires
#     k8s.io/kubernetes v1.37.2 with one replace line per staging module, go.sum pins every dependency), with the
#     Go first on PATH (>= 1.26), CGO_ENABLED=0 go build -trimpath:
#       <cache>/v1.37.2/bin/{kube-apiserver,kube-controller-manager,kube-scheduler,kubectl,kubelet,kubeadm,
#                            kube-proxy,etcd}
#     etcd 3.7.0 (the version kubernetes pins) from the same module (scripts/k8s/etcd). With
#     CKUBELET_K8S_E2E_NODE=1 also <cache>/v1.37.2/bin/e2e_node.test (go test -c k8s.io/kubernetes/test/e2e_node)
#     and the test images' programs agnhost and nonewprivs (k8s.io/kubernetes/test/images/...), for the node
#     conformance tier (tests/conformance.sh).
#     The module and build caches live in $CKUBELET_GO_CACHE (default /var/cache/ckubelet-go: mod/, build/), so a
#     rebuild after a cache wipe of bin/ is cheap.
#   CKUBELET_K8S_VERSION=v1.20.2: the old control plane and kubelet from Debian's source package
#     (scripts/build-kubernetes-1.20.sh, <cache>/bin), kept for bench/'s comparison with the v1.20.2 kubelet and
#     for running the cluster tests against v1.20 on demand.
# <cache> is $CKUBELET_K8S_CACHE, default /var/cache/ckubelet-k8s. Prints the bin directory on its last line.
# Idempotent; a second run waits on the version's lock (<cache>/<version>/.lock) while a build runs.
set -euo pipefail
version=${CKUBELET_K8S_VERSION:-v1.37.2}
here=$(cd "$(dirname "$0")" && pwd)
case "$version" in
v1.20.2) exec bash "$here/build-kubernetes-1.20.sh" ;;
v1.37.2) ;;
*)
        echo "build-kubernetes.sh: CKUBELET_K8S_VERSION=$version: only v1.37.2 (scripts/k8s) and v1.20.2 are known" >&2
        exit 2
        ;;
esac
cache=${CKUBELET_K8S_CACHE:-/var/cache/ckubelet-k8s}/$version
gocache=${CKUBELET_GO_CACHE:-/var/cache/ckubelet-go}
bins=(kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet kubeadm kube-proxy etcd)
[ "${CKUBELET_K8S_E2E_NODE:-0}" = 1 ] && bins+=(e2e_node.test agnhost nonewprivs)
mkdir -p "$cache" "$gocache"
exec 9>"$cache/.lock"
flock 9
have_all() { for b in "${bins[@]}"; do [ -x "$cache/bin/$b" ] || return 1; done; }
if have_all; then
        echo "$cache/bin"
        exit 0
fi

go=$(command -v go || true)
[ -n "$go" ] || go=/usr/local/go/bin/go
if [ ! -x "$go" ]; then
        echo "build-kubernetes.sh: no go on PATH (Go 1.26 or newer builds k8s.io/kubernetes $version)" >&2
        exit 1
fi
minor=${version#v1.}
minor=${minor%%.*}
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$version -X k8s.io/component-base/version.gitMajor=1"
ldflags+=" -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
export GOMODCACHE="$gocache/mod" GOCACHE="$gocache/build" GOFLAGS="-modcacherw -mod=readonly" CGO_ENABLED=0
export GOTOOLCHAIN=${GOTOOLCHAIN:-auto} HOME=${HOME:-/tmp}
log="$cache/build.log"
: >"$log"
rm -rf "$cache/bin.tmp"
mkdir -p "$cache/bin.tmp"
cd "$here/k8s"
echo "build-kubernetes.sh: building ${bins[*]} $version in $cache with $("$go" version | cut -d' ' -f3)" \
    "(about 8 min on 2 cores the first time; log: $log)" >&2
start=$(date +%s)
for b in "${bins[@]}"; do
        [ -x "$cache/bin/$b" ] && continue
        case "$b" in
        etcd) cmd=("$go" build -trimpath -o "$cache/bin.tmp/$b" ./etcd) ;;
        e2e_node.test) cmd=("$go" test -c -trimpath -ldflags "$ldflags" -o "$cache/bin.tmp/$b" k8s.io/kubernetes/test/e2e_node) ;;
        agnhost | nonewprivs) cmd=("$go" build -trimpath -ldflags "$ldflags" -o "$cache/bin.tmp/$b" "k8s.io/kubernetes/test/images/$b") ;;
        *) cmd=("$go" build -trimpath -ldflags "$ldflags" -o "$cache/bin.tmp/$b" "k8s.io/kubernetes/cmd/$b") ;;
        esac
        t0=$(date +%s)
        if ! "${cmd[@]}" >>"$log" 2>&1; then
                tail -n 40 "$log" >&2
                echo "build-kubernetes.sh: building $b failed (log: $log)" >&2
                exit 1
        fi
        echo "build-kubernetes.sh: $b in $(($(date +%s) - t0)) s" | tee -a "$log" >&2
done
# each new binary renamed into bin/ (atomic per file: a running test keeps using the ones already there)
mkdir -p "$cache/bin"
for b in "$cache/bin.tmp"/*; do
        [ -e "$b" ] && mv -f "$b" "$cache/bin/"
done
rmdir "$cache/bin.tmp"
echo "build-kubernetes.sh: done in $(($(date +%s) - start)) s" | tee -a "$log" >&2
echo "$cache/bin"
