"""What `zfs receive` accepts, as predicates over one substream and the dataset it lands on.

Pure: no I/O.  Each rule cites the OpenZFS 2.1 code that enforces it (module/zfs/dmu_recv.c,
lib/libzfs/libzfs_sendrecv.c; docs/design/cold.md has the whole list and what is left out).
A rule here may refuse more than OpenZFS does, never less: a chain zverify calls restorable
must receive, so where OpenZFS's answer depends on what the stream cannot show (a loaded
key, a block actually larger than 128 KiB), the rule takes the answer that can be proven.

A dataset being restored is summed up by its Tip: the GUID of its newest snapshot and what
every later incremental must match.  A restore receives into a new dataset, so there is no
-F: a full starts a dataset that is not there yet, an incremental follows the tip.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


class Substream(Protocol):
    """What the rules read of one substream (zverify.sendstream.chain.Step)."""

    @property
    def from_guid(self) -> int: ...
    @property
    def raw(self) -> bool: ...
    @property
    def large_blocks(self) -> bool: ...
    @property
    def resuming(self) -> bool: ...
    @property
    def unsupported(self) -> str: ...
    @property
    def clone(self) -> bool: ...


@dataclass(frozen=True)
class Tip:
    """A dataset as received so far: its newest snapshot and the flags that bind what follows."""

    guid: int
    raw: bool  # received raw (-w of an encrypted dataset): encrypted with the source's keys
    large_blocks: bool  # a stream with LARGE_BLOCKS was received: blocks > 128 KiB may exist


RESUMING = (
    "a resume stream (`zfs send -t`): it continues an interrupted `zfs receive -s` and is "
    "received only onto the partial dataset that receive left (dmu_recv_resume_begin_check), "
    "so it restores nothing from an archive; keep the complete stream instead"
)


CLONE_WITHOUT_ORIGIN = (
    "a clone stream (its base is another dataset's snapshot) whose origin the same file does "
    "not bring before it: zverify plans a clone only inside a `zfs send -R` package that "
    "carries its origin"
)


def refuses_start(step: Substream) -> str | None:
    """Why a dataset that does not exist yet cannot be created from step, or None (a clone:
    refuses_clone)."""
    if step.resuming:
        return RESUMING
    if step.unsupported:
        return step.unsupported
    if step.clone:
        return CLONE_WITHOUT_ORIGIN
    if step.from_guid != 0:
        return "an incremental needs its base snapshot received first"
    return None


def refuses_after(tip: Tip, step: Substream) -> str | None:
    """Why step cannot be received onto a dataset at tip, or None."""
    if step.resuming:
        return RESUMING
    if step.unsupported:
        return step.unsupported
    if step.clone:
        # dmu_recv_begin_check: "Can't recv a clone into an existing fs" (EINVAL)
        return "a clone stream cannot be received onto a dataset that exists"
    if step.from_guid == 0:
        # recv_begin_check_existing_impl: a full onto an existing dataset needs -F
        return "a full stream cannot be received onto a dataset that exists (without -F)"
    if step.from_guid != tip.guid:
        # dmu_recv_begin_check: fromguid must be a snapshot of the target, and the target
        # unmodified since it (a later snapshot received since counts as modified)
        return f"starts from snapshot guid {step.from_guid}, not the latest received ({tip.guid})"
    return _flags_refuse(tip, step)


def refuses_clone(origin: Tip | None, parent: Tip | None, step: Substream) -> str | None:
    """Why a clone stream (DRR_FLAG_CLONE) cannot create its dataset, or None.  origin: the
    dataset whose snapshot step.from_guid is, when the same file brought that snapshot or
    found it in place before this step (a `-R` package sends a clone's origin first:
    libzfs_sendrecv.c dump_filesystems; zfs_receive_one finds it by GUID, guid_to_name, and
    dmu_recv_begin_check clones it); parent: the dataset the clone is created under, when it
    is one of the restore's."""
    if step.resuming:
        return RESUMING
    if step.unsupported:
        return step.unsupported
    if origin is None:
        return CLONE_WITHOUT_ORIGIN
    # dmu_recv_begin_check checks large blocks against the clone's parent
    # (recv_check_large_blocks); the new clone has its origin's features (and keys): the
    # stricter of both binds it
    large = origin.large_blocks or (parent is not None and parent.large_blocks)
    return _flags_refuse(Tip(step.from_guid, origin.raw, large), step)


def _flags_refuse(tip: Tip, step: Substream) -> str | None:
    """Why the send flags of step contradict what tip demands, or None."""
    if step.raw and not tip.raw:
        # recv_begin_check_existing_impl: "Can't perform a raw receive on top of a non-raw
        # receive" (EINVAL)
        return (
            "a raw incremental (-w) on a chain received without -w: `zfs receive` refuses it "
            "(cannot perform raw receive on top of existing unencrypted dataset)"
        )
    if tip.raw and not step.raw:
        # dmu_recv_begin_check holds the target with DS_HOLD_FLAG_DECRYPT for a non-raw
        # stream: without the key loaded that fails, and a restore loads no key
        return (
            "an incremental without -w on a chain received raw: `zfs receive` takes it only "
            "with the dataset's key loaded, which a restore does not do"
        )
    if tip.large_blocks and not step.large_blocks:
        # recv_check_large_blocks: ZFS_ERR_STREAM_LARGE_BLOCK_MISMATCH
        return (
            "an incremental without -L (--large-block) on a chain received with it: `zfs "
            "receive` refuses it (incremental send stream requires -L, to match previous "
            "receive)"
        )
    return None


def after(tip: Tip | None, step: Substream, to_guid: int) -> Tip:
    """The dataset once step was received (a full: tip is None; a clone: tip is its
    origin's dataset, whose keys and features a clone has)."""
    if tip is None:
        return Tip(to_guid, step.raw, step.large_blocks)
    return Tip(to_guid, tip.raw, tip.large_blocks or step.large_blocks)
