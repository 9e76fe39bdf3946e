"""Streams written by real OpenZFS (tests/data/streams, made by tools/zfsvm): verify, describe,
and reject damaged copies.  Expected GUIDs come from index.json; expected offsets from
walking the records independently (streamgen.walk) or from where the damage was put.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from tests.cli.console import needs_installed_command, zverify
from tests.sendstream.conftest import INDEX, STREAMS, real_entries
from tools.streamgen import DRR, byteswap, resign, walk
from zverify.sendstream.token import decode_token
from zverify.sendstream.validate import verify_stream

pytestmark = pytest.mark.skipif(
    not INDEX.exists(), reason="no real fixtures: tests/data/streams/index.json not generated"
)

ENTRIES = real_entries()
INTACT = [e for e in ENTRIES if e["kind"] != "truncated"]


def _id(e: dict) -> str:
    return e["file"]


def _data(entry: dict) -> bytes:
    return (STREAMS / entry["file"]).read_bytes()


def _smallest(pred=lambda e: True) -> dict:
    return min((e for e in INTACT if pred(e)), key=lambda e: e["size"])


@pytest.mark.parametrize("entry", INTACT, ids=_id)
def test_real_stream_verifies(entry: dict) -> None:
    r = verify_stream(STREAMS / entry["file"])
    assert r.valid, [p.as_dict() for p in r.problems]
    assert r.size == entry["size"]
    totals = entry.get("zstream_totals") or {}
    if totals:  # zstream dump's totals: every record except the types it does not list
        unlisted = sum(s.counts.get(t, 0) for s in r.substreams for t in ("OBJECT_RANGE", "REDACT"))
        assert r.records - unlisted == sum(v for k, v in totals.items() if k.startswith("DRR_"))


@pytest.mark.parametrize("entry", INTACT, ids=_id)
def test_real_stream_guids_match_index(entry: dict) -> None:
    r = verify_stream(STREAMS / entry["file"])
    got = {(s.toname, s.toguid) for s in r.substreams}
    want = {(c["name"], c["guid"]) for c in entry["contains"]}
    assert want <= got if entry["kind"].startswith("replication") else got == want
    last = [s for s in r.substreams if s.toname == entry["to"]]
    assert last and last[-1].toguid == entry["to_guid"]
    first = next(s for s in r.substreams if s.dataset == entry["dataset"])
    assert first.fromguid == (entry["from_guid"] or 0)


def test_truncated_fixture_is_rejected() -> None:
    for entry in (e for e in ENTRIES if e["kind"] == "truncated"):
        data = _data(entry)
        r = verify_stream(STREAMS / entry["file"])
        assert not r.valid and r.problems[-1].code == "truncated"
        last_start = max(x.offset for x in _walk_prefix(data))
        assert r.problems[-1].offset in (last_start, len(data))


def _walk_prefix(data: bytes):
    """Records of a truncated stream, walked as far as whole headers go."""
    from tools.streamgen import _payload, byte_order

    o, pos = byte_order(data), 0
    while pos + DRR <= len(data):
        rtype = struct.unpack_from(o + "I", data, pos)[0]
        yield type("R", (), {"offset": pos})
        pos += DRR + _payload(data[pos : pos + DRR], rtype, o)
    if pos < len(data):
        yield type("R", (), {"offset": pos})


def test_resume_token_from_index_decodes() -> None:
    for entry in (e for e in ENTRIES if e.get("resume_token")):
        tok = decode_token(entry["resume_token"])
        assert tok.number("toguid") == entry["to_guid"]
        assert tok.toname == entry["to"]


def test_resumed_stream_says_where_it_resumes() -> None:
    for entry in (e for e in INTACT if e["kind"] == "resumed"):
        (sub,) = verify_stream(STREAMS / entry["file"]).substreams
        assert "resume" in sub.as_dict() and sub.nvlist is not None
        tok = decode_token(entry["resume_token"])
        assert sub.nvlist["resume_object"] == tok.number("object")
        assert sub.nvlist["resume_offset"] == tok.number("offset")


@pytest.fixture
def check(tmp_path: Path):
    def run(data: bytes):
        path = tmp_path / "x.zstream"
        path.write_bytes(data)
        return verify_stream(path)

    return run


def _flip(data: bytes, pos: int) -> bytes:
    buf = bytearray(data)
    buf[pos] ^= 0x10
    return bytes(buf)


def test_flips_in_a_real_stream_are_located(check) -> None:
    data = _data(_smallest(lambda e: e["kind"] == "full"))
    recs = walk(data)
    with_payload = [r for r in recs if r.payload and r.type != 0]
    targets = []
    for r in with_payload[:: max(1, len(with_payload) // 5)]:
        targets += [r.offset + DRR + r.payload // 2, r.offset + 8, r.offset + 300]
    for pos in targets:
        report = check(_flip(data, pos))
        assert not report.valid, pos
        first = report.problems[0]
        assert first.code == "checksum" and first.span[0] <= pos < first.span[1], (pos, first)


def test_truncation_of_a_real_stream(check) -> None:
    data = _data(_smallest())
    recs = walk(data)
    step = max(1, len(recs) // 40)  # every boundary of a small stream, a sample of a big one
    for rec in recs[1::step]:
        r = check(data[: rec.offset])
        assert not r.valid and r.problems[-1].code == "truncated"
        assert r.problems[-1].offset == rec.offset
        mid = rec.offset + DRR // 2
        r = check(data[:mid])
        assert (r.problems[-1].code, r.problems[-1].offset) == ("truncated", rec.offset)


def test_trailing_garbage_after_real_stream(check) -> None:
    data = _data(_smallest())
    r = check(data + b"\0" * 512)
    assert [p.code for p in r.problems] == ["trailing-data"] and r.problems[0].offset == len(data)


@pytest.mark.parametrize("entry", INTACT, ids=_id)
def test_byteswapped_real_stream_verifies(check, entry: dict) -> None:
    if entry["size"] > 64 << 20:
        pytest.skip("byteswapping in pure Python is slow for big fixtures")
    original = verify_stream(STREAMS / entry["file"])
    swapped = check(byteswap(_data(entry)))
    assert swapped.valid and swapped.big_endian, [p.as_dict() for p in swapped.problems]
    assert [(s.toname, s.toguid, s.fromguid) for s in swapped.substreams] == [
        (s.toname, s.toguid, s.fromguid) for s in original.substreams
    ]


def test_broken_link_in_real_I_package(check) -> None:
    pkgs = [e for e in INTACT if e["kind"] == "package-I"]
    if not pkgs:
        pytest.skip("no -I package among the fixtures")
    data = bytearray(_data(pkgs[0]))
    begins = [r for r in walk(bytes(data)) if r.type == 0][1:]  # skip the compound BEGIN
    if len(begins) < 2:
        pytest.skip("-I package with a single substream")
    order = "<" if data[8] == 0xAC else ">"
    struct.pack_into(order + "Q", data, begins[1].offset + 48, 12345)  # drr_fromguid
    r = check(resign(bytes(data)))
    assert [p.code for p in r.problems] == ["guid"] and r.problems[0].offset == begins[1].offset


@needs_installed_command
def test_real_stream_through_stdin() -> None:
    entry = _smallest(lambda e: e["kind"].startswith("package") or e["kind"] == "full")
    proc = zverify("stream", "info", "--json", "-", input=_data(entry), text=False, timeout=120)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["substreams"][-1]["toguid"] == str(entry["to_guid"])
