"""Rendering of `cold scrub` (zverify.cold.proof.scrub.ScrubReport): text whose last line is the
verdict, JSON (`zverify schema cold-scrub`) and a node_exporter textfile.

The number to alert on is the age of the oldest proof: in JSON null, in the textfile +Inf,
while any file has no proof that stands (never proven, or its last proof failed), so that
`> threshold` fires for those too.
"""

import json
import math
from collections import defaultdict
from typing import Any

from zverify import exitcodes, provenance
from zverify.cold.names import shown
from zverify.cold.proof.check import UNVERIFIED
from zverify.cold.proof.scrub import Scrubbed, ScrubReport
from zverify.cold.repair import describe
from zverify.report.cold.documents import file_key, json_name, parity_doc, problem_doc, text_lines

SCHEMA = "zverify.cold-scrub/1"


def text(r: ScrubReport) -> str:
    archive = ", ".join(r.places)
    lines = [f"archive {archive}: {len(r.files)} files, {sum(f.size for f in r.files):,} bytes"]
    lines.append(r.ledger.summary())
    lines += [
        f"future proof: {shown(name)} was proven at {time}, later than now (the clock was "
        "ahead): not a proof, read again first"
        for name, time in r.future
    ]
    read = [f for f in r.files if f.read]
    if read:
        lines.append(f"proven this run ({r.read_bytes:,} bytes read):")
        lines += [f"  {f.result:<10} {shown(f.name)}" for f in read]
    problems = r.problems
    if problems:
        lines.append("problems:")
        lines += [f"  {p.kind:<14} {shown(p.file)}: {p.message}" for p in problems]
    repairs = [f for f in read if f.report and f.report.parity and f.report.parity.repair]
    if repairs:
        lines.append("repair from parity (`zverify cold repair`):")
        for f in repairs:
            assert f.report is not None and f.report.parity is not None
            v = f.report.parity.repair
            assert v is not None
            lines.append(f"  {v.status:<14} {shown(f.name)}: {describe(v)}")
    if r.stopped:
        left = [f for f in r.files if not f.read and r.unproven(f)]
        lines.append(f"stopped: {r.stopped}; {len(left)} unproven file(s) left for the next run")
    lines.append(_standing(r))
    lines += _drills(r)
    lines.append(_verdict(r, read))
    return text_lines(lines)


def _standing(r: ScrubReport) -> str:
    oldest = r.oldest_proof_age
    age = "none: a file is unproven" if oldest is None else _age(oldest)
    return f"unproven: {r.unproven_bytes:,} bytes; oldest proof: {age}"


def _drills(r: ScrubReport) -> list[str]:
    """The datasets' drills, once any was drilled (`cold drill`): a line each."""
    ages = r.drill_ages()
    if not r.ledger.drills():
        return []
    return [
        f"drill of {d}: " + ("none that passed" if age is None else f"passed, {_age(age)}")
        for d, age in ages.items()
    ]


def _age(seconds: float) -> str:
    if seconds >= 86400:
        return f"{seconds / 86400:.1f} days old"
    return f"{seconds / 3600:.1f} hours old"


def _verdict(r: ScrubReport, read: list[Scrubbed]) -> str:
    if r.exit_code == exitcodes.TROUBLE:
        unread = {p.file for p in r.problems if p.kind in UNVERIFIED}
        return f"INCOMPLETE: {len(unread)} file(s) could not be read or proven"
    if r.exit_code == exitcodes.DIFFERENT:
        files = {p.file for p in r.problems}
        return f"PROBLEMS: {len(files)} file(s), {len(r.problems)} problem(s)"
    return f"PROVEN: {len(read)} file(s) read and proven ({r.read_bytes:,} bytes)"


def json_doc(r: ScrubReport) -> str:
    oldest = r.oldest_proof_age
    doc: dict[str, Any] = {
        "schema": SCHEMA,
        provenance.KEY: provenance.producer(),
        "places": [json_name(p) for p in r.places],
        "ledger": json_name(r.ledger.path),
        "ledger_records": len(r.ledger.records),
        "ledger_torn": r.ledger.was_torn,
        "read_bytes": r.read_bytes,
        "total_bytes": sum(f.size for f in r.files),
        "unproven_bytes": r.unproven_bytes,
        "oldest_proof_age_seconds": None if oldest is None else round(oldest, 3),
        "drill_age_seconds": {
            d: None if age is None else round(age, 3) for d, age in r.drill_ages().items()
        },
        "stopped": r.stopped,
        "future_proofs": [{**file_key(name), "proven_at": time} for name, time in r.future],
        "valid": r.exit_code == exitcodes.IDENTICAL,
        "exit_code": r.exit_code,
        "files": [_file_doc(f) for f in r.files],
    }
    return json.dumps(doc, indent=2) + "\n"


def _file_doc(f: Scrubbed) -> dict[str, Any]:
    doc: dict[str, Any] = {
        **file_key(f.name),
        "bytes": f.size,
        "dataset": f.dataset,
        "result": f.result,
        "proven_at": f.proven_at.isoformat() if f.proven_at else None,
        "read": f.read,
        "problems": [problem_doc(p) for p in f.problems],
    }
    if f.report is not None and f.report.parity is not None:
        doc["parity"] = parity_doc(f.report.parity)
    return doc


_METRICS = (
    (
        "oldest_proof_age_seconds",
        "Age of the oldest proof of the archive's files (+Inf while a file has none).",
    ),
    (
        "unproven_bytes",
        "Bytes never proven, last proven damaged, no longer standing, or older than --max-age.",
    ),
    ("damaged_files", "Files whose last proof found them damaged, unreadable or wrong."),
    (
        "last_full_pass_timestamp_seconds",
        "Every file was proven at or after this time (absent while a file is unproven).",
    ),
)


def prometheus(r: ScrubReport) -> str:
    """node_exporter's textfile format: per archive, and per dataset of it."""
    archive = ", ".join(r.places)
    groups: dict[str, list[Scrubbed]] = defaultdict(list)
    for f in r.files:
        groups[f.dataset or ""].append(f)
    rows = [({"archive": archive}, r.files)]
    rows += [({"archive": archive, "dataset": d}, files) for d, files in sorted(groups.items())]
    out: list[str] = []
    for metric, help_text in _METRICS:
        out += [f"# HELP zverify_cold_{metric} {help_text}", f"# TYPE zverify_cold_{metric} gauge"]
        for labels, files in rows:
            value = _value(metric, r, files)
            if value is not None:
                out.append(f"zverify_cold_{metric}{{{_labels(labels)}}} {_number(value)}")
    out += _drill_metric(archive, r.drill_ages())
    out += [
        "# HELP zverify_cold_scrub_timestamp_seconds When this scrub ran.",
        "# TYPE zverify_cold_scrub_timestamp_seconds gauge",
        f'zverify_cold_scrub_timestamp_seconds{{archive="{_escape(archive)}"}} '
        f"{r.at.timestamp():.0f}",
        "# HELP zverify_cold_scrub_exit_code The scrub's exit code (0 proven, 1, 2).",
        "# TYPE zverify_cold_scrub_exit_code gauge",
        f'zverify_cold_scrub_exit_code{{archive="{_escape(archive)}"}} {r.exit_code}',
    ]
    return "\n".join(out) + "\n"


def _drill_metric(archive: str, ages: dict[str, float | None]) -> list[str]:
    """Per dataset, the age of the drill that last proved it restores; +Inf while it has
    none (never drilled, or its last drill did not pass); the archive's: the oldest."""
    name = "zverify_cold_drill_age_seconds"
    values = {d: math.inf if age is None else age for d, age in ages.items()}
    out = [
        f"# HELP {name} Age of the last passing `cold drill` (+Inf: none, or the last failed).",
        f"# TYPE {name} gauge",
    ]
    if values:
        out.append(f"{name}{{{_labels({'archive': archive})}}} {_number(max(values.values()))}")
    for d, value in values.items():
        out.append(f"{name}{{{_labels({'archive': archive, 'dataset': d})}}} {_number(value)}")
    return out


def _value(metric: str, r: ScrubReport, files: list[Scrubbed]) -> float | None:
    standing = files and all(f.current for f in files)
    if metric == "unproven_bytes":
        return sum(f.size for f in files if r.unproven(f))
    if metric == "damaged_files":
        return sum(f.result in ("damaged", "unreadable", "problem") for f in files)
    if not standing:
        return math.inf if metric == "oldest_proof_age_seconds" else None
    if metric == "oldest_proof_age_seconds":  # never negative (ScrubReport.age)
        return max(a for f in files if (a := r.age(f)) is not None)
    return min(f.proven_at.timestamp() for f in files if f.proven_at is not None)


def _number(value: float) -> str:
    return "+Inf" if value == math.inf else f"{value:.0f}"


def _labels(labels: dict[str, str]) -> str:
    return ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items())


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
