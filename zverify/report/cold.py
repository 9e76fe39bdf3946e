"""Rendering of `cold check` and `cold prune`: text for people, JSON (GUIDs as decimal strings).
The JSON schemas are in docs/schema/ (cold-check, cold-send, cold-prune); `cold send` builds
its document in cli/cold.py."""

import json
from collections import Counter
from typing import Any

from zverify.cold.check import ArchiveReport, FileReport, Problem
from zverify.cold.prune import DatasetPrune
from zverify.sendstream.chain import Restorable

CHECK_SCHEMA = "zverify.cold-check/1"
SEND_SCHEMA = "zverify.cold-send/1"
PRUNE_SCHEMA = "zverify.cold-prune/1"


def check_text(report: ArchiveReport) -> str:
    lines = [f"archive {report.directory}: {len(report.files)} files"]
    for dataset, plan in report.plans.items():
        lines.append(f"{dataset}:")
        lines += [f"  {_restorable(r)}" for r in plan.restorable] or ["  nothing restorable"]
        for chain in report.chains.get(dataset, []):
            lines.append(
                f"  chain from {chain.full}: {len(chain.files)} files, {chain.bytes:,} bytes"
            )
    problems = report.all_problems
    if problems:
        lines.append("problems:")
        lines += [f"  {p.kind:<14} {p.file}: {p.message}" for p in problems]
    lines.append(_verdict(report, problems))
    return "\n".join(lines) + "\n"


def _restorable(r: Restorable) -> str:
    files = len(r.files)
    return f"@{r.snapshot} (guid {r.guid}): restorable from {files} file{'s' * (files != 1)}"


def _verdict(report: ArchiveReport, problems: list[Problem]) -> str:
    if report.exit_code == 2:
        unread = sum(not f.readable for f in report.files)
        return f"INCOMPLETE: {unread} file(s) could not be read"
    if not problems:
        return "INTACT: every file intact, every incremental reachable from a full"
    counts = ", ".join(f"{k} {n}" for k, n in sorted(Counter(p.kind for p in problems).items()))
    return f"PROBLEMS: {len(problems)} ({counts})"


def check_json(report: ArchiveReport) -> str:
    by_dataset: dict[str, list[Problem]] = {d: [] for d in report.plans}
    for p in report.problems:
        if p.dataset in by_dataset:
            by_dataset[p.dataset].append(p)
    # about the archive, not one dataset or file's stream (a sidecar without its stream)
    loose = [p for p in report.problems if p.dataset not in by_dataset]
    doc = {
        "schema": CHECK_SCHEMA,
        "directory": report.directory,
        "valid": report.exit_code == 0,
        "exit_code": report.exit_code,
        "datasets": [
            {
                "dataset": d,
                "restorable": [_restorable_doc(r) for r in plan.restorable],
                "chains": [
                    {"full": c.full, "files": list(c.files), "bytes": c.bytes}
                    for c in report.chains.get(d, [])
                ],
                "problems": [_problem_doc(p) for p in by_dataset[d]],
            }
            for d, plan in report.plans.items()
        ],
        "files": [_file_doc(f) for f in report.files],
        "problems": [_problem_doc(p) for p in loose],
    }
    return json.dumps(doc, indent=2) + "\n"


def _restorable_doc(r: Restorable) -> dict[str, Any]:
    return {
        "snapshot": r.snapshot,
        "guid": str(r.guid),
        "creation_time": r.creation_time,
        "files": list(r.files),
        "bytes": r.bytes,
    }


def _file_doc(f: FileReport) -> dict[str, Any]:
    doc: dict[str, Any] = {"file": f.name, "valid": f.valid, "kind": f.kind, "bytes": f.size}
    if f.archived is not None:
        first, last = f.archived.steps[0], f.archived.steps[-1]
        doc |= {
            "dataset": last.dataset,
            "from_guid": str(first.from_guid),
            "to_guid": str(last.to_guid),
            "snapshots": [s.snapshot for s in f.archived.steps],
        }
    doc["problems"] = [_problem_doc(p) for p in f.problems]
    return doc


def _problem_doc(p: Problem) -> dict[str, Any]:
    doc: dict[str, Any] = {"file": p.file, "kind": p.kind, "message": p.message}
    if p.offset is not None:
        doc["offset"] = p.offset
    return doc


# -- prune ----------------------------------------------------------------------------------


def prune_text(
    decisions: list[DatasetPrune],
    actions: dict[str, dict[str, Any]],
    yes: bool,
    blocked: str | None = None,
) -> str:
    lines = [] if decisions or not blocked else [f"REFUSED: {blocked}; nothing deleted"]
    for d in decisions:
        kept = ", ".join(c.full for c in d.keep) or "none"
        lines.append(f"{d.dataset}: keeping {len(d.keep)} chain(s) from {kept}")
        if d.newest_kept is not None and d.remove:
            lines.append(
                f"  the kept files alone restore up to @{d.newest_kept.snapshot} "
                f"(guid {d.newest_kept.guid}), every byte read just now"
            )
        if d.refused:
            lines.append(f"  REFUSED: {d.refused}; nothing deleted")
            continue
        if not d.files:
            lines.append("  nothing to prune")
            continue
        done = actions.get(d.dataset, {})
        verb = "deleted" if done.get("deleted") else "would delete"
        lines.append(f"  {verb} {len(d.files)} file(s), {d.bytes:,} bytes, in this order:")
        lines += [f"    {name}" for name in d.files]
        lost = ", ".join(f"@{r.snapshot}" for r in d.lost)
        lines.append(f"  safe because: no kept chain needs them; they alone held {lost or '-'}")
        for name in done.get("released") or []:
            lines.append(f"  released {name}")
        if done.get("note"):
            lines.append(f"  {done['note']}")
    if not yes and any(d.files and not d.refused for d in decisions):
        lines.append("dry run: nothing deleted (--yes deletes)")
    return "\n".join(lines) + "\n"


def prune_json(
    decisions: list[DatasetPrune],
    actions: dict[str, dict[str, Any]],
    yes: bool,
    blocked: str | None = None,
) -> str:
    doc = {
        "schema": PRUNE_SCHEMA,
        "dry_run": not yes,
        "refused": blocked,
        "datasets": [
            {
                "dataset": d.dataset,
                "keep": [c.full for c in d.keep],
                "newest_kept": _restorable_doc(d.newest_kept) if d.newest_kept else None,
                "remove": d.files,
                "bytes": d.bytes,
                "lost": [{"snapshot": r.snapshot, "guid": str(r.guid)} for r in d.lost]
                if d.files
                else [],
                "refused": d.refused,
                **actions.get(d.dataset, {}),
            }
            for d in decisions
        ],
    }
    return json.dumps(doc, indent=2) + "\n"
