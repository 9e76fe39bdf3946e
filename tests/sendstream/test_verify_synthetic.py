"""verify_stream on streams built by tools/streamgen.py (no ZFS needed).

Expected offsets come from walking the records independently (streamgen.walk) or from
the position of the mutation, never from the code under test.
"""

from __future__ import annotations

import struct

import pytest

from tools.streamgen import (
    DRR,
    END,
    WRITE,
    StreamBuilder,
    full_stream,
    package,
    resign,
    walk,
    xdr_nvlist,
)


def codes(report) -> list[str]:
    return [p.code for p in report.problems]


@pytest.mark.parametrize("big", [False, True])
def test_full_stream_is_valid(check, big: bool) -> None:
    data = full_stream(big)
    r = check(data)
    assert r.valid, r.problems
    assert r.big_endian is big
    assert r.size == len(data) and r.records == len(walk(data))
    (sub,) = r.substreams
    assert (sub.toname, sub.toguid, sub.fromguid, sub.kind) == ("pool/fs@a", 0x1111, 0, "full")
    assert sub.counts == {
        "BEGIN": 1,
        "OBJECT": 2,
        "WRITE": 3,
        "WRITE_EMBEDDED": 1,
        "FREE": 1,
        "FREEOBJECTS": 1,
        "END": 1,
    }
    assert sub.stream_bytes == len(data)


def test_package_is_valid_and_described(check) -> None:
    header = {
        "tosnap": "c",
        "fromsnap": "a",
        "fss": {"0x99": {"name": "pool/fs", "snaps": {"a": 1, "b": 2, "c": 3}}},
    }
    data = package([("pool/fs@b", 2, 1), ("pool/fs@c", 3, 2)], header)
    r = check(data)
    assert r.valid, r.problems
    assert r.kind == "replication package"
    assert [(s.toguid, s.fromguid) for s in r.substreams] == [(2, 1), (3, 2)]
    (ds,) = r.header.datasets
    assert (ds.name, ds.guid, ds.snapshots) == ("pool/fs", 0x99, {"a": 1, "b": 2, "c": 3})
    assert r.records == len(walk(data))


def test_incremental_package_without_header_nvlist(check) -> None:
    r = check(package([("pool/fs@b", 2, 1), ("pool/fs@c", 3, 2)]))
    assert r.valid and r.kind == "incremental package"


def test_broken_guid_linkage_in_package(check) -> None:
    data = package([("pool/fs@b", 2, 1), ("pool/fs@c", 3, 77)])
    r = check(data)
    assert codes(r) == ["guid"]
    second_begin = [x for x in walk(data) if x.type == 0][2]
    assert r.problems[0].offset == second_begin.offset


def test_header_guid_disagreement(check) -> None:
    header = {
        "tosnap": "c",
        "fromsnap": "a",
        "fss": {"0x9": {"name": "pool/fs", "snaps": {"a": 1, "b": 2, "c": 4}}},
    }
    r = check(package([("pool/fs@b", 2, 1), ("pool/fs@c", 3, 2)], header))
    assert codes(r) == ["guid"]
    wrong_from = {
        "tosnap": "c",
        "fromsnap": "a",
        "fss": {"0x9": {"name": "pool/fs", "snaps": {"a": 5, "b": 2, "c": 3}}},
    }
    assert codes(check(package([("pool/fs@b", 2, 1), ("pool/fs@c", 3, 2)], wrong_from))) == ["guid"]


def _first(data: bytes, rtype: int):
    return next(r for r in walk(data) if r.type == rtype)


def _flip(data: bytes, pos: int) -> bytes:
    buf = bytearray(data)
    buf[pos] ^= 0x40
    return bytes(buf)


@pytest.mark.parametrize("where", ["payload", "header", "trailer", "end-checksum"])
def test_flipped_byte_is_located(check, where: str) -> None:
    data = full_stream()
    w = _first(data, WRITE)
    pos = {
        "payload": w.offset + DRR + 100,
        "header": w.offset + 24,  # drr_offset
        "trailer": w.offset + 290,
        "end-checksum": _first(data, END).offset + 12,
    }[where]
    r = check(_flip(data, pos))
    assert not r.valid and r.problems[0].code == "checksum"
    span = r.problems[0].span
    assert span is not None and span[0] <= pos < span[1]


def test_zero_trailers_rely_on_end_checksum(check) -> None:
    # 0.6-style stream: no per-record trailers; damage is found by END alone.
    data = bytearray(full_stream())
    for r in walk(bytes(data)):
        if r.type not in (0, END):
            data[r.offset + 280 : r.offset + DRR] = bytes(32)
    data = bytearray(resign(bytes(data)))
    end = _first(bytes(data), END)
    data[end.offset + 280 : end.offset + DRR] = bytes(32)
    assert check(bytes(data)).valid
    w = _first(bytes(data), WRITE)
    r = check(_flip(bytes(data), w.offset + DRR + 5))
    assert codes(r) == ["checksum"] and r.problems[0].offset == end.offset


def test_truncation_at_every_boundary_and_inside(check) -> None:
    data = full_stream()
    recs = walk(data)
    for rec in recs:
        inside = [rec.offset + DRR + rec.payload // 2] if rec.payload else []
        for cut in (rec.offset, rec.offset + 100, *inside):
            if cut >= len(data):
                continue
            r = check(data[:cut])
            assert not r.valid, cut
            p = r.problems[-1]
            if cut == 0:
                assert p.code == "not-a-stream"
            elif cut == rec.offset:
                assert (p.code, p.offset) == ("truncated", cut)
            else:
                assert (p.code, p.offset) == ("truncated", rec.offset), (cut, p)


@pytest.mark.parametrize("extra", [b"\0", b"x" * 311, b"\0" * 312, b"garbage" * 100])
def test_trailing_garbage(check, extra: bytes) -> None:
    data = full_stream()
    r = check(data + extra)
    assert codes(r) == ["trailing-data"] and r.problems[0].offset == len(data)


def test_second_stream_appended_is_trailing(check) -> None:
    data = full_stream()
    assert codes(check(data + data)) == ["trailing-data"]


def test_impossible_length_is_clean_error(check) -> None:
    data = bytearray(full_stream())
    w = _first(bytes(data), WRITE)
    struct.pack_into("<Q", data, w.offset + 32, 1 << 60)
    data[w.offset + 280 : w.offset + DRR] = bytes(32)  # no trailer: only the length is wrong
    r = check(bytes(data))
    assert codes(r) == ["bad-record"] and r.problems[0].offset == w.offset
    assert "1152921504606846976" in r.problems[0].message


def test_unknown_record_type(check) -> None:
    data = bytearray(full_stream())
    w = _first(bytes(data), WRITE)
    struct.pack_into("<I", data, w.offset, 77)
    r = check(bytes(data))
    assert r.problems[-1].code == "bad-record" and r.problems[-1].offset == w.offset


@pytest.mark.parametrize("data", [b"", b"hello", b"\0" * 4096, b"\xff" * 400])
def test_not_a_stream(check, data: bytes) -> None:
    r = check(data)
    assert not r.valid and r.problems[0].code == "not-a-stream" and r.problems[0].offset == 0


def test_missing_end_and_nested_begin(check) -> None:
    b = StreamBuilder()
    b.begin("p/f@a", 5)
    b.object(2)
    b.begin("p/f@b", 6)  # no END before it
    b.end()
    r = check(bytes(b.data))
    assert codes(r) == ["nesting"]
    assert r.problems[0].offset == [x for x in walk(bytes(b.data)) if x.type == 0][1].offset


def test_package_without_final_end(check) -> None:
    data = package([("pool/fs@b", 2, 1)])
    r = check(data[:-DRR])
    assert codes(r) == ["truncated"] and r.problems[0].offset == len(data) - DRR


def test_toguid_mismatch(check) -> None:
    b = StreamBuilder()
    b.begin("p/f@a", 5)
    b.toguid = 6
    b.object(1, otype=21)
    b.toguid = 5
    b.end()
    r = check(bytes(b.data))
    assert codes(r) == ["guid"] and r.problems[0].offset == DRR


def test_huge_begin_payload_is_bounded(check) -> None:
    # payloadlen 4 GiB - 1: refused before any allocation; 200 MiB: not kept, then truncated
    for n, code in ((0xFFFFFFFF, "bad-record"), (200 << 20, "truncated")):
        head = bytearray(full_stream()[:DRR])
        struct.pack_into("<I", head, 4, n)
        r = check(bytes(head) + b"\0" * 1000)
        assert r.problems[-1].code == code and r.problems[-1].offset == 0


def test_undecodable_begin_nvlist_is_a_problem(check) -> None:
    b = StreamBuilder()
    b.begin("p/f@a", 5, payload=b"\x01\x01\0\0" + b"\xff" * 12)
    b.end()
    assert codes(check(bytes(b.data))) == ["nvlist"]


def test_raw_ivset_chain(check) -> None:
    def sub(b: StreamBuilder, name: str, to: int, frm: int, ivs: dict) -> None:
        from tools.streamgen import native_nvlist

        b.begin(
            name, to, frm, features=4 | (1 << 24), payload=native_nvlist({"crypt_keydata": ivs})
        )
        b.end()

    b = StreamBuilder()
    b.package_header(None, "p/e@c")
    sub(b, "p/e@a", 1, 0, {"to_ivset_guid": 100})
    sub(b, "p/e@b", 2, 1, {"from_ivset_guid": 100, "to_ivset_guid": 200})
    sub(b, "p/e@c", 3, 2, {"from_ivset_guid": 999, "to_ivset_guid": 300})
    b.final_end()
    r = check(bytes(b.data))
    assert codes(r) == ["guid"] and "ivset" in r.problems[0].message
    assert r.substreams[1].as_dict()["to_ivset_guid"] == "200"


def test_header_nvlist_flags(check) -> None:
    data = package([("pool/fs@b", 2, 1)], {"tosnap": "b", "not_recursive": True})
    r = check(data)
    assert r.valid and r.kind == "incremental package" and not r.header.recursive
    assert xdr_nvlist({"a": 1})[:2] == b"\x01\x01"
