"""The two sides of `zverify compare`: a live tree, or a manifest standing in for one.

A Side is what the engine needs (entries in canonical order) plus what the report needs
(a label, the filesystem, what could not be seen).  A manifest fixes the digest algorithm
for both sides and may not record every kind of difference; compare_trees() reconciles
both before anything is walked.
"""

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

from zverify.compare.policy import DiffKind
from zverify.entry import Entry
from zverify.filters import Filter, filtered
from zverify.fsinfo import FsInfo, filesystem_of, unreadable_xattr_namespaces
from zverify.hashing import Algorithm
from zverify.walk import TreeWalk, WalkOptions


@dataclass
class Side:
    name: str  # "SRC" or "DST"
    label: str  # the path as given, for the report
    entries: Iterable[Entry]
    fs: FsInfo
    progress: Callable[[], tuple[int, int]]
    close: Callable[[], None]
    algorithm: Algorithm | None = None  # fixed by a manifest; None: a live tree hashes any
    lacking: dict[DiffKind, str] = field(default_factory=dict)  # kinds it cannot tell, why
    files_only: bool = False  # lists regular files only (checkfile formats): no directories
    sizes: bool = True  # False: records no file sizes (a checkfile, a BagIt manifest)
    unverifiable: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    one_file_system: bool = False  # recorded with -x: the live side must not cross mounts
    filter: Filter | None = None  # a manifest recorded with one: the live side gets it too
    excluded: Callable[[], int] = lambda: 0  # entries the filter left out so far

    def apply_filter(self, chosen: Filter) -> None:
        """Leave out what chosen excludes from a side that was not walked with it (a
        manifest; a live side gets its filter in the walk options instead)."""
        compiled = chosen.compiled()
        if compiled is None:
            return
        counter = [0]
        self.entries = filtered(self.entries, compiled, counter)
        self.excluded = lambda: counter[0]


def is_manifest_path(path: str) -> bool:
    """A regular file (or '-', standard input) is read as a manifest; anything else is a
    tree, and the walk reports it when it is not a readable directory."""
    return path == "-" or os.path.isfile(path)


def live_side(name: str, path: str, options: WalkOptions) -> Side:
    walk = TreeWalk(path, options, name)
    unverifiable = unreadable_xattr_namespaces() if options.xattrs else []
    return Side(
        name, path, walk, filesystem_of(path), walk.progress, walk.close, None,
        unverifiable=unverifiable, excluded=walk.excluded,
    )  # fmt: skip


def remote_side(name: str, path: str, options: WalkOptions) -> Side:
    """A live tree that other MPI ranks walk (zverify.mpi): its root is opened here, as the
    walk would open it, so that an unreadable root fails here and the same way; its
    entries and counts come from the ranks."""
    TreeWalk(path, replace(options, key_range=(b"", b"")), name).close()  # an empty range
    unverifiable = unreadable_xattr_namespaces() if options.xattrs else []
    return Side(
        name, path, (), filesystem_of(path), lambda: (0, 0), lambda: None, None,
        unverifiable=unverifiable,
    )  # fmt: skip


def manifest_side(name: str, path: str, keep_xattrs: bool, asked: Algorithm | None = None) -> Side:
    """asked: --hash, which a checkfile of 64-hex digests needs when its name does not tell."""
    # imported here: `zverify compare` on two live trees never loads the manifest readers
    from zverify.manifest.open import open_manifest

    return open_manifest(name, path, keep_xattrs, asked)
