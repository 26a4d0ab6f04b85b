#!/bin/bash
# Regenerates src/apis/k8sproto_schema.inc: the protobuf schema of a v1 Pod (and every message it reaches) from
# k8s.io/api's generated.proto of the version scripts/k8s/go.mod pins, for the pods API's encoder
# (src/apis/k8sproto.c). Needs protoc-c, python3 with google.protobuf, and the module cache of
# scripts/build-kubernetes.sh.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mod=${CKUBELET_GO_CACHE:-/var/cache/ckubelet-go}/mod
version=$(awk '$1 == "k8s.io/api" && $2 ~ /^v/ {print $2; exit}' "$here/k8s/go.mod")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/k8s.io"
ln -s "$mod/k8s.io/api@$version" "$tmp/k8s.io/api"
ln -s "$mod/k8s.io/apimachinery@$version" "$tmp/k8s.io/apimachinery"
protoc-c -I"$tmp" --include_imports --descriptor_set_out="$tmp/set.pb" k8s.io/api/core/v1/generated.proto 2>/dev/null
out="$here/../src/apis/k8sproto_schema.inc"
/usr/bin/python3 "$here/k8s/protoschema/gen.py" "$tmp/set.pb" "$version" \
        "k8s.io.api.core.v1=$mod/k8s.io/api@$version/core/v1/types.go" \
        "k8s.io.apimachinery.pkg.apis.meta.v1=$mod/k8s.io/apimachinery@$version/pkg/apis/meta/v1/types.go" \
        -- k8s.io.api.core.v1.Pod >"$out.tmp"
mv "$out.tmp" "$out"
echo "gen-k8s-proto-schema.sh: $(grep -c '/\* [0-9]*: ' "$out") messages of k8s.io/api $version in $out" >&2
