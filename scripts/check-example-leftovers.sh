#!/bin/bash
# What a stopped scripts/run-example.sh may have left behind, one line per kind with a count; exit status 1 when
# anything is left. Run it after the example stopped (Ctrl-C):  bash scripts/check-example-leftovers.sh [DIR]
set -uo pipefail
shopt -s lastpipe  # kind() runs in this shell at the end of each pipeline
dir=$(realpath -m "${1:-${CKUBELET_EXAMPLE_DIR:-/var/tmp/ckubelet-example}}")
cgroup_root=/ckubelet-example
left=0

kind() { # name, then the leftovers one a line on stdin
        local items n
        items=$(grep -v '^$')
        n=$(printf '%s' "$items" | grep -c . || true)
        printf '%-52s %s\n' "$1:" "$n"
        [ "$n" -gt 0 ] && printf '%s\n' "$items" | head -n 3 | sed 's/^/    /'
        [ "$n" -gt 3 ] && echo "    ..."
        [ "$n" -eq 0 ] || left=1
}

{ pgrep -af "containerd --config $dir/" ; pgrep -af "containerd-shim-runc-v2 .*-address $dir/"
  pgrep -af "ckubelet --config $dir/"; pgrep -af "tail .*$dir/kubelet.log"; } | kind "processes (containerd, shims, ckubelet, tail)"
ls -d "$dir"/state/io.containerd.runtime.v2.task/k8s.io/* 2>/dev/null | kind "containerd tasks (running containers, sandboxes)"
ls -d "$dir"/root/io.containerd.grpc.v1.cri/sandboxes/* 2>/dev/null | kind "CRI pod sandboxes"
ls -d "$dir"/root/io.containerd.grpc.v1.cri/containers/* 2>/dev/null | kind "CRI containers"
# the example's pods have addresses in 10.150.0.0/16 (containerd.sh start DIR 50); other containerd instances
# (the tests') have other subnets and are not counted
for ns in $(ip netns list 2>/dev/null | awk '{ print $1 }'); do
        ip netns exec "$ns" ip -o -4 addr show 2>/dev/null | grep -q ' 10\.150\.' && echo "/run/netns/$ns"
done | kind "network namespaces with a 10.150.0.0/16 address"
ip -o link show 2>/dev/null | awk -F': ' '$2 == "ck50" || / master ck50 / { print $2 }' | kind "links (bridge ck50 and its ports)"
{ iptables-save -t nat 2>/dev/null | grep -E '10\.150\.|ckubelet50' || true; } | kind "iptables nat rules (10.150.0.0/16, ckubelet50)"
awk -v d="$dir/" 'index($2, d) == 1 { print $2 }' /proc/mounts | kind "mounts under $dir"
awk '$3 == "cgroup" || $3 == "cgroup2" { print $2 }' /proc/mounts | sort -u | while read -r h; do
        [ -d "$h$cgroup_root" ] && find "$h$cgroup_root" -type d
        [ -d "$h/kubepods" ] && echo "$h/kubepods"
done | kind "cgroups ($cgroup_root, /kubepods)"
for l in /var/log/containers/*.log; do
        [ -L "$l" ] && [[ "$(readlink "$l")" == "$dir/"* ]] && echo "$l"
done | kind "/var/log/containers links into $dir"
exit $left
