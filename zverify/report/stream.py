"""Rendering of `zverify stream` results: text and JSON for verify, info and token; the JSON
schemas are `zverify schema stream-verify` (stream-info, stream-token)."""

import json
import textwrap
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from zverify import provenance
from zverify.sendstream.report import StreamReport, Substream
from zverify.sendstream.token import ResumeToken

VERIFY_SCHEMA = "zverify.stream-verify/1"
INFO_SCHEMA = "zverify.stream-info/1"
TOKEN_SCHEMA = "zverify.stream-token/1"


def verify_text(reports: list[StreamReport]) -> str:
    return "".join(_verify_one(r) for r in reports)


def verify_json(reports: list[StreamReport]) -> str:
    doc = {
        "schema": VERIFY_SCHEMA,
        provenance.KEY: provenance.producer(),
        "valid": all(r.valid for r in reports),
        "files": [_verify_doc(r) for r in reports],
    }
    return json.dumps(doc, indent=2) + "\n"


def info_json(report: StreamReport) -> str:
    return "".join(info_json_chunks(report))


def info_json_chunks(report: StreamReport) -> Iterator[str]:
    """The document json.dumps(indent=2) would make, one substream at a time: a package
    of a quarter million substreams is never one string (nor one list of dicts)."""
    first = {"schema": INFO_SCHEMA, provenance.KEY: provenance.producer()}
    text = json.dumps(first | report.as_dict(substreams=False), indent=2)
    head, marker, tail = text.partition('"substreams": []')
    if not report.substreams or not marker:
        yield json.dumps(first | report.as_dict(), indent=2) + "\n"
        return
    yield head + '"substreams": [\n'
    last = len(report.substreams) - 1
    for i, sub in enumerate(report.substreams):
        item = textwrap.indent(json.dumps(sub.as_dict(), indent=2), "    ")
        yield item + (",\n" if i < last else "\n")
    yield "  ]" + tail + "\n"


def _summary(r: StreamReport) -> str:
    subs = len(r.substreams) + r.substreams_dropped
    # A package is named by what its header says it sends (for -R, the top dataset's
    # tosnap, not whichever child comes last), a plain stream by its snapshot.
    target = r.header.toname if r.header else r.substreams[-1].toname if subs else ""
    to = f", to {target}" if target else ""
    plural = "s" if subs != 1 else ""
    packed = f" ({r.compression}, {r.file_bytes} in the file)" if r.compression else ""
    return f"{r.kind}, {subs} substream{plural}, {r.records} records, {r.size} bytes{packed}{to}"


def _verify_one(r: StreamReport) -> str:
    verdict = "OK" if r.valid else "DAMAGED" if r.readable else "UNREADABLE"
    lines = [f"{verdict:<10} {r.source}: {_summary(r)}"]
    for p in r.problems:
        lines.append(f"    offset {p.offset} (record {p.record}): {p.message}")
    if r.problems_dropped:
        lines.append(f"    ... and {r.problems_dropped} more problems")
    for w in r.warnings:
        lines.append(f"    warning: offset {w.offset} (record {w.record}): {w.message}")
    return "\n".join(lines) + "\n"


def _verify_doc(r: StreamReport) -> dict[str, Any]:
    full = r.as_dict()
    keep = ["file", "valid", "readable", "kind", "bytes", "compression", "file_bytes"]
    keep += ["records", "problems", "warnings"]
    doc = {k: full[k] for k in keep}
    doc["problems_not_listed"] = r.problems_dropped
    return doc


def _when(ts: int) -> str:
    try:
        return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    except (OverflowError, OSError, ValueError):
        return str(ts)


def _substream_text(s: Substream) -> list[str]:
    d = s.as_dict()
    counts = ", ".join(f"{k} {v}" for k, v in sorted(s.counts.items()))
    lines = [
        f"  [{s.index}] {s.toname}  ({s.kind}{'' if s.complete else ', NO END'})",
        f"      toguid {s.toguid}  fromguid {s.fromguid}  created {_when(s.creation_time)}",
        f"      type {d['objset_type']}  flags {','.join(d['flags']) or '-'}"
        f"  features {','.join(d['features']) or '-'}",
        f"      records: {counts}",
        f"      logical {s.logical_bytes} bytes, stream {s.stream_bytes} bytes,"
        f" at offset {s.offset}",
    ]
    if "resume" in d:
        lines.append(
            f"      resumes at object {d['resume']['object']} offset {d['resume']['offset']}"
        )
    return lines


def info_text(r: StreamReport) -> str:
    return "".join(info_text_chunks(r))


def info_text_chunks(r: StreamReport) -> Iterator[str]:
    """info_text in pieces: the substreams one at a time."""
    verdict = "valid" if r.valid else "DAMAGED" if r.readable else "UNREADABLE"
    order = "big-endian" if r.big_endian else "little-endian"
    lines = [f"{r.source}: {r.kind}, {order}, {r.size} bytes, {r.records} records, {verdict}"]
    if r.header is not None:
        h = r.header.as_dict()
        lines.append(
            "package header: "
            + (
                f"tosnap {h['tosnap']} fromsnap {h['fromsnap'] or '-'} "
                f"recursive {h['recursive']} raw {h['raw']}"
                if h["tosnap"] is not None
                else f"{h['toname']} (no nvlist payload)"
            )
        )
        for ds in r.header.datasets:
            snaps = ", ".join(f"@{n}={g}" for n, g in sorted(ds.snapshots.items()))
            lines.append(f"  dataset {ds.name} (guid {ds.guid}): {snaps}")
    lines.append("substreams:")
    yield "\n".join(lines) + "\n"
    for s in r.substreams:
        yield "\n".join(_substream_text(s)) + "\n"
    lines = []
    if r.substreams_dropped:
        lines.append(f"  ... and {r.substreams_dropped} more substreams, not listed")
    lines += [
        f"  problem at offset {p.offset} (record {p.record}): {p.message}" for p in r.problems
    ]
    if r.problems_dropped:
        lines.append(f"  ... and {r.problems_dropped} more problems")
    lines += [f"  warning at offset {w.offset}: {w.message}" for w in r.warnings]
    if lines:
        yield "\n".join(lines) + "\n"


def _token_fields(tok: ResumeToken) -> dict[str, Any]:
    """Scalar nvlist fields; 64-bit numbers as decimal strings, as `zfs get -Hp` prints them."""
    return {
        k: (str(v) if isinstance(v, int) and not isinstance(v, bool) else v)
        for k, v in tok.nvlist.items()
        if not isinstance(v, bytes | dict | list)
    }


def token_text(tok: ResumeToken) -> str:
    lines = [f"OK         token version {tok.version}"]
    lines += [f"    {k}: {v}" for k, v in sorted(_token_fields(tok).items())]
    return "\n".join(lines) + "\n"


def token_json(tok: ResumeToken) -> str:
    doc = {
        "schema": TOKEN_SCHEMA,
        provenance.KEY: provenance.producer(),
        "valid": True,
        "version": tok.version,
        "checksum_order": tok.checksum_order,
    }
    return json.dumps(doc | {"fields": _token_fields(tok)}, indent=2) + "\n"


def bad_token_text(message: str) -> str:
    return f"DAMAGED    token: {message}\n"


def bad_token_json(message: str) -> str:
    doc = {"schema": TOKEN_SCHEMA, provenance.KEY: provenance.producer()}
    return json.dumps(doc | {"valid": False, "message": message}) + "\n"
