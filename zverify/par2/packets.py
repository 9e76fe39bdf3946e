"""Reading PAR2 recovery files (Parity Volume Set Specification 2.0) without trusting them.

zverify never computes parity itself: the par2 program does (zverify.par2.tool).  These files
are read here to tell, cheaply and with no par2 program, whether they are intact and what they
cover.  A PAR2 file is a sequence of packets, each with a 64-byte header (magic, length, the
MD5 of the rest of the packet, the recovery set's ID, the packet type) and a body.  A packet
whose MD5 does not match is damaged: it is skipped, the next magic is searched for byte by
byte (as par2 itself does), and everything else still counts.  Nothing here ever believes a
length before the packet's MD5 proved it, and no packet is held in memory whole (a recovery
packet is one block of the stream: up to hundreds of MB).

Proving a packet means hashing the length its header claims, and a damaged header may claim
the rest of the file: a file of such headers, one every 64 bytes, would cost its size squared
over 128 bytes of MD5.  So the bytes hashed per file are bounded (HASH_BUDGET): an intact
file is hashed once, a damaged one about once more per header whose length was corrupted;
a header beyond the budget is not proven, so its bytes count as damage.
"""

import hashlib
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field

MAGIC = b"PAR2\0PKT"
HEADER = struct.Struct("<8sQ16s16s16s")  # magic, length, MD5 of set ID..end, set ID, type
MAIN = b"PAR 2.0\0Main\0\0\0\0"
FILE_DESCRIPTION = b"PAR 2.0\0FileDesc"
RECOVERY_SLICE = b"PAR 2.0\0RecvSlic"
CHUNK = 1 << 20
SMALL_BODY = 1 << 20  # main and file-description packets are read whole up to this size
HASH_BUDGET = (3, 1 << 20)  # bytes of MD5 per file: at most 3 * its size + 1 MiB


@dataclass(frozen=True)
class DescribedFile:
    """What a file-description packet says of the file it protects."""

    file_id: bytes
    md5: bytes  # of the whole file
    md5_16k: bytes  # of its first 16 KiB
    length: int
    name: bytes


@dataclass
class Scan:
    """Every intact packet of one recovery set, over one or more PAR2 files."""

    slice_size: int | None = None  # set by an intact main packet
    set_id: bytes | None = None
    recovery_files: tuple[bytes, ...] = ()  # file IDs the main packet lists
    described: dict[bytes, DescribedFile] = field(default_factory=dict)
    exponents: set[int] = field(default_factory=set)  # one per intact recovery block
    damaged_bytes: int = 0  # bytes in no intact packet (or in one of another set)
    first_damage: tuple[str, int] | None = None  # (file, byte offset)
    other_sets: int = 0  # intact packets of another recovery set

    @property
    def recovery_blocks(self) -> int:
        return len(self.exponents)

    def source_blocks(self, length: int) -> int:
        assert self.slice_size
        return -(-length // self.slice_size)


def scan(files: list[tuple[str, int]]) -> Scan:
    """Read the PAR2 files (name, open fd) of one stream.  Packets of a set other than the
    first main packet's count as damage (they do not protect this stream).  Raises OSError
    when a file cannot be read."""
    packets = [(name, p) for name, fd in files for p in _packets(name, fd)]
    out = Scan()
    for _name, p in packets:
        if p.type == MAIN and out.set_id is None and p.body is not None:
            out.set_id = p.set_id
            _read_main(out, p.body)
    for name, p in packets:
        if p.damaged:
            _damage(out, name, p.offset, p.length)
        elif p.set_id != out.set_id:
            out.other_sets += 1
            _damage(out, name, p.offset, p.length)
        elif p.type == FILE_DESCRIPTION and p.body is not None:
            described = _read_description(p.body)
            if described is not None:
                out.described.setdefault(described.file_id, described)
        elif p.type == RECOVERY_SLICE and p.exponent is not None:
            out.exponents.add(p.exponent)
    return out


def _damage(out: Scan, name: str, offset: int, length: int) -> None:
    out.damaged_bytes += length
    if out.first_damage is None:
        out.first_damage = (name, offset)


@dataclass(frozen=True)
class _Packet:
    offset: int
    length: int
    damaged: bool
    set_id: bytes = b""
    type: bytes = b""
    body: bytes | None = None  # small packets of interest only
    exponent: int | None = None  # recovery slices only


def _packets(name: str, fd: int) -> Iterator[_Packet]:
    size = os.fstat(fd).st_size
    per_byte, extra = HASH_BUDGET
    budget = [per_byte * size + extra]  # what _packet_at may still hash
    at = 0
    while at < size:
        packet = _packet_at(fd, at, size, budget)
        if packet is None:
            following = _next_magic(fd, at + 1, size)
            yield _Packet(at, following - at, damaged=True)
            at = following
        else:
            yield packet
            at += packet.length


def _packet_at(fd: int, at: int, size: int, budget: list[int]) -> _Packet | None:
    """The intact packet that starts at byte at, or None (also when proving it would hash
    more than budget[0] bytes, which is reduced by what is hashed)."""
    head = os.pread(fd, HEADER.size, at)
    if len(head) < HEADER.size:
        return None
    magic, length, md5, set_id, kind = HEADER.unpack(head)
    if magic != MAGIC or length < HEADER.size or length % 4 or at + length > size:
        return None
    if length - 32 > budget[0]:
        return None
    budget[0] -= length - 32
    digest = hashlib.md5(head[32:], usedforsecurity=False)
    keep = kind in (MAIN, FILE_DESCRIPTION) and length - HEADER.size <= SMALL_BODY
    body = bytearray()
    first = b""
    done = HEADER.size
    while done < length:
        chunk = os.pread(fd, min(CHUNK, length - done), at + done)
        if not chunk:
            return None
        digest.update(chunk)
        if keep:
            body += chunk
        if not first:
            first = chunk[:4]
        done += len(chunk)
    if digest.digest() != md5:
        return None
    exponent = None
    if kind == RECOVERY_SLICE and len(first) == 4:
        exponent = struct.unpack("<I", first)[0]
    return _Packet(at, length, False, set_id, kind, bytes(body) if keep else None, exponent)


def _next_magic(fd: int, at: int, size: int) -> int:
    """The offset of the next packet magic at or after at, or size.  Reads grow from 4 KiB,
    so that finding a magic d bytes on costs O(d), not a whole CHUNK each time."""
    carry = b""
    want = 4096
    while at < size:
        chunk = os.pread(fd, want, at)
        if not chunk:
            return size
        window = carry + chunk
        found = window.find(MAGIC)
        if found >= 0:
            return at - len(carry) + found
        carry = window[-(len(MAGIC) - 1) :]
        at += len(chunk)
        want = min(2 * want, CHUNK)
    return size


def _read_main(out: Scan, body: bytes) -> None:
    if len(body) < 12:
        return
    slice_size, count = struct.unpack_from("<QI", body)
    ids = body[12 : 12 + 16 * count]
    if slice_size == 0 or slice_size % 4 or len(ids) != 16 * count:
        return
    out.slice_size = slice_size
    out.recovery_files = tuple(ids[i : i + 16] for i in range(0, len(ids), 16))


def _read_description(body: bytes) -> DescribedFile | None:
    if len(body) < 56:
        return None
    file_id, md5, md5_16k = body[:16], body[16:32], body[32:48]
    (length,) = struct.unpack_from("<Q", body, 48)
    return DescribedFile(file_id, md5, md5_16k, length, body[56:].rstrip(b"\0"))
