#!/bin/bash
# The second runtime of the tests, once per machine: containerd 2.1.9 as Debian sid packages it (its containerd,
# containerd-shim-runc-v2 and ctr need only glibc >= 2.34 and run on Debian 12 as they are) and crun built from
# Debian trixie's source package (1.21; sid's crun and runc binaries need glibc 2.38). Debian 12's own apt sources
# are not touched: sid and trixie are read through a private apt configuration under the cache, used only to
# download these two. Cached in $CKUBELET_RUNTIME_CACHE (default /var/cache/ckubelet-runtime):
#   <cache>/containerd-2.1.9/bin/{containerd,containerd-shim-runc-v2,ctr}
#   <cache>/crun-1.21/bin/crun
# Idempotent; a second run waits on <cache>/.lock while a build runs. Prints the two bin directories, one a line.
# Needs (scripts/install-deps.sh --test): gcc, make, pkg-config, gperf, libyajl-dev, libseccomp-dev, libcap-dev,
# libsystemd-dev, python3.
set -euo pipefail
cache=${CKUBELET_RUNTIME_CACHE:-/var/cache/ckubelet-runtime}
containerd_version=2.1.9+ds1-5
crun_version=1.21-1
cbin=$cache/containerd-2.1.9/bin
rbin=$cache/crun-1.21/bin
mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9
if [ -x "$cbin/containerd" ] && [ -x "$cbin/containerd-shim-runc-v2" ] && [ -x "$cbin/ctr" ] && [ -x "$rbin/crun" ]; then
        echo "$cbin"
        echo "$rbin"
        exit 0
fi

apt=$cache/apt
mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/sources.list.d" "$apt/preferences.d"
cat >"$apt/sources.list" <<EOF
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian sid main
deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main
EOF
opts=(-q -o "Dir::Etc::sourcelist=$apt/sources.list" -o "Dir::Etc::sourceparts=$apt/sources.list.d"
        -o "Dir::Etc::preferencesparts=$apt/preferences.d" -o "Dir::State::Lists=$apt/lists"
        -o "Dir::Cache=$apt/cache" -o "Dir::State::status=/dev/null" -o "APT::Sandbox::User=root")
echo "build-runtime.sh: reading sid and trixie's package lists (private apt configuration in $apt)" >&2
apt-get "${opts[@]}" update >"$apt/update.log" 2>&1 || { tail -n 20 "$apt/update.log" >&2; exit 1; }

work=$(mktemp -d "$cache/work-XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"

if ! [ -x "$cbin/containerd" ]; then
        echo "build-runtime.sh: containerd $containerd_version from sid" >&2
        apt-get "${opts[@]}" download "containerd=$containerd_version" >/dev/null
        dpkg-deb -x containerd_*.deb root
        rm -rf "$cbin.tmp"
        mkdir -p "$cbin.tmp"
        cp root/usr/bin/containerd root/usr/bin/containerd-shim-runc-v2 root/usr/bin/ctr "$cbin.tmp/"
        "$cbin.tmp/containerd" --version >&2
        rm -rf "$cbin"
        mv "$cbin.tmp" "$cbin"
fi

if ! [ -x "$rbin/crun" ]; then
        echo "build-runtime.sh: crun $crun_version from trixie's source (./configure --enable-shared=no; make)" >&2
        # the mirror serves the orig tarball only (not the .dsc): fetched by its pool path, checked against
        # the SHA-256 of trixie's Sources index
        orig=crun_${crun_version%-*}.orig.tar.gz
        sum=$(apt-cache "${opts[@]}" showsrc crun | awk -v v="$crun_version" -v f="$orig" '
                /^$/ {r = 0} /^Version: / {r = ($2 == v)} /^Checksums-Sha256:/ {s = 1; next} /^[^ ]/ {s = 0}
                r && s && $3 == f {print $1; exit}')
        [ -n "$sum" ] || { echo "build-runtime.sh: no SHA-256 for $orig in trixie's Sources" >&2; exit 1; }
        curl -fsS -o "$orig" "http://deb.debian.org/debian/pool/main/c/crun/$orig"
        echo "$sum  $orig" | sha256sum -c --quiet - >&2
        tar xf "$orig"
        cd crun-*/
        start=$(date +%s)
        if ! { ./configure --enable-shared=no --disable-criu >../configure.log 2>&1 &&
                make -j"$(nproc)" >../make.log 2>&1; }; then
                tail -n 30 ../configure.log ../make.log >&2
                echo "build-runtime.sh: building crun failed" >&2
                exit 1
        fi
        rm -rf "$rbin.tmp"
        mkdir -p "$rbin.tmp"
        cp crun "$rbin.tmp/crun"
        "$rbin.tmp/crun" --version | head -n 1 >&2
        rm -rf "$rbin"
        mv "$rbin.tmp" "$rbin"
        echo "build-runtime.sh: crun built in $(($(date +%s) - start)) s" >&2
fi
echo "$cbin"
echo "$rbin"
