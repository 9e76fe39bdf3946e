"""check_archive(): read every file of an archive directory completely and rebuild every
chain from the GUIDs inside the streams -> ArchiveReport.  No ZFS is needed: archives are
often checked on the machine that stores them.

Nothing in the directory is followed or trusted (zverify.cold.entries): symlinks, devices,
FIFOs, sockets and subdirectories are reported, never opened; a regular file is opened without
following a symlink or blocking, and must still be the file that was listed; a file with other
links or another owner is reported.  `.partial` files are never counted as part of a chain:
one a running send holds (its flock, zverify.cold.store.lock) is noted as in progress, one nobody
holds is reported as the leftover of an interrupted send.  A file name that disagrees with its
content is reported.  zverify's lock files are not archive entries.

Parity (NAME.par2, NAME.vol*.par2: zverify.cold.parity) is read with its stream: damaged or
foreign parity is reported, a stream that is not intact gets par2's verdict on its repair
(repairable or unrepairable, with the block counts), and once any stream has parity, a stream
without is reported.  NAME.damaged, the original a repair replaced (zverify.cold.repair), is
listed, never read as a stream.

Long because: it is one reader of an archive directory producing one report: every check
feeds the same FileReport/ArchiveReport, and the formats it reads already live apart
(cold/sidecar.py, cold/names.py, cold/parity.py, sendstream/).
"""

import contextlib
import errno
import functools
import hashlib
import os
import shlex
import stat
import struct
from collections.abc import Callable
from dataclasses import dataclass, field

from zverify import exitcodes
from zverify.cold import contents, entries, names, parity, sidecar
from zverify.cold.entries import FileStamp
from zverify.cold.names import DAMAGED, MANIFEST, SIDECAR, WORK_DIRS
from zverify.cold.parity import Parity
from zverify.cold.proof import ledger
from zverify.cold.store import Entry, Store, bucket_of, lock
from zverify.errors import ColdError
from zverify.sendstream.chain import (
    ArchivedFile,
    Chain,
    DatasetPlan,
    Step,
    as_lineages,
    chains,
    lineages,
    plan,
)
from zverify.sendstream.format import BeginFlag, Feature
from zverify.sendstream.report import StreamReport, Substream
from zverify.sendstream.rules import RESUMING
from zverify.sendstream.validate import verify_stream
from zverify.suggest import did_you_mean

ProgressHook = Callable[[str, int], None]  # (file, bytes read so far of it)


# problem kinds that leave something not verified (unproven: --depth metadata knows nothing)
UNVERIFIED = ("unreadable", "changed", "unproven", "lifecycle-unknown")


@dataclass(frozen=True)
class Problem:
    file: str
    kind: str  # damaged, truncated, not-a-stream, partial, orphan, duplicate, name-mismatch,
    # hard-link, foreign-owner, unreadable, changed ...
    message: str
    offset: int | None = None
    dataset: str | None = None  # set for problems of a dataset's chains (orphan, duplicate)
    damage_from: int | None = None  # where the damage may begin (before offset: a checksum
    # found at one record covers the bytes since the previous one)
    follows: str | None = None  # an orphan behind another orphan: the one that lost its base


@dataclass
class FileReport:
    name: str
    kind: str  # full, incremental, intermediate, partial, unknown
    size: int = 0
    readable: bool = True
    archived: ArchivedFile | None = None  # set when the whole file is an intact stream
    problems: list[Problem] = field(default_factory=list)
    identity: FileStamp | None = None  # the file that was read (regular files)
    ctime_ns: int | None = None  # its change time as listed before the read (for the ledger)
    in_progress: str | None = None  # a .partial a running send holds: who, in words
    parity: Parity | None = None  # the stream's parity files, when it has any
    compression: str | None = None  # zstd, gzip, xz, lz4: size is then the stream's bytes
    file_bytes: int | None = None  # the compressed file's bytes, when compressed
    place: str = ""  # the place (archive directory) it is in
    stored: dict[str, object] | None = None  # --depth metadata: what the store says of it
    digest: str | None = None  # of an intact stream: its END checksums (stream_digest)

    @property
    def valid(self) -> bool:
        return self.archived is not None and not self.problems


@dataclass
class ArchiveReport:
    directory: str  # the places, for one line of text
    files: list[FileReport]
    plans: dict[str, DatasetPlan]
    chains: dict[str, list[Chain]]
    problems: list[Problem]  # about the archive as a whole: orphans, duplicates
    kept: list[str] = field(default_factory=list)  # NAME.damaged: originals of repaired streams
    parity_level: int | None = None  # the archive's parity percentage (all datasets), if any
    store: Store | None = None  # where the files are: paths of names, locks, deletions
    places: list[str] = field(default_factory=list)
    depth: str = "full"  # full: every byte read; metadata: listings and sidecars only
    sidecars: list[str] = field(default_factory=list)  # the NAME.json files beside streams
    manifests: list[str] = field(default_factory=list)  # the NAME.manifest files (contents.py)
    ledger: str | None = None  # the proof ledger's summary, once this check is recorded
    lineages: dict[str, str] = field(default_factory=dict)  # a renamed dataset's chain's name
    held: list[str] = field(default_factory=list)  # every dataset of the archive (--dataset aside)
    # `check --digest`: per dataset, (snapshot, guid, digest, routes agreeing) of its newest
    digests: dict[str, tuple[str, int, str, int]] = field(default_factory=dict)

    @property
    def chained(self) -> list[ArchivedFile]:
        """The intact streams as the chain model reads them: each dataset under the name its
        chain goes by (chain.lineages(): a renamed dataset continues its chain)."""
        return as_lineages([f.archived for f in self.files if f.archived], self.lineages)

    def path(self, name: str) -> str:
        """The local path of a file of the report (names are the store's keys)."""
        return self.store.local_path(name) if self.store else os.path.join(self.directory, name)

    @property
    def all_problems(self) -> list[Problem]:
        return [p for f in self.files for p in f.problems] + self.problems

    @property
    def not_read(self) -> list[Problem]:
        """What could not be read or proven.  A sidecar or parity file that could not be
        read leaves its stream readable, and the archive not verified all the same."""
        return [p for p in self.all_problems if p.kind in UNVERIFIED]

    @property
    def exit_code(self) -> int:
        unread = any(not f.readable for f in self.files) or bool(self.not_read)
        return exitcodes.verdict(unverified=unread, different=bool(self.all_problems))


def check_archive(
    store: Store, dataset: str | None = None, progress: ProgressHook | None = None
) -> ArchiveReport:
    """Every file of the archive's places (one directory, or a LocalStore of several, with
    their subdirectories when recursive): chains are rebuilt across all of them.  Raises
    ArchiveError when a place itself cannot be listed."""
    files: list[FileReport] = []
    aside = _Aside()
    for entry in store.entries():
        found = _look(store, entry, progress, aside)
        if found is not None:
            found.place = entry.place
            files.append(found)
    _check_names(files)
    stray = _check_sidecars(store, files, aside)
    stray += _check_manifests(store, files, aside)
    stray += _check_parity(store, files, aside.parities)
    level = parity.percent_of([f.parity for f in files if f.parity is not None])
    # a misnamed but intact stream still restores: chains go by GUID, never by name
    written = [f.archived for f in files if f.archived is not None]
    renamed = lineages(written)
    archived = as_lineages(written, renamed)
    held = datasets = sorted({d for a in archived for d in a.datasets})
    if dataset is not None:
        chosen = chosen_dataset(dataset, held, renamed)
        datasets = [d for d in datasets if d == chosen]
        # and the files its routes may take (chain: a package's mates), for restore
        mates = {d for a in archived if chosen in a.datasets for d in a.datasets}
        files = [f for f in files if f.archived is None or _carries(f.archived, mates, renamed)]
    plans = {d: p for d, p in plan(archived).items() if d in datasets}
    for d, p in plans.items():
        p.was = tuple(sorted(n for n, named in renamed.items() if named == d and n != d))
    warned = [Problem(store.shown, kind, message) for kind, message in hazards(store)]
    report = ArchiveReport(
        store.shown,
        files,
        plans,
        {d: chains(d, archived) for d in datasets},
        [p for d in datasets for p in _chain_problems(plans[d], store, archived)]
        + stray
        + aside.loose
        + warned,
        sorted(aside.kept),
        level,
        store,
        store.places,
        sidecars=sorted(aside.sidecars),
        manifests=sorted(aside.manifests),
        lineages=renamed,
        held=held,
    )
    return report


def chosen_dataset(asked: str, held: list[str], renamed: dict[str, str]) -> str:
    """--dataset as the archive knows it: the name, the name its chain has after a rename,
    or else the one dataset whose trailing components it is (`data` for `tank/data`, as the
    file names say it); else as asked, which matches nothing."""
    if asked in held or asked in renamed:
        return renamed.get(asked, asked)
    ends = _ending(asked, held)
    return ends[0] if len(ends) == 1 else asked


def _ending(asked: str, held: list[str]) -> list[str]:
    """The datasets asked names by their trailing components (names.names_dataset)."""
    return [d for d in held if names.names_dataset(asked, d)]


def _carries(f: ArchivedFile, datasets: set[str], renamed: dict[str, str]) -> bool:
    return any(renamed.get(d, d) in datasets for d in f.datasets)


def prove_file(
    store: Store, entry: Entry, beside: list[Entry], progress: ProgressHook | None = None
) -> FileReport | None:
    """One entry proven as check_archive() proves it: read completely, with its sidecar and
    parity (beside: their entries) held against it; chains and names are not judged (they
    need every file).  None for what check_archive() does not report as a file."""
    aside = _Aside()
    for other in beside:
        if other.st is not None and stat.S_ISREG(other.st.st_mode):
            _set_aside(aside, other.key, other.st)
    found = _look(store, entry, progress, aside)
    if found is None:
        return None
    found.place = entry.place
    _check_sidecars(store, [found], aside)
    _check_manifests(store, [found], aside)
    _check_parity(store, [found], aside.parities)
    return found


def nothing_found(report: ArchiveReport, dataset: str | None) -> Problem:
    """An archive (or a dataset of it) without a single intact stream proves nothing: an
    empty directory, a disk that is not mounted, a --dataset misspelled."""
    if dataset and report.held:
        ends = _ending(dataset, report.held)
        near = f"; it may be one of {', '.join(ends)}" if len(ends) > 1 else ""
        near = near or did_you_mean(dataset, report.held)
        return Problem(
            report.directory,
            "empty",
            f"no stream of {dataset} in the archive, which holds {', '.join(report.held)}{near}",
        )
    what = f"no stream of {dataset}" if dataset else "no stream"
    return Problem(
        report.directory,
        "empty",
        f"{what} in the archive: nothing to restore (a disk not mounted? a name misspelled?)",
    )


BESIDE = (SIDECAR, MANIFEST, parity.SUFFIX, DAMAGED)  # beside the streams, never read as one


def is_lock_file(entry: Entry) -> bool:
    """zverify's lock files are empty: a name alone hides nothing.  The proof ledger
    (zverify.cold.proof.ledger) is not empty, and is no stream either: a stream hidden under its
    name is missing from its chain, which says so."""
    st = entry.st
    if st is None or not stat.S_ISREG(st.st_mode):
        return False
    return (entry.name in lock.FILES and not st.st_size) or ledger.is_ledger_name(entry.name)


def beside_streams(entry: Entry) -> bool:
    """Sidecars, manifests, parity, the originals repairs kept and lock files: no stream of
    their own."""
    return entry.key.endswith(BESIDE) or is_lock_file(entry)


@dataclass
class _Aside:
    """What is not read as a stream: sidecars, manifests and parity (name -> the file that
    was listed), the originals repairs kept, and the doubts about those files."""

    sidecars: dict[str, FileStamp] = field(default_factory=dict)
    manifests: dict[str, FileStamp] = field(default_factory=dict)
    parities: dict[str, FileStamp] = field(default_factory=dict)
    kept: list[str] = field(default_factory=list)
    loose: list[Problem] = field(default_factory=list)
    # each stream's manifest entry (contents.named), from its sidecar as the sidecar check
    # read it: the manifest check reads no sidecar again
    named: dict[str, dict[str, object] | None] = field(default_factory=dict)


def _look(
    store: Store,
    entry: Entry,
    progress: ProgressHook | None,
    aside: "_Aside",
) -> FileReport | None:
    """One entry, lstat()ed: what it is, and for a regular file what it holds.  None for
    what is not reported as a file: lock files, sidecars, parity and kept originals (set
    aside, their doubts in aside.loose) and a .partial that was renamed into place while the
    directory was listed."""
    name, st = entry.key, entry.st
    if entry.upload is not None:
        return upload_report(store, entry)
    if st is None or entry.error is not None:
        err = entry.error
        assert err is not None
        if err.errno == errno.ENOENT and name.endswith(names.PARTIAL):
            return None  # a send finished (or a leftover was cleaned) while we listed
        gone = err.errno == errno.ENOENT
        why = "vanished while the archive was read" if gone else f"cannot stat: {err.strerror}"
        if st is not None:  # a subdirectory --recursive could not list: nobody knows what
            why = f"a directory that cannot be listed ({err.strerror}): not read"
        problem = Problem(name, "unreadable", why)
        return FileReport(name, "unknown", readable=False, problems=[problem])
    if is_lock_file(entry):
        return None
    if stat.S_ISDIR(st.st_mode) and name.endswith(WORK_DIRS) and store.uses_local_files:
        return _check_partial(store, name, st)
    if not stat.S_ISREG(st.st_mode):  # a bucket's: a common prefix, a "subdirectory"
        what = entries.what(store.local_path(name) if store.uses_local_files else name, st)
        problem = Problem(name, "not-a-stream", f"{what}: not read, not followed")
        return FileReport(name, "unknown", problems=[problem])
    doubts = [Problem(name, kind, message) for kind, message in entries.doubts(st, entry.owner)]
    if name.endswith(BESIDE):
        _set_aside(aside, name, st)
        aside.loose += doubts
        return None
    if name.endswith(names.PARTIAL):
        found = _check_partial(store, name, st)
    else:
        found = _check_stream(store, name, st, progress)
    if found is not None:
        found.problems += doubts
    return found


def _set_aside(aside: "_Aside", name: str, st: os.stat_result) -> None:
    if name.endswith(SIDECAR):
        aside.sidecars[name] = FileStamp.of(st)
    elif name.endswith(MANIFEST):
        aside.manifests[name] = FileStamp.of(st)
    elif parity.is_parity(name):
        aside.parities[name] = FileStamp.of(st)
    else:
        aside.kept.append(name)


def hazards(store: Store) -> list[tuple[str, str]]:
    """What the storage itself will do to the archive (a bucket's lifecycle rules)."""
    return store.bucket.hazards() if store.bucket is not None else []


def upload_report(store: Store, entry: Entry) -> FileReport:
    """An unfinished multipart upload in a bucket: a send's (parts still arriving) or the
    leftover of one that died (no part for IDLE_SECONDS; aborted by `cold clean --yes`)."""
    name = entry.key
    try:
        size, idle, left = bucket_of(store).upload_state(entry)  # only a bucket lists uploads
    except OSError as err:
        why = f"an unfinished upload (cannot list its parts: {err}): never part of a chain"
        return FileReport(name, "partial", problems=[Problem(name, "partial", why)])
    if not left:
        note = f"an upload that received a part {idle:.0f} s ago (a running send?): not counted"
        return FileReport(name, "partial", size, in_progress=note)
    clean = f"`zverify cold clean --yes {store.shown}` aborts it"
    why = f"an upload left unfinished {idle / 3600:.1f} h ago: never part of a chain; {clean}"
    return FileReport(name, "partial", size, problems=[Problem(name, "partial", why)])


def _check_partial(store: Store, name: str, st: os.stat_result) -> FileReport | None:
    """A send in progress (it holds the file's flock) or the leftover of one that died;
    None when it is gone already (renamed into place by the send that finished).  The same
    for the work directory of a parity or repair run (it holds the directory's flock)."""
    path = store.local_path(name)
    run = "a parity or repair run" if stat.S_ISDIR(st.st_mode) else "a send"
    places = " ".join(map(shlex.quote, store.places))
    how = " --recursive" if store.recursive and os.path.dirname(name) else ""
    clean = f"`zverify cold clean --yes{how} {places}` removes it"
    try:
        fd = (
            entries.open_directory(path, FileStamp.of(st))
            if stat.S_ISDIR(st.st_mode)
            else entries.open_regular(path, FileStamp.of(st))
        )
    except FileNotFoundError:
        return None
    except (OSError, entries.Changed) as err:
        why = err.strerror if isinstance(err, OSError) else str(err)
        message = (
            f"{run}'s unfinished work, never part of a chain (cannot tell whether it is "
            f"still running: {why})"
        )
        return FileReport(name, "partial", st.st_size, problems=[Problem(name, "partial", message)])
    try:
        writing = lock.partial_in_progress(fd)
        who = lock.holders(fd) if writing else ""
    except OSError as err:
        writing, who = False, ""
        clean += f" (its lock cannot be probed: {err.strerror})"
    finally:
        os.close(fd)
    if writing:
        by = f" ({who})" if who else ""
        note = f"being written by a running {run[2:]}{by}: not counted"
        return FileReport(name, "partial", st.st_size, in_progress=note)
    why = f"left by an interrupted {run[2:]}: never part of a chain; {clean}"
    return FileReport(name, "partial", st.st_size, problems=[Problem(name, "partial", why)])


def _check_stream(
    store: Store, name: str, st: os.stat_result, progress: ProgressHook | None
) -> FileReport:
    try:
        fd = store.open_read(name, FileStamp.of(st))  # an fd: what the C scanner reads
    except entries.Changed as err:
        problem = Problem(name, "changed", str(err))
        return FileReport(name, "unknown", readable=False, problems=[problem])
    except OSError as err:
        problem = Problem(name, "unreadable", f"cannot open: {err.strerror}")
        return FileReport(name, "unknown", readable=False, problems=[problem])
    try:
        hook = (lambda n: progress(name, n)) if progress else None
        report = verify_stream(fd, progress=hook)
    except BaseException:
        with contextlib.suppress(OSError):
            store.finish_read(name, fd)
        raise
    try:
        after = store.finish_read(name, fd)  # closes fd
    except OSError as err:  # the bytes read are not the file's (a read that broke off)
        problem = Problem(name, "unreadable", f"cannot be read whole: {err.strerror or err}")
        return FileReport(name, "unknown", readable=False, problems=[problem])
    except ColdError as err:  # read whole, and not what the store holds a checksum of
        out = _file_report(name, report)
        out.archived = None
        out.problems.append(Problem(name, "damaged", str(err)))
        return out
    out = _file_report(name, report)
    out.identity, out.ctime_ns = after, st.st_ctime_ns
    if out.identity != FileStamp.of(st):
        # what was read may be a mix of two versions: no verdict on this file
        out.archived, out.readable = None, False
        message = "changed while it was read (size or modification time): read it again"
        out.problems.insert(0, Problem(name, "changed", message))
    return out


def _file_report(name: str, report: StreamReport) -> FileReport:
    out = FileReport(name, _kind(report), report.size, report.readable)
    out.compression, out.file_bytes = report.compression, report.file_bytes
    if not report.valid:
        out.problems.append(_stream_problem(name, report))
        return out
    steps = tuple(_step(s) for s in report.substreams)
    out.archived = ArchivedFile(name, report.size, steps)
    out.digest = stream_digest(report)
    out.problems += [
        _resume_problem(name, s) for s in report.substreams if s.features & Feature.RESUMING
    ]
    return out


def stream_digest(report: StreamReport) -> str | None:
    """A digest of an intact stream that costs no second read: SHA-256 over the Fletcher-4
    sums its END records carry, which the scan proved to be those of the bytes before each
    (4 little-endian u64 per substream).  It tells a file replaced by another stream or
    rewritten since its last proof; Fletcher-4 finds damage, not a forger."""
    sums = [s.end_checksum for s in report.substreams]
    if not sums or any(c is None for c in sums):
        return None
    h = hashlib.sha256()
    for c in sums:
        assert c is not None
        h.update(struct.pack("<4Q", *c))
    return "end-fletcher4-sha256:" + h.hexdigest()


def _resume_problem(name: str, s: Substream) -> Problem:
    """A resume stream restores nothing on its own: what it would need, in words."""
    at = (s.nvlist or {}).get("resume_object")
    where = f" from object {at}" if isinstance(at, int) else ""
    return Problem(
        name,
        "resume",
        f"the rest of a send of {s.toname} (guid {s.toguid}){where}, not a whole stream: "
        f"{RESUMING}",
    )


def _step(s: Substream) -> Step:
    """A substream as the chain model reads it: GUIDs and the flags receive rules look at."""
    return Step(
        s.dataset,
        s.fromguid,
        s.toguid,
        s.toname.partition("@")[2],
        s.creation_time,
        raw=bool(s.features & Feature.RAW),
        large_blocks=bool(s.features & Feature.LARGE_BLOCKS),
        resuming=bool(s.features & Feature.RESUMING),
        unsupported=_unsupported(s),
        clone=bool(s.flags & BeginFlag.CLONE),
    )


def _unsupported(s: Substream) -> str:
    """Why no restore receives this substream: what OpenZFS refuses whatever the target
    (libzfs_sendrecv.c: deduplicated streams) and what zverify does not plan (a clone stream
    is planned by the chain model: inside a `-R` package that carries its origin)."""
    if s.features & Feature.DEDUP:
        return (
            "a deduplicated stream (zfs send -D): OpenZFS 2 receives none (`zstream redup` "
            "converts it)"
        )
    if s.features & Feature.REDACTED:
        return "a redacted stream (zfs send --redact): zverify plans no redacted receive"
    return ""


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
        return Problem(name, "unreadable", first.message, first.offset, damage_from=first.offset)
    more = len(report.problems) - 1 + report.problems_dropped
    suffix = f" (+{more} more problems)" if more else ""
    if first.code == "unsupported-feature":  # intact bytes a newer OpenZFS may receive:
        # not damage for repair to mend, a receive this archive's model cannot promise
        return Problem(name, "unreceivable", f"at byte {first.offset}: {first.message}{suffix}")
    kind = {"truncated": "truncated", "not-a-stream": "not-a-stream"}.get(first.code, "damaged")
    start = first.span[0] if first.span else first.offset
    message = f"at byte {first.offset}: {first.message}{suffix}"
    return Problem(name, kind, message, first.offset, damage_from=start)


def _check_names(files: list[FileReport]) -> None:
    """A conventional name is a hint: reported only where it contradicts the stream inside."""
    snapshot_of = {
        (s.dataset, s.to_guid): s.snapshot for f in files if f.archived for s in f.archived.steps
    }
    for f in files:
        claimed = names.parse(os.path.basename(f.name))  # a key may have directories
        if claimed is None or f.archived is None:
            continue
        contradictions = _contradictions(claimed, f.archived.steps, snapshot_of)
        if contradictions:
            message = f"the name says otherwise: the stream {', '.join(contradictions)}"
            f.problems.append(Problem(f.name, "name-mismatch", message))


def _contradictions(
    claimed: names.ParsedName, steps: tuple[Step, ...], snapshot_of: dict[tuple[str, int], str]
) -> list[str]:
    """What in the stream contradicts its name.  A -R package carries several datasets and is
    named by its top one (`setname` may also name a child `pool/setname/x/setname`: the top
    one speaks); a package named by one of its children only is a contradiction."""
    datasets = list(dict.fromkeys(s.dataset for s in steps))
    named = [d for d in datasets if names.names_dataset(claimed.dataset, d)]
    if not named:
        return [f"is of {', '.join(datasets)}"]
    top = min(datasets, key=lambda d: (d.count("/"), d))
    if top not in named:
        return [f"is a package of {top}, not of its child {min(named)}"]
    own = [s for s in steps if s.dataset == top]
    first, last = own[0], own[-1]
    found = []
    if claimed.to_snap != last.snapshot:
        found.append(f"ends at @{last.snapshot}")
    if (claimed.from_snap is None) != (first.from_guid == 0):
        found.append("is a full stream" if first.from_guid == 0 else "is incremental")
    elif claimed.from_snap is not None:
        actual_from = snapshot_of.get((first.dataset, first.from_guid))
        if actual_from is not None and claimed.from_snap != actual_from:
            found.append(f"starts from @{actual_from}")
    return found


def _check_sidecars(store: Store, files: list[FileReport], aside: _Aside) -> list[Problem]:
    """A sidecar must agree with its stream (zverify.cold.sidecar); one without a stream is
    reported.  Each sidecar read keeps its manifest entry in aside.named."""
    sidecars = aside.sidecars
    for f in files:
        if f.archived is not None and f.name + SIDECAR in sidecars:
            key = f.name + SIDECAR
            actual = sidecar.facts(f.archived, f.size, f.kind)
            read = functools.partial(store.read_small, key, sidecars[key], sidecar.MAX_BYTES)
            doc = sidecar.load(key, read)
            aside.named[f.name] = contents.named(doc)
            wrong = sidecar.mismatch(key, doc, actual)
            if wrong is not None:
                f.problems.append(Problem(f.name, *wrong))
    streams = {f.name for f in files}
    return [
        Problem(
            name, "sidecar-mismatch", f"its stream {names.shown(name[: -len(SIDECAR)])} is not here"
        )
        for name in sorted(sidecars)
        if name[: -len(SIDECAR)] not in streams
    ]


def _check_manifests(store: Store, files: list[FileReport], aside: _Aside) -> list[Problem]:
    """Each manifest held against the sidecar that names it (zverify.cold.contents), its
    doubts added to its stream's; returns the archive's own: manifests nobody names."""
    by_name = {f.name: f for f in files}
    streams = [(f.name, f.archived is not None) for f in files if f.kind != "partial"]
    stray = []
    found = contents.check(store, streams, aside.sidecars, aside.manifests, known=aside.named)
    for name, kind, message in found:
        problem = Problem(name, kind, message)
        if name in by_name:
            by_name[name].problems.append(problem)
        else:
            stray.append(problem)
    return stray


def _check_parity(
    store: Store, files: list[FileReport], parities: dict[str, FileStamp]
) -> list[Problem]:
    """Each stream's parity read (zverify.cold.parity), its problems added to the stream's.
    Returns the archive's own: parity whose stream is not here.  Once any stream has parity,
    a stream without it is reported."""
    if parities and not store.uses_local_files:  # par2 reads local files only
        why = "parity in a bucket is not read (par2 reads local files): not verified"
        return [Problem(name, "unreadable", why) for name in sorted(parities)]
    groups: dict[str, dict[str, FileStamp]] = {}
    for name, identity in parities.items():
        groups.setdefault(parity.stream_of(name), {})[name] = identity
    streams = {f.name: f for f in files if f.kind != "partial"}
    for name, group in groups.items():
        f = streams.get(name)
        if f is not None and f.identity is not None:  # a regular file that was opened
            proven = f.identity if f.archived else None
            f.parity = _inspect(store, name, group, proven, f.readable)
            f.problems += [Problem(name, kind, message) for kind, message in f.parity.problems]
    if groups.keys() & streams.keys():
        for f in streams.values():
            named = names.parse(os.path.basename(f.name)) is not None
            looks_like_one = f.archived is not None or named
            if f.parity is None and f.identity is not None and looks_like_one:
                message = "has no parity, while other streams of the archive have"
                f.problems.append(Problem(f.name, "no-parity", message))
    return [
        Problem(
            min(group),
            "parity-orphan",
            f"parity of {names.shown(name)}, which is not here: it protects nothing",
        )
        for name, group in sorted(groups.items())
        if name not in streams
    ]


def _inspect(
    store: Store,
    stream: str,
    group: dict[str, FileStamp],
    proven: FileStamp | None,
    readable: bool,
) -> Parity:
    """parity.inspect() in the stream's own directory (par2 names files relative to the
    directory they were made in), its file names given back as the store's keys."""
    base = os.path.basename
    found = parity.inspect(
        store.directory_of(stream),
        base(stream),
        {base(n): i for n, i in group.items()},
        proven,
        readable,
    )
    found.files = [store.sibling(stream, n) for n in found.files]
    return found


def _chain_problems(p: DatasetPlan, store: Store, archived: list[ArchivedFile]) -> list[Problem]:
    roots = _orphan_roots(p, archived)
    found = [
        Problem(name, "orphan", _orphan_message(p.dataset, guid, needs), dataset=p.dataset)
        if roots[name] == name
        else Problem(
            name,
            "orphan",
            _behind_message(p.dataset, roots[name]),
            dataset=p.dataset,
            follows=roots[name],
        )
        for name, guid, needs in p.orphans
    ]
    found += [
        Problem(
            name,
            "unreceivable",
            f"{p.dataset}: `zfs receive` cannot take it after any route of this archive: {why}",
            dataset=p.dataset,
        )
        for name, why in p.refused
    ]
    found += [
        Problem(
            name,
            "duplicate",
            f"{p.dataset}: holds the same snapshots as {names.shown(other)}"
            + _copy(store, name, other),
            dataset=p.dataset,
        )
        for name, other in p.duplicates
    ]
    return found


def _orphan_roots(p: DatasetPlan, archived: list[ArchivedFile]) -> dict[str, str]:
    """For each orphan, the orphan whose missing base it stands behind: itself when nothing
    of the archive ends at its base, else the orphan its base is the end of, followed back.
    A year of hourly incrementals after one lost file is one cause, not 4,000."""
    base = {name: guid for name, guid, _ in p.orphans}
    ends: dict[int, str] = {}
    for f in archived:
        steps = f.steps_of(p.dataset) if f.name in base else []
        if steps:
            ends.setdefault(steps[-1].to_guid, f.name)
    roots = {}
    for name in base:
        root, seen = name, {name}
        while (before := ends.get(base[root])) is not None and before not in seen:
            root = before
            seen.add(root)
        roots[name] = root
    return roots


def _behind_message(dataset: str, root: str) -> str:
    return (
        f"{dataset}: follows {names.shown(root)}, which cannot be restored either (its "
        "base is at the end of no intact file): it cannot be restored"
    )


def _orphan_message(dataset: str, guid: int, needs: str) -> str:
    if needs == dataset:
        return (
            f"{dataset}: starts from snapshot GUID {guid}, which no intact file in the "
            "archive ends at: it cannot be restored"
        )
    return (
        f"{dataset}: its substream is inside a package whose {needs} starts from snapshot GUID "
        f"{guid}, which no route of the files carrying {dataset} puts in place: it cannot be "
        "restored"
    )


def _copy(store: Store, name: str, other: str) -> str:
    """Across places a duplicate is usually a deliberate copy: say that a restore uses one."""
    if store.place_of(name) == store.place_of(other):
        return ""
    return " (a copy in another place: a restore reads one of them)"
