"""Which entries are the same object: the key for hardlink groups and du's count-once rule.

On a live tree that is the inode, (st_dev, st_ino).  Entries from elsewhere (a manifest
written on another host, an MPI rank) carry a group id instead; inode numbers mean nothing
across filesystems, so identities are only ever compared within one tree, never across.
"""

from collections.abc import Callable, Hashable

from zverify.entry import Entry

Identity = Callable[[Entry], Hashable]


def inode_identity(entry: Entry) -> Hashable:
    return (entry.dev, entry.ino)
