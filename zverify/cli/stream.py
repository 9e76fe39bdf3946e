"""`zverify stream verify|info|token`: check ZFS send-stream files offline.

Thin commands: parse options, call zverify.sendstream.validate / token, render, return the
exit code (0 all intact, 1 something damaged, 2 something could not be read).
"""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Annotated, Any

import typer
from tqdm import tqdm

from zverify import exitcodes
from zverify.errors import UsageError
from zverify.progress import wanted
from zverify.sendstream.token import TokenError, decode_token
from zverify.sendstream.validate import StreamReport, Substream, verify_stream

app = typer.Typer(
    name="stream",
    help="Validate ZFS send-stream files offline (no ZFS needed).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    pretty_exceptions_show_locals=False,
    add_completion=False,
)

JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON document.")]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")]


@contextmanager
def _byte_progress(enabled: bool, name: str, total: int | None) -> Iterator[Callable[[int], None]]:
    """A hook(bytes_read) driving one tqdm bar on stderr, or a no-op."""
    if not enabled:
        yield lambda _n: None
        return
    bar = tqdm(desc=name, total=total, unit="B", unit_scale=True, file=sys.stderr, leave=False)

    def hook(nbytes: int) -> None:
        bar.update(nbytes - bar.n)

    try:
        yield hook
    finally:
        bar.close()


def _open_source(name: str) -> tuple[str | int, int | None]:
    """(what verify_stream reads, its size if known); `-` is stdin, never a terminal."""
    if name == "-":
        if sys.stdin.isatty():
            raise UsageError("refusing to read a send stream from a terminal (pipe or redirect it)")
        return sys.stdin.fileno(), None
    try:
        st = os.stat(name)
    except OSError:
        return name, None  # verify_stream reports why it cannot be opened
    return name, st.st_size if stat.S_ISREG(st.st_mode) else None


def _scan(name: str, quiet: bool) -> StreamReport:
    source, total = _open_source(name)
    with _byte_progress(wanted(quiet), name, total) as hook:
        report = verify_stream(source, progress=hook)
    if name == "-":
        report.source = "-"
    return report


def _overall(reports: list[StreamReport]) -> int:
    if any(not r.readable for r in reports):
        return exitcodes.TROUBLE
    return exitcodes.IDENTICAL if all(r.valid for r in reports) else exitcodes.DIFFERENT


def _summary(r: StreamReport) -> str:
    subs = len(r.substreams)
    # A package is named by what its header says it sends (for -R, the top dataset's
    # tosnap, not whichever child comes last), a plain stream by its snapshot.
    target = r.header.toname if r.header else r.substreams[-1].toname if subs else ""
    to = f", to {target}" if target else ""
    plural = "s" if subs != 1 else ""
    return f"{r.kind}, {subs} substream{plural}, {r.records} records, {r.size} bytes{to}"


def _verify_text(r: StreamReport) -> str:
    verdict = "OK" if r.valid else "DAMAGED" if r.readable else "UNREADABLE"
    lines = [f"{verdict:<10} {r.source}: {_summary(r)}"]
    for p in r.problems:
        lines.append(f"    offset {p.offset} (record {p.record}): {p.message}")
    if r.problems_dropped:
        lines.append(f"    ... and {r.problems_dropped} more problems")
    for w in r.warnings:
        lines.append(f"    warning: offset {w.offset} (record {w.record}): {w.message}")
    return "\n".join(lines) + "\n"


@app.command("verify")
def verify(
    files: Annotated[list[str], typer.Argument(help="Stream files; `-` reads stdin.")],
    as_json: JsonOpt = False,
    quiet: QuietOpt = False,
) -> int:
    """Check framing and checksums: exit 0 all intact, 1 any damaged, 2 any unreadable."""
    if files.count("-") > 1:
        raise UsageError("stdin (-) can be read only once")
    reports = [_scan(name, quiet or as_json) for name in files]
    if as_json:
        doc = {"valid": all(r.valid for r in reports), "files": [_verify_doc(r) for r in reports]}
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    else:
        sys.stdout.write("".join(_verify_text(r) for r in reports))
    return _overall(reports)


def _verify_doc(r: StreamReport) -> dict[str, Any]:
    full = r.as_dict()
    keep = ("file", "valid", "readable", "kind", "bytes", "records", "problems", "warnings")
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


def _info_text(r: StreamReport) -> str:
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
    for s in r.substreams:
        lines += _substream_text(s)
    lines += [
        f"  problem at offset {p.offset} (record {p.record}): {p.message}" for p in r.problems
    ]
    lines += [f"  warning at offset {w.offset}: {w.message}" for w in r.warnings]
    return "\n".join(lines) + "\n"


@app.command("info")
def info(
    file: Annotated[str, typer.Argument(help="A stream file; `-` reads stdin.")],
    as_json: JsonOpt = False,
    quiet: QuietOpt = False,
) -> int:
    """Describe a stream: kind, substreams with GUIDs, features, record counts."""
    report = _scan(file, quiet or as_json)
    if as_json:
        sys.stdout.write(json.dumps(report.as_dict(), indent=2) + "\n")
    else:
        sys.stdout.write(_info_text(report))
    return report.exit_code


@app.command("token")
def token(
    value: Annotated[str, typer.Argument(help="A receive_resume_token value.")],
    as_json: JsonOpt = False,
) -> int:
    """Decode a resume token: exit 0 decoded, 1 damaged or malformed."""
    try:
        tok = decode_token(value)
    except TokenError as err:
        if as_json:
            sys.stdout.write(json.dumps({"valid": False, "message": str(err)}) + "\n")
        else:
            sys.stdout.write(f"DAMAGED    token: {err}\n")
        return exitcodes.DIFFERENT
    fields = {
        k: (str(v) if isinstance(v, int) and not isinstance(v, bool) else v)
        for k, v in tok.nvlist.items()
        if not isinstance(v, bytes | dict | list)
    }
    if as_json:
        doc = {"valid": True, "version": tok.version, "checksum_order": tok.checksum_order}
        sys.stdout.write(json.dumps(doc | {"fields": fields}, indent=2) + "\n")
    else:
        lines = [f"OK         token version {tok.version}"]
        lines += [f"    {k}: {v}" for k, v in sorted(fields.items())]
        sys.stdout.write("\n".join(lines) + "\n")
    return exitcodes.IDENTICAL
