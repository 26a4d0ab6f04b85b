#!/bin/bash
# Build the test/example images from busybox-static, without docker or a registry:
#   OUTDIR/images.tar      OCI image layout tar for `ctr -n k8s.io images import`
#   OUTDIR/images.tar.dir  the same as an OCI layout directory (for `skopeo copy oci:DIR:REF ...`)
# Images: docker.io/library/busybox:1.36, docker.io/library/busybox:latest, registry.k8s.io/pause:3.9
# (busybox running `sleep infinity`, used as the sandbox image).
set -euo pipefail
out=${1:?usage: build-images.sh OUTDIR}
mkdir -p "$out"
[ -x /bin/busybox ] || { echo "build-images.sh: /bin/busybox missing (apt-get install busybox-static)" >&2; exit 1; }
if [ -f "$out/images.tar" ] && [ "$out/images.tar" -nt /bin/busybox ] && [ "$out/images.tar" -nt "$0" ] &&
   [ "$out/images.tar" -nt "$(dirname "$0")/build-oci-images.py" ]; then
        exit 0
fi
rm -rf "$out/images.tar" "$out/images.tar.dir"
/usr/bin/python3 "$(dirname "$0")/build-oci-images.py" "$out/images.tar" \
        docker.io/library/busybox:1.36 docker.io/library/busybox:latest registry.k8s.io/pause:3.9=sleep,infinity
