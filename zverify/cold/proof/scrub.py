"""scrub(): prove an archive's files again over time, within a budget, least recently proven
first, keeping every proof in the ledger (zverify.cold.proof.ledger).

A proof stands for the file it was made of, in the archive it was made in, and nothing
else (Ledger.open(path, record.archive_of(store)) keeps other archives' records apart): its record
names the file as it was listed before it was read (device, inode, size, modification and
change times; a bucket object's ETag and version id, size and LastModified: the stat of
zverify.cold.store.s3), and when the file listed now differs in any of them (an archive copied
with its ledger, a file rewritten in place even at the same size and mtime), or the record
names none (a line written before they were recorded), the file is unproven.  So is a proof
dated later than now by more than SKEW: made while the clock was ahead, it says nothing of
its age; it is reported and read again first.

Each run orders the archive's files: first those whose last proof failed or no longer
stands (above; entries that cannot be looked at too), then those never proven, then the
proven ones by the age of their last proof, oldest first.  --max-age skips proofs younger
than that.  It proves them in that order, each one completely as `cold check` does
(check.prove_file: the stream, its sidecar and its parity), and records the proofs in
batches of at most a second (a run killed halfway keeps what it proved but its last
second).  A budget (bytes, seconds) is looked at before each file: the file that crosses it
is finished, then the run stops, so a run exceeds it by less than one file, and repeated
runs rotate through the archive: with a budget of B bytes, every file of an archive of T
bytes is proven within ceil(T / B) runs.

What is not a stream of the archive is not scrubbed: lock files, the ledger, sidecars and
parity (read with their stream), a send's `.partial` and a repair's work directory
(`cold check` and `cold clean` judge those).
"""

import contextlib
import datetime
import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from zverify import exitcodes
from zverify.cold import names, parity
from zverify.cold.proof import check
from zverify.cold.proof.check import UNVERIFIED, FileReport, Problem, ProgressHook
from zverify.cold.proof.ledger import Ledger, LedgerRecord
from zverify.cold.proof.record import outcome, record_of, replaced, stamp_of
from zverify.cold.store import Entry, Store
from zverify.errors import ColdError

# A proof's time is this host's clock when it was recorded; NTP keeps a clock within
# seconds of true, and a clock stepped back (NTP's first sync after boot, a VM resumed) is
# usually off by less than a few minutes.  A proof further ahead than this was made while the
# clock was wrong (an RTC set years ahead): its age is unknown, and trusting it would keep it
# "young" until the clock caught up, so it is no proof.
SKEW = datetime.timedelta(minutes=5)
# a run's proofs reach the ledger in batches of at most this many, or this old (_Batch)
BATCH_RECORDS = 1024
BATCH_SECONDS = 1.0


@dataclass(frozen=True)
class Budget:
    max_bytes: int | None = None  # stop once this many bytes were read
    max_seconds: float | None = None  # stop once the run took this long
    max_age: float | None = None  # seconds: a proof younger than this is not made again

    def spent(self, read: int, elapsed: float) -> str | None:
        """Why no further file is started, or None."""
        if self.max_bytes is not None and read >= self.max_bytes:
            return f"--max-bytes {self.max_bytes:,} reached ({read:,} bytes read)"
        if self.max_seconds is not None and elapsed >= self.max_seconds:
            return f"--max-duration {self.max_seconds:g} s reached ({elapsed:.1f} s)"
        return None


@dataclass
class Scrubbed:
    """One file of the archive after the run: its last proof, and what this run found."""

    name: str
    size: int
    result: str  # of its last record: proven, damaged, unreadable, problem; unproven: none
    proven_at: datetime.datetime | None  # its last proof that proved it
    dataset: str | None = None
    read: bool = False  # read by this run
    report: FileReport | None = None  # this run's read
    problems: list[Problem] = field(default_factory=list)

    @property
    def current(self) -> bool:
        """Proven, and nothing since said otherwise."""
        return self.result == "proven" and self.proven_at is not None


@dataclass
class ScrubReport:
    places: list[str]
    ledger: Ledger
    files: list[Scrubbed]
    read_bytes: int
    stopped: str | None  # why files due were left for the next run
    at: datetime.datetime
    budget: Budget
    future: list[tuple[str, str]] = field(default_factory=list)  # (file, its proof's time)
    seconds: float = 0.0  # how long the run took, listing included

    def age(self, f: Scrubbed) -> float | None:
        """Seconds since its proof stood; never negative (a proof up to SKEW ahead is 0 s)."""
        if f.proven_at is None:
            return None
        return max(0.0, (self.at - f.proven_at).total_seconds())

    def unproven(self, f: Scrubbed) -> bool:
        """Never proven, its last proof failed or no longer stands, or older than --max-age."""
        age = self.age(f)
        old = self.budget.max_age is not None and age is not None and age >= self.budget.max_age
        return not f.current or old

    def drill_ages(self) -> dict[str, float | None]:
        """Per dataset of the archive, the age of the drill that last proved it restores
        (`cold drill`); None when it was never drilled or its last drill was not a pass."""
        drills = self.ledger.drills()
        ages: dict[str, float | None] = {}
        for dataset in sorted({f.dataset for f in self.files if f.dataset}):
            last = drills.get(dataset)
            if last is None or last.result != "proven":
                ages[dataset] = None
            else:
                ages[dataset] = max(0.0, (self.at - last.when).total_seconds())
        return ages

    @property
    def unproven_bytes(self) -> int:
        return sum(f.size for f in self.files if self.unproven(f))

    @property
    def oldest_proof_age(self) -> float | None:
        """The age of the oldest proof, None while any file has no proof that stands."""
        if not self.files or not all(f.current for f in self.files):
            return None
        return max(a for f in self.files if (a := self.age(f)) is not None)

    @property
    def problems(self) -> list[Problem]:
        return [p for f in self.files for p in f.problems]

    @property
    def exit_code(self) -> int:
        unread = any(p.kind in UNVERIFIED for p in self.problems)
        return exitcodes.verdict(unverified=unread, different=bool(self.problems))


def scrub(
    store: Store,
    ledger: Ledger,
    budget: Budget,
    progress: ProgressHook | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> ScrubReport:
    """Prove the files due, in order, within budget (see the module's docstring)."""
    began = clock()
    listed = store.entries()
    streams = [e for e in listed if _scrubbed(e)]
    at = datetime.datetime.now(datetime.UTC)
    latest, proven = ledger.latest(), ledger.last_proven()
    files = {e.key: _state(e, latest.get(e.key), proven.get(e.key), at) for e in streams}
    due = sorted(
        (e for e in streams if _due(e, latest.get(e.key), at, budget)),
        key=lambda e: _order(e, latest.get(e.key), at),
    )
    start, read, proved, stopped = clock(), 0, 0, None
    besides = _besides(listed)
    batch = _Batch(ledger, clock)
    with batch:
        for entry in due:
            # the first file is always proven: a budget smaller than any one proof still
            # moves the rotation on
            stopped = budget.spent(read, clock() - start) if proved else None
            if stopped:
                break
            beside = besides.get(entry.key, [])
            report = check.prove_file(store, entry, beside, progress)
            if report is None:  # a lock file or a send's .partial renamed meanwhile
                continue
            read, proved = read + _size(entry), proved + 1
            files[entry.key] = _proved(entry, report, proven.get(entry.key), batch)
    future = _dated_ahead(streams, latest, at)
    return ScrubReport(
        store.places,
        ledger,
        list(files.values()),
        read,
        stopped,
        at,
        budget,
        future,
        clock() - began,
    )


class _Batch:
    """The proofs of a run, appended to the ledger a batch at a time: an append costs three
    fsyncs (the ledger and its head), which at one per file made a scrub of many small
    files thirty times slower than the check that reads them.  A batch is appended once it
    holds BATCH_RECORDS proofs or is BATCH_SECONDS old, and on the way out, however the run
    ends (Ctrl-C and SIGTERM included); SIGKILL loses at most the last batch, whose files
    the next run proves again first (never proven, to the ledger)."""

    def __init__(self, ledger: Ledger, clock: Callable[[], float]) -> None:
        self.ledger, self.clock = ledger, clock
        self.pending: list[LedgerRecord] = []
        self.since = clock()

    def add(self, record: LedgerRecord) -> None:
        self.pending.append(record)
        if len(self.pending) >= BATCH_RECORDS or self.clock() - self.since >= BATCH_SECONDS:
            self.flush()

    def flush(self) -> None:
        pending, self.pending = self.pending, []
        self.since = self.clock()
        self.ledger.append(pending)

    def __enter__(self) -> "_Batch":
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        if kind is None:
            self.flush()  # its failure is the run's (ColdError: exit 2)
            return
        with contextlib.suppress(ColdError):  # the run's own exception says more
            self.flush()


def _scrubbed(e: Entry) -> bool:
    """A file of the archive a scrub proves (see the module's docstring)."""
    if e.upload is not None or check.beside_streams(e):
        return False
    return not e.key.endswith((names.PARTIAL, *names.WORK_DIRS))


def _besides(listed: list[Entry]) -> dict[str, list[Entry]]:
    """Each stream's sidecar, manifest and parity files, by the stream's name: looked up
    once, not by a pass over the whole listing per file (quadratic in the archive)."""
    found: dict[str, list[Entry]] = {}
    for e in listed:
        for suffix in (names.SIDECAR, names.MANIFEST):
            if e.key.endswith(suffix):
                found.setdefault(e.key[: -len(suffix)], []).append(e)
        if parity.is_parity(e.key):
            found.setdefault(parity.stream_of(e.key), []).append(e)
    return found


def _size(e: Entry) -> int:
    return e.st.st_size if e.st is not None and stat.S_ISREG(e.st.st_mode) else 0


FUTURE = "dated later than now"


def _doubt(e: Entry, last: LedgerRecord | None, at: datetime.datetime) -> str | None:
    """Why e's last record is no standing proof of e as listed now; None when it is one."""
    if last is None:
        return "never proven"
    if last.result != "proven":
        return last.result
    if last.when > at + SKEW:  # said first: the clock, not the file, is wrong
        return FUTURE
    if e.st is None or last.stamp != stamp_of(e.st, e.place):
        return "not the file proven"  # or a record without the file's identity (old line)
    return None


def _dated_ahead(
    streams: list[Entry], latest: dict[str, LedgerRecord], at: datetime.datetime
) -> list[tuple[str, str]]:
    """(file, time) of each last proof dated later than now (beyond SKEW)."""
    return [
        (e.key, last.time)
        for e in streams
        if (last := latest.get(e.key)) is not None and _doubt(e, last, at) == FUTURE
    ]


def _order(e: Entry, last: LedgerRecord | None, at: datetime.datetime) -> tuple[int, float, str]:
    """Failed or no longer standing first, then never proven, then the oldest proof first."""
    if last is None:
        return (1, 0.0, e.key)
    if _doubt(e, last, at) is not None:
        return (0, 0.0, e.key)
    return (2, last.when.timestamp(), e.key)


def _due(e: Entry, last: LedgerRecord | None, at: datetime.datetime, budget: Budget) -> bool:
    if _doubt(e, last, at) is not None or budget.max_age is None:
        return True
    assert last is not None
    return (at - last.when).total_seconds() >= budget.max_age


def _state(
    e: Entry, last: LedgerRecord | None, proven: LedgerRecord | None, at: datetime.datetime
) -> Scrubbed:
    """A file this run does not read: what the ledger says of it."""
    doubt = _doubt(e, last, at)
    dataset = proven.dataset if proven is not None else None
    if last is None or (last.result == "proven" and doubt is not None):
        return Scrubbed(e.key, _size(e), "unproven", None, dataset)
    when = last.when if doubt is None else None
    return Scrubbed(e.key, _size(e), last.result, when, dataset)


def _proved(
    e: Entry,
    report: FileReport,
    before: LedgerRecord | None,
    batch: _Batch,
) -> Scrubbed:
    """Record the proof just made (in the run's batch: see _Batch)."""
    result = outcome(report)
    record = record_of(report, _size(e), "scrub", result)
    problems = list(report.problems)
    if result == "proven" and before is not None:
        problems += replaced(report, before)
    batch.add(record)
    when = record.when if result == "proven" else None
    if result == "proven" and problems:
        result = "problem"  # proven now, and not the file proven before
    return Scrubbed(e.key, _size(e), result, when, record.dataset, True, report, problems)


def write_atomically(path: str, text: str) -> None:
    """A file others read at any moment (node_exporter's textfile collector): a temporary
    file beside it, fsync, rename.  Raises ColdError naming path."""
    tmp = os.path.join(os.path.dirname(path) or ".", f".{os.path.basename(path)}.{os.getpid()}")
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as err:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise ColdError(f"cannot write {path}: {err.strerror}") from None
