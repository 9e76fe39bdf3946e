"""drill(): prove that what an archive keeps restores and gives back the source's files.

The route to the snapshot is received into a scratch dataset (scratch.py) by `cold restore`
itself (every file read whole first, relayed through the validator, proven by GUID), the
received snapshot is mounted read-only and compared, by the `zverify compare` engine in its
full profile, with what it must equal:

* the source snapshot with the same GUID, when the source is on this host (or `--against
  POOL/DS@SNAP`: any snapshot, which then need not have the same GUID);
* or a manifest of the source snapshot: `--against FILE` (`zverify manifest` of its
  `.zfs/snapshot/S`, made while the source was there), else the one the archive keeps
  (`cold send --manifest`: zverify.cold.contents), copied out and proven first to be the
  bytes its sidecar names.

Exit 0 only when the received tree equals it; 1 when it differs (naming the first paths) or
the archive cannot restore the snapshot; 2 when the drill could not run or could not read
(no space, no ZFS, a receive refused, nothing to compare with, an entry unreadable).  The
scratch is destroyed in every case.  The drill is then one ledger record (zverify.cold.proof.ledger)
of what it received, with which OpenZFS, compared with what, and its result.
"""

import contextlib
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field

from zverify import exitcodes
from zverify.cold import contents, operations
from zverify.cold.entries import FileStamp
from zverify.cold.names import shown
from zverify.cold.operations import Bars, Events, RestoreOptions
from zverify.cold.proof import record
from zverify.cold.proof.ledger import DRILL_PREFIX, DrillFacts, Ledger, LedgerRecord, now
from zverify.cold.store import Store
from zverify.compare.diffs import Difference
from zverify.compare.policy import ComparePolicy
from zverify.compare.result import UNVERIFIED_KINDS, CompareResult
from zverify.drill import scratch
from zverify.errors import ColdError, UnrestorableError, UsageError, ZfsError, ZverifyError
from zverify.pathnames import for_terminal
from zverify.trees.compare import compare_trees
from zverify.trees.options import CompareOptions
from zverify.zfs import command, inventory, ops

SHOWN = 10  # differences named in the result


@dataclass(frozen=True)
class DrillOptions:
    dataset: str | None = None
    snapshot: str | None = None  # name or GUID; default the newest restorable
    pool: str | None = None  # the scratch is a new dataset on it...
    scratch_bytes: int | None = None  # ...or a pool on a new file of this size
    scratch_dir: str = "/var/tmp"
    against: str | None = None  # POOL/DS@SNAP or a manifest file
    max_bytes: int | None = None
    ledger: str | None = None
    threads: int | None = None


@dataclass
class Compared:
    against: str  # what the received tree was compared with, for people
    entries: int = 0
    differences: int = 0
    unverified: int = 0
    shown: list[dict[str, str]] = field(default_factory=list)  # the first few of either


@dataclass
class Drilled:
    dataset: str | None
    snapshot: str | None = None
    guid: int | None = None
    route: list[str] = field(default_factory=list)
    bytes: int = 0
    scratch: str = ""
    compared: Compared | None = None
    openzfs: list[str] = field(default_factory=list)
    ledger: str | None = None  # the ledger's summary line, or why it was not written
    failure: str | None = None  # why it is not a pass, when not a difference
    failure_code: int = exitcodes.IDENTICAL

    @property
    def exit_code(self) -> int:
        if self.failure is not None:
            return self.failure_code
        c = self.compared
        if c is None:
            return exitcodes.TROUBLE
        return exitcodes.verdict(unverified=c.unverified > 0, different=c.differences > 0)

    @property
    def result(self) -> str:
        """The ledger's word for it."""
        return {0: "proven", 1: "damaged"}.get(self.exit_code, "problem")


def drill(
    store: Store,
    options: DrillOptions,
    wait: float,
    bars: Bars = operations.no_bars,
    events: Events | None = None,
) -> Drilled:
    """Receive, compare, destroy, record (see the module's docstring).  Usage errors raise
    before anything is read; every later failure is in the result, and recorded."""
    if (options.pool is None) == (options.scratch_bytes is None):
        raise UsageError("give where to receive: --pool POOL or --scratch-file SIZE")
    given = _given_against(options.against)
    proofs = _ledger(store, options.ledger)
    result = Drilled(options.dataset)
    try:
        _run(store, options, given, wait, result, bars, events)
    except (UnrestorableError, ColdError, ZfsError, ZverifyError) as err:
        result.failure = str(err)
        result.failure_code = err.exit_code
    result.ledger = _record(proofs, result, explicit=options.ledger is not None)
    return result


def _run(
    store: Store,
    options: DrillOptions,
    given: str | None,
    wait: float,
    result: Drilled,
    bars: Bars,
    events: Events | None,
) -> None:
    result.openzfs = ops.version()
    with _scratch(options) as place:
        result.scratch = place.shown
        restore = RestoreOptions(options.snapshot, options.dataset, max_bytes=options.max_bytes)
        restored = operations.restore_snapshot(store, place.target, restore, wait, bars, events)
        chosen = restored.plan.snapshot
        result.dataset, result.snapshot, result.guid = chosen.dataset, chosen.snapshot, chosen.guid
        result.route, result.bytes = list(chosen.files), chosen.bytes
        if restored.openzfs:
            result.openzfs = restored.openzfs
        assert restored.at is not None
        received = f"{restored.at}@{chosen.snapshot}"
        _readable(restored.at)
        against = given or _source_snapshot(chosen.dataset, chosen.guid)
        if against is not None:
            result.compared = _compare(received, against, options.threads)
            return
        kept = contents.archived(store, chosen.guid, chosen.snapshot, chosen.files[-1:])
        if kept is None:
            raise ColdError(
                f"{chosen.dataset}@{chosen.snapshot} (guid {chosen.guid}) was received, but "
                "there is nothing to compare it with: the source snapshot is not on this "
                "host and the archive keeps no manifest of it (`cold send --manifest`); give "
                "--against POOL/DS@SNAP or --against MANIFEST (`zverify manifest` of the "
                "source snapshot)"
            )
        result.compared = _compare_archived(store, received, kept, options.threads)


def _ledger(store: Store, path: str | None) -> Ledger | None:
    """The ledger the drill records in: the one given, else the archive's own directory's
    (created: a drill is a record).  A bucket without --ledger keeps none (said)."""
    if path is None and store.ledger_path() is None:
        return None
    proofs = record.open_ledger(store, path)
    proofs.ensure_writable()  # refused before anything is received
    return proofs


def _record(proofs: Ledger | None, r: Drilled, explicit: bool) -> str:
    if proofs is None:
        return "ledger not written: a bucket keeps no ledger here (give --ledger PATH)"
    facts = DrillFacts(
        tuple(r.route),
        " / ".join(r.openzfs),
        r.compared.against if r.compared else "",
        r.compared.entries if r.compared else 0,
    )
    record = LedgerRecord(
        f"{DRILL_PREFIX}{r.dataset or '(archive)'}@{r.snapshot or '(newest)'}",
        r.bytes,
        r.dataset,
        None,
        str(r.guid) if r.guid is not None else None,
        None,
        "drill",
        r.result,
        now(),
        drill=facts,
    )
    try:
        proofs.append([record])
    except ColdError as err:
        if explicit:
            raise
        return f"ledger not written: {err}"
    return proofs.summary()


@contextlib.contextmanager
def _scratch(options: DrillOptions) -> Iterator[scratch.Scratch]:
    if options.pool is not None:
        with scratch.on_pool(options.pool) as place:
            yield place
    else:
        assert options.scratch_bytes is not None
        with scratch.on_file(options.scratch_bytes, options.scratch_dir) as place:
            yield place


def _given_against(against: str | None) -> str | None:
    """--against: a manifest file, or a snapshot (pool/ds@snap) that must exist now."""
    if against is None or os.path.exists(against):
        return against
    if "@" not in against:
        raise UsageError(f"--against {against}: neither a file nor a snapshot (POOL/DS@SNAP)")
    if not ops.exists(against):
        raise UsageError(f"--against {against}: no such snapshot")
    return against


def _source_snapshot(dataset: str, guid: int) -> str | None:
    """The archive's dataset's snapshot of that GUID, when it is on this host."""
    if not ops.exists(dataset):
        return None
    for s in inventory.snapshots(dataset):
        if s.guid == guid and not s.bookmark:
            return s.full_name(dataset)
    return None


def _readable(dataset: str) -> None:
    """A raw (encrypted) receive leaves the key unloaded: its files cannot be read, and a
    drill that cannot read proves nothing of them.  A volume has no files to compare."""
    if ops.dataset_type(dataset) == "volume":
        raise ColdError(
            f"{dataset} was received and proven by GUID, but it is a volume: a drill "
            "compares files (compare its device with the source's yourself)"
        )
    if ops.key_unavailable(dataset):
        raise ColdError(
            f"{dataset} was received (a raw, encrypted chain) and proven by GUID, but its "
            f"files cannot be read without its key: `zfs load-key` is needed to drill it"
        )


def _compare_archived(
    store: Store,
    received: str,
    kept: tuple[str, dict[str, object], FileStamp],
    threads: int | None,
) -> Compared:
    """Compared with the manifest the archive keeps, copied out and proven on the way."""
    key, entry, listed = kept
    with tempfile.TemporaryDirectory(prefix="zverify-drill-") as where:
        copy = os.path.join(where, os.path.basename(key))
        contents.copy_proven(store, key, entry, listed, copy)
        return _compare(received, copy, threads, f"archived manifest {shown(key)}")


def _compare(received: str, against: str, threads: int | None, what: str = "") -> Compared:
    options = CompareOptions(ComparePolicy(), threads=threads)
    shown = _FirstFew()
    with contextlib.ExitStack() as stack:
        theirs = against
        if not os.path.exists(against):  # a snapshot: mounted read-only like ours
            theirs = stack.enter_context(command.mounted_snapshot(against))
        ours = stack.enter_context(command.mounted_snapshot(received))
        outcome = compare_trees(theirs, ours, options, sink=shown.add)
    if not what:
        what = f"manifest {against}" if os.path.exists(against) else f"snapshot {against}"
    return _compared(what, outcome, shown)


def _compared(what: str, outcome: CompareResult, shown: "_FirstFew") -> Compared:
    entries = sum(outcome.src_sizes.counts.values())
    unverified = outcome.unverified_count + len(outcome.unverifiable)
    return Compared(
        what,
        entries,
        outcome.total - outcome.unverified_count,
        unverified,
        [_entry(d) for d in shown.first],
    )


class _FirstFew:
    """The first SHOWN differences: a drill of millions of files costs no memory."""

    def __init__(self) -> None:
        self.first: list[Difference] = []

    def add(self, d: Difference) -> None:
        if len(self.first) < SHOWN or (
            d.kind in UNVERIFIED_KINDS and not any(f.kind in UNVERIFIED_KINDS for f in self.first)
        ):
            self.first.append(d)


def _entry(d: Difference) -> dict[str, str]:
    return {"path": for_terminal(d.path) or ".", "kind": d.kind.value, "detail": d.detail}
