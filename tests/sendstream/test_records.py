"""The record reader: framing agrees with streamgen.walk (written without zverify's
parser), payloads are read on demand or skipped by seeking, and a cut input is refused."""

from __future__ import annotations

import io
import random

import pytest

from tools.streamgen import (
    M64,
    StreamBuilder,
    byteswap,
    full_stream,
    lz4_zfs,
    object_record,
    spill_record,
    walk,
    write_record,
)
from zverify.sendstream.records import (
    BufferedSource,
    RecordReader,
    Refused,
    embedded_fields,
    free_fields,
    freeobjects_fields,
    object_fields,
    spill_fields,
    write_fields,
)


def records(data: bytes, **kw: object) -> list[tuple[int, int, int]]:
    f = io.BytesIO(data)
    r = RecordReader(f.read, name="s", **kw)  # type: ignore[arg-type]
    out = []
    while (rec := r.next()) is not None:
        out.append((rec.offset, rec.kind, rec.payload_len))
    assert r.end_header is not None
    return out


def expected(data: bytes) -> list[tuple[int, int, int]]:
    return [(x.offset, x.type, x.payload) for x in walk(data) if x.type not in (0, 5)]


@pytest.mark.parametrize("big", [False, True])
def test_framing_matches_an_independent_walk(big: bool) -> None:
    data = full_stream(big)
    assert records(data) == expected(data)


def test_a_seek_skips_payloads_it_was_not_asked_for() -> None:
    data = full_stream()
    f = io.BytesIO(data)
    seeks: list[int] = []

    def skip(n: int) -> None:
        seeks.append(n)
        f.seek(n, 1)

    r = RecordReader(f.read, name="s", skip=skip)
    while r.next() is not None:
        pass
    assert sum(seeks) == sum(x.payload for x in walk(data) if x.type not in (0, 5))
    assert f.tell() == len(data)


def test_payload_reads_the_current_record_once() -> None:
    b = StreamBuilder()
    b.begin("pool/fs@a", 1)
    object_record(b, 2, trunc_blocks=1)
    write_record(b, 2, 0, b"x" * 4096)
    b.end()
    f = io.BytesIO(bytes(b.data))
    r = RecordReader(f.read, name="s")
    assert r.next() is not None and r.next() is not None  # OBJECT, FREE
    rec = r.next()
    assert rec is not None and rec.payload_len == 4096
    assert r.payload() == b"x" * 4096
    with pytest.raises(RuntimeError):
        r.payload()


def test_fields_decode_in_both_byte_orders() -> None:
    b = StreamBuilder()
    b.begin("pool/fs@a", 1, features=4 | 1 << 16)
    object_record(b, 7, blksz=8192, dn_slots=2, flags=4, bonus=b"q" * 20, trunc_blocks=3)
    write_record(b, 7, 8192, lz4_zfs(b"z" * 8192), compression=15, lsize=8192)
    spill_record(b, 7, b"s" * 512, flags=4)
    b.freeobjects(9, 23)
    b.embedded(7, 16384, b"tiny")
    b.end()
    for data, big in ((bytes(b.data), False), (byteswap(bytes(b.data)), True)):
        f = io.BytesIO(data)
        r = RecordReader(f.read, name="s")
        assert r.big_endian is big
        heads = []
        while (rec := r.next()) is not None:
            heads.append(rec)
        ob = object_fields(heads[0], big)
        assert (ob.object, ob.blksz, ob.dn_slots, ob.flags, ob.bonuslen) == (7, 8192, 2, 4, 20)
        assert free_fields(heads[1], big) == free_fields(heads[1].header, big)
        assert (free_fields(heads[1], big).offset, free_fields(heads[1], big).length) == (
            3 * 8192,
            M64,
        )
        w = write_fields(heads[2], big)
        assert (w.offset, w.logical_size, w.compressiontype) == (8192, 8192, 15)
        assert heads[2].payload_len == w.compressed_size
        sp = spill_fields(heads[3], big)
        assert (sp.object, sp.length, sp.flags) == (7, 512, 4)
        fo = freeobjects_fields(heads[4], big)
        assert (fo.firstobj, fo.numobjs) == (9, 23)
        e = embedded_fields(heads[5], big)
        assert (e.offset, e.psize, heads[5].payload_len) == (16384, 4, 8)


def test_a_cut_input_is_refused_with_its_offset() -> None:
    data = full_stream()
    last = walk(data)[-1].offset
    with pytest.raises(Refused, match=rf"s: byte {last}: input ends inside a record header"):
        records(data[:-312])
    with pytest.raises(Refused, match=r"s: byte \d+: input ends inside a record's payload"):
        records(data[: walk(data)[3].offset + 400], skip=None)


def test_no_begin_and_wrong_byte_order_are_refused() -> None:
    with pytest.raises(Refused, match="s: byte 0: no BEGIN record here"):
        records(b"\x03" + bytes(311))
    with pytest.raises(Refused, match="big-endian, unlike the route"):
        records(full_stream(True), big_endian=False)


def test_an_oversized_payload_is_refused() -> None:
    b = StreamBuilder()
    b.begin("pool/fs@a", 1)
    write_record(b, 2, 0, b"", compression=15, lsize=1 << 30)
    buf = bytearray(b.data)
    buf[-312 + 96 : -312 + 104] = (1 << 30).to_bytes(8, "little")  # drr_compressed_size
    with pytest.raises(Refused, match=r"WRITE payload of 1073741824 bytes is over"):
        records(bytes(buf))


def _raw(data: bytes, rng: random.Random, seekable: bool) -> tuple[object, object, list[int]]:
    """read(n) that returns short reads at random, as a pipe does; skip(n) a forward seek
    (recorded), or None for an input that cannot seek."""
    at, seeks = [0], []

    def read(n: int) -> bytes:
        got = data[at[0] : at[0] + rng.randint(1, n)]
        at[0] += len(got)
        return got

    def skip(n: int) -> None:
        seeks.append(n)
        at[0] += n

    return read, (skip if seekable else None), seeks


@pytest.mark.parametrize("seed", range(40))
def test_the_buffered_source_serves_every_byte_in_order(seed: int) -> None:
    """Seeded reads, skips and peeks of every size around the 4 KiB buffer must see the
    input exactly as a position moving through it would (the model), short raw reads and
    all; an input that can seek is seeked only past what the buffer does not hold."""
    rng = random.Random(seed)
    data = rng.randbytes(rng.randint(0, 60_000))
    ahead = data[: rng.randint(0, 100)]
    read, skip, seeks = _raw(data[len(ahead) :], rng, seekable=seed % 2 == 0)
    source, pos = BufferedSource(read, skip, ahead), 0  # type: ignore[arg-type]
    while pos < len(data):
        n = rng.choice([1, 8, 312, 4095, 4096, 4097, 20_000, rng.randint(1, 70_000)])
        op = rng.choice(["read", "read", "skip", "peek"])
        if op == "read":
            got = source.read(n)
            assert got and got == data[pos : pos + len(got)], (seed, pos, n)
            pos += len(got)
        elif op == "skip":
            source.skip(n)
            pos = min(len(data), pos + n)
        else:
            assert source.peek(n) == data[pos : pos + n], (seed, pos, n)
    assert source.read(10) == b""
    assert all(n > 0 for n in seeks)


def _refusal(data: bytes, seekable: bool, buffered: bool) -> str:
    """Refused's message for reading every record of data, payloads skipped."""
    f = io.BytesIO(data)
    read, skip = f.read, (lambda n: f.seek(n, 1)) if seekable else None
    if buffered:  # as cold/consolidate.py reads an archive file
        source = BufferedSource(read, skip)  # type: ignore[arg-type]
        read, skip = source.read, source.skip if seekable else None
    reader = RecordReader(read, name="s", skip=skip)  # type: ignore[arg-type]
    with pytest.raises(Refused) as refused:
        while reader.next() is not None:
            pass
    return str(refused.value)


@pytest.mark.parametrize("seekable", [True, False])
def test_a_cut_input_behind_the_buffer_is_refused_at_the_same_byte(seekable: bool) -> None:
    """Consolidate reads every archive file through a BufferedSource: a file that ends early
    must still be Refused (exit 2), at the byte an unbuffered read names, never read as a
    shorter stream.  Cut inside the last header, and inside a payload."""
    data = full_stream()
    for cut in (len(data) - 312, walk(data)[3].offset + 400):
        said = _refusal(data[:cut], seekable, buffered=True)
        assert "input ends inside" in said, said
        assert said == _refusal(data[:cut], seekable, buffered=False)


def test_readers_taking_turns_on_one_buffered_source_lose_no_byte() -> None:
    """A package's substreams are read one after another from one source; the buffer
    filled by the first reader holds the start of the second."""
    one, two = full_stream(), full_stream(True)
    f = io.BytesIO(one + two)
    source = BufferedSource(f.read)
    first = RecordReader(source.read, name="one", skip=source.skip)
    while first.next() is not None:
        pass
    assert source.peek(4) == two[:4]
    second = RecordReader(source.read, name="two", start=first.where(), skip=source.skip)
    found = []
    while (rec := second.next()) is not None:
        found.append((rec.offset - len(one), rec.kind, rec.payload_len))
    assert found == expected(two)
