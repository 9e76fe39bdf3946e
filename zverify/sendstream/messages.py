"""The words for what the C scanner reports: its problem codes -> (code, one-line message).

The scanner (native/src/zv_stream.c) returns numbers and never text (C returns records
and statuses; Python owns the reporting), so this table is the only place a scanner
problem gets its JSON `code` and the line a user reads.  It is apart from the checker
because it is a pure mapping with no state: a new SP_* code in zvstream.h is one branch
here and nothing else.
"""

from __future__ import annotations

import os

from zverify import _zvcore
from zverify.sendstream.format import RecordType


def type_name(rtype: int) -> str:
    return RecordType(rtype).name if 0 <= rtype < len(RecordType) else "unknown"


def scanner_message(ev: _zvcore.StreamEvent) -> tuple[str, str]:
    """(code, message) for a problem the C scanner reported."""
    what, d = type_name(ev.rtype), ev.detail
    if ev.code == _zvcore.SP_EMPTY:
        return "not-a-stream", "empty input: not a send stream"
    if ev.code == _zvcore.SP_NOT_STREAM:
        return "not-a-stream", "not a ZFS send stream (no BEGIN record with the send magic)"
    if ev.code == _zvcore.SP_TRUNC_HEADER:
        return "truncated", f"truncated: input ends {d[0]} bytes into a 312-byte record header"
    if ev.code == _zvcore.SP_TRUNC_PAYLOAD:
        return "truncated", f"truncated: input ends {d[1]} of {d[0]} bytes into a {what} payload"
    if ev.code == _zvcore.SP_BAD_TYPE:
        return "bad-record", f"unknown record type {d[0]}; cannot read past this point"
    if ev.code == _zvcore.SP_BAD_LENGTH:
        msg = f"impossible payload length {d[0]} (limit {d[1]}) in a {what} record"
        return "bad-record", msg + "; cannot read past this point"
    if ev.code == _zvcore.SP_CKSUM_RECORD:
        span = ev.span or (0, 0)
        msg = f"checksum mismatch at {what} record: damage in bytes {span[0]}..{span[1]}"
        return "checksum", msg
    if ev.code == _zvcore.SP_CKSUM_END:
        span = ev.span or (0, 0)
        return "checksum", f"END checksum mismatch: damage in bytes {span[0]}..{span[1]}"
    if ev.code == _zvcore.SP_BEGIN_MAGIC:
        msg = "BEGIN record without the send magic in the stream's byte order"
        return "bad-record", msg + ": framing is lost, nothing after it is checked"
    if ev.code == _zvcore.SP_ZEROS:
        return "bad-record", zeros_message(ev)
    if ev.code == _zvcore.SP_RECORD:
        code = "unsupported-feature" if newer_checksum(ev) else "receive-rule"
        return code, record_message(ev)
    if ev.code == _zvcore.SP_TOGUID:
        return "guid", f"{what} record's toguid {d[0]} is not its BEGIN's ({d[1]})"
    if ev.code == _zvcore.SP_IO:
        if d[0]:  # a mapped file that became shorter than what was mapped (zvstream.h)
            return "io", "read error: the file was cut short while it was being read"
        return "io", f"read error: {os.strerror(ev.errno)}"
    if ev.code == _zvcore.SP_NOMEM:
        return "io", "out of memory for the BEGIN payload: its contents cannot be checked"
    if ev.code == _zvcore.SP_RELAY:
        why = os.strerror(ev.errno)
        return "relay", f"could not pass the stream on after {d[0]} verified bytes: {why}"
    return "internal", f"scanner problem code {ev.code}"


def zeros_message(ev: _zvcore.StreamEvent) -> str:
    """One line for a run of zero bytes where a record should start (a sparse or
    pre-allocated file's tail, a copy that stopped): where it starts and how long it is."""
    n, to_end = ev.detail
    msg = f"{n} bytes of zeros from offset {ev.offset}"
    if to_end:
        return msg + " to the end of the input: no record is all zeros"
    return msg + f" (to offset {ev.offset + n}): no record is all zeros; not read past this point"


# The record rules (enum zv_rule in native/include/zvstream.h): what OpenZFS 2.1's receive
# refuses (module/zfs/dmu_recv.c unless said), from 23 what master's recv_check_drr_* adds,
# in words; {v} is the offending value.
RECORD_RULES: dict[int, str] = {
    1: "names object {v}: no object 0 or past 2^48 exists (dnode_hold_impl)",
    2: "is for object {v}, which no earlier OBJECT record of this full stream declared "
    "(receive refuses it: invalid backup stream)",
    3: "is for object {v}, declared too long before to be proven (more than "
    "4,096 runs of objects ago): refused as unproven",
    4: "is out of (object, offset) order: offset {v} comes after a later block "
    "(receive_process_write_record)",
    5: "has object type {v}, which is none or unknown (receive_object)",
    6: "has bonus type {v}, which is unknown (receive_object)",
    7: "has block size {v}: not a multiple of 512 from 512 to 16 MiB (receive_object)",
    8: "has dn_slots {v}: more than 32 (receive_object)",
    9: "has checksum {v}: no such checksum function (receive_object)",
    10: "has compression {v}: no such compression function (receive_object)",
    11: "has a bonus buffer of {v} bytes: more than 16,192 (receive_object)",
    12: "has raw-only fields (nlevels {v}, indblkshift, nblkptr, raw_bonuslen) that "
    "its stream type does not allow or past their maximum (receive_object)",
    13: "has flags {v:#x} that its stream does not allow (receive_object)",
    14: "has an offset or count of {v} plus a length that overflows 64 bits",
    15: "has object type {v}, which is unknown (receive_process_write_record)",
    16: "has an embedded type or compression ({v}) out of range, or is in a raw stream "
    "(receive_write_embedded)",
    17: "has a spill block of {v} bytes: not from 512 bytes to 16 MiB (receive_spill)",
    18: "has object type {v}, which the BEGIN's objset type cannot hold (a volume holds "
    "only zvol objects, a filesystem none): OpenZFS receives it and panics on `zfs list`",
    19: "writes a ZAP object at offset {v}, past where its blocks can be: OpenZFS "
    "receives it and spins forever on mount",
    20: "ends a full stream whose object 1 (the master node of a filesystem, the data of "
    "a volume) was never declared: received, it cannot be mounted",
    21: "is at object {v}, outside its OBJECT_RANGE, or the range is misaligned or "
    "not in a raw stream (receive_object_range)",
    22: "has objset type {v}: neither filesystem (2) nor volume (3) "
    "(libzfs zfs_receive_one: invalid record type)",
    23: "has a logical size of {v} bytes: not from 512 bytes to 16 MiB (recv_check_drr_write)",
    24: "has a block of {v} bytes, over 128 KiB, in a stream without the LARGE_BLOCKS "
    "feature flag (recv_check_drr_object/write/write_embedded)",
    25: "has a compressed size of {v} that its stream kind or logical size does not allow "
    "(none when uncompressed, some when compressed or raw, at most the logical size: "
    "recv_check_drr_write/spill)",
    26: "has compression {v}, or a compressed payload, whose feature flag (COMPRESSED, LZ4, "
    "ZSTD) the BEGIN does not announce (recv_check_compress_feature)",
    27: "has compression {v}: no such compression function, or one on an uncompressed "
    "spill block (recv_check_drr_write/spill)",
    28: "has checksum {v}: no such checksum function (recv_check_drr_write)",
    29: "has a bonus type and bonus length ({v} bytes) that dnode_allocate does not take "
    "together (recv_check_drr_object)",
    30: "has dn_slots {v} in a stream without the LARGE_DNODE feature flag (recv_check_drr_object)",
    31: "has a bonus buffer of {v} bytes, more than its dnode holds (recv_check_drr_object)",
    32: "is object {v}, whose dnode slots reach past 2^48 (recv_check_drr_object)",
    33: "has spill type {v}, which is unknown (recv_check_drr_spill)",
    34: "has an embedded size of {v}: over 16 MiB, a payload over 112 bytes (BPE_PAYLOAD_SIZE), "
    "or sizes that do not agree (recv_check_drr_write_embedded)",
    35: "is in a stream without the EMBED_DATA feature flag (recv_check_drr_write_embedded)",
}

MASTER_ONLY = range(23, 36)
"""Rules of the record checks OpenZFS master added in commit 9b7642df ("Harden recv record
validation", module/zfs/dmu_recv.c recv_check_drr_*), in no release up to 2.4.4: those
releases read such a record without that check (and may take it, or fail later)."""


RECEIVED_THEN_BROKEN = (3, 18, 19, 20)
"""Rules of what OpenZFS receives and then cannot use (or, 3, what was not proven)."""


BLAKE3 = 14
"""ZIO_CHECKSUM_BLAKE3 (include/sys/zio.h of 2.2 and later; 2.1 has 14 functions, 0..13)."""


def newer_checksum(ev: _zvcore.StreamEvent) -> bool:
    """An OBJECT or WRITE checksum that OpenZFS 2.1 refuses and 2.2 or later knows (BLAKE3):
    intact bytes a newer release receives, not damage (the code says so: cold check calls
    it unreceivable, not damaged)."""
    return tuple(ev.detail) == (9, BLAKE3)


def record_message(ev: _zvcore.StreamEvent) -> str:
    """One line for a record the receive rules refuse: which record, and why."""
    rule, value = ev.detail
    why = RECORD_RULES.get(rule, "breaks receive rule {v}").format(v=value)
    what = "BEGIN" if rule == 22 else type_name(ev.rtype)
    where = f" of object {ev.object}" if ev.object and rule not in (1, 2, 3, 20, 21) else ""
    verdict = "not restorable" if rule in RECEIVED_THEN_BROKEN else "zfs receive refuses it"
    if rule in MASTER_ONLY:
        verdict = (
            "OpenZFS master (9b7642df) refuses it; releases up to 2.4.4 do not check this "
            "and may receive it"
        )
    if newer_checksum(ev):
        why = "has checksum 14 (BLAKE3), which OpenZFS 2.2 or later receives"
        verdict = "OpenZFS 2.1, whose receive zverify checks against, refuses it"
    return f"{what} record {ev.record}{where} {why}; {verdict}"
