"""The two sides of `zverify compare`: a live tree, or a manifest standing in for one.

A Side is what the engine needs (entries in canonical order) plus what the report needs
(a label, the filesystem, what could not be seen).  A manifest fixes the digest algorithm
for both sides and may not record every kind of difference; compare_trees() reconciles
both before anything is walked.  Sides are opened by zverify.trees.open, above this package:
the engine knows what a side is, never where one comes from.
"""

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from zverify.compare.policy import DiffKind
from zverify.entry import Entry
from zverify.filters import Filter, filtered
from zverify.fsinfo import FsInfo
from zverify.hashing import Algorithm

SIDES = ("SRC", "DST")


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
