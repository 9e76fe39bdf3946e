"""`cold repair`: rebuild a damaged stream from its parity, prove it, and only then replace it.

par2 rebuilds the stream into NAME.repair.partial/ (a new directory in the archive, flock()ed
for the run): the damaged file is hard-linked in beside it (copied where links are not
supported), as par2 reads only files under its base directory, and par2 never writes to it.
The rebuilt file is then proven as a stream of its own, completely:

* the stream scanner reads every record (checksums, structure) and it is valid;
* its GUIDs, snapshots and size are those of its sidecar, and its SHA-256 the sidecar's (the
  digest `cold send` read back from what it stored), when there is a sidecar;
* its MD5 and size are the ones the parity recorded when it was made.

Only then is it renamed over NAME (atomic: NAME is always a whole file), after the damaged
original was linked to NAME.damaged, which stays until `cold repair --yes` removes it.  A
repair that is not possible, fails or is not proven replaces nothing.  The caller holds the
archive exclusively (zverify.cold.lock).
"""

import errno
import hashlib
import json
import os
import shutil
import stat
from dataclasses import dataclass

from zverify.cold import entries, lock, names
from zverify.cold.check import DAMAGED, REPAIR_WORK, SIDECAR, ArchiveReport, FileReport
from zverify.cold.send import fsync_dir
from zverify.errors import ColdError
from zverify.par2 import tool
from zverify.sendstream.validate import verify_stream

_NO_LINKS = (errno.EPERM, errno.EXDEV, errno.EMLINK, errno.ENOTSUP, errno.EOPNOTSUPP)


@dataclass
class Outcome:
    name: str
    status: str  # repaired, intact, unrepairable, no-parity, failed
    message: str
    kept: str | None = None  # NAME.damaged, the original kept


def wanted(report: ArchiveReport, asked: list[str]) -> list[FileReport]:
    """The files to repair: those asked for, else every stream that is not intact and has
    parity.  Raises ColdError for a name that is not a stream of the archive."""
    streams = {f.name: f for f in report.files if f.kind != "partial"}
    if asked:
        unknown = [a for a in asked if os.path.basename(a) not in streams]
        if unknown:
            raise ColdError(f"not a stream of the archive: {', '.join(map(names.shown, unknown))}")
        return [streams[os.path.basename(a)] for a in asked]
    return [f for f in streams.values() if f.archived is None and f.parity is not None]


def repair(directory: str, f: FileReport, sidecar: dict[str, object] | None) -> Outcome:
    """Repair one stream; the outcome says what happened (ColdError only for trouble)."""
    if f.archived is not None:
        return Outcome(f.name, "intact", "intact: nothing to repair")
    if f.parity is None or not f.parity.usable:
        why = "has no parity" if f.parity is None else "its parity protects another file"
        return Outcome(f.name, "no-parity", f"{why}: it cannot be repaired")
    verdict = f.parity.repair
    if verdict is not None and verdict.status == "unrepairable":
        return Outcome(
            f.name, "unrepairable", f"unrepairable: {describe(verdict)}; nothing replaced"
        )
    work = os.path.join(directory, f.name + REPAIR_WORK)
    fd = _make_work(work)
    try:
        rebuilt = _rebuild(directory, work, f)
        if isinstance(rebuilt, Outcome):
            return rebuilt
        _prove(rebuilt, f, sidecar)
        kept = _replace(directory, f, rebuilt)
    finally:
        _remove_work(work, fd)
    return Outcome(f.name, "repaired", "repaired from its parity and proven", kept)


def describe(v: tool.Verdict) -> str:
    """par2's counts in words: '2 of 2000 blocks damaged, 200 recovery blocks'."""
    if v.status == "unknown":
        return f"par2 could not tell ({v.detail})"
    parts = []
    if v.damaged is not None:
        parts.append(f"{v.damaged} of {v.blocks} blocks damaged")
    if v.recovery is not None:
        parts.append(f"{v.recovery} recovery blocks")
    return ", ".join(parts) or v.status


def _make_work(work: str) -> int:
    try:
        os.mkdir(work, 0o700)
    except FileExistsError:
        raise ColdError(
            f"{names.shown(work)} exists (the leftover of an interrupted repair: `zverify cold "
            "clean --yes` removes it)"
        ) from None
    except OSError as err:
        raise ColdError(f"cannot create {names.shown(work)}: {err.strerror}") from None
    fd = os.open(work, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    lock.hold_partial(fd)
    return fd


def _rebuild(directory: str, work: str, f: FileReport) -> str | Outcome:
    """par2's rebuilt copy of f in work, or the Outcome that says why there is none."""
    assert f.parity is not None
    original = os.path.join(directory, f.name)
    damaged = os.path.join(work, "damaged")
    try:
        os.link(original, damaged)
    except OSError as err:
        if err.errno not in _NO_LINKS:
            raise ColdError(f"cannot link {names.shown(f.name)}: {err.strerror}") from None
        _copy(original, damaged)
    if f.identity is not None and not f.identity.unchanged(os.lstat(damaged)):
        raise ColdError(f"{names.shown(f.name)} changed since it was checked: not repaired")
    verdict = tool.repair(work, os.path.join(directory, f.parity.index), damaged)
    if verdict.status == "unrepairable":
        message = f"unrepairable: {describe(verdict)}; nothing replaced"
        return Outcome(f.name, "unrepairable", message)
    if verdict.status != "repaired":
        return Outcome(f.name, "failed", f"par2 did not repair it ({describe(verdict)})")
    return os.path.join(work, f.name)


def _copy(source: str, target: str) -> None:
    try:
        shutil.copyfile(source, target, follow_symlinks=False)
    except OSError as err:
        raise ColdError(f"cannot copy {names.shown(source)} to repair it: {err.strerror}") from None


def _prove(rebuilt: str, f: FileReport, sidecar: dict[str, object] | None) -> None:
    """Raise ColdError unless the rebuilt file is the stream that was archived."""
    assert f.parity is not None
    fd = entries.open_regular(rebuilt)
    try:
        report = verify_stream(fd)
        sha256, md5 = _digests(fd)
        os.fsync(fd)
    finally:
        os.close(fd)
    shown = names.shown(f.name)
    if not report.valid:
        first = report.problems[0] if report.problems else None
        what = f" at byte {first.offset}: {first.message}" if first else ""
        raise ColdError(f"par2 rebuilt {shown}, but it is not a valid stream{what}: not replaced")
    if md5 != f.parity.md5:
        raise ColdError(f"par2 rebuilt {shown}, but not the file its parity was made from")
    first_step, last_step = report.substreams[0], report.substreams[-1]
    actual: dict[str, object] = {
        "from_guid": str(first_step.fromguid),
        "to_guid": str(last_step.toguid),
        "snapshots": [s.toname.partition("@")[2] for s in report.substreams],
        "bytes": report.size,
        "sha256": sha256,
    }
    wrong = [
        k for k, v in actual.items() if sidecar is not None and k in sidecar and sidecar[k] != v
    ]
    if wrong:
        raise ColdError(
            f"par2 rebuilt {shown}, but its {', '.join(wrong)} are not the sidecar's: not replaced"
        )


def _digests(fd: int) -> tuple[str, bytes]:
    sha, md5 = hashlib.sha256(), hashlib.md5(usedforsecurity=False)
    at = 0
    while chunk := os.pread(fd, 1 << 20, at):
        sha.update(chunk)
        md5.update(chunk)
        at += len(chunk)
    return sha.hexdigest(), md5.digest()


def _replace(directory: str, f: FileReport, rebuilt: str) -> str:
    """NAME.damaged made a link of the damaged original, then the proven file renamed over
    NAME (where links are not supported: the original renamed away first)."""
    original = os.path.join(directory, f.name)
    kept = f.name + DAMAGED
    keep = os.path.join(directory, kept)
    if os.path.lexists(keep):
        raise ColdError(
            f"{names.shown(kept)} exists: remove it first (`zverify cold repair --yes` removes "
            "the damaged originals of proven streams)"
        )
    st = os.lstat(original)
    if f.identity is not None and not f.identity.unchanged(st):
        raise ColdError(f"{names.shown(f.name)} changed since it was checked: not replaced")
    try:
        os.chmod(rebuilt, stat.S_IMODE(st.st_mode))  # par2 made it with the umask's mode
        try:
            os.link(original, keep)
        except OSError as err:
            if err.errno not in _NO_LINKS:
                raise
            os.rename(original, keep)
        os.rename(rebuilt, original)
        fsync_dir(directory)
    except OSError as err:
        raise ColdError(
            f"replacing {names.shown(f.name)} failed: {err.strerror} (the damaged original is "
            f"{names.shown(kept)} if it exists)"
        ) from None
    return kept


def _remove_work(work: str, fd: int) -> None:
    """The work directory and what is left in it: unlinked, never written to or followed."""
    try:
        for name in os.listdir(fd):
            os.unlink(name, dir_fd=fd)
        os.rmdir(work)
    except OSError as err:
        if err.errno != errno.ENOENT:
            raise ColdError(f"{names.shown(work)} could not be removed: {err.strerror}") from None
    finally:
        os.close(fd)


def read_sidecar(directory: str, f: FileReport) -> dict[str, object] | None:
    """The stream's sidecar, when there is one that reads as a JSON object."""
    try:
        fd = entries.open_regular(os.path.join(directory, f.name + SIDECAR))
        try:
            doc = json.loads(os.read(fd, 1 << 20))
        finally:
            os.close(fd)
    except (OSError, ValueError, entries.Changed):
        return None
    return doc if isinstance(doc, dict) else None


def drop_damaged(directory: str, report: ArchiveReport, proven: set[str]) -> list[str]:
    """Remove NAME.damaged where NAME is an intact stream proven in this run (read completely
    by the check, or repaired).  Returns what was removed."""
    intact = {f.name for f in report.files if f.archived is not None} | proven
    removed = []
    for kept in report.kept:
        if kept[: -len(DAMAGED)] not in intact:
            continue
        path = os.path.join(directory, kept)
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode):
            continue
        os.unlink(path)
        removed.append(kept)
    if removed:
        fsync_dir(directory)
    return removed
