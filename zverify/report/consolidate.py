"""Rendering of `cold consolidate` and `cold digest` (zverify.cold.consolidate): text whose
last line is the verdict (-q prints only that line), and JSON described by the schemas
cold-consolidate and cold-digest (GUIDs as decimal strings)."""

from __future__ import annotations

import json
from typing import Any

from zverify import provenance
from zverify.cold.consolidate import Consolidated, Digested, Route
from zverify.cold.names import for_json, shown
from zverify.report.cold.documents import text_lines, verdict_only
from zverify.sendstream.format import feature_names

CONSOLIDATE_SCHEMA = "zverify.cold-consolidate/1"
DIGEST_SCHEMA = "zverify.cold-digest/1"


def _route_lines(route: Route) -> list[str]:
    head = (
        f"route to {route.dataset}@{route.snapshot} (guid {route.guid}): "
        f"{len(route.files)} file(s), {route.bytes:,} bytes"
    )
    return [head, *(f"  {shown(name)}" for name in route.files)]


def consolidate_text(r: Consolidated) -> str:
    lines = _route_lines(r.route)
    target = f"{r.into}/{shown(r.name)}" if r.into else shown(r.name)
    if r.dry_run:
        lines.append(f"dry run: nothing written; would write {target}")
        return text_lines(lines)
    if r.differs is not None:
        lines.append(f"chain digest {r.chain_digest}")
        lines.append(f"new full     {r.full_digest}")
        lines.append(
            f"DIFFERENT: the full written is not the chain's @{r.route.snapshot} ({r.differs}); "
            "nothing renamed, the partial file removed"
        )
        return text_lines(lines)
    w = r.written
    assert w is not None
    lines.append(f"digest {r.full_digest} (the chain's and the new full's)")
    if r.note:
        lines.append(f"warning: {r.note}")
    lines.append(
        f"consolidated {r.route.dataset}@{r.route.snapshot} (guid {r.route.guid}) into "
        f"{target}: {w.bytes:,} bytes, {w.records:,} records"
    )
    return text_lines(lines)


def _snapshot(name: str, guid: int) -> dict[str, str]:
    return {"name": name, "guid": str(guid)}


def _route_doc(route: Route) -> dict[str, Any]:
    return {
        "files": [for_json(f)[0] for f in route.files],
        "bytes": route.bytes,
        "substreams": [
            {"file": for_json(link.file)[0], "index": link.index,
             "snapshot": _snapshot(link.snapshot, link.guid)}
            for link in route.links
        ],
    }  # fmt: skip


def consolidate_json(r: Consolidated) -> str:
    w = r.written
    doc: dict[str, Any] = {
        "schema": CONSOLIDATE_SCHEMA,
        provenance.KEY: provenance.producer(),
        "dataset": r.route.dataset,
        "snapshot": _snapshot(r.route.snapshot, r.route.guid),
        "route": _route_doc(r.route),
        "file": for_json(r.name)[0],
        "into": r.into,
        "dry_run": r.dry_run,
        "written": not r.dry_run and r.differs is None,
        "stream_bytes": w.bytes if w is not None else None,
        "records": w.records if w is not None else None,
        "features": feature_names(w.features) if w is not None else None,
        "sha256": r.sha256,
        "chain_digest": r.chain_digest,
        "full_digest": r.full_digest,
        "differs": r.differs,
        "note": r.note,
        "exit_code": r.exit_code,
    }
    return json.dumps(doc, indent=2) + "\n"


def digest_text(r: Digested) -> str:
    lines = []
    for route, digest in r.routes:
        via = " + ".join(shown(f) for f in route.files)
        lines.append(f"{digest}  @{r.snapshot} via {via} ({route.bytes:,} bytes)")
    what = f"{r.dataset}@{r.snapshot} (guid {r.guid})"
    if r.differs is not None:
        lines.append(f"DIFFERENT: the routes to {what} disagree: {r.differs}")
    else:
        lines.append(f"{what}: {len(r.routes)} route(s), one digest")
    return text_lines(lines)


def digest_json(r: Digested) -> str:
    doc: dict[str, Any] = {
        "schema": DIGEST_SCHEMA,
        provenance.KEY: provenance.producer(),
        "dataset": r.dataset,
        "snapshot": _snapshot(r.snapshot, r.guid),
        "routes": [{**_route_doc(route), "digest": digest} for route, digest in r.routes],
        "equal": r.differs is None,
        "differs": r.differs,
        "exit_code": r.exit_code,
    }
    return json.dumps(doc, indent=2) + "\n"


def render(result: Consolidated | Digested, as_json: bool, quiet: bool) -> str:
    if isinstance(result, Consolidated):
        out = consolidate_json(result) if as_json else consolidate_text(result)
    else:
        out = digest_json(result) if as_json else digest_text(result)
    return verdict_only(out) if quiet and not as_json else out
