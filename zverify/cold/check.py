"""check_archive(): read every file of an archive directory completely and rebuild every
chain from the GUIDs inside the streams -> ArchiveReport.  No ZFS is needed: archives are
often checked on the machine that stores them.

Nothing in the directory is followed or trusted: symlinks, devices and subdirectories are
reported, never opened; `.partial` files (a send that did not finish) are reported and never
counted as part of a chain; a file name that disagrees with its content is reported.
"""

import json
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field

from zverify import exitcodes
from zverify.cold import names
from zverify.sendstream.chain import ArchivedFile, Chain, DatasetPlan, Step, chains, plan
from zverify.sendstream.validate import StreamReport, verify_stream

SIDECAR = ".json"  # FILE.json beside a stream: metadata for people, never needed to restore
ProgressHook = Callable[[str, int], None]  # (file, bytes read so far of it)


@dataclass(frozen=True)
class Problem:
    file: str
    kind: str  # damaged, truncated, not-a-stream, partial, orphan, duplicate, name-mismatch ...
    message: str
    offset: int | None = None
    dataset: str | None = None  # set for problems of a dataset's chains (orphan, duplicate)


@dataclass
class FileReport:
    name: str
    kind: str  # full, incremental, intermediate, partial, unknown
    size: int = 0
    readable: bool = True
    archived: ArchivedFile | None = None  # set when the whole file is an intact stream
    problems: list[Problem] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        return self.archived is not None and not self.problems


@dataclass
class ArchiveReport:
    directory: str
    files: list[FileReport]
    plans: dict[str, DatasetPlan]
    chains: dict[str, list[Chain]]
    problems: list[Problem]  # about the archive as a whole: orphans, duplicates

    @property
    def all_problems(self) -> list[Problem]:
        return [p for f in self.files for p in f.problems] + self.problems

    @property
    def exit_code(self) -> int:
        unread = any(not f.readable for f in self.files)
        return exitcodes.verdict(unverified=unread, different=bool(self.all_problems))


def check_archive(
    directory: str, dataset: str | None = None, progress: ProgressHook | None = None
) -> ArchiveReport:
    """Raises OSError when the directory itself cannot be listed."""
    with os.scandir(directory) as it:
        entries = sorted(it, key=lambda e: e.name)
    files = [_check_entry(e, progress) for e in entries if not e.name.endswith(SIDECAR)]
    _check_names(files)
    sidecars = {e.name for e in entries if e.name.endswith(SIDECAR)}
    stray = _check_sidecars(directory, files, sidecars)
    # a misnamed but intact stream still restores: chains go by GUID, never by name
    archived = [f.archived for f in files if f.archived is not None]
    datasets = sorted({d for a in archived for d in a.datasets})
    if dataset is not None:
        datasets = [d for d in datasets if d == dataset]
        files = [f for f in files if f.archived is None or dataset in f.archived.datasets]
    plans = {d: p for d, p in plan(archived).items() if d in datasets}
    return ArchiveReport(
        directory,
        files,
        plans,
        {d: chains(d, archived) for d in datasets},
        [p for d in datasets for p in _chain_problems(plans[d])] + stray,
    )


def _check_entry(entry: os.DirEntry[str], progress: ProgressHook | None) -> FileReport:
    if entry.name.endswith(names.PARTIAL):
        why = "left by a send that did not finish: never part of a chain"
        return FileReport(entry.name, "partial", problems=[Problem(entry.name, "partial", why)])
    mode = entry.stat(follow_symlinks=False).st_mode
    if not stat.S_ISREG(mode):
        what = "a symlink" if stat.S_ISLNK(mode) else "not a regular file"
        problem = Problem(entry.name, "not-a-stream", f"{what}: not read, not followed")
        return FileReport(entry.name, "unknown", problems=[problem])
    return _check_stream(entry.path, entry.name, progress)


def _check_stream(path: str, name: str, progress: ProgressHook | None) -> FileReport:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as err:
        problem = Problem(name, "unreadable", f"cannot open: {err.strerror}")
        return FileReport(name, "unknown", readable=False, problems=[problem])
    try:
        hook = (lambda n: progress(name, n)) if progress else None
        report = verify_stream(fd, progress=hook)
    finally:
        os.close(fd)
    return _file_report(name, report)


def _file_report(name: str, report: StreamReport) -> FileReport:
    out = FileReport(name, _kind(report), report.size, report.readable)
    if not report.valid:
        out.problems.append(_stream_problem(name, report))
        return out
    steps = tuple(
        Step(s.dataset, s.fromguid, s.toguid, s.toname.partition("@")[2], s.creation_time)
        for s in report.substreams
    )
    out.archived = ArchivedFile(name, report.size, steps)
    return out


def _kind(report: StreamReport) -> str:
    if not report.substreams:
        return "unknown"
    if report.header is not None:
        return "intermediate"
    return "full" if report.substreams[0].fromguid == 0 else "incremental"


def _stream_problem(name: str, report: StreamReport) -> Problem:
    first = report.problems[0] if report.problems else None
    if first is None:
        return Problem(name, "damaged", "not a valid stream")
    if not report.readable:
        return Problem(name, "unreadable", first.message, first.offset)
    kind = {"truncated": "truncated", "not-a-stream": "not-a-stream"}.get(first.code, "damaged")
    more = len(report.problems) - 1 + report.problems_dropped
    suffix = f" (+{more} more problems)" if more else ""
    return Problem(name, kind, f"at byte {first.offset}: {first.message}{suffix}", first.offset)


def _check_names(files: list[FileReport]) -> None:
    """A conventional name must agree with the stream inside (dataset, snapshots, kind)."""
    snapshot_of = {
        (s.dataset, s.to_guid): s.snapshot for f in files if f.archived for s in f.archived.steps
    }
    for f in files:
        claimed = names.parse(f.name)
        if claimed is None or f.archived is None:
            continue
        first, last = f.archived.steps[0], f.archived.steps[-1]
        actual_from = snapshot_of.get((first.dataset, first.from_guid)) if first.from_guid else None
        mismatches = []
        if claimed.dataset != last.dataset:
            mismatches.append(f"dataset {last.dataset!r}")
        if claimed.to_snap != last.snapshot:
            mismatches.append(f"ends at @{last.snapshot}")
        if (claimed.from_snap is None) != (first.from_guid == 0):
            mismatches.append("is a full stream" if first.from_guid == 0 else "is incremental")
        elif claimed.from_snap and actual_from and claimed.from_snap != actual_from:
            mismatches.append(f"starts from @{actual_from}")
        if mismatches:
            message = f"the name says otherwise: the stream {', '.join(mismatches)}"
            f.problems.append(Problem(f.name, "name-mismatch", message))


def _check_sidecars(directory: str, files: list[FileReport], sidecars: set[str]) -> list[Problem]:
    """A sidecar must agree with its stream; one without a stream is reported.  (Its sha256
    is for tools without zverify: the stream's own checksums have just covered every byte.)"""
    for f in files:
        if f.archived is not None and f.name + SIDECAR in sidecars:
            f.problems += _sidecar_problems(os.path.join(directory, f.name + SIDECAR), f)
    streams = {f.name for f in files}
    return [
        Problem(name, "sidecar-mismatch", f"its stream {name[: -len(SIDECAR)]} is not here")
        for name in sorted(sidecars)
        if name[: -len(SIDECAR)] not in streams
    ]


def _sidecar_problems(path: str, f: FileReport) -> list[Problem]:
    name = os.path.basename(path)
    try:
        with open(path, "rb") as fh:
            doc = json.loads(fh.read(1 << 20))
    except (OSError, ValueError) as err:
        return [Problem(f.name, "sidecar-mismatch", f"{name} cannot be read: {err}")]
    if not isinstance(doc, dict):
        return [Problem(f.name, "sidecar-mismatch", f"{name} is not a JSON object")]
    assert f.archived is not None
    first, last = f.archived.steps[0], f.archived.steps[-1]
    actual = {
        "dataset": last.dataset,
        "from_guid": str(first.from_guid),
        "to_guid": str(last.to_guid),
        "bytes": f.size,
        "kind": f.kind,
        "snapshots": [s.snapshot for s in f.archived.steps],
    }
    wrong = [
        f"{key} {doc[key]!r} (the stream: {value!r})"
        for key, value in actual.items()
        if key in doc and doc[key] != value
    ]
    if not wrong:
        return []
    return [Problem(f.name, "sidecar-mismatch", f"{name} says {'; '.join(wrong)}")]


def _chain_problems(p: DatasetPlan) -> list[Problem]:
    found = [
        Problem(
            name,
            "orphan",
            f"{p.dataset}: starts from snapshot GUID {guid}, which no intact file in the "
            "archive ends at: it cannot be restored",
            dataset=p.dataset,
        )
        for name, guid in p.orphans
    ]
    found += [
        Problem(
            name,
            "duplicate",
            f"{p.dataset}: holds the same snapshots as {other}",
            dataset=p.dataset,
        )
        for name, other in p.duplicates
    ]
    return found
