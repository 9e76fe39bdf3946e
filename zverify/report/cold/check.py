"""Rendering of `cold check` at each depth (full, sample, metadata): every file, every
problem, each dataset's restorable snapshots, the verdict last; and the warnings that send
and restore print about the archive they read."""

import datetime
import json
import time
from collections import Counter
from typing import Any

from zverify import exitcodes, provenance
from zverify.cold import names
from zverify.cold.names import shown
from zverify.cold.proof.check import ArchiveReport, FileReport, Problem
from zverify.cold.repair import describe
from zverify.report.cold.documents import (
    file_key,
    json_name,
    parity_doc,
    problem_doc,
    text_lines,
)
from zverify.sendstream.chain import DatasetPlan, Restorable
from zverify.sendstream.route import Route

CHECK_SCHEMA = "zverify.cold-check/2"
LINES_SCHEMA = "zverify.cold-check-lines/1"


def check_text(report: ArchiveReport, verbose: bool = False) -> str:
    """Per dataset what a restore has (how many snapshots, the oldest and newest with their
    dates) and what is lost behind which file, one line per cause; then the problems and
    the verdict.  verbose: every restorable snapshot too, a line each."""
    lines = [f"archive {report.directory}: {len(report.files):,} files"]
    if report.depth == "metadata":
        lines[0] += " (depth metadata: listing, HEAD and sidecars; no stream byte read)"
    if report.depth == "sample":
        lines[0] += f" (depth sample: {_sampled_text(report)}, and the metadata)"
    if report.depth != "full":
        lines += [f"  {shown(f.name)}: {_stored_text(f)}" for f in report.files if f.stored]
    now = time.time()
    for plan in report.plans.values():
        lines += _dataset_lines(report, plan, now, verbose)
    busy = [f for f in report.files if f.in_progress]
    if busy:
        lines.append("in progress:")
        lines += [f"  {shown(f.name)}: {f.in_progress}" for f in busy]
    problems = report.all_problems
    if problems:
        lines.append("problems:")
        lines += _problem_lines(problems)
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


FOLDED = 3  # this many orphans behind one lost stream are one line in text


def _problem_lines(problems: list[Problem]) -> list[str]:
    """One line per problem, but the orphans that follow one orphan (every file behind one
    lost stream: one cause, one message) as one line naming the first and last file and
    how many; JSON lists each.  Nothing else is folded: other problems alike in words are
    about files each worth its own line (a hostile entry must be named)."""
    groups: dict[tuple[str, str], list[Problem]] = {}
    for p in problems:
        groups.setdefault((p.kind, p.message), []).append(p)
    lines = []
    for p in problems:
        same = groups[p.kind, p.message]
        if p.kind != "orphan" or len(same) < FOLDED:
            lines.append(f"  {p.kind:<14} {shown(p.file)}: {p.message}")
        elif p is same[0]:  # the run's line, where its first problem was
            span = f"{shown(p.file)} .. {shown(same[-1].file)} ({len(same):,} files)"
            lines.append(f"  {p.kind:<14} {span}: {p.message}")
    return lines


def proven_by(depth: str) -> str:
    """How a restorable claim of `check` was proven: the stream and record checks of every
    byte (docs/design/sendstream.md: what OpenZFS 2.1's receive refuses in a stream on its
    own), or what the sidecars say those checks found when the file was sent.  Never a
    receive: `prune --trial-receive` does one."""
    if depth == "full":
        return "stream and record checks"
    return "sidecars: stream and record checks when sent"


def _dataset_lines(
    report: ArchiveReport, plan: DatasetPlan, now: float, verbose: bool
) -> list[str]:
    was = f" (was {', '.join(plan.was)})" if plan.was else ""  # renamed: one chain
    count = len(plan.restorable)
    proof = proven_by(report.depth)
    if not count:
        lines = [f"{plan.dataset}{was}: nothing restorable"]
    else:
        lines = [f"{plan.dataset}{was}: {_plural(count, 'restorable snapshot')} ({proof})"]
        lines.append(f"  oldest {_when(plan.restorable[0], now)}")
        lines += [f"  newest {_when(r, now)}" for r in plan.newest if r is not plan.restorable[0]]
    if verbose:
        lines += [f"  {_restorable(r)}" for r in plan.restorable]
    for chain in report.chains.get(plan.dataset, []):
        lines.append(
            f"  chain from {shown(chain.full)}: {_plural(len(chain.files), 'file')}, "
            f"{chain.bytes:,} bytes"
        )
    lines += [f"  {line}" for line in _lost_lines(report, plan)]
    if plan.dataset in report.digests:
        lines.append(f"  {_digest_text(report.digests[plan.dataset])}")
    return lines


def _when(r: Restorable, now: float) -> str:
    """@snapshot, made 2026-11-29 09:00 UTC (3 days ago): the stream's own creation time."""
    if not r.creation_time:
        return f"@{r.snapshot} (guid {r.guid}, no creation time in its stream)"
    made = datetime.datetime.fromtimestamp(r.creation_time, datetime.UTC)
    return f"@{r.snapshot}, made {made:%Y-%m-%d %H:%M} UTC ({ago(now - r.creation_time)})"


def ago(seconds: float) -> str:
    if seconds < 0:
        return "in the future: the clock of the machine that made it was ahead"
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= 2 * size or unit == "minute":
            return f"{_plural(int(seconds // size), unit)} ago"
    raise AssertionError("unreachable")


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'s' * (n != 1)}"


def _lost_lines(report: ArchiveReport, plan: DatasetPlan) -> list[str]:
    """One line per cause of a dataset's orphans: the file that lost its base, the files and
    snapshots behind it as a range, and where the base went (a damaged file, or no file)."""
    behind: dict[str, list[str]] = {}
    for p in report.problems:
        if p.kind == "orphan" and p.dataset == plan.dataset:
            behind.setdefault(p.follows or p.file, []).append(p.file)
    if not behind:  # nothing lost: no file's name is parsed
        return []
    by_name = {f.name: f for f in report.files}
    bases = {name: guid for name, guid, _needs in plan.orphans}
    broken = {  # by the names (dataset, snapshot) each file not intact claims to end at
        (named.dataset, named.to_snap): f.name
        for f in report.files
        if not f.valid and (named := names.parse(f.name)) is not None
    }
    lines: list[tuple[tuple[int, str], str]] = []
    for root, files in behind.items():
        steps = sorted(
            (s.creation_time, s.snapshot)
            for name in files
            if (archived := by_name[name].archived) is not None
            for s in archived.steps_of(plan.dataset)
        )
        span = f"@{steps[0][1]}" if len(steps) == 1 else f"@{steps[0][1]} .. @{steps[-1][1]}"
        lost = f"{_plural(len(steps), 'snapshot')} ({span})" if steps else "its snapshots"
        gap = _gap(broken, root, bases.get(root))
        line = f"lost: {lost} in {_plural(len(files), 'file')} from {shown(root)} on; {gap}"
        lines.append((steps[0] if steps else (0, ""), line))
    return [line for _first, line in sorted(lines)]  # oldest loss first


def _gap(broken: dict[tuple[str, str], str], root: str, guid: int | None) -> str:
    """Where the base of the first lost file went: named by the file names' convention (a
    hint: chains go by GUID), a file not intact that ends there, else no file at all."""
    named = names.parse(root)
    if named is None or named.from_snap is None:
        return f"no intact file ends at its base, guid {guid}"
    base = f"@{named.from_snap} (guid {guid})"
    if (there := broken.get((named.dataset, named.from_snap))) is not None:
        return f"its base {base} is in {shown(there)}, which is not intact"
    return f"no intact file ends at its base {base}: a stream is missing (deleted, or never sent)"


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
    fixable = sum(
        bool(f.parity and f.parity.repair and f.parity.repair.status == "repairable")
        for f in report.files
    )
    hint = f"; {fixable} repairable: `zverify cold repair`" if fixable else ""
    return f"PROBLEMS: {problem_counts(problems)}{hint}"


def problem_counts(problems: list[Problem]) -> str:
    """'1 in files (damaged 1), 4757 in chains (orphan 4757)': the files' own problems, as
    `cold scrub` counts them too, apart from what they cost the chains (a dataset's)."""
    parts = []
    for where, these in (
        ("files", [p for p in problems if p.dataset is None]),
        ("chains", [p for p in problems if p.dataset is not None]),
    ):
        if these:
            kinds = sorted(Counter(p.kind for p in these).items())
            parts.append(f"{len(these)} in {where} ({', '.join(f'{k} {n}' for k, n in kinds)})")
    return ", ".join(parts)


def check_json(report: ArchiveReport) -> str:
    return json.dumps(_check_doc(report), indent=2) + "\n"


def check_jsonl(report: ArchiveReport) -> str:
    """The document of check_json as JSON Lines (`zverify schema cold-check-lines`): a header,
    a line per dataset, per restorable snapshot, per file and per problem of the archive as a
    whole, and a summary last, so that a reader of a year of snapshots holds one at a time."""
    doc = _check_doc(report)
    header = {k: doc[k] for k in ("schema", provenance.KEY, "depth", "directory", "places")}
    lines: list[dict[str, Any]] = [{"type": "header", **header, "schema": LINES_SCHEMA}]
    for d in doc["datasets"]:
        lines.append(
            {"type": "dataset", "dataset": {k: v for k, v in d.items() if k != "restorable"}}
        )
        lines += [
            {"type": "snapshot", "dataset": d["dataset"], "snapshot": r} for r in d["restorable"]
        ]
    lines += [{"type": "file", "file": f} for f in doc["files"]]
    lines += [{"type": "problem", "problem": p} for p in doc["problems"]]
    summary = {k: doc[k] for k in ("valid", "exit_code", "kept")}
    lines.append({"type": "summary", **summary})
    return "".join(json.dumps(line) + "\n" for line in lines)


def _check_doc(report: ArchiveReport) -> dict[str, Any]:
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
                "proven_by": proven_by(report.depth),
                "restorable": _snapshot_docs(plan.restorable),
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
    return doc


def _snapshot_docs(restorable: list[Restorable]) -> list[dict[str, Any]]:
    """Linear in the archive: each snapshot names the last file of its route and the
    snapshot whose route that file extends ("after"), never its whole route, which at a
    year of hourly incrementals repeats the chain 8,760 times (routes()).  A route that
    extends no other snapshot's (rare: a cheaper route elsewhere) is listed whole."""
    by_route = {id(r.files): r for r in restorable}  # planned routes share their links
    docs = []
    for r in restorable:
        doc: dict[str, Any] = {
            "snapshot": r.snapshot,
            "guid": str(r.guid),
            "creation_time": r.creation_time,
            "bytes": r.bytes,
            "file": json_name(r.files[-1]),
        }
        parent = r.files.parent if isinstance(r.files, Route) else None
        before = by_route.get(id(parent)) if parent is not None else None
        if len(r.files) == 1:
            doc["after"] = None
        elif before is not None and before.files is parent:
            doc["after"] = str(before.guid)
        else:
            doc["files"] = [json_name(n) for n in r.files]
        docs.append(doc)
    return docs


def routes(dataset_doc: dict[str, Any]) -> dict[str, list[str]]:
    """The files to receive for each snapshot (by GUID) of one dataset of a cold-check/2
    document, in order: what a reader of the JSON does with "after" and "file"."""
    by_guid = {r["guid"]: r for r in dataset_doc["restorable"]}
    found: dict[str, list[str]] = {}

    def route(start: str) -> list[str]:
        todo, guid = [], start
        while guid not in found:  # iterative: a route may be 8,760 files long
            r = by_guid[guid]
            if "files" in r or r["after"] is None:
                found[guid] = r.get("files") or [r["file"]]
                break
            todo.append(guid)
            guid = r["after"]
        for later in reversed(todo):
            found[later] = [*found[by_guid[later]["after"]], by_guid[later]["file"]]
        return found[start]

    return {guid: route(guid) for guid in by_guid}


def _digest_text(found: tuple[str, int, str, int]) -> str:
    snapshot, guid, digest, routes = found
    agree = "its one route" if routes == 1 else f"{routes} routes agree"
    return f"digest of @{snapshot} (guid {guid}): {digest} ({agree})"


def _digest_doc(found: tuple[str, int, str, int] | None) -> dict[str, Any]:
    if found is None:
        return {}
    snapshot, guid, digest, routes = found
    return {"digest": {"snapshot": snapshot, "guid": str(guid), "digest": digest, "routes": routes}}


def _file_doc(f: FileReport) -> dict[str, Any]:
    doc: dict[str, Any] = {**file_key(f.name), "valid": f.valid, "kind": f.kind, "bytes": f.size}
    if f.compression is not None:
        doc |= {"compression": f.compression, "file_bytes": f.file_bytes}
    if f.place:
        doc["place"] = json_name(f.place)
    if f.in_progress:
        doc["in_progress"] = json_name(f.in_progress)
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


def warnings(report: ArchiveReport) -> str:
    """Send and restore go on beside what `cold check` would report: one line each."""
    lines = [
        f"zverify: warning: {p.kind} {shown(p.file)}: {p.message}" for p in report.all_problems
    ]
    return text_lines(lines)
