"""What one walked entry is: the C core's Record, plus names for its kinds.

Records are the C core's immutable struct-sequences (zverify._zvcore.Record);
they are used as they are, without copying into another class, because a
walk yields millions of them.
"""

import enum
import os
import stat

from zverify import _zvcore

Entry = _zvcore.Record

# The size of a file whose recorded form carries only a digest (a BagIt manifest): never
# compared, and counted as 0 bytes in the du tables.
SIZE_NOT_RECORDED = -1


class Kind(enum.IntEnum):
    FILE = _zvcore.KIND_FILE
    DIR = _zvcore.KIND_DIR
    SYMLINK = _zvcore.KIND_SYMLINK
    FIFO = _zvcore.KIND_FIFO
    SOCKET = _zvcore.KIND_SOCKET
    CHAR = _zvcore.KIND_CHAR
    BLOCK = _zvcore.KIND_BLOCK
    UNKNOWN = _zvcore.KIND_UNKNOWN

    @property
    def label(self) -> str:
        return _LABELS[self]


# st_mode's file-type bits of each kind, for entries rebuilt from a manifest.
TYPE_BITS = {
    Kind.FILE: stat.S_IFREG,
    Kind.DIR: stat.S_IFDIR,
    Kind.SYMLINK: stat.S_IFLNK,
    Kind.FIFO: stat.S_IFIFO,
    Kind.SOCKET: stat.S_IFSOCK,
    Kind.CHAR: stat.S_IFCHR,
    Kind.BLOCK: stat.S_IFBLK,
    Kind.UNKNOWN: 0,
}
_LABELS = {
    Kind.FILE: "file",
    Kind.DIR: "dir",
    Kind.SYMLINK: "symlink",
    Kind.FIFO: "fifo",
    Kind.SOCKET: "socket",
    Kind.CHAR: "chardev",
    Kind.BLOCK: "blockdev",
    Kind.UNKNOWN: "unknown",
}


def permissions(entry: Entry) -> int:
    """The preservable mode bits (permissions, setuid/setgid/sticky)."""
    return stat.S_IMODE(entry.mode)


def error_text(entry: Entry) -> str | None:
    """'read at byte 4096: Input/output error' for an entry with an error."""
    if entry.error is None:
        return None
    op, err, offset = entry.error
    where = f" at byte {offset}" if offset >= 0 else ""
    return f"{op}{where}: {os.strerror(err)}"


def known_size(entry: Entry) -> int:
    """st_size, or 0 when it was not recorded."""
    return entry.size if entry.size >= 0 else 0
