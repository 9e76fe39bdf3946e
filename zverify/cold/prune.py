"""`cold prune`: remove old chains only when the newer ones are proven at that moment.

plan_prune() is pure: from an ArchiveReport (every byte of every file read just now) it decides
which chains to keep and which files may go, with the chain model of zverify.sendstream.chain
(OpenZFS's receive rules; the order of snapshots the streams prove, never the clocks).

* Nothing is deleted while anything in the archive is damaged, truncated, unreadable,
  half-written, orphaned, unreceivable or a resume stream: such a file could belong to a
  chain, or show that the archive is not what it seems.
* Per dataset, a chain (a full and every file a restore can receive after it) is old when at
  least N other chains start at a snapshot the streams prove newer than its own.  Two chains
  the streams cannot order are both kept.
* A file is deleted only when it belongs to an old chain and to no kept chain of *any*
  dataset it carries (a `-R` package belongs to every dataset in it); with --dataset X, a file
  that carries another dataset too is kept.
* Then the kept files alone are planned again, every dataset: each snapshot that would no
  longer be restorable must be proven older (by the streams) than a snapshot that still is.
  A dataset for which that fails keeps all its files, and the proof is made again.

Deletion order: per removed chain the files furthest from the full first, the full last, so
that an interruption leaves a chain prefix that still restores.  The caller holds the archive
exclusively (zverify.cold.store.lock: no send, no reader), and each file is lstat()ed again just
before it is unlinked: it must still be the very regular file that was read (inode, size,
modification time), else nothing more is deleted.  A sidecar and parity files go with their
stream (before it) only when they are plain files.
"""

import os
import time
from collections import deque
from dataclasses import dataclass, field

from zverify.cold import consolidate, restore
from zverify.cold.names import MANIFEST, SIDECAR, shown
from zverify.cold.proof.check import ArchiveReport, Problem
from zverify.cold.send import BOOKMARK_PREFIX, HOLD_TAG
from zverify.cold.store import Store, Unsynced
from zverify.errors import ColdError, ZfsError, ZverifyError
from zverify.sendstream.chain import ArchivedFile, Chain, DatasetPlan, Restorable, plan
from zverify.zfs import inventory, ops

# Problems that leave a doubt over what a kept chain holds: nothing is deleted while one exists.
BLOCKING = {
    "damaged", "truncated", "unreadable", "not-a-stream", "partial", "orphan", "changed",
    "hard-link", "foreign-owner", "unreceivable", "resume",
}  # fmt: skip


@dataclass
class DatasetPrune:
    dataset: str
    keep: list[Chain]
    remove: list[Chain] = field(default_factory=list)
    files: list[str] = field(default_factory=list)  # in deletion order
    bytes: int = 0
    newest_kept: Restorable | None = None  # what the kept files alone restore, newest
    lost: list[Restorable] = field(default_factory=list)  # snapshots no longer restorable
    refused: str | None = None
    left: dict[str, str] = field(default_factory=dict)  # file -> what of it stays (versions)


def blocked(report: ArchiveReport) -> str | None:
    """Why nothing in the archive may be pruned now, or None.  It holds for the archive as a
    whole, even with no chain at all (a damaged file's dataset may be unknown)."""
    blockers: list[Problem] = [p for p in report.all_problems if p.kind in BLOCKING]
    if not blockers:
        return None
    listed = "; ".join(f"{shown(p.file)}: {p.kind}" for p in blockers[:5])
    leftovers = any(p.kind == "partial" for p in blockers)
    return (
        f"the archive has problems that may touch a kept chain ({listed}"
        f"{', ...' if len(blockers) > 5 else ''}): nothing is deleted until "
        "`zverify cold check` is clean"
        + (" (`zverify cold clean --yes` removes leftovers of interrupted sends)" * leftovers)
    )


def plan_prune(
    report: ArchiveReport, keep_chains: int, keep_within: float | None = None
) -> list[DatasetPrune]:
    """One decision per dataset of the report (the ones --dataset chose).  keep_within
    (seconds): also every chain with a snapshot made that recently (by its stream's
    creation time, against this machine's clock)."""
    archived = report.chained  # a renamed dataset's files under its chain's name
    by_name = {f.name: f for f in archived}
    now = plan(archived)
    since = None if keep_within is None else time.time() - keep_within
    decisions = {
        d: _split(d, found, now[d], keep_chains, by_name, since)
        for d, found in sorted(report.chains.items())
    }
    kept = {n for d in decisions.values() for c in d.keep for n in c.files}
    # a file that carries a dataset outside this prune (--dataset) is not this prune's
    kept |= {f.name for f in archived if set(f.datasets) - decisions.keys()}
    for d in decisions.values():
        d.files = [n for c in d.remove for n in _deletion_order(d.dataset, c, by_name)]
    _prove(decisions, kept, archived, now)
    _assign(decisions, kept, by_name)
    why_not = blocked(report)
    for d in decisions.values():
        if why_not:  # even with nothing to delete: "prune is safe now" would be false
            d.refused = why_not
    return list(decisions.values())


def _split(
    dataset: str,
    found: list[Chain],
    now: DatasetPlan,
    keep_chains: int,
    by_name: dict[str, ArchivedFile],
    since: float | None,
) -> DatasetPrune:
    """Keep every chain that fewer than keep_chains others are proven newer than, and, with
    an age rule, every other chain without which a snapshot made at `since` or later would be
    lost.  A keep rule only adds to what is kept: _prove still guards the rest."""

    def newer_than(c: Chain) -> int:
        return sum(now.order.older(c.start, other.start) for other in found)

    keep = [c for c in found if newer_than(c) < keep_chains]
    if since is not None:
        kept = {n for c in keep for n in c.files}
        held = {s.to_guid for n in kept for s in by_name[n].steps_of(dataset)}
        keep += [
            c for c in found if c not in keep and _recent(c, dataset, kept, held, by_name, since)
        ]
    return DatasetPrune(dataset, keep, [c for c in found if c not in keep])


def _recent(
    chain: Chain,
    dataset: str,
    kept: set[str],
    held: set[int],
    by_name: dict[str, ArchivedFile],
    since: float,
) -> bool:
    """Whether a chain alone brings a snapshot of dataset made at `since` or later: a file of
    it that no kept chain has brings one that no kept file brings.  A stream without a
    creation time is not recent: keep-chains keeps it."""
    return any(
        step.creation_time >= since and step.to_guid not in held
        for name in chain.files
        if name not in kept
        for step in by_name[name].steps_of(dataset)
    )


def _prove(
    decisions: dict[str, DatasetPrune],
    kept: set[str],
    archived: list[ArchivedFile],
    now: dict[str, DatasetPlan],
) -> None:
    """Refuse (and keep every file of) each dataset that would lose a snapshot not proven
    older than one it keeps; until none does.  Sets newest_kept and lost."""
    while True:
        going = {n for d in decisions.values() if not d.refused for n in d.files} - kept
        left = plan([f for f in archived if f.name not in going])
        newly_refused = False
        for dataset, before in now.items():
            after = left.get(dataset)
            still = after.restorable if after else []
            still_guids = {r.guid for r in still}
            lost = [r for r in before.restorable if r.guid not in still_guids]
            proven = before.order.older_than_any(still_guids)
            unproven = [r for r in lost if r.guid not in proven]
            d = decisions.get(dataset)
            if d is not None and d.remove:
                d.lost, d.newest_kept = lost, (after.newest[-1] if after and after.newest else None)
            if not unproven:
                continue
            carrying = {f.name for f in archived if dataset in f.datasets}
            for other in decisions.values():
                touched = carrying & set(other.files)
                if touched and not other.refused:
                    other.refused = _why(dataset, unproven[-1], still)
                    newly_refused = True
        if not newly_refused:
            return


def _why(dataset: str, lost: Restorable, still: list[Restorable]) -> str:
    if not still:
        return (
            f"{dataset}: no kept chain restores anything of it, and an old chain holds "
            f"@{lost.snapshot}: it would vanish from the archive"
        )
    newest = ", ".join(f"@{r.snapshot}" for r in still[-3:])
    return (
        f"{dataset}: an old chain holds @{lost.snapshot} (guid {lost.guid}), which the streams "
        f"do not prove older than what the kept chains restore (up to {newest}): send a new "
        "full that the old chain reaches, or keep both"
    )


def _assign(
    decisions: dict[str, DatasetPrune], kept: set[str], by_name: dict[str, ArchivedFile]
) -> None:
    """Each file to delete goes to one decision (its first dataset's, in name order), so
    that a file several datasets share is deleted once; refused decisions delete nothing."""
    taken: set[str] = set()
    for d in decisions.values():
        files = [] if d.refused else [n for n in d.files if n not in kept]
        d.files = []
        for name in files:
            if name not in taken and _owner(by_name[name], decisions) == d.dataset:
                taken.add(name)
                d.files.append(name)
        d.bytes = sum(by_name[n].size for n in d.files)
        if d.refused:
            d.remove = []


def _owner(f: ArchivedFile, decisions: dict[str, DatasetPrune]) -> str:
    return next(d for d in f.datasets if d in decisions and not decisions[d].refused)


def _deletion_order(dataset: str, chain: Chain, by_name: dict[str, ArchivedFile]) -> list[str]:
    """The chain's files, furthest from the full first, the full last."""
    members = [by_name[n] for n in chain.files]
    depth = {chain.full: 0}
    queue = deque([by_name[chain.full]])
    while queue:
        f = queue.popleft()
        ends = {s.to_guid for s in f.steps_of(dataset)}
        for g in members:
            if g.name not in depth and g.steps_of(dataset)[0].from_guid in ends:
                depth[g.name] = depth[f.name] + 1
                queue.append(g)
    return sorted(chain.files, key=lambda n: (-depth.get(n, 0), n))


def prove_content(report: ArchiveReport, decisions: list[DatasetPrune]) -> None:
    """After the proof by order (_prove): a chain superseded by a newer full goes only when
    every snapshot it restores that a kept route restores too gives the same logical state
    digest both ways (zverify.cold.consolidate.content_refusal).  A difference refuses the
    decision naming the first object that differs; a route the engine cannot merge (raw,
    redacted...) refuses it too: its content is not proven."""
    going = {n for d in decisions if d.refused is None for n in d.files}
    for d in decisions:
        if not d.files or d.refused is not None:
            continue
        try:
            d.refused = consolidate.content_refusal(report, d.dataset, d.remove, going)
        except ZverifyError as err:
            d.refused = f"{d.dataset}: the old chain's content is not proven equal: {err}"


# -- acting on a decision (--yes) ---------------------------------------------------------


def trial_receive(report: ArchiveReport, decision: DatasetPrune, scratch: str) -> None:
    """Receive what the kept chains restore, newest, into scratch (which must not exist) and
    prove it by GUID; scratch is destroyed afterwards, whatever happened."""
    newest = decision.newest_kept
    assert newest is not None
    restore.check_target(scratch)
    trial = restore.RestorePlan(decision.dataset, scratch, newest, tuple(newest.files))
    try:
        restore.receive_all(trial, report)
    finally:
        if ops.exists(scratch):
            ops.destroy_tree(scratch)


def delete_files(store: Store, decision: DatasetPrune, report: ArchiveReport) -> list[str]:
    """Delete the decided files in order, each after its sidecar, manifest and parity (a
    stream without them is complete; they without their stream are reported), syncing its
    directory after each (Store.delete), so that an interruption leaves a prefix of the
    chain.  Returns what went.  Raises ColdError (naming what went before) when a file is no
    longer the one that was read or cannot be deleted: nothing after it is deleted."""
    read = {f.name: f.identity for f in report.files}
    parity = {f.name: f.parity.files for f in report.files if f.parity is not None}
    deleted: list[str] = []
    for name in decision.files:
        path = store.local_path(name) if store.uses_local_files else name
        try:
            expected = read.get(name)
            store.ensure_unchanged(name, expected)  # before its sidecar and parity go
            store.delete_aside(name + SIDECAR)
            store.delete_aside(name + MANIFEST)
            for name_of_parity in parity.get(name, []):
                store.delete_aside(name_of_parity)
            assert expected is not None  # ensure_unchanged refuses None
            store.delete(name, expected)  # still the very file: checked again as it goes
        except Unsynced as err:
            deleted.append(name)
            raise ColdError(f"{err}; nothing more was deleted{_so_far(deleted)}") from None
        except ColdError as err:
            raise ColdError(f"{err}, nor anything after it{_so_far(deleted)}") from None
        except OSError as err:
            what = name if err.filename in (None, path) else os.path.basename(err.filename)
            raise ColdError(
                f"deleting {shown(what)} failed: {err.strerror}; nothing after it was deleted"
                f"{_so_far(deleted)}"
            ) from None
        deleted.append(name)
    return deleted


def left_behind(store: Store, files: list[str]) -> dict[str, str]:
    """What stays of each file once deleted, in words, by name: in a versioned bucket the
    older versions of its key, the newest of which becomes current, never read, so that the
    file is not gone (its next check judges what is there; a later prune deletes it once
    proven).  Only the proven version is ever deleted: an older one was never read."""
    if store.bucket is None:
        return {}  # an unlinked file leaves nothing behind
    return {name: said for name in files if (said := store.bucket.left_behind(name))}


def locked(store: Store, decision: DatasetPrune) -> str | None:
    """Why none of the decided files may go yet: an object lock (retention or legal hold)
    on any of them.  A dataset's files go all or none, so that a lock never leaves an
    incremental whose base was deleted around it."""
    bucket = store.bucket
    if bucket is None:
        return None  # a directory has no object lock
    held = {name: until for name in decision.files if (until := bucket.retained_until(name))}
    if not held:
        return None
    last = max(held.values())
    when = "under a legal hold" if last.year == 9999 else f"locked until {last:%Y-%m-%d}"
    first = shown(min(held))
    return (
        f"{len(held)} of its {len(decision.files)} files ({first}, ...) are {when} "
        "(object lock): nothing of it is deleted before then"
    )


def _so_far(deleted: list[str]) -> str:
    return f" (deleted so far: {', '.join(map(shown, deleted))})" if deleted else ""


def release_keepers(decision: DatasetPrune) -> tuple[list[str], str | None]:
    """Destroy the bookmarks (#zverify-SNAP) and release the holds (tag zverify-cold) that
    `cold send` made on snapshots no kept chain holds.  Returns (what was released, why not)
    — why not when the dataset is not on this host (an archive pruned where it is stored)."""
    try:
        present = inventory.snapshots(decision.dataset)
    except ZfsError as err:
        return [], f"bookmarks and holds not released: {decision.dataset} is not reachable ({err})"
    lost = {r.guid for r in decision.lost}
    mine = [s for s in present if s.guid in lost]
    bookmarks = [
        s.full_name(decision.dataset)
        for s in mine
        if s.bookmark and s.name.startswith(BOOKMARK_PREFIX)
    ]
    ops.destroy_bookmarks(bookmarks)
    snapshots = [s.full_name(decision.dataset) for s in mine if not s.bookmark]
    held = [name for name in snapshots if HOLD_TAG in ops.holds(name)]
    ops.release(held, HOLD_TAG)
    released = bookmarks + [f"{name} (hold {HOLD_TAG})" for name in held]
    return released, None
