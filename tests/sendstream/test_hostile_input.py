"""Hostile send streams with bounded resources: the installed `zverify stream verify|info`
keeps its peak RSS and its output the same size whatever the input's size, exits 1 (or 2
when it cannot judge), and names the byte offset of the first problem in one line.

Peak RSS is the child's own (os.wait4), so it never includes pytest.  Large inputs are
sparse files (truncate): cheap on disk, and the scanner goes over their holes without
reading them.  The same bounds hold for the nvlist decoder and resume tokens in process.
"""

from __future__ import annotations

import json
import os
import struct
import time
import tracemalloc
import zlib
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from tests.cli.console import needs_installed_command, zverify_peak_rss
from tools.streamgen import (
    DRR,
    StreamBuilder,
    fletcher4,
    full_stream,
    native_nvlist,
    package,
    walk,
    xdr_nvlist,
)
from zverify.sendstream import validate
from zverify.sendstream.nvlist import NvlistError, NvlistLimitError, unpack
from zverify.sendstream.token import TokenError, decode_token
from zverify.sendstream.validate import SUBSTREAM_KEEP, verify_stream

MB = 1 << 20
RSS_LIMIT_MB = 60  # peak RSS of the whole `zverify` process, at any input size
RSS_SPREAD_MB = 6  # between a small and a large input of the same shape
SCHEMAS = Path(__file__).resolve().parents[2] / "zverify" / "schemas"


def zverify(*args: str, tmp: Path) -> tuple[int, bytes, float]:
    """(exit code, stdout, peak RSS in MB) of the installed console script."""
    code, out, _, peak = zverify_peak_rss(*args, tmp=tmp)
    return code, out, peak


def sparse(path: Path, head: bytes, size: int) -> Path:
    path.write_bytes(head)
    os.truncate(path, size)
    return path


def repeated(path: Path, head: bytes, unit: bytes, size: int) -> Path:
    """head, then unit over and over up to about size bytes (real data, not sparse)."""
    chunk = unit * max(1, MB // len(unit))
    with open(path, "wb") as f:
        f.write(head)
        for _ in range(max(1, (size - len(head)) // len(chunk))):
            f.write(chunk)
    return path


def problem_lines(text: str) -> list[str]:
    """The problem lines of `stream verify`'s text (warnings apart)."""
    return [line for line in text.splitlines() if line.startswith("    offset ")]


def schema_ok(name: str, doc: object) -> None:
    schema = json.loads((SCHEMAS / name).read_text())
    errors = list(Draft202012Validator(schema).iter_errors(doc))
    assert not errors, errors[0].message


def _truncated() -> tuple[bytes, int]:
    """A full stream cut before its END record: (bytes, where the END was)."""
    data = full_stream()
    end = walk(data)[-1].offset
    return data[:end], end


# -- sparse zero tails: two sizes, same memory, same output ----------------------------------


@needs_installed_command
@pytest.mark.parametrize("what", ["truncated", "complete"])
def test_zero_tail_is_one_line_and_constant_memory(tmp_path: Path, what: str) -> None:
    head, at = _truncated() if what == "truncated" else (full_stream(), len(full_stream()))
    seen = []
    for size in (64 * MB, 512 * MB):
        path = sparse(tmp_path / f"z{size}", head, size)
        code, out, rss = zverify("stream", "verify", str(path), tmp=tmp_path)
        text = out.decode()
        assert code == 1, text
        assert text.startswith("DAMAGED") and len(problem_lines(text)) == 1, text
        assert f"offset {at} " in text and f"{size - at} bytes of zeros from offset {at}" in text
        if what == "complete":
            assert "trailing data after the end of the stream" in text
        code, out, rss_info = zverify("stream", "info", "--json", str(path), tmp=tmp_path)
        doc = json.loads(out)
        schema_ok("stream-info.schema.json", doc)
        assert (code, doc["bytes"], len(doc["substreams"])) == (1, size, 1)
        assert doc["problems"][0]["offset"] == at and len(out) < 4096
        seen.append((rss, rss_info, len(out)))
    (small, small_info, small_len), (big, big_info, big_len) = seen
    assert max(small, big, small_info, big_info) < RSS_LIMIT_MB, seen
    assert abs(big - small) < RSS_SPREAD_MB and abs(big_info - small_info) < RSS_SPREAD_MB
    assert abs(big_len - small_len) < 16  # only the digits of the sizes differ


@needs_installed_command
def test_zeros_then_data_stop_the_scan(tmp_path: Path) -> None:
    head, at = _truncated()
    path = tmp_path / "zd"
    path.write_bytes(head + bytes(5000) + b"junk" * 100)
    code, out, _ = zverify("stream", "verify", str(path), tmp=tmp_path)
    assert code == 1
    assert f"5000 bytes of zeros from offset {at} (to offset {at + 5000})" in out.decode()
    assert "not read past this point" in out.decode()


@needs_installed_command
@pytest.mark.parametrize("field", ["write", "begin"])
def test_huge_declared_lengths(tmp_path: Path, field: str) -> None:
    b = StreamBuilder()
    b.begin("p/f@a", 5)
    at = len(b.data)
    b.write(2, 0, b"")
    data = bytearray(b.data)
    if field == "write":
        struct.pack_into("<Q", data, at + 32, (1 << 64) - 1)
        data[at + 280 : at + DRR] = bytes(32)  # no trailer: only the length is wrong
        where, shown = at, "18446744073709551615"
    else:
        struct.pack_into("<I", data, 4, 0xFFFF_FFFF)
        where, shown = 0, "4294967295"
    for size in (64 * MB, 512 * MB):
        path = sparse(tmp_path / f"h{size}", bytes(data), size)
        code, out, rss = zverify("stream", "verify", str(path), tmp=tmp_path)
        first = problem_lines(out.decode())[0]
        assert code == 1 and f"offset {where} " in first and shown in first, out
        assert rss < RSS_LIMIT_MB


# -- repeated records: bounded lists, bounded output ---------------------------------------


@needs_installed_command
def test_repeated_begin_lists_a_bounded_number_of_substreams(tmp_path: Path) -> None:
    b = StreamBuilder()
    b.begin("p/f@a", 5)
    seen = []
    for size in (4 * MB, 16 * MB):
        path = repeated(tmp_path / f"b{size}", b"", bytes(b.data), size)
        code, out, rss = zverify("stream", "info", "--json", str(path), tmp=tmp_path)
        doc = json.loads(out)
        schema_ok("stream-info.schema.json", doc)
        assert code == 1 and doc["problems"][0]["offset"] == DRR
        assert doc["problems"][0]["code"] == "nesting"
        listed = len(doc["substreams"])
        assert listed == validate.MAX_DAMAGED_SUBSTREAMS
        assert listed + doc["substreams_not_listed"] == path.stat().st_size // DRR
        assert len(doc["problems"]) == validate.MAX_PROBLEMS and doc["problems_not_listed"]
        seen.append((rss, len(out)))
    (small, small_len), (big, big_len) = seen
    assert max(small, big) < RSS_LIMIT_MB and abs(big - small) < RSS_SPREAD_MB, seen
    assert abs(big_len - small_len) < 64, seen


@needs_installed_command
def test_repeated_record_with_its_trailer(tmp_path: Path) -> None:
    """The same OBJECT record over and over: every copy's checksum fails; a hundred are
    listed, the rest counted."""
    b = StreamBuilder()
    b.begin("p/f@a", 5)
    start = len(b.data)
    b.object(2)
    for size in (4 * MB, 16 * MB):
        path = repeated(tmp_path / f"o{size}", bytes(b.data), bytes(b.data[start:]), size)
        code, out, rss = zverify("stream", "verify", "--json", str(path), tmp=tmp_path)
        doc = json.loads(out)
        schema_ok("stream-verify.schema.json", doc)
        problems = doc["files"][0]["problems"]
        assert code == 1 and problems[0]["code"] == "checksum"
        assert problems[0]["offset"] == start + (start + DRR + 16 - start)  # the 2nd copy
        assert len(problems) == 100 and doc["files"][0]["problems_not_listed"] > 1000
        assert rss < RSS_LIMIT_MB and len(out) < 64 * 1024


@needs_installed_command
def test_repeated_end_after_the_stream_is_not_framed(tmp_path: Path) -> None:
    good = full_stream()
    end = good[walk(good)[-1].offset :]
    path = repeated(tmp_path / "e", good, end, 16 * MB)
    started = time.monotonic()
    code, out, rss = zverify("stream", "verify", str(path), tmp=tmp_path)
    text = out.decode()
    assert code == 1 and len(problem_lines(text)) == 1
    assert f"offset {len(good)} " in text and "trailing data" in text
    assert rss < RSS_LIMIT_MB and time.monotonic() - started < 10


@needs_installed_command
def test_begin_without_magic_ends_framing(tmp_path: Path) -> None:
    head, at = _truncated()
    junk = bytearray(DRR)
    junk[8:16] = b"JUNKJUNK"
    path = repeated(tmp_path / "m", head, bytes(junk), 16 * MB)
    code, out, rss = zverify("stream", "verify", str(path), tmp=tmp_path)
    lines = problem_lines(out.decode())
    assert code == 1 and len(lines) == 1, lines
    assert f"offset {at} " in lines[0] and "framing is lost" in lines[0]
    assert rss < RSS_LIMIT_MB


# -- limits that make a stream not judged (exit 2), in process --------------------------------


def test_more_substreams_than_listed_is_not_judged(monkeypatch: pytest.MonkeyPatch, check) -> None:
    chain = [(f"p/f@s{i}", i + 2, i + 1) for i in range(6)]
    data = package(chain)
    assert check(data).valid
    monkeypatch.setattr(validate, "MAX_SUBSTREAMS", 4)
    r = check(data)
    assert not r.readable and r.exit_code == 2 and r.substreams_dropped == 2
    assert [p.code for p in r.problems] == ["limit"] and len(r.substreams) == 4


def test_a_break_caps_the_list_at_once(monkeypatch: pytest.MonkeyPatch, check) -> None:
    monkeypatch.setattr(validate, "MAX_DAMAGED_SUBSTREAMS", 3)
    chain = [(f"p/f@s{i}", i + 2, 77 if i == 1 else i + 1) for i in range(6)]
    r = check(package(chain))
    assert r.readable and r.exit_code == 1 and len(r.substreams) == 3
    assert r.substreams_dropped == 3 and r.problems[0].code == "guid"


def test_header_with_too_many_values_is_not_judged(monkeypatch: pytest.MonkeyPatch, check) -> None:
    monkeypatch.setattr(validate, "HEADER_MAX_KEPT", 50)
    snaps = {f"s{i}": i + 1 for i in range(100)}
    header = {"tosnap": "s99", "fss": {"0x1": {"name": "p/f", "snaps": snaps}}}
    r = check(package([("p/f@s99", 100, 0)], header))
    assert not r.readable and r.problems[0].code == "limit" and r.problems[0].offset == 0


def test_substream_nvlist_keeps_only_what_is_read(check) -> None:
    junk = {f"k{i}": {"a": i, "b": "x" * 20} for i in range(2000)}
    nv = native_nvlist({**junk, "resume_object": 3, "crypt_keydata": {"to_ivset_guid": 8}})
    b = StreamBuilder()
    b.begin("p/f@a", 5, payload=nv)
    b.end()
    r = check(bytes(b.data))
    assert r.valid and r.substreams[0].nvlist == {
        "resume_object": 3,
        "crypt_keydata": {"to_ivset_guid": 8},
    }


def test_resume_object_of_the_wrong_type_is_a_problem(check) -> None:
    b = StreamBuilder()
    b.begin("p/f@a", 5, payload=native_nvlist({"resume_object": "three"}))
    b.end()
    r = check(bytes(b.data))
    assert [p.code for p in r.problems] == ["nvlist"] and "resume_object" in r.problems[0].message


# -- nvlists and tokens: absurd counts, sizes, nesting ---------------------------------------


def _xdr_pair(name: bytes, kind: int, nelem: int, body: bytes) -> bytes:
    rest = struct.pack(">I", len(name)) + name + b"\0" * (-len(name) % 4)
    rest += struct.pack(">ii", kind, nelem) + body
    return struct.pack(">ii", 8 + len(rest), 64) + rest


@pytest.mark.parametrize(
    "body",
    [
        _xdr_pair(b"a", 16, 1, struct.pack(">I", 0xFFFF_FFFF)),  # uint64 array of 2^32-1
        _xdr_pair(b"a", 17, 0x7FFF_FFFF, b""),  # string array of 2^31-1
        _xdr_pair(b"a", 20, 0x7FFF_FFFF, b""),  # nvlist array of 2^31-1
        _xdr_pair(b"a", 9, 1, struct.pack(">I", 0xFFFF_FFF0)),  # string of 4 GiB
        struct.pack(">ii", 0x7FFF_FFFF, 1),  # pair of 2 GiB
    ],
)
def test_nvlist_absurd_counts_fail_at_once(body: bytes) -> None:
    data = b"\x01\x01\0\0" + struct.pack(">iI", 0, 1) + body + bytes(8)
    tracemalloc.start()
    try:
        with pytest.raises(NvlistError, match=r"nvlist byte \d+"):
            unpack(data)
        assert tracemalloc.get_traced_memory()[1] < 1 * MB
    finally:
        tracemalloc.stop()


def test_nvlist_nesting_is_capped() -> None:
    nv: dict = {"x": 1}
    for _ in range(40):
        nv = {"n": nv}
    with pytest.raises(NvlistError, match="nested too deeply"):
        unpack(xdr_nvlist(nv))
    with pytest.raises(NvlistError, match="nested too deeply"):
        unpack(native_nvlist(nv))


def test_native_string_array_is_linear() -> None:
    """A million strings in one pair: decoded in linear time (each string found from where
    the last ended, not by copying the rest of the pair)."""
    n = 1_000_000
    body = bytes(8 * n) + b"s\0" * n
    body += b"\0" * (-len(body) % 8)
    name = b"arr\0"
    size = 16 + 8 + len(body)
    pair = struct.pack("<ihhii", size, len(name), 0, n, 17) + name + b"\0" * 4 + body
    data = b"\0\1\0\0" + struct.pack("<iI", 0, 1) + pair + bytes(4)
    started = time.monotonic()
    assert len(unpack(data)["arr"]) == n  # type: ignore[arg-type]
    assert unpack(data, SUBSTREAM_KEEP) == {}
    assert time.monotonic() - started < 10


def test_nvlist_of_many_pairs_keeps_few_objects() -> None:
    """2 MiB of distinct flags: the whole decode has them all, the validator's decode
    keeps nothing and allocates a small fraction of the input."""
    n = (2 * MB) // 24
    pairs = b"".join(
        struct.pack(">iiI4sii", 24, 24, 4, struct.pack(">I", i), 1, 0) for i in range(n)
    )
    data = b"\x01\x01\0\0" + struct.pack(">iI", 0, 1) + pairs + bytes(8)
    assert len(unpack(data)) == n
    tracemalloc.start()
    try:
        assert unpack(data, SUBSTREAM_KEEP) == {}
        assert tracemalloc.get_traced_memory()[1] < len(data) // 4
    finally:
        tracemalloc.stop()
    with pytest.raises(NvlistLimitError, match="more than 1000 values"):
        unpack(data, max_kept=1000)


def test_token_limits() -> None:
    packed = native_nvlist({"object": 1, "toname": "a@b"})
    comp = zlib.compress(packed)
    ck = fletcher4(comp)[0]
    for length in (2**62, (1 << 20) + 1):
        with pytest.raises(TokenError, match="impossible packed nvlist length"):
            decode_token(f"1-{ck:x}-{length:x}-{comp.hex()}")
    with pytest.raises(TokenError, match="characters"):
        decode_token("1-" + "0" * (8 << 20))
    many = native_nvlist({f"k{i}": i for i in range(20_000)})
    comp = zlib.compress(many)
    with pytest.raises(TokenError, match="more than 10000 values"):
        decode_token(f"1-{fletcher4(comp)[0]:x}-{len(many):x}-{comp.hex()}")


@needs_installed_command
def test_huge_token_on_the_command_line(tmp_path: Path) -> None:
    code, out, rss = zverify("stream", "token", "1-" + "f" * 100_000, tmp=tmp_path)
    assert code == 1 and out.startswith(b"DAMAGED") and len(out.splitlines()) == 1
    assert rss < RSS_LIMIT_MB


def test_verify_stream_in_process_memory_is_flat(tmp_path: Path) -> None:
    """The same in process, where a leak would show as traced Python memory."""
    head, _ = _truncated()
    path = sparse(tmp_path / "big", head, 256 * MB)
    tracemalloc.start()
    try:
        report = verify_stream(path)
        assert tracemalloc.get_traced_memory()[1] < 2 * MB
    finally:
        tracemalloc.stop()
    assert report.size == 256 * MB and len(report.problems) == 1
