"""`cold prune`: remove old chains only when the newer ones are proven at that moment.

plan_prune() is pure: from an ArchiveReport (every byte of every file read just now) it decides,
per dataset, which chains to keep (the newest N by their full's creation time) and which
files may go.  A file is deleted only when

* nothing in the archive is damaged, truncated, unreadable, half-written or orphaned: such a
  file could be part of a kept chain, so nothing is deleted while one exists;
* no kept chain needs it (a file reachable from a kept full is never deleted);
* the kept files alone, re-planned by GUID without the old ones, restore a snapshot at least as
  new as every snapshot only the removed chains hold (an old chain is never the newest).

Deletion order: per removed chain the files furthest from the full first, the full last, so
that an interruption leaves a chain prefix that still restores.  The caller holds the archive
exclusively (zverify.cold.lock: no send, no reader), and each file is lstat()ed again just
before it is unlinked: it must still be the very regular file that was read (inode, size,
modification time), else nothing more is deleted.  A sidecar and parity files go with their
stream (before it) only when they are plain files.
"""

import os
import stat
from collections import deque
from dataclasses import dataclass, field

from zverify.cold.check import SIDECAR, ArchiveReport, Problem
from zverify.cold.names import shown
from zverify.cold.send import fsync_dir
from zverify.errors import ColdError
from zverify.sendstream.chain import ArchivedFile, Chain, Restorable, plan

# Problems that leave a doubt over what a kept chain holds: nothing is deleted while one exists.
BLOCKING = {
    "damaged", "truncated", "unreadable", "not-a-stream", "partial", "orphan", "changed",
    "hard-link", "foreign-owner",
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


def plan_prune(report: ArchiveReport, keep_chains: int) -> list[DatasetPrune]:
    archived = [f.archived for f in report.files if f.archived is not None]
    why_not = blocked(report)
    out = []
    for dataset, found in sorted(report.chains.items()):
        decision = _plan_dataset(dataset, found, archived, report, keep_chains)
        if why_not:  # even with nothing to delete: "prune is safe now" would be false
            decision.refused = why_not
        out.append(decision)
    return out


def _plan_dataset(
    dataset: str,
    found: list[Chain],
    archived: list[ArchivedFile],
    report: ArchiveReport,
    keep_chains: int,
) -> DatasetPrune:
    everything = report.plans[dataset].restorable
    order = {r.guid: r.order for r in everything}
    by_name = {f.name: f for f in archived}
    newest_first = sorted(found, key=lambda c: _full_order(c, by_name, order), reverse=True)
    decision = DatasetPrune(dataset, newest_first[:keep_chains])
    old = newest_first[keep_chains:]
    if not old:
        return decision
    kept_names = {n for c in decision.keep for n in c.files}
    kept_plan = plan([by_name[n] for n in sorted(kept_names)]).get(dataset)
    kept = kept_plan.restorable if kept_plan else []
    if not kept:
        decision.refused = "the kept chains restore nothing: nothing is deleted"
        return decision
    decision.newest_kept = max(kept, key=lambda r: r.order)
    kept_guids = {r.guid for r in kept}
    decision.lost = [r for r in everything if r.guid not in kept_guids]
    newer = [r for r in decision.lost if r.creation_time > decision.newest_kept.creation_time]
    if newer:
        decision.refused = (
            f"an old chain holds @{newer[-1].snapshot}, newer than the newest snapshot the "
            f"kept chains restore (@{decision.newest_kept.snapshot}): send a new full first"
        )
        return decision
    decision.remove = old
    for chain in old:
        for name in _deletion_order(dataset, chain, by_name):
            if name not in kept_names and name not in decision.files:
                decision.files.append(name)
                decision.bytes += by_name[name].size
    return decision


def _full_order(
    chain: Chain, by_name: dict[str, ArchivedFile], order: dict[int, tuple[int, int]]
) -> tuple[int, int, str]:
    step = by_name[chain.full].steps_of(chain.dataset)[-1]
    return (*order.get(step.to_guid, (0, 0)), chain.full)


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


# -- acting on a decision (--yes) ---------------------------------------------------------


def trial_receive(
    directory: str, report: ArchiveReport, decision: DatasetPrune, scratch: str
) -> None:
    """Receive what the kept chains restore, newest, into scratch (which must not exist) and
    prove it by GUID; scratch is destroyed afterwards, whatever happened."""
    from zverify.cold import restore
    from zverify.zfs import command

    newest = decision.newest_kept
    assert newest is not None
    restore.check_target(scratch)
    trial = restore.RestorePlan(decision.dataset, scratch, newest, newest.files)
    try:
        restore.receive_all(directory, trial, report)
    finally:
        if command.optional("list", "-H", "-o", "name", scratch) is not None:
            command.run("destroy", "-r", scratch)


def delete_files(directory: str, decision: DatasetPrune, report: ArchiveReport) -> list[str]:
    """Delete the decided files in order, each after its sidecar and parity (a stream without
    them is complete; they without their stream are reported), syncing the directory
    after each, so that an interruption leaves a prefix of the chain.  Returns what went.
    Raises ColdError (naming what went before) when a file is no longer the one that was read
    or cannot be deleted: nothing after it is deleted."""
    read = {f.name: f.identity for f in report.files}
    parity = {f.name: f.parity.files for f in report.files if f.parity is not None}
    deleted: list[str] = []
    for name in decision.files:
        path = os.path.join(directory, name)
        try:
            st = os.lstat(path)
            expected = read.get(name)
            if expected is None or not stat.S_ISREG(st.st_mode) or not expected.unchanged(st):
                raise ColdError(
                    f"{shown(name)} is not the file that was verified any more (replaced or "
                    f"changed since): not deleted, nor anything after it{_so_far(deleted)}"
                )
            _delete_sidecar(path + SIDECAR)
            for name_of_parity in parity.get(name, []):
                _delete_sidecar(os.path.join(directory, name_of_parity))
            os.unlink(path)
        except OSError as err:
            raise ColdError(
                f"deleting {shown(os.path.basename(err.filename or path))} failed: "
                f"{err.strerror}; nothing after it was deleted{_so_far(deleted)}"
            ) from None
        deleted.append(name)
        try:
            fsync_dir(directory)
        except OSError as err:
            raise ColdError(
                f"the fsync of {directory} failed: {err.strerror}; nothing more was deleted"
                f"{_so_far(deleted)}"
            ) from None
    return deleted


def _delete_sidecar(path: str) -> None:
    """A plain file only: anything else under a sidecar's name is reported, never deleted."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISREG(st.st_mode) and st.st_nlink == 1:
        os.unlink(path)


def _so_far(deleted: list[str]) -> str:
    return f" (deleted so far: {', '.join(map(shown, deleted))})" if deleted else ""


def release_keepers(decision: DatasetPrune) -> tuple[list[str], str | None]:
    """Destroy the bookmarks (#zverify-SNAP) and release the holds (tag zverify-cold) that
    `cold send` made on snapshots no kept chain holds.  Returns (what was released, why not)
    — why not when the dataset is not on this host (an archive pruned where it is stored)."""
    from zverify.cold.send import BOOKMARK_PREFIX, HOLD_TAG
    from zverify.errors import ZfsError
    from zverify.zfs import inventory, lzc

    try:
        present = inventory.snapshots(decision.dataset)
    except ZfsError as err:
        return [], f"bookmarks and holds not released: {decision.dataset} is not reachable ({err})"
    lost = {r.guid for r in decision.lost}
    mine = [s for s in present if s.guid in lost]
    bookmarks = [
        s.full_name(decision.dataset).encode()
        for s in mine
        if s.bookmark and s.name.startswith(BOOKMARK_PREFIX)
    ]
    if bookmarks:
        lzc.call("lzc_destroy_bookmarks", bookmarks)
    held = [
        s.full_name(decision.dataset).encode()
        for s in mine
        if not s.bookmark
        and HOLD_TAG.encode() in lzc.call("lzc_get_holds", s.full_name(decision.dataset).encode())
    ]
    if held:
        lzc.call("lzc_release", {name: [HOLD_TAG.encode()] for name in held})
    released = [n.decode() for n in bookmarks] + [f"{n.decode()} (hold {HOLD_TAG})" for n in held]
    return released, None
