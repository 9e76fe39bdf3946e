"""One name for a filesystem on every node: the st_dev of hard-linked entries, made global.

Hardlink groups and du's count-once rule key inodes by (st_dev, st_ino).  On one machine
st_dev names a filesystem, but the same network filesystem (NFS, Lustre, GPFS) mounted on
two nodes may get two different anonymous device numbers.  So a rank replaces st_dev by a
number derived from what the mount table says of that device: its type, its source and the
first place it is mounted, which the nodes of a cluster share.  A device the mount table
does not list (a btrfs subvolume below its mount, say) keeps a number derived from the host
and st_dev: local to that node, as the device itself is.
"""

import hashlib
import os
import socket
from functools import cache

from zverify.entry import Entry, Kind

MOUNTINFO = "/proc/self/mountinfo"
_DEV = Entry.__match_args__.index("dev")


def globalized(entry: Entry) -> Entry:
    """entry with a node-independent st_dev when it is hard-linked (only those are keyed)."""
    if entry.nlink <= 1 or entry.kind == Kind.DIR:
        return entry
    fields = list(entry)
    fields[_DEV] = global_device(entry.dev)
    return Entry(fields)


def root_identity(path: str) -> tuple[int, int]:
    """What must be equal on every rank for path to be the same tree there: its directory's
    global device and inode (a node-local /scratch under the same name is another tree).
    Raises OSError."""
    st = os.stat(path)
    return global_device(st.st_dev), st.st_ino


@cache
def global_device(dev: int) -> int:
    key = _mounts().get((os.major(dev), os.minor(dev)))
    name = key if key is not None else f"host {socket.gethostname()} dev {dev}"
    return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "big")


@cache
def _mounts() -> dict[tuple[int, int], str]:
    """(major, minor) -> "type source first-mount-point" from the mount table."""
    found: dict[tuple[int, int], str] = {}
    try:
        with open(MOUNTINFO, encoding="utf-8", errors="surrogateescape") as table:
            lines = table.read().splitlines()
    except OSError:
        return found
    for line in lines:
        fields = line.split()
        try:
            major, minor = (int(x) for x in fields[2].split(":"))
            sep = fields.index("-")
            fstype, source, where = fields[sep + 1], fields[sep + 2], fields[4]
        except (ValueError, IndexError):
            continue
        key = f"{fstype} {source} {where}"
        found[(major, minor)] = min(found.get((major, minor), key), key)
    return found
