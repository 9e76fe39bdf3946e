"""Hardlink structure: compare the partitions of paths into inodes.

Inode numbers differ between any two filesystems, so they are never compared.  What a
faithful copy keeps is which paths share an inode.  For paths present in both trees with
the same payload, each tree partitions them into groups; a SRC group whose members landed
on several DST inodes was split (rsync -a without -H does this), a DST group gathering paths
that were separate in SRC was joined.  Every type but directories can be hard-linked
(rsync -H and cp -a keep hard-linked symlinks, FIFOs and device nodes too).  Only entries
with nlink > 1 on either side are remembered, so memory grows with hardlinks, not with the
tree.
"""

from collections import defaultdict
from collections.abc import Hashable, Iterable

from zverify.compare.diffs import Difference
from zverify.compare.policy import DiffKind
from zverify.entry import Entry, Kind
from zverify.identity import Identity, inode_identity
from zverify.pathnames import sort_key


class HardlinkTracker:
    def __init__(self, identity: Identity = inode_identity) -> None:
        self._identity = identity
        self._src: dict[bytes, Hashable] = {}
        self._dst: dict[bytes, Hashable] = {}

    def add_pair(self, src: Entry, dst: Entry) -> None:
        """Remember a path present on both sides with the same payload."""
        if src.kind == Kind.DIR or dst.kind == Kind.DIR:
            return  # directories cannot be hard-linked; their nlink counts subdirectories
        if src.nlink > 1 or dst.nlink > 1:
            self._src[src.path] = self._identity(src)
            self._dst[dst.path] = self._identity(dst)

    def differences(self) -> list[Difference]:
        found = [_split(g, self._dst) for g in _groups(self._src)]
        found += [_joined(g, self._src) for g in _groups(self._dst)]
        return sorted((d for d in found if d is not None), key=lambda d: sort_key(d.path))


def _groups(paths: dict[bytes, Hashable]) -> Iterable[list[bytes]]:
    by_inode: dict[Hashable, list[bytes]] = defaultdict(list)
    for path, key in paths.items():
        by_inode[key].append(path)
    return (sorted(g, key=sort_key) for g in by_inode.values() if len(g) > 1)


def _inode_count(group: list[bytes], other: dict[bytes, Hashable]) -> int:
    return len({other[p] for p in group})


def _split(group: list[bytes], dst: dict[bytes, Hashable]) -> Difference | None:
    inodes = _inode_count(group, dst)
    if inodes == 1:
        return None
    detail = f"{len(group)} paths hard-linked in SRC are {inodes} separate inodes in DST"
    return _difference(group, detail, "1 inode", f"{inodes} inodes")


def _joined(group: list[bytes], src: dict[bytes, Hashable]) -> Difference | None:
    inodes = _inode_count(group, src)
    if inodes == 1:
        return None
    detail = f"{len(group)} paths from {inodes} separate inodes in SRC share one inode in DST"
    return _difference(group, detail, f"{inodes} inodes", "1 inode")


def _difference(group: list[bytes], detail: str, src: str, dst: str) -> Difference:
    return Difference(group[0], DiffKind.HARDLINK, detail, src, dst, members=tuple(group))
