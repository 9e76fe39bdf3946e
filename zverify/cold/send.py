"""send_to_archive(): one `zfs send` into an archive file, proven before it is kept.

The stream is written to NAME.partial (created exclusively: two senders never share a file)
by the C scanner's relay as it validates the bytes (each written once verified); only when
`zfs send` and the writes succeeded, the stream is valid, its GUIDs are the ones planned and
the file holds every byte scanned, the file is fsynced, renamed into place and its directory
fsynced.  Then a sidecar NAME.json (for people; the stream never needs it) and a bookmark of
the sent snapshot, which keeps the base of the next incremental alive at no space cost (or,
with hold, a user hold on the snapshot itself, moved forward from the previous base).  Any
failure removes the .partial this run made and raises ColdError: nothing half-written ever
looks like a stream.
"""

import contextlib
import hashlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass

from zverify import __version__
from zverify.cold import names
from zverify.cold.plan import SendPlan
from zverify.errors import ColdError
from zverify.sendstream.validate import StreamReport, verify_stream
from zverify.zfs import command, lzc

BOOKMARK_PREFIX = "zverify-"
HOLD_TAG = "zverify-cold"  # `zfs holds` shows it on the snapshot kept for the next incremental
FLAGS = {"raw": "-w", "compressed": "-c", "large_block": "-L", "embed": "-e"}


@dataclass(frozen=True)
class SentFile:
    name: str
    bytes: int
    sha256: str
    keeper: str  # what keeps the base of the next incremental: a bookmark or a held snapshot


def send_to_archive(
    dataset: str,
    directory: str,
    plan: SendPlan,
    flags: list[str],
    progress: Callable[[int], None] | None = None,
    hold: bool = False,
) -> SentFile:
    intermediate = plan.intermediate and plan.base is not None
    name = names.file_name(dataset, plan.to.name, plan.base_name, intermediate)
    final = os.path.join(directory, name)
    if os.path.lexists(final):
        raise ColdError(f"{name} already exists in {directory}: refusing to overwrite it")
    argv = _send_argv(dataset, plan, flags)
    partial = final + names.PARTIAL
    _create_exclusive(partial)
    try:
        report = _send_and_validate(argv, partial, progress)
        _prove(report, plan, partial)
        _fsync(partial)
        digest = _sha256(partial)
        os.rename(partial, final)
    except BaseException:
        _remove(partial)
        raise
    fsync_dir(directory)
    _write_sidecar(final, dataset, plan, argv, report, digest)
    keeper = _hold(dataset, plan) if hold else _bookmark(dataset, plan.to.name)
    return SentFile(name, report.size, digest, keeper)


def _send_argv(dataset: str, plan: SendPlan, flags: list[str]) -> list[str]:
    argv = ["send", *flags]
    if plan.base is not None:
        argv += ["-I" if plan.intermediate else "-i", plan.base.full_name(dataset)]
    return [*argv, f"{dataset}@{plan.to.name}"]


def _create_exclusive(path: str) -> None:
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))
    except FileExistsError:
        raise ColdError(
            f"{path} exists: another send is running, or one was interrupted "
            "(`zverify cold check` lists it; remove it once no send runs)"
        ) from None
    except OSError as err:
        raise ColdError(f"cannot create {path}: {err.strerror}") from None


def _send_and_validate(
    argv: list[str], partial: str, progress: Callable[[int], None] | None
) -> StreamReport:
    """The scanner reads `zfs send` and relays what it verified into the partial file: one
    pass, no second copy; a stream that goes bad stops being written at its bad record."""
    zfs = command.popen(argv)
    assert zfs.stdout is not None
    try:
        out = os.open(partial, os.O_WRONLY | os.O_TRUNC | os.O_CLOEXEC)
        try:
            report = verify_stream(zfs.stdout.fileno(), progress=progress, relay_to=out)
        finally:
            os.close(out)
    finally:
        zfs.stdout.close()  # zfs gets SIGPIPE if the scan stopped early
        zfs_err = zfs.communicate()[1].decode(errors="replace")
    written = next((p for p in report.problems if p.code == "relay"), None)
    if written is not None:
        raise ColdError(f"writing {partial} failed: {written.message}")
    if zfs.returncode != 0:
        raise ColdError(f"`zfs {' '.join(argv)}` failed (exit {zfs.returncode}): {zfs_err}")
    if report.valid and report.relayed != report.size:
        raise ColdError(f"{partial}: {report.relayed} of {report.size} bytes written")
    return report


def _prove(report: StreamReport, plan: SendPlan, partial: str) -> None:
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
    on_disk = os.stat(partial).st_size
    if on_disk != report.size:
        raise ColdError(f"{partial} holds {on_disk} bytes, the stream {report.size}")


def _sha256(path: str) -> str:
    """Read back from the file itself: the digest is of what was stored, not what was sent."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def _write_sidecar(
    final: str, dataset: str, plan: SendPlan, argv: list[str], report: StreamReport, digest: str
) -> None:
    first, last = report.substreams[0], report.substreams[-1]
    doc = {
        "dataset": dataset,
        "from_snapshot": plan.base_name,
        "from_guid": str(first.fromguid),
        "to_snapshot": plan.to.name,
        "to_guid": str(last.toguid),
        "snapshots": [s.toname.partition("@")[2] for s in report.substreams],
        "kind": "full" if plan.base is None else "intermediate" if plan.intermediate else
        "incremental",
        "bytes": report.size,
        "sha256": digest,
        "command": ["zfs", *argv],
        "created": int(time.time()),
        "zfs_version": (command.optional("version") or "").strip().splitlines(),
        "zverify_version": __version__,
    }  # fmt: skip
    tmp = final + ".json" + names.PARTIAL
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.rename(tmp, final + ".json")
    fsync_dir(os.path.dirname(final) or ".")


def _bookmark(dataset: str, snapshot: str) -> str:
    bookmark = f"{dataset}#{BOOKMARK_PREFIX}{snapshot}"
    if not lzc.call("lzc_exists", bookmark.encode()):
        lzc.call("lzc_bookmark", {bookmark.encode(): f"{dataset}@{snapshot}".encode()})
    return bookmark


def _hold(dataset: str, plan: SendPlan) -> str:
    """Hold the sent snapshot with HOLD_TAG, then release the tag from the base it moves on
    from (the hold moves forward; `cold prune` releases the ones of removed chains)."""
    snapshot = f"{dataset}@{plan.to.name}"
    if HOLD_TAG.encode() not in lzc.call("lzc_get_holds", snapshot.encode()):
        lzc.call("lzc_hold", {snapshot.encode(): HOLD_TAG.encode()})
    if plan.base is not None and not plan.base.bookmark:
        base = plan.base.full_name(dataset).encode()
        if HOLD_TAG.encode() in lzc.call("lzc_get_holds", base):
            lzc.call("lzc_release", {base: [HOLD_TAG.encode()]})
    return snapshot


def _fsync(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _remove(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)
