"""restore --thaw: which archived objects of a bucket a restore needs, known before any of
them can be read.

An object in GLACIER or DEEP_ARCHIVE can be read only after a RestoreObject (a "thaw"),
which is billed by the byte and takes hours.  A restore reads every byte of its chain before
it receives anything, so the chain's objects must be thawed, and only they: thawing a whole
prefix to restore one chain costs money and days.  The chain is planned here from what can be
known without a stream's bytes: the listing and the sidecars `cold send` writes beside each
stream (in STANDARD, readable at once), through the restore's own planner (the fewest bytes
from a full to the snapshot asked, default the newest).

The sidecars only choose what to thaw; they prove nothing.  The restore then reads the
chain's objects whole and proves the chain from the GUIDs inside the streams, as for any
archive, and leaves unread the archived objects outside the chain that are still frozen
(LeftFrozen), naming each.

What is thawed:
- the objects of the chain, by the sidecars;
- every archived stream without a sidecar that describes it (none, unreadable, not JSON, or
  of another size than the object): without reading it nothing says what it holds, so it may
  be a link of the chain or a newer snapshot.  It is thawed too, and named with why (a hand-made
  archive has no sidecars at all: then every stream is thawed; `cold send` writes one for
  every stream);
- first, alone, every archived sidecar (a bucket rule may have moved them): the chain is
  planned once they can be read.
"""

import errno
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from stat import S_ISREG
from typing import Any

from zverify.cold import names, restore, sidecar
from zverify.cold.entries import FileStamp
from zverify.cold.names import SIDECAR
from zverify.cold.proof.check import ArchiveReport, beside_streams
from zverify.cold.store import IN_FLIGHT, Entry, Frozen, Store
from zverify.errors import ColdError, UnrestorableError, ZverifyError
from zverify.sendstream.chain import ArchivedFile, DatasetPlan, Restorable, Step, plan

NO_SIDECAR = "no sidecar says what it holds without reading it: thawed in case the chain needs it"


@dataclass
class ThawPlan:
    """The archived objects a restore needs thawed (key -> why), and every archived object of
    the store with its thaw state."""

    wanted: dict[str, str]
    archived: list[Frozen]
    snapshot: Restorable | None = None  # what the sidecars plan to restore (None: not yet)
    unknown: list[str] = field(default_factory=list)  # streams no sidecar describes
    sidecars_first: bool = False  # wanted are archived sidecars: the chain is not planned yet

    @property
    def pending(self) -> list[Frozen]:
        """What is wanted and not readable yet, in the chain's order."""
        order = {key: n for n, key in enumerate(self.wanted)}
        waiting = [f for f in self.archived if f.key in order and f.state != "thawed"]
        return sorted(waiting, key=lambda f: order[f.key])

    @property
    def left(self) -> list[Frozen]:
        """The archived objects not wanted that cannot be read: never asked for."""
        return [f for f in self.archived if f.key not in self.wanted and f.state != "thawed"]

    @property
    def pin(self) -> str | None:
        """The snapshot the restore must prove (its GUID): the one the sidecars planned, when
        nothing else was thawed that could hold a newer one."""
        if self.snapshot is None or self.unknown:
            return None
        return str(self.snapshot.guid)

    def skipped(self) -> dict[str, str]:
        """key -> why the restore does not read it (LeftFrozen)."""
        chain = f"@{self.snapshot.snapshot}" if self.snapshot else "the snapshot asked"
        return {
            f.key: f"left {f.state} in {f.storage_class}, outside the chain of {chain} by the "
            "sidecars: not read"
            for f in self.left
        }


def plan_thaw(store: Store, dataset: str | None, snapshot: str | None) -> ThawPlan:
    """What to thaw for a restore of snapshot (default the newest) of dataset.  Raises
    ArchiveError (the store cannot be listed), ColdError (what was asked cannot be planned
    from the sidecars: not verified, as nothing frozen was read)."""
    listed = store.entries()
    try:
        archived = store.bucket.frozen() if store.bucket is not None else []
    except OSError as err:
        raise ColdError(f"cannot ask {store.shown} which objects are archived: {err}") from None
    if all(f.state == "thawed" for f in archived):
        return ThawPlan({}, archived)  # all readable: the restore reads as it always does
    cold_sidecars = {
        f.key: "a sidecar: the chain is planned from it once it can be read"
        for f in archived
        if f.key.endswith(SIDECAR) and f.state != "thawed"
    }
    if cold_sidecars:
        return ThawPlan(cold_sidecars, archived, sidecars_first=True)
    known, unknown = _described(store, listed, dataset)
    cold = {f.key for f in archived}
    unread = {name: NO_SIDECAR for name in unknown if name in cold}
    chosen = _chain(store, known, snapshot, bool(unknown))
    if chosen is None:  # only the streams without a sidecar can tell: they are read first
        return ThawPlan(unread, archived, None, unknown)
    wanted = {name: f"in the chain of @{chosen.snapshot} by the sidecars" for name in chosen.files}
    return ThawPlan(wanted | unread, archived, chosen, unknown)


@dataclass(frozen=True)
class _Described:
    """A stream as its sidecar says it is: one step from its first snapshot's base to its
    last snapshot, and the names of the snapshots it carries (a -I package's in between)."""

    file: ArchivedFile
    carries: tuple[str, ...] = ()


def _chain(
    store: Store, known: list[_Described], snapshot: str | None, more: bool
) -> Restorable | None:
    """The restore planner's choice over the sidecars' files (a stand-in target: nothing is
    received); None when they place no route there but streams without a sidecar might.
    Raises ColdError: what the sidecars plan is not verified by a byte."""
    try:
        plans = plan([d.file for d in known])
    except ZverifyError as err:  # forged sidecars can make any history
        raise ColdError(f"by the sidecars: {err}; nothing was thawed") from None
    report = ArchiveReport(store.shown, [], plans, {}, [], store=store)
    try:
        return restore.plan_restore(report, "-", snapshot).snapshot
    except UnrestorableError as err:
        inside = _inside(known, plans, snapshot) if snapshot is not None else None
        if inside is not None or more:
            return inside
        what = str(err).replace(" (see `zverify cold check`)", "")
        raise ColdError(f"by the sidecars: {what}; nothing was thawed") from None
    except ColdError as err:  # several datasets, or several newest
        raise ColdError(f"by the sidecars: {err}; nothing was thawed") from None


def _inside(
    known: list[_Described], plans: dict[str, DatasetPlan], snapshot: str
) -> Restorable | None:
    """A snapshot that only -I packages carry between their ends (the sidecar has no GUID of
    it): the cheapest route to a package's base, then the package."""
    routes = []
    for d in known:
        if snapshot not in d.carries[:-1]:
            continue
        step, f = d.file.steps[0], d.file
        bases = [r for r in plans[step.dataset].restorable if r.guid == step.from_guid]
        if step.from_guid == 0:
            routes.append(Restorable(step.dataset, snapshot, 0, 0, (f.name,), f.size))
        for r in bases:
            files = (*r.files, f.name)
            routes.append(Restorable(step.dataset, snapshot, 0, 0, files, r.bytes + f.size))
    return min(routes, key=lambda r: r.bytes, default=None)


def _described(
    store: Store, listed: list[Entry], dataset: str | None
) -> tuple[list[_Described], list[str]]:
    """Each stream as its sidecar describes it, and the streams no sidecar describes."""
    sidecars = {e.key: e for e in listed if e.key.endswith(SIDECAR) and e.st is not None}
    streams = [e for e in listed if _stream(e)]

    def one(entry: Entry) -> _Described | None:
        aside = sidecars.get(entry.key + SIDECAR)
        return None if aside is None else _file(store, entry, aside)

    with ThreadPoolExecutor(IN_FLIGHT) as pool:
        found = list(pool.map(one, streams))
    known = [d for d in found if d is not None]
    if dataset is not None:
        known = [d for d in known if d.file.steps[0].dataset == dataset]
    unknown = [e.key for e, d in zip(streams, found, strict=True) if d is None]
    return known, unknown


def _stream(entry: Entry) -> bool:
    """What may be a stream: not a sidecar, parity, kept original, lock file, upload or
    common prefix (a "subdirectory", which a check reports)."""
    st = entry.st
    return (
        not beside_streams(entry)
        and entry.upload is None
        and st is not None
        and S_ISREG(st.st_mode)
    )


def _file(store: Store, entry: Entry, aside: Entry) -> _Described | None:
    """The stream as its sidecar says it is, or None when the sidecar cannot say."""
    assert entry.st is not None and aside.st is not None
    listed = FileStamp.of(aside.st)
    doc = sidecar.load(aside.key, lambda: store.read_small(aside.key, listed, sidecar.MAX_BYTES))
    if isinstance(doc, tuple) or doc.get("file_bytes", doc.get("bytes")) != entry.st.st_size:
        return None  # unreadable, not a sidecar, or not of this object
    step = _step(doc)
    if step is None:
        return None
    carried = doc.get("snapshots")
    if not (isinstance(carried, list) and all(isinstance(n, str) for n in carried)):
        carried = []
    return _Described(ArchivedFile(entry.key, entry.st.st_size, (step,)), tuple(carried))


def _step(doc: dict[str, Any]) -> Step | None:
    """A sidecar's stream as one step of the chain model, or None when it lacks what that
    needs (a dataset, both GUIDs, the last snapshot's name)."""
    dataset, to_snapshot = doc.get("dataset"), doc.get("to_snapshot")
    try:
        from_guid, to_guid = int(str(doc["from_guid"])), int(str(doc["to_guid"]))
    except (KeyError, ValueError):
        return None
    if not isinstance(dataset, str) or not isinstance(to_snapshot, str):
        return None
    if from_guid < 0 or to_guid <= 0:
        return None
    return Step(dataset, from_guid, to_guid, to_snapshot)


class LeftFrozen:
    """store, but reading an object of skipped fails at once with its reason, without a
    request: check_archive() reports it unreadable (not read), and the restore goes on with
    what it did read."""

    def __init__(self, store: Store, skipped: dict[str, str]) -> None:
        self._store = store
        self.skipped = skipped

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def open_read(self, key: str, expect: FileStamp | None = None) -> int:
        why = self.skipped.get(key)
        if why is not None:
            raise OSError(errno.EAGAIN, why, names.shown(key))
        return self._store.open_read(key, expect)
