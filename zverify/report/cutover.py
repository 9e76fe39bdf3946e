"""Rendering of `zverify cutover`: text for people (findings, a table per dataset, the
verdict) and JSON for scripts (GUIDs as decimal strings)."""

import json
from collections import Counter
from typing import Any

from zverify import exitcodes, provenance
from zverify.cutover.findings import Finding, Severity
from zverify.cutover.result import CutoverResult, DatasetResult

SCHEMA = "zverify.cutover/1"
ORDER = (Severity.UNVERIFIED, Severity.FAIL, Severity.WARNING, Severity.NOTE)


def render_text(result: CutoverResult) -> str:
    findings = sorted(result.findings, key=lambda f: ORDER.index(f.severity))
    lines = [f"{f.severity.value:<10} {f.kind:<21} {f.dataset}: {f.message}" for f in findings]
    if lines:
        lines.append("")
    lines += _table(result.datasets)
    lines += ["", _verdict(result)]
    return "\n".join(lines) + "\n"


def _table(datasets: list[DatasetResult]) -> list[str]:
    header = (
        "dataset",
        "replica",
        "latest common",
        "behind",
        "written src",
        "written dst",
        "drift",
    )
    rows = [header] + [_row(d) for d in datasets]
    widths = [max(len(r[i]) for r in rows) for i in range(len(header) - 1)]
    return [
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)) + "  " + r[-1] for r in rows
    ]


def _row(d: DatasetResult) -> tuple[str, ...]:
    common = "-"
    if d.latest_common is not None:
        common = f"@{d.latest_common.src.name}"
        if d.latest_common.dst.name != d.latest_common.src.name:
            common += f" (@{d.latest_common.dst.name} on the replica)"
    return (
        d.src,
        d.dst or "(missing)",
        common,
        str(d.behind),
        _bytes(d.src_written),
        _bytes(d.dst_written),
        ",".join(d.drifted) or "-",
    )


def _bytes(n: int | None) -> str:
    return "-" if n is None else f"{n:,}"


def _verdict(result: CutoverResult) -> str:
    counted = Counter(f.kind for f in result.findings if f.severity is Severity.FAIL)
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(counted.items()))
    warnings = sum(f.severity is Severity.WARNING for f in result.findings)
    also = f"; {warnings} warning(s)" if warnings else ""
    scope = f"{len(result.datasets)} dataset(s){', content read' if result.content else ''}"
    if result.exit_code == exitcodes.TROUBLE:
        unverified = sum(f.severity is Severity.UNVERIFIED for f in result.findings)
        return f"UNVERIFIED: {unverified} check(s) could not be made ({scope}){also}"
    if counted:
        return f"NOT READY: {sum(counted.values())} reason(s) ({kinds}; {scope}){also}"
    if result.unchecked:
        # --no-recursive: ready for SRC only; never "complete", which is read as the tree
        return (
            f"READY for {result.src_root} alone; {len(result.unchecked)} descendant "
            f"dataset(s) not checked (-r checks them) ({scope}){also}"
        )
    return f"READY: the replica is complete, current and faithful ({scope}){also}"


def render_json(result: CutoverResult) -> str:
    doc = {
        "schema": SCHEMA,
        provenance.KEY: provenance.producer(),
        "src": result.src_root,
        "dst": result.dst_root,
        "recursive": result.recursive,
        "scope": "tree" if result.recursive or not result.unchecked else "dataset",
        "descendants_unchecked": result.unchecked,
        "content": result.content,
        "ready": result.ready,
        "exit_code": result.exit_code,
        "datasets": [_dataset(d) for d in result.datasets],
        "findings": [_finding(f) for f in result.findings],
    }
    return json.dumps(doc, indent=2) + "\n"


def _dataset(d: DatasetResult) -> dict[str, Any]:
    common = None
    if d.latest_common is not None:
        common = {
            "name": d.latest_common.src.name,
            "guid": str(d.latest_common.src.guid),
            "dst_name": d.latest_common.dst.name,
        }
    return {
        "src": d.src,
        "dst": d.dst,
        "type": d.type,
        "latest_common": common,
        "behind": d.behind,
        "src_written": d.src_written,
        "dst_written": d.dst_written,
        "findings": [_finding(f) for f in d.findings],
    }


def _finding(f: Finding) -> dict[str, Any]:
    return {
        "kind": f.kind,
        "severity": f.severity.value,
        "dataset": f.dataset,
        "message": f.message,
        **f.details,
    }
