"""Rendering of `cold scrub` (zverify.cold.proof.scrub.ScrubReport): text whose last line is the
verdict, JSON (`zverify schema cold-scrub`) and a node_exporter textfile.

The number to alert on is the age of the oldest proof: in JSON null, in the textfile +Inf,
while any file has no proof that stands (never proven, or its last proof failed), so that
`> threshold` fires for those too.
"""

import json
import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

from zverify import __version__, exitcodes, provenance
from zverify.cold.names import shown
from zverify.cold.proof.check import UNVERIFIED
from zverify.cold.proof.scrub import Scrubbed, ScrubReport
from zverify.cold.repair import describe
from zverify.report.cold.check import problem_counts
from zverify.report.cold.documents import file_key, json_name, parity_doc, problem_doc, text_lines

SCHEMA = "zverify.cold-scrub/1"


def text(r: ScrubReport, verbose: bool = False) -> str:
    """The run's standing; the files it read, counted by result (verbose: a line each);
    problems; the verdict.  Chains are `cold check`'s: scrub proves files."""
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
        results = Counter(f.result for f in read)
        counts = ", ".join(f"{result} {n:,}" for result, n in sorted(results.items()))
        lines.append(f"read this run: {len(read):,} file(s), {r.read_bytes:,} bytes ({counts})")
        if verbose:
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
        # as `cold check` counts the files' problems; check adds what they cost the chains
        return f"PROBLEMS: {problem_counts(r.problems)}; the chains: `zverify cold check`"
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
    """node_exporter's textfile format, by its conventions: one series per label set (the
    collector drops a file that repeats one), and totals apart from their parts, so that
    sum() by archive over the dataset series equals the archive's series.  Per dataset of
    the archive zverify_cold_*{archive,dataset} (a file no proof has named a dataset for
    yet: dataset="(unknown)", never the empty value, which Prometheus reads as no label);
    per archive zverify_cold_archive_*{archive}; the run's own series; the build."""
    archive = ", ".join(r.places)
    groups: dict[str, list[Scrubbed]] = defaultdict(list)
    for f in r.files:
        groups[f.dataset or UNKNOWN_DATASET].append(f)
    out: list[str] = []
    for metric, help_text in _METRICS:
        per_dataset = [
            ({"archive": archive, "dataset": d}, _value(metric, r, files))
            for d, files in sorted(groups.items())
        ]
        out += _family(f"zverify_cold_{metric}", f"{help_text} Per dataset.", per_dataset)
        total = [({"archive": archive}, _value(metric, r, r.files))]
        out += _family(f"zverify_cold_archive_{metric}", f"{help_text} The archive.", total)
    out += _drill_metrics(archive, r.drill_ages())
    out += _run_metrics(archive, r)
    return "\n".join(out) + "\n"


UNKNOWN_DATASET = "(unknown)"  # no ZFS dataset name holds parentheses


def _family(
    name: str,
    help_text: str,
    series: Sequence[tuple[dict[str, str], float | None]],
    digits: int = 0,
) -> list[str]:
    """One metric: its HELP and TYPE once, then each series that has a value."""
    rows = [
        f"{name}{{{_labels(labels)}}} {_number(v, digits)}" for labels, v in series if v is not None
    ]
    return [f"# HELP {name} {help_text}", f"# TYPE {name} gauge", *rows]


def _drill_metrics(archive: str, ages: dict[str, float | None]) -> list[str]:
    """Per dataset, the age of the drill that last proved it restores; +Inf while it has
    none (never drilled, or its last drill did not pass); the archive's: the oldest."""
    values = {d: math.inf if age is None else age for d, age in ages.items()}
    what = "Age of the last passing `cold drill` (+Inf: none, or the last failed)"
    per_dataset = [({"archive": archive, "dataset": d}, v) for d, v in values.items()]
    total = [({"archive": archive}, max(values.values()))] if values else []
    return [
        *_family("zverify_cold_drill_age_seconds", f"{what}. Per dataset.", per_dataset),
        *_family("zverify_cold_archive_drill_age_seconds", f"{what}: the oldest.", total),
    ]


def _run_metrics(archive: str, r: ScrubReport) -> list[str]:
    """The run itself, as node_exporter's textfile jobs report theirs."""
    at = {"archive": archive}
    return [
        *_family(
            "zverify_cold_scrub_last_run_timestamp_seconds",
            "When this scrub ran.",
            [(at, r.at.timestamp())],
        ),
        *_family(
            "zverify_cold_scrub_duration_seconds",
            "How long this scrub took.",
            [(at, r.seconds)],
            digits=3,
        ),
        *_family(
            "zverify_cold_scrub_success",
            "1 when this scrub proved every file it read (exit 0), else 0.",
            [(at, 1.0 if r.exit_code == exitcodes.IDENTICAL else 0.0)],
        ),
        *_family(
            "zverify_cold_scrub_exit_code",
            "The scrub's exit code (0 proven, 1 damage found, 2 could not read).",
            [(at, r.exit_code)],
        ),
        *_family(
            "zverify_build_info",
            "The zverify that wrote this file (always 1).",
            [({"version": __version__}, 1.0)],
        ),
    ]


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


def _number(value: float, digits: int = 0) -> str:
    return "+Inf" if value == math.inf else f"{value:.{digits}f}"


def _labels(labels: dict[str, str]) -> str:
    return ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items())


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
