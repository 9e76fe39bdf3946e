"""Merge-join two canonical-order entry streams into pairs.

Both walks emit pre-order with siblings sorted bytewise, which is bytewise
order of pathnames.sort_key().  march() yields (src, dst) with one side None
when a path exists in only one tree, and refuses unsorted or duplicate
input instead of producing wrong pairs.
"""

from collections.abc import Iterable, Iterator

from zverify.entry import Entry
from zverify.pathnames import sort_key

Pair = tuple[Entry | None, Entry | None]


class OrderError(RuntimeError):
    """A stream was not in canonical order: a bug, never a verdict."""


def _checked(entries: Iterable[Entry], side: str) -> Iterator[tuple[bytes, Entry]]:
    previous: bytes | None = None
    for entry in entries:
        key = sort_key(entry.path)
        if previous is not None and key <= previous:
            raise OrderError(f"{side} walk out of order at {entry.path!r}")
        previous = key
        yield key, entry


def march(src: Iterable[Entry], dst: Iterable[Entry]) -> Iterator[Pair]:
    left, right = _checked(src, "SRC"), _checked(dst, "DST")
    a, b = next(left, None), next(right, None)
    while a is not None or b is not None:
        if b is None or (a is not None and a[0] < b[0]):
            assert a is not None
            yield a[1], None
            a = next(left, None)
        elif a is None or b[0] < a[0]:
            yield None, b[1]
            b = next(right, None)
        else:
            yield a[1], b[1]
            a, b = next(left, None), next(right, None)
