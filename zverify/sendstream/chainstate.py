"""The chain-state engine: the records a full stream of a route's last snapshot carries,
computed offline from the route's full and incrementals (docs/design/consolidate.md).

merge() reads every substream of the route at once, each cursor moving forward by object
number, and yields per live object its newest OBJECT, the truncation a full carries, its
data by increasing offset (the newest WRITE/WRITE_EMBEDDED/FREE wins per byte range,
cut at the substream in which the receiver last freed or reallocated the object) and its
spill block.  Which substream frees what follows OpenZFS 2.1.11's receive_object and
receive_handle_existing_object (module/zfs/dmu_recv.c).  No payload is buffered: a payload
is read only when its record is emitted, and skipped otherwise.

Long because: the cursors, the cut of each object and the merge of its byte ranges are one
algorithm over one per-object state; split, each part would need the others' internals.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

from zverify.sendstream.format import BeginFlag, Feature, HeaderType, RecordType
from zverify.sendstream.records import (
    DRR_OBJECT_SPILL,
    DRR_SPILL_UNMODIFIED,
    ObjectFields,
    Rec,
    RecordReader,
    Refused,
    free_fields,
    freeobjects_fields,
    object_fields,
    spill_fields,
)

__all__ = ["MAX_PENDING", "Rec", "RecordReader", "Refused", "StateRecord", "merge"]

MAX_PENDING = 65_536
"""Pending FREE/FREEOBJECTS intervals one cursor may hold; past it the chain is refused."""

M64 = (1 << 64) - 1
INF = 1 << 65
DMU_OT_SA = 44
_DATA = frozenset(
    int(k) for k in (RecordType.WRITE, RecordType.WRITE_EMBEDDED, RecordType.FREE, RecordType.SPILL)
)
_REFUSED_FEATURES = {
    Feature.RAW: "raw (zfs send -w): the blocks are encrypted, the merge cannot see them",
    Feature.REDACTED: "redacted (zfs send --redact)",
    Feature.DEDUP: "deduplicated (zfs send -D): WRITE_BYREF needs a whole-stream table",
    Feature.RESUMING: "a resumed send (zfs send -t): a partial state",
}
_REFUSED_RECORDS = {
    RecordType.WRITE_BYREF: "a deduplicated stream",
    RecordType.OBJECT_RANGE: "a raw stream",
    RecordType.REDACT: "a redacted stream",
}


class StateRecord(NamedTuple):
    header: bytes
    """312 bytes in the stream's byte order; the RecordType is at bytes 0..3.  drr_toguid
    and the trailer checksum are the source's (a writer rewrites them)."""
    payload: bytes


class _Attrs(NamedTuple):
    """What the receiver's dnode holds after a substream (dmu_object_info's doi_*)."""

    type: int
    blksz: int
    bonustype: int
    bonuslen: int
    slots: int
    nblkptr: int
    large_blocks: bool
    """Set by a link with LARGE_BLOCKS: its drr_blksz is the object's own, never clamped."""


def _slots(f: ObjectFields) -> int:
    return f.dn_slots or 1


def _dnode_nblkptr(f: ObjectFields) -> int:
    """dnode_allocate/dnode_reallocate (dnode.c): dn_nblkptr for these attributes."""
    if f.bonustype == DMU_OT_SA:
        return 1
    return min(3, 1 + ((_slots(f) * 512 - 192 - f.bonuslen) >> 7))


def _deduce_nblkptr(f: ObjectFields) -> int:
    """deduce_nblkptr (module/zfs/dmu_recv.c): what receive compares against doi_nblkptr."""
    if f.bonustype == DMU_OT_SA:
        return 1
    return 1 + ((320 - min(320, f.bonuslen)) >> 7)


@dataclass
class _Cursor:
    """One substream's read position: its current record and what it said about the
    objects around it (FREEOBJECTS ranges, the interior slots of its last OBJECT)."""

    index: int
    reader: RecordReader
    rec: Rec | None = None
    last_obj: int = -1
    interior: tuple[int, int] = (0, 0)
    freed: list[tuple[int, int]] = field(default_factory=list)
    # per object, while its data is merged
    trunc: int | None = None
    stated: list[tuple[int, int]] = field(default_factory=list)
    last_start: int = 0
    write_end: int = 0
    big: bool = False
    large_blocks: bool = False
    spill_block: bool = False
    rec_kind: int | None = None
    """The current record's RecordType (None at END): read per record, so an attribute."""
    rec_obj: int = -1
    rec_fields: ObjectFields | None = None

    def __post_init__(self) -> None:
        self.big = self.reader.big_endian
        self.large_blocks = bool(self.reader.begin.features & Feature.LARGE_BLOCKS)
        self.spill_block = bool(self.reader.begin.flags & BeginFlag.SPILL_BLOCK)

    @property
    def name(self) -> str:
        return self.reader.name

    def where(self, what: str) -> str:
        at = self.rec.offset if self.rec is not None else self.reader.where()
        return f"{self.name}: byte {at}: {what}"

    def advance(self) -> None:
        rec = self.reader.next()
        if rec is not None and rec.kind in _REFUSED_RECORDS:
            kind = RecordType(rec.kind).name
            why = _REFUSED_RECORDS[RecordType(rec.kind)]
            raise Refused(f"{self.name}: byte {rec.offset}: a {kind} record ({why})")
        self.rec = rec
        self.rec_fields = None
        if rec is not None:
            self.rec_kind, self.rec_obj = rec.kind, rec.obj
        else:
            self.rec_kind = None

    def fields(self) -> ObjectFields:
        if self.rec_fields is None:
            assert self.rec is not None
            self.rec_fields = object_fields(self.rec, self.big)
        return self.rec_fields

    def obj(self) -> int:
        assert self.rec is not None
        return self.rec_obj

    def settle(self) -> None:
        """Move to the next OBJECT (or END), keeping the FREEOBJECTS ranges passed."""
        while self.rec_kind == RecordType.FREEOBJECTS:
            assert self.rec is not None
            fo = freeobjects_fields(self.rec, self.big)
            if fo.firstobj <= self.last_obj:
                raise Refused(
                    self.where(
                        f"FREEOBJECTS drr_firstobj {fo.firstobj} goes back before OBJECT "
                        f"{self.last_obj} (not OpenZFS's sender order; a zfs-fuse stream?)"
                    )
                )
            if fo.numobjs:
                if len(self.freed) >= MAX_PENDING:
                    raise Refused(self.where(f"over {MAX_PENDING} pending FREEOBJECTS ranges"))
                self.freed.append((fo.firstobj, min(INF, fo.firstobj + fo.numobjs)))
            self.advance()
        kind = self.rec_kind
        if kind is None:
            return
        if kind != RecordType.OBJECT:
            name = RecordType(kind).name
            raise Refused(
                self.where(
                    f"{name} drr_object {self.obj()} outside its OBJECT's records "
                    "(records out of the sender's order: a pre-0.7 or zfs-fuse stream?)"
                )
            )
        o = self.obj()
        if o <= self.last_obj or (self.freed and o < self.freed[-1][0]):
            raise Refused(self.where(f"OBJECT drr_object {o} goes backwards"))

    def forget_below(self, o: int) -> None:
        self.freed = [r for r in self.freed if r[1] > o]

    def describes(self, o: int) -> tuple[bool, bool]:
        """(frees o, allocates o) in this substream, in that order."""
        frees = any(a <= o < b for a, b in self.freed)
        frees = frees or self.interior[0] <= o < self.interior[1]
        allocates = self.rec_kind == RecordType.OBJECT and self.obj() == o
        return frees, allocates

    def take_object(self) -> ObjectFields:
        """Consume the current OBJECT: its interior slots are freed in this substream."""
        assert self.rec is not None
        f = self.fields()
        self.last_obj = f.object
        self.interior = (f.object + 1, f.object + _slots(f))
        self.trunc, self.stated, self.last_start, self.write_end = None, [], 0, 0
        return f

    def data_of(self, o: int) -> bool:
        """Is the current record a data/spill record of object o?"""
        return self.rec_kind in _DATA and self.obj() == o

    def check_spill(self) -> bool:
        """Is the current record an UNMODIFIED spill the receiver ignores?"""
        assert self.rec is not None
        sp = spill_fields(self.rec, self.big)
        if not sp.flags & DRR_SPILL_UNMODIFIED:
            return False
        if not self.spill_block:
            raise Refused(
                self.where(
                    "SPILL drr_flags UNMODIFIED in a stream whose BEGIN lacks "
                    "DRR_FLAG_SPILL_BLOCK (the receiver would apply it)"
                )
            )
        return True


def _check_route(cursors: list[_Cursor]) -> None:
    first = cursors[0]
    for c in cursors:
        b = c.reader.begin
        for feature, why in _REFUSED_FEATURES.items():
            if b.features & feature:
                raise Refused(f"{c.name}: BEGIN drr_versioninfo has {feature.name}: {why}")
        if b.header_type != HeaderType.SUBSTREAM:
            raise Refused(f"{c.name}: BEGIN drr_versioninfo: not a substream (a package header)")
        if c.big != first.big:
            raise Refused(
                f"{c.name}: BEGIN drr_magic: byte order differs from {first.name} "
                "(mixed byte order: the receiver byteswaps payloads per object type)"
            )
        if b.objset_type != first.reader.begin.objset_type:
            raise Refused(f"{c.name}: BEGIN drr_type {b.objset_type} differs from {first.name}")
    for older, newer in itertools.pairwise(cursors):
        if older.large_blocks and not newer.large_blocks:
            raise Refused(
                f"{newer.name}: BEGIN drr_versioninfo lacks LARGE_BLOCKS, which {older.name} "
                "has (receive refuses it: recv_check_large_blocks)"
            )
    if first.reader.begin.fromguid != 0:
        raise Refused(f"{first.name}: BEGIN drr_fromguid is not 0: the route must start at a full")
    for older, newer in itertools.pairwise(cursors):
        if newer.reader.begin.fromguid != older.reader.begin.toguid:
            raise Refused(
                f"{newer.name}: BEGIN drr_fromguid {newer.reader.begin.fromguid:#x} is not "
                f"{older.name}'s drr_toguid {older.reader.begin.toguid:#x}"
            )


def merge(readers: list[RecordReader]) -> Iterator[StateRecord]:
    """The state of the route's last snapshot, readers oldest (the full) first."""
    if not readers:
        raise Refused("no substream to merge")
    cursors = [_Cursor(i, r) for i, r in enumerate(readers)]
    _check_route(cursors)
    for c in cursors:
        c.advance()
        c.settle()
    # Only the cursors at OBJECT o, or holding a FREEOBJECTS range or interior slots that
    # may cover o, can describe o: a heap by next OBJECT and a set of the freeing ones keep
    # each object's work proportional to the substreams that mention it, not to the route.
    waiting = [(c.obj(), c.index) for c in cursors if c.rec is not None]
    heapq.heapify(waiting)
    freeing = {c.index for c in cursors if c.freed}
    while waiting:
        o = waiting[0][0]
        at: list[int] = []
        while waiting and waiting[0][0] == o:
            at.append(heapq.heappop(waiting)[1])
        for i in list(freeing):
            cursors[i].forget_below(o)
            if not cursors[i].freed and cursors[i].interior[1] <= o:
                freeing.discard(i)
        group = sorted(freeing.union(at))
        if len(group) == 1 and len(at) == 1:
            yield from _alone(cursors[at[0]], o)  # most objects: one substream says it all
        else:
            yield from _object([cursors[i] for i in group], o)
        for i in at:
            c = cursors[i]
            if c.rec is not None:
                heapq.heappush(waiting, (c.obj(), i))
            if c.freed or c.interior[1] > c.interior[0]:
                freeing.add(i)


@dataclass
class _Life:
    """The receiver's history of one object through the route."""

    live: bool = False
    cut: int = 0
    kills: set[int] = field(default_factory=set)
    """Substreams whose OBJECT/FREEOBJECTS removes the spill block held before them."""
    newest: int = -1


OLD_MAX_BLOCK = 128 << 10
"""SPA_OLD_MAXBLOCKSIZE: without LARGE_BLOCKS, dump_dnode reports a larger block size as
this (module/zfs/dmu_send.c line 751) and splits the blocks into pieces of it."""


def _maybe_clamped(attrs: _Attrs, f: ObjectFields, c: _Cursor) -> bool:
    """Did a link without LARGE_BLOCKS report this object's block size clamped to 128 KiB,
    which a newer link with LARGE_BLOCKS now reports as it is?  Then the receiver's
    same-generation branch (keep the old block size and data) may apply: the -L toggle of
    openzfs/zfs#6224.  Any other block size change means a new object (see the design note)."""
    return (
        not attrs.large_blocks
        and c.large_blocks
        and attrs.blksz == OLD_MAX_BLOCK
        and f.blksz > OLD_MAX_BLOCK
    )


def _life(cursors: list[_Cursor], told: dict[int, tuple[bool, bool]], o: int) -> _Life:
    """Replay receive_object/receive_freeobjects for o over the route, headers only; told
    is each cursor's describes(o)."""
    life, attrs = _Life(), None
    for c in cursors:
        frees, allocates = told[c.index]
        if frees:
            life.live, attrs = False, None
            life.kills.add(c.index)
        if not allocates:
            continue
        assert c.rec is not None
        f = c.fields()
        if attrs is not None and _maybe_clamped(attrs, f, c):
            raise Refused(
                c.where(
                    f"OBJECT {o} drr_blksz {f.blksz}, sent as {OLD_MAX_BLOCK} by a link "
                    "without LARGE_BLOCKS: receive keeps or frees its data by the ZPL "
                    "generation (receive_object_is_same_generation), which zverify does not read"
                )
            )
        new = attrs is None or _slots(f) != attrs.slots  # dmu_free_long_object + claim
        free_range = new or (
            attrs is not None and (f.blksz != attrs.blksz or _deduce_nblkptr(f) < attrs.nblkptr)
        )
        reclaim = attrs is not None and (
            (f.type, f.blksz, f.bonustype, f.bonuslen)
            != (attrs.type, attrs.blksz, attrs.bonustype, attrs.bonuslen)
        )
        has_spill = bool(f.flags & DRR_OBJECT_SPILL)
        if new or (reclaim and not (c.spill_block and has_spill)):
            life.kills.add(c.index)
        elif c.spill_block and not has_spill:
            life.kills.add(c.index)  # dmu_object_rm_spill
        if free_range:
            life.cut = c.index
        attrs = _Attrs(
            f.type, f.blksz, f.bonustype, f.bonuslen, _slots(f), _dnode_nblkptr(f),
            c.large_blocks,
        )  # fmt: skip
        life.live, life.newest = True, c.index
    return life


def _object(cursors: list[_Cursor], o: int) -> Iterator[StateRecord]:
    told = {c.index: c.describes(o) for c in cursors}
    life = _life(cursors, told, o)
    involved = [c for c in cursors if told[c.index][1]]
    if not life.live:
        for c in involved:
            c.take_object()
            c.advance()
            while c.data_of(o):
                c.advance()
            _after_object(c, o)
        return
    newest = next(c for c in cursors if c.index == life.newest)
    assert newest.rec is not None
    yield StateRecord(newest.rec.header, newest.reader.payload())
    for c in involved:
        c.take_object()
        c.advance()
        trunc = _truncation(c)
        if trunc is not None:
            c.trunc = trunc
            if c is newest and c.rec is not None:
                yield StateRecord(c.rec.header, b"")
            c.advance()
    merging = [c for c in involved if c.index >= life.cut]
    for c in involved:
        if c.index < life.cut:
            _skip_data(c, o)
    yield from _merge_data(merging, o)
    yield from _spill(cursors, involved, life, o)
    for c in involved:
        _after_object(c, o)


def _alone(c: _Cursor, o: int) -> Iterator[StateRecord]:
    """Object o as the only substream that mentions it says: what _object yields for one
    describer (every WRITE wins, its own spill is the spill), without the bookkeeping."""
    assert c.rec is not None
    yield StateRecord(c.rec.header, c.reader.payload())
    c.take_object()
    c.advance()
    if _truncation(c) is not None and c.rec is not None:
        yield StateRecord(c.rec.header, b"")
        c.advance()
    last_start = write_end = 0
    while c.data_of(o) and c.rec is not None:
        kind = c.rec_kind
        if kind == RecordType.SPILL:
            if not c.check_spill():
                head = bytearray(c.rec.header)
                head[32] &= ~DRR_SPILL_UNMODIFIED & 0xFF
                yield StateRecord(bytes(head), c.reader.payload())
                c.advance()
                break
            c.advance()
            continue
        start, end = _span(c)
        if start < last_start or start < write_end:
            raise Refused(
                c.where(
                    f"{RecordType(c.rec_kind or 0).name} drr_object {o} drr_offset {start} "
                    "goes back before offset "
                    f"{max(last_start, write_end)} of the same substream"
                )
            )
        last_start = start
        if kind != RecordType.FREE:
            yield StateRecord(c.rec.header, c.reader.payload())
            write_end = end
        c.advance()
    _after_object(c, o)


def _truncation(c: _Cursor) -> int | None:
    """The offset from which the current record frees the object to its end (the FREE a
    full carries after an OBJECT), or None."""
    if c.rec_kind != RecordType.FREE or c.rec is None:
        return None
    free = free_fields(c.rec, c.big)
    return free.offset if free.length == M64 else None


def _after_object(c: _Cursor, o: int) -> None:
    if c.data_of(o):
        raise Refused(c.where(f"a record of object {o} after its SPILL (not the sender's order)"))
    c.settle()


def _skip_data(c: _Cursor, o: int) -> None:
    """Pass o's data in an older substream the receiver later freed; stop at its SPILL."""
    while c.data_of(o):
        if c.rec_kind == RecordType.SPILL and not c.check_spill():
            return
        c.advance()


def _span(c: _Cursor) -> tuple[int, int]:
    """The byte range the current WRITE/WRITE_EMBEDDED/FREE states, [start, end)."""
    assert c.rec is not None
    h, b = c.rec.header, c.big
    start = int.from_bytes(h[24:32] if c.rec_kind == RecordType.WRITE else h[16:24],
                           "big" if b else "little")  # fmt: skip
    if c.rec_kind == RecordType.WRITE:
        length = int.from_bytes(h[32:40], "big" if b else "little")
    else:
        length = int.from_bytes(h[24:32], "big" if b else "little")
    end = INF if length == M64 else start + length
    if end < start or (length != M64 and end > M64 + 1):
        raise Refused(c.where(f"offset {start} + length {length} wraps around"))
    return start, end


def _data_head(c: _Cursor, o: int) -> tuple[int, int] | None:
    """The next data statement of c for object o (UNMODIFIED spills passed), or None."""
    while c.data_of(o):
        if c.rec_kind != RecordType.SPILL:
            return _span(c)
        if not c.check_spill():
            return None
        c.advance()
    return None


def _cover(newer: _Cursor, start: int, end: int, head: tuple[int, int] | None) -> str:
    """Does a newer substream state any of [start, end)?  'all', 'part' or 'none'."""
    ranges = list(newer.stated)
    if newer.trunc is not None:
        ranges.append((newer.trunc, INF))
    if head is not None:
        ranges.append(head)
    verdict = "none"
    for a, b in ranges:
        if a < end and b > start:
            if a <= start and b >= end:
                return "all"
            verdict = "part"
    return verdict


def _merge_data(merging: list[_Cursor], o: int) -> Iterator[StateRecord]:
    """Sweep the substreams' WRITE/FREE statements of o by offset; emit each WRITE that
    no newer substream states over (receive applies records in order: newest wins)."""
    heads = {c.index: _data_head(c, o) for c in merging}
    while True:
        live = [c for c in merging if heads[c.index] is not None]
        if not live:
            return
        c = min(live, key=lambda x: (heads[x.index][0], -x.index))  # type: ignore[index]
        start, end = heads[c.index]  # type: ignore[misc]
        if start < c.last_start or start < c.write_end:
            raise Refused(
                c.where(
                    f"{RecordType(c.rec_kind or 0).name} drr_object {o} drr_offset {start} "
                    "goes back before offset "
                    f"{max(c.last_start, c.write_end)} of the same substream"
                )
            )
        c.last_start = start
        c.stated = [r for r in c.stated if r[1] > start]
        if len(c.stated) >= MAX_PENDING:
            raise Refused(c.where(f"over {MAX_PENDING} pending FREE ranges of object {o}"))
        c.stated.append((start, end))
        if c.rec_kind != RecordType.FREE:
            covers = [_cover(n, start, end, heads[n.index]) for n in merging if n.index > c.index]
            if "all" not in covers and "part" in covers:
                raise Refused(
                    c.where(
                        f"object {o}: a newer substream states part of the block at "
                        f"offset {start} (length {end - start}): not block-aligned"
                    )
                )
            if "all" not in covers:
                assert c.rec is not None
                yield StateRecord(c.rec.header, c.reader.payload())
            c.write_end = end
        c.advance()
        heads[c.index] = _data_head(c, o)


def _spill(
    cursors: list[_Cursor], involved: list[_Cursor], life: _Life, o: int
) -> Iterator[StateRecord]:
    """The spill block a receive leaves: the newest SPILL after the last removal."""
    source: _Cursor | None = None
    have = {c.index for c in involved if c.data_of(o) and c.rec_kind == RecordType.SPILL}
    for c in cursors:
        if c.index in life.kills:
            source = None
        if c.index in have:
            source = c
    if source is not None and source.rec is not None:
        head = bytearray(source.rec.header)
        head[32] &= ~DRR_SPILL_UNMODIFIED & 0xFF
        yield StateRecord(bytes(head), source.reader.payload())
    for c in involved:
        if c.index in have:
            c.advance()
