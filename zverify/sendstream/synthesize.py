"""Write a full send stream from the records the chain-state engine computes
(zverify.sendstream.chainstate.merge): what `cold consolidate` stores as NAME@S.zfsfull.

The stream is the one `zfs send` of the route's last snapshot would be, as receive reads it
(docs/design/consolidate.md, "Writer and consolidate"):

* BEGIN: the last substream's BEGIN (toname, toguid, creation time, objset type), with
  drr_fromguid 0, no nvlist payload, the CLONE flag cleared and FREERECORDS set only when
  the caller says every free slot and hole is in the records (receive needs it only for a
  full received as a clone: module/zfs/dmu_recv.c, recv_begin_check's `drba_origin`);
* features: the route's capabilities, as `zfs send` sets them from the dataset and its flags
  rather than from the records it happens to write (SA_SPILL from the last substream;
  EMBED_DATA, LZ4, ZSTD, COMPRESSED, LARGE_DNODE, LARGE_BLOCKS from any substream of the
  route); never RESUMING, REDACTED, DEDUP or RAW.  The BEGIN comes first and its bytes start
  the running checksum of every later trailer, so announcing exactly the features the records
  use would need a second pass over the route; a record that needs a feature the BEGIN does
  not announce is refused (WriteRefused) instead, and the summary says which features the
  records used;
* every record's drr_toguid is the snapshot's, its trailer the running fletcher-4 of all the
  bytes before it (OpenZFS's dump_record), a SPILL's "unmodified" flag is cleared (receive
  skips an unmodified spill when the BEGIN has SPILL_BLOCK: kept, the object would lose its
  xattrs; the design note's "spill trap");
* END carries the checksum of the whole stream and the toguid, and its own trailer.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import BinaryIO

from zverify import _zvcore
from zverify.errors import ZverifyError
from zverify.sendstream.chainstate import StateRecord
from zverify.sendstream.format import MAGIC, RECORD_SIZE, BeginFlag, Feature, RecordType
from zverify.sendstream.records import DRR_SPILL_UNMODIFIED, TOGUID_AT

TRAILER = 280
"""offsetof(dmu_replay_record_t, drr_u.drr_checksum.drr_checksum): the 32-byte trailer."""

CARRIED = (
    Feature.EMBED_DATA
    | Feature.LZ4
    | Feature.ZSTD
    | Feature.COMPRESSED
    | Feature.LARGE_DNODE
    | Feature.LARGE_BLOCKS
)
"""Features a synthetic full takes from any substream of its route."""

NEVER = Feature.RESUMING | Feature.REDACTED | Feature.DEDUP | Feature.DEDUPPROPS | Feature.RAW
"""Features a synthetic full never carries (the engine refuses routes that have them)."""

_FLUSH = 1 << 20
_ZIO_COMPRESS_LZ4 = 15
_ZIO_COMPRESS_ZSTD = 16


class WriteRefused(ZverifyError):
    """The records cannot form the full announced (an engine fault or a route the writer
    does not support): nothing written is kept."""


@dataclass
class FullSummary:
    """What write_full() wrote."""

    toguid: int
    toname: str
    features: int  # announced in the BEGIN
    used_features: int = 0  # what the records written need
    records: int = 0  # between BEGIN and END
    bytes: int = 0  # the whole stream
    counts: dict[str, int] = field(default_factory=dict)
    end_checksum: tuple[int, int, int, int] = (0, 0, 0, 0)


def route_features(begins: Iterable[tuple[int, int]]) -> int:
    """The features of a full made from a route whose substreams have these (features,
    flags) BEGINs, oldest first (see the module's docstring)."""
    listed = list(begins)
    if not listed:
        raise WriteRefused("a route without substreams has no full")
    carried = 0
    for features, _flags in listed:
        carried |= features & CARRIED
    return carried | (listed[-1][0] & Feature.SA_SPILL)


def _order(big_endian: bool) -> str:
    return ">" if big_endian else "<"


def begin_record(
    begin: bytes, features: int, big_endian: bool, free_records: bool = False
) -> bytes:
    """The BEGIN of the synthetic full, from the route's last substream's BEGIN (312
    bytes, its byte order)."""
    if len(begin) != RECORD_SIZE:
        raise WriteRefused(f"a BEGIN record is {RECORD_SIZE} bytes, not {len(begin)}")
    if features & NEVER:
        raise WriteRefused(f"a synthetic full never carries features {features & NEVER:#x}")
    o = _order(big_endian)
    (magic,) = struct.unpack_from(o + "Q", begin, 8)
    if magic != MAGIC:
        raise WriteRefused("the BEGIN given has no send-stream magic in that byte order")
    (flags,) = struct.unpack_from(o + "I", begin, 36)
    flags &= ~(BeginFlag.CLONE | BeginFlag.FREERECORDS)
    flags |= BeginFlag.FREERECORDS if free_records else 0
    head = bytearray(begin)
    struct.pack_into(o + "I", head, 4, 0)  # no nvlist: a non-raw full carries none
    struct.pack_into(o + "Q", head, 16, (features << 2) | 1)  # SUBSTREAM, its features
    struct.pack_into(o + "I", head, 36, flags)
    struct.pack_into(o + "Q", head, 48, 0)  # drr_fromguid: a full
    head[TRAILER:] = bytes(RECORD_SIZE - TRAILER)
    return bytes(head)


_EXTRA = {_ZIO_COMPRESS_LZ4: int(Feature.LZ4), _ZIO_COMPRESS_ZSTD: int(Feature.ZSTD)}
_EMBED, _COMPRESSED = int(Feature.EMBED_DATA), int(Feature.COMPRESSED)
_LARGE_DNODE, _SA_SPILL = int(Feature.LARGE_DNODE), int(Feature.SA_SPILL)


def _needed(kind: int, header: bytes | bytearray, big_endian: bool) -> int:
    """The features a record needs announced (what the scanner and receive expect); plain
    ints, not enum.IntFlag arithmetic: the writer asks per record."""
    if kind == RecordType.WRITE:
        compress = header[50]  # drr_compressiontype: sent compressed
        return _COMPRESSED | _EXTRA.get(compress, 0) if compress else 0
    if kind == RecordType.OBJECT:
        return _LARGE_DNODE if header[34] > 1 else 0  # drr_dn_slots
    if kind == RecordType.WRITE_EMBEDDED:
        return _EMBED | _EXTRA.get(header[40], 0)
    if kind == RecordType.SPILL:
        return _SA_SPILL
    return 0


_ALLOWED = frozenset(
    {
        RecordType.OBJECT,
        RecordType.FREEOBJECTS,
        RecordType.WRITE,
        RecordType.FREE,
        RecordType.SPILL,
        RecordType.WRITE_EMBEDDED,
    }
)
_NAMES = {int(k): k.name for k in RecordType}


class FullWriter:
    """A full stream written record by record: begin, add() each record, finish().  out
    takes bytes or a bytearray (an fd's write, a file's write); writes are gathered into
    1 MiB pieces."""

    def __init__(
        self,
        out: Callable[[bytes | bytearray], object],
        begin: bytes,
        features: int,
        big_endian: bool,
        free_records: bool = False,
    ) -> None:
        self._out = out
        self._big = big_endian
        self._o = _order(big_endian)
        head = begin_record(begin, features, big_endian, free_records)
        (toguid,) = struct.unpack_from(self._o + "Q", head, 40)
        name = head[56:312].split(b"\0", 1)[0].decode("utf-8", "surrogateescape")
        self.summary = FullSummary(toguid, name, features)
        self._features = int(features)
        self._toguid = struct.pack(self._o + "Q", toguid)
        self._pending = bytearray()
        self._state = _zvcore.fletcher4(head, big_endian=big_endian)
        self._put(head)

    def _put(self, data: bytes) -> None:
        self._pending += data
        self.summary.bytes += len(data)
        if len(self._pending) >= _FLUSH:
            self.flush()

    def flush(self) -> None:
        if self._pending:
            # handed over, not copied (that was a copy of every byte of the full); a fresh
            # buffer takes its place
            full, self._pending = self._pending, bytearray()
            self._out(full)

    def _record(self, head: bytearray, payload: bytes = b"") -> None:
        """head (312 bytes) with its trailer computed, then payload, into the stream."""
        self._state = _zvcore.fletcher4(
            memoryview(head)[:TRAILER], state=self._state, big_endian=self._big
        )
        struct.pack_into(self._o + "4Q", head, TRAILER, *self._state)
        self._state = _zvcore.fletcher4(
            memoryview(head)[TRAILER:], state=self._state, big_endian=self._big
        )
        self._put(bytes(head))
        if payload:
            self._state = _zvcore.fletcher4(payload, state=self._state, big_endian=self._big)
            self._put(payload)

    def add(self, rec: StateRecord) -> None:
        head = bytearray(rec.header)
        if len(head) != RECORD_SIZE:
            raise WriteRefused(f"a record header is {RECORD_SIZE} bytes, not {len(head)}")
        (kind,) = struct.unpack_from(self._o + "I", head, 0)
        if kind not in _ALLOWED:
            name = _NAMES.get(kind, str(kind))
            raise WriteRefused(f"record {self.summary.records + 1}: a full carries no {name}")
        needed = _needed(kind, head, self._big)
        missing = needed & ~self._features
        if missing:
            names = ", ".join(f.name or "" for f in Feature if f & missing)
            raise WriteRefused(
                f"record {self.summary.records + 1} ({RecordType(kind).name}) needs feature "
                f"{names}, which no substream of the route announces"
            )
        self.summary.used_features |= needed
        at = TOGUID_AT[kind]
        head[at : at + 8] = self._toguid
        if kind == RecordType.SPILL:
            head[32] &= ~DRR_SPILL_UNMODIFIED & 0xFF  # drr_flags: a full's spill is applied
        self._record(head, rec.payload)
        self.summary.records += 1
        kind_name = _NAMES[kind]
        self.summary.counts[kind_name] = self.summary.counts.get(kind_name, 0) + 1

    def finish(self) -> FullSummary:
        """The END record (the stream's checksum so far, the toguid), everything flushed."""
        head = bytearray(RECORD_SIZE)
        struct.pack_into(self._o + "II4Q", head, 0, RecordType.END, 0, *self._state)
        head[40:48] = self._toguid
        self.summary.end_checksum = self._state
        self._record(head)
        self.flush()
        return self.summary


def write_full(
    begin: bytes,
    records: Iterable[StateRecord],
    out: BinaryIO | int,
    big_endian: bool | None = None,
    *,
    features: int | None = None,
    free_records: bool = False,
) -> FullSummary:
    """Write a whole full stream to out (an fd or a binary file): begin is the route's
    last substream's BEGIN (312 bytes), records what merge() yields, features what the
    BEGIN announces (route_features(); default the last BEGIN's own, less what a full never
    carries).  Raises WriteRefused."""
    big = _is_big(begin) if big_endian is None else big_endian
    if features is None:
        (versioninfo,) = struct.unpack_from(_order(big) + "Q", begin, 16)
        features = (versioninfo >> 2) & ~NEVER & 0x3FFF_FFFF
    write = _fd_writer(out) if isinstance(out, int) else out.write
    writer = FullWriter(write, begin, features, big, free_records)
    for rec in records:
        writer.add(rec)
    return writer.finish()


def _is_big(begin: bytes) -> bool:
    if struct.unpack_from("<Q", begin, 8)[0] == MAGIC:
        return False
    if struct.unpack_from(">Q", begin, 8)[0] == MAGIC:
        return True
    raise WriteRefused("the BEGIN given has no send-stream magic")


def _fd_writer(fd: int) -> Callable[[bytes | bytearray], None]:
    def write(data: bytes | bytearray) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]

    return write
