"""The logical state digest of a snapshot (docs/design/consolidate.md, "Digest")."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from zverify.sendstream.chainstate import StateRecord


def state_objects(records: Iterable[StateRecord], big_endian: bool) -> Iterator[tuple[int, str]]:
    """(object number, hex BLAKE3 of the object's logical state) per live object, in order."""
    raise NotImplementedError
    yield  # pragma: no cover


def state_digest(records: Iterable[StateRecord], big_endian: bool) -> str:
    """ "blake3:<hex>" over every live object's logical state."""
    raise NotImplementedError
