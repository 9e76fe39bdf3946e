"""compare_trees(): `zverify compare` on two live trees.

Checks the roots (never the same directory), walks both concurrently (each walk has its
own C threads), feeds the two canonical streams to the pure engine, and adds what only a
live tree can tell: which filesystems hold it, and what this process cannot read.
"""

import os
from collections.abc import Callable, Iterator

from zverify.compare.engine import compare_entries
from zverify.compare.policy import ComparePolicy
from zverify.compare.result import CompareResult
from zverify.entry import Entry
from zverify.errors import SameTreeError
from zverify.fsinfo import filesystem_of, unreadable_xattr_namespaces
from zverify.hashing import Algorithm
from zverify.walk import TreeWalk, WalkOptions, default_threads

ProgressHook = Callable[[int, int], None]  # (entries, bytes) so far, both trees
PROGRESS_EVERY = 512  # entries of one side between progress updates


def compare_trees(
    src: str,
    dst: str,
    policy: ComparePolicy | None = None,
    algorithm: Algorithm = Algorithm.XXH3_128,
    threads: int | None = None,
    one_file_system: bool = False,
    progress: ProgressHook | None = None,
) -> CompareResult:
    """Compare two trees; raises RootError/SameTreeError (exit 2) before walking anything."""
    policy = policy or ComparePolicy()
    notes = _check_roots(src, dst)
    options = WalkOptions(
        algorithm=algorithm,
        threads=threads or default_threads(),
        xattrs=policy.needs_xattrs,
        one_file_system=one_file_system,
    )
    src_walk = TreeWalk(src, options, "SRC")
    try:
        dst_walk = TreeWalk(dst, options, "DST")
    except BaseException:
        src_walk.close()
        raise
    try:
        src_entries = _reporting(src_walk, dst_walk, progress)
        found = compare_entries(src_entries, dst_walk, policy)
    finally:
        src_walk.close()
        dst_walk.close()
    unverifiable = unreadable_xattr_namespaces() if policy.needs_xattrs else []
    src_fs, dst_fs = filesystem_of(src), filesystem_of(dst)
    return CompareResult(
        **vars(found),
        src_root=src,
        dst_root=dst,
        policy=policy,
        algorithm=algorithm,
        src_fs=src_fs,
        dst_fs=dst_fs,
        unverifiable=unverifiable,
        notes=notes,
    )


def _reporting(walk: TreeWalk, other: TreeWalk, progress: ProgressHook | None) -> Iterator[Entry]:
    """walk's entries, calling progress with both walks' counters now and then."""
    if progress is None:
        yield from walk
        return
    for n, entry in enumerate(walk):
        if n % PROGRESS_EVERY == 0:
            (ea, ba), (eb, bb) = walk.progress(), other.progress()
            progress(ea + eb, ba + bb)
        yield entry


def _check_roots(src: str, dst: str) -> list[str]:
    """Refuse one directory under two names; note when one tree holds the other."""
    try:
        s, d = os.stat(src), os.stat(dst)
    except OSError:
        return []  # the walk reports an unreadable root, with the side it concerns
    if (s.st_dev, s.st_ino) == (d.st_dev, d.st_ino):
        raise SameTreeError(src, dst)
    notes = []
    if _inside(dst, s):
        notes.append("DST lies inside SRC: its entries are also compared as part of SRC")
    if _inside(src, d):
        notes.append("SRC lies inside DST: its entries are also compared as part of DST")
    return notes


def _inside(path: str, outer: os.stat_result) -> bool:
    """True when a proper ancestor of path is the directory outer: compared by identity,
    not by name, so a symlink or a bind mount of outer counts too."""
    here = os.path.realpath(path)
    while True:
        parent = os.path.dirname(here)
        if parent == here:
            return False
        here = parent
        try:
            st = os.stat(here)
        except OSError:
            return False
        if (st.st_dev, st.st_ino) == (outer.st_dev, outer.st_ino):
            return True
