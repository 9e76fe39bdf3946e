"""Which filesystem holds a path, and its ZFS properties when it is ZFS.

Used to explain size differences: the same bytes take different space on
ext4, btrfs and an lz4 ZFS dataset.
"""

import os
from dataclasses import dataclass
from typing import NamedTuple


@dataclass(frozen=True)
class FsInfo:
    fstype: str
    source: str
    mountpoint: str
    zfs: dict[str, str] | None = None  # compression, compressratio, recordsize


UNKNOWN_FS = FsInfo("unknown", "unknown", "")  # entries that come from no live filesystem


def _unescape_mountinfo(field: str) -> str:
    # mountinfo writes space, tab, newline and backslash as octal escapes
    for code, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        field = field.replace(code, char)
    return field


def _mounts() -> list[tuple[str, str, str]]:
    """(mountpoint, fstype, source) for every mount, from /proc/self/mountinfo."""
    mounts = []
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as f:
            for line in f:
                left, _, right = line.partition(" - ")
                fields, tail = left.split(), right.split()
                if len(fields) >= 5 and len(tail) >= 2:
                    mounts.append((_unescape_mountinfo(fields[4]), tail[0], tail[1]))
    except OSError:
        pass
    return mounts


# statfs(2) f_type of the filesystems zverify users meet, for when /proc is missing.
_MAGIC = {
    0xEF53: "ext4", 0x58465342: "xfs", 0x9123683E: "btrfs", 0x2FC12FC1: "zfs",
    0x01021994: "tmpfs", 0x794C7630: "overlay", 0x6969: "nfs", 0xFF534D42: "cifs",
    0x65735546: "fuse", 0x4D44: "vfat", 0x2011BAB0: "exfat", 0x7366746E: "ntfs3",
    0xF2F52010: "f2fs", 0x9FA0: "proc", 0x62656572: "sysfs",
}  # fmt: skip


def _statfs_type(path: str) -> str:
    """The filesystem type by statfs(2) (no mount table without /proc): its name, or its
    magic number in hex; "unknown" if even that fails."""
    import ctypes  # only here: ~2 ms of start-up, and only chroots without /proc need it

    buf = ctypes.create_string_buffer(256)  # struct statfs is 120 bytes on x86-64
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.statfs(os.fsencode(path), buf) != 0:
        return "unknown"
    magic = ctypes.c_long.from_buffer(buf).value & 0xFFFFFFFF
    return _MAGIC.get(magic, f"0x{magic:x}")


def filesystem_of(path: str) -> FsInfo:
    real = os.path.realpath(path)
    mounts = _mounts()
    if not mounts:  # no /proc: the type at least, from the kernel
        return FsInfo(_statfs_type(real), "unknown", "")
    best = ("/", "unknown", "unknown")
    for mountpoint, fstype, source in mounts:
        inside = real == mountpoint or real.startswith(mountpoint.rstrip("/") + "/")
        if inside and len(mountpoint) >= len(best[0]):
            best = (mountpoint, fstype, source)
    mountpoint, fstype, source = best
    if fstype != "zfs":
        return FsInfo(fstype, source, mountpoint)
    from zverify.zfs import command  # only here: a tree on ZFS is the one that needs it

    return FsInfo(fstype, source, mountpoint, command.dataset_properties(source))


class Estimate(NamedTuple):
    """What a walk of a tree will meet, known before it starts (for the progress bar only:
    nothing is ever decided on it).  Not a frozen dataclass: every compare loads this module,
    and making one costs ~0.5 ms of start-up."""

    entries: int | None  # None: the filesystem does not count its inodes (btrfs)
    bytes: int


def estimate_tree(path: str) -> Estimate | None:
    """statvfs's used inodes and bytes, when path is the root of its filesystem (a pool's
    dataset, a mounted disk: the usual migration source); None for a directory inside one,
    whose share of the filesystem statvfs cannot tell."""
    try:
        if not os.path.ismount(path):
            return None
        st = os.statvfs(path)
    except OSError:
        return None
    used_bytes = (st.f_blocks - st.f_bfree) * st.f_frsize
    used_inodes = st.f_files - st.f_ffree
    return Estimate(used_inodes if st.f_files else None, used_bytes)


CAP_SYS_ADMIN = 21


def unreadable_xattr_namespaces() -> list[str]:
    """xattr namespaces the kernel hides from this process: listxattr() leaves trusted.*
    out without CAP_SYS_ADMIN in the initial user namespace, so a missing trusted.* xattr
    would pass unseen.  Root of a user namespace (rootless containers, `unshare -r`) has
    the capability in its own namespace only, and is just as blind."""
    seen = _has_capability(CAP_SYS_ADMIN) and _in_initial_user_namespace()
    return [] if seen else ["trusted.* xattrs"]


def _in_initial_user_namespace() -> bool:
    """The initial user namespace maps every uid onto itself: "0 0 4294967295"."""
    try:
        with open("/proc/self/uid_map", encoding="utf-8", errors="replace") as f:
            return f.read().split() == ["0", "0", "4294967295"]
    except FileNotFoundError:
        # No /proc (a chroot, an initramfs) or a kernel without user namespaces: the
        # capabilities came from capget(2), which a process there can only take at its word.
        return True
    except OSError:
        return False


def _has_capability(bit: int) -> bool:
    try:
        # ASCII, read as UTF-8: its codec is loaded already, ascii's would be one more import
        with open("/proc/self/status", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("CapEff:"):
                    return bool(int(line.split()[1], 16) >> bit & 1)
    except (OSError, ValueError, IndexError):
        pass
    return _capget_effective(bit)  # no /proc (a chroot, an initramfs): ask the kernel


def _capget_effective(bit: int) -> bool:
    """capget(2) for this process; False when it cannot tell (then the namespace is said to
    be unreadable: never claim something was compared that may not have been)."""
    import ctypes  # only without /proc: ctypes costs start-up time

    version_3 = 0x20080522  # _LINUX_CAPABILITY_VERSION_3: two 32-bit words per set
    header = (ctypes.c_uint32 * 2)(version_3, 0)  # {version, pid 0: this process}
    data = (ctypes.c_uint32 * 6)()  # 2 x {effective, permitted, inheritable}
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.capget(header, data) != 0:
            return False
    except (OSError, AttributeError):
        return False
    effective = data[0] | data[3] << 32
    return bool(effective >> bit & 1)
