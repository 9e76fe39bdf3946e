"""An archive directory's entries, looked at without trusting any of them.

Every entry is lstat()ed, never stat()ed: a symlink is reported as one (with where it points),
never followed.  Only regular files are ever opened, with O_NOFOLLOW (a symlink swapped in
after the lstat fails to open) and O_NONBLOCK (a FIFO swapped in cannot block the open), and
the open file is fstat()ed again: anything but the regular file that was lstat()ed is refused.
Devices, FIFOs, sockets and directories are never opened at all.

A regular file can still be doubtful: with more than one link, another name (perhaps outside
the archive) shares its bytes and can change them; owned by a user other than root, the
archive directory's owner or the user running zverify, that user can.  Both are reported, and
`cold prune` deletes nothing while either exists.
"""

import os
import stat
from dataclasses import dataclass

from zverify.cold.names import shown
from zverify.errors import ColdError

SAFE_OPEN = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY


@dataclass(frozen=True)
class FileStamp:
    """Which file an entry was when it was read: a deletion or a receive later must find the
    very same file (same inode, size and modification time)."""

    dev: int
    ino: int
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, st: os.stat_result) -> "FileStamp":
        return cls(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)

    def same_file(self, st: os.stat_result) -> bool:
        return (self.dev, self.ino) == (st.st_dev, st.st_ino)

    def unchanged(self, st: os.stat_result) -> bool:
        return self == FileStamp.of(st)


class Changed(ColdError):
    """An entry is no longer the regular file that was read (replaced, or not a file)."""


def what(path: str, st: os.stat_result) -> str:
    """What a non-regular entry is, in words (a symlink with its target, not followed)."""
    mode = st.st_mode
    if stat.S_ISLNK(mode):
        try:
            target = os.readlink(path)
        except OSError:
            return "a symlink"
        return f"a symlink to {shown(target)}"
    kinds = {
        stat.S_ISDIR: "a directory",
        stat.S_ISFIFO: "a FIFO",
        stat.S_ISSOCK: "a socket",
        stat.S_ISCHR: "a character device",
        stat.S_ISBLK: "a block device",
    }
    return next((word for test, word in kinds.items() if test(mode)), "not a regular file")


def doubts(st: os.stat_result, directory_uid: int) -> list[tuple[str, str]]:
    """(kind, message) for what makes a regular file's content depend on someone else."""
    found = []
    if st.st_nlink > 1:
        found.append(
            (
                "hard-link",
                f"has {st.st_nlink} links: another name, perhaps outside the archive, shares "
                "its bytes and can change them",
            )
        )
    if st.st_uid not in (0, directory_uid, os.geteuid()):
        found.append(
            (
                "foreign-owner",
                f"owned by uid {st.st_uid}, not by root or the archive's owner (uid "
                f"{directory_uid}): that user can change it",
            )
        )
    return found


def open_regular(path: str, expect: FileStamp | None = None, flags: int = SAFE_OPEN) -> int:
    """An fd of the regular file at path, never following a symlink nor blocking on a FIFO.
    Raises OSError when it cannot be opened, Changed when it is not a regular file or not
    the file expected (same inode)."""
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        name = shown(os.path.basename(path))
        if not stat.S_ISREG(st.st_mode):
            raise Changed(f"{name} is not a regular file any more: not read")
        if expect is not None and not expect.same_file(st):
            raise Changed(f"{name} was replaced by another file since it was checked: not read")
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_directory(path: str, expect: FileStamp | None = None) -> int:
    """An fd of the directory at path (a work directory of the archive), never through a
    symlink.  Raises OSError when it cannot be opened, Changed when it is not the directory
    expected (same inode)."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    if expect is not None and not expect.same_file(os.fstat(fd)):
        os.close(fd)
        raise Changed(f"{shown(os.path.basename(path))} was replaced since it was listed")
    return fd
