"""Rendering of `cold check`, `cold prune` and `cold clean`: text for people, JSON (GUIDs as
decimal strings).  The JSON schemas are in docs/schema/ (cold-check, cold-send, cold-prune);
`cold send` builds its document in cli/cold.py.

An archive directory may hold any name: in text, every name goes through pathnames'
for_terminal (bytes that are not UTF-8 as \\xHH, a newline as \\n) and nothing else in a
line may break it, so that one entry is one line; in JSON a file name that is not UTF-8 is
escaped the same way and flagged "file_escaped" (docs/schema/README.md).
"""

import json
import re
from collections import Counter
from typing import Any

from zverify.cold.check import ArchiveReport, FileReport, Problem
from zverify.cold.clean import Leftover
from zverify.cold.names import for_json, shown
from zverify.cold.parity import Parity
from zverify.cold.prune import DatasetPrune
from zverify.cold.repair import Outcome, describe
from zverify.sendstream.chain import Restorable

CHECK_SCHEMA = "zverify.cold-check/1"
SEND_SCHEMA = "zverify.cold-send/1"
PRUNE_SCHEMA = "zverify.cold-prune/1"
REPAIR_SCHEMA = "zverify.cold-repair/1"


def check_text(report: ArchiveReport) -> str:
    lines = [f"archive {report.directory}: {len(report.files)} files"]
    for dataset, plan in report.plans.items():
        lines.append(f"{dataset}:")
        lines += [f"  {_restorable(r)}" for r in plan.restorable] or ["  nothing restorable"]
        for chain in report.chains.get(dataset, []):
            lines.append(
                f"  chain from {shown(chain.full)}: {len(chain.files)} files, {chain.bytes:,} bytes"
            )
    busy = [f for f in report.files if f.in_progress]
    if busy:
        lines.append("in progress:")
        lines += [f"  {shown(f.name)}: {f.in_progress}" for f in busy]
    problems = report.all_problems
    if problems:
        lines.append("problems:")
        lines += [f"  {p.kind:<14} {shown(p.file)}: {p.message}" for p in problems]
    verdicts = [(f.name, f.parity.repair) for f in report.files if f.parity and f.parity.repair]
    if verdicts:
        lines.append("repair from parity:")
        lines += [f"  {v.status:<14} {shown(name)}: {describe(v)}" for name, v in verdicts]
    if report.kept:
        lines.append("kept damaged originals of repaired streams (`cold repair --yes` removes):")
        lines += [f"  {shown(name)}" for name in report.kept]
    lines.append(_verdict(report, problems))
    return _text(lines)


def _text(lines: list[str]) -> str:
    """One line per line, whatever a message holds (names in it are shown() already; this is
    for the rest, e.g. a directory given in bytes that are not UTF-8)."""
    return "".join(_CONTROL.sub(_escape, line) + "\n" for line in lines)


_CONTROL = re.compile(r"[\x00-\x1f\x7f\udc80-\udcff]")


def _escape(match: re.Match[str]) -> str:
    char = ord(match.group(0))
    return f"\\x{char - 0xDC00 if char >= 0xDC80 else char:02x}"


def _restorable(r: Restorable) -> str:
    files = len(r.files)
    return f"@{r.snapshot} (guid {r.guid}): restorable from {files} file{'s' * (files != 1)}"


def _verdict(report: ArchiveReport, problems: list[Problem]) -> str:
    if report.exit_code == 2:
        unread = sum(not f.readable for f in report.files)
        return f"INCOMPLETE: {unread} file(s) could not be read"
    if not problems:
        busy = sum(bool(f.in_progress) for f in report.files)
        during = f" ({busy} file(s) of a send in progress not counted)" if busy else ""
        return f"INTACT: every file intact, every incremental reachable from a full{during}"
    counts = ", ".join(f"{k} {n}" for k, n in sorted(Counter(p.kind for p in problems).items()))
    fixable = sum(
        bool(f.parity and f.parity.repair and f.parity.repair.status == "repairable")
        for f in report.files
    )
    hint = f"; {fixable} repairable: `zverify cold repair`" if fixable else ""
    return f"PROBLEMS: {len(problems)} ({counts}){hint}"


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
        "places": [_name(p) for p in report.places or [report.directory]],
        "valid": report.exit_code == 0,
        "exit_code": report.exit_code,
        "datasets": [
            {
                "dataset": d,
                "restorable": [_restorable_doc(r) for r in plan.restorable],
                "chains": [
                    {"full": _name(c.full), "files": [_name(n) for n in c.files], "bytes": c.bytes}
                    for c in report.chains.get(d, [])
                ],
                "problems": [_problem_doc(p) for p in by_dataset[d]],
            }
            for d, plan in report.plans.items()
        ],
        "files": [_file_doc(f) for f in report.files],
        "problems": [_problem_doc(p) for p in loose],
        "kept": [_name(n) for n in report.kept],
    }
    return json.dumps(doc, indent=2) + "\n"


def _restorable_doc(r: Restorable) -> dict[str, Any]:
    return {
        "snapshot": r.snapshot,
        "guid": str(r.guid),
        "creation_time": r.creation_time,
        "files": [_name(n) for n in r.files],
        "bytes": r.bytes,
    }


def _name(name: str) -> str:
    """A file name inside a list, where no flag can go (or text for people that may hold
    one): escaped only when not UTF-8, never a lone surrogate in the JSON."""
    return for_json(name)[0]


_message = _name


def _file_key(name: str) -> dict[str, Any]:
    text, escaped = for_json(name)
    return {"file": text, "file_escaped": True} if escaped else {"file": text}


def _file_doc(f: FileReport) -> dict[str, Any]:
    doc: dict[str, Any] = {**_file_key(f.name), "valid": f.valid, "kind": f.kind, "bytes": f.size}
    if f.compression is not None:
        doc |= {"compression": f.compression, "file_bytes": f.file_bytes}
    if f.place:
        doc["place"] = _name(f.place)
    if f.in_progress:
        doc["in_progress"] = _message(f.in_progress)
    if f.archived is not None:
        first, last = f.archived.steps[0], f.archived.steps[-1]
        doc |= {
            "dataset": last.dataset,
            "from_guid": str(first.from_guid),
            "to_guid": str(last.to_guid),
            "snapshots": [s.snapshot for s in f.archived.steps],
        }
    if f.parity is not None:
        doc["parity"] = _parity_doc(f.parity)
    doc["problems"] = [_problem_doc(p) for p in f.problems]
    return doc


def _parity_doc(p: Parity) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "files": [_name(n) for n in p.files],
        "source_blocks": p.source_blocks,
        "recovery_blocks": p.recovery_blocks,
        "percent": round(p.percent, 2) if p.percent is not None else None,
        "damaged_bytes": p.damaged_bytes,
    }
    if p.repair is not None:
        v = p.repair
        doc["repair"] = {
            "status": v.status,
            "damaged_blocks": v.damaged,
            "blocks": v.blocks,
            "recovery_blocks": v.recovery,
        }
        if v.detail:
            doc["repair"]["detail"] = _message(v.detail)
    return doc


def _problem_doc(p: Problem) -> dict[str, Any]:
    doc: dict[str, Any] = {**_file_key(p.file), "kind": p.kind, "message": _message(p.message)}
    if p.offset is not None:
        doc["offset"] = p.offset
    return doc


# -- prune ----------------------------------------------------------------------------------


def prune_text(
    decisions: list[DatasetPrune],
    actions: dict[str, dict[str, Any]],
    yes: bool,
    blocked: str | None = None,
    problems: list[Problem] | None = None,
) -> str:
    lines = [] if decisions or not blocked else [f"REFUSED: {blocked}; nothing deleted"]
    for d in decisions:
        kept = ", ".join(shown(c.full) for c in d.keep) or "none"
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
        lines += [f"    {shown(name)}" for name in d.files]
        lost = ", ".join(f"@{r.snapshot}" for r in d.lost)
        lines.append(f"  safe because: no kept chain needs them; they alone held {lost or '-'}")
        for name in done.get("released") or []:
            lines.append(f"  released {name}")
        if done.get("note"):
            lines.append(f"  {done['note']}")
    if not yes and any(d.files and not d.refused for d in decisions):
        lines.append("dry run: nothing deleted (--yes deletes)")
    if blocked and problems:
        lines.append("problems (`zverify cold check` tells more):")
        lines += [f"  {p.kind:<14} {shown(p.file)}: {p.message}" for p in problems]
    return _text(lines)


def prune_json(
    decisions: list[DatasetPrune],
    actions: dict[str, dict[str, Any]],
    yes: bool,
    blocked: str | None = None,
    problems: list[Problem] | None = None,
) -> str:
    done = {
        dataset: {k: [_name(n) for n in v] if k == "deleted" else v for k, v in action.items()}
        for dataset, action in actions.items()
    }
    doc = {
        "schema": PRUNE_SCHEMA,
        "dry_run": not yes,
        "refused": _message(blocked) if blocked else None,
        "problems": [_problem_doc(p) for p in problems or []],
        "datasets": [
            {
                "dataset": d.dataset,
                "keep": [_name(c.full) for c in d.keep],
                "newest_kept": _restorable_doc(d.newest_kept) if d.newest_kept else None,
                "remove": [_name(n) for n in d.files],
                "bytes": d.bytes,
                "lost": [{"snapshot": r.snapshot, "guid": str(r.guid)} for r in d.lost]
                if d.files
                else [],
                "refused": d.refused,
                **done.get(d.dataset, {}),
            }
            for d in decisions
        ],
    }
    return json.dumps(doc, indent=2) + "\n"


# -- clean ----------------------------------------------------------------------------------


def clean_text(directory: str, found: list[Leftover], yes: bool) -> str:
    leftovers = [f for f in found if not f.left and not f.in_progress]
    lines = [f"archive {directory}: {len(leftovers)} leftover(s) of interrupted sends"]
    for f in found:
        if f.left:
            lines.append(f"  left alone {shown(f.name)}: {f.left}")
        elif f.in_progress:
            lines.append(f"  in progress {shown(f.name)}: {f.in_progress}, not a leftover")
        else:
            verb = "removed" if f.removed else "would remove"
            lines.append(f"  {verb} {shown(f.name)} ({f.bytes:,} bytes)")
    if leftovers and not yes:
        lines.append("dry run: nothing removed (--yes removes)")
    return _text(lines)


# -- repair ----------------------------------------------------------------------------------


def repair_line(o: Outcome) -> str:
    return _text([f"{o.status:<9} {shown(o.name)}: {o.message}"])


def repair_text(outcomes: list[Outcome], removed: list[str]) -> str:
    lines = [f"removed   {shown(name)}" for name in removed]
    kept = [o.kept for o in outcomes if o.kept and o.kept not in removed]
    if kept:
        lines.append(f"kept {len(kept)} damaged original(s): `--yes` removes them")
    if not outcomes:
        lines.append("nothing to repair")
    return _text(lines)


def repair_json(directory: str, outcomes: list[Outcome], removed: list[str], code: int) -> str:
    doc = {
        "schema": REPAIR_SCHEMA,
        "directory": directory,
        "exit_code": code,
        "repairs": [
            {
                **_file_key(o.name),
                "status": o.status,
                "message": _message(o.message),
                "kept": _name(o.kept) if o.kept else None,
            }
            for o in outcomes
        ],
        "removed": [_name(n) for n in removed],
    }
    return json.dumps(doc, indent=2) + "\n"
