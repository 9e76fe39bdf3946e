"""Rendering of the cold commands that write or delete: send, restore, prune, clean, lock,
parity and repair (text and JSON each), and the lines printed while they work (a repair
done, an object to thaw).

Long because: the text and JSON of seven commands' results; each pair is short and kept with
its schema.
"""

import datetime
import json
import shlex
from collections import Counter
from typing import Any

from zverify import provenance
from zverify.cold.clean import Leftover
from zverify.cold.names import shown
from zverify.cold.operations import (
    Cleaned,
    LockedChains,
    Protected,
    Pruned,
    Repaired,
    Restored,
    Sent,
)  # fmt: skip
from zverify.cold.proof.check import Problem
from zverify.cold.prune import DatasetPrune
from zverify.cold.repair import Outcome
from zverify.cold.send import SentFile
from zverify.cold.thaw import ThawPlan
from zverify.report.cold.documents import (
    dump,
    file_key,
    json_name,
    problem_doc,
    restorable_doc,
    text_lines,
)

SEND_SCHEMA = "zverify.cold-send/1"


RESTORE_SCHEMA = "zverify.cold-restore/1"


PRUNE_SCHEMA = "zverify.cold-prune/1"


CLEAN_SCHEMA = "zverify.cold-clean/1"


PARITY_SCHEMA = "zverify.cold-parity/1"


REPAIR_SCHEMA = "zverify.cold-repair/1"


LOCK_SCHEMA = "zverify.cold-lock/1"


# -- prune ----------------------------------------------------------------------------------


def prune_text(r: Pruned) -> str:
    lines = [] if r.decisions or not r.blocked else [f"REFUSED: {r.blocked}; nothing deleted"]
    for d in r.decisions:
        lines += _prune_lines(d, r.actions.get(d.dataset, {}))
    if not r.yes and any(d.files and not d.refused for d in r.decisions):
        lines.append("dry run: nothing deleted (--yes deletes)")
    if r.blocked and r.problems:
        lines.append("problems (`zverify cold check` tells more):")
        lines += [f"  {p.kind:<14} {shown(p.file)}: {p.message}" for p in r.problems]
    lines.append(_prune_verdict(r))
    return text_lines(lines)


PRUNE_PROOF = "stream and record checks"


"""What prune's own full read proves of the kept chain (a trial receive, when asked for,
refuses the prune if it fails)."""


def _prune_lines(d: DatasetPrune, done: dict[str, Any]) -> list[str]:
    """One dataset's decision: what is kept, and what goes (or went) and why that is safe."""
    kept = ", ".join(shown(c.full) for c in d.keep) or "none"
    lines = [f"{d.dataset}: keeping {len(d.keep)} chain(s) from {kept}"]
    if d.newest_kept is not None and d.remove:
        lines.append(
            f"  the kept files alone restore up to @{d.newest_kept.snapshot} "
            f"(guid {d.newest_kept.guid}), every byte read just now ({PRUNE_PROOF}; "
            "`--trial-receive` receives them too)"
        )
    if d.refused:
        return [*lines, f"  REFUSED: {d.refused}; nothing deleted"]
    if not d.files:
        return [*lines, "  nothing to prune"]
    how = {"version-removed": "deleted (each its proven version: no delete marker left)"}
    verb = how.get(done.get("deletion", ""), "deleted") if done.get("deleted") else "would delete"
    lines.append(f"  {verb} {len(d.files)} file(s), {d.bytes:,} bytes, in this order:")
    lines += [f"    {shown(name)}" for name in d.files]
    if d.left:  # a versioned bucket: only the proven version goes, an older one stays
        lines.append("  not gone: older versions of these stay in the bucket:")
        lines += [f"    {shown(name)}: {said}" for name, said in d.left.items()]
    lost = ", ".join(f"@{gone.snapshot}" for gone in d.lost)
    held = f"they alone held {lost}" if lost else "no snapshot lives only in them"
    lines.append(f"  safe because: no kept chain needs them; {held}")
    lines += [f"  released {name}" for name in done.get("released") or []]
    if done.get("note"):
        lines.append(f"  {done['note']}")
    return lines


def _prune_verdict(r: Pruned) -> str:
    files = sum(len(d.files) for d in r.decisions if not d.refused)
    refused = sum(bool(d.refused) for d in r.decisions)
    if r.blocked:
        return "REFUSED: nothing deleted until `zverify cold check` is clean"
    tail = f"; {refused} dataset(s) refused" if refused else ""
    if not files:
        return f"{'REFUSED' if refused else 'NOTHING TO PRUNE'}: nothing deleted{tail}"
    left = sum(len(d.left) for d in r.decisions if not d.refused)
    tail += f"; {left} of them keep older versions, not gone (listed above)" if left else ""
    if not r.yes:
        return f"DRY RUN: {files} file(s) would be deleted{tail}"
    return f"PRUNED: {files} file(s) deleted{tail}"


def prune_json(r: Pruned) -> str:
    done = {
        dataset: {k: [json_name(n) for n in v] if k == "deleted" else v for k, v in action.items()}
        for dataset, action in r.actions.items()
    }
    doc = {
        "schema": PRUNE_SCHEMA,
        provenance.KEY: provenance.producer(),
        "dry_run": not r.yes,
        "refused": json_name(r.blocked) if r.blocked else None,
        "problems": [problem_doc(p) for p in r.problems or []],
        "datasets": [
            {
                "dataset": d.dataset,
                "keep": [json_name(c.full) for c in d.keep],
                "newest_kept": restorable_doc(d.newest_kept, PRUNE_PROOF)
                if d.newest_kept
                else None,
                "remove": [json_name(n) for n in d.files],
                "bytes": d.bytes,
                "lost": [{"snapshot": x.snapshot, "guid": str(x.guid)} for x in d.lost]
                if d.files
                else [],
                "refused": d.refused,
                "left": [
                    {"file": json_name(n), "message": json_name(m)} for n, m in d.left.items()
                ],
                **done.get(d.dataset, {}),
            }
            for d in r.decisions
        ],
    }
    return json.dumps(doc, indent=2) + "\n"


# -- clean ----------------------------------------------------------------------------------


def lock_text(r: LockedChains) -> str:
    lines = [
        f"{status:<12} {shown(name)}" + (f" (was until {_day(before)})" if before else "")
        for name, status, before in r.done
    ]
    extended = sum(status != "kept" for _, status, _ in r.done)
    what = "would be extended" if r.dry_run else "extended"
    lines.append(
        f"LOCKED: {len(r.done)} file(s) of the kept chains until {r.until:%Y-%m-%d} "
        f"({extended} {what}); the chains prune removes are left to expire"
    )
    if r.unread:
        lines[-1:-1] = _not_read_lines(r.unread)
        lines[-1] = "INCOMPLETE: " + lines[-1] + _unverified(r.unread)
    return text_lines(lines)


def _day(when: object) -> str:
    return f"{when:%Y-%m-%d}" if isinstance(when, datetime.datetime) else str(when)


def lock_json(r: LockedChains) -> str:
    return dump(
        {
            "schema": LOCK_SCHEMA,
            provenance.KEY: provenance.producer(),
            "places": r.places,
            "dry_run": r.dry_run,
            "exit_code": r.exit_code,
            "until": r.until.isoformat(timespec="seconds"),
            "files": [
                {
                    **file_key(name),
                    "status": status,
                    "before": before.isoformat() if isinstance(before, datetime.datetime) else None,
                }
                for name, status, before in r.done
            ],
            "not_read": _not_read_docs(r.unread),
        }
    )


def clean_text(r: Cleaned) -> str:
    leftovers = [f for f in r.found if not f.left and not f.in_progress]
    lines = [f"archive {r.places}: {len(leftovers)} leftover(s) of interrupted runs"]
    for f in r.found:
        if f.left:
            lines.append(f"  left alone {shown(f.name)}: {f.left}")
        elif f.in_progress:
            lines.append(f"  in progress {shown(f.name)}: {f.in_progress}, not a leftover")
        else:
            verb = "removed" if f.removed else "would remove"
            lines.append(f"  {verb} {shown(f.name)} ({f.bytes:,} bytes)")
    left = sum(bool(f.left) for f in r.found)
    alone = f"; {left} left alone" if left else ""
    removed = sum(f.removed for f in r.found)
    if leftovers and not r.yes:
        lines.append(f"dry run: nothing removed (--yes removes){alone}")
    elif removed:
        lines.append(f"removed {removed} leftover(s){alone}")
    else:
        lines.append(f"nothing to remove{alone}")
    return text_lines(lines)


def clean_json(r: Cleaned) -> str:
    def status(f: Leftover) -> str:
        if f.left:
            return "left"
        if f.in_progress:
            return "in-progress"
        return "removed" if f.removed else "would-remove"

    return dump(
        {
            "schema": CLEAN_SCHEMA,
            provenance.KEY: provenance.producer(),
            "places": r.places,
            "dry_run": not r.yes,
            "exit_code": r.exit_code,
            "leftovers": [
                {
                    **file_key(f.name),
                    "bytes": f.bytes,
                    "status": status(f),
                    "message": json_name(f.left or f.in_progress or ""),
                }
                for f in r.found
            ],
        }
    )


# -- repair ----------------------------------------------------------------------------------


def repair_line(o: Outcome) -> str:
    return text_lines([f"{o.status:<9} {shown(o.name)}: {o.message}"])


def repair_text(r: Repaired) -> str:
    """What follows the lines repair_line() wrote as each repair was done (a dry run: the
    lines of what would be done)."""
    lines = [repair_line(o).rstrip("\n") for o in r.outcomes] if r.dry_run else []
    lines += [f"removed   {shown(name)}" for name in r.removed]
    lines += _not_read_lines(r.unread)
    if r.dry_run:
        lines += [f"would remove {shown(d.name)}: {d.why}" for d in r.removals if d.remove]
    lines += [f"kept      {shown(d.name)}: {d.why}" for d in r.removals if not d.remove]
    kept = [o.kept for o in r.outcomes if o.kept and o.kept not in r.removed]
    if kept:
        lines.append(f"kept {len(kept)} damaged original(s): `--remove-damaged` removes them")
    lines.append(_repair_verdict(r))
    return text_lines(lines)


def _not_read_lines(unread: list[Problem]) -> list[str]:
    """What the archive's check could not read: the verdict cannot be better than that."""
    return [f"not read  {shown(p.file)}: {p.message}" for p in unread]


def _not_read_docs(unread: list[Problem]) -> list[dict[str, Any]]:
    return [{**file_key(p.file), "message": json_name(p.message)} for p in unread]


def _unverified(unread: list[Problem]) -> str:
    return f"; {len(unread)} file(s) not read: not verified" if unread else ""


def _repair_verdict(r: Repaired) -> str:
    kept = sum(not d.remove for d in r.removals)
    left = f"; {kept} damaged original(s) kept, not proven replaced" if kept else ""
    left += _unverified(r.unread)
    if not r.outcomes:
        return f"nothing to repair{left}"
    counts = ", ".join(f"{k} {n}" for k, n in sorted(Counter(o.status for o in r.outcomes).items()))
    return f"{'dry run: nothing repaired; ' if r.dry_run else ''}{counts}{left}"


def repair_json(r: Repaired) -> str:
    doc = {
        "schema": REPAIR_SCHEMA,
        provenance.KEY: provenance.producer(),
        "directory": r.places,
        "dry_run": r.dry_run,
        "exit_code": r.exit_code,
        "repairs": [
            {
                **file_key(o.name),
                "status": o.status,
                "message": json_name(o.message),
                "kept": json_name(o.kept) if o.kept else None,
            }
            for o in r.outcomes
        ],
        "removed": [json_name(n) for n in r.removed],
        "damaged_originals": [
            {**file_key(d.name), "remove": d.remove, "reason": json_name(d.why)} for d in r.removals
        ],
        "not_read": _not_read_docs(r.unread),
    }
    return dump(doc)


def thaw_lines(plan: ThawPlan, asked: bool) -> str:
    """restore --thaw: each archived object the restore needs that is not readable yet, what
    was done about it and why it is needed."""
    doing = {"frozen": "thaw asked" if asked else "would be thawed", "thawing": "thawing"}
    return text_lines(
        [
            f"zverify: {doing.get(f.state, f.state)} {shown(f.key)} "
            f"({f.bytes:,} bytes, {f.storage_class}): {plan.wanted[f.key]}"
            for f in plan.pending
        ]
    )


# -- send -----------------------------------------------------------------------------------


def send_text(r: Sent) -> str:
    if r.planned is not None:
        lines = [
            f"would archive {shown(p.name)}: about {p.estimated_bytes:,} bytes "
            f"({' '.join(map(shlex.quote, p.command))})"
            for p in r.planned
        ]
        total = sum(p.estimated_bytes for p in r.planned)
        lines.append(f"dry run: nothing sent; {len(r.planned)} file(s), about {total:,} bytes")
        return text_lines(lines)
    if not r.files:
        return text_lines([f"nothing to send: {r.reason}"])
    protected = f", {r.parity_percent}% parity" if r.parity_percent else ""
    lines = [
        f"archived {shown(f.name)}: {f.bytes:,} bytes{protected}{_recorded(f)}" for f in r.files
    ]
    lines[-1] += f" ({r.reason})"
    return text_lines(lines)


def _recorded(f: SentFile) -> str:
    if f.manifest is None:
        return ""
    return f", {f.manifest['entries']:,} entries recorded in {shown(str(f.manifest['file']))}"


def send_json(r: Sent) -> str:
    doc: dict[str, Any] = {"schema": SEND_SCHEMA, provenance.KEY: provenance.producer()}
    if r.planned is not None:
        doc["dry_run"] = True
        doc["planned"] = [
            {"file": json_name(p.name), "command": p.command, "estimated_bytes": p.estimated_bytes}
            for p in r.planned
        ]
    done = [_sent_doc(f, r) for f in r.files]
    doc |= {"sent": done[-1] if done else None, "reason": r.reason}
    if r.linked and len(done) == 2:
        doc["linked"] = done[0]
    return dump(doc)


def _sent_doc(f: SentFile, r: Sent) -> dict[str, Any]:
    kept_by = "hold" if r.hold else "bookmark"
    doc: dict[str, Any] = {
        "file": json_name(f.name),
        "bytes": f.bytes,
        **({"sha256": f.sha256} if f.sha256 is not None else {}),
        kept_by: f.keeper,
        "parity_percent": r.parity_percent,
    }
    if f.compression is not None:
        doc |= {"compression": f.compression, "file_bytes": f.file_bytes}
    if f.manifest is not None:
        doc["manifest"] = {**f.manifest, "file": json_name(str(f.manifest["file"]))}
    return doc


# -- restore --------------------------------------------------------------------------------


def restore_text(r: Restored) -> str:
    plan = r.plan
    lines = [
        f"restore {plan.dataset}@{plan.snapshot.snapshot} (guid {plan.snapshot.guid}) into "
        f"{plan.target}: {len(plan.files)} file(s), {plan.snapshot.bytes:,} bytes",
        *(f"  {shown(name)}" for name in plan.files),
    ]
    if r.at is not None:
        lines.append(f"restored {r.at}@{plan.snapshot.snapshot} (guid {plan.snapshot.guid})")
    elif r.script is not None:
        lines.append(f"wrote the receives to {r.script}: nothing received")
    else:
        lines.append("dry run: nothing received")
    return text_lines(lines)


def restore_json(r: Restored) -> str:
    plan = r.plan
    return dump(
        {
            "schema": RESTORE_SCHEMA,
            provenance.KEY: provenance.producer(),
            "dataset": plan.dataset,
            "snapshot": {"name": plan.snapshot.snapshot, "guid": str(plan.snapshot.guid)},
            "files": [json_name(n) for n in plan.files],
            "bytes": plan.snapshot.bytes,
            "target": plan.target,
            "dry_run": r.at is None,
            "script": r.script,
            "restored": f"{r.at}@{plan.snapshot.snapshot}" if r.at is not None else None,
            "openzfs": r.openzfs,
        }
    )


# -- parity ---------------------------------------------------------------------------------

_WOULD = {"added": "would add", "remade": "would remake"}


def parity_text(r: Protected) -> str:
    width = 12 if r.dry_run else 9
    lines = [
        f"{(_WOULD.get(status, status) if r.dry_run else status):<{width}} {shown(name)}: {message}"
        for name, status, message in r.done
    ]
    made = sum(status != "left" for _, status, _ in r.done)
    summary = f"{made} stream(s) {'would be ' if r.dry_run else ''}protected"
    summary += f", {r.left} left without" if r.left else ""
    summary += _unverified(r.unread)
    lines += _not_read_lines(r.unread)
    lines.append(f"dry run: nothing made; {summary}" if r.dry_run else summary)
    return text_lines(lines)


def parity_json(r: Protected) -> str:
    return dump(
        {
            "schema": PARITY_SCHEMA,
            provenance.KEY: provenance.producer(),
            "dry_run": r.dry_run,
            "percent": r.percent,
            "exit_code": r.exit_code,
            "streams": [
                {**file_key(name), "status": status, "message": json_name(message)}
                for name, status, message in r.done
            ],
            "not_read": _not_read_docs(r.unread),
        }
    )
