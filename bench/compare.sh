#!/bin/bash
# The whole comparison (bench/compare.py) unattended, on a fresh Debian 12 machine as root: the Debian packages
# (scripts/install-deps.sh --test, and python3-matplotlib for the charts), a release-like build of ckubelet and the
# CRI floor tool (build/, debugoptimized), the upstream kubelet and control plane of --go-version (v1.37.2 by
# default; scripts/build-kubernetes.sh, which compare.py calls: 10-20 min the first time, cached after), then the run. Arguments go to
# compare.py (--quick for a short development run; --help for the rest). Figures: bench/results/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --test
if ! /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-matplotlib >/dev/null
fi
[ -f build/build.ninja ] || meson setup build
ninja -C build
exec /usr/bin/python3 bench/compare.py "$@"
