"""Rendering of `cold drill` (zverify.drill): text whose last line is the verdict (-q
prints only that line), and JSON described by the schema cold-drill (GUIDs as decimal
strings)."""

from __future__ import annotations

import json
from typing import Any

from zverify import provenance
from zverify.cold.names import for_json, shown
from zverify.drill.drill import Drilled
from zverify.drill.rotation import ScrubbedAndDrilled
from zverify.report.cold import scrub as scrub_report
from zverify.report.cold.documents import text_lines, verdict_only

SCHEMA = "zverify.cold-drill/1"


def drill_text(r: Drilled) -> str:
    lines = []
    if r.snapshot is not None:
        lines.append(
            f"drill of {r.dataset}@{r.snapshot} (guid {r.guid}): {len(r.route)} file(s), "
            f"{r.bytes:,} bytes received into {r.scratch} (destroyed)"
        )
        lines += [f"  {shown(name)}" for name in r.route]
    if r.openzfs:
        lines.append(f"received by {' / '.join(r.openzfs)}")
    c = r.compared
    if c is not None:
        lines.append(f"compared with {c.against}: {c.entries:,} entries")
        lines += [f"  {d['path']} ({d['kind']}: {d['detail']})" for d in c.shown]
    if r.ledger:
        lines.append(r.ledger)
    lines.append(_verdict(r))
    return text_lines(lines)


def _verdict(r: Drilled) -> str:
    what = f"{r.dataset}@{r.snapshot}" if r.snapshot else (r.dataset or "the archive")
    c = r.compared
    if r.failure is not None:
        word = "NOT RESTORABLE" if r.exit_code == 1 else "NOT DRILLED"
        return f"{word}: {r.failure}"
    assert c is not None
    if c.unverified:
        n = c.unverified
        return f"NOT VERIFIED: {n} entr{'y' if n == 1 else 'ies'} of {what} could not be read"
    if c.differences:
        return (
            f"DIFFERENT: {c.differences} difference(s) between {what} as received and {c.against}"
        )
    return f"RESTORES: {what} received, and its {c.entries:,} entries equal {c.against}"


def drill_json(r: Drilled) -> str:
    c = r.compared
    doc: dict[str, Any] = {
        "schema": SCHEMA,
        provenance.KEY: provenance.producer(),
        "dataset": r.dataset,
        "snapshot": None if r.snapshot is None else {"name": r.snapshot, "guid": str(r.guid)},
        "route": [for_json(name)[0] for name in r.route],
        "bytes": r.bytes,
        "scratch": r.scratch,
        "openzfs": r.openzfs,
        "compared": None
        if c is None
        else {
            "against": c.against,
            "entries": c.entries,
            "differences": c.differences,
            "unverified": c.unverified,
            "shown": c.shown,
        },
        "ledger": r.ledger,
        "failure": r.failure,
        "result": r.result,
        "exit_code": r.exit_code,
    }
    return json.dumps(doc, indent=2) + "\n"


def render(result: Drilled, as_json: bool, quiet: bool) -> str:
    if as_json:
        return drill_json(result)
    out = drill_text(result)
    return verdict_only(out) if quiet else out


def render_rotation(r: ScrubbedAndDrilled, as_json: bool, quiet: bool) -> str:
    """`cold scrub` with a drill: the scrub's document with the drill's under "drill"; in
    text the scrub's lines, then the drill's (each ending with its verdict line)."""
    if as_json:
        doc = json.loads(scrub_report.json_doc(r.scrub))
        doc["drill"] = None if r.drilled is None else json.loads(drill_json(r.drilled))
        doc["drill_skipped"] = r.skipped
        doc["exit_code"] = r.exit_code
        return json.dumps(doc, indent=2) + "\n"
    scrubbed = scrub_report.text(r.scrub)
    drilled = drill_text(r.drilled) if r.drilled else text_lines([r.skipped or ""])
    if quiet:
        return verdict_only(scrubbed) + verdict_only(drilled)
    return scrubbed + drilled
