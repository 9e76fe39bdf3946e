"""`--json` rendering of a CompareResult; the schema is documented in README.md.

Paths are relative to the roots; a path that is not valid UTF-8 is written
with \\xHH escapes and flagged "path_escaped": true (see pathnames.py).
"""

import json
import os
from typing import Any

from zverify.compare.diffs import Difference
from zverify.compare.result import CompareResult
from zverify.compare.sizes import SideTally
from zverify.fsinfo import FsInfo
from zverify.pathnames import display

SCHEMA_VERSION = 1


def _path_fields(key: str, path: bytes) -> dict[str, Any]:
    text, escaped = display(path)
    return {key: text, f"{key}_escaped": True} if escaped else {key: text}


def _difference(d: Difference) -> dict[str, Any]:
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
    }


def compare_document(result: CompareResult) -> dict[str, Any]:
    return {
        "schema": SCHEMA_VERSION,
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
        "differences": [_difference(d) for d in result.differences],
        "counts": dict(sorted(result.counts.items())),
        "errors": [{**_path_fields("path", d.path), "message": d.detail} for d in result.errors],
        "sizes": {
            "src": _side(result.src_sizes, result.src_fs),
            "dst": _side(result.dst_sizes, result.dst_fs),
            "explanation": result.explanation.rows(),
        },
    }


def render_compare(result: CompareResult) -> str:
    return json.dumps(compare_document(result), indent=2, ensure_ascii=False) + "\n"
