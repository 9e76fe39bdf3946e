"""send_to_archive(): one `zfs send` into an archive file, proven before it is kept.

The stream is written to NAME.partial (created exclusively: two senders never share a file)
by `tee` while the C scanner validates the same bytes; only when `zfs send` and `tee`
succeeded, the stream is valid, its GUIDs are the ones planned and the file holds every byte
scanned, the file is fsynced, renamed into place and its directory fsynced.  Then a sidecar
NAME.json (for people; the stream never needs it) and a bookmark of the sent snapshot, which
keeps the base of the next incremental alive at no space cost.  Any failure removes the
.partial this run made and raises ColdError: nothing half-written ever looks like a stream.
"""

import contextlib
import hashlib
import json
import os
import subprocess
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
FLAGS = {"raw": "-w", "compressed": "-c", "large_block": "-L", "embed": "-e"}


@dataclass(frozen=True)
class SentFile:
    name: str
    bytes: int
    sha256: str
    bookmark: str


def send_to_archive(
    dataset: str,
    directory: str,
    plan: SendPlan,
    flags: list[str],
    progress: Callable[[int], None] | None = None,
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
    bookmark = _bookmark(dataset, plan.to.name)
    return SentFile(name, report.size, digest, bookmark)


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
    zfs = command.popen(argv)
    assert zfs.stdout is not None
    tee = subprocess.Popen(
        ["tee", "--", partial], stdin=zfs.stdout, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    zfs.stdout.close()  # tee owns it now: zfs gets SIGPIPE if tee dies
    assert tee.stdout is not None
    try:
        report = verify_stream(tee.stdout.fileno(), progress=progress)
    finally:
        tee.stdout.close()
        tee_err = tee.communicate()[1].decode(errors="replace")
        zfs_err = zfs.communicate()[1].decode(errors="replace")
    if zfs.returncode != 0:
        raise ColdError(f"`zfs {' '.join(argv)}` failed (exit {zfs.returncode}): {zfs_err}")
    if tee.returncode != 0:
        raise ColdError(f"writing {partial} failed: {tee_err.strip() or 'tee failed'}")
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
