"""The chain-state engine: the records a full stream of a route's last snapshot carries,
computed offline from the route's full and incrementals (docs/design/consolidate.md).

merge() reads every substream of the route at once, each cursor moving forward by object
number, and yields per live object its newest OBJECT, the truncation a full carries, its
data by increasing offset (the newest WRITE/WRITE_EMBEDDED/FREE wins per byte range,
cut at the substream in which the receiver last freed or reallocated the object) and its
spill block.  No payload is buffered: a superseded payload is skipped.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from zverify.sendstream.records import Rec, RecordReader, Refused

__all__ = ["Rec", "RecordReader", "Refused", "StateRecord", "merge"]


@dataclass(frozen=True)
class StateRecord:
    header: bytes
    """312 bytes in the stream's byte order; the RecordType is at bytes 0..3.  drr_toguid
    and the trailer checksum are the source's (a writer rewrites them)."""
    payload: bytes


def merge(readers: list[RecordReader]) -> Iterator[StateRecord]:
    """The state of the route's last snapshot, readers oldest (the full) first."""
    raise NotImplementedError
    yield  # pragma: no cover
