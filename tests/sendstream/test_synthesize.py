"""zverify.sendstream.synthesize: a full stream written from state records.

Expected bytes come from outside the writer: real `zfs send` fulls of OpenZFS 2.1.11
(tests/data/streams) and streams built by tools/streamgen.py, split into records
by streamgen's independent walk.  The written streams are judged by zverify's own scanner
through the installed console script and by streamgen's walk.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from tests.cli.console import needs_installed_command, zverify
from tests.sendstream.conftest import STREAMS
from tools.streamgen import (
    BEGIN,
    DRR,
    END,
    SPILL,
    StreamBuilder,
    byte_order,
    walk,
)
from zverify.sendstream.chainstate import StateRecord
from zverify.sendstream.format import BeginFlag, Feature, parse_begin
from zverify.sendstream.records import TOGUID_AT
from zverify.sendstream.synthesize import WriteRefused, route_features, write_full

SA_EMBED = Feature.SA_SPILL | Feature.EMBED_DATA | Feature.LZ4


def state_records(data: bytes, scramble: bool = True) -> tuple[bytes, list[StateRecord]]:
    """(the BEGIN header, the records between BEGIN and END) of a one-substream stream;
    scramble: each record's toguid and trailer garbage, as a merge of other substreams
    hands them over (the writer must rewrite both)."""
    o = byte_order(data)
    recs = walk(data)
    assert recs[0].type == BEGIN and recs[-1].type == END
    out = []
    for r in recs[1:-1]:
        head = bytearray(data[r.offset : r.offset + DRR])
        if scramble:
            struct.pack_into(o + "Q", head, TOGUID_AT[r.type], 0xDEAD_BEEF)
            head[280:] = b"\xa5" * 32
        out.append(StateRecord(bytes(head), data[r.offset + DRR : r.end]))
    return data[:DRR], out


def synthetic_full(big: bool = False, **begin_kw: object) -> bytes:
    b = StreamBuilder(big)
    kw = {"features": int(SA_EMBED), "flags": int(BeginFlag.SPILL_BLOCK), **begin_kw}
    b.substream("pool/fs@b", 0x2222, **kw)  # type: ignore[arg-type]
    return bytes(b.data)


def written(tmp_path: Path, begin: bytes, records: list[StateRecord], **kw: object) -> Path:
    path = tmp_path / f"out-{len(list(tmp_path.iterdir()))}.zfsfull"
    with open(path, "wb") as f:
        write_full(begin, records, f, **kw)  # type: ignore[arg-type]
    return path


@pytest.mark.parametrize("big", [False, True])
def test_writer_reproduces_a_streamgen_full_byte_for_byte(tmp_path: Path, big: bool) -> None:
    data = synthetic_full(big)
    begin, records = state_records(data)
    out = written(tmp_path, begin, records, features=int(SA_EMBED))
    assert out.read_bytes() == data


def test_writer_reproduces_a_real_zfs_send_full(tmp_path: Path) -> None:
    """A real OpenZFS 2.1.11 full: every trailer, the END checksum and the BEGIN (with
    FREERECORDS, which a real full sets) come out as `zfs send` wrote them."""
    real = STREAMS / "full_fs_s1.zstream"
    if not real.exists():
        pytest.skip(f"{real} is not in this checkout")
    data = real.read_bytes()
    begin, records = state_records(data)
    features = route_features([(parse_begin(begin, False).features, 0)])
    out = written(tmp_path, begin, records, features=features, free_records=True)
    assert out.read_bytes() == data


@needs_installed_command
def test_full_from_an_incremental_begin_is_a_full_of_its_snapshot(tmp_path: Path) -> None:
    """The BEGIN of an incremental clone substream: the full keeps its toname, toguid and
    creation time, with fromguid 0, no CLONE flag, no FREERECORDS; the scanner (the
    installed `zverify stream verify`) and the independent walk both accept it."""
    inc = synthetic_full(flags=int(BeginFlag.SPILL_BLOCK | BeginFlag.CLONE | 4), created=1234)
    o = byte_order(inc)
    head = bytearray(inc[:DRR])
    struct.pack_into(o + "Q", head, 48, 0x1111)  # drr_fromguid: an incremental's
    _, records = state_records(inc)
    out = written(tmp_path, bytes(head), records, features=int(SA_EMBED))
    data = out.read_bytes()
    assert [r.type for r in walk(data)] == [r.type for r in walk(inc)]
    done = zverify("stream", "verify", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    info = zverify("stream", "info", "--json", str(out))
    assert info.returncode == 0, info.stdout + info.stderr
    (sub,) = json.loads(info.stdout)["substreams"]
    assert (sub["toguid"], sub["fromguid"], sub["kind"]) == (str(0x2222), "0", "full")
    assert sub["creation_time"] == 1234
    assert sub["flags"] == ["SPILL_BLOCK"]
    for r in walk(data)[1:]:
        assert struct.unpack_from(o + "Q", data, r.offset + TOGUID_AT[r.type])[0] == 0x2222


def test_spill_unmodified_flag_is_cleared(tmp_path: Path) -> None:
    """anchors-4.md §1.4: receive skips an "unmodified" spill when the BEGIN has
    SPILL_BLOCK, so a full that kept the flag would lose the object's xattrs."""
    data = synthetic_full()
    begin, records = state_records(data)
    spill_data = bytes(range(256)) * 2
    head = struct.pack("<IIQQQBBBB4xQ", SPILL, 0, 2, len(spill_data), 0x9, 4, 0, 0, 0, 0)
    head = head.ljust(84, b"\0") + struct.pack("<I", 44)
    spill = StateRecord(head.ljust(DRR, b"\0"), spill_data)
    out = written(tmp_path, begin, [*records[:-1], spill, records[-1]], features=int(SA_EMBED))
    got = out.read_bytes()
    (at,) = [r for r in walk(got) if r.type == SPILL]
    assert got[at.offset + 32] == 0  # DRR_SPILL_UNMODIFIED (4) cleared
    assert got[at.offset + DRR : at.end] == spill_data


def test_record_needing_an_unannounced_feature_is_refused(tmp_path: Path) -> None:
    data = synthetic_full()
    begin, records = state_records(data)
    with pytest.raises(WriteRefused, match="EMBED_DATA"):
        written(tmp_path, begin, records, features=int(Feature.SA_SPILL))


def test_features_a_full_never_carries_are_refused(tmp_path: Path) -> None:
    begin, records = state_records(synthetic_full())
    with pytest.raises(WriteRefused, match="never carries"):
        written(tmp_path, begin, records, features=int(SA_EMBED | Feature.RAW))


def test_route_features_take_capabilities_of_every_link() -> None:
    links = [
        (int(Feature.SA_SPILL | Feature.LARGE_BLOCKS), 0),
        (int(Feature.SA_SPILL | Feature.EMBED_DATA | Feature.LZ4 | Feature.RESUMING), 0),
        (int(Feature.SA_SPILL | Feature.COMPRESSED | Feature.LARGE_BLOCKS), 0),
    ]
    got = route_features(links)
    assert got == Feature.SA_SPILL | Feature.LARGE_BLOCKS | Feature.EMBED_DATA | Feature.LZ4 | (
        Feature.COMPRESSED
    )
    assert not got & Feature.RESUMING


def _zfs_lz4(data: bytes) -> bytes:
    """ZFS's lz4 layout (lz4_compress_zfs): a 4-byte big-endian length, then an lz4 block."""
    import lz4.block

    block = lz4.block.compress(data, store_size=False)
    return struct.pack(">I", len(block)) + block


def sender_ordered(
    big: bool = False,
    toguid: int = 0x2222,
    fromguid: int = 0,
    seed: int = 0,
    toname: str = "pool/fs@b",
    *,
    nwrites: int = 3,
    features: int = int(SA_EMBED),
    created: int = 1_700_000_000,
) -> bytes:
    """A substream in OpenZFS's sender order (anchors-4.md §1.2): per object OBJECT, its
    truncation FREE, then its data by increasing offset; free slots of the dnode block as
    FREEOBJECTS at their position.  Its embedded block is real ZFS lz4."""
    b = StreamBuilder(big)
    features |= int(SA_EMBED)
    flags = int(BeginFlag.SPILL_BLOCK)
    b.begin(toname, toguid, fromguid, features=features, flags=flags, created=created)
    b.object(1, otype=21)
    b.free(1, 131072, (1 << 64) - 1)
    b.object(2)
    b.free(2, 131072, (1 << 64) - 1)
    for i in range(nwrites):
        b.write(2, i * 512, bytes((seed + i * 7 + j) & 0xFF for j in range(512)))
    b.embedded(2, nwrites * 512, _zfs_lz4(bytes([seed]) * 4096))
    b.freeobjects(3, 29)
    b.end()
    return bytes(b.data)


def test_round_trip_through_merge_keeps_the_snapshot(tmp_path: Path) -> None:
    """write_full(merge([reader of a full])) is the same snapshot: same toguid, same
    records and payloads, and the scanner finds it intact."""
    from zverify.sendstream.chainstate import merge
    from zverify.sendstream.records import RecordReader
    from zverify.sendstream.validate import verify_stream

    data = sender_ordered()
    src = tmp_path / "src.zfsfull"
    src.write_bytes(data)
    with open(src, "rb") as f:
        reader = RecordReader(f.read, name="src")
        try:
            records = list(merge([reader]))
        except NotImplementedError:
            pytest.skip("chainstate.merge is not implemented yet in this checkout")
    out = written(tmp_path, reader.begin_header, records, features=int(SA_EMBED))
    report = verify_stream(str(out))
    assert report.valid, report.problems
    assert report.substreams[0].toguid == 0x2222
    # the engine may leave out FREEOBJECTS of free slots (a full needs them only for
    # FREERECORDS); every other record comes through, payload and all
    got, want = out.read_bytes(), data
    kept = [(r.type, want[r.offset + DRR : r.end]) for r in walk(want)[1:-1] if r.type != 2]
    assert [(r.type, got[r.offset + DRR : r.end]) for r in walk(got)[1:-1]] == kept
