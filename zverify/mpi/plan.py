"""Cut a tree into key ranges of about equal work, for ranks to walk one range at a time.

A range is [lo, hi) in canonical order (pathnames.sort_key): every path from lo up to, not
including, hi, whatever directories it spans.  A walk over a range (WalkOptions.key_range)
enters only the directories leading to it, so ranges are independent work items, and the
results of all ranges in key order are exactly the single walk's.

The cut points come from a bounded breadth-first look at SRC: directories are listed (names
and, for directories of up to STAT_LIMIT entries, an lstat for file sizes) until BUDGET
entries were seen.  A directory of millions of entries is sampled, not held: every
stride-th name is kept, the stride doubling whenever SAMPLES names are kept, so its
entries spread over many ranges while the plan stays small.  Work is estimated as one unit
per entry plus one per BYTES_PER_UNIT of file data; what lies below a directory that was
not listed counts as the average of those that were.
"""

import os
import stat
from dataclasses import dataclass

from zverify.pathnames import sort_key

BUDGET = 50_000  # entries looked at to plan, at most (plus the last directory's samples)
SAMPLES = 4096  # names kept of one directory
STAT_LIMIT = 4096  # directories up to this size get their files lstat'ed for their sizes
BYTES_PER_UNIT = 1 << 20  # hashing 1 MiB costs about as much as statting one entry
RANGES_PER_RANK = 8  # more ranges than ranks, so a rank that finishes early takes another


@dataclass(frozen=True)
class KeyRange:
    lo: bytes  # first path of the range (b"" = the root)
    hi: bytes | None  # first path after it; None: to the end
    weight: float  # estimated work, for dispatching the heaviest first


@dataclass
class _Unit:
    """A sampled path and the work estimated from it up to the next sampled path."""

    path: bytes
    weight: float
    directory: bool  # a directory not listed yet: what lies below it is estimated


def plan(root: bytes, ranks: int) -> list[KeyRange]:
    """Key ranges covering every path of any tree, about equal in estimated work on root."""
    units = _sample(root)
    return _cut(units, max(1, ranks) * RANGES_PER_RANK)


def _sample(root: bytes) -> list[_Unit]:
    units = [_Unit(b"", 1.0, True)]
    queue = [units[0]]
    seen = 0
    listed_weight, listed_dirs = 0.0, 0
    while queue and seen < BUDGET:
        parent = queue.pop(0)
        children, count = _list(root, parent.path)
        if children is None:
            continue  # unreadable here: its rank's walk reports it
        parent.directory = False
        seen += count
        listed_dirs += 1
        listed_weight += sum(c.weight for c in children)
        units += children
        queue += [c for c in children if c.directory]
    below = listed_weight / listed_dirs if listed_dirs else 1.0
    for unit in units:
        if unit.directory:
            unit.weight += below
    return sorted(units, key=lambda u: sort_key(u.path))


def _list(root: bytes, path: bytes) -> tuple[list[_Unit] | None, int]:
    """The sampled children of one directory, and how many it has."""
    try:
        with os.scandir(os.path.join(root, path) if path else root) as it:
            kept: list[tuple[bytes, bool, os.DirEntry[bytes]]] = []
            stride, count = 1, 0
            for entry in it:
                if count % stride == 0:
                    kept.append((entry.name, entry.is_dir(follow_symlinks=False), entry))
                    if len(kept) >= SAMPLES:
                        kept, stride = kept[::2], stride * 2
                count += 1
    except OSError:
        return None, 0
    sized = count <= STAT_LIMIT
    units = []
    for name, is_dir, entry in kept:
        child = os.path.join(path, name) if path else name
        units.append(_Unit(child, stride * (1.0 + (_bytes(entry) if sized else 0.0)), is_dir))
    return units, count


def _bytes(entry: "os.DirEntry[bytes]") -> float:
    try:
        st = entry.stat(follow_symlinks=False)
    except OSError:
        return 0.0
    return st.st_size / BYTES_PER_UNIT if stat.S_ISREG(st.st_mode) else 0.0


def _cut(units: list[_Unit], pieces: int) -> list[KeyRange]:
    """Contiguous runs of units of about total/pieces each; the first starts at the root."""
    total = sum(u.weight for u in units)
    target = total / pieces
    starts: list[int] = [0]
    acc = 0.0
    for i, unit in enumerate(units):
        if acc >= target and i > starts[-1]:
            starts.append(i)
            acc = 0.0
        acc += unit.weight
    ends = [*starts[1:], len(units)]
    ranges = []
    for a, b in zip(starts, ends, strict=True):
        hi = units[b].path if b < len(units) else None
        ranges.append(KeyRange(units[a].path, hi, sum(u.weight for u in units[a:b])))
    return ranges
