"""Read one substream record by record: the 312-byte header, then its payload on demand.

The chain-state engine (zverify.sendstream.chainstate) reads many substreams at once and
keeps only one header per substream; a payload is read when the engine emits it and
skipped (seeked over when the source can) when a newer substream supersedes it.  Framing
follows the receiver's own payload sizes (module/zfs/dmu_recv.c receive_read_record,
OpenZFS 2.1.11) and the struct offsets of include/sys/zfs_ioctl.h
(docs/design/sendstream-format.md).
This reader does not replay the fletcher-4 trailers: the scanner (`cold check`) proves a
stream intact; this module only reads what a proven stream says.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import NamedTuple

from zverify.errors import ZverifyError
from zverify.sendstream.format import MAGIC, RECORD_SIZE, BeginHeader, RecordType, parse_begin

MAX_PAYLOAD = 16 << 20
"""SPA_MAXBLOCKSIZE: no record payload (block, spill, bonus) is larger."""

_SKIP_CHUNK = 1 << 20

TOGUID_AT: dict[int, int] = {
    RecordType.OBJECT: 40,
    RecordType.FREEOBJECTS: 24,
    RecordType.WRITE: 40,
    RecordType.FREE: 32,
    RecordType.END: 40,
    RecordType.WRITE_BYREF: 32,
    RecordType.SPILL: 24,
    RecordType.WRITE_EMBEDDED: 32,
    RecordType.OBJECT_RANGE: 24,
    RecordType.REDACT: 32,
}
"""Byte offset of drr_toguid in each record type's header (zfs_ioctl.h)."""


class Refused(ZverifyError):
    """A chain the engine cannot read or merge (exit 2); the message names the substream,
    the field and the byte offset.  zverify.sendstream.chainstate.Refused is this class."""


class Rec(NamedTuple):
    # A tuple, not a dataclass: the chain-state engine makes one per record of every
    # substream (hundreds of thousands per consolidate), and a tuple is built in a third
    # of the time of a frozen dataclass.
    kind: int
    """RecordType value (drr_type)."""
    header: bytes
    """The 312 raw bytes as in the stream (its byte order), trailer included."""
    offset: int
    """Byte offset of the header in this substream's decoded bytes (for messages)."""
    payload_len: int
    obj: int
    """drr_object (FREEOBJECTS: drr_firstobj): the u64 at byte 8 of every record but BEGIN
    and END."""


_U32 = (struct.Struct("<I"), struct.Struct(">I"))
_U64 = (struct.Struct("<Q"), struct.Struct(">Q"))
"""Indexed by big_endian: False (0) little, True (1) big."""


def _u32(h: bytes, off: int, big: bool) -> int:
    return int(_U32[big].unpack_from(h, off)[0])


def _u64(h: bytes, off: int, big: bool) -> int:
    return int(_U64[big].unpack_from(h, off)[0])


def _round8(n: int) -> int:
    return (n + 7) // 8 * 8


_KIND_OBJ = (struct.Struct("<I4xQ"), struct.Struct(">I4xQ"))
"""drr_type and drr_object, little- and big-endian: the two fields every record is read for."""
_BEGIN, _END, _LAST = int(RecordType.BEGIN), int(RecordType.END), int(RecordType.REDACT)
_WRITE, _OBJECT = int(RecordType.WRITE), int(RecordType.OBJECT)
_SPILL, _EMBEDDED = int(RecordType.SPILL), int(RecordType.WRITE_EMBEDDED)


def payload_length(kind: int, header: bytes, big_endian: bool) -> int:
    """The payload bytes after a header, as receive_read_record reads them (the structs
    bound here, not _u32/_u64: this runs for every record of a merge)."""
    u32, u64 = _U32[big_endian].unpack_from, _U64[big_endian].unpack_from
    if kind == _WRITE:  # DRR_WRITE_PAYLOAD_SIZE: compressed size when compressed
        return int(u64(header, 96 if header[50] else 32)[0])
    if kind == _OBJECT:  # DRR_OBJECT_PAYLOAD_SIZE: raw_bonuslen, else bonus rounded
        return u32(header, 36)[0] or _round8(u32(header, 28)[0])
    if kind == _SPILL:  # DRR_SPILL_PAYLOAD_SIZE
        return int(u64(header, 40)[0] or u64(header, 16)[0])
    if kind == _EMBEDDED:  # P2ROUNDUP(drr_psize, 8)
        return _round8(u32(header, 52)[0])
    return 0


# -- field accessors ------------------------------------------------------------------------


def _raw(rec: Rec | bytes) -> bytes:
    return rec.header if isinstance(rec, Rec) else rec


class ObjectFields(NamedTuple):
    object: int
    type: int
    bonustype: int
    blksz: int
    bonuslen: int
    checksumtype: int
    compress: int
    dn_slots: int
    flags: int
    raw_bonuslen: int
    indblkshift: int
    nlevels: int
    nblkptr: int
    maxblkid: int


def object_fields(rec: Rec | bytes, big_endian: bool) -> ObjectFields:
    h, o = _raw(rec), ">" if big_endian else "<"
    obj, otype, bonustype, blksz, bonuslen = struct.unpack_from(o + "QIIII", h, 8)
    cks, comp, slots, flags = h[32], h[33], h[34], h[35]
    (raw_bonuslen,) = struct.unpack_from(o + "I", h, 36)
    (maxblkid,) = struct.unpack_from(o + "Q", h, 56)
    return ObjectFields(
        obj, otype, bonustype, blksz, bonuslen, cks, comp, slots, flags, raw_bonuslen,
        h[48], h[49], h[50], maxblkid,
    )  # fmt: skip


DRR_OBJECT_SPILL = 1 << 2
"""drr_object.drr_flags: the object has a spill block (else receive removes it)."""


class WriteFields(NamedTuple):
    object: int
    type: int
    offset: int
    logical_size: int
    checksumtype: int
    flags: int
    compressiontype: int
    compressed_size: int


def write_fields(rec: Rec | bytes, big_endian: bool) -> WriteFields:
    h, o = _raw(rec), ">" if big_endian else "<"
    obj, otype = struct.unpack_from(o + "QI", h, 8)
    offset, lsize = struct.unpack_from(o + "QQ", h, 24)
    (csize,) = struct.unpack_from(o + "Q", h, 96)
    return WriteFields(obj, otype, offset, lsize, h[48], h[49], h[50], csize)


class FreeFields(NamedTuple):
    object: int
    offset: int
    length: int
    """UINT64_MAX (-1) means to the end of the object."""


def free_fields(rec: Rec | bytes, big_endian: bool) -> FreeFields:
    h, o = _raw(rec), ">" if big_endian else "<"
    return FreeFields(*struct.unpack_from(o + "QQQ", h, 8))


class FreeObjectsFields(NamedTuple):
    firstobj: int
    numobjs: int


def freeobjects_fields(rec: Rec | bytes, big_endian: bool) -> FreeObjectsFields:
    h, o = _raw(rec), ">" if big_endian else "<"
    return FreeObjectsFields(*struct.unpack_from(o + "QQ", h, 8))


DRR_SPILL_UNMODIFIED = 1 << 2
"""drr_spill.drr_flags: an incremental re-sends an unchanged spill block (receive skips it)."""


class SpillFields(NamedTuple):
    object: int
    length: int
    flags: int
    compressiontype: int
    compressed_size: int
    type: int


def spill_fields(rec: Rec | bytes, big_endian: bool) -> SpillFields:
    h, o = _raw(rec), ">" if big_endian else "<"
    obj, length = struct.unpack_from(o + "QQ", h, 8)
    (csize,) = struct.unpack_from(o + "Q", h, 40)
    (otype,) = struct.unpack_from(o + "I", h, 84)
    return SpillFields(obj, length, h[32], h[33], csize, otype)


class EmbeddedFields(NamedTuple):
    object: int
    offset: int
    length: int
    compression: int
    etype: int
    lsize: int
    psize: int


def embedded_fields(rec: Rec | bytes, big_endian: bool) -> EmbeddedFields:
    h, o = _raw(rec), ">" if big_endian else "<"
    obj, offset, length = struct.unpack_from(o + "QQQ", h, 8)
    lsize, psize = struct.unpack_from(o + "II", h, 48)
    return EmbeddedFields(obj, offset, length, h[40], h[41], lsize, psize)


# -- buffered input ---------------------------------------------------------------------------


class BufferedSource:
    """read(n) / skip(n) / peek(n) over a raw read(n) and an optional forward seek(n).
    A merge reads a 312-byte header per record from every substream; served from one
    CHUNK-sized read instead of a system call each.  Large reads bypass the buffer.  The
    buffer belongs to the source, not to a RecordReader, so readers that take turns on one
    source (a package's substreams, one after another) never lose each other's bytes."""

    CHUNK = 4096
    """Small: a merge holds one source per link, and 4 KiB measured as fast as 256 KiB."""

    def __init__(
        self,
        read: Callable[[int], bytes],
        skip: Callable[[int], None] | None = None,
        ahead: bytes = b"",
    ) -> None:
        """ahead: bytes already read from the input (a format sniff), served first."""
        self._raw_read = read
        self._raw_skip = skip
        self._buf = ahead
        self._at = 0

    def read(self, n: int) -> bytes:
        """Up to n bytes; short at the end of the buffer or of the input (callers loop)."""
        buf, at = self._buf, self._at
        if at < len(buf):
            got = buf[at : at + n]
            self._at = at + len(got)
            return got
        if n >= self.CHUNK:
            return self._raw_read(n)
        self._buf = buf = self._raw_read(self.CHUNK)
        got = buf[:n]
        self._at = len(got)
        return got

    def skip(self, n: int) -> None:
        """Move past n bytes: within the buffer, else by the raw seek (or reading past)."""
        avail = len(self._buf) - self._at
        if n <= avail:
            self._at += n
            return
        n -= avail
        self._buf, self._at = b"", 0
        if self._raw_skip is not None:
            self._raw_skip(n)
            return
        while n > 0:
            got = self._raw_read(min(n, _SKIP_CHUNK))
            if not got:
                return  # the reader finds the end where it reads next
            n -= len(got)

    def peek(self, n: int) -> bytes:
        """The next n bytes (fewer at the end), read again by the next read()."""
        data = b""
        while len(data) < n and (more := self.read(n - len(data))):
            data += more
        self._buf, self._at = data + self._buf[self._at :], 0
        return data


# -- the reader -------------------------------------------------------------------------------


class RecordReader:
    """The records of one substream, in stream order.  `read(n)` returns up to n bytes
    (short only at end of input); `skip(n)`, when given, moves past n bytes without reading
    them (a seek).  `start` is this substream's offset in its file, for messages."""

    def __init__(
        self,
        read: Callable[[int], bytes],
        *,
        name: str,
        start: int = 0,
        big_endian: bool | None = None,
        skip: Callable[[int], None] | None = None,
    ) -> None:
        self.name = name
        self._read = read
        self._skip = skip
        self._pos = start
        self._unread = 0
        self._current: Rec | None = None
        self.end_header: bytes | None = None
        head = self._exact(RECORD_SIZE, "the BEGIN record")
        self.big_endian = self._byte_order(head, big_endian)
        self.begin: BeginHeader = parse_begin(head, self.big_endian)
        self.begin_header = head
        self.begin_payload = self._exact(self.begin.payload_len, "the BEGIN's nvlist")

    def _byte_order(self, head: bytes, wanted: bool | None) -> bool:
        if _u32(head, 0, False) != RecordType.BEGIN and _u32(head, 0, True) != RecordType.BEGIN:
            raise Refused(f"{self.name}: byte {self._pos - RECORD_SIZE}: no BEGIN record here")
        if _u64(head, 8, False) == MAGIC:
            big = False
        elif _u64(head, 8, True) == MAGIC:
            big = True
        else:
            raise Refused(f"{self.name}: byte {self._pos - RECORD_SIZE + 8}: BEGIN drr_magic wrong")
        if wanted is not None and big != wanted:
            order = "big" if big else "little"
            raise Refused(f"{self.name}: BEGIN drr_magic: {order}-endian, unlike the route")
        return big

    def where(self) -> int:
        """The offset of the next unread byte."""
        return self._pos

    def _exact(self, n: int, what: str) -> bytes:
        data = self._read(n) if n else b""
        if len(data) != n:
            data = self._fill(data, n, what)
        self._pos += n
        return data

    def _fill(self, data: bytes, n: int, what: str) -> bytes:
        """data, a short read, completed to n bytes (Refused where the input ends)."""
        while len(data) < n:
            more = self._read(n - len(data))
            if not more:
                raise Refused(
                    f"{self.name}: byte {self._pos + len(data)}: input ends inside {what} "
                    "(a substream without END: truncated, or a `zfs send --saved` partial)"
                )
            data += more
        return data

    def _discard(self) -> None:
        n, self._unread = self._unread, 0
        if not n:
            return
        if self._skip is not None:
            self._skip(n)
            self._pos += n
            return
        while n:
            step = min(n, _SKIP_CHUNK)
            self._exact(step, "a record's payload")
            n -= step

    def next(self) -> Rec | None:
        """The next record; the unread payload of the previous one is skipped.  None once
        END is read (its header is kept in end_header)."""
        if self.end_header is not None:
            return None
        if self._unread:
            self._discard()
        offset = self._pos
        head = self._read(RECORD_SIZE)  # the hot path of a merge: one call, no loop
        if len(head) != RECORD_SIZE:
            head = self._fill(head, RECORD_SIZE, "a record header")
        self._pos = offset + RECORD_SIZE
        kind, obj = _KIND_OBJ[self.big_endian].unpack_from(head)
        if kind == _END:
            self.end_header = head
            self._current = None
            return None
        if kind > _LAST or kind == _BEGIN:
            raise Refused(f"{self.name}: byte {offset}: drr_type {kind} where a record belongs")
        length = payload_length(kind, head, self.big_endian)
        if length > MAX_PAYLOAD:
            raise Refused(
                f"{self.name}: byte {offset}: {RecordType(kind).name} payload of {length} "
                f"bytes is over {MAX_PAYLOAD} (SPA_MAXBLOCKSIZE)"
            )
        self._current = rec = Rec(kind, head, offset, length, obj)
        self._unread = length
        return rec

    def payload(self) -> bytes:
        """The current record's payload; read once (a second call is an error)."""
        rec = self._current
        if rec is None or self._unread != rec.payload_len:
            raise RuntimeError(f"{self.name}: payload() without an unread current record")
        self._unread = 0
        return self._exact(rec.payload_len, f"the payload of the record at byte {rec.offset}")
