"""The logical state digest: independent of how the bytes were sent (compression on the
wire, -e, -L), dependent on every byte; unknown compression is refused, never guessed."""

from __future__ import annotations

import io
import struct
import zlib
from pathlib import Path

import pytest
import zstandard

from tests.sendstream.conftest import STREAMS
from tools.streamgen import (
    StreamBuilder,
    embedded_record,
    lz4_zfs,
    object_record,
    spill_record,
    walk,
    write_record,
)
from zverify.sendstream.chainstate import Refused, merge
from zverify.sendstream.digest import (
    SPILL_MARK,
    decompress,
    first_difference,
    place,
    state_digest,
    state_objects,
    state_pieces,
)
from zverify.sendstream.records import RecordReader

BLOCK = bytes(range(256)) * 16 + b"\0" * 4096  # 8 KiB, its second half zero


def zstd_zfs(data: bytes) -> bytes:
    """A block as ZFS's zstd writes it: zfs_zstdhdr_t, then a magicless frame."""
    params = zstandard.ZstdCompressionParameters.from_level(
        3, format=zstandard.FORMAT_ZSTD1_MAGICLESS, write_content_size=False
    )
    frame = zstandard.ZstdCompressor(compression_params=params).compress(data)
    return struct.pack(">II", len(frame), 0x0300_0003) + frame


def one_object(write: object) -> str:
    b = StreamBuilder()
    b.begin("pool/fs@a", 0x1, 0)
    object_record(b, 2, blksz=8192, trunc_blocks=2)
    write(b)  # type: ignore[operator]
    b.end()
    f = io.BytesIO(bytes(b.data))
    return state_digest(merge([RecordReader(f.read, name="s")]), False)


@pytest.mark.parametrize(
    ("name", "payload", "kind"),
    [
        ("lz4", lz4_zfs(BLOCK), 15),
        ("zstd", zstd_zfs(BLOCK), 16),
        ("gzip-6", zlib.compress(BLOCK, 6), 10),
        ("zle", None, 14),
    ],
)
def test_a_compressed_write_digests_like_the_plain_one(name: str, payload, kind: int) -> None:
    if payload is None:  # zle: literal runs of up to 64 bytes, then zero runs
        payload = b"".join(bytes([63]) + BLOCK[i : i + 64] for i in range(0, 4096, 64))
        payload += bytes([64 + 63]) * 64  # 64 runs of 64 zeros
    plain = one_object(lambda b: write_record(b, 2, 8192, BLOCK))
    assert (
        one_object(lambda b: write_record(b, 2, 8192, payload, compression=kind, lsize=8192))
        == plain
    )


def test_embedded_block_digests_like_the_write_of_its_bytes() -> None:
    small = b"hello, embedded".ljust(8192, b"\0")
    assert one_object(lambda b: embedded_record(b, 2, 0, small, 8192)) == one_object(
        lambda b: write_record(b, 2, 0, small)
    )


def test_a_zero_block_digests_like_a_hole() -> None:
    assert one_object(lambda b: write_record(b, 2, 0, bytes(8192))) == one_object(lambda b: None)


def test_one_changed_byte_changes_the_digest() -> None:
    other = BLOCK[:100] + b"!" + BLOCK[101:]
    assert one_object(lambda b: write_record(b, 2, 0, BLOCK)) != one_object(
        lambda b: write_record(b, 2, 0, other)
    )


def test_the_spill_block_counts() -> None:
    assert one_object(lambda b: spill_record(b, 2, b"x" * 512)) != one_object(
        lambda b: spill_record(b, 2, b"y" * 512)
    )


def test_unknown_compression_is_refused_not_guessed() -> None:
    with pytest.raises(Refused, match="WRITE drr_object 2 drr_offset 0: compression 99: unknown"):
        one_object(lambda b: write_record(b, 2, 0, b"junk" * 10, compression=99, lsize=8192))


def test_a_block_that_does_not_decompress_is_refused() -> None:
    with pytest.raises(Refused, match="compression 15: the block does not decompress"):
        decompress(15, b"\0\0\0\x10" + b"\xff" * 16, 8192)


def test_lzjb_round_trip_of_literals_and_a_match() -> None:
    # copymap 0b00000010: literal 'a', then a match of 3+ bytes 1 back -> 'aaaa'
    data = bytes([0b00000010]) + b"a" + bytes([(1 << 2) | 0, 1])
    assert decompress(3, data, 5) == b"aaaaa"


def _real(name: str) -> Path:
    path = STREAMS / name
    if not path.exists():
        pytest.skip(f"no real fixture {name}: tests/data/streams not generated")
    return path


def _objects(path: Path) -> list[tuple[int, str]]:
    with path.open("rb") as f:
        reader = RecordReader(f.read, name=path.name, skip=lambda n: f.seek(n, 1) and None)
        return list(state_objects(merge([reader]), reader.big_endian))


def test_real_fulls_sent_plain_compressed_and_large_embedded_agree() -> None:
    """Three `zfs send` fulls of one snapshot by OpenZFS 2.1.11: plain, -c and -L -e."""
    plain = _objects(_real("full_fs_s1.zstream"))
    assert len(plain) > 5
    assert _objects(_real("compressed_c_fs_s1.zstream")) == plain
    assert _objects(_real("embed_large_Le_fs_s1.zstream")) == plain


def _substreams(path: Path) -> list[RecordReader]:
    """One reader per substream of a file (a -I package holds several)."""
    data = path.read_bytes()
    readers, start = [], None
    for rec in walk(data):
        if (
            rec.type == 0
            and int.from_bytes(data[rec.offset + 16 : rec.offset + 24], "little") & 3 == 1
        ):
            start = rec.offset
        elif rec.type == 5 and start is not None:
            f = io.BytesIO(data[start : rec.end])
            readers.append(RecordReader(f.read, name=f"{path.name}@{start}", start=start))
            start = None
    return readers


def test_real_chain_as_a_package_and_as_single_links_agree() -> None:
    """full @s1 + `zfs send -I @s1 @s3` against full @s1 + -i @s1 @s2 + -i @s2 @s3."""
    full = _real("full_fs_s1.zstream")
    package = [*_substreams(full), *_substreams(_real("package_I_fs_s1_s3.zstream"))]
    links = [
        *_substreams(full),
        *_substreams(_real("incr_fs_s1_s2.zstream")),
        *_substreams(_real("incr_empty_fs_s2_s3.zstream")),
    ]
    assert len(package) == 3
    assert list(state_objects(merge(package), False)) == list(state_objects(merge(links), False))


def _pieces_of(write: object) -> list[tuple[int, int, str]]:
    b = StreamBuilder()
    b.begin("pool/fs@a", 0x1, 0)
    object_record(b, 2, blksz=8192, trunc_blocks=40)
    write(b)  # type: ignore[operator]
    object_record(b, 3, trunc_blocks=0)
    b.end()
    f = io.BytesIO(bytes(b.data))
    return list(state_pieces(merge([RecordReader(f.read, name="s")]), False))


def test_first_difference_names_the_object_and_offset() -> None:
    big = bytes(range(256)) * 1024  # 256 KiB: two pieces
    changed = big[:200_000] + b"!" + big[200_001:]
    good = _pieces_of(lambda b: write_record(b, 2, 65536, big))
    bad = _pieces_of(lambda b: write_record(b, 2, 65536, changed))
    at = first_difference(good, bad)
    assert at == (2, 262144) and place(*at) == "object 2 offset 262144"  # byte 265536
    assert first_difference(good, good) is None
    gone = _pieces_of(lambda b: None)
    assert first_difference(good, gone) == (2, 65536)


def test_first_difference_names_a_spill_or_the_attributes() -> None:
    a = _pieces_of(lambda b: spill_record(b, 2, b"x" * 512))
    assert place(*first_difference(a, _pieces_of(lambda b: spill_record(b, 2, b"y" * 512)))) == (  # type: ignore[misc]
        "object 2 (spill block)"
    )
    assert first_difference(a, _pieces_of(lambda b: None)) == (2, SPILL_MARK)
