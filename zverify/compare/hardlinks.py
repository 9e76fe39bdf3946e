"""Hardlink structure: compare the partitions of paths into inodes.

Inode numbers differ between any two filesystems, so they are never
compared.  What a faithful copy keeps is which paths share an inode.  For
paths present as regular files in both trees, each tree partitions them
into groups; a SRC group whose members landed on several DST inodes was
split (rsync -a without -H does this), a DST group gathering paths that
were separate in SRC was joined.  Only files with nlink > 1 are remembered,
so memory grows with hardlinks, not with the tree.
"""

from collections import defaultdict
from collections.abc import Iterable

from zverify.compare.diffs import Difference
from zverify.compare.policy import DiffKind
from zverify.entry import Entry, Kind
from zverify.pathnames import sort_key

InodeKey = tuple[int, int]


class HardlinkTracker:
    def __init__(self) -> None:
        self._src: dict[bytes, InodeKey] = {}
        self._dst: dict[bytes, InodeKey] = {}

    def add_pair(self, src: Entry, dst: Entry) -> None:
        """Remember a path that is a regular file on both sides."""
        if src.kind != Kind.FILE or dst.kind != Kind.FILE:
            return
        if src.nlink > 1 or dst.nlink > 1:
            self._src[src.path] = (src.dev, src.ino)
            self._dst[dst.path] = (dst.dev, dst.ino)

    def differences(self) -> list[Difference]:
        found = [_split(g, self._dst) for g in _groups(self._src)]
        found += [_joined(g, self._src) for g in _groups(self._dst)]
        return sorted((d for d in found if d is not None), key=lambda d: sort_key(d.path))


def _groups(paths: dict[bytes, InodeKey]) -> Iterable[list[bytes]]:
    by_inode: dict[InodeKey, list[bytes]] = defaultdict(list)
    for path, key in paths.items():
        by_inode[key].append(path)
    return (sorted(g, key=sort_key) for g in by_inode.values() if len(g) > 1)


def _inode_count(group: list[bytes], other: dict[bytes, InodeKey]) -> int:
    return len({other[p] for p in group})


def _split(group: list[bytes], dst: dict[bytes, InodeKey]) -> Difference | None:
    inodes = _inode_count(group, dst)
    if inodes == 1:
        return None
    detail = f"{len(group)} paths hard-linked in SRC are {inodes} separate inodes in DST"
    return _difference(group, detail, "1 inode", f"{inodes} inodes")


def _joined(group: list[bytes], src: dict[bytes, InodeKey]) -> Difference | None:
    inodes = _inode_count(group, src)
    if inodes == 1:
        return None
    detail = f"{len(group)} paths from {inodes} separate inodes in SRC share one inode in DST"
    return _difference(group, detail, f"{inodes} inodes", "1 inode")


def _difference(group: list[bytes], detail: str, src: str, dst: str) -> Difference:
    return Difference(group[0], DiffKind.HARDLINK, detail, src, dst, members=tuple(group))
