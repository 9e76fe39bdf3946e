"""Rendering of every cold command's result (zverify.cold.operations): text for people, whose
last line is the verdict (-q prints only that line), and JSON (GUIDs as decimal strings)
described by the schemas cold-* (`zverify schema cold-check`...).

An archive directory may hold any name: in text, every name goes through pathnames'
for_terminal (bytes that are not UTF-8 as \\xHH, a newline as \\n) and nothing else in a
line may break it, so that one entry is one line; in JSON a file name that is not UTF-8 is
escaped the same way and flagged "file_escaped" (docs/schema/README.md).

Long because: the text and JSON of eight cold commands' results, with the escaping and
verdict lines they share; by report/'s naming rule one command group is one module.
"""

import datetime
import json
import shlex
from collections import Counter
from collections.abc import Callable
from typing import Any

from zverify import exitcodes, provenance
from zverify.cold.clean import Leftover
from zverify.cold.names import for_json, shown
from zverify.cold.operations import (
    Cleaned,
    LockedChains,
    Protected,
    Pruned,
    Repaired,
    Restored,
    Result,
    Sent,
)  # fmt: skip
from zverify.cold.parity import Parity
from zverify.cold.proof.check import ArchiveReport, FileReport, Problem
from zverify.cold.prune import DatasetPrune
from zverify.cold.repair import Outcome, describe
from zverify.cold.send import SentFile
from zverify.cold.thaw import ThawPlan
from zverify.pathnames import one_line
from zverify.sendstream.chain import Restorable

CHECK_SCHEMA = "zverify.cold-check/1"
SEND_SCHEMA = "zverify.cold-send/1"
RESTORE_SCHEMA = "zverify.cold-restore/1"
PRUNE_SCHEMA = "zverify.cold-prune/1"
CLEAN_SCHEMA = "zverify.cold-clean/1"
PARITY_SCHEMA = "zverify.cold-parity/1"
REPAIR_SCHEMA = "zverify.cold-repair/1"
LOCK_SCHEMA = "zverify.cold-lock/1"


def check_text(report: ArchiveReport) -> str:
    lines = [f"archive {report.directory}: {len(report.files)} files"]
    if report.depth == "metadata":
        lines[0] += " (depth metadata: listing, HEAD and sidecars; no stream byte read)"
    if report.depth == "sample":
        lines[0] += f" (depth sample: {_sampled_text(report)}, and the metadata)"
    if report.depth != "full":
        lines += [f"  {shown(f.name)}: {_stored_text(f)}" for f in report.files if f.stored]
    for dataset, plan in report.plans.items():
        was = f" (was {', '.join(plan.was)})" if plan.was else ""  # renamed: one chain
        lines.append(f"{dataset}{was}:")
        proof = proven_by(report.depth)
        lines += [f"  {_restorable(r)} ({proof})" for r in plan.restorable] or [
            "  nothing restorable"
        ]
        for chain in report.chains.get(dataset, []):
            lines.append(
                f"  chain from {shown(chain.full)}: {len(chain.files)} files, {chain.bytes:,} bytes"
            )
        if dataset in report.digests:
            lines.append(f"  {_digest_text(report.digests[dataset])}")
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
        removes = "`cold repair --remove-damaged` removes"
        lines.append(f"kept damaged originals of repaired streams ({removes}):")
        lines += [f"  {shown(name)}" for name in report.kept]
    if report.ledger:
        lines.append(report.ledger)
    lines.append(_verdict(report, problems))
    return text_lines(lines)


def text_lines(lines: list[str]) -> str:
    """One line per line, whatever a message holds (names in it are shown() already; this is
    for the rest, e.g. a directory given in bytes that are not UTF-8)."""
    return "".join(one_line(line) + "\n" for line in lines)


def proven_by(depth: str) -> str:
    """How a restorable claim of `check` was proven: the stream and record checks of every
    byte (docs/design/sendstream.md: what OpenZFS 2.1's receive refuses in a stream on its
    own), or what the sidecars say those checks found when the file was sent.  Never a
    receive: `prune --trial-receive` does one."""
    if depth == "full":
        return "stream and record checks"
    return "sidecars: stream and record checks when sent"


def _restorable(r: Restorable) -> str:
    files = len(r.files)
    return f"@{r.snapshot} (guid {r.guid}): restorable from {files} file{'s' * (files != 1)}"


def _stored_text(f: FileReport) -> str:
    stored = f.stored or {}
    facts = [f"{f.size:,} bytes", str(stored.get("storage_class") or "")]
    if stored.get("retain_until"):
        facts.append(f"locked until {str(stored['retain_until'])[:10]}")
    if stored.get("legal_hold"):
        facts.append("legal hold")
    compared = stored.get("compared")
    if isinstance(compared, list):
        facts.append(f"as its sidecar says: {', '.join(map(str, compared))}")
    sample = stored.get("sample")
    if isinstance(sample, dict):
        proven = int(sample.get("proven_bytes", 0))
        facts.append(
            f"not sampled ({sample['skipped']})"
            if "skipped" in sample
            else f"{proven:,} bytes proven in {sample['runs']} run(s)"
        )
    return ", ".join(x for x in facts if x)


def _sampled(report: ArchiveReport) -> tuple[int, int, int]:
    """(bytes proven, bytes of the streams sampled, runs) of a --depth sample check."""
    docs = [(f, (f.stored or {}).get("sample")) for f in report.files]
    taken = [(f, d) for f, d in docs if isinstance(d, dict) and "runs" in d]
    return (
        sum(int(d["proven_bytes"]) for _f, d in taken),
        sum(f.size for f, _d in taken),
        sum(int(d["runs"]) for _f, d in taken),
    )


def _sampled_text(report: ArchiveReport) -> str:
    proven, total, runs = _sampled(report)
    share = f" ({100 * proven / total:.1f}%)" if total else ""
    return f"{proven:,} of {total:,} stream bytes{share} proven by their checksums in {runs} run(s)"


def _verdict(report: ArchiveReport, problems: list[Problem]) -> str:
    if report.depth == "sample" and report.exit_code == exitcodes.IDENTICAL:
        return (
            f"SAMPLE AGREES: {_sampled_text(report)}, no damage found, every object as its "
            "sidecar describes it; the rest not read, chains not proven (a check without "
            "--depth reads everything)"
        )
    if report.depth == "metadata" and report.exit_code == exitcodes.IDENTICAL:
        return (
            f"METADATA AGREES: {len(report.files)} object(s) as their sidecars describe them; "
            "no byte read, content and chains not proven (a check without --depth reads them)"
        )
    if report.exit_code == exitcodes.TROUBLE:
        unread = {f.name for f in report.files if not f.readable}
        unread |= {p.file for p in report.not_read}  # sidecars and parity too
        return f"INCOMPLETE: {len(unread)} file(s) could not be read"
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
        provenance.KEY: provenance.producer(),
        "depth": report.depth,
        "directory": report.directory,
        "places": [json_name(p) for p in report.places or [report.directory]],
        "valid": report.exit_code == exitcodes.IDENTICAL,
        "exit_code": report.exit_code,
        "datasets": [
            {
                "dataset": d,
                "restorable": [
                    _restorable_doc(r, proven_by(report.depth)) for r in plan.restorable
                ],
                "chains": [
                    {
                        "full": json_name(c.full),
                        "files": [json_name(n) for n in c.files],
                        "bytes": c.bytes,
                    }
                    for c in report.chains.get(d, [])
                ],
                "problems": [problem_doc(p) for p in by_dataset[d]],
            }
            | _digest_doc(report.digests.get(d))
            for d, plan in report.plans.items()
        ],
        "files": [_file_doc(f) for f in report.files],
        "problems": [problem_doc(p) for p in loose],
        "kept": [json_name(n) for n in report.kept],
    }
    return json.dumps(doc, indent=2) + "\n"


def _digest_text(found: tuple[str, int, str, int]) -> str:
    snapshot, guid, digest, routes = found
    agree = "its one route" if routes == 1 else f"{routes} routes agree"
    return f"digest of @{snapshot} (guid {guid}): {digest} ({agree})"


def _digest_doc(found: tuple[str, int, str, int] | None) -> dict[str, Any]:
    if found is None:
        return {}
    snapshot, guid, digest, routes = found
    return {"digest": {"snapshot": snapshot, "guid": str(guid), "digest": digest, "routes": routes}}


def _restorable_doc(r: Restorable, proof: str) -> dict[str, Any]:
    return {
        "snapshot": r.snapshot,
        "guid": str(r.guid),
        "creation_time": r.creation_time,
        "files": [json_name(n) for n in r.files],
        "bytes": r.bytes,
        "proven_by": proof,
    }


def json_name(name: str) -> str:
    """A file name inside a list, where no flag can go (or text for people that may hold
    one): escaped only when not UTF-8, never a lone surrogate in the JSON."""
    return for_json(name)[0]


_message = json_name


def file_key(name: str) -> dict[str, Any]:
    text, escaped = for_json(name)
    return {"file": text, "file_escaped": True} if escaped else {"file": text}


def _file_doc(f: FileReport) -> dict[str, Any]:
    doc: dict[str, Any] = {**file_key(f.name), "valid": f.valid, "kind": f.kind, "bytes": f.size}
    if f.compression is not None:
        doc |= {"compression": f.compression, "file_bytes": f.file_bytes}
    if f.place:
        doc["place"] = json_name(f.place)
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
        doc["parity"] = parity_doc(f.parity)
    if f.stored is not None:
        doc["stored"] = f.stored
    doc["problems"] = [problem_doc(p) for p in f.problems]
    return doc


def parity_doc(p: Parity) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "files": [json_name(n) for n in p.files],
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


def problem_doc(p: Problem) -> dict[str, Any]:
    doc: dict[str, Any] = {**file_key(p.file), "kind": p.kind, "message": _message(p.message)}
    if p.offset is not None:
        doc["offset"] = p.offset
    if p.damage_from is not None:
        doc["damage_from"] = p.damage_from
    return doc


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
    lines.append(f"  safe because: no kept chain needs them; they alone held {lost or '-'}")
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
        "refused": _message(r.blocked) if r.blocked else None,
        "problems": [problem_doc(p) for p in r.problems or []],
        "datasets": [
            {
                "dataset": d.dataset,
                "keep": [json_name(c.full) for c in d.keep],
                "newest_kept": _restorable_doc(d.newest_kept, PRUNE_PROOF)
                if d.newest_kept
                else None,
                "remove": [json_name(n) for n in d.files],
                "bytes": d.bytes,
                "lost": [{"snapshot": x.snapshot, "guid": str(x.guid)} for x in d.lost]
                if d.files
                else [],
                "refused": d.refused,
                "left": [{"file": json_name(n), "message": _message(m)} for n, m in d.left.items()],
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
    return _dump(
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

    return _dump(
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
                    "message": _message(f.left or f.in_progress or ""),
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
    return [{**file_key(p.file), "message": _message(p.message)} for p in unread]


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
                "message": _message(o.message),
                "kept": json_name(o.kept) if o.kept else None,
            }
            for o in r.outcomes
        ],
        "removed": [json_name(n) for n in r.removed],
        "damaged_originals": [
            {**file_key(d.name), "remove": d.remove, "reason": _message(d.why)} for d in r.removals
        ],
        "not_read": _not_read_docs(r.unread),
    }
    return _dump(doc)


# -- the verdict line (-q), warnings ----------------------------------------------------------


def verdict_only(text: str) -> str:
    """-q: the last line of a text rendering, which is always its verdict."""
    lines = text.splitlines(keepends=True)
    return lines[-1] if lines else ""


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


def warnings(report: ArchiveReport) -> str:
    """Send and restore go on beside what `cold check` would report: one line each."""
    lines = [
        f"zverify: warning: {p.kind} {shown(p.file)}: {p.message}" for p in report.all_problems
    ]
    return text_lines(lines)


def _dump(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=2) + "\n"


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
    return _dump(doc)


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
    return _dump(
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
    return _dump(
        {
            "schema": PARITY_SCHEMA,
            provenance.KEY: provenance.producer(),
            "dry_run": r.dry_run,
            "percent": r.percent,
            "exit_code": r.exit_code,
            "streams": [
                {**file_key(name), "status": status, "message": _message(message)}
                for name, status, message in r.done
            ],
            "not_read": _not_read_docs(r.unread),
        }
    )


_RENDER: dict[type, tuple[Callable[[Any], str], Callable[[Any], str]]] = {
    ArchiveReport: (check_text, check_json),
    Sent: (send_text, send_json),
    Restored: (restore_text, restore_json),
    Pruned: (prune_text, prune_json),
    Cleaned: (clean_text, clean_json),
    Protected: (parity_text, parity_json),
    Repaired: (repair_text, repair_json),
    LockedChains: (lock_text, lock_json),
}


def render(result: Result, as_json: bool, quiet: bool) -> str:
    """One cold command's result as JSON, as text, or (quiet) as its verdict line."""
    text, doc = _RENDER[type(result)]
    if as_json:
        return doc(result)
    return verdict_only(text(result)) if quiet else text(result)
