"""The one-field mutations of a real OpenZFS 2.1.11 full stream from adversarial-4.md C1.

Each is applied to tests/data/streams/full_fs_s1.zstream and re-signed (streamgen.resign), so
every checksum is valid and only the records say what is wrong.  `REFUSED` are the classes
zverify refuses, with the JSON code and the record each must name; `ACCEPTED` the classes
OpenZFS 2.1.11 receives into a readable dataset and that real senders write (dn_slots 0 of
0.6.5 senders, the CI_DATA flag of a case-insensitive dataset...), which zverify accepts.
`PANIC_OR_SPIN` are received and then take the host down: never received in the VM.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tools import streamgen as sg

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "streams" / "full_fs_s1.zstream"
TOGUID_AT = {0: 40, 1: 40, 2: 24, 3: 40, 4: 32, 5: 40, 7: 24, 8: 32, 9: 24}


@dataclass(frozen=True)
class Mutation:
    name: str
    data: bytes
    code: str  # the JSON problem code zverify must report ("" for an accepted one)
    record: int  # the index of the record it must name (-1: not checked)


def _records(d: bytes) -> list[sg.Rec]:
    return sg.walk(d)


def _u64(d: bytes | bytearray, at: int) -> int:
    return int(struct.unpack_from("<Q", d, at)[0])


def _first(recs: list[sg.Rec], rtype: int, d: bytes, obj_min: int = 0) -> int:
    return next(
        i for i, r in enumerate(recs) if r.type == rtype and _u64(d, r.offset + 8) >= obj_min
    )


def _set(d: bytes, at: int, fmt: str, value: int) -> bytes:
    buf = bytearray(d)
    struct.pack_into("<" + fmt, buf, at, value)
    return sg.resign(buf)


def _name(d: bytes, name: bytes) -> bytes:
    buf = bytearray(d)
    buf[56:312] = name.ljust(256, b"\0")[:256]
    return sg.resign(buf)


def _move_before(d: bytes, recs: list[sg.Rec], src: int, dst: int) -> bytes:
    parts = [d[r.offset : r.end] for r in recs]
    parts.insert(dst, parts.pop(src))
    return sg.resign(b"".join(parts))


def _drop(d: bytes, recs: list[sg.Rec], keep: Callable[[int, sg.Rec], bool]) -> bytes:
    return sg.resign(b"".join(d[r.offset : r.end] for i, r in enumerate(recs) if keep(i, r)))


def refused() -> list[Mutation]:
    d = FIXTURE.read_bytes()
    recs = _records(d)
    obj = _first(recs, sg.OBJECT, d, 3)  # OBJECT 3, a plain file
    at = recs[obj].offset
    write = obj + 2  # its WRITE (OBJECT, FREE past the end, WRITE)
    free = obj + 1
    fo = _first(recs, sg.FREEOBJECTS, d)
    zap = _first(recs, sg.OBJECT, d, 2)  # object 2: a directory (a ZAP)
    zap_write = zap + 2
    master = _first(recs, sg.OBJECT, d, 1)
    out = [
        Mutation("object-0", _set(d, at + 8, "Q", 0), "receive-rule", obj),
        Mutation("type-none", _set(d, at + 16, "I", 0), "receive-rule", obj),
        Mutation("blksz-3", _set(d, at + 24, "I", 3), "receive-rule", obj),
        Mutation("dn-slots-33", _set(d, at + 34, "B", 33), "receive-rule", obj),
        Mutation("checksum-99", _set(d, at + 32, "B", 99), "receive-rule", obj),
        Mutation("compress-99", _set(d, at + 33, "B", 99), "receive-rule", obj),
        Mutation(
            "write-undeclared",
            _set(d, recs[write].offset + 8, "Q", 5000),
            "receive-rule",
            write,
        ),
        Mutation("write-before-object", _move_before(d, recs, write, obj), "receive-rule", obj),
        Mutation(
            "free-undeclared", _set(d, recs[free].offset + 8, "Q", 5000), "receive-rule", free
        ),
        Mutation(
            "freeobjects-overflow",
            _set(d, recs[fo].offset + 16, "Q", (1 << 64) - 1),
            "receive-rule",
            fo,
        ),
        Mutation("objset-type-0", _set(d, 32, "I", 0), "receive-rule", 0),
        Mutation("toname-no-at", _name(d, b"tank/b"), "receive-rule", 0),
        Mutation("toname-255", _name(d, b"tank/" + b"b" * 250), "receive-rule", 0),
        Mutation("toname-empty-snap", _name(d, b"tank/b@"), "receive-rule", 0),
        Mutation("toname-bad-chars", _name(d, b"tank/b@0*?"), "receive-rule", 0),
        Mutation("feature-longname", _set(d, 16, "Q", _u64(d, 16) | (1 << 30)), "", 0),
        # feature bit 30 (versioninfo bit 32): 2.1 reads 30 bits and ignores it, releases
        # from 2.2 read 56 and refuse it; no release defines it
        Mutation("feature-bit-30", _set(d, 16, "Q", _u64(d, 16) | (1 << 32)), "unknown-feature", 0),
        # received by OpenZFS 2.1.11, then harmful: refused by zverify all the same
        Mutation("objset-volume", _set(d, 32, "I", 3), "receive-rule", master),
        Mutation(
            "zap-write-2^50",
            _set(d, recs[zap_write].offset + 24, "Q", 1 << 50),
            "receive-rule",
            zap_write,
        ),
        Mutation(
            "master-node-removed",
            _drop(d, recs, lambda i, r: not (master <= i < master + 4)),
            "receive-rule",
            -1,
        ),
        Mutation("toguid-0", _toguid(d, recs, 0), "receive-rule", 0),
    ]
    # LONGNAME is feature 1 << 28, versioninfo bit 30: the code says which rule
    return [m if m.code else Mutation(m.name, m.data, "unsupported-feature", 0) for m in out]


def _toguid(d: bytes, recs: list[sg.Rec], guid: int) -> bytes:
    buf = bytearray(d)
    for r in recs:
        if r.type in TOGUID_AT:
            struct.pack_into("<Q", buf, r.offset + TOGUID_AT[r.type], guid)
    return sg.resign(buf)


PANIC_OR_SPIN = ("objset-volume", "zap-write-2^50")
"""Received by OpenZFS 2.1.11, then `zfs list` panics the kernel / mount spins forever."""


def accepted() -> list[Mutation]:
    d = FIXTURE.read_bytes()
    recs = _records(d)
    obj = _first(recs, sg.OBJECT, d, 3)
    at = recs[obj].offset
    write = obj + 2
    fo = _first(recs, sg.FREEOBJECTS, d)
    return [
        Mutation("dn-slots-0", _set(d, at + 34, "B", 0), "", -1),
        Mutation("nlevels-0", _set(d, at + 49, "B", 0), "", -1),
        Mutation("ci-data-flag", _set(d, 36, "I", struct.unpack_from("<I", d, 36)[0] | 2), "", -1),
        Mutation("object-twice", _move_copy(d, recs, obj), "", -1),
        Mutation("freeobjects-late", _move_before(d, recs, fo, len(recs) - 2), "", -1),
        Mutation("write-type-mismatch", _set(d, recs[write].offset + 16, "I", 20), "", -1),
    ]


def _move_copy(d: bytes, recs: list[sg.Rec], i: int) -> bytes:
    parts = [d[r.offset : r.end] for r in recs]
    parts.insert(i + 1, parts[i])
    return sg.resign(b"".join(parts))
