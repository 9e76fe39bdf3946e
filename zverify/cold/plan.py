"""What `cold send` sends next: a pure decision from the archive and the source.

Nothing archived for the dataset (or --full) -> a full of the newest snapshot (or the one
asked for).  Otherwise -> an incremental from the newest snapshot the archive can restore
(by the order its streams prove; where they leave several, the one the source made last),
which must still exist on the source as a snapshot or a bookmark (found by GUID, never by
name), to the newest snapshot: `-I` (every snapshot between kept) unless intermediate is
off.  Nothing newer -> nothing to send.

An incremental takes the flags its chain demands (zverify.sendstream.rules): -w after a raw
chain, -L after a chain received with large blocks; a command line that contradicts them is
refused.  A new full (--full) of a snapshot the archive does not reach is linked to the
chain it replaces by an incremental to that same snapshot first: only then do the streams
prove that the old chain is older, which is what lets `cold prune` delete it.
"""

from dataclasses import dataclass

from zverify.errors import UsageError
from zverify.sendstream.chain import DatasetPlan, Restorable
from zverify.sendstream.rules import Tip
from zverify.zfs.inventory import Snap


@dataclass(frozen=True)
class SendPlan:
    to: Snap
    base: Snap | None  # None: a full stream; else a snapshot or bookmark on the source
    base_name: str | None  # the base's snapshot name in the archive (for the file name)
    intermediate: bool  # -I rather than -i
    reason: str
    follows: Tip | None = None  # the chain an incremental extends: its flags bind this one
    link: "SendPlan | None" = None  # a full's link from the chain it replaces, sent first


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
        link = _link(archived, source, to, intermediate) if full and archived else None
        linked = f", after {link.reason} to link it to the chain it replaces" if link else ""
        return SendPlan(
            to, None, None, False, f"full stream of @{to.name} ({why}){linked}", link=link
        )
    assert archived is not None
    if any(r.guid == to.guid for r in restorable):
        return NothingToSend(f"@{to.name} is already restorable from the archive")
    return _incremental(archived, source, to, intermediate)


def _incremental(
    archived: DatasetPlan, source: list[Snap], to: Snap, intermediate: bool
) -> SendPlan | NothingToSend:
    newest, base = _newest_on_source(archived, source)
    if base.createtxg >= to.createtxg:
        return NothingToSend(f"no snapshot newer than the archived @{newest.snapshot}")
    if base.bookmark and intermediate:
        # -I needs a snapshot as its base: go to the next snapshot with -i, so that the next
        # run continues with -I and no snapshot is skipped
        to = next(s for s in source if not s.bookmark and s.createtxg > base.createtxg)
        why = f"-i #{base.name} -> @{to.name} (from a bookmark; run again for later snapshots)"
        return SendPlan(to, base, newest.snapshot, False, why, newest.tip)
    style = "-I" if intermediate else "-i"
    why = f"{style} @{newest.snapshot} -> @{to.name}"
    return SendPlan(to, base, newest.snapshot, intermediate, why, newest.tip)


def _newest_on_source(archived: DatasetPlan, source: list[Snap]) -> tuple[Restorable, Snap]:
    """The archive's newest snapshot to extend, and its snapshot or bookmark on the source.
    Where the streams leave several newest (unlinked fulls), the source's own order
    (createtxg) picks the one made last."""
    found = [(r, _on_source(source, r.guid)) for r in archived.newest]
    present = [(r, s) for r, s in found if s is not None]
    if not present:
        listed = ", ".join(f"@{r.snapshot} (guid {r.guid})" for r in archived.newest)
        raise UsageError(
            f"the newest archived snapshot {listed} no longer exists on the source as a "
            "snapshot or bookmark: start a new chain with --full"
        )
    return max(present, key=lambda rs: rs[1].createtxg)


def _link(
    archived: DatasetPlan, source: list[Snap], to: Snap, intermediate: bool
) -> SendPlan | None:
    """The incremental that brings the archive's newest chain to to, when it does not reach
    to yet and its base is still on the source; else None (the new chain stays unlinked)."""
    if not archived.restorable or any(r.guid == to.guid for r in archived.restorable):
        return None
    try:
        newest, base = _newest_on_source(archived, source)
    except UsageError:
        return None
    if base.createtxg >= to.createtxg:
        return None
    style = "-I" if intermediate and not base.bookmark else "-i"
    why = f"{style} {'#' if base.bookmark else '@'}{base.name} -> @{to.name}"
    return SendPlan(to, base, newest.snapshot, style == "-I", why, newest.tip)


def flags_for(plan: SendPlan, asked: dict[str, bool]) -> dict[str, bool]:
    """The send flags (FLAGS' keys) of plan: what was asked, plus what the chain it extends
    demands.  Raises UsageError when the command line asks for what the chain refuses."""
    tip = plan.follows
    if plan.base is None or tip is None:
        return dict(asked)
    if asked.get("raw") and not tip.raw:
        raise UsageError(
            f"--raw: the chain this extends (@{plan.base_name}) was sent without -w, and `zfs "
            "receive` refuses a raw incremental on it; leave out --raw, or start a new chain "
            "with --full --raw"
        )
    return {**asked, "raw": asked.get("raw", False) or tip.raw,
            "large_block": asked.get("large_block", False) or tip.large_blocks}  # fmt: skip


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
