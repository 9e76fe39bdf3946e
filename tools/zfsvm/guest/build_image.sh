#!/bin/bash
# Build the zverify test VM image: a Debian rootfs with OpenZFS (zfs-dkms) as a
# raw ext4 image plus the kernel and initramfs to boot it with qemu -kernel.
#
# Usage: build_image.sh WORKDIR OUTDIR
# Environment (set by tests/zfsvm/image.py, which also hashes this file):
#   ZV_SUITE ZV_MIRROR ZV_BASE_PACKAGES ZV_KERNEL_PACKAGES ZV_ZFS_PACKAGES ZV_INIT
#   ZV_ZFS_SUITE: the suite ZV_ZFS_PACKAGES come from (e.g. bookworm-backports), or empty
# WORKDIR holds the debootstrap tree (deleted at the end); OUTDIR receives
# rootfs.img, vmlinuz, initrd.img and image.json. Needs root.
set -euo pipefail

WORK=$1
OUT=$2
ROOT=$WORK/rootfs
export DEBIAN_FRONTEND=noninteractive DEBCONF_NONINTERACTIVE_SEEN=true LC_ALL=C.UTF-8
APT="apt-get -y -q -o Acquire::Retries=3 -o APT::Install-Recommends=false \
 -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold"
T0=$(date +%s)

log() { echo "[zvbuild $(( $(date +%s) - T0 ))s] $*" >&2; }

# Run one named step and log how long it took: the build is long and CI logs
# are the only way to see where the time went.
step() {
    local name=$1; shift
    local start; start=$(date +%s)
    log "start: $name"
    "$@"
    log "done:  $name ($(( $(date +%s) - start ))s)"
}

in_root() { chroot "$ROOT" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
    DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8 HOME=/root "$@"; }

unmount_all() {
    for m in dev/pts dev proc sys run; do
        mountpoint -q "$ROOT/$m" 2>/dev/null && umount -l "$ROOT/$m" || true
    done
}
trap unmount_all EXIT

bootstrap() {
    rm -rf "$ROOT"
    # shellcheck disable=SC2086
    debootstrap --variant=minbase --components=main,contrib \
        --include="${ZV_BASE_PACKAGES// /,}" "$ZV_SUITE" "$ROOT" "$ZV_MIRROR" >"$WORK/debootstrap.log" 2>&1 \
        || { tail -n 30 "$WORK/debootstrap.log" >&2; return 1; }
}

prepare_chroot() {
    # Package scripts must not start daemons inside the build chroot.
    printf '#!/bin/sh\nexit 101\n' >"$ROOT/usr/sbin/policy-rc.d"
    chmod 755 "$ROOT/usr/sbin/policy-rc.d"
    printf 'deb %s %s main contrib\n' "$ZV_MIRROR" "$ZV_SUITE" >"$ROOT/etc/apt/sources.list"
    if [ -n "${ZV_ZFS_SUITE:-}" ]; then
        printf 'deb %s %s main contrib\n' "$ZV_MIRROR" "$ZV_ZFS_SUITE" >>"$ROOT/etc/apt/sources.list"
    fi
    cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
    mount -t proc proc "$ROOT/proc"
    mount -t sysfs sys "$ROOT/sys"
    mount --bind /dev "$ROOT/dev"
    mount --bind /dev/pts "$ROOT/dev/pts"
    mount -t tmpfs tmpfs "$ROOT/run"
    in_root $APT update
}

install_kernel_and_tools() {
    # shellcheck disable=SC2086
    in_root $APT install $ZV_KERNEL_PACKAGES
}

guest_kernel() { ls "$ROOT/lib/modules" | sort -V | tail -n 1; }

# zfs-dkms builds in its postinst only for the kernel it thinks is running
# (the host's), so build for the guest kernel explicitly when it is missing.
# From another suite (-t), the userland the kernel step put in is upgraded with the module.
install_zfs_module() {
    # shellcheck disable=SC2086
    in_root $APT install ${ZV_ZFS_SUITE:+-t "$ZV_ZFS_SUITE"} $ZV_ZFS_PACKAGES
    check_zfs_versions
    local kver zver
    kver=$(guest_kernel)
    zver=$(in_root dpkg-query -W -f '${Version}' zfs-dkms | sed 's/-.*//')
    if ! find "$ROOT/lib/modules/$kver" -name 'zfs.ko*' | grep -q .; then
        log "zfs.ko missing for $kver: running dkms install zfs/$zver"
        in_root dkms install "zfs/$zver" -k "$kver"
    fi
    find "$ROOT/lib/modules/$kver" -name 'zfs.ko*' | grep -q . \
        || { log "ERROR: no zfs.ko for guest kernel $kver after dkms"; return 1; }
    in_root depmod "$kver"
}

# Module and userland must be one release: a mismatch would answer as neither.
check_zfs_versions() {
    local dkms utils
    dkms=$(in_root dpkg-query -W -f '${Version}' zfs-dkms)
    utils=$(in_root dpkg-query -W -f '${Version}' zfsutils-linux)
    [ "$dkms" = "$utils" ] || { log "ERROR: zfs-dkms $dkms but zfsutils-linux $utils"; return 1; }
}

configure_guest() {
    local kver; kver=$(guest_kernel)
    # Only what mounting the root needs: the initramfs is unpacked under TCG at
    # every boot, and MODULES=most makes it 35 MB. ext4 asks for crc32c by name.
    printf '%s\n' virtio_pci virtio_blk ext4 crc32c_generic >>"$ROOT/etc/initramfs-tools/modules"
    sed -i 's/^MODULES=.*/MODULES=list/' "$ROOT/etc/initramfs-tools/initramfs.conf"
    in_root update-initramfs -u -k "$kver" >/dev/null
    in_root lsinitramfs "/boot/initrd.img-$kver" >"$WORK/initrd.list"
    for m in virtio_pci virtio_blk ext4 crc32c_generic; do
        grep -q "/$m.ko" "$WORK/initrd.list" || { log "ERROR: $m missing from the initramfs"; return 1; }
    done
    install -m 755 "$ZV_INIT" "$ROOT/sbin/zvinit"
    echo zvguest >"$ROOT/etc/hostname"
    printf '127.0.0.1 localhost zvguest\n' >"$ROOT/etc/hosts"
    : >"$ROOT/etc/fstab"
    in_root zgenhostid -f 0x7a766d31
}

# Drop what the guest never needs at run time, so the image and its mkfs stay small.
trim_rootfs() {
    in_root apt-get clean
    rm -rf "$ROOT"/var/lib/apt/lists/* "$ROOT"/usr/share/doc/* "$ROOT"/usr/share/man/* \
        "$ROOT"/usr/share/info/* "$ROOT"/var/lib/dkms/zfs/*/build "$ROOT/etc/resolv.conf"
    if [ -d "$ROOT/usr/share/locale" ]; then
        find "$ROOT/usr/share/locale" -mindepth 1 -maxdepth 1 ! -name 'C.*' -exec rm -rf {} +
    fi
}

make_image() {
    local kver mb
    kver=$(guest_kernel)
    unmount_all
    mkdir -p "$OUT"
    cp "$ROOT/boot/vmlinuz-$kver" "$OUT/vmlinuz"
    cp "$ROOT/boot/initrd.img-$kver" "$OUT/initrd.img"
    mb=$(du -sm "$ROOT" | cut -f1)
    # Headroom for what tests write to / (the image itself is attached snapshot=on).
    mkfs.ext4 -q -F -L zvroot -E root_owner=0:0 -d "$ROOT" "$OUT/rootfs.img" "$(( mb * 5 / 4 + 768 ))M"
    write_manifest "$kver"
}

write_manifest() {
    local kver=$1 zver
    zver=$(chroot "$ROOT" dpkg-query -W -f '${Version}' zfsutils-linux)
    python3 - "$OUT/image.json" "$kver" "$zver" "$ZV_SUITE" "$(( $(date +%s) - T0 ))" <<'PY'
import json, sys
out, kver, zver, suite, secs = sys.argv[1:]
json.dump({"kernel": kver, "zfs": zver, "suite": suite, "build_seconds": int(secs)},
          open(out, "w"), indent=1)
PY
}

step "debootstrap $ZV_SUITE" bootstrap
step "prepare chroot" prepare_chroot
step "install kernel, headers, toolchain, zfsutils" install_kernel_and_tools
step "install zfs-dkms and build zfs.ko" install_zfs_module
step "guest configuration and initramfs" configure_guest
step "trim rootfs" trim_rootfs
step "make ext4 image" make_image
rm -rf "$ROOT"
log "image ready in $OUT"
