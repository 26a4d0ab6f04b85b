#!/bin/bash
# Build (once) the Debian trixie guest of the VM tier (tests/e2e/test_vm.py): systemd as PID 1, pure cgroup v2,
# containerd with SystemdCgroup = true, sshd with a key of its own. Cached outside the checkout in
#   ${CKUBELET_VM_CACHE:-/var/cache/ckubelet-vm}/<hash of this script>/
#     rootfs.img   a 4 GB sparse ext4 image (the guest's /dev/vda; booted with -snapshot so it stays clean)
#     vmlinuz      the guest's kernel
#     initrd.img   its initramfs, unpacked and repacked uncompressed (decompressing it under TCG is slow)
#     id_ed25519   the key root logs in with over ssh
# The hash covers this whole script, so a change of the package list (or of anything else here) builds a new
# image. A lock serializes concurrent builds. Prints KEY=path lines (ROOTFS, KERNEL, INITRD, SSH_KEY, DIR).
# Needs root, mmdebstrap, e2fsprogs (mke2fs -d), ssh-keygen and network access to
# a Debian mirror (CKUBELET_VM_MIRROR, default http://deb.debian.org/debian). Run it under nice: it is CPU-bound.
set -euo pipefail

PACKAGES=(systemd systemd-sysv udev dbus kmod iproute2 iptables containerd runc containernetworking-plugins
          busybox-static openssh-server linux-image-amd64 initramfs-tools procps
          # ckubelet's own package's dependencies (the guest has no package lists: dpkg -i installs it)
          libcurl4t64 libevent-2.1-7t64 libevent-core-2.1-7t64 libevent-openssl-2.1-7t64 libhttp-parser2.9 libjansson4
          libnghttp2-14 libprotobuf-c1 libssl3t64 libsystemd0 libyaml-0-2 zlib1g)
SUITE=trixie
MIRROR=${CKUBELET_VM_MIRROR:-http://deb.debian.org/debian}

self=$(readlink -f "$0")
hash=$( { cat "$self"; echo "$SUITE ${PACKAGES[*]}"; } | sha256sum | cut -c1-16)
cache=${CKUBELET_VM_CACHE:-/var/cache/ckubelet-vm}
dir=$cache/$hash
mkdir -p "$cache"

print_paths() {
        echo "DIR=$dir"
        echo "ROOTFS=$dir/rootfs.img"
        echo "KERNEL=$dir/vmlinuz"
        echo "INITRD=$dir/initrd.img"
        echo "SSH_KEY=$dir/id_ed25519"
}

exec 9>"$cache/.lock"
flock 9
if [ -f "$dir/done" ]; then
        print_paths
        exit 0
fi

for tool in mmdebstrap mke2fs ssh-keygen; do
        command -v "$tool" >/dev/null || {
                echo "build-vm-image.sh: $tool missing (apt-get install mmdebstrap e2fsprogs openssh-client)" >&2
                exit 1
        }
done

t0=$(date +%s)
rm -rf "$dir"
mkdir -p "$dir"
work=$(mktemp -d "$cache/build.XXXXXX")
trap 'rm -rf "$work"' EXIT
root=$work/root

ssh-keygen -q -t ed25519 -N '' -C ckubelet-vm -f "$dir/id_ed25519"

include=$(IFS=,; echo "${PACKAGES[*]}")
mmdebstrap --mode=root --variant=minbase --include="$include" \
        --customize-hook='echo ckvm > "$1/etc/hostname"' \
        --customize-hook='echo "127.0.1.1 ckvm" >> "$1/etc/hosts"' \
        --customize-hook='printf "/dev/vda / ext4 rw,errors=remount-ro 0 1\n" > "$1/etc/fstab"' \
        "$SUITE" "$root" "$MIRROR" >&2

# root logs in with the key only; the first boot does not wait for a console
install -d -m 700 "$root/root/.ssh"
install -m 600 "$dir/id_ed25519.pub" "$root/root/.ssh/authorized_keys"
cat > "$root/etc/ssh/sshd_config.d/ckvm.conf" <<'EOF'
PermitRootLogin prohibit-password
PasswordAuthentication no
UseDNS no
EOF
# host keys are generated now, not at every boot of the snapshot
chroot "$root" ssh-keygen -A >/dev/null
# the user-mode network: DHCP on the one interface, through systemd-networkd
mkdir -p "$root/etc/systemd/network"
cat > "$root/etc/systemd/network/10-eth.network" <<'EOF'
[Match]
Name=eth0 en*

[Network]
DHCP=ipv4
EOF
chroot "$root" systemctl enable systemd-networkd ssh containerd >/dev/null 2>&1
chroot "$root" systemctl mask systemd-networkd-wait-online apt-daily.timer apt-daily-upgrade.timer \
        dpkg-db-backup.timer e2scrub_all.timer fstrim.timer >/dev/null 2>&1 || true
# containerd: the systemd cgroup driver and the sandbox image the tests import (no registry is reachable)
mkdir -p "$root/etc/containerd"
cat > "$root/etc/containerd/config.toml" <<'EOF'
version = 2
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.k8s.io/pause:3.9"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
  SystemdCgroup = true
EOF
# the 9p share with the host's files, and its modules loaded early
printf '9p\n9pnet\n9pnet_virtio\n' > "$root/etc/modules-load.d/9p.conf"
mkdir -p "$root/mnt/host"
echo "host /mnt/host 9p trans=virtio,version=9p2000.L,msize=262144,nofail,x-systemd.device-timeout=10s 0 0" \
        >> "$root/etc/fstab"

kernel=$(ls "$root"/boot/vmlinuz-* | sort -V | tail -1)
initrd=$(ls "$root"/boot/initrd.img-* | sort -V | tail -1)
cp "$kernel" "$dir/vmlinuz"
# unpacked and repacked with the guest's own tools (its initramfs-tools know its compression)
chroot "$root" unmkinitramfs "/boot/$(basename "$initrd")" /tmp/initrd
pack() { chroot "$root" sh -c "cd /tmp/initrd/$1 && find . | sort | cpio -o -H newc --quiet"; }
{
        if [ -d "$root/tmp/initrd/main" ]; then
                for part in "$root"/tmp/initrd/early*; do
                        [ -d "$part" ] && pack "$(basename "$part")"
                done
                pack main
        else
                pack .
        fi
} > "$dir/initrd.img"
rm -rf "$root/tmp/initrd"

rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
truncate -s 4G "$dir/rootfs.img"
mke2fs -q -t ext4 -L ckvm -d "$root" "$dir/rootfs.img"
touch "$dir/done"
# the images of older versions of this script
for old in "$cache"/*/; do
        [ "${old%/}" = "$dir" ] || rm -rf "${old%/}"
done
echo "build-vm-image.sh: built $dir in $(( $(date +%s) - t0 ))s" >&2
print_paths
