#!/bin/sh
# PID 1 of the zverify test VM. Brings up just enough of a system for ZFS
# (udev: `zpool create` on a whole disk waits for its partition links), mounts
# the 9p shares offered by the host, then hands control to the command agent
# found in the control share. When the agent returns, flush and power off;
# qemu runs with -no-reboot, so any way out of here ends the VM.
PATH=/usr/sbin:/usr/bin:/sbin:/bin
export PATH

say() { echo "zvinit: $*" >/dev/console; }

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mountpoint -q /dev || mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /tmp
mount -o remount,rw /
hostname zvguest

# Coldplug only the disks: a full trigger autoloads drivers for every emulated
# device, which costs ~15 s under TCG and nothing here needs them.
/lib/systemd/systemd-udevd --daemon >/dev/null 2>&1
udevadm trigger --action=add --subsystem-match=block
udevadm settle --timeout=60

modprobe virtio_console
modprobe 9pnet_virtio
modprobe 9p
modprobe zfs || say "modprobe zfs failed"

# Each share's mount tag is zv<name>; it is mounted at /zv/<name>. Only the
# control share carries files both ways; the others are read-only for the
# session, so they are cached (uncached 9p makes a Python import take ~25 s).
for tagfile in /sys/bus/virtio/drivers/9pnet_virtio/*/mount_tag; do
    [ -e "$tagfile" ] || continue
    tag=$(tr -d '\000' <"$tagfile")
    dir=/zv/${tag#zv}
    opts=trans=virtio,version=9p2000.L,msize=262144
    [ "$tag" = zvctl ] || opts=$opts,ro,cache=loose
    mkdir -p "$dir"
    mount -t 9p -o "$opts" "$tag" "$dir" || say "mount $tag failed"
done

say "ready for agent ($(uname -r), zfs $(cat /sys/module/zfs/version 2>/dev/null))"
if [ -f /zv/ctl/agent.py ]; then
    python3 /zv/ctl/agent.py
    say "agent exited with status $?"
else
    say "no /zv/ctl/agent.py: nothing to do"
fi
sync
echo o >/proc/sysrq-trigger
sleep 30
