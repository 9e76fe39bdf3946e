"""`--json` and `--jsonl` renderings of a CompareResult; the schemas are `zverify schema NAME`.

Both are written as the comparison goes (JsonStream, JsonLinesStream): each difference when
it is found, the summary at the end, so memory does not grow with the differences.  A run
that fails part way still ends its document, with "complete": false and the error.

Paths are relative to the roots; a path that is not valid UTF-8 is written
with \\xHH escapes and flagged "path_escaped": true (see pathnames.py).
"""

import json
import os
from collections.abc import Callable
from typing import Any

from zverify import provenance
from zverify.compare.diffs import Difference
from zverify.compare.result import CompareResult
from zverify.compare.sizes import SideTally
from zverify.fsinfo import FsInfo
from zverify.pathnames import display

SCHEMA = "zverify.compare/2"
LINES_SCHEMA = "zverify.compare-lines/1"
Write = Callable[[str], object]


def _path_fields(key: str, path: bytes) -> dict[str, Any]:
    text, escaped = display(path)
    return {key: text, f"{key}_escaped": True} if escaped else {key: text}


def difference_doc(d: Difference) -> dict[str, Any]:
    out: dict[str, Any] = {**_path_fields("path", d.path), "kind": d.kind.value, "detail": d.detail}
    if d.src is not None or d.dst is not None:
        out["src"], out["dst"] = d.src, d.dst
    if d.members:
        shown = [display(m) for m in d.members]
        out["members"] = [text for text, _ in shown]
        if any(escaped for _, escaped in shown):
            out["members_escaped"] = [escaped for _, escaped in shown]
    for key, escaped in (("src_escaped", d.src_escaped), ("dst_escaped", d.dst_escaped)):
        if escaped:
            out[key] = True
    if d.entries_below:
        out["entries_below"] = d.entries_below
    return out


def _side(tally: SideTally, fs: FsInfo) -> dict[str, Any]:
    return {
        "du_bytes": tally.du_bytes,
        "du_apparent_bytes": tally.du_apparent_bytes,
        "naive_bytes": tally.naive_bytes,
        "naive_apparent_bytes": tally.naive_apparent_bytes,
        "entries": sum(tally.counts.values()),
        "counts": dict(sorted(tally.counts.items())),
        "filesystem": {"type": fs.fstype, "source": fs.source, "mountpoint": fs.mountpoint},
        "zfs": fs.zfs,
    }


def _excluded(result: CompareResult) -> dict[str, Any]:
    f = result.filter
    return {
        "patterns": f.patterns(),
        "files_from": f.listed_from if f.listed is not None else None,
        "listed": None if f.listed is None else len(f.listed),
        "entries": {"src": result.excluded.get("src", 0), "dst": result.excluded.get("dst", 0)},
        **_not_found(result.unlisted),
    }


def _not_found(paths: list[bytes]) -> dict[str, Any]:
    """--files-from paths in neither tree: they make the result incomplete (exit 2)."""
    shown = [display(p) for p in paths]
    out: dict[str, Any] = {"not_found": len(paths), "not_found_paths": [t for t, _ in shown]}
    if any(escaped for _, escaped in shown):
        out["not_found_escaped"] = [escaped for _, escaped in shown]
    return out


def summary(result: CompareResult) -> dict[str, Any]:
    """Everything but the differences: known only when the comparison has finished."""
    return {
        "complete": True,
        "identical": result.identical,
        "exit_code": result.exit_code,
        "profile": result.policy.profile,
        "checked": sorted(k.value for k in result.policy.checked),
        "content_read": result.policy.reads_content,
        "excluded": _excluded(result),
        "algorithm": result.algorithm.value,
        **_path_fields("src", os.fsencode(result.src_root)),
        **_path_fields("dst", os.fsencode(result.dst_root)),
        "unverifiable": result.unverifiable,
        "notes": result.notes,
        "total": result.total,
        "counts": dict(sorted(result.counts.items())),
        "sizes": {
            "src": _side(result.src_sizes, result.src_fs),
            "dst": _side(result.dst_sizes, result.dst_fs),
            "explanation": result.explanation.rows(),
        },
    }


def render_compare(result: CompareResult) -> str:
    """The whole document of a result whose differences were collected."""
    out: list[str] = []
    stream = JsonStream(out.append)
    for d in result.differences:
        stream.difference(d)
    stream.finish(result)
    return "".join(out)


def _dumps(doc: object) -> str:
    return json.dumps(doc, ensure_ascii=False)


class JsonStream:
    """One JSON document: the differences array first, written as found, then the summary."""

    def __init__(self, write: Write) -> None:
        self._write = write
        self._started = False  # nothing is written before the first difference or the end
        self._first = True

    def _start(self) -> None:
        if not self._started:
            self._write(f'{{\n  "schema": "{SCHEMA}",\n  "differences": [')
            self._started = True

    def difference(self, d: Difference) -> None:
        self._start()
        self._write(("\n    " if self._first else ",\n    ") + _dumps(difference_doc(d)))
        self._first = False

    def finish(self, result: CompareResult) -> None:
        self._start()
        self._close_with(summary(result))

    def abort(self, message: str) -> None:
        """End a document already begun; a run that failed before writing any leaves none."""
        if self._started:
            self._close_with({"complete": False, "error": message})

    def _close_with(self, fields: dict[str, Any]) -> None:
        # the producer goes last: only now is "finished" known
        fields[provenance.KEY] = provenance.producer()
        tail = json.dumps(fields, indent=2, ensure_ascii=False)  # "{\n  ...\n}"
        self._write(("]" if self._first else "\n  ]") + "," + tail[1:] + "\n")


class JsonLinesStream:
    """JSON Lines: a header, one line per difference as found, a summary (or an abort) line."""

    def __init__(self, write: Write, src: str, dst: str) -> None:
        self._write = write
        self._header: dict[str, Any] | None = {
            "type": "header",
            "schema": LINES_SCHEMA,
            provenance.KEY: provenance.producer(finished=False),  # the summary line finishes
            **_path_fields("src", os.fsencode(src)),
            **_path_fields("dst", os.fsencode(dst)),
        }

    def _line(self, doc: dict[str, Any]) -> None:
        if self._header is not None:  # written with the first line, as JsonStream does
            header, self._header = self._header, None
            self._write(_dumps(header) + "\n")
        self._write(_dumps(doc) + "\n")

    def difference(self, d: Difference) -> None:
        self._line({"type": "difference", **difference_doc(d)})

    def finish(self, result: CompareResult) -> None:
        self._line({"type": "summary", **summary(result), provenance.KEY: provenance.producer()})

    def abort(self, message: str) -> None:
        if self._header is None:
            ended = {"complete": False, "error": message, provenance.KEY: provenance.producer()}
            self._line({"type": "summary", **ended})
