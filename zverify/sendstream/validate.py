"""Validate a ZFS send-stream file offline and describe what it contains -> StreamReport.

The C scanner (native/src/zv_stream.c) does the framing and replays the fletcher-4
checksums; it hands back only BEGIN/END records, problems and counters.  This module
checks what the scanner cannot know from one record at a time:

* nesting: a plain stream is BEGIN..END; a compound package (`zfs send -R/-I/-p`) is a
  compound BEGIN, its END, one BEGIN..END per snapshot, and a final END; nothing may
  follow the logical end (trailing garbage), nothing may be missing (truncation);
* GUID linkage inside a package: per dataset, every incremental substream starts from the
  snapshot the previous one created, agrees with the compound header's snapshot GUIDs,
  and (raw sends) with the previous substream's IV-set GUID;
* completeness of a package: what its compound header promises is present (the
  checksums restart at every BEGIN, so whole substreams can be cut out without any
  checksum noticing): at least one substream; a `-I`-style package is one dataset's
  chain ending at the header's snapshot; a `-R` package holds, for every dataset its
  header lists with the tosnap, that tosnap, and without a fromsnap every snapshot
  listed up to it;
* feature flags: unknown bits and record types whose feature is not announced are
  reported as warnings (they do not make a stream damaged).

Every problem carries the byte offset and index of the record it concerns.  A report is
`valid` only when the whole input was read and nothing at all was wrong.

Memory does not grow with hostile input: problems, warnings and substreams are listed up
to fixed limits and counted past them (a stream too large to list while intact is not
judged: exit 2), nvlists keep only the values the checks read, and once nothing after a
point can change the verdict (data past the end, a BEGIN without magic) the scanner only
reads the rest (docs/design/sendstream.md, "Performance and memory").
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from zverify import _zvcore, exitcodes
from zverify.sendstream import compressed
from zverify.sendstream import format as fmt
from zverify.sendstream.format import BeginFlag, HeaderType, RecordType
from zverify.sendstream.nvlist import (
    SCALAR,
    KeepSpec,
    NvDict,
    NvlistError,
    NvlistLimitError,
    unpack,
)

ProgressHook = Callable[[int], None]
"""Called with the number of bytes read so far."""

PROGRESS_EVERY = 64 << 20
MAX_PROBLEMS = 100
MAX_SUBSTREAMS = 250_000
"""Substreams listed (and checked for linkage and completeness) in a stream still intact.
A stream with more is not judged: exit 2, never OK on a partial check."""
MAX_DAMAGED_SUBSTREAMS = 1000
"""Once a stream is damaged, no more substreams are listed beyond this many (they are
counted): hostile input (a BEGIN repeated a million times) never grows memory."""
KEPT_NVLIST_KEYS = ("resume_object", "resume_offset")
KEPT_CRYPT_KEYS = ("to_ivset_guid", "from_ivset_guid")
# What is kept of the BEGIN nvlists (all of each is checked): only what the checks read, so
# a list of millions of pairs (props, snapprops, junk) never becomes millions of objects.
SUBSTREAM_KEEP: KeepSpec = {
    **{key: SCALAR for key in KEPT_NVLIST_KEYS},
    "crypt_keydata": {key: SCALAR for key in KEPT_CRYPT_KEYS},
}
HEADER_MAX_KEPT = 1_000_000
"""Values (datasets, snapshots...) kept of a package header: a header whose fss lists more
is not judged (exit 2); 64 MiB of real header holds well under a million."""
HEADER_KEEP: KeepSpec = {
    **{key: SCALAR for key in ("tosnap", "fromsnap", "not_recursive", "raw")},
    "fss": {"*": {"name": SCALAR, "origin": SCALAR, "snaps": {"*": SCALAR}}},
}


@dataclass(frozen=True, slots=True)
class StreamProblem:
    """Something wrong (or, as a warning, unusual) at a place in the stream."""

    offset: int
    record: int
    message: str
    code: str
    span: tuple[int, int] | None = None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"offset": self.offset, "record": self.record}
        out |= {"code": self.code, "message": self.message}
        if self.span:
            out["span"] = list(self.span)
        return out


@dataclass(slots=True)
class Substream:
    """One snapshot's BEGIN..END: identity, features and what it holds."""

    index: int
    offset: int
    record: int
    toname: str
    toguid: int
    fromguid: int
    creation_time: int
    objset_type: int
    flags: int
    features: int
    nvlist: NvDict | None = None
    counts: dict[str, int] = field(default_factory=dict)
    logical_bytes: int = 0
    payload_bytes: int = 0
    end_offset: int | None = None
    end_ok: bool | None = None
    end_checksum: tuple[int, int, int, int] | None = None  # its END's Fletcher-4, as computed

    @property
    def complete(self) -> bool:
        return self.end_offset is not None

    @property
    def stream_bytes(self) -> int | None:
        return None if self.end_offset is None else self.end_offset + fmt.RECORD_SIZE - self.offset

    @property
    def dataset(self) -> str:
        return self.toname.split("@", 1)[0]

    @property
    def kind(self) -> str:
        if self.flags & BeginFlag.CLONE:
            return "clone"
        return "incremental" if self.fromguid else "full"

    def crypt(self, key: str) -> int | None:
        """A number from the raw-send key nvlist (to_ivset_guid, from_ivset_guid...)."""
        keydata = (self.nvlist or {}).get("crypt_keydata")
        value = keydata.get(key) if isinstance(keydata, dict) else None
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "index": self.index,
            "offset": self.offset,
            "toname": self.toname,
            "toguid": str(self.toguid),
            "fromguid": str(self.fromguid),
            "kind": self.kind,
            "creation_time": self.creation_time,
            "objset_type": fmt.OBJSET_TYPES.get(self.objset_type, str(self.objset_type)),
            "flags": fmt.flag_names(self.flags),
            "features": fmt.feature_names(self.features),
            "counts": self.counts,
            "logical_bytes": self.logical_bytes,
            "payload_bytes": self.payload_bytes,
            "stream_bytes": self.stream_bytes,
            "complete": self.complete,
        }
        nv = self.nvlist or {}
        if "resume_object" in nv:
            out["resume"] = {"object": nv.get("resume_object"), "offset": nv.get("resume_offset")}
        for key in ("to_ivset_guid", "from_ivset_guid"):
            if (value := self.crypt(key)) is not None:
                out[key] = str(value)
        return out


@dataclass(frozen=True, slots=True)
class Dataset:
    """One entry of the compound header's `fss`: a dataset and its snapshots' GUIDs."""

    guid: int
    name: str
    snapshots: dict[str, int]
    origin: int | None

    def as_dict(self) -> dict[str, Any]:
        snaps = {name: str(guid) for name, guid in self.snapshots.items()}
        out: dict[str, Any] = {"name": self.name, "guid": str(self.guid), "snapshots": snaps}
        if self.origin is not None:
            out["origin"] = str(self.origin)
        return out


@dataclass(slots=True)
class CompoundHeader:
    """The package header of `zfs send -R/-I/-p`: its BEGIN and decoded XDR nvlist."""

    offset: int
    toname: str
    features: int
    nvlist: NvDict | None
    datasets: list[Dataset] = field(default_factory=list)
    nvlist_bytes: int = 0

    def text(self, key: str) -> str | None:
        value = (self.nvlist or {}).get(key)
        return value if isinstance(value, str) else None

    @property
    def recursive(self) -> bool:
        return self.nvlist is not None and "not_recursive" not in self.nvlist

    @property
    def dataset(self) -> str:
        return self.toname.split("@", 1)[0]

    @property
    def shape_known(self) -> bool:
        """False when a payload was there but not decoded: -R or not is then unknown."""
        return not self.nvlist_bytes or self.nvlist is not None

    def as_dict(self) -> dict[str, Any]:
        nv = self.nvlist or {}
        return {
            "offset": self.offset,
            "toname": self.toname,
            "features": fmt.feature_names(self.features),
            "tosnap": self.text("tosnap"),
            "fromsnap": self.text("fromsnap"),
            "recursive": self.recursive,
            "raw": nv.get("raw") is True,
        }


@dataclass(slots=True)
class StreamReport:
    """Everything learned about one stream; `valid` is the verdict."""

    source: str
    readable: bool = True
    size: int = 0
    records: int = 0
    big_endian: bool = False
    header: CompoundHeader | None = None
    substreams: list[Substream] = field(default_factory=list)
    problems: list[StreamProblem] = field(default_factory=list)
    warnings: list[StreamProblem] = field(default_factory=list)
    problems_dropped: int = 0
    substreams_dropped: int = 0  # found but not listed: past the limits (see MAX_SUBSTREAMS)
    relayed: int | None = None  # bytes passed on to relay_to (verify_stream), else None
    compression: str | None = None  # zstd, gzip, xz, lz4: the file holds the stream compressed
    file_bytes: int | None = None  # bytes of the file read (compressed), when not size

    @property
    def valid(self) -> bool:
        return self.readable and not self.problems and not self.problems_dropped

    @property
    def exit_code(self) -> int:
        return exitcodes.verdict(unverified=not self.readable, different=not self.valid)

    @property
    def kind(self) -> str:
        """full, incremental, clone, replication package, incremental package, full package
        (`zfs send -p fs@s`) or clone package (or unknown)."""
        if self.header is not None:
            if self.header.recursive:
                return "replication package"
            if len(self.substreams) == 1 and self.substreams[0].kind != "incremental":
                return f"{self.substreams[0].kind} package"
            return "incremental package"
        if not self.substreams:
            return "unknown"
        return self.substreams[0].kind

    def as_dict(self, substreams: bool = True) -> dict[str, Any]:
        """substreams=False: an empty list in their place (rendered one at a time)."""
        out: dict[str, Any] = {
            "file": self.source,
            "valid": self.valid,
            "readable": self.readable,
            "kind": self.kind,
            "byte_order": "big" if self.big_endian else "little",
            "bytes": self.size,
            "compression": self.compression,
            "file_bytes": self.size if self.file_bytes is None else self.file_bytes,
            "records": self.records,
            "substreams": [s.as_dict() for s in self.substreams] if substreams else [],
            "substreams_not_listed": self.substreams_dropped,
            "problems": [p.as_dict() for p in self.problems],
            "problems_not_listed": self.problems_dropped,
            "warnings": [w.as_dict() for w in self.warnings],
        }
        if self.header is not None:
            out["header"] = self.header.as_dict()
            out["datasets"] = [d.as_dict() for d in self.header.datasets]
        return out


def verify_stream(
    source: str | os.PathLike[str] | int,
    *,
    progress: ProgressHook | None = None,
    max_problems: int = MAX_PROBLEMS,
    relay_to: int | None = None,
    decompress: bool = True,
    stream_progress: bool = False,
) -> StreamReport:
    """Read a whole stream (a path, or an open fd such as 0 for stdin) and judge it.

    A file compressed with zstd, gzip, xz or lz4 (recognised by its first bytes; a pipe's
    are read, then handed on) is decompressed as it is read and its compressed layer judged
    too (zverify.sendstream.compressed); decompress=False reads the
    bytes as they are (a `zfs send` never compresses its output).

    relay_to: an fd (the stdin of `zfs receive`) to which every byte is written only once
    it is verified, and nothing more after the first problem (zvstream.h, the relay).  The
    stream is fed to it only as far as report.relayed says; the caller lets the consumer
    finish only when the report is valid and everything was relayed.

    progress is called with the bytes of the file read so far (a compressed file's own), or
    with stream_progress of the stream (for a bar whose total is the stream's: restore)."""
    name = f"<fd {source}>" if isinstance(source, int) else os.fspath(source)
    if isinstance(source, int):
        return _read(source, name, progress, max_problems, relay_to, decompress, stream_progress)
    try:
        fd = os.open(source, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError as err:
        report = StreamReport(source=name, readable=False)
        report.problems.append(StreamProblem(0, 0, f"cannot open: {err.strerror}", "io"))
        return report
    try:
        return _read(fd, name, progress, max_problems, relay_to, decompress, stream_progress)
    finally:
        os.close(fd)


def _read(
    fd: int,
    name: str,
    progress: ProgressHook | None,
    max_problems: int,
    relay_to: int | None,
    decompress: bool,
    stream_progress: bool = False,
) -> StreamReport:
    head = b""
    if decompress and not _seekable(fd):  # a pipe: its first bytes tell, and are handed on
        try:
            head = compressed.read_head(fd)
        except OSError as err:
            report = StreamReport(source=name, readable=False)
            report.problems.append(StreamProblem(0, 0, f"read error: {err.strerror}", "io"))
            return report
        compression = compressed.detect(head)
    else:
        compression = compressed.detect_fd(fd) if decompress else None
    if compression is None:
        return _scan(fd, name, progress, max_problems, relay_to, head)
    with compressed.decompressing(fd, compression, head) as (pipe, layer):
        # progress in bytes of the file (what a bar's total is), unless asked for the stream's
        hook = (lambda _n: progress(layer.file_bytes)) if progress else None
        hook = progress if stream_progress else hook
        report = _scan(pipe, name, hook, max_problems, relay_to)
    _judge_layer(report, layer)
    return report


def _seekable(fd: int) -> bool:
    try:
        os.lseek(fd, 0, os.SEEK_CUR)
    except OSError:
        return False
    return True


def _judge_layer(report: StreamReport, layer: compressed.Layer) -> None:
    """The compressed layer's verdict on top of the stream's: damage there makes the file
    damaged, whatever came out; what could not be read makes it unread (exit 2).  What the
    scanner found from the first byte not proven on is not listed: it is what the compressed
    layer lost or withheld (the held-back end: see compressed), not more damage."""
    report.compression, report.file_bytes = layer.compression, layer.file_bytes
    if layer.problem is None and not layer.finished and report.valid:
        # cannot happen (the scanner sees the end only once the file was read and proven);
        # if it did, a stream whose compressed layer was not judged gets no verdict
        layer.problem = ("io", "the compressed file was not read to its end")
    if layer.problem is None:
        return
    kind, message = layer.problem
    if kind in ("unsupported", "io", "unverified"):
        report.readable = False
    at = layer.trusted if layer.trusted is not None else report.size
    code = {"truncated": "truncated", "damaged": "compression"}.get(kind, kind)
    report.problems = [p for p in report.problems if p.offset < at and p.code != "truncated"]
    report.problems.insert(0, StreamProblem(at, report.records, message, code))


def _scan(
    fd: int,
    name: str,
    progress: ProgressHook | None,
    max_problems: int,
    relay_to: int | None,
    head: bytes = b"",
) -> StreamReport:
    """head: the stream's first bytes, already read from fd (a pipe that was peeked at)."""
    report = StreamReport(source=name)
    check = _Checker(report, max_problems)
    every = PROGRESS_EVERY if progress else 0
    relay = -1 if relay_to is None else relay_to
    scanner = _zvcore.StreamScanner(fd, progress_every=every, relay_fd=relay, prefix=head)
    skipping = False
    for ev in _events(scanner):
        check.event(ev)
        if not report.valid:
            scanner.stop_relay()  # the record is judged bad here, before its bytes go on
        if check.skip and not skipping:
            skipping = True
            scanner.skip_rest()
        if progress:
            progress(ev.bytes)
    check.finish()
    if relay_to is not None:
        report.relayed = scanner.relayed()
    return report


def _events(scanner: _zvcore.StreamScanner) -> Iterator[_zvcore.StreamEvent]:
    # A generator so that the scanner (and its reader thread) is closed on any exit.
    try:
        yield from scanner
    finally:
        scanner.close()


def _type_name(rtype: int) -> str:
    return RecordType(rtype).name if 0 <= rtype < len(RecordType) else "unknown"


def _scanner_message(ev: _zvcore.StreamEvent) -> tuple[str, str]:
    """(code, message) for a problem the C scanner reported."""
    what, d = _type_name(ev.rtype), ev.detail
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
        return "bad-record", _zeros(ev)
    if ev.code == _zvcore.SP_TOGUID:
        return "guid", f"{what} record's toguid {d[0]} is not its BEGIN's ({d[1]})"
    if ev.code == _zvcore.SP_IO:
        return "io", f"read error: {os.strerror(ev.errno)}"
    if ev.code == _zvcore.SP_NOMEM:
        return "io", "out of memory for the BEGIN payload: its contents cannot be checked"
    if ev.code == _zvcore.SP_RELAY:
        why = os.strerror(ev.errno)
        return "relay", f"could not pass the stream on after {d[0]} verified bytes: {why}"
    return "internal", f"scanner problem code {ev.code}"


def _zeros(ev: _zvcore.StreamEvent) -> str:
    """One line for a run of zero bytes where a record should start (a sparse or
    pre-allocated file's tail, a copy that stopped): where it starts and how long it is."""
    n, to_end = ev.detail
    msg = f"{n} bytes of zeros from offset {ev.offset}"
    if to_end:
        return msg + " to the end of the input: no record is all zeros"
    return msg + f" (to offset {ev.offset + n}): no record is all zeros; not read past this point"


class _Checker:
    """The nesting state machine fed by scanner events; fills a StreamReport."""

    START, HEADER, BETWEEN, SUB, DONE = range(5)

    def __init__(self, report: StreamReport, max_problems: int) -> None:
        self.report = report
        self.max = max_problems
        self.state = self.START
        self.package = False
        self.current: Substream | None = None
        self.fatal = False
        self.trailing_reported = False
        self.skip = False  # nothing after this point can change the verdict: read, not framed
        self.bad_begin = False  # the next BEGIN event is a record without the magic
        self.open = (0, "")  # (index, toname) of the substream being read, listed or not
        self.by_name: dict[str, Dataset] | None = None  # the header's datasets, by name
        self.last: dict[str, Substream] = {}  # per dataset, its latest substream
        self.final_end: tuple[int, int] | None = None  # (offset, record) of a package's last END

    # -- reporting -------------------------------------------------------------------
    def problem(self, offset: int, record: int, message: str, code: str, span: Any = None) -> None:
        if len(self.report.problems) >= self.max:
            self.report.problems_dropped += 1
            return
        self.report.problems.append(StreamProblem(offset, record, message, code, span))

    def warning(self, offset: int, record: int, message: str, code: str) -> None:
        if len(self.report.warnings) < self.max:
            self.report.warnings.append(StreamProblem(offset, record, message, code))

    def trailing(self, ev: _zvcore.StreamEvent) -> None:
        if not self.trailing_reported:
            self.trailing_reported = True
            msg = "trailing data after the end of the stream (the final END)"
            if ev.kind == _zvcore.EV_PROBLEM and ev.code == _zvcore.SP_ZEROS:
                msg += ": " + _zeros(ev)
            self.problem(ev.offset, ev.record, msg, "trailing-data")
        # Whatever follows, the stream is damaged: its bytes are counted, not framed
        # record by record (a read error still makes it unreadable).
        self.skip = True

    # -- events ----------------------------------------------------------------------
    def event(self, ev: _zvcore.StreamEvent) -> None:
        self.report.size = ev.bytes
        self.report.big_endian = ev.big_endian
        if ev.kind == _zvcore.EV_PROBLEM:
            self.on_problem(ev)
        elif ev.kind == _zvcore.EV_BEGIN:
            self.on_begin(ev)
        elif ev.kind == _zvcore.EV_END:
            self.on_end(ev)
        elif ev.kind == _zvcore.EV_EOF:
            self.on_eof(ev)

    def on_problem(self, ev: _zvcore.StreamEvent) -> None:
        code, message = _scanner_message(ev)
        self.fatal = self.fatal or ev.fatal
        if ev.code in (_zvcore.SP_IO, _zvcore.SP_NOMEM, _zvcore.SP_RELAY):
            self.report.readable = False  # not verified: exit 2, never OK nor DAMAGED
        elif self.state == self.DONE:
            return self.trailing(ev)
        elif ev.code == _zvcore.SP_BEGIN_MAGIC:
            # Not a BEGIN: framing cannot be trusted past it (no substream of it, and
            # the rest is only read: hostile input repeats such records by the million).
            self.bad_begin = self.skip = self.fatal = True
        self.problem(ev.offset, ev.record, message, code, ev.span)

    def add_segment(self, ev: _zvcore.StreamEvent, sub: Substream | None) -> None:
        """Counters of the records since the previous BEGIN/END belong to sub, if any."""
        self.report.records += ev.records
        if sub is None:
            if ev.records and self.state == self.BETWEEN:
                msg = f"{ev.records} record(s) outside any BEGIN..END"
                self.problem(ev.offset, ev.record, msg, "nesting")
            return
        for rtype, n in enumerate(ev.counts):
            if n:
                key = _type_name(rtype)
                sub.counts[key] = sub.counts.get(key, 0) + n
        sub.logical_bytes += ev.logical_bytes
        sub.payload_bytes += ev.payload_bytes

    def on_begin(self, ev: _zvcore.StreamEvent) -> None:
        assert ev.header is not None
        if self.state == self.DONE:
            self.report.records += ev.records
            return self.trailing(ev)
        if self.bad_begin:  # reported already; its records count with what came before
            self.bad_begin = False
            return self.add_segment(ev, self.current if self.state == self.SUB else None)
        begin = fmt.parse_begin(ev.header, ev.big_endian)
        if self.state == self.SUB:
            self.add_segment(ev, self.current)
            index, name = self.open
            msg = f"BEGIN while substream {index} ({name}) has no END"
            self.problem(ev.offset, ev.record, msg, "nesting")
        elif self.state == self.HEADER:
            self.add_segment(ev, None)
            self.problem(ev.offset, ev.record, "compound header has no END", "nesting")
        else:
            self.add_segment(ev, None)
        if begin.header_type == HeaderType.COMPOUNDSTREAM:
            self.begin_compound(ev, begin)
        else:
            if begin.header_type != HeaderType.SUBSTREAM:
                msg = f"unknown BEGIN header type {begin.header_type}"
                self.problem(ev.offset, ev.record, msg, "bad-record")
            self.begin_substream(ev, begin)

    def begin_compound(self, ev: _zvcore.StreamEvent, begin: fmt.BeginHeader) -> None:
        if self.state != self.START:
            self.problem(ev.offset, ev.record, "compound BEGIN inside a package", "nesting")
            return
        header = CompoundHeader(ev.offset, begin.toname, begin.features, None)
        header.nvlist = self.decode_nvlist(ev, begin, HEADER_KEEP, HEADER_MAX_KEPT)
        header.nvlist_bytes = begin.payload_len
        header.datasets = _datasets(header.nvlist)
        if header.nvlist is not None:
            header.nvlist.pop("fss", None)  # now in datasets: not kept twice
        self.report.header = header
        self.package = True
        self.state = self.HEADER
        self.current = None

    def listed(self, ev: _zvcore.StreamEvent) -> bool:
        """Whether one more substream is listed, else counted (memory stays bounded)."""
        report = self.report
        limit = MAX_SUBSTREAMS if report.valid else MAX_DAMAGED_SUBSTREAMS
        if not report.substreams_dropped and len(report.substreams) < limit:
            return True
        report.substreams_dropped += 1  # and, from the first, none is listed any more
        if not report.valid:
            return False
        report.readable = False  # a partial check is no verdict: exit 2
        msg = (
            f"more than {MAX_SUBSTREAMS} substreams: linkage and completeness are not "
            "checked past this point"
        )
        self.problem(ev.offset, ev.record, msg, "limit")
        return False

    def begin_substream(self, ev: _zvcore.StreamEvent, begin: fmt.BeginHeader) -> None:
        unknown = begin.features & ~fmt.KNOWN_FEATURES
        if unknown:
            names = ", ".join(fmt.feature_names(unknown))
            self.warning(ev.offset, ev.record, f"unknown feature flags: {names}", "feature")
        self.state = self.SUB
        self.open = (len(self.report.substreams) + self.report.substreams_dropped, begin.toname)
        if not self.listed(ev):
            self.current = None
            return  # nor its nvlist decoded: nothing would read it
        nvlist = self.decode_nvlist(ev, begin, SUBSTREAM_KEEP)
        sub = Substream(
            index=self.open[0],
            offset=ev.offset,
            record=ev.record,
            toname=begin.toname,
            toguid=begin.toguid,
            fromguid=begin.fromguid,
            creation_time=begin.creation_time,
            objset_type=begin.objset_type,
            flags=begin.flags,
            features=begin.features,
            nvlist=self.kept(ev, nvlist),
        )
        self.report.substreams.append(sub)
        self.current = sub
        if self.package:
            _check_linkage(self, sub)

    def kept(self, ev: _zvcore.StreamEvent, nv: NvDict | None) -> NvDict | None:
        """What a substream's nvlist is used for: the resume point and the raw-send IV-set
        GUIDs, as integers; the rest (megabytes, in hostile input) is not kept."""
        if nv is None:
            return None
        out: NvDict = {}
        for key in KEPT_NVLIST_KEYS:
            if key in nv:
                out[key] = nv[key]
        keydata = nv.get("crypt_keydata")
        if isinstance(keydata, dict):
            out["crypt_keydata"] = {k: keydata[k] for k in KEPT_CRYPT_KEYS if k in keydata}
        bad = [k for k, v in _numbers(out) if not isinstance(v, int) or isinstance(v, bool)]
        if bad:
            msg = f"BEGIN nvlist: {bad[0]} is not an integer"
            self.problem(ev.offset, ev.record, msg, "nvlist")
            return None
        return out

    def decode_nvlist(
        self,
        ev: _zvcore.StreamEvent,
        begin: fmt.BeginHeader,
        keep: KeepSpec,
        max_kept: int | None = None,
    ) -> NvDict | None:
        if not begin.payload_len:
            return None
        if ev.payload is None:
            msg = f"BEGIN payload of {begin.payload_len} bytes not decoded (too large)"
            self.warning(ev.offset, ev.record, msg, "nvlist")
            return None
        try:
            return unpack(ev.payload, keep, max_kept)
        except NvlistLimitError as err:
            self.report.readable = False  # not checked, so not judged: exit 2
            msg = f"BEGIN nvlist not checked: {err}"
            self.problem(ev.offset, ev.record, msg, "limit")
            return None
        except NvlistError as err:
            self.problem(ev.offset, ev.record, f"BEGIN nvlist does not decode: {err}", "nvlist")
            return None

    def on_end(self, ev: _zvcore.StreamEvent) -> None:
        if self.state == self.DONE:
            self.report.records += ev.records
            return self.trailing(ev)
        if self.state == self.SUB:
            self.add_segment(ev, self.current)
            if self.current is not None:
                self.current.end_offset = ev.offset
                self.current.end_ok = ev.end_ok
                self.current.end_checksum = ev.computed
                self.check_features(self.current)
            self.current = None
            self.state = self.BETWEEN if self.package else self.DONE
            return
        # the compound header's END (2 records with its BEGIN) or the package's final END (1)
        expected = 2 if self.state == self.HEADER else 1
        self.report.records += ev.records
        if ev.records > expected:
            msg = f"{ev.records - expected} record(s) outside any BEGIN..END"
            self.problem(ev.offset, ev.record, msg, "nesting")
        if self.state != self.HEADER:
            self.final_end = (ev.offset, ev.record)
        self.state = self.BETWEEN if self.state == self.HEADER else self.DONE

    def check_features(self, sub: Substream) -> None:
        for rtype, feature in fmt.FEATURE_FOR_RECORD.items():
            if sub.counts.get(rtype.name) and not sub.features & feature:
                msg = f"{rtype.name} records without the {feature.name} feature flag"
                self.warning(sub.offset, sub.record, msg, "feature")

    def on_eof(self, ev: _zvcore.StreamEvent) -> None:
        if self.current is not None:
            self.add_segment(ev, self.current)
        else:
            self.report.records += ev.records
        if self.state == self.DONE or self.fatal or not self.report.readable:
            return
        if self.state == self.SUB:
            index, name = self.open
            msg = f"truncated: substream {index} ({name}) has no END"
        elif self.state in (self.HEADER, self.BETWEEN):
            msg = "truncated: package has no final END"
        else:
            msg = "not a send stream"
        self.problem(ev.offset, ev.record, msg, "truncated")

    def finish(self) -> None:
        # A package cut short is already damaged; what else is missing would be noise, and
        # so it would be when substreams went unlisted (the report is not valid then).
        if self.package and self.final_end is not None and not self.report.substreams_dropped:
            _check_complete(self, *self.final_end)


def _numbers(kept: NvDict) -> Iterator[tuple[str, object]]:
    for key, value in kept.items():
        if isinstance(value, dict):
            yield from ((f"{key}.{k}", v) for k, v in value.items())
        else:
            yield key, value


def _datasets(nv: NvDict | None) -> list[Dataset]:
    fss = (nv or {}).get("fss")
    out: list[Dataset] = []
    if not isinstance(fss, dict):
        return out
    for key, entry in fss.items():
        if not isinstance(entry, dict):
            continue
        snaps = entry.get("snaps")
        snapshots = (
            {k: v for k, v in (snaps or {}).items() if isinstance(v, int)}
            if isinstance(snaps, dict)
            else {}
        )
        origin = entry.get("origin")
        name = entry.get("name")
        try:
            guid = int(key, 16)
        except ValueError:
            guid = 0
        out.append(
            Dataset(
                guid=guid,
                name=name if isinstance(name, str) else "",
                snapshots=snapshots,
                origin=origin if isinstance(origin, int) else None,
            )
        )
    return out


def _check_linkage(check: _Checker, sub: Substream) -> None:
    """GUID linkage inside a package, as each substream begins (so that a break makes the
    report damaged at once): per dataset, each substream continues the previous."""
    header = check.report.header
    if check.by_name is None:
        check.by_name = {d.name: d for d in header.datasets} if header else {}
    ds = check.by_name.get(sub.dataset)
    snap = sub.toname.split("@", 1)[1] if "@" in sub.toname else ""
    if ds and snap in ds.snapshots and ds.snapshots[snap] != sub.toguid:
        msg = (
            f"{sub.toname}: toguid {sub.toguid} differs from the package header's "
            f"{ds.snapshots[snap]}"
        )
        check.problem(sub.offset, sub.record, msg, "guid")
    prev = check.last.get(sub.dataset)
    check.last[sub.dataset] = sub
    if prev is None:
        if ds and header:
            _check_first(check, sub, ds, header)
    elif sub.kind != "clone":
        _check_link(check, prev, sub)


def _check_first(check: _Checker, sub: Substream, ds: Dataset, header: CompoundHeader) -> None:
    """Where zfs send starts a dataset: from the header's fromsnap when the dataset has it
    (never in full then); in a -R package, in full or from its origin when it has not."""
    fromsnap, tosnap = header.text("fromsnap"), header.text("tosnap")
    if fromsnap and _before(ds, fromsnap, tosnap):
        want = ds.snapshots[fromsnap]
        if sub.fromguid != want:
            what = f"fromguid {sub.fromguid}" if sub.fromguid else "is a full stream"
            if sub.kind == "clone":
                what = f"is a clone stream from {sub.fromguid}"
            msg = f"{sub.toname}: {what}, but the package starts at @{fromsnap} ({want})"
            check.problem(sub.offset, sub.record, msg, "guid")
    elif fromsnap and header.recursive and sub.kind == "incremental":
        # Without a fromsnap, the -R completeness check names the missing first snapshots.
        msg = (
            f"broken chain: {sub.toname} starts from {sub.fromguid}, but {ds.name} has no "
            f"@{fromsnap}: zfs send -R starts it in full (or from its origin)"
        )
        check.problem(sub.offset, sub.record, msg, "guid")


def _before(ds: Dataset, fromsnap: str, tosnap: str | None) -> bool:
    """fromsnap is listed for ds, before tosnap when that is listed too (fss keeps zfs send's
    creation order)."""
    if fromsnap not in ds.snapshots:
        return False
    names = list(ds.snapshots)
    return tosnap not in ds.snapshots or names.index(fromsnap) < names.index(tosnap)


def _check_link(check: _Checker, prev: Substream, sub: Substream) -> None:
    if sub.fromguid != prev.toguid:
        what = "is a full stream" if not sub.fromguid else f"starts from {sub.fromguid}"
        msg = (
            f"broken chain: {sub.toname} {what}, but the previous substream of "
            f"{sub.dataset} ({prev.toname}) ends at {prev.toguid}"
        )
        check.problem(sub.offset, sub.record, msg, "guid")
        return
    want, have = prev.crypt("to_ivset_guid"), sub.crypt("from_ivset_guid")
    if want and have and want != have:
        msg = f"broken raw chain: {sub.toname} from_ivset_guid {have} is not {prev.toname}'s {want}"
        check.problem(sub.offset, sub.record, msg, "guid")


# -- completeness: what the compound header promises is there --------------------------------

Missing = Callable[[str], None]
"""Reports one incomplete-package problem (at the package's final END)."""

SHOW_SNAPSHOTS = 5


def _check_complete(check: _Checker, offset: int, record: int) -> None:
    """Checksums restart at every BEGIN, so whole substreams can be cut out of a package
    without any checksum noticing: compare what is there with what the header promises."""
    header = check.report.header
    subs = check.report.substreams
    assert header is not None

    def missing(message: str) -> None:
        check.problem(offset, record, f"incomplete package: {message}", "incomplete")

    if not subs:
        return missing(f"no substream at all (the header sends {header.toname})")
    if not header.shape_known:
        msg = "package header nvlist not decoded: completeness checked against its toname only"
        check.warning(header.offset, 0, msg, "nvlist")
        if header.toname not in {s.toname for s in subs}:
            missing(f"{header.toname} is missing")
        return
    if header.recursive:
        _check_replication(header, subs, missing)
    else:
        _check_chain_ends(check, header, subs, missing)


def _check_chain_ends(
    check: _Checker, header: CompoundHeader, subs: list[Substream], missing: Missing
) -> None:
    """Without -R, zfs send writes one dataset's chain ending at the header's snapshot (its
    start, when the header names a fromsnap, is checked by _check_first)."""
    for sub in subs:
        if sub.dataset != header.dataset:
            msg = f"broken chain: {sub.toname} is not a snapshot of the package's {header.dataset}"
            check.problem(sub.offset, sub.record, msg, "guid")
    want = _final_name(header)
    if subs[-1].toname != want:
        missing(f"{want} is missing: the last substream ends at {subs[-1].toname}")


def _final_name(header: CompoundHeader) -> str:
    # A send of a live (read-only) filesystem has no snapshot: libzfs writes `fs@` in the
    # header, the kernel `fs@--head--` in the substream.
    return header.toname + "--head--" if header.toname.endswith("@") else header.toname


def _check_replication(header: CompoundHeader, subs: list[Substream], missing: Missing) -> None:
    """-R: every dataset listed with the tosnap is sent up to it (zfs send skips datasets
    without it and leaves them out of `fss`)."""
    tosnap, fromsnap = header.text("tosnap"), header.text("fromsnap")
    # Present by GUID, or by name: a GUID that disagrees with the header is its own problem.
    guids, names = {s.toguid for s in subs}, {s.toname for s in subs}
    datasets = {s.dataset for s in subs}
    top_listed = False
    for ds in header.datasets:
        wanted = _wanted(ds, tosnap, fromsnap)
        top_listed = top_listed or (bool(wanted) and ds.name == header.dataset)
        lost = [n for n in wanted if ds.snapshots[n] not in guids and f"{ds.name}@{n}" not in names]
        if lost:
            sent = ds.name in datasets or not guids.isdisjoint(ds.snapshots.values())
            missing(_lost_message(ds, lost, sent))
    if not top_listed and header.toname not in names:
        missing(f"{header.toname}, the package's tosnap, is missing")


def _wanted(ds: Dataset, tosnap: str | None, fromsnap: str | None) -> list[str]:
    """The snapshots of ds a -R package must hold.  Without a fromsnap, zfs send -R sends
    every snapshot up to tosnap; fss lists them in creation order (and, from old senders,
    later ones too, hence the cut).  With one, -R -i sends only tosnap (and clone origins),
    and the header does not say -i from -I: only tosnap is certain."""
    if tosnap is None or tosnap not in ds.snapshots:
        return []
    if fromsnap is not None:
        return [tosnap]
    names = list(ds.snapshots)
    return names[: names.index(tosnap) + 1]


def _lost_message(ds: Dataset, lost: list[str], sent: bool) -> str:
    """One line for everything missing of one dataset (sent: any of its substreams is here)."""
    name = ds.name or f"the dataset with GUID {ds.guid}"
    shown = ", ".join(f"@{n}" for n in lost[:SHOW_SNAPSHOTS])
    if len(lost) > SHOW_SNAPSHOTS:
        shown += f" and {len(lost) - SHOW_SNAPSHOTS} more"
    if not sent:
        return f"dataset {name} is missing (the header lists {shown})"
    if len(lost) == 1:
        return f"{name}@{lost[0]} is missing (the header lists it)"
    return f"{name} is missing {shown} (the header lists them)"
