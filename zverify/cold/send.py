"""send_to_archive(): one `zfs send` into an archive file, proven before it is kept.

The caller holds the archive's writers' lock (zverify.cold.store.lock).  The stream is written to
NAME.partial (created exclusively, never through a symlink: two senders never share a file;
flock()ed for as long as it is written, so that `cold check` sees a send in progress and
`cold clean` never removes it) by the C scanner's relay as it validates the bytes (each written
once verified); only when `zfs send` and the writes succeeded, the stream is valid, its GUIDs
are the ones planned and the file holds every byte scanned, the file is fsynced, closed and
renamed into place (never over anything) and its directory fsynced.  Then, when asked, a
manifest NAME.manifest of the snapshot sent (zverify.cold.contents: what it held, file by
file, for `cold drill` long after the source is gone), a sidecar NAME.json (for people and
naming the manifest; the stream never needs it), its parity when asked (zverify.cold.protect: made
from the proven file only) and a bookmark of the sent snapshot, which keeps the
base of the next incremental alive at no space cost (or, with hold, a user hold on the
snapshot itself, moved forward from the previous base).

Any failure before the rename (zfs, a full filesystem, an I/O error of a write, fsync or
close) removes the .partial this run made and raises ColdError naming the file and the error:
nothing half-written ever looks like a stream.  A run killed outright leaves its .partial,
which no command counts as a stream and `cold clean` removes.  A failure after the rename
(the directory's fsync, the sidecar, the bookmark) says that the stream was archived and
what is missing.
"""

import contextlib
import errno
import json
import os
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, BinaryIO

from zverify.cold import contents, entries, names, protect, sidecar
from zverify.cold.entries import FileStamp
from zverify.cold.plan import SendPlan
from zverify.cold.proof import ledger
from zverify.cold.proof.check import stream_digest
from zverify.cold.proof.ledger import LedgerRecord
from zverify.cold.store import Store, StoreWriter, Unsynced, lock, refuse_existing
from zverify.errors import ColdError, ZfsError, ZverifyError
from zverify.sendstream import compressed
from zverify.sendstream.report import StreamReport
from zverify.sendstream.validate import verify_stream
from zverify.zfs import inventory, ops

BOOKMARK_PREFIX = "zverify-"
HOLD_TAG = "zverify-cold"  # `zfs holds` shows it on the snapshot kept for the next incremental
FLAGS = {"raw": "-w", "compressed": "-c", "large_block": "-L", "embed": "-e"}


@dataclass(frozen=True)
class SentFile:
    name: str
    bytes: int
    sha256: str | None  # of the file as stored; None in a bucket (its sidecar has XXH3-128)
    keeper: str  # what keeps the base of the next incremental: a bookmark or a held snapshot
    compression: str | None = None  # --compress: bytes is then the stream's size
    file_bytes: int | None = None  # with compression: the file's
    proof: LedgerRecord | None = None  # the proof the send made of it, for the ledger
    manifest: dict[str, object] | None = None  # the sidecar's entry of its manifest


def send_to_archive(
    dataset: str,
    store: Store,
    plan: SendPlan,
    flags: list[str],
    progress: Callable[[int], None] | None = None,
    hold: bool = False,
    parity_percent: int = 0,
    compress: tuple[str, int | None] | None = None,
    recorder: contents.Recorder | None = None,
) -> SentFile:
    """compress: (zstd, gzip or xz, level or None): the verified bytes are compressed into
    the file, NAME gets the compression's suffix, and the written file is proven by reading
    it back through decompression.  recorder: writes the manifest of the snapshot sent."""
    intermediate = plan.intermediate and plan.base is not None
    name = names.file_name(dataset, plan.to.name, plan.base_name, intermediate)
    name += compressed.SUFFIXES[compress[0]] if compress else ""
    if compress is not None and not store.uses_local_files:
        raise ColdError("--compress into a bucket is not supported yet: send it uncompressed")
    if parity_percent and not store.uses_local_files:
        raise ColdError("parity in a bucket is not supported (par2 reads local files)")
    if store.uses_local_files:  # a bucket's writer refuses an existing key itself
        refuse_existing(store.local_path(name))
    args = send_args(dataset, plan, flags)
    # the store writes NAME.partial and renames it; the proofs are made here, before that
    w = _writer(store, name)
    partial = w.partial
    try:
        try:
            report = _send_and_validate(args, w.fd, partial, progress, compress)
        except ColdError:
            w.sync()  # the store's own failure (an upload refused) says more than EPIPE
            raise
        w.sync()  # in a bucket: every part uploaded
        report = _prove(report, plan, w, partial, packed=compress is not None)
        digest = w.stored_sha256()
        w.commit()
        digests = w.sidecar_digests()
    except Unsynced as err:
        sent = f"archived {names.shown(name)} ({report.size:,} bytes, proven)"
        raise ColdError(f"{sent}, but {err}") from None
    except BaseException as err:
        left = w.discard()
        if left and isinstance(err, ZverifyError):
            raise ColdError(f"{err}; {left}") from None
        raise
    sent = f"archived {names.shown(name)} ({report.size:,} bytes, proven)"
    snapshot = f"{dataset}@{plan.to.name}"
    manifest, unrecorded = _write_manifest(store, name, snapshot, plan.to.guid, recorder)
    extra: dict[str, object] = {**digests, **({contents.KEY: manifest} if manifest else {})}
    missing = _write_sidecar(store, name, dataset, plan, args.argv(), report, digest, extra)
    missing = "; ".join(m for m in (unrecorded, missing) if m) or None
    if parity_percent and store.uses_local_files:
        unprotected = _write_parity(store.directory_of(name), name, parity_percent)
        missing = "; ".join(m for m in (missing, unprotected) if m) or None
    try:
        keeper = _hold(dataset, plan) if hold else _bookmark(dataset, plan.to.name)
    except ZverifyError as err:
        what = "holding" if hold else "bookmarking"
        raise ColdError(f"{sent}, but {what} {dataset}@{plan.to.name} failed: {err}") from None
    if missing:
        raise ColdError(f"{sent} and kept by {keeper}, but {missing}")
    proof = _proof(name, dataset, report)
    return SentFile(
        name, report.size, digest, keeper, report.compression, report.file_bytes, proof, manifest
    )


def _write_manifest(
    store: Store, name: str, snapshot: str, guid: int, recorder: contents.Recorder | None
) -> tuple[dict[str, object] | None, str | None]:
    """NAME.manifest of the snapshot sent -> (the sidecar's entry, what went wrong in
    words): like the sidecar, never needed to restore, so its failure keeps the stream."""
    if recorder is None:
        return None, None
    try:
        return contents.record(store, name, snapshot, _same_snapshot(recorder, guid)), None
    except (ZverifyError, OSError) as err:
        why = err.strerror if isinstance(err, OSError) and err.strerror else err
        return None, f"its manifest was not recorded: {why}"


def _same_snapshot(recorder: contents.Recorder, guid: int) -> contents.Recorder:
    """The recorder, then proof that the snapshot it walked by name is still the one sent
    (the same GUID): a snapshot destroyed and made again under its name meanwhile is
    another snapshot, whose manifest would bind other files to the stream."""

    def record(snapshot: str, out: BinaryIO) -> contents.Recorded:
        recorded = recorder(snapshot, out)
        dataset, _, name = snapshot.partition("@")
        now = {s.name: s.guid for s in inventory.snapshots(dataset) if not s.bookmark}
        if now.get(name) != guid:
            raise ColdError(
                f"{snapshot} is not the snapshot sent any more (guid {now.get(name)}, not "
                f"{guid}): its manifest is not kept"
            )
        return recorded

    return record


def _proof(name: str, dataset: str, report: StreamReport) -> LedgerRecord:
    """The send's proof of the file it wrote, as check would record it."""
    first, last = report.substreams[0], report.substreams[-1]
    size = report.file_bytes if report.file_bytes is not None else report.size
    guids = str(first.fromguid), str(last.toguid)
    digest = stream_digest(report)
    return LedgerRecord(name, size, dataset, *guids, digest, "send", "proven", ledger.now())


@dataclass(frozen=True)
class PlannedFile:
    """What `cold send --dry-run` would archive: nothing is sent or written."""

    name: str
    command: list[str]  # the `zfs send` command line
    estimated_bytes: int  # what `zfs send -nvP` estimates


def planned(
    dataset: str,
    plan: SendPlan,
    flags: list[str],
    compress: tuple[str, int | None] | None = None,
) -> PlannedFile:
    intermediate = plan.intermediate and plan.base is not None
    name = names.file_name(dataset, plan.to.name, plan.base_name, intermediate)
    name += compressed.SUFFIXES[compress[0]] if compress else ""
    args = send_args(dataset, plan, flags)
    return PlannedFile(name, ["zfs", *args.argv()], ops.send_size(args))


def _io(doing: str, path: str, call: Callable[..., Any], *args: Any) -> Any:
    """call(*args); an OSError becomes one line naming what was done to which file."""
    try:
        return call(*args)
    except OSError as err:
        raise ColdError(f"{doing} {names.shown(path)} failed: {err.strerror or err}") from None


def send_args(dataset: str, plan: SendPlan, flags: list[str]) -> ops.SendArgs:
    """The `zfs send` of the plan."""
    base = plan.base.full_name(dataset) if plan.base is not None else None
    return ops.SendArgs(f"{dataset}@{plan.to.name}", base, plan.intermediate, tuple(flags))


def _writer(store: Store, key: str) -> StoreWriter:
    """NAME.partial, new; one that exists is a running send's or a leftover: said which."""
    try:
        return store.writer(key)
    except FileExistsError:
        path = store.local_path(key) + names.PARTIAL
        raise ColdError(_existing_partial(store.directory_of(key), path)) from None


def _existing_partial(directory: str, path: str) -> str:
    shown = names.shown(path)
    try:
        fd = entries.open_regular(path)
    except (OSError, entries.Changed):
        return f"{shown} exists and is not a file this send can use: remove it"
    try:
        if lock.partial_in_progress(fd):
            who = lock.holders(fd)
            return f"{shown} is being written by another send{f' ({who})' if who else ''}"
    finally:
        os.close(fd)
    return (
        f"{shown} was left by an interrupted send: `zverify cold clean --yes "
        f"{shlex.quote(directory)}` removes it"
    )


def _send_and_validate(
    args: ops.SendArgs,
    out: int,
    partial: str,
    progress: Callable[[int], None] | None,
    compress: tuple[str, int | None] | None = None,
) -> StreamReport:
    """The scanner reads `zfs send` and relays what it verified into the partial file (with
    compress, through a compressing thread): one pass, no second copy; a stream that goes
    bad stops being written at its bad record."""
    zfs = ops.send(args)
    sent: ZfsError | None = None
    packed: compressed.Packed | None = None
    try:
        with contextlib.ExitStack() as stack:
            if compress is not None:
                out, packed = stack.enter_context(compressed.compressing(out, *compress))
            report = verify_stream(
                zfs.stdout.fileno(), progress=progress, relay_to=out, decompress=False
            )
    finally:
        try:
            zfs.finish()  # zfs gets SIGPIPE if the scan stopped early
        except ZfsError as err:
            sent = err
    if packed is not None and packed.error is not None:
        raise ColdError(f"writing {names.shown(partial)} failed: {packed.error}")
    written = next((p for p in report.problems if p.code == "relay"), None)
    if written is not None:
        raise ColdError(f"writing {names.shown(partial)} failed: {written.message}")
    if sent is not None:
        raise ColdError(str(sent))
    if report.valid and report.relayed != report.size:
        raise ColdError(f"{names.shown(partial)}: {report.relayed} of {report.size} bytes written")
    return report


def _prove(
    report: StreamReport, plan: SendPlan, w: StoreWriter, partial: str, packed: bool = False
) -> StreamReport:
    """The stream is the one planned and the file holds it: its size, or for a compressed
    file what reading it back through decompression finds (that report is returned)."""
    if not report.valid:
        what = report.problems[0].message if report.problems else "invalid"
        raise ColdError(f"the stream `zfs send` produced is not valid: {what}")
    first, last = report.substreams[0], report.substreams[-1]
    want_from = plan.base.guid if plan.base else 0
    if (first.fromguid, last.toguid) != (want_from, plan.to.guid):
        raise ColdError(
            f"the stream goes from guid {first.fromguid} to {last.toguid}, "
            f"not {want_from} to {plan.to.guid} as planned"
        )
    on_disk = w.stored_size()
    if packed:
        return _read_back(report, w.fd, partial, on_disk)
    if on_disk != report.size:
        raise ColdError(f"{names.shown(partial)} holds {on_disk} bytes, the stream {report.size}")
    return report


def _read_back(sent: StreamReport, fd: int, partial: str, on_disk: int) -> StreamReport:
    """The compressed file decompressed and validated again, from the disk: the same stream
    (size and snapshots) in a compressed layer that is intact end to end."""
    _io("seeking in", partial, os.lseek, fd, 0, os.SEEK_SET)
    back = verify_stream(fd)
    if not back.valid:
        what = back.problems[0].message if back.problems else "not valid"
        raise ColdError(f"{names.shown(partial)} read back: {what}")
    same = [(s.toname, s.toguid) for s in back.substreams] == [
        (s.toname, s.toguid) for s in sent.substreams
    ]
    if not same or back.size != sent.size or back.file_bytes != on_disk:
        raise ColdError(
            f"{names.shown(partial)} read back holds {back.size} stream bytes in "
            f"{back.file_bytes} of its {on_disk}, not the {sent.size} sent"
        )
    return back


def _write_sidecar(
    store: Store,
    name: str,
    dataset: str,
    plan: SendPlan,
    argv: list[str],
    report: StreamReport,
    digest: str | None,
    digests: dict[str, object] | None = None,
) -> str | None:
    """NAME.json (zverify.cold.sidecar), by the same exclusive .partial and rename as the
    stream (never over an existing entry).  Returns what went wrong, in words, or None: a
    sidecar is never needed to restore, so its failure does not undo the archived stream."""
    doc = sidecar.document(dataset, plan, argv, report, digest, ops.version())
    doc |= digests or {}  # a bucket's checksum and XXH3-128, and the manifest's entry
    data = (json.dumps(doc, indent=2) + "\n").encode()
    w: StoreWriter | None = None
    try:
        w = _writer(store, name + names.SIDECAR)
        view = memoryview(data)
        while view:
            view = view[_io("writing", w.partial, os.write, w.fd, view) :]
        w.commit()
    except ColdError as err:
        left = w.discard() if w is not None else None
        return f"its sidecar was not written: {err}{f'; {left}' if left else ''}"
    return None


def _write_parity(directory: str, name: str, percent: int) -> str | None:
    """Parity of the stream just proven (zverify.cold.protect); what went wrong, or None."""
    try:
        proven = FileStamp.of(os.lstat(os.path.join(directory, name)))
        protect.add(directory, name, proven, percent)
    except (OSError, ColdError) as err:
        why = err.strerror if isinstance(err, OSError) else str(err)
        return f"its parity was not made ({why}): `zverify cold parity` adds it"
    return None


def _bookmark(dataset: str, snapshot: str) -> str:
    """dataset#zverify-SNAP of snapshot; one already there (a link and a new full of the same
    snapshot make it twice) is kept only when it is of that very snapshot (same GUID)."""
    bookmark = f"{dataset}#{BOOKMARK_PREFIX}{snapshot}"
    try:
        ops.bookmark(bookmark, f"{dataset}@{snapshot}")
    except ZfsError as err:
        if err.errno != errno.EEXIST:
            raise
        present = {(s.name, s.bookmark): s.guid for s in inventory.snapshots(dataset)}
        mine = present.get((BOOKMARK_PREFIX + snapshot, True))
        if mine is None or mine != present.get((snapshot, False)):
            raise ColdError(f"{bookmark} exists and is not of {dataset}@{snapshot}") from None
    return bookmark


def _hold(dataset: str, plan: SendPlan) -> str:
    """Hold the sent snapshot with HOLD_TAG, then release the tag from the base it moves on
    from (the hold moves forward; `cold prune` releases the ones of removed chains)."""
    snapshot = f"{dataset}@{plan.to.name}"
    ops.hold(snapshot, HOLD_TAG)
    if plan.base is not None and not plan.base.bookmark:
        base = plan.base.full_name(dataset)
        if HOLD_TAG in ops.holds(base):
            ops.release([base], HOLD_TAG)
    return snapshot
