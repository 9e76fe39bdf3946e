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
