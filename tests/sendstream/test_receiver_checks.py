"""Issue 43 item 3: the record checks of OpenZFS's receive that `stream verify` did not make.

Each case is a one-field mutation of a real OpenZFS 2.1.11 stream (tests/data/streams),
re-signed so every checksum is valid (streamgen.resign), that breaks one rule of OpenZFS
master's recv_check_drr_* (module/zfs/dmu_recv.c, commit 9b7642df) or a stricter reading
of a rule older releases already had.  Through the installed console script: exit 1, the
JSON problem names the record's index and byte offset, and so does the one text line.
Every real fixture stays valid (no false alarm)."""

from __future__ import annotations

import json
import struct
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.cli.console import zverify
from tools import streamgen as sg

STREAMS = Path(__file__).resolve().parents[1] / "data" / "streams"
LARGE_DNODE, LARGE_BLOCKS, EMBED_DATA, LZ4, COMPRESSED = 1 << 23, 1 << 19, 1 << 16, 1 << 17, 1 << 22


def _load(name: str) -> tuple[bytes, list[sg.Rec]]:
    data = (STREAMS / f"{name}.zstream").read_bytes()
    return data, sg.walk(data)


def _u64(d: bytes, at: int) -> int:
    return int(struct.unpack_from("<Q", d, at)[0])


def _nth(d: bytes, recs: list[sg.Rec], rtype: int, obj: int) -> int:
    """The index of the first record of rtype about object obj."""
    return next(i for i, r in enumerate(recs) if r.type == rtype and _u64(d, r.offset + 8) == obj)


@dataclass(frozen=True)
class Case:
    name: str
    fixture: str
    rtype: int
    obj: int
    edits: tuple[tuple[int, str, int], ...]  # (offset in the record, struct format, value)
    begin_features: Callable[[int], int] | None = None  # new BEGIN feature bits from old
    words: str = ""  # what the message must say


FULL, COMP, EMBED, RAW = "full_fs_s1", "compressed_c_fs_s1", "embed_large_Le_fs_s1", "raw_w_enc_s1"
CASES = [
    # recv_check_drr_write: a WRITE's logical size is from 512 bytes (payload = csize here)
    Case("write-lsize-256", COMP, sg.WRITE, 8, ((32, "Q", 256),), None, "256"),
    # ... and over 128 KiB only with LARGE_BLOCKS
    Case("write-256k", COMP, sg.WRITE, 8, ((32, "Q", 256 << 10),), None, "LARGE"),
    Case("object-blksz-256k", FULL, sg.OBJECT, 8, ((24, "I", 256 << 10),), None, "LARGE"),
    # compressed size over the logical size
    Case("write-csize-over-lsize", COMP, sg.WRITE, 8, ((32, "Q", 512),)),
    # a compressed payload needs the COMPRESSED flag, LZ4 compression the LZ4 flag
    Case("write-no-compressed-flag", COMP, sg.WRITE, 8, (), lambda f: f & ~COMPRESSED),
    Case("write-no-lz4-flag", COMP, sg.WRITE, 8, (), lambda f: f & ~LZ4),
    Case("write-compress-99", COMP, sg.WRITE, 8, ((50, "B", 99),), None, "99"),
    Case("write-checksum-99", FULL, sg.WRITE, 3, ((48, "B", 99),), None, "99"),
    # dnode_allocate's bonus pairs: a bonus buffer needs a bonus type
    Case("object-bonus-without-type", FULL, sg.OBJECT, 3, ((20, "I", 0),)),
    Case("object-slots-2-no-large-dnode", FULL, sg.OBJECT, 3, ((34, "B", 2),), None, "LARGE_DNODE"),
    Case(
        "object-slots-past-2^48",
        FULL,
        sg.OBJECT,
        128,
        ((8, "Q", (1 << 48) - 1), (34, "B", 2)),
        lambda f: f | LARGE_DNODE,
    ),
    # raw: the tree shape must be one the dnode can have
    Case("raw-nblkptr-0", RAW, sg.OBJECT, 35, ((50, "B", 0),)),
    Case("raw-nblkptr-not-deduced", RAW, sg.OBJECT, 2, ((50, "B", 3),)),
    Case("raw-indblkshift-5", RAW, sg.OBJECT, 35, ((48, "B", 5),)),
    Case("raw-flags-0x10", RAW, sg.OBJECT, 35, ((35, "B", 0x10),)),
    # WRITE_EMBEDDED: only with EMBED_DATA, and its sizes must agree
    Case("embedded-no-flag", EMBED, sg.WRITE_EMBEDDED, 2, (), lambda f: f & ~EMBED_DATA),
    Case("embedded-lsize-over-length", EMBED, sg.WRITE_EMBEDDED, 2, ((48, "I", 1024),)),
    Case("embedded-psize-over-lsize", EMBED, sg.WRITE_EMBEDDED, 2, ((48, "I", 16),)),
]  # fmt: skip


def mutate(case: Case) -> tuple[bytes, int, int]:
    """The mutated stream, the index and the byte offset of the record it breaks."""
    data, recs = _load(case.fixture)
    index = _nth(data, recs, case.rtype, case.obj)
    buf = bytearray(data)
    for at, fmt, value in case.edits:
        struct.pack_into("<" + fmt, buf, recs[index].offset + at, value)
    if case.begin_features is not None:
        vi = _u64(data, 16)
        struct.pack_into("<Q", buf, 16, (vi & 3) | case.begin_features(vi >> 2) << 2)
    return sg.resign(buf), index, recs[index].offset


def run(tmp_path: Path, data: bytes, *args: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "s.zstream"
    path.write_bytes(data)
    return zverify("stream", "verify", *args, str(path))


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_record_the_receiver_refuses_is_exit_1_naming_it(tmp_path: Path, case: Case) -> None:
    data, index, offset = mutate(case)
    done = run(tmp_path, data, "--json")
    doc = json.loads(done.stdout)["files"][0]
    assert done.returncode == 1 and not doc["valid"], (case.name, doc["problems"])
    first = doc["problems"][0]
    assert first["code"] == "receive-rule", (case.name, first)
    assert (first["record"], first["offset"]) == (index, offset), (case.name, first)
    assert f"record {index}" in first["message"] and case.words in first["message"], first
    text = run(tmp_path, data)
    line = next(ln for ln in text.stdout.splitlines() if f"record {index})" in ln)
    assert text.returncode == 1 and f"offset {offset} (record {index})" in line, text.stdout


@pytest.mark.parametrize("case", [c for c in CASES if "raw" not in c.name][:3], ids=str)
def test_a_check_only_master_makes_says_which_releases_take_it(tmp_path: Path, case: Case) -> None:
    done = run(tmp_path, mutate(case)[0], "--json")
    message = json.loads(done.stdout)["files"][0]["problems"][0]["message"]
    assert "9b7642df" in message and "2.4.4" in message, message


FIXTURES = sorted(p for p in STREAMS.glob("*.zstream") if not p.name.startswith("truncated"))


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_every_real_stream_stays_valid(path: Path) -> None:
    done = zverify("stream", "verify", "--json", str(path))
    doc = json.loads(done.stdout)["files"][0]
    assert done.returncode == 0 and doc["valid"] and not doc["problems"], doc["problems"]


def dedup_stream() -> bytes:
    """full_fs_s1 as `zfs send -D` of 0.8 writes it: DEDUP|DEDUPPROPS announced, and the
    second 16 KiB block of object 36 a WRITE_BYREF to the first (no payload)."""
    data, recs = _load(FULL)
    first = _nth(data, recs, sg.WRITE, 36)
    second = recs[first + 1]
    head = bytearray(312)
    toguid = _u64(data, 40)
    struct.pack_into("<IIQQQQ", head, 0, sg.WRITE_BYREF, 0, 36, 16384, 16384, toguid)
    struct.pack_into("<QQQ", head, 40, toguid, 36, 0)  # refguid, refobject, refoffset
    buf = data[: second.offset] + bytes(head) + data[second.offset + 312 + second.payload :]
    vi = _u64(data, 16)
    return sg.resign(struct.pack("<Q", vi | 3 << 2).join((buf[:16], buf[24:])))


def test_a_deduplicated_stream_is_intact_but_says_it_needs_zstream_redup(tmp_path: Path) -> None:
    data = dedup_stream()
    done = run(tmp_path, data, "--json")
    doc = json.loads(done.stdout)["files"][0]
    assert done.returncode == 0 and doc["valid"], doc["problems"]
    assert [w["code"] for w in doc["warnings"]] == ["dedup"], doc["warnings"]
    assert "zstream redup" in doc["warnings"][0]["message"]
    text = run(tmp_path, data)
    assert text.returncode == 0 and "zstream redup" in text.stdout, text.stdout
    info = zverify("stream", "info", str(tmp_path / "s.zstream"))
    assert "DEDUP" in info.stdout and "WRITE_BYREF" in info.stdout, info.stdout


@pytest.mark.parametrize("bit", [30, 40, 55])
def test_an_unknown_feature_flag_is_not_verified_never_valid_nor_damaged(
    tmp_path: Path, bit: int
) -> None:
    data, _ = _load(FULL)
    buf = bytearray(data)
    struct.pack_into("<Q", buf, 16, _u64(data, 16) | 1 << (bit + 2))
    done = run(tmp_path, sg.resign(buf), "--json")
    doc = json.loads(done.stdout)["files"][0]
    assert done.returncode == 2 and not doc["valid"] and not doc["readable"], doc
    first = doc["problems"][0]
    assert first["code"] == "unknown-feature" and f"bit{bit}" in first["message"], first
    assert "not verified" in first["message"] and (first["record"], first["offset"]) == (0, 0)


@pytest.mark.parametrize("fixture", [FULL, "resumed_fs_s1"])
def test_a_saved_stream_without_end_is_judged_an_incomplete_receive(
    tmp_path: Path, fixture: str
) -> None:
    # `zfs send --saved` omits the END (dmu_send.c): every record intact, no snapshot
    data, recs = _load(fixture)
    assert recs[-1].type == sg.END
    done = run(tmp_path, data[: recs[-1].offset], "--json")
    doc = json.loads(done.stdout)["files"][0]
    assert done.returncode == 1 and doc["readable"] and not doc["valid"], doc
    first = doc["problems"][0]
    assert first["code"] == "truncated" and "--saved" in first["message"], first
    assert (first["offset"], first["record"]) == (recs[-1].offset, len(recs) - 1), first


def test_a_blake3_object_is_a_newer_release_s_stream_not_damage(tmp_path: Path) -> None:
    # checksum 14 is BLAKE3 from 2.2 (zio.h); 2.1's receive_object refuses it (>= 14 functions)
    data, recs = _load(FULL)
    index = _nth(data, recs, sg.OBJECT, 3)
    buf = bytearray(data)
    buf[recs[index].offset + 32] = 14
    done = run(tmp_path, sg.resign(buf), "--json")
    doc = json.loads(done.stdout)["files"][0]
    assert done.returncode == 1 and not doc["valid"], doc
    first = doc["problems"][0]
    assert first["code"] == "unsupported-feature" and first["record"] == index, first
    assert "BLAKE3" in first["message"] and "2.2 or later" in first["message"], first
