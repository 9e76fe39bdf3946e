"""The logical state digest of a snapshot (docs/design/consolidate.md, "Digest").

Fed by chainstate.merge, so one definition serves a chain, a real `zfs send` full and a
synthetic full.  Per live object, in object order, BLAKE3 (the C core's) over: the object
number and the attributes a receive gives the dnode (type, bonus type, block size, bonus
length, dnode slots, checksum, compression, spill flag), the bonus bytes, the data as
(offset, bytes) in 128 KiB-aligned pieces decompressed from the wire form, all-zero pieces
left out (a hole reads as zeros), then the spill block.  The snapshot digest is BLAKE3
over the (object, object digest) pairs.  Not covered: toguid and names, compression on
the wire, -e, record aggregation, the -L split, nlevels/indblkshift/maxblkid (the
receiver decides those, and a real full and a chain may differ there).
"""

from __future__ import annotations

import itertools
import struct
import zlib
from collections.abc import Iterable, Iterator

from zverify import hashing
from zverify.sendstream.chainstate import StateRecord
from zverify.sendstream.format import RecordType
from zverify.sendstream.records import (
    DRR_OBJECT_SPILL,
    Refused,
    embedded_fields,
    object_fields,
    spill_fields,
    write_fields,
)

PIECE = 128 << 10
"""SPA_OLD_MAXBLOCKSIZE: a -L block and its no-L split give the same pieces."""

SPILL_MARK = (1 << 64) - 1
"""Where the spill block goes in an object's hash: after every data offset."""

_ZERO = bytes(PIECE)

_LZJB, _GZIP1, _GZIP9, _ZLE, _LZ4, _ZSTD = 3, 5, 13, 14, 15, 16
_PLAIN = (0, 2)  # inherit/off as drr_compressiontype: the payload is the block


def _u32be(b: bytes) -> int:
    return int.from_bytes(b[:4], "big")


def _lz4(data: bytes, size: int) -> bytes:
    import lz4.block

    n = _u32be(data)  # lz4_decompress_zfs: a 4-byte big-endian length, then a block
    return bytes(lz4.block.decompress(data[4 : 4 + n], uncompressed_size=size))


def _zstd(data: bytes, size: int) -> bytes:
    import zstandard

    # zfs_zstdhdr_t (c_len, version/level, both big-endian), then a frame written with
    # ZSTD_f_zstd1_magicless (zfs_zstd.c): the 4-byte magic is put back before decoding.
    n = _u32be(data)
    frame = b"\x28\xb5\x2f\xfd" + data[8 : 8 + n]
    return bytes(zstandard.ZstdDecompressor().decompressobj().decompress(frame))


def _zle(data: bytes, size: int, n: int = 64) -> bytes:
    out, i = bytearray(), 0
    while i < len(data) and len(out) < size:
        run = 1 + data[i]
        i += 1
        if run <= n:
            out += data[i : i + run]
            i += run
        else:
            out += bytes(run - n)
    return bytes(out)


def _lzjb(data: bytes, size: int) -> bytes:
    out, i, copymap, copymask = bytearray(), 0, 0, 1 << 7
    while len(out) < size:
        copymask <<= 1
        if copymask == 1 << 8:
            copymask, copymap = 1, data[i]
            i += 1
        if copymap & copymask:
            mlen = (data[i] >> 2) + 3
            back = ((data[i] << 8) | data[i + 1]) & 0x3FF
            i += 2
            start = len(out) - back
            if start < 0:
                raise ValueError("lzjb back-reference before the block")
            for k in range(min(mlen, size - len(out))):
                out.append(out[start + k])
        else:
            out.append(data[i])
            i += 1
    return bytes(out)


def decompress(kind: int, data: bytes, size: int) -> bytes:
    """A block of `size` logical bytes from its on-wire form (zio_compress enum)."""
    if kind in _PLAIN:
        return data
    try:
        if kind == _LZ4:
            out = _lz4(data, size)
        elif kind == _ZSTD:
            out = _zstd(data, size)
        elif _GZIP1 <= kind <= _GZIP9:
            out = zlib.decompress(data)
        elif kind == _ZLE:
            out = _zle(data, size)
        elif kind == _LZJB:
            out = _lzjb(data, size)
        else:
            raise Refused(f"compression {kind}: unknown to the digest, not guessed")
    except Refused:
        raise
    except Exception as err:
        raise Refused(f"compression {kind}: the block does not decompress ({err})") from err
    if len(out) > size:
        raise Refused(f"compression {kind}: {len(out)} bytes where the block holds {size}")
    return out.ljust(size, b"\0")


def _block(rec: StateRecord, kind: int, big: bool) -> tuple[int, bytes]:
    """(offset, logical bytes) of a WRITE or WRITE_EMBEDDED; a refusal names where."""
    if kind == RecordType.WRITE:
        w = write_fields(rec.header, big)
        obj, offset, comp, size, payload = (
            w.object,
            w.offset,
            w.compressiontype,
            w.logical_size,
            rec.payload,
        )
    else:
        e = embedded_fields(rec.header, big)
        obj, offset, comp, size, payload = (
            e.object,
            e.offset,
            e.compression,
            e.lsize,
            rec.payload[: e.psize],
        )
    if comp in _PLAIN and kind == RecordType.WRITE:
        return offset, payload
    try:
        data = decompress(comp, payload, size)
    except Refused as err:
        name = RecordType(kind).name
        raise Refused(f"{name} drr_object {obj} drr_offset {offset}: {err}") from err
    if kind == RecordType.WRITE_EMBEDDED:
        data = data.ljust(e.length, b"\0")
    return offset, data


def _pieces(offset: int, data: bytes) -> Iterator[tuple[int, bytes]]:
    """(offset, bytes) of data's 128 KiB-aligned pieces that are not all zero."""
    pos = 0
    while pos < len(data):
        at = offset + pos
        step = min(len(data) - pos, PIECE - at % PIECE)
        piece = data[pos : pos + step]
        if piece != (_ZERO if step == PIECE else bytes(step)):  # a memcmp, not a scan
            yield at, piece
        pos += step


def _hash_data(h: object, offset: int, data: bytes) -> None:
    update = h.update  # type: ignore[attr-defined]
    for at, piece in _pieces(offset, data):
        update(struct.pack("<QQ", at, len(piece)))
        update(piece)


def state_objects(records: Iterable[StateRecord], big_endian: bool) -> Iterator[tuple[int, str]]:
    """(object number, hex BLAKE3 of the object's logical state) per live object, in order."""
    current: int | None = None
    h = None
    for rec in records:
        kind = int.from_bytes(rec.header[:4], "big" if big_endian else "little")
        if kind == RecordType.OBJECT:
            if h is not None and current is not None:
                yield current, h.hexdigest()
            f = object_fields(rec.header, big_endian)
            current, h = f.object, hashing.blake3_hasher()
            h.update(
                struct.pack(
                    "<QIIIIBBBB",
                    f.object,
                    f.type,
                    f.bonustype,
                    f.blksz,
                    f.bonuslen,
                    f.dn_slots or 1,
                    f.checksumtype,
                    f.compress,
                    f.flags & DRR_OBJECT_SPILL,
                )
            )
            h.update(rec.payload[: f.bonuslen])
        elif h is None:
            raise Refused(f"a {RecordType(kind).name} record before any OBJECT")
        elif kind in (RecordType.WRITE, RecordType.WRITE_EMBEDDED):
            offset, data = _block(rec, kind, big_endian)
            _hash_data(h, offset, data)
        elif kind == RecordType.SPILL:
            sp = spill_fields(rec.header, big_endian)
            h.update(struct.pack("<QQ", SPILL_MARK, sp.length) + rec.payload[: sp.length])
    if h is not None and current is not None:
        yield current, h.hexdigest()


def state_digest(records: Iterable[StateRecord], big_endian: bool) -> str:
    """ "blake3:<hex>" over every live object's logical state."""
    h = hashing.blake3_hasher()
    for obj, digest in state_objects(records, big_endian):
        h.update(struct.pack("<Q", obj) + bytes.fromhex(digest))
    return "blake3:" + h.hexdigest()


ATTRIBUTES = -1
"""state_pieces' offset for an object's attributes and bonus; SPILL_MARK is its spill."""


def _hex(*parts: bytes) -> str:
    h = hashing.blake3_hasher()
    for part in parts:
        h.update(part)
    return str(h.hexdigest())


def state_pieces(
    records: Iterable[StateRecord], big_endian: bool
) -> Iterator[tuple[int, int, str]]:
    """(object, offset, hex BLAKE3) per piece of the state, in order: the attributes and
    bonus at offset ATTRIBUTES, each non-zero data piece, the spill at SPILL_MARK.  For
    naming where two states differ (first_difference); state_objects is the fast path."""
    current: int | None = None
    for rec in records:
        kind = int.from_bytes(rec.header[:4], "big" if big_endian else "little")
        if kind == RecordType.OBJECT:
            f = object_fields(rec.header, big_endian)
            current = f.object
            attrs = (f.type, f.bonustype, f.blksz, f.bonuslen, f.dn_slots or 1)
            more = (f.checksumtype, f.compress, f.flags & DRR_OBJECT_SPILL)
            head = struct.pack("<IIIIBBBB", *attrs, *more)
            yield current, ATTRIBUTES, _hex(head, rec.payload[: f.bonuslen])
        elif current is None:
            raise Refused(f"a {RecordType(kind).name} record before any OBJECT")
        elif kind in (RecordType.WRITE, RecordType.WRITE_EMBEDDED):
            offset, data = _block(rec, kind, big_endian)
            for at, piece in _pieces(offset, data):
                yield current, at, _hex(piece)
        elif kind == RecordType.SPILL:
            sp = spill_fields(rec.header, big_endian)
            yield current, SPILL_MARK, _hex(rec.payload[: sp.length])


def first_difference(
    left: Iterable[tuple[int, int, str]], right: Iterable[tuple[int, int, str]]
) -> tuple[int, int] | None:
    """The first (object, offset) where two state_pieces streams differ, or None."""
    end = (1 << 64, 0, "")
    for a, b in itertools.zip_longest(left, right, fillvalue=end):
        if a != b:
            return min(a[:2], b[:2])
    return None


def place(obj: int, offset: int) -> str:
    """Words for a first_difference: `object 7 offset 131072`, its attributes or spill."""
    if offset == ATTRIBUTES:
        return f"object {obj} (attributes or bonus buffer)"
    if offset == SPILL_MARK:
        return f"object {obj} (spill block)"
    return f"object {obj} offset {offset}"
