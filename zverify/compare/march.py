"""Merge-join two canonical-order entry streams into pairs.

Both walks emit pre-order with siblings sorted bytewise, which is bytewise
order of pathnames.sort_key().  march() yields (src, dst) with one side None
when a path exists in only one tree, and refuses unsorted or duplicate
input instead of producing wrong pairs.
"""

from collections.abc import Iterable, Iterator

from zverify.entry import Entry

Pair = tuple[Entry | None, Entry | None]


class OrderError(RuntimeError):
    """A stream was not in canonical order: a bug, never a verdict."""


def march(src: Iterable[Entry], dst: Iterable[Entry]) -> Iterator[Pair]:
    """Pairs in canonical order; raises OrderError on unsorted or duplicate input."""
    left, right = iter(src), iter(dst)
    a, b = next(left, None), next(right, None)
    # '/' -> NUL makes bytewise order the walk's pre-order (see pathnames.sort_key);
    # inlined because this loop runs once per entry of both trees.
    ka = a.path.replace(b"/", b"\0") if a is not None else None
    kb = b.path.replace(b"/", b"\0") if b is not None else None
    while a is not None or b is not None:
        if kb is None or (ka is not None and ka < kb):
            yield a, None
            a, ka = _advance(left, ka, "SRC")
        elif ka is None or kb < ka:
            yield None, b
            b, kb = _advance(right, kb, "DST")
        else:
            yield a, b
            a, ka = _advance(left, ka, "SRC")
            b, kb = _advance(right, kb, "DST")


def _advance(
    it: Iterator[Entry], previous: bytes | None, side: str
) -> tuple[Entry | None, bytes | None]:
    entry = next(it, None)
    if entry is None:
        return None, None
    key = entry.path.replace(b"/", b"\0")
    if previous is not None and key <= previous:
        raise OrderError(f"{side} walk out of order at {entry.path!r}")
    return entry, key
