"""Send-stream tools for the tests, the fuzz targets and the benchmarks, written
independently of zverify's parser.

* `fletcher4`: a plain-Python fletcher-4 (slow, obviously correct);
* `StreamBuilder`: builds small but well-formed substreams and compound packages
  (either byte order) with correct per-record trailers and END checksums;
* `xdr_nvlist` / `native_nvlist`: packed-nvlist encoders for headers and resume tokens;
* `walk`: splits a stream into records from the payload rules alone, so tests can compute
  expected offsets without trusting the code under test;
* `resign` and `byteswap`: rewrite checksums after an edit, or turn a little-endian stream
  into the big-endian stream a big-endian sender would have written.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

DRR = 312
MAGIC = 0x2F5BACBAC
M64 = (1 << 64) - 1
BEGIN, OBJECT, FREEOBJECTS, WRITE, FREE, END = 0, 1, 2, 3, 4, 5
WRITE_BYREF, SPILL, WRITE_EMBEDDED, OBJECT_RANGE, REDACT = 6, 7, 8, 9, 10


def fletcher4(data: bytes, state: tuple[int, ...] = (0, 0, 0, 0), big: bool = False) -> tuple:
    a, b, c, d = state
    n = len(data) // 4 * 4
    for (f,) in struct.iter_unpack(">I" if big else "<I", data[:n]):
        a = (a + f) & M64
        b = (b + a) & M64
        c = (c + b) & M64
        d = (d + c) & M64
    return (a, b, c, d)


# -- nvlist encoders ---------------------------------------------------------------------


def _xdr_str(s: bytes) -> bytes:
    return struct.pack(">I", len(s)) + s + b"\0" * (-len(s) % 4)


def _xdr_pair(name: str, value: object) -> bytes:
    if value is True:
        kind, nelem, body = 1, 0, b""
    elif isinstance(value, int):
        kind, nelem, body = 8, 1, struct.pack(">Q", value)
    elif isinstance(value, str):
        kind, nelem, body = 9, 1, _xdr_str(value.encode())
    elif isinstance(value, dict):
        kind, nelem, body = 19, 1, _xdr_list(value)
    else:
        raise TypeError(value)
    rest = _xdr_str(name.encode()) + struct.pack(">ii", kind, nelem) + body
    # decoded_size only has to be non-zero for zverify's decoder
    return struct.pack(">ii", 8 + len(rest), 64) + rest


def _xdr_list(nv: dict) -> bytes:
    return struct.pack(">iI", 0, 1) + b"".join(_xdr_pair(k, v) for k, v in nv.items()) + bytes(8)


def xdr_nvlist(nv: dict) -> bytes:
    """Pack nv (values: True, int as uint64, str, dict) with NV_ENCODE_XDR."""
    return bytes([1, 1, 0, 0]) + _xdr_list(nv)


def _native_pairs(nv: dict, order: str) -> bytes:
    out = b""
    for name, value in nv.items():
        raw = name.encode() + b"\0"
        head = 16 + len(raw)
        pad = b"\0" * (-head % 8)
        after = b""
        if value is True:
            kind, nelem, body = 1, 0, b""
        elif isinstance(value, int):
            kind, nelem, body = 8, 1, struct.pack(order + "Q", value)
        elif isinstance(value, str):
            kind, nelem, body = 9, 1, value.encode() + b"\0"
        elif isinstance(value, bytes):
            kind, nelem, body = 26, len(value), value
        elif isinstance(value, dict):
            kind, nelem, body = 19, 1, bytes(24)
            after = _native_pairs(value, order) + bytes(4)
        else:
            raise TypeError(value)
        body += b"\0" * (-len(body) % 8)
        size = head + len(pad) + len(body)
        out += struct.pack(order + "ihhii", size, len(raw), 0, nelem, kind) + raw + pad + body
        out += after
    return out


def native_nvlist(nv: dict, little: bool = True) -> bytes:
    """Pack nv (values: True, int, str, bytes, dict) with NV_ENCODE_NATIVE."""
    order = "<" if little else ">"
    head = bytes([0, 1 if little else 0, 0, 0]) + struct.pack(order + "iI", 0, 1)
    return head + _native_pairs(nv, order) + bytes(4)


def resume_token(nv: dict, big: bool = False) -> str:
    packed = native_nvlist(nv)
    comp = zlib.compress(packed, 6)
    return f"1-{fletcher4(comp, big=big)[0]:x}-{len(packed):x}-{comp.hex()}"


# -- building streams -----------------------------------------------------------------------


class StreamBuilder:
    """Appends records with the checksums a sender would write."""

    def __init__(self, big: bool = False) -> None:
        self.big = big
        self.o = ">" if big else "<"
        self.data = bytearray()
        self.state = (0, 0, 0, 0)

    def _emit(self, head: bytes, payload: bytes = b"", is_begin: bool = False) -> None:
        head = head.ljust(DRR if is_begin else 280, b"\0")
        if is_begin:
            self.state = fletcher4(head, big=self.big)
            self.data += head
        else:
            self.state = fletcher4(head, self.state, self.big)
            trailer = struct.pack(self.o + "4Q", *self.state)
            self.state = fletcher4(trailer, self.state, self.big)
            self.data += head + trailer
        if payload:
            self.state = fletcher4(payload, self.state, self.big)
            self.data += payload

    def begin(
        self,
        toname: str,
        toguid: int,
        fromguid: int = 0,
        *,
        features: int = 0x30004,  # SA_SPILL, EMBED_DATA, LZ4: a plain `zfs send` of 2.1
        flags: int = 0xC,
        hdrtype: int = 1,
        payload: bytes = b"",
        created: int = 1_700_000_000,
    ) -> None:
        head = (
            struct.pack(
                self.o + "IIQQQIIQQ",
                BEGIN,
                len(payload),
                MAGIC,
                hdrtype | (features << 2),
                created,
                2 if hdrtype == 1 else 0,
                flags,
                toguid,
                fromguid,
            )
            + toname.encode()
        )
        self._emit(head, payload, is_begin=True)
        self.toguid = toguid

    def object(self, obj: int, bonus: bytes = b"b" * 13, otype: int = 19) -> None:
        """otype: DMU_OT_PLAIN_FILE_CONTENTS (19) with an SA bonus (44); 21 for a master node."""
        head = struct.pack(
            self.o + "IIQIIIIBBBBIQ",
            OBJECT,
            0,
            obj,
            otype,
            44,
            131072,
            len(bonus),
            7,
            15,
            1,
            0,
            0,
            self.toguid,
        )
        self._emit(head, bonus + b"\0" * (-len(bonus) % 8))

    def write(self, obj: int, offset: int, data: bytes) -> None:
        head = struct.pack(
            self.o + "IIQIIQQQBBB5x", WRITE, 0, obj, 19, 0, offset, len(data), self.toguid, 2, 0, 0
        )
        self._emit(head, data)

    def free(self, obj: int, offset: int, length: int) -> None:
        self._emit(struct.pack(self.o + "IIQQQQ", FREE, 0, obj, offset, length, self.toguid))

    def freeobjects(self, first: int, num: int) -> None:
        self._emit(struct.pack(self.o + "IIQQQ", FREEOBJECTS, 0, first, num, self.toguid))

    def embedded(self, obj: int, offset: int, data: bytes) -> None:
        head = struct.pack(
            self.o + "IIQQQQBB6xII",
            WRITE_EMBEDDED,
            0,
            obj,
            offset,
            4096,
            self.toguid,
            15,
            0,
            4096,
            len(data),
        )
        self._emit(head, data + b"\0" * (-len(data) % 8))

    def end(self, toguid: int | None = None, zero_trailer: bool = False) -> None:
        head = struct.pack(
            self.o + "II4QQ", END, 0, *self.state, self.toguid if toguid is None else toguid
        )
        if zero_trailer:  # libzfs-written ENDs
            self.data += head.ljust(DRR, b"\0")
        else:
            self._emit(head)
        self.state = (0, 0, 0, 0)

    def substream(
        self, toname: str, toguid: int, fromguid: int = 0, nwrites: int = 3, **begin_kw: object
    ) -> None:
        """The records a receive takes (the OBJECT of each object first, object 1 the
        master node of a filesystem: zv_records.c)."""
        self.begin(toname, toguid, fromguid, **begin_kw)  # type: ignore[arg-type]
        self.object(1, otype=21)
        self.object(2)
        for i in range(nwrites):
            self.write(2, i * 512, bytes((i * 7 + j) & 0xFF for j in range(512)))
        self.embedded(2, nwrites * 512, b"tiny-embedded-block")
        self.free(2, nwrites * 512, M64)
        self.freeobjects(4, 10)
        self.end()

    def package_header(self, nv: dict | None, toname: str = "pool/fs@snap") -> None:
        """toname: what libzfs writes, `<top dataset>@<tosnap>` (the last snapshot sent)."""
        payload = xdr_nvlist(nv) if nv is not None else b""
        self.begin(toname, 0, 0, features=4, flags=0, hdrtype=2, payload=payload, created=0)
        self.end(toguid=0, zero_trailer=True)

    def final_end(self) -> None:
        self.data += struct.pack(self.o + "I", END).ljust(DRR, b"\0")


def full_stream(big: bool = False) -> bytes:
    b = StreamBuilder(big)
    b.substream("pool/fs@a", 0x1111, 0)
    return bytes(b.data)


def package(chain: list[tuple[str, int, int]], header: dict | None = None) -> bytes:
    """A -I/-R-shaped package with one substream per (toname, toguid, fromguid)."""
    b = StreamBuilder()
    b.package_header(header, chain[-1][0] if chain else "pool/fs@snap")
    for name, to, frm in chain:
        b.substream(name, to, frm)
    b.final_end()
    return bytes(b.data)


# -- reading streams independently --------------------------------------------------------


@dataclass(frozen=True)
class Rec:
    offset: int
    type: int
    payload: int  # payload length

    @property
    def end(self) -> int:
        return self.offset + DRR + self.payload


def _payload(h: bytes, rtype: int, o: str) -> int:
    u32 = lambda off: struct.unpack_from(o + "I", h, off)[0]  # noqa: E731
    u64 = lambda off: struct.unpack_from(o + "Q", h, off)[0]  # noqa: E731
    if rtype == BEGIN:
        return u32(4)
    if rtype == OBJECT:
        return u32(36) or (u32(28) + 7) // 8 * 8
    if rtype == WRITE:
        return u64(96) if h[50] else u64(32)
    if rtype == SPILL:
        return u64(40) or u64(16)
    if rtype == WRITE_EMBEDDED:
        return (u32(52) + 7) // 8 * 8
    return 0


def byte_order(data: bytes) -> str:
    return "<" if struct.unpack_from("<Q", data, 8)[0] == MAGIC else ">"


def walk(data: bytes) -> list[Rec]:
    """Every record of a well-formed stream, by offset."""
    o, pos, out = byte_order(data), 0, []
    while pos + DRR <= len(data):
        h = data[pos : pos + DRR]
        rtype = struct.unpack_from(o + "I", h, 0)[0]
        rec = Rec(pos, rtype, _payload(h, rtype, o))
        out.append(rec)
        pos = rec.end
    assert pos == len(data), "walk() needs a well-formed stream"
    return out


def resign(data: bytes | bytearray) -> bytes:
    """Recompute every non-zero trailer and every END checksum, in the stream's byte order."""
    buf, o = bytearray(data), byte_order(data)
    big, st = o == ">", (0, 0, 0, 0)
    for r in walk(bytes(buf)):
        h = r.offset
        if r.type == BEGIN:
            st = fletcher4(bytes(buf[h : h + DRR]), big=big)
        else:
            if r.type == END:
                struct.pack_into(o + "4Q", buf, h + 8, *st)
            st = fletcher4(bytes(buf[h : h + 280]), st, big)
            if any(buf[h + 280 : h + DRR]):
                struct.pack_into(o + "4Q", buf, h + 280, *st)
            st = fletcher4(bytes(buf[h + 280 : h + DRR]), st, big)
        st = fletcher4(bytes(buf[h + DRR : r.end]), st, big)
        if r.type == END:
            st = (0, 0, 0, 0)
    return bytes(buf)


# Integer fields per record type (offset, size) after the common type/payloadlen words.
_FIELDS = {
    BEGIN: [(8, 8), (16, 8), (24, 8), (32, 4), (36, 4), (40, 8), (48, 8)],
    OBJECT: [(8, 8), (16, 4), (20, 4), (24, 4), (28, 4), (36, 4), (40, 8), (56, 8)],
    FREEOBJECTS: [(8, 8), (16, 8), (24, 8)],
    WRITE: [(8, 8), (16, 4), (24, 8), (32, 8), (40, 8), (88, 8), (96, 8)],
    FREE: [(8, 8), (16, 8), (24, 8), (32, 8)],
    END: [(8, 8), (16, 8), (24, 8), (32, 8), (40, 8)],
    WRITE_BYREF: [(8, 8), (16, 8), (24, 8), (32, 8), (40, 8), (48, 8), (56, 8), (104, 8)],
    SPILL: [(8, 8), (16, 8), (24, 8), (40, 8), (84, 4)],
    WRITE_EMBEDDED: [(8, 8), (16, 8), (24, 8), (32, 8), (48, 4), (52, 4)],
    OBJECT_RANGE: [(8, 8), (16, 8), (24, 8)],
    REDACT: [(8, 8), (16, 8), (24, 8), (32, 8)],
}


def byteswap(data: bytes) -> bytes:
    """The opposite-endian twin of a stream: every header integer swapped, then re-signed."""
    assert byte_order(data) == "<"
    buf = bytearray(data)
    for r in walk(data):
        h = r.offset
        fields = [(0, 4), (4, 4), *_FIELDS[r.type]]
        if r.type != BEGIN:
            fields += [(280, 8), (288, 8), (296, 8), (304, 8)]
        for off, size in fields:
            buf[h + off : h + off + size] = buf[h + off : h + off + size][::-1]
    return resign(bytes(buf))


# -- records for chain-state tests (the chain-state engine, zverify.sendstream.chainstate) --


def object_record(
    b: StreamBuilder,
    obj: int,
    *,
    blksz: int = 4096,
    dn_slots: int = 0,
    flags: int = 0,
    bonus: bytes = b"b" * 13,
    otype: int = 19,
    bonustype: int = 44,
    trunc_blocks: int | None = None,
) -> None:
    """An OBJECT with every attribute chosen, then (trunc_blocks given) the FREE to END a
    sender writes after it: offset (maxblkid + 1) * blksz, length UINT64_MAX."""
    head = struct.pack(
        b.o + "IIQIIIIBBBBIQ",
        OBJECT, 0, obj, otype, bonustype, blksz, len(bonus), 7, 15, dn_slots, flags, 0, b.toguid,
    )  # fmt: skip
    b._emit(head, bonus + b"\0" * (-len(bonus) % 8))
    if trunc_blocks is not None:
        b.free(obj, trunc_blocks * blksz, M64)


def write_record(
    b: StreamBuilder, obj: int, offset: int, payload: bytes, *, compression: int = 0, lsize: int = 0
) -> None:
    """A WRITE; compression (zio enum, 15 = lz4) makes payload the compressed bytes of a
    block of lsize logical bytes."""
    logical = lsize if compression else len(payload)
    csize = len(payload) if compression else 0
    head = struct.pack(
        b.o + "IIQIIQQQBBB5x40xQ",
        WRITE, 0, obj, 19, 0, offset, logical, b.toguid, 2, 0, compression, csize,
    )  # fmt: skip
    b._emit(head, payload)


def spill_record(b: StreamBuilder, obj: int, data: bytes, flags: int = 0) -> None:
    """A SPILL of data (flags 4: DRR_SPILL_UNMODIFIED); drr_type DMU_OT_SA (44)."""
    head = bytearray(
        struct.pack(b.o + "IIQQQBB6xQ", SPILL, 0, obj, len(data), b.toguid, flags, 0, 0)
    )
    head = head.ljust(88, b"\0")
    struct.pack_into(b.o + "I", head, 84, 44)
    b._emit(bytes(head), data)


def lz4_zfs(data: bytes) -> bytes:
    """A block as ZFS's lz4 writes it: a 4-byte big-endian length, then an lz4 block."""
    import lz4.block

    comp = lz4.block.compress(data, store_size=False)
    return struct.pack(">I", len(comp)) + comp


def embedded_record(b: StreamBuilder, obj: int, offset: int, data: bytes, blksz: int) -> None:
    """A WRITE_EMBEDDED of a block of blksz logical bytes whose start is data (lz4)."""
    payload = lz4_zfs(data.ljust(blksz, b"\0"))
    head = struct.pack(
        b.o + "IIQQQQBB6xII", WRITE_EMBEDDED, 0, obj, offset, blksz, b.toguid, 15, 0, blksz,
        len(payload),
    )  # fmt: skip
    b._emit(head, payload + b"\0" * (-len(payload) % 8))
