"""`cold check --depth sample --sample PCT`: everything --depth metadata proves, and then runs
of records picked at random, about PCT% of each stream's bytes, read by range and proven by the
stream's own checksums.

Every record but a BEGIN carries in its trailer the fletcher-4 state of its stream up to there,
so a run needs nothing from the bytes before it: the C walk (zv_stream_walk) finds a record
boundary in the window it is given, and each following trailer proves the bytes in between.
What a run proves is exactly the bytes between its first and last matching checksum; the
report counts those and nothing else.  Bytes outside the runs are not read, and chains are
known from the sidecars only: a sample finds damage, it never proves an archive whole.

A checksum that differs is damage (exit 1) only when the framing after it holds (the next
record is proven from the differing record's stored state), or when the run started at the
stream's first byte: a run that started from a boundary it found could, in principle, have
found records of a stream stored inside a file's data, so there a broken run is `unproven`
(exit 2) and the full check is named.
"""

import math
import random
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from zverify import _zvcore
from zverify.cold import names
from zverify.cold.entries import Changed
from zverify.cold.proof.check import ArchiveReport, FileReport, Problem
from zverify.cold.proof.metadata import check_metadata
from zverify.cold.store import IN_FLIGHT, Store
from zverify.errors import ColdError

DEPTH = "sample"
SLOT = 4 << 20  # a sample picks slots of this many bytes; picked neighbours make one run
WINDOW = 8 << 20  # bytes one ranged GET asks for, at most
TAIL = 1 << 20  # read past the end of a run: the last record (128 KiB blocks, 1 MiB ones)
MAX_WINDOW = 64 << 20  # room for two records of the largest kind (16 MiB blocks)
RECORD = _zvcore.DRR_SIZE
TRAILER = 280  # where a record's checksum of the bytes before it sits

Read = Callable[[int, int], bytes]  # (offset, length) -> bytes of one object


@dataclass
class Sampled:
    """What the runs over one stream proved, and what they found."""

    runs: int = 0
    records: int = 0
    proven: list[tuple[int, int]] = field(default_factory=list)  # [start, end) byte ranges
    problems: list[Problem] = field(default_factory=list)

    @property
    def proven_bytes(self) -> int:
        return sum(end - start for start, end in merged(self.proven))


def check_sample(
    store: Store, dataset: str | None, percent: float, rng: random.Random | None = None
) -> ArchiveReport:
    """check_metadata(), then about percent% of the bytes of each stream proven by range
    (raises ArchiveError when the store cannot be listed)."""
    report = check_metadata(store, dataset)
    report.depth = DEPTH
    rng = rng or random.SystemRandom()
    streams = [f for f in report.files if _sampled(f)]
    jobs = [(f, run) for f in streams for run in runs(f.size, percent, rng)]

    def one(job: tuple[FileReport, tuple[int, int]]) -> Sampled:
        f, (start, stop) = job

        def read(offset: int, length: int) -> bytes:
            return store.read_range(f.name, f.identity, offset, length)

        return prove_run(f.name, read, f.size, start, stop)

    found: dict[str, Sampled] = {f.name: Sampled() for f in streams}
    with ThreadPoolExecutor(IN_FLIGHT) as pool:
        for (f, _run), got in zip(jobs, pool.map(one, jobs), strict=True):
            into = found[f.name]
            into.runs += 1
            into.records += got.records
            into.proven += got.proven
            into.problems += got.problems
    for f in report.files:
        _record(f, found.get(f.name))
    return report


def _sampled(f: FileReport) -> bool:
    """A stream object that can be read by range: listed, readable, not compressed (a range of
    a compressed file is not a range of its stream)."""
    return (
        f.readable
        and f.kind != "partial"
        and f.identity is not None
        and not f.name.endswith(names.COMPRESSION_SUFFIXES)
    )


def _record(f: FileReport, got: Sampled | None) -> None:
    stored = f.stored if f.stored is not None else {}
    f.stored = stored
    if got is None:
        if f.kind != "partial" and f.readable and f.name.endswith(names.COMPRESSION_SUFFIXES):
            stored["sample"] = {"skipped": "compressed: a range of it is no range of its stream"}
        return
    stored["sample"] = {
        "runs": got.runs,
        "records": got.records,
        "proven_bytes": got.proven_bytes,
        "ranges": [list(r) for r in merged(got.proven)],
    }
    f.problems += got.problems


def runs(size: int, percent: float, rng: random.Random) -> list[tuple[int, int]]:
    """The byte ranges [start, stop) to prove: percent% of the SLOT-sized slots (one at least),
    picked at random, neighbours joined."""
    slots = max(1, math.ceil(size / SLOT))
    picked = sorted(rng.sample(range(slots), max(1, math.ceil(slots * percent / 100))))
    out: list[tuple[int, int]] = []
    for slot in picked:
        start, stop = slot * SLOT, min(size, (slot + 1) * SLOT)
        if out and out[-1][1] == start:
            out[-1] = (out[-1][0], stop)
        else:
            out.append((start, stop))
    return out


def merged(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for start, end in sorted(ranges):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(end, out[-1][1]))
        else:
            out.append((start, end))
    return out


@dataclass(frozen=True)
class Walked:
    """One window walked (zvstream.h, zv_swalk): offsets are the stream's."""

    stop: int  # WALK_WINDOW, WALK_NO_ANCHOR, WALK_MISMATCH, WALK_LOST
    big_endian: bool
    proven_from: int
    proven_to: int
    records: int  # checksums that matched
    next: int  # the first record not walked
    bad_at: int
    bad_from: int
    state: tuple[int, int, int, int]
    toguid: int  # the substream's, at next
    trailers: bool  # the stream has per-record checksums
    ended: bool  # the window reached the object's end


def walk(data: bytes, mode: int, at: int, carried: "Walked | None", size: int) -> Walked:
    """Walk a window read at at, going on from what the window before left (carried).
    Raises ValueError when mode is WALK_BEGIN and data does not start with one."""
    if carried is None:
        w = _zvcore.stream_walk(data, mode, base=at)
    else:
        w = _zvcore.stream_walk(
            data,
            mode,
            base=at,
            state=carried.state,
            big_endian=carried.big_endian,
            toguid=carried.toguid,
            trailers=carried.trailers,
        )
    fields = {k: w[k] for k in Walked.__dataclass_fields__ if k != "ended"}
    return Walked(**fields, ended=at + len(data) >= size)


class _Run:
    """One run, window after window: where it is, the state it carries, what it proved."""

    def __init__(self, name: str, read: Read, size: int, start: int, stop: int) -> None:
        self.name, self.read, self.size, self.stop = name, read, size, stop
        self.at, self.window = start, self.needed(start)
        self.mode = _zvcore.WALK_BEGIN if start == 0 else _zvcore.WALK_SEARCH
        self.from_start = start == 0  # framed from byte 0: no boundary was guessed
        self.carried: Walked | None = None  # what an AT walk goes on from
        self.proven_to = start  # the end of what is proven, where an AT walk's chain starts
        self.doubt: tuple[int, int] | None = None  # a checksum that differed: (from, record)
        self.out = Sampled()

    def next_window(self) -> Walked | None:
        """The next window walked; None when it is no stream (said in out.problems)."""
        try:
            data = self.read(self.at, self.window)
        except Changed as err:
            self.problem("changed", str(err), self.at)
            return None
        except ColdError as err:  # the store's own checksum of what it served failed
            self.problem("damaged", str(err), self.at)
            return None
        except OSError as err:
            message = f"bytes from {self.at:,} cannot be read: {err.strerror or err}"
            self.problem("unreadable", message, self.at)
            return None
        try:
            return walk(data, self.mode, self.at, self.carried, self.size)
        except ValueError:
            self.problem("not-a-stream", "no BEGIN record at byte 0: not a send stream", 0)
            return None

    def problem(self, kind: str, message: str, offset: int, start: int | None = None) -> None:
        self.out.problems.append(Problem(self.name, kind, message, offset, damage_from=start))

    def count(self, w: Walked) -> None:
        """What a window proved: an AT walk extends the chain the window before left."""
        start = self.proven_to if self.mode == _zvcore.WALK_AT else w.proven_from
        if w.records > 0:
            self.out.proven.append((start, w.proven_to))
            self.out.records += w.records
            self.proven_to = w.proven_to
        elif self.mode != _zvcore.WALK_AT:
            self.proven_to = w.proven_from

    def go_on(self, w: Walked) -> None:
        self.at, self.mode = w.next, _zvcore.WALK_AT
        self.carried, self.window = w, self.needed(w.next)

    def needed(self, at: int) -> int:
        """The window from at: up to the run's end and its last record, WINDOW at most."""
        return min(WINDOW, max(0, self.stop - at) + TAIL)

    def grow(self) -> bool:
        """Read more from the same place (a record longer than the window)."""
        self.window *= 2
        return self.window <= MAX_WINDOW

    def damaged(self, start: int, record: int) -> None:
        end = record + RECORD
        message = f"bytes {start:,}-{end:,}: the checksum at byte {record:,} differs"
        self.problem("damaged", message, record, start)

    def broken(self, what: str, offset: int, start: int | None = None) -> None:
        """The framing ends: damage when it was known from byte 0; from a boundary found,
        possibly the end of records stored inside a file's data (unproven: read it whole)."""
        if self.from_start:
            self.problem("damaged", what, offset, start)
        else:
            why = f"{what}: damage, or the run followed records inside a file's data"
            self.problem("unproven", why + " (a full check tells)", offset, start)


def prove_run(name: str, read: Read, size: int, start: int, stop: int) -> Sampled:
    """Prove the records from start (byte 0: the stream's BEGIN; else the first boundary found
    from there) until the bytes up to stop are proven or the stream ends."""
    run = _Run(name, read, size, start, stop)
    while run.at < size and (w := run.next_window()) is not None:
        if not _step(run, w, stop):
            break
    if run.doubt is not None:  # nothing after it was proven: the framing is not known to hold
        start, record = run.doubt
        run.broken(f"the checksum at byte {record:,} differs", record, start)
    return run.out


def _step(run: _Run, w: Walked, stop: int) -> bool:
    """Take one walked window into the run; False when the run ends."""
    if w.stop == _zvcore.WALK_NO_ANCHOR:
        return not w.ended and run.grow()  # no boundary in the rest of the slot: a shorter run
    if run.doubt is not None and w.records > 0:
        run.damaged(*run.doubt)  # the framing held after it: the bytes it covers changed
        run.doubt = None
    run.count(w)
    if w.stop == _zvcore.WALK_MISMATCH:
        start = w.bad_from if w.records else run.proven_to
        if run.doubt is not None:
            return False  # two in a row: the framing after the first is not known to hold
        if run.from_start:
            run.damaged(start, w.bad_at)
        else:
            run.doubt = (start, w.bad_at)
        run.go_on(w)
        run.proven_to = w.bad_at + TRAILER  # the walk goes on from the stored trailer
        return True
    if w.stop == _zvcore.WALK_LOST:
        if run.doubt is not None:
            return False  # the framing after the doubtful record does not hold: said once
        run.broken(f"no record can start at byte {w.next:,}", w.next)
        return False
    # WALK_WINDOW: the record at next runs past the window
    if w.next >= run.size:
        return False
    if w.ended:
        run.broken(f"the stream ends inside the record at byte {w.next:,}", w.next)
        return False
    if run.proven_to >= stop and run.doubt is None:
        return False
    if w.next == run.at and run.mode == _zvcore.WALK_AT:
        return run.grow()
    run.go_on(w)
    return True
