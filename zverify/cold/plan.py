"""What `cold send` sends next: a pure decision from the archive and the source.

Nothing archived for the dataset (or --full) -> a full of the newest snapshot (or the one
asked for).  Otherwise -> an incremental from the newest snapshot the archive can restore,
which must still exist on the source as a snapshot or a bookmark (found by GUID, never by
name), to the newest snapshot: `-I` (every snapshot between kept) unless intermediate is
off.  Nothing newer -> nothing to send.
"""

from dataclasses import dataclass

from zverify.errors import UsageError
from zverify.sendstream.chain import DatasetPlan
from zverify.zfs.inventory import Snap


@dataclass(frozen=True)
class SendPlan:
    to: Snap
    base: Snap | None  # None: a full stream; else a snapshot or bookmark on the source
    base_name: str | None  # the base's snapshot name in the archive (for the file name)
    intermediate: bool  # -I rather than -i
    reason: str


@dataclass(frozen=True)
class NothingToSend:
    reason: str


def plan_send(
    archived: DatasetPlan | None,
    source: list[Snap],
    snapshot: str | None = None,
    full: bool = False,
    intermediate: bool = True,
) -> SendPlan | NothingToSend:
    """Raises UsageError when what was asked for cannot be done (with why)."""
    snaps = [s for s in source if not s.bookmark]
    if not snaps:
        raise UsageError("the dataset has no snapshot to send")
    to = _target(snaps, snapshot)
    restorable = archived.restorable if archived else []
    if full or not restorable:
        why = "--full asked" if full else "nothing of this dataset archived yet"
        return SendPlan(to, None, None, False, f"full stream of @{to.name} ({why})")
    newest = max(restorable, key=lambda r: r.order)
    if newest.guid == to.guid or any(r.guid == to.guid for r in restorable):
        return NothingToSend(f"@{to.name} is already restorable from the archive")
    base = _on_source(source, newest.guid)
    if base is None:
        raise UsageError(
            f"the newest archived snapshot @{newest.snapshot} (guid {newest.guid}) no longer "
            "exists on the source as a snapshot or bookmark: start a new chain with --full"
        )
    if base.createtxg >= to.createtxg:
        return NothingToSend(f"no snapshot newer than the archived @{newest.snapshot}")
    if base.bookmark and intermediate:
        # -I needs a snapshot as its base: go to the next snapshot with -i, so that the next
        # run continues with -I and no snapshot is skipped
        to = next(s for s in snaps if s.createtxg > base.createtxg)
        why = f"-i #{base.name} -> @{to.name} (from a bookmark; run again for later snapshots)"
        return SendPlan(to, base, newest.snapshot, False, why)
    style = "-I" if intermediate else "-i"
    why = f"{style} @{newest.snapshot} -> @{to.name}"
    return SendPlan(to, base, newest.snapshot, intermediate, why)


def _target(snaps: list[Snap], snapshot: str | None) -> Snap:
    if snapshot is None:
        return snaps[-1]
    for s in snaps:
        if s.name == snapshot:
            return s
    raise UsageError(f"no snapshot @{snapshot} on the source")


def _on_source(source: list[Snap], guid: int) -> Snap | None:
    """The snapshot with that GUID, else a bookmark of it (a bookmark costs no space)."""
    matches = sorted((s for s in source if s.guid == guid), key=lambda s: s.bookmark)
    return matches[0] if matches else None
