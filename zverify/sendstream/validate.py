"""Validate a ZFS send-stream file offline and describe what it contains -> StreamReport.

The C scanner (native/src/zv_stream.c) does the framing and replays the fletcher-4
checksums; it hands back only BEGIN/END records, problems and counters.  This module
opens the input (a compressed file through zverify.sendstream.compressed), runs the
scanner and feeds its events to the checker, the nesting state machine below, which
checks what the scanner cannot know from one record at a time.  What it fills in is in
report (the data), the scanner's problem codes get their words in messages, and what
must hold between the substreams of a package is in package (zfs send's rules):

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

Long because: the checker is one state machine over a package's substreams, and its
transitions share the report they fill in.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

from zverify import _zvcore
from zverify.sendstream import compressed
from zverify.sendstream import format as fmt
from zverify.sendstream.format import HeaderType
from zverify.sendstream.messages import scanner_message, type_name, zeros_message
from zverify.sendstream.nvlist import (
    SCALAR,
    KeepSpec,
    NvDict,
    NvlistError,
    NvlistLimitError,
    unpack,
)
from zverify.sendstream.package import PackageRules, datasets
from zverify.sendstream.report import CompoundHeader, StreamProblem, StreamReport, Substream

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

    A file compressed with zstd, gzip, xz, lz4 or bzip2 (recognised by its first bytes; a pipe's
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
    if decompress and not seekable(fd):  # a pipe: its first bytes tell, and are handed on
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


def seekable(fd: int) -> bool:
    """Whether fd can seek (a file), not a pipe or socket."""
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
        self.rules: PackageRules | None = None  # a package's, from its compound BEGIN
        self.final_end: tuple[int, int] | None = None  # (offset, record) of a package's last END
        self.unknown_feature = False  # a BEGIN set feature flags no release defines

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
                msg += ": " + zeros_message(ev)
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
        code, message = scanner_message(ev)
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
                key = type_name(rtype)
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
        self.receive_rules(ev, begin)
        header = CompoundHeader(ev.offset, begin.toname, begin.features, None)
        header.nvlist = self.decode_nvlist(ev, begin, HEADER_KEEP, HEADER_MAX_KEPT)
        header.nvlist_bytes = begin.payload_len
        header.datasets = datasets(header.nvlist)
        if header.nvlist is not None:
            header.nvlist.pop("fss", None)  # now in datasets: not kept twice
        self.report.header = header
        self.rules = PackageRules(header, self)
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

    def receive_rules(self, ev: _zvcore.StreamEvent, begin: fmt.BeginHeader) -> None:
        """What `zfs receive` refuses in a BEGIN header: its name, its feature flags and,
        in a substream, a GUID of 0 (the record rules are the scanner's: zv_records.c)."""
        assert ev.header is not None
        order = ">" if ev.big_endian else "<"
        versioninfo = int.from_bytes(ev.header[16:24], "big" if order == ">" else "little")
        compound = begin.header_type == HeaderType.COMPOUNDSTREAM
        why = fmt.snapshot_name_problem(begin.toname, header=compound)
        if why:
            msg = f"BEGIN toname {begin.toname[:80]!r} {why}; zfs receive refuses it"
            self.problem(ev.offset, ev.record, msg, "receive-rule")
        why = fmt.unknown_feature_problem(versioninfo)
        if why:
            self.unknown_feature = True  # not verified (exit 2) unless damage is proven: finish
            self.problem(ev.offset, ev.record, f"BEGIN {why}", "unknown-feature")
        why = fmt.feature_problem(versioninfo)
        if why:
            self.problem(ev.offset, ev.record, f"BEGIN {why}", "unsupported-feature")
        if begin.header_type == HeaderType.SUBSTREAM and begin.toguid == 0:
            # dsl_dataset.c draws a snapshot's GUID at random (random_get_pseudo_bytes): 0 is
            # a chance of 2^-64, and zverify's chains read GUID 0 as "no snapshot" (a full's
            # fromguid).  OpenZFS receives it; zverify refuses more, never less.
            msg = "BEGIN toguid is 0: no snapshot has GUID 0 (its chain cannot be told)"
            self.problem(ev.offset, ev.record, msg, "receive-rule")

    def begin_substream(self, ev: _zvcore.StreamEvent, begin: fmt.BeginHeader) -> None:
        self.receive_rules(ev, begin)
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
        if self.rules is not None:
            self.rules.begun(sub)

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
        if sub.features & fmt.Feature.DEDUP or sub.counts.get(fmt.RecordType.WRITE_BYREF.name):
            # OpenZFS 2 dropped dedup receive: libzfs_sendrecv.c zfs_receive_impl ("stream
            # has deprecated feature: dedup") and zfs_receive_one refuse a stream with
            # DMU_BACKUP_FEATURE_DEDUP and point at `zstream redup`; cold check's chain
            # model calls it unsupported (cold/proof/check.py _unsupported)
            msg = (
                "a deduplicated stream (zfs send -D, OpenZFS 0.8 or older): intact, but "
                "OpenZFS 2 receives it only after `zstream redup`"
            )
            self.warning(sub.offset, sub.record, msg, "dedup")
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
            # Input that ends at a record boundary: a truncation, or what `zfs send --saved`
            # writes (dmu_send.c dmu_send_impl omits the END of a saved stream so that the
            # receiver keeps it as an interrupted, resumable receive): no snapshot either way
            msg = (
                f"truncated: substream {index} ({name}) has no END (cut at a record "
                "boundary, or a `zfs send --saved` partial: received, it is an interrupted "
                "receive, not a snapshot)"
            )
        elif self.state in (self.HEADER, self.BETWEEN):
            msg = "truncated: package has no final END"
        else:
            msg = "not a send stream"
        self.problem(ev.offset, ev.record, msg, "truncated")

    def finish(self) -> None:
        unproven = {"unknown-feature", "receive-rule", "unsupported-feature"}
        if self.unknown_feature and all(p.code in unproven for p in self.report.problems):
            # a format zverify does not know: neither valid nor damaged is proven (exit 2),
            # nor are the record rules; damage the bytes prove (a checksum, the framing)
            # stands whatever the flags say (they may be the damaged bits)
            self.report.readable = False
        # A package cut short is already damaged; what else is missing would be noise, and
        # so it would be when substreams went unlisted (the report is not valid then).
        rules, end = self.rules, self.final_end
        if rules is not None and end is not None and not self.report.substreams_dropped:
            rules.complete(self.report.substreams, *end)


def _numbers(kept: NvDict) -> Iterator[tuple[str, object]]:
    for key, value in kept.items():
        if isinstance(value, dict):
            yield from ((f"{key}.{k}", v) for k, v in value.items())
        else:
            yield key, value
