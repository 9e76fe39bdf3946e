"""Differences between two entries found at the same path.

diff_pair() finds every difference of one (src, dst) pair (the policy only sets the mtime
window and whether xattrs were read); the engine then drops the kinds it does not check.
An entry that could not be read (or changed while being read) yields only an `error` or
`changed` difference: nothing about it may count as identical.
"""

import os
import stat
from dataclasses import dataclass

from zverify.compare.policy import ComparePolicy, DiffKind
from zverify.entry import SIZE_NOT_RECORDED, Entry, Kind, error_text, permissions
from zverify.pathnames import display, for_terminal

JsonValue = str | int | None


@dataclass
class Difference:
    path: bytes
    kind: DiffKind
    detail: str
    src: JsonValue = None
    dst: JsonValue = None
    members: tuple[bytes, ...] = ()  # hardlink group members
    entries_below: int = 0  # entries inside a missing/extra/retyped directory
    src_escaped: bool = False  # src/dst hold an escaped byte string (symlink targets)
    dst_escaped: bool = False
    # a directory on both sides whose own attributes differ: the difference is not its
    # subtree's (--write-lists keeps it out of the lists that stand for subtrees)
    directory: bool = False
    moved_to: bytes | None = None  # moved: the DST path (path is the SRC one)


def same_entry(s: Entry, d: Entry, sizes_only: bool = False) -> bool:
    """True when two readable entries agree on everything any policy compares,
    so diff_pair() would find nothing: the fast path for identical pairs.  sizes_only: a
    quick check, where files carry no digest and agree by size."""
    return (
        s.kind == d.kind
        and s.size == d.size
        and s.digest == d.digest
        and s.mtime_ns == d.mtime_ns
        and s.mode == d.mode
        and s.uid == d.uid
        and s.gid == d.gid
        and s.link == d.link
        and s.rdev == d.rdev
        and s.xattrs == d.xattrs
        and s.error is None
        and d.error is None
        and s.changed is None
        and d.changed is None
        and (s.digest is not None or s.kind != Kind.FILE or sizes_only)
    )


def diff_pair(src: Entry, dst: Entry, policy: ComparePolicy) -> list[Difference]:
    problem = _unreadable(src, dst)
    if problem is not None:
        return [problem]
    if src.kind != dst.kind:
        labels = Kind(src.kind).label, Kind(dst.kind).label
        return [Difference(src.path, DiffKind.TYPE, "{} -> {}".format(*labels), *labels)]
    # unfiltered: whether the payload is the same must not depend on --ignore (the caller
    # drops the kinds the policy does not check)
    metadata = _metadata_differences(src, dst, policy)
    for found in metadata:
        found.directory = src.kind == Kind.DIR
    return _payload_difference(src, dst, policy) + metadata


_CHANGES = {
    "replaced": "replaced while being read",
    "modified": "modified while being read",
    # procfs, sysfs and some FUSE filesystems give sizes that do not bound the content
    "size-mismatch": "content longer or shorter than its size (a pseudo-file?): not verifiable",
}


def _unreadable(src: Entry, dst: Entry) -> Difference | None:
    for side, entry in (("SRC", src), ("DST", dst)):
        text = error_text(entry)
        if text is not None:
            return Difference(entry.path, DiffKind.ERROR, f"{side}: {text}")
    for side, entry in (("SRC", src), ("DST", dst)):
        if entry.changed is not None:
            return Difference(entry.path, DiffKind.CHANGED, f"{side}: {_CHANGES[entry.changed]}")
    return None


def _payload_difference(src: Entry, dst: Entry, policy: ComparePolicy) -> list[Difference]:
    """Content of files (their sizes only when content is not read), targets of symlinks,
    numbers of devices."""
    if src.kind == Kind.FILE and not policy.reads_content:
        if src.size != dst.size and min(src.size, dst.size) != SIZE_NOT_RECORDED:
            return [_content(src, dst, f"size {src.size} -> {dst.size}")]
    elif src.kind == Kind.FILE:
        if src.digest is None or dst.digest is None:
            side = "SRC" if src.digest is None else "DST"
            return [Difference(src.path, DiffKind.ERROR, f"{side}: content was not hashed")]
        if src.size != dst.size and min(src.size, dst.size) != SIZE_NOT_RECORDED:
            return [_content(src, dst, f"size {src.size} -> {dst.size}")]
        if src.digest != dst.digest:
            same = "same size" if src.size == dst.size else "size not recorded"
            return [_content(src, dst, f"{same}, different bytes")]
    elif src.kind == Kind.SYMLINK and src.link != dst.link:
        (left, left_esc), (right, right_esc) = display(src.link or b""), display(dst.link or b"")
        detail = f"-> '{for_terminal(src.link or b'')}' vs -> '{for_terminal(dst.link or b'')}'"
        return [
            Difference(src.path, DiffKind.SYMLINK, detail, left, right, (), 0, left_esc, right_esc)
        ]
    elif src.kind in (Kind.CHAR, Kind.BLOCK) and src.rdev != dst.rdev:
        devs = _device(src.rdev), _device(dst.rdev)
        return [Difference(src.path, DiffKind.SPECIAL, "device {} -> {}".format(*devs), *devs)]
    return []


def _content(src: Entry, dst: Entry, detail: str) -> Difference:
    left = src.digest.hex() if src.digest else None
    right = dst.digest.hex() if dst.digest else None
    return Difference(src.path, DiffKind.CONTENT, detail, left, right)


def _device(rdev: int) -> str:
    return f"{os.major(rdev)}:{os.minor(rdev)}"


def _metadata_differences(src: Entry, dst: Entry, policy: ComparePolicy) -> list[Difference]:
    found = []
    # Linux symlinks always have mode 0777 and it cannot be changed.
    if src.kind != Kind.SYMLINK and permissions(src) != permissions(dst):
        modes = stat.filemode(src.mode), stat.filemode(dst.mode)
        found.append(Difference(src.path, DiffKind.MODE, "{} -> {}".format(*modes), *modes))
    if (src.uid, src.gid) != (dst.uid, dst.gid):
        owners = f"{src.uid}:{src.gid}", f"{dst.uid}:{dst.gid}"
        found.append(Difference(src.path, DiffKind.OWNER, "{} -> {}".format(*owners), *owners))
    if abs(src.mtime_ns - dst.mtime_ns) > policy.mtime_window_ns:
        times = _timestamp(src.mtime_ns), _timestamp(dst.mtime_ns)
        found.append(Difference(src.path, DiffKind.MTIME, "{} -> {}".format(*times), *times))
    if policy.needs_xattrs and src.xattrs != dst.xattrs:
        found.append(_xattr_difference(src, dst))
    return found


def _timestamp(ns: int) -> str:
    """UTC ISO 8601 for any time a filesystem can hold (datetime stops at year 9999)."""
    seconds, frac = divmod(ns, 1_000_000_000)
    days, second_of_day = divmod(seconds, 86_400)
    year, month, day = civil_from_days(days)
    hour, rest = divmod(second_of_day, 3600)
    text = f"{year:04d}-{month:02d}-{day:02d}T{hour:02d}:{rest // 60:02d}:{rest % 60:02d}"
    return f"{text}.{frac:09d}Z"


def civil_from_days(days: int) -> tuple[int, int, int]:
    """(year, month, day) of the proleptic Gregorian calendar, `days` after 1970-01-01.
    Exact for any integer: the calendar repeats every 400 years (146,097 days)."""
    era, day_of_era = divmod(days + 719_468, 146_097)  # days since 0000-03-01
    leap_days = day_of_era // 1460 - day_of_era // 36524 + day_of_era // 146096
    year_of_era = (day_of_era - leap_days) // 365
    day_of_year = day_of_era - (365 * year_of_era + year_of_era // 4 - year_of_era // 100)
    month_index = (5 * day_of_year + 2) // 153  # 0 = March
    day = day_of_year - (153 * month_index + 2) // 5 + 1
    month = month_index + 3 if month_index < 10 else month_index - 9
    return era * 400 + year_of_era + (month <= 2), month, day


def _xattr_difference(src: Entry, dst: Entry) -> Difference:
    left, right = dict(src.xattrs or ()), dict(dst.xattrs or ())
    names = sorted(set(left) | set(right))
    changes = []
    for name in names:
        label = for_terminal(name)
        if name not in right:
            changes.append(f"-{label}")
        elif name not in left:
            changes.append(f"+{label}")
        elif left[name] != right[name]:
            changes.append(f"~{label}")
    return Difference(src.path, DiffKind.XATTR, " ".join(changes))
