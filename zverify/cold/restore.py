"""Restore a snapshot from an archive: plan, verify every file, receive, prove by GUID.

The plan is the fewest-bytes list of files from a full to the snapshot (sendstream.chain).
Every file of it is read completely *before* anything is received, so a damaged file is
refused with its reason while the target is still untouched.  Each file is then received
(`zfs receive -u`; a receive that fails or is killed leaves no snapshot), and afterwards
every snapshot the file carries must exist on the target with the stream's GUID: a zero exit
status of receive proves nothing.  Each receive is fed through the relay (receive_file): the
file is validated a second time as it goes to the kernel, so a file that changed after the
first reading is stopped at its first bad record, before any of that record reaches receive.

The caller holds the archive's readers' lock (zverify.cold.store.lock): no prune or clean deletes a
file of the plan meanwhile.  Files are opened without following a symlink or blocking on a
FIFO, and must still be the very files the check read (zverify.cold.entries).
"""

import errno
import os
import shlex
from collections.abc import Callable
from dataclasses import dataclass

from zverify.cold import entries
from zverify.cold.entries import FileStamp
from zverify.cold.names import shown
from zverify.cold.proof.check import ArchiveReport
from zverify.errors import ColdError, UnrestorableError
from zverify.sendstream import compressed
from zverify.sendstream.chain import ArchivedFile, Restorable
from zverify.sendstream.report import StreamReport
from zverify.sendstream.validate import ProgressHook, verify_stream
from zverify.zfs import inventory, ops


@dataclass(frozen=True)
class RestorePlan:
    dataset: str
    target: str
    snapshot: Restorable
    files: tuple[str, ...]


def plan_restore(report: ArchiveReport, target: str, snapshot: str | None) -> RestorePlan:
    """The files that rebuild snapshot (a name or a GUID; default the newest restorable, by
    the order the streams prove)."""
    candidates = [(d, r) for d, p in report.plans.items() for r in p.restorable]
    datasets = sorted({d for d, _ in candidates})
    if len(datasets) > 1:
        raise ColdError(f"the archive holds several datasets ({', '.join(datasets)}): --dataset")
    if not candidates:
        raise UnrestorableError("nothing in the archive is restorable (see `zverify cold check`)")
    dataset = datasets[0]
    if snapshot is None:
        newest = report.plans[dataset].newest
        if len(newest) != 1:
            listed = ", ".join(f"@{r.snapshot} (guid {r.guid})" for r in newest)
            raise ColdError(
                f"{dataset}: the streams do not say which is newest of {listed} (no incremental "
                "leads from one to the other): choose with --snapshot NAME or GUID"
            )
        chosen = newest[0]
    else:
        found = [r for _, r in candidates if snapshot in (r.snapshot, str(r.guid))]
        if not found:
            raise UnrestorableError(
                f"@{snapshot} cannot be restored from this archive (see `zverify cold check`)"
            )
        if len(found) > 1:
            listed = ", ".join(f"guid {r.guid}" for r in found)
            raise ColdError(
                f"{dataset}: several snapshots are named @{snapshot} ({listed}): choose by GUID"
            )
        chosen = found[0]
    return RestorePlan(dataset, target, chosen, tuple(chosen.files))


def within(plan: RestorePlan, max_bytes: int | None) -> None:
    """A route of more than max_bytes stream bytes is not received (ColdError, exit 2: not
    an answer about the archive)."""
    if max_bytes is not None and plan.snapshot.bytes > max_bytes:
        raise ColdError(
            f"{plan.dataset}@{plan.snapshot.snapshot}: its route is {plan.snapshot.bytes:,} "
            f"bytes ({len(plan.files)} files), more than the {max_bytes:,} allowed: not received"
        )


def landing(target: str, files: list[ArchivedFile]) -> dict[str, str]:
    """Where each file of a restore is received: the first file's top dataset becomes target,
    every dataset below it the same path below target (a `-R` package's children), so that
    each later file goes where its top dataset landed (zverify.sendstream.chain.receive
    admits no route where that is not possible)."""
    if not files:
        return {}
    top = files[0].top
    return {f.name: target + f.top[len(top) :] for f in files}


def check_target(target: str) -> None:
    """A restore creates its target: an existing dataset is never received into."""
    if ops.exists(target):
        raise ColdError(f"{target} exists: restore creates a new dataset (destroy or rename it)")


def verify_files(plan: RestorePlan, report: ArchiveReport) -> None:
    """Read every file of the plan completely now; raise UnrestorableError on the first bad."""
    if report.store is not None and not report.store.uses_local_files:
        return  # a bucket's objects were read whole just now, and every read is pinned to them
    read = {f.name: f.identity for f in report.files}
    for name in plan.files:
        fd = _open_in(report, name, read.get(name))
        try:
            checked = verify_stream(fd)
        finally:
            os.close(fd)
        if not checked.valid:
            what = checked.problems[0] if checked.problems else None
            where = f" at byte {what.offset}: {what.message}" if what else ""
            raise UnrestorableError(f"{shown(name)} is damaged{where}; nothing was received")


def receive_all(
    plan: RestorePlan, report: ArchiveReport, progress: ProgressHook | None = None
) -> None:
    """Receive the plan's files in order, each where its top dataset lands, proving every
    snapshot of the restored dataset it carries by GUID.  progress(bytes) counts over the
    whole plan."""
    archived = _archived(plan, report)
    read = {f.name: f.identity for f in report.files}
    where = landing(plan.target, archived)
    at = restored_at(plan, report)
    done: list[str] = []
    base = 0
    for f in archived:
        hook = (lambda n, at=base: progress(at + n)) if progress else None
        fd = _open_in(report, f.name, read.get(f.name))
        finish = _finisher(report, f.name)
        _receive_fd(fd, shown(f.name), where[f.name], done, hook, finish)
        base += f.size
        mine = f.steps_of(plan.dataset)  # none: a file that puts a parent in place first
        have = {s.guid for s in inventory.snapshots(at) if not s.bookmark} if mine else set()
        for step in mine:
            if step.to_guid not in have:
                raise ColdError(
                    f"after receiving {shown(f.name)}, {at}@{step.snapshot} with guid "
                    f"{step.to_guid} is not there: the restore is not proven"
                )
        done.append(f.name)


def _finisher(report: ArchiveReport, name: str) -> Callable[[int], None] | None:
    """What closes a read fd and says whether the store delivered the whole file (a
    bucket's read can break off: the stream then looks cut, and is not the object's)."""
    store = report.store
    if store is None:
        return None

    def finish(fd: int) -> None:
        try:
            store.finish_read(name, fd)
        except OSError as err:
            raise ColdError(f"{shown(name)} could not be read whole: {err.strerror}") from None

    return finish


def _archived(plan: RestorePlan, report: ArchiveReport) -> list[ArchivedFile]:
    """What the check said of each file the plan receives.  A planned file the check did not
    chain is a planner fault: dropping it would receive a route with a hole in it (87c362c
    found one), so it stops the restore before anything is received."""
    steps = {f.name: f for f in report.chained}  # a renamed dataset: one target
    missing = [name for name in plan.files if name not in steps]
    if missing:
        raise ColdError(
            f"internal error: the restore of {plan.dataset} plans {shown(missing[0])}, which "
            "the check did not find intact; nothing was received"
        )
    return [steps[name] for name in plan.files]


def restored_at(plan: RestorePlan, report: ArchiveReport) -> str:
    """The dataset that holds the restored snapshot: the target, or below it when the plan
    begins with a `-R` package of a dataset above the one restored."""
    archived = _archived(plan, report)
    top = archived[0].top if archived else plan.dataset
    return plan.target + plan.dataset[len(top) :]


def receive_file(
    path: str,
    target: str,
    done: list[str] | None = None,
    progress: ProgressHook | None = None,
    expect: FileStamp | None = None,
) -> None:
    """Feed one file to `zfs receive` through the relay: validated again as it is read, each
    byte passed on only once verified, and the receive killed on the first bad record, so
    that nothing damaged is ever applied even if the file changed since it was checked."""
    _receive_fd(_open(path, expect), shown(os.path.basename(path)), target, done, progress)


def _receive_fd(
    fd: int,
    name: str,
    target: str,
    done: list[str] | None = None,
    progress: ProgressHook | None = None,
    finish: Callable[[int], None] | None = None,
) -> None:
    """receive_file() of a file open on fd (closed here), named name in messages; finish()
    raises when the store could not deliver the whole file."""
    try:
        with ops.receiving(target) as pipe:
            # the bar's total is the plan's stream bytes, compressed files or not
            report = verify_stream(fd, relay_to=pipe, progress=progress, stream_progress=True)
            if finish is not None:
                closing, fd = fd, -1
                finish(closing)  # closes it; raised inside: the receive is aborted
            if _receive_stopped(report):
                # the receive stopped reading (it refused the stream): leaving the block
                # normally waits for it, and its own error (ZfsError) is the reason
                stopped = report.problems[0].message
            elif not report.readable:
                what = report.problems[0].message if report.problems else "unreadable"
                raise ColdError(f"{name}: {what}; its receive was aborted{_so_far(done)}")
            elif not report.valid or report.relayed != report.size:
                first = report.problems[0] if report.problems else None
                where = f" at byte {first.offset}: {first.message}" if first else ""
                raise UnrestorableError(
                    f"{name} changed since it was checked{where}; its receive was aborted "
                    f"before the damaged record{_so_far(done)}"
                )
        if _receive_stopped(report):  # and yet it exited 0: no restore either
            raise ColdError(f"{name}: {stopped}; its receive stopped early{_so_far(done)}")
    finally:
        if fd >= 0:
            os.close(fd)


def _receive_stopped(report: StreamReport) -> bool:
    """The relay found the pipe closed: `zfs receive` quit reading (adversarial-4 L4: its
    own error, not "Broken pipe", says why)."""
    broken = os.strerror(errno.EPIPE)
    return any(p.code == "relay" and broken in p.message for p in report.problems)


def _open(path: str, expect: FileStamp | None) -> int:
    """The archive file, safely (never a symlink, a FIFO, or another file than was checked)."""
    try:
        return entries.open_regular(path, expect)
    except OSError as err:
        raise ColdError(f"cannot open {shown(os.path.basename(path))}: {err.strerror}") from None


def _open_in(report: ArchiveReport, name: str, expect: FileStamp | None) -> int:
    """A file of the report, opened by its store (the same safe open, for a local place)."""
    if report.store is None:
        return _open(report.path(name), expect)
    try:
        return report.store.open_read(name, expect)
    except OSError as err:
        raise ColdError(f"cannot open {shown(name)}: {err.strerror}") from None


def _so_far(done: list[str] | None) -> str:
    return f" (received and proven before it: {', '.join(map(shown, done))})" if done else ""


def script(plan: RestorePlan, report: ArchiveReport) -> str:
    """The same receives as a plain sh script, for a machine without zverify.  A compressed
    file is tested whole by its own tool first (so that damage at its end is found before
    receive could commit what came out), then decompressed into receive."""
    if report.store is not None and not report.store.uses_local_files:
        raise ColdError(
            "--script writes `zfs receive < FILE` lines: an archive in a bucket has no files "
            "(restore it with zverify, or copy the objects to a directory first)"
        )
    lines = ["#!/bin/sh", "# written by zverify cold restore: receive in this order", "set -e"]
    packed = {f.name: f.compression for f in report.files}
    if any(packed.get(name) for name in plan.files):
        lines += _RECEIVE_PIPED
    where = landing(plan.target, _archived(plan, report))
    for name in plan.files:
        path = shlex.quote(os.path.abspath(report.path(name)))
        target = shlex.quote(where[name])
        tool = compressed.TOOLS.get(packed.get(name) or "")
        if tool is None:
            lines.append(f"zfs receive -u {target} < {path}")
        else:  # an absolute path never starts with '-': no option is read from it
            lines += [f"{tool} -t -q {path}", f"receive_piped {target} {tool} -dc {path}"]
    return "\n".join(lines) + "\n"


# Not every sh has `set -o pipefail` (dash has not): the decompressor's status is passed out
# of the pipeline on fd 3, so that its failure fails the script as receive's does.
_RECEIVE_PIPED = [
    "# receive_piped TARGET COMMAND...: COMMAND's output into `zfs receive -u TARGET`; the",
    "# script fails when either fails",
    "receive_piped() {",
    "    target=$1",
    "    shift",
    '    status=$( { { "$@"; echo $? >&3; } | zfs receive -u "$target" >&2; } 3>&1 ) || return 1',
    '    [ "$status" = 0 ] || { echo "$1 failed (exit $status)" >&2; return 1; }',
    "}",
]
