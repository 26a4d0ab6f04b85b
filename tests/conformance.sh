#!/bin/bash
# The node conformance tier: upstream's node e2e suite v1.37.2 (NodeConformance minus Serial, Disruptive, Flaky,
# Slow and the specs of tests/conformance/skip.txt) against ckubelet and the upstream kubelet v1.37.2, on a
# private containerd and a v1.37.2 control plane, both counts side by side (docs/testing.md).
#   tests/conformance.sh --ci          the fixed CI subset (tests/conformance/ci-specs.txt) on ckubelet; exit 1 if
#                                      ckubelet fails one (add --kubelet both for the upstream kubelet's column)
#   tests/conformance.sh               the whole tier on both kubelets
#   options: --kubelet ckubelet|upstream|both --shards N --focus REGEX --out DIR --list
# Builds what is missing: build/ (meson, ninja; CKUBELET_BUILD overrides), the v1.37.2 binaries and e2e_node.test
# (scripts/build-kubernetes.sh with CKUBELET_K8S_E2E_NODE=1, cached), the stand-in images (cached in
# /var/tmp/ckubelet-conformance-images). Runs containerd and kubelets: root, and the e2e lock, so run it as
#   flock /tmp/ckubelet-e2e.lock tests/conformance.sh --ci
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${CKUBELET_BUILD:-$repo/build}
if [ ! -x "$build/ckubelet" ] || [ ! -x "$build/tools/ckubelet-crictl" ]; then
        [ -d "$build" ] || meson setup "$build" "$repo" -Dtests=true
        ninja -C "$build"
fi
exec env CKUBELET_BUILD="$build" python3 "$repo/tests/conformance/run.py" "$@"
