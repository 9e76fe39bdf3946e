"""What a reading of the archive writes into its ledger, in one place: which archive a record
names (archive_of), which file (record_of, stamp_of), what the reading found (outcome), and
whether an intact file is the stream its last proof proved (replaced).  check, send,
restore, prune and repair record each file they read whole here; scrub records each file it
proves (zverify.cold.proof.scrub).  The ledger itself, its lines and its head, is
zverify.cold.proof.ledger.
"""

import os
from collections.abc import Collection
from dataclasses import replace

from zverify.cold.proof.check import UNVERIFIED, ArchiveReport, FileReport, Problem
from zverify.cold.proof.ledger import Ledger, LedgerRecord, now
from zverify.cold.store import Store
from zverify.errors import ArchiveError, ColdError, UsageError


def existing_ledger(store: Store, path: str | None) -> Ledger | None:
    """The ledger a reading records in: the one given, else the archive's own if it has
    one.  Raises ledger.Tampered before anything is read."""
    if path is not None:
        return Ledger.open(path, archive_of(store))
    own = store.ledger_path()
    if own is None:
        return None
    return Ledger.open(own, archive_of(store)) if os.path.lexists(own) else None


def open_ledger(store: Store, path: str | None) -> Ledger:
    """The ledger at path, else the archive's own (in its first directory).  A bucket's
    ledger is a local file given with --ledger.  Raises ColdError, ledger.Tampered."""
    path = path or store.ledger_path()
    if path is None:
        raise UsageError(f"{store.shown}: a bucket keeps no ledger here: give --ledger PATH")
    return Ledger.open(path, archive_of(store))


def record_check(proofs: Ledger | None, report: ArchiveReport, explicit: bool) -> None:
    """A check's record: each file read (what it proved, before any doubt is added), then an
    intact file that is not the stream last proved under its name flagged `replaced` (exit
    1, once: this check records what is there now).  report.ledger gets the ledger's summary
    line.  The archive's own ledger that cannot be written (a read-only mount) costs the
    check nothing but the record, and the summary says so; one given (explicit) raises."""
    if proofs is None:
        return
    made = records(report, "check")
    found = replaced_files(proofs, report)  # keys are unique in a store: one file per name
    for f in report.files:
        f.problems += found.get(f.name, [])
    try:
        proofs.append(made)
    except ColdError as err:
        if explicit:
            raise
        report.ledger = f"ledger not written: {err}"
        return
    report.ledger = proofs.summary()


def records(
    report: ArchiveReport, method: str, doubted: Collection[str] = ()
) -> list[LedgerRecord]:
    """A record of each file the report read whole (doubted ones: a problem, not a proof)."""
    return [
        record_of(
            f,
            f.identity.size if f.identity else 0,
            method,
            "problem" if f.name in doubted else outcome(f),
        )
        for f in report.files
        if f.kind != "partial"
    ]


def replaced_files(proofs: Ledger, report: ArchiveReport) -> dict[str, list[Problem]]:
    """Each intact file that is not the stream the ledger last proved under its name, with
    the problem that says so."""
    last = proofs.last_proven()
    return {
        f.name: problems
        for f in report.files
        if f.valid and f.name in last and (problems := replaced(f, last[f.name]))
    }


def outcome(f: FileReport) -> str:
    """A proof's result: proven (intact, nothing to say), unreadable (no verdict), damaged
    (the stream is not intact) or problem (intact, and something about it is wrong: its
    sidecar, parity, ownership, a resume stream)."""
    if f.valid:
        return "proven"
    if not f.readable or any(p.kind in UNVERIFIED for p in f.problems):
        return "unreadable"
    return "damaged" if f.archived is None else "problem"


def record_of(f: FileReport, size: int, method: str, result: str) -> LedgerRecord:
    """The record of f's proof, naming the file it read (its identity, as listed before the
    read, and its change time); the archive is named by Ledger.append()."""
    dataset = from_guid = to_guid = None
    if f.archived is not None and f.archived.steps:
        first, last = f.archived.steps[0], f.archived.steps[-1]
        dataset, from_guid, to_guid = last.dataset, str(first.from_guid), str(last.to_guid)
    record = LedgerRecord(
        f.name, size, dataset, from_guid, to_guid, f.digest, method, result, now()
    )
    if f.identity is None or f.ctime_ns is None:
        return record  # nothing was read of it: no file to name
    i = f.identity
    dev = volume_of(i.dev, f.place)
    return replace(record, dev=dev, ino=i.ino, mtime_ns=i.mtime_ns, ctime_ns=f.ctime_ns)


def replaced(f: FileReport, before: LedgerRecord) -> list[Problem]:
    """An intact stream that is not the one its last proof proved: replaced or rewritten."""
    now = record_of(f, before.size, before.method, "proven")
    what = [
        label
        for label, old, new in (
            ("snapshot GUIDs", (before.from_guid, before.to_guid), (now.from_guid, now.to_guid)),
            ("digest", before.digest, now.digest),
        )
        if old != new
    ]
    if not what:
        return []
    message = (
        f"not the stream proven at {before.time} (its {' and '.join(what)} differ): "
        "replaced or rewritten since"
    )
    return [Problem(f.name, "replaced", message)]


def archive_of(store: Store) -> str:
    """What a ledger record names as its archive: each directory's real path and device (a
    copy elsewhere, on another disk, is another archive), or the bucket's URL and the
    endpoint it is reached at (two servers may hold buckets of the same name).  Raises
    ArchiveError when a directory cannot be looked at."""
    if not store.uses_local_files:
        meta = getattr(getattr(store, "client", None), "meta", None)
        endpoint = getattr(meta, "endpoint_url", None)
        return f"{store.shown} at {endpoint}" if endpoint else store.shown
    return ", ".join(_directory_id(place) for place in store.places)


def _directory_id(place: str) -> str:
    try:
        return f"{os.path.realpath(place)} (filesystem {volume_of(os.stat(place).st_dev, place)})"
    except OSError as err:
        raise ArchiveError(f"cannot read archive {place!r}: {err.strerror}") from None


_volumes: dict[tuple[int, str], int] = {}


def volume_of(dev: int, place: str) -> int:
    """The filesystem a file of place is on, as a ledger names it across runs.  Not st_dev:
    ZFS datasets and btrfs subvolumes get anonymous device numbers in mount order, and a
    removable disk's number follows the port it is plugged into, so after a reboot or a
    re-plug every proof would stand for "another file".  statvfs's filesystem id is derived
    from the filesystem's own UUID or GUID on ext4, btrfs and ZFS (and from the device where
    the filesystem has nothing better, as on XFS: no worse than st_dev).  A bucket's place
    has no statvfs: its objects keep their synthetic dev."""
    if (dev, place) not in _volumes:
        try:
            _volumes[dev, place] = os.statvfs(place).f_fsid or dev
        except (OSError, ValueError):
            return dev
    return _volumes[dev, place]


def stamp_of(st: os.stat_result, place: str) -> tuple[int, int, int, int, int]:
    """What a record names of the file it proved (LedgerRecord.stamp)."""
    return (volume_of(st.st_dev, place), st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
