"""The cold commands as operations: each takes what the command line said, runs the whole
workflow under the archive's lock (read, decide, act) and returns a result that knows its
verdict (exit_code, through zverify.exitcodes).  Nothing here prints: cli/cold.py parses,
makes one call and hands the result to zverify.report.cold.

Long steps report progress through a Bars factory (bars(what, total) -> a context yielding
a byte-count hook or None), and what a person should see while it happens (a warning about
the archive, each repair as it is done) through Events, so that the caller decides where
it goes and how it looks.

Long because: one operation per cold command (nine), each with its result type, kept side
by side so that their one shape (lock, read, decide, act, verdict) is seen and kept alike;
each is short.
"""

import contextlib
import datetime
import os
import shlex
from collections.abc import Callable, Collection, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from zverify import exitcodes
from zverify.cold import (
    clean,
    consolidate,
    contents,
    names,
    protect,
    prune,
    repair,
    restore,
    send,
    sidecar,
    thaw,
)
from zverify.cold.clean import Leftover
from zverify.cold.plan import NothingToSend, SendPlan, flags_for, plan_send
from zverify.cold.proof import check, metadata, record, sample, scrub
from zverify.cold.proof.check import ArchiveReport, ProgressHook
from zverify.cold.proof.ledger import Ledger
from zverify.cold.prune import DatasetPrune
from zverify.cold.repair import Outcome, Removal
from zverify.cold.restore import RestorePlan
from zverify.cold.send import SentFile
from zverify.cold.store import Store, bucket_of
from zverify.errors import ColdError, UnrestorableError
from zverify.zfs import inventory, ops

Hook = Callable[[int], None]
Bars = Callable[[str, int | None], AbstractContextManager[Hook | None]]


def no_bars(_what: str, _total: int | None) -> AbstractContextManager[Hook | None]:
    return contextlib.nullcontext(None)


@dataclass
class Events:
    """What happens while an operation runs, for the caller to show at once."""

    archive_read: Callable[[ArchiveReport], None] = lambda _report: None
    repaired: Callable[[Outcome], None] = lambda _outcome: None
    thawing: Callable[["thaw.ThawPlan", bool], None] = lambda _plan, _asked: None


# -- results ------------------------------------------------------------------------------


@dataclass
class Sent:
    dataset: str
    reason: str
    files: list[SentFile] = field(default_factory=list)  # the link (if any) first
    linked: bool = False  # files[0] is the link a new full was preceded by
    hold: bool = False
    parity_percent: int = 0
    planned: list[send.PlannedFile] | None = None  # --dry-run: what would be sent

    @property
    def exit_code(self) -> int:
        return exitcodes.verdict(unverified=False, different=False)  # failures raise


@dataclass
class Restored:
    plan: RestorePlan
    at: str | None = None  # the dataset the snapshot was restored into; None: not received
    dry_run: bool = False
    script: str | None = None  # the sh script written (--script), instead of receiving
    # `zfs version` of the OpenZFS that received (userland, module): receivers differ by release
    openzfs: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return exitcodes.verdict(unverified=False, different=False)  # refusals raise


@dataclass
class Pruned:
    decisions: list[DatasetPrune]
    actions: dict[str, dict[str, Any]]
    yes: bool
    blocked: str | None
    problems: list[check.Problem]
    archive_code: int  # the check's verdict on the archive read just now

    @property
    def refused(self) -> bool:
        return bool(self.blocked) or any(d.refused for d in self.decisions)

    @property
    def exit_code(self) -> int:
        # a refusal because something could not be read is "not verified", not "refused"
        unread = self.refused and self.archive_code == exitcodes.TROUBLE
        return exitcodes.verdict(unverified=unread, different=self.refused)


@dataclass
class Cleaned:
    places: str
    found: list[Leftover]
    yes: bool

    @property
    def exit_code(self) -> int:
        return exitcodes.verdict(unverified=False, different=any(f.left for f in self.found))


def not_read(report: ArchiveReport, but: Collection[str] = ()) -> list[check.Problem]:
    """What the check could not read or prove (each leaves the archive not verified), but
    the files in but (a stream repaired from its parity since)."""
    return [p for p in report.not_read if p.file not in but]


@dataclass
class Protected:
    done: list[tuple[str, str, str]]  # (stream, status, message)
    percent: int
    dry_run: bool
    unread: list[check.Problem] = field(default_factory=list)  # the archive was not all read

    @property
    def left(self) -> int:
        return sum(status == "left" for _, status, _ in self.done)

    @property
    def exit_code(self) -> int:
        return exitcodes.verdict(unverified=bool(self.unread), different=bool(self.left))


# outcome statuses: failed could not be carried out (not verified); these found a stream
# that cannot be repaired
_CANNOT = {"unrepairable", "no-parity"}


@dataclass
class Repaired:
    places: str
    outcomes: list[Outcome]
    removed: list[str] = field(default_factory=list)
    dry_run: bool = False
    removals: list[Removal] = field(default_factory=list)  # --remove-damaged's decisions
    unread: list[check.Problem] = field(default_factory=list)  # the archive was not all read

    @property
    def exit_code(self) -> int:
        return exitcodes.verdict(
            unverified=bool(self.unread) or any(o.status == "failed" for o in self.outcomes),
            different=any(o.status in _CANNOT for o in self.outcomes)
            or any(not r.remove for r in self.removals),
        )


@dataclass
class LockedChains:
    places: str
    until: datetime.datetime
    done: list[tuple[str, str, object]]  # (file, status, retain-until before)
    dry_run: bool
    unread: list[check.Problem] = field(default_factory=list)  # the archive was not all read

    @property
    def exit_code(self) -> int:
        return exitcodes.verdict(unverified=bool(self.unread), different=False)


Result = (
    ArchiveReport
    | scrub.ScrubReport
    | Sent
    | Restored
    | Pruned
    | Cleaned
    | Protected
    | Repaired
    | LockedChains
)


# -- operations ---------------------------------------------------------------------------


def check_places(
    store: Store,
    dataset: str | None,
    wait: float,
    bars: Bars = no_bars,
    depth: str = "full",
    percent: float = 1.0,
    ledger_path: str | None = None,
    digest: bool = False,
) -> ArchiveReport:
    """Check at depth: full (every byte), sample (percent% of each stream's bytes by range,
    and the metadata) or metadata; digest: each dataset's newest snapshot's logical state
    digest too (full depth only: one more pass over each route)."""
    if depth == metadata.DEPTH:
        with store.lock("read", wait):
            return metadata.check_metadata(store, dataset)
    if depth == sample.DEPTH:
        with store.lock("read", wait):
            return sample.check_sample(store, dataset, percent)
    with store.lock("read", wait), bars("checking", None) as hook:
        proofs = record.existing_ledger(store, ledger_path)  # tampered: refused before reading
        report = check.check_archive(store, dataset, _per_file(hook))
        record.record_check(proofs, report, explicit=ledger_path is not None)
        if digest:
            consolidate.digest_newest(report)
    if not report.plans and not report.all_problems:
        report.problems.append(check.nothing_found(report, dataset))
    return report


def _per_file(hook: Hook | None) -> ProgressHook | None:
    """check's hook is (file, bytes of it); a bar counts bytes."""
    if hook is None:
        return None
    return lambda _name, n: hook(n)


def scrub_places(
    store: Store, ledger_path: str | None, budget: "scrub.Budget", wait: float, bars: Bars = no_bars
) -> "scrub.ScrubReport":
    """Prove the archive's files least recently proven first, within budget, recording each
    proof in its ledger."""
    with store.lock("read", wait):
        proofs = record.open_ledger(store, ledger_path)
        proofs.ensure_writable()
        with bars("scrubbing", None) as hook:
            return scrub.scrub(store, proofs, budget, _per_file(hook))


@dataclass(frozen=True)
class SendOptions:
    snapshot: str | None = None
    full: bool = False
    intermediate: bool = True
    zfs_flags: dict[str, bool] = field(default_factory=dict)  # raw, compressed, ...
    hold: bool = False
    parity: int | None = None  # None: the archive's level
    compress: tuple[str, int | None] | None = None  # (zstd, gzip or xz, level or None)
    dry_run: bool = False
    manifest: contents.Recorder | None = None  # --manifest: records each snapshot sent


def send_next(
    dataset: str,
    store: Store,
    options: SendOptions,
    wait: float,
    bars: Bars = no_bars,
    events: Events | None = None,
) -> Sent:
    """Archive the next stream of dataset (a link first, before a new full), or with
    dry_run say what would be sent and how big `zfs send -nvP` estimates it.  The new file
    goes into the store's first place; the chain is read from all of them (`--also`), each
    locked as a writer's (in the store's fixed order: no deadlock with another command)."""
    events = events or Events()
    into = store.for_new_files()
    with store.lock("read" if options.dry_run else "write", max(0.0, wait)):
        proofs = None if options.dry_run else record.existing_ledger(store, None)
        archive = check.check_archive(store, dataset)
        if proofs is not None:
            proofs.append(record.records(archive, "send"))
        events.archive_read(archive)
        chosen = plan_send(
            archive.plans.get(dataset),
            inventory.snapshots(dataset),
            options.snapshot,
            options.full,
            options.intermediate,
        )
        if isinstance(chosen, NothingToSend):
            return Sent(dataset, chosen.reason)
        percent = parity_level(archive, options.parity)
        steps = [p for p in (chosen.link, chosen) if p is not None]
        result = Sent(dataset, chosen.reason, linked=chosen.link is not None)
        result.hold, result.parity_percent = options.hold, percent
        if options.dry_run:
            result.planned = [
                send.planned(dataset, s, _flags(s, options), options.compress) for s in steps
            ]
            return result
        for step in steps:
            with bars("sending", None) as hook:
                result.files.append(
                    send.send_to_archive(
                        dataset, into, step, _flags(step, options), hook, options.hold,
                        percent, options.compress, options.manifest,
                    )
                )  # fmt: skip
            proof = result.files[-1].proof
            if proofs is not None and proof is not None:
                proofs.append([proof])
    return result


def _flags(step: SendPlan, options: SendOptions) -> list[str]:
    return [send.FLAGS[k] for k, on in flags_for(step, options.zfs_flags).items() if on]


def parity_level(archive: ArchiveReport, asked: int | None) -> int:
    """--parity, else the archive's own level (so that a cron job keeps it), else none."""
    return asked if asked is not None else archive.parity_level or 0


@dataclass(frozen=True)
class RestoreOptions:
    snapshot: str | None = None
    dataset: str | None = None
    repair_first: bool = False
    dry_run: bool = False
    script: str | None = None  # write the receives to this file instead of receiving
    thaw: tuple[int, str] | None = None  # (days, tier): thaw archived objects of a bucket first
    max_bytes: int | None = None  # a route of more stream bytes is refused before any receive


def restore_snapshot(
    store: Store,
    target: str,
    options: RestoreOptions,
    wait: float,
    bars: Bars = no_bars,
    events: Events | None = None,
) -> Restored:
    """Plan, verify every file, receive and prove by GUID (or only plan, or only write the
    script).  Raises UnrestorableError (exit 1) when the archive cannot, with a hint when
    its parity can repair what is in the way."""
    events = events or Events()
    reading, snapshot, skipped = store, options.snapshot, {}
    if options.thaw is not None:  # the chain's objects thawed; the others left unread
        thawed = _thaw(store, options, events)
        skipped = thawed.skipped()
        reading, snapshot = thaw.LeftFrozen(store, skipped), snapshot or thawed.pin
    repairing = options.repair_first and not options.dry_run  # -n writes nothing at all
    # no prune deletes a file of the plan meanwhile; a repair replaces files: alone
    with store.lock("delete" if repairing else "read", wait):
        proofs = None if options.dry_run else record.existing_ledger(store, None)
        report = check.check_archive(reading, options.dataset)
        if options.repair_first and options.dry_run:
            for outcome in repair.planned(report, []):  # said, and planned as things are
                events.repaired(outcome)
        elif repairing and _repair_all(store, report, [], events):
            report = check.check_archive(store, options.dataset)
        if proofs is not None:  # what was read whole, before anything is received
            proofs.append(record.records(report, "restore"))
        events.archive_read(report)
        with _hint_repair(store, report), _not_all_read(skipped):
            plan = restore.plan_restore(report, target, snapshot)
        restore.within(plan, options.max_bytes)
        result = Restored(plan, dry_run=options.dry_run)
        if options.script is not None:
            result.script = options.script
            with open(options.script, "w", errors="surrogateescape") as f:
                f.write(restore.script(plan, report))
        if options.dry_run or options.script is not None:
            return result
        restore.check_target(target)
        with _hint_repair(store, report):
            restore.verify_files(plan, report)
        with bars("receiving", plan.snapshot.bytes) as hook:
            restore.receive_all(plan, report, hook)
    result.at = restore.restored_at(plan, report)
    result.openzfs = ops.version()
    return result


class ThawPending(ColdError):
    """Objects of the archive are not readable yet: thawing, or (dry run) frozen."""


def _thaw(store: Store, options: RestoreOptions, events: Events) -> thaw.ThawPlan:
    """Ask for the archived objects of the chain to be thawed (none with dry_run), planned
    from the sidecars (zverify.cold.thaw), and go on only when all are readable: a restore
    reads every object of its chain first.  Raises ThawPending (exit 2) naming how many, how
    big and how long."""
    assert options.thaw is not None
    tier = options.thaw[1]
    with store.lock("read"):
        planned = _ask(store, thaw.plan_thaw(store, options.dataset, options.snapshot), options)
        if planned.sidecars_first and not planned.pending:  # thawed at once (Expedited)
            planned = _ask(store, thaw.plan_thaw(store, options.dataset, options.snapshot), options)
    waiting = planned.pending
    if not waiting:
        return planned
    events.thawing(planned, not options.dry_run)
    size = sum(f.bytes for f in waiting)
    waits = sorted({s3_wait(f.storage_class, tier) for f in waiting})
    what = "would be thawed (dry run: nothing asked)" if options.dry_run else "thawing"
    left = [] if planned.sidecars_first else planned.left  # the chain is not known yet
    kept = f"; {len(left)} other archived object(s), {sum(f.bytes for f in left):,} bytes"
    kept = f"{kept}, left frozen" if left else ""
    raise ThawPending(
        f"{len(waiting)} archived object(s), {size:,} bytes, {what}, {tier} tier: "
        f"{', '.join(waits)}{kept}; run the same command again once they are readable"
    )


def _ask(store: Store, planned: thaw.ThawPlan, options: RestoreOptions) -> thaw.ThawPlan:
    """Ask for each frozen object of planned (none with dry_run); the states afterwards."""
    asked = [f for f in planned.pending if f.state == "frozen"]
    if asked and not options.dry_run:
        assert options.thaw is not None
        bucket = bucket_of(store)  # only a bucket has objects to thaw
        for f in asked:
            bucket.thaw(f.key, *options.thaw)
        try:
            planned.archived = bucket.frozen()
        except OSError as err:
            raise ColdError(f"cannot ask {store.shown} how far the thaws are: {err}") from None
    return planned


@contextlib.contextmanager
def _not_all_read(skipped: Collection[str]) -> Iterator[None]:
    """A restore refused while archived objects were left unread is not verified (exit 2):
    what was not read might have restored it."""
    try:
        yield
    except UnrestorableError as err:
        if not skipped:
            raise
        listed = ", ".join(map(names.shown, sorted(skipped)))
        raise ColdError(
            f"{err}; not read, left frozen outside the chain the sidecars planned: {listed}"
        ) from None


def s3_wait(storage_class: str, tier: str) -> str:
    """How long a thaw takes, in words (AWS S3 user guide, archive retrieval options)."""
    waits = {
        ("GLACIER", "Expedited"): "1-5 minutes",
        ("GLACIER", "Standard"): "3-5 hours",
        ("GLACIER", "Bulk"): "5-12 hours",
        ("DEEP_ARCHIVE", "Standard"): "within 12 hours",
        ("DEEP_ARCHIVE", "Bulk"): "within 48 hours",
    }
    return waits.get((storage_class, tier), f"{tier} from {storage_class}: the server's time")


@contextlib.contextmanager
def _hint_repair(store: Store, report: ArchiveReport) -> Iterator[None]:
    """A refused restore says so when the archive's parity can repair what is in the way."""
    try:
        yield
    except UnrestorableError as err:
        fixable = [
            f.name
            for f in report.files
            if f.parity and f.parity.repair and f.parity.repair.status == "repairable"
        ]
        if not fixable:
            raise
        listed = ", ".join(map(names.shown, fixable))
        raise UnrestorableError(
            f"{err}; repairable from their parity: {listed} (`zverify cold repair "
            f"{_places(store)}`, or restore --repair)"
        ) from None


def _places(store: Store) -> str:
    """The places as they would be typed again (with --recursive when it was given)."""
    places = " ".join(shlex.quote(p) for p in store.places)
    return f"--recursive {places}" if store.recursive else places


def prune_chains(
    store: Store,
    dataset: str | None,
    keep_chains: int,
    yes: bool,
    scratch: str | None,
    wait: float,
    bars: Bars = no_bars,
    keep_within: float | None = None,
) -> Pruned:
    """Decide from every byte read just now; with yes, act on each decision that may."""
    # with yes, the archive to itself from the proof to the last deletion
    with store.lock("delete" if yes else "read", wait):
        proofs = record.existing_ledger(store, None)  # tampered: refused before reading
        with bars("verifying", None) as hook:
            report = check.check_archive(store, dataset, _per_file(hook))
        decisions = prune.plan_prune(report, keep_chains, keep_within)
        prune.prove_content(report, decisions)  # the old chain holds what the kept ones do
        if proofs is not None:  # recorded before anything is deleted
            rewritten = _refuse_replaced(proofs, report, decisions)
            proofs.append(record.records(report, "prune", rewritten))
        for d in decisions:
            if d.files and d.refused is None:
                d.refused = prune.locked(store, d)
            if d.files and d.refused is None:
                d.left = prune.left_behind(store, d.files)
        actions: dict[str, dict[str, object]] = {d.dataset: {} for d in decisions}
        if yes:
            for d in decisions:
                if d.files and d.refused is None:
                    actions[d.dataset] = _prune_one(store, report, d, scratch)
    why_not = prune.blocked(report)
    return Pruned(decisions, actions, yes, why_not, report.all_problems, report.exit_code)


def _refuse_replaced(
    proofs: Ledger, report: ArchiveReport, decisions: list[DatasetPrune]
) -> set[str]:
    """A kept file that is not the stream the ledger last proved was replaced behind
    zverify's back: its dataset is not pruned until a check or scrub has said so and
    recorded what is there now (prune records it as a problem, never as the new proof).
    Returns the names of such files."""
    found = record.replaced_files(proofs, report)
    for d in decisions:
        kept = [n for c in d.keep for n in c.files if n in found]
        if d.files and d.refused is None and kept:
            p = found[kept[0]][0]
            d.refused = f"{names.shown(p.file)} {p.message} (the ledger's proof)"
    return set(found)


def _prune_one(
    store: Store, report: ArchiveReport, d: DatasetPrune, scratch: str | None
) -> dict[str, object]:
    if scratch is not None:
        prune.trial_receive(report, d, scratch)
    deleted = prune.delete_files(store, d, report)
    d.left = prune.left_behind(store, deleted)  # as found now, not as listed
    released, note = prune.release_keepers(d)
    return {"deleted": deleted, "released": released, "note": note, "deletion": store.deletion}


def lock_chains(
    store: Store,
    days: int,
    mode: str,
    keep_chains: int,
    dry_run: bool,
    wait: float,
    bars: Bars = no_bars,
) -> LockedChains:
    """Extend the object lock of every file (and sidecar) of the chains prune keeps to
    now + days, so that a chain that grew never has an unlocked base; the chains prune would
    remove are left to expire.  Nothing is ever shortened."""
    until = datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=days)
    with store.lock("read", wait):
        with bars("verifying", None) as hook:
            report = check.check_archive(store, None, _per_file(hook))
        kept = sorted(
            {n for d in prune.plan_prune(report, keep_chains) for c in d.keep for n in c.files}
        )
        listed = {f.name for f in report.files} | set(report.sidecars) | set(report.manifests)
        beside = (names.SIDECAR, names.MANIFEST)
        keys = [k for name in kept for k in (name, *(name + b for b in beside)) if k in listed]
        done: list[tuple[str, str, object]] = []
        for key in keys:
            if dry_run:
                done.append((key, "would-extend", bucket_of(store).retained_until(key)))
            else:
                done.append((key, *bucket_of(store).retain(key, mode, until)))
    return LockedChains(store.shown, until, done, dry_run, not_read(report))


def clean_places(store: Store, yes: bool, wait: float) -> Cleaned:
    with store.lock("delete" if yes else "read", wait):
        found = clean.clean(store, yes)
    return Cleaned(store.shown, found, yes)


def protect_streams(
    store: Store, percent: int | None, dry_run: bool, wait: float, bars: Bars = no_bars
) -> Protected:
    """Parity for every intact stream (or with dry_run, what would be made)."""
    with store.lock("read" if dry_run else "delete", wait):
        with bars("checking", None) as hook:
            report = check.check_archive(store, None, _per_file(hook))
        level = parity_level(report, percent) or protect.DEFAULT_PERCENT
        done = (protect.planned if dry_run else protect.protect)(report, level)
    return Protected(done, level, dry_run, not_read(report))


def repair_streams(
    store: Store,
    asked: list[str],
    remove_damaged: bool,
    dry_run: bool,
    wait: float,
    bars: Bars = no_bars,
    events: Events | None = None,
) -> Repaired:
    """Repair what was asked (default every stream that is not intact); with
    remove_damaged, then remove the originals of streams proven in this run."""
    events = events or Events()
    with store.lock("read" if dry_run else "delete", wait):
        with bars("checking", None) as hook:
            report = check.check_archive(store, None, _per_file(hook))
        if dry_run:
            outcomes = repair.planned(report, asked)
            judged = repair.judge_damaged(report, []) if remove_damaged else []
            return Repaired(store.shown, outcomes, [], True, judged, not_read(report))
        proofs = record.existing_ledger(store, None)
        if proofs is not None:  # what was read before repairing (a rebuilt file: next scrub)
            proofs.append(record.records(report, "repair"))
        outcomes = _repair_all(store, report, asked, events)
        judged = repair.judge_damaged(report, outcomes) if remove_damaged else []
        removed = repair.drop_damaged(store, judged)
    rebuilt = {o.name for o in outcomes if o.status == "repaired"}  # read again, whole
    return Repaired(store.shown, outcomes, removed, False, judged, not_read(report, rebuilt))


def _repair_all(
    store: Store, report: ArchiveReport, asked: list[str], events: Events
) -> list[Outcome]:
    outcomes = []
    for f in repair.wanted(report, asked):
        here, name = store.directory_of(f.name), os.path.basename(f.name)
        outcome = repair.repair(store, f, sidecar.read_object(here, name))
        events.repaired(outcome)
        outcomes.append(outcome)
    return outcomes
