"""The chain-state engine: a full plus incrementals merge into what a full of the last
snapshot carries (receive_object's rules), refusals name the substream and field, and
memory stays flat however long the chain."""

from __future__ import annotations

import io
import tracemalloc

import pytest

from tools.streamgen import (
    M64,
    StreamBuilder,
    byteswap,
    embedded_record,
    lz4_zfs,
    object_record,
    spill_record,
    write_record,
)
from zverify.sendstream.chainstate import Refused, StateRecord, merge
from zverify.sendstream.digest import state_digest, state_objects
from zverify.sendstream.records import RecordReader

FS = "pool/fs"
G0, G1, G2 = 0x10, 0x11, 0x12
LARGE_DNODE, LARGE_BLOCKS = 1 << 23, 1 << 19


def blk(tag: str, size: int = 4096) -> bytes:
    return (tag.encode() * size)[:size]


def reader(data: bytes, name: str = "s") -> RecordReader:
    f = io.BytesIO(data)
    return RecordReader(f.read, name=name, skip=lambda n: f.seek(n, 1) and None)


def run(*streams: bytes) -> list[StateRecord]:
    return list(merge([reader(s, f"s{i}") for i, s in enumerate(streams)]))


def canon(records: list[StateRecord]) -> list[tuple[bytes, bytes]]:
    """Records with drr_toguid and the trailer zeroed: what differs between streams."""
    out = []
    for r in records:
        h = bytearray(r.header)
        kind = h[0]
        at = {1: 40, 3: 40, 4: 32, 7: 24, 8: 32}[kind]
        h[at : at + 8] = bytes(8)
        h[280:312] = bytes(32)
        out.append((bytes(h), r.payload))
    return out


def new(guid: int, frm: int = 0, snap: str = "a", features: int = 4 | LARGE_DNODE) -> StreamBuilder:
    b = StreamBuilder()
    b.begin(f"{FS}@{snap}", guid, frm, features=features)
    return b


def done(b: StreamBuilder) -> bytes:
    b.end()
    return bytes(b.data)


def master(b: StreamBuilder) -> None:
    object_record(b, 1, blksz=512, otype=21, trunc_blocks=1)


# -- the chain --------------------------------------------------------------------------------


def full0() -> bytes:
    b = new(G0)
    master(b)
    object_record(b, 2, trunc_blocks=4)
    for i in range(4):
        write_record(b, 2, i * 4096, blk(f"A{i}"))
    object_record(b, 3, flags=4, trunc_blocks=2)
    write_record(b, 3, 0, blk("C0"))
    write_record(b, 3, 4096, blk("C1"))
    spill_record(b, 3, blk("S3", 512))
    object_record(b, 4, trunc_blocks=1)
    write_record(b, 4, 0, blk("D-old"))
    object_record(b, 5, trunc_blocks=3)
    for i in range(3):
        write_record(b, 5, i * 4096, blk(f"E{i}"))
    object_record(b, 6, trunc_blocks=2)
    write_record(b, 6, 0, blk("F0"))
    write_record(b, 6, 4096, blk("F1"))
    b.freeobjects(7, 25)
    return done(b)


def inc1() -> bytes:
    b = new(G1, G0, "b")
    master(b)
    object_record(b, 2, trunc_blocks=3)  # truncated to 3 blocks, block 1 rewritten
    write_record(b, 2, 4096, blk("B1"))
    object_record(b, 3, flags=4, trunc_blocks=2)  # the spill trap: unmodified spill
    spill_record(b, 3, blk("S3", 512), flags=4)
    write_record(b, 3, 0, blk("C0-new"))
    object_record(b, 4, blksz=8192, trunc_blocks=1)  # reallocated: new block size
    write_record(b, 4, 0, blk("D-new", 8192))
    object_record(b, 5, trunc_blocks=3)
    b.free(5, 4096, 4096)  # a hole punched
    b.freeobjects(6, 1)  # object 6 deleted
    object_record(b, 7, dn_slots=2, trunc_blocks=1)  # a large dnode: slot 8 interior
    write_record(b, 7, 0, blk("G0"))
    b.freeobjects(9, 23)
    return done(b)


def inc2() -> bytes:
    b = new(G2, G1, "c")
    master(b)
    object_record(b, 2, trunc_blocks=3)
    write_record(b, 2, 8192, lz4_zfs(blk("H2")), compression=15, lsize=4096)
    object_record(b, 3, flags=4, trunc_blocks=2)
    spill_record(b, 3, blk("S3", 512), flags=4)
    object_record(b, 5, dn_slots=2, trunc_blocks=1)  # reallocated: dn_slots 1 -> 2
    write_record(b, 5, 0, blk("I0"))
    b.freeobjects(7, 2)  # the large dnode deleted
    object_record(b, 9, trunc_blocks=1)
    embedded_record(b, 9, 0, b"tiny file", 4096)
    b.freeobjects(10, 22)
    return done(b)


def full2(plain: bool = False) -> bytes:
    """What a full of @c carries, built by hand."""
    b = new(G2, 0, "c")
    master(b)
    object_record(b, 2, trunc_blocks=3)
    write_record(b, 2, 0, blk("A0"))
    write_record(b, 2, 4096, blk("B1"))
    if plain:
        write_record(b, 2, 8192, blk("H2"))
    else:
        write_record(b, 2, 8192, lz4_zfs(blk("H2")), compression=15, lsize=4096)
    object_record(b, 3, flags=4, trunc_blocks=2)
    write_record(b, 3, 0, blk("C0-new"))
    write_record(b, 3, 4096, blk("C1"))
    spill_record(b, 3, blk("S3", 512))
    object_record(b, 4, blksz=8192, trunc_blocks=1)
    write_record(b, 4, 0, blk("D-new", 8192))
    object_record(b, 5, dn_slots=2, trunc_blocks=1)
    write_record(b, 5, 0, blk("I0"))
    object_record(b, 9, trunc_blocks=1)
    embedded_record(b, 9, 0, b"tiny file", 4096)
    b.freeobjects(10, 22)
    return done(b)


def test_chain_merges_to_the_full_of_its_last_snapshot_record_for_record() -> None:
    assert canon(run(full0(), inc1(), inc2())) == canon(run(full2()))


def test_chain_full_and_plain_full_have_one_digest() -> None:
    chain = state_digest(run(full0(), inc1(), inc2()), False)
    assert chain == state_digest(run(full2()), False)
    assert chain == state_digest(run(full2(plain=True)), False)  # lz4 on the wire or not
    assert chain != state_digest(run(full0(), inc1()), False)


def test_spill_trap_keeps_the_older_spill_with_its_flag_cleared() -> None:
    spills = [r for r in run(full0(), inc1(), inc2()) if r.header[0] == 7]
    assert len(spills) == 1
    assert spills[0].payload == blk("S3", 512) and spills[0].header[32] == 0


def test_objects_freed_truncated_reallocated_and_punched() -> None:
    recs = run(full0(), inc1(), inc2())
    objects = [int.from_bytes(r.header[8:16], "little") for r in recs if r.header[0] == 1]
    assert objects == [1, 2, 3, 4, 5, 9]  # 6 freed (FREEOBJECTS), 7 freed, 8 was interior
    obj5 = [r.payload[:2] for r in recs if r.header[0] == 3 and r.header[8] == 5]
    assert obj5 == [b"I0"]  # dn_slots change freed E0 and E2; the hole stayed a hole
    obj2 = [r.payload[:2] for r in recs if r.header[0] == 3 and r.header[8] == 2]
    assert obj2 == [b"A0", b"B1", lz4_zfs(blk("H2"))[:2]]  # A3 cut by the truncation


def test_a_changed_byte_changes_the_digest_and_names_the_object() -> None:
    good = list(state_objects(run(full2()), False))
    bad = full2().replace(blk("C1"), blk("C1")[:-1] + b"!")
    worse = list(state_objects(run(bad), False))
    assert [o for (o, d), (_, e) in zip(good, worse, strict=True) if d != e] == [3]


def test_big_endian_chain_merges_like_the_little_endian_one() -> None:
    le = canon(run(full0(), inc1(), inc2()))
    be = run(byteswap(full0()), byteswap(inc1()), byteswap(inc2()))
    assert len(be) == len(le)
    assert state_digest(be, True) == state_digest(run(byteswap(full2())), True)


# -- refusals -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("features", "word"),
    [(1 << 24, "RAW"), (1 << 0, "DEDUP"), (1 << 20, "RESUMING"), (1 << 21, "REDACTED")],
)
def test_refused_features_name_the_substream_and_field(features: int, word: str) -> None:
    b = new(G1, G0, "b", features=4 | features)
    master(b)
    with pytest.raises(Refused, match=rf"s1: BEGIN drr_versioninfo has {word}"):
        run(full0(), done(b))


def test_a_substream_without_end_is_refused() -> None:
    cut = inc1()[:-312]
    with pytest.raises(Refused, match=r"s1: byte \d+: input ends inside a record header.*--saved"):
        run(full0(), cut)


def test_mixed_byte_order_is_refused() -> None:
    with pytest.raises(Refused, match=r"s1: BEGIN drr_magic: byte order differs from s0"):
        run(full0(), byteswap(inc1()))


def test_large_blocks_turned_off_is_refused() -> None:
    """recv_check_large_blocks: a dataset with large blocks takes no stream without them."""
    b = new(G0, features=4 | LARGE_DNODE | LARGE_BLOCKS)
    master(b)
    with pytest.raises(Refused, match=r"s1: BEGIN drr_versioninfo lacks LARGE_BLOCKS, which s0"):
        run(done(b), _regen_from(G0))


def test_large_blocks_turned_on_for_new_objects_merges() -> None:
    """-L throughout, recordsize raised mid-chain: the first links lack LARGE_BLOCKS."""
    big = 1 << 20

    def s0(b: StreamBuilder) -> None:
        object_record(b, 2, blksz=OLD, trunc_blocks=2)
        write_record(b, 2, 0, blk("r0", OLD))
        write_record(b, 2, OLD, blk("r1", OLD))

    def s1(b: StreamBuilder) -> None:
        object_record(b, 3, blksz=big, trunc_blocks=1)
        write_record(b, 3, 0, blk("L", big))

    def end(b: StreamBuilder) -> None:
        s0(b)
        s1(b)

    chain = _chain(s0, s1)
    chain[1] = _with_features(s1, 1, 4 | LARGE_DNODE | LARGE_BLOCKS)
    expected = _with_features(end, 1, 4 | LARGE_DNODE | LARGE_BLOCKS, full=True)
    assert_merges_to(chain, expected)


def test_a_block_size_that_may_have_been_clamped_is_refused() -> None:
    """An object sent at 128 KiB without LARGE_BLOCKS, then at 1 MiB with: the receiver
    decides by the ZPL generation (openzfs/zfs#6224), zverify refuses to guess."""

    def s0(b: StreamBuilder) -> None:
        object_record(b, 2, blksz=OLD, trunc_blocks=16)
        write_record(b, 2, 0, blk("r0", OLD))

    def s1(b: StreamBuilder) -> None:
        object_record(b, 2, blksz=1 << 20, trunc_blocks=2)

    chain = [_chain(s0)[0], _with_features(s1, 1, 4 | LARGE_DNODE | LARGE_BLOCKS)]
    with pytest.raises(Refused, match=r"s1: byte \d+: OBJECT 2 drr_blksz 1048576, sent as 131072"):
        run(*chain)


OLD = 128 << 10


def _with_features(body: object, i: int, features: int, full: bool = False) -> bytes:
    b = new(0x100 + i, 0 if full else 0x100 + i - 1, f"s{i}", features=features)
    body(b)  # type: ignore[operator]
    return done(b)


def test_a_broken_guid_link_is_refused() -> None:
    with pytest.raises(Refused, match=r"s1: BEGIN drr_fromguid 0x99 is not s0's drr_toguid"):
        run(full0(), _regen_from(0x99))


def _regen_from(frm: int) -> bytes:
    b = new(G1, frm, "b")
    master(b)
    return done(b)


def test_a_write_going_backwards_is_refused() -> None:
    b = new(G0)
    object_record(b, 2, trunc_blocks=2)
    write_record(b, 2, 4096, blk("x"))
    write_record(b, 2, 0, blk("y"))
    with pytest.raises(
        Refused, match=r"s0: byte \d+: WRITE drr_object 2 drr_offset 0 goes back before"
    ):
        run(done(b))


def test_an_object_going_backwards_is_refused() -> None:
    b = new(G0)
    object_record(b, 3, trunc_blocks=0)
    object_record(b, 2, trunc_blocks=0)
    with pytest.raises(Refused, match=r"s0: byte \d+: OBJECT drr_object 2 goes backwards"):
        run(done(b))


def test_a_write_outside_its_objects_records_is_refused() -> None:
    """The zfs-fuse order: all OBJECTs of a dnode block first, then their data."""
    b = new(G0)
    object_record(b, 2, trunc_blocks=1)
    object_record(b, 3, trunc_blocks=1)
    write_record(b, 2, 0, blk("x"))
    with pytest.raises(Refused, match=r"s0: byte \d+: WRITE drr_object 2 outside its OBJECT"):
        run(done(b))


def test_a_newer_free_over_part_of_an_older_block_is_refused() -> None:
    b = new(G1, G0, "b")
    object_record(b, 2, trunc_blocks=4)
    b.free(2, 1024, 1024)
    b.end()
    with pytest.raises(Refused, match=r"s0: byte \d+: object 2: a newer substream states part"):
        run(full0(), bytes(b.data))


# -- memory -----------------------------------------------------------------------------------


def test_fifty_links_rewriting_a_large_object_keep_memory_flat() -> None:
    """Every link rewrites all 16 blocks of 128 KiB: each superseded payload is skipped,
    only the newest is read, and the peak stays near one block."""
    size, nblocks, links = 128 << 10, 16, 50

    def body(tag: int, guid: int, frm: int) -> bytes:
        b = new(guid, frm, f"s{tag}")
        object_record(b, 2, blksz=size, trunc_blocks=nblocks)
        for i in range(nblocks):
            write_record(b, 2, i * size, bytes([tag % 251 + 1]) * size)
        return done(b)

    template = body(7, 0x700, 0x699)
    cut = template.index(b"\x01\x00\x00\x00", 312)  # the first record after BEGIN
    streams = [body(0, 0x1000, 0)]
    for i in range(1, links):
        head = StreamBuilder()
        head.begin(f"{FS}@s{i}", 0x1000 + i, 0x1000 + i - 1, features=4 | LARGE_DNODE)
        streams.append(bytes(head.data) + template[cut:])
    tracemalloc.start()
    try:
        count = 0
        for rec in merge([reader(s, f"s{i}") for i, s in enumerate(streams)]):
            count += 1
            del rec
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert count == 1 + 1 + nblocks
    assert peak < 4 * size, f"peak {peak} bytes for {links} links"


def test_superseded_payloads_are_skipped_not_read() -> None:
    reads: list[int] = []
    inputs = []
    for i, s in enumerate([full0(), inc1(), inc2()]):
        f = io.BytesIO(s)

        def read(n: int, f: io.BytesIO = f) -> bytes:
            reads.append(n)
            return f.read(n)

        inputs.append(RecordReader(read, name=f"s{i}", skip=lambda n, f=f: f.seek(n, 1) and None))
    list(merge(inputs))
    assert 4096 in reads and reads.count(4096) == 5  # A0 B1 C0-new C1 I0: kept blocks only


def test_truncation_frees_record_keeps_the_sender_form() -> None:
    recs = run(full0(), inc1())
    frees = [r for r in recs if r.header[0] == 4]
    assert all(int.from_bytes(r.header[24:32], "little") == M64 for r in frees)


# -- receive_object's rules one at a time (each: chain == a hand-built full of the end) ------


def _chain(*builds: object) -> list[bytes]:
    """Streams from builders of (b) bodies: the first a full, each next from the previous."""
    out = []
    for i, body in enumerate(builds):
        b = new(0x100 + i, 0x100 + i - 1 if i else 0, f"s{i}")
        body(b)  # type: ignore[operator]
        out.append(done(b))
    return out


def _full_of(body: object, last: int) -> bytes:
    b = new(0x100 + last, 0, f"s{last}")
    body(b)  # type: ignore[operator]
    return done(b)


def assert_merges_to(chain: list[bytes], expected: bytes) -> None:
    assert canon(run(*chain)) == canon(run(expected))
    assert state_digest(run(*chain), False) == state_digest(run(expected), False)


def test_a_large_dnode_swallows_the_object_in_its_interior_slot() -> None:
    def s0(b: StreamBuilder) -> None:
        for o in (7, 8):
            object_record(b, o, trunc_blocks=1)
            write_record(b, o, 0, blk(f"o{o}"))

    def s1(b: StreamBuilder) -> None:
        object_record(b, 7, dn_slots=2, trunc_blocks=1)  # slot 8 now interior: 8 freed
        write_record(b, 7, 0, blk("new7"))

    assert_merges_to(_chain(s0, s1), _full_of(s1, 1))


def test_a_bonus_change_alone_keeps_the_older_data() -> None:
    """dmu_object_reclaim_dnsize without a block size change frees nothing."""

    def s0(b: StreamBuilder) -> None:
        object_record(b, 2, trunc_blocks=2)
        write_record(b, 2, 0, blk("keep"))
        write_record(b, 2, 4096, blk("old1"))

    def s1(b: StreamBuilder) -> None:
        object_record(b, 2, bonus=b"c" * 40, trunc_blocks=2)
        write_record(b, 2, 4096, blk("new1"))

    def end(b: StreamBuilder) -> None:
        object_record(b, 2, bonus=b"c" * 40, trunc_blocks=2)
        write_record(b, 2, 0, blk("keep"))
        write_record(b, 2, 4096, blk("new1"))

    assert_merges_to(_chain(s0, s1), _full_of(end, 1))


def test_fewer_block_pointers_free_the_older_data() -> None:
    """A non-SA bonus growing from 100 to 264 bytes: deduce_nblkptr 1 < dn_nblkptr 2."""

    def s0(b: StreamBuilder) -> None:
        object_record(b, 2, bonustype=17, bonus=b"z" * 100, trunc_blocks=2)
        write_record(b, 2, 0, blk("gone"))
        write_record(b, 2, 4096, blk("old1"))

    def s1(b: StreamBuilder) -> None:
        object_record(b, 2, bonustype=17, bonus=b"z" * 264, trunc_blocks=2)
        write_record(b, 2, 4096, blk("new1"))

    assert_merges_to(_chain(s0, s1), _full_of(s1, 1))


def test_a_block_size_change_frees_the_data_but_keeps_a_flagged_spill() -> None:
    def s0(b: StreamBuilder) -> None:
        object_record(b, 2, flags=4, trunc_blocks=1)
        write_record(b, 2, 0, blk("small"))
        spill_record(b, 2, blk("SP", 512))

    def s1(b: StreamBuilder) -> None:
        object_record(b, 2, blksz=8192, flags=4, trunc_blocks=2)
        spill_record(b, 2, blk("SP", 512), flags=4)  # unmodified: the receiver keeps s0's
        write_record(b, 2, 8192, blk("big1", 8192))

    def end(b: StreamBuilder) -> None:
        object_record(b, 2, blksz=8192, flags=4, trunc_blocks=2)
        write_record(b, 2, 8192, blk("big1", 8192))
        spill_record(b, 2, blk("SP", 512))

    assert_merges_to(_chain(s0, s1), _full_of(end, 1))


def test_an_object_without_the_spill_flag_loses_its_spill() -> None:
    """dmu_object_rm_spill: the newer OBJECT no longer has DRR_OBJECT_SPILL."""

    def s0(b: StreamBuilder) -> None:
        object_record(b, 2, flags=4, trunc_blocks=1)
        write_record(b, 2, 0, blk("data"))
        spill_record(b, 2, blk("SP", 512))

    def s1(b: StreamBuilder) -> None:
        object_record(b, 2, trunc_blocks=1)

    def end(b: StreamBuilder) -> None:
        object_record(b, 2, trunc_blocks=1)
        write_record(b, 2, 0, blk("data"))

    assert_merges_to(_chain(s0, s1), _full_of(end, 1))


def test_a_newer_spill_replaces_the_older() -> None:
    def s0(b: StreamBuilder) -> None:
        object_record(b, 2, flags=4, trunc_blocks=0)
        spill_record(b, 2, blk("old", 512))

    def s1(b: StreamBuilder) -> None:
        object_record(b, 2, flags=4, trunc_blocks=0)
        spill_record(b, 2, blk("new", 1024))

    assert_merges_to(_chain(s0, s1), _full_of(s1, 1))


def test_an_object_number_freed_and_reused_in_one_substream() -> None:
    def s0(b: StreamBuilder) -> None:
        object_record(b, 2, trunc_blocks=2)
        write_record(b, 2, 0, blk("old0"))
        write_record(b, 2, 4096, blk("old1"))

    def s1(b: StreamBuilder) -> None:
        b.freeobjects(2, 1)
        object_record(b, 2, trunc_blocks=2)
        write_record(b, 2, 4096, blk("new1"))

    assert_merges_to(_chain(s0, s1), _full_of(s1, 1))


def test_a_hole_punched_then_written_and_a_growth_over_an_old_truncation() -> None:
    def s0(b: StreamBuilder) -> None:
        object_record(b, 2, trunc_blocks=4)
        for i in range(4):
            write_record(b, 2, i * 4096, blk(f"a{i}"))

    def s1(b: StreamBuilder) -> None:
        object_record(b, 2, trunc_blocks=2)  # truncated to 2 blocks
        b.free(2, 0, 4096)  # and block 0 punched

    def s2(b: StreamBuilder) -> None:
        object_record(b, 2, trunc_blocks=5)  # grown again: blocks 2, 3 stay holes
        write_record(b, 2, 4 * 4096, blk("c4"))

    def end(b: StreamBuilder) -> None:
        object_record(b, 2, trunc_blocks=5)
        write_record(b, 2, 4096, blk("a1"))
        write_record(b, 2, 4 * 4096, blk("c4"))

    assert_merges_to(_chain(s0, s1, s2), _full_of(end, 2))


def test_an_object_freed_in_the_middle_of_the_chain_stays_gone() -> None:
    def s0(b: StreamBuilder) -> None:
        object_record(b, 2, trunc_blocks=1)
        write_record(b, 2, 0, blk("x"))
        object_record(b, 3, trunc_blocks=1)
        write_record(b, 3, 0, blk("y"))

    def s1(b: StreamBuilder) -> None:
        b.freeobjects(2, 1)

    def s2(b: StreamBuilder) -> None:
        object_record(b, 3, trunc_blocks=1)

    def end(b: StreamBuilder) -> None:
        object_record(b, 3, trunc_blocks=1)
        write_record(b, 3, 0, blk("y"))

    assert_merges_to(_chain(s0, s1, s2), _full_of(end, 2))


def test_a_dn_slots_change_frees_data_and_spill() -> None:
    """receive_handle_existing_object: dn_slots changed -> dmu_free_long_object."""

    def s0(b: StreamBuilder) -> None:
        object_record(b, 2, flags=4, trunc_blocks=2)
        write_record(b, 2, 0, blk("gone"))
        write_record(b, 2, 4096, blk("old1"))
        spill_record(b, 2, blk("SP", 512))

    def s1(b: StreamBuilder) -> None:
        object_record(b, 2, dn_slots=2, flags=4, trunc_blocks=2)
        spill_record(b, 2, blk("SP", 512), flags=4)  # as a sender would not: proves the rule
        write_record(b, 2, 4096, blk("new1"))

    def end(b: StreamBuilder) -> None:
        object_record(b, 2, dn_slots=2, flags=4, trunc_blocks=2)
        write_record(b, 2, 4096, blk("new1"))

    assert_merges_to(_chain(s0, s1), _full_of(end, 1))


@pytest.mark.parametrize("links", [1, 2], ids=["alone", "merged"])
def test_a_free_going_back_over_a_write_of_its_substream_is_refused(links: int) -> None:
    """Receive would zero the block it just wrote; no sender writes that order."""

    def body(b: StreamBuilder) -> None:
        object_record(b, 2, trunc_blocks=2)
        write_record(b, 2, 4096, blk("w"))
        b.free(2, 4096, 4096)

    chain = _chain(*[body] * links)
    with pytest.raises(
        Refused, match=rf"s{links - 1}: byte \d+: FREE drr_object 2 drr_offset 4096"
    ):
        run(*chain)


def test_a_volume_link_in_a_filesystem_route_is_refused() -> None:
    inc = bytearray(_regen_from(G0))
    inc[32:36] = (3).to_bytes(4, "little")  # BEGIN drr_type: DMU_OST_ZVOL
    with pytest.raises(Refused, match=r"s1: BEGIN drr_type 3 differs from s0"):
        run(full0(), bytes(inc))


def test_a_route_that_does_not_start_at_a_full_is_refused() -> None:
    with pytest.raises(Refused, match=r"s0: BEGIN drr_fromguid is not 0"):
        run(inc1())


@pytest.mark.parametrize(
    ("kind", "name"), [(6, "WRITE_BYREF"), (9, "OBJECT_RANGE"), (10, "REDACT")]
)
def test_dedup_raw_and_redact_records_are_refused(kind: int, name: str) -> None:
    b = new(G0)
    object_record(b, 2, trunc_blocks=1)
    b._emit(kind.to_bytes(4, "little") + bytes(4) + (2).to_bytes(8, "little"))
    with pytest.raises(Refused, match=rf"s0: byte \d+: a {name} record"):
        run(done(b))
