"""`cold repair`: rebuild a damaged stream from its parity, prove it, and only then replace it.

par2 rebuilds the stream into NAME.repair.partial/ (zverify.cold.store.workdir): the damaged file is
hard-linked in beside it (copied where links are not supported), as par2 reads only files
under its base directory, and par2 never writes to it.  A stream with bytes that cannot be
read (bad sectors: par2 would stop at the first) is copied instead, each unreadable sector
as zeros: a damaged block like any other for par2.
The rebuilt file is then proven as a stream of its own, completely:

* the stream scanner reads every record (checksums, structure) and it is valid;
* its GUIDs, snapshots and size are those of its sidecar, and its SHA-256 the sidecar's (the
  digest `cold send` read back from what it stored), when there is a sidecar;
* its MD5 and size are the ones the parity recorded when it was made.

Only then is it renamed over NAME (atomic: NAME is always a whole file), after the damaged
original was linked to NAME.damaged, which stays until `cold repair --remove-damaged` removes it.  A
repair that is not possible, fails or is not proven replaces nothing.  The caller holds the
archive exclusively (zverify.cold.store.lock).

Long because: rebuilding, proving and replacing are one transaction whose steps hand each
other what they learned (the rescued sectors, the first intact record, the digests the
proof compares); apart, the rule "nothing is replaced before it is proven" would span files.
"""

import errno
import hashlib
import os
import shutil
import stat
from dataclasses import dataclass

from zverify.cold import entries, names
from zverify.cold.entries import FileStamp
from zverify.cold.names import DAMAGED, REPAIR_WORK, SIDECAR
from zverify.cold.proof.check import ArchiveReport, FileReport
from zverify.cold.store import Store, workdir
from zverify.cold.store.workdir import fsync_dir
from zverify.errors import ColdError
from zverify.par2 import tool
from zverify.sendstream import compressed
from zverify.sendstream.format import MAGIC, RECORD_SIZE, BeginHeader, parse_begin
from zverify.sendstream.report import StreamReport
from zverify.sendstream.validate import verify_stream

_NO_LINKS = (errno.EPERM, errno.EXDEV, errno.EMLINK, errno.ENOTSUP, errno.EOPNOTSUPP)
DAMAGED_COPY = "damaged"  # in the work directory: the damaged file as par2 reads it
RESCUE_PIECE = 1 << 20  # read at once when a stream has unreadable bytes ...
SECTOR = 4096  # ... and in these, around a piece that fails


@dataclass
class Outcome:
    name: str
    status: str  # repaired, intact, unrepairable, no-parity, failed
    message: str
    kept: str | None = None  # NAME.damaged, the original kept


def wanted(report: ArchiveReport, asked: list[str]) -> list[FileReport]:
    """The files to repair: those asked for, else every stream that is not intact (with
    parity or not: one without is an outcome too, never passed over as if it were well).
    Raises ColdError for a name that is not a stream of the archive."""
    streams = {f.name: f for f in report.files if f.kind != "partial"}
    if asked:
        found = {a: _stream_named(report, streams, a) for a in asked}
        unknown = [a for a, f in found.items() if f is None]
        if unknown:
            raise ColdError(f"not a stream of the archive: {', '.join(map(names.shown, unknown))}")
        return [f for f in found.values() if f is not None]
    return [f for f in streams.values() if f.archived is None and _a_stream(f)]


def _a_stream(f: FileReport) -> bool:
    """A file meant as a stream: one that was opened and read, or has parity, or is named as
    one.  Symlinks, devices and directories that cannot be listed are check's to report."""
    named = names.parse(os.path.basename(f.name)) is not None
    return f.identity is not None or f.parity is not None or named


def planned(report: ArchiveReport, asked: list[str]) -> list[Outcome]:
    """What repair() would do to each stream wanted(), from the check's reading and par2's
    verdict, repairing nothing: status intact, no-parity, unrepairable or repairable."""
    found = []
    for f in wanted(report, asked):
        verdict = f.parity.repair if f.parity is not None else None
        if f.archived is not None:
            found.append(Outcome(f.name, "intact", "intact: nothing to repair"))
        elif f.parity is None or not f.parity.usable:
            why = "has no parity" if f.parity is None else "its parity protects another file"
            found.append(Outcome(f.name, "no-parity", f"{why}: it cannot be repaired"))
        elif verdict is not None and verdict.status == "unrepairable":
            found.append(Outcome(f.name, "unrepairable", f"unrepairable: {describe(verdict)}"))
        else:
            how = describe(verdict) if verdict is not None else "par2 was not asked"
            found.append(Outcome(f.name, "repairable", f"would be repaired ({how})"))
    return found


def _stream_named(
    report: ArchiveReport, streams: dict[str, FileReport], asked: str
) -> FileReport | None:
    """The stream a name on the command line means: its key (a path with several places),
    a path to it, or (as before there were places) its file name when only one has it."""
    if asked in streams:
        return streams[asked]
    real = os.path.realpath(asked)
    by_path = [f for n, f in streams.items() if os.path.realpath(report.path(n)) == real]
    if by_path:
        return by_path[0]
    by_name = [f for n, f in streams.items() if os.path.basename(n) == os.path.basename(asked)]
    return by_name[0] if len(by_name) == 1 else None


def repair(store: Store, f: FileReport, sidecar: dict[str, object] | None) -> Outcome:
    """Repair one stream; the outcome says what happened, trouble included ("failed")."""
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
    work = store.local_path(f.name) + REPAIR_WORK  # beside the stream: renamed over it
    try:
        fd = workdir.make(work)
    except ColdError as err:
        return Outcome(f.name, "failed", str(err))
    try:
        outcome = _repair_in(store, work, f, sidecar)
    except (ColdError, OSError) as err:
        why = f"{err.strerror}: {err.filename}" if isinstance(err, OSError) else str(err)
        outcome = Outcome(f.name, "failed", why)
    left = workdir.remove(work, fd)
    if left:
        outcome.message += f"; {left}"
    return outcome


def _repair_in(
    store: Store, work: str, f: FileReport, sidecar: dict[str, object] | None
) -> Outcome:
    rebuilt = _rebuild(store, work, f)
    if isinstance(rebuilt, Outcome):
        return rebuilt
    path, note = rebuilt
    first = _first_record(store.local_path(f.name), f)
    _prove(path, f, sidecar, first, os.path.join(work, DAMAGED_COPY))
    kept = _replace(store, f, path)
    return Outcome(f.name, "repaired", f"repaired from its parity and proven{note}", kept)


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


def _rebuild(store: Store, work: str, f: FileReport) -> tuple[str, str] | Outcome:
    """par2's rebuilt copy of f in work (and a note for the outcome), or the Outcome that
    says why there is none."""
    assert f.parity is not None
    original = store.local_path(f.name)
    damaged = os.path.join(work, DAMAGED_COPY)
    note = ""
    if not f.readable:
        # par2 gives up on the first read error: it gets a copy with what could be read
        lost = _rescue(original, damaged, f.identity)
        note = f" ({lost:,} bytes that could not be read were rebuilt)"
    else:
        _link_or_copy(original, damaged)
        if f.identity is not None and not f.identity.unchanged(os.lstat(damaged)):
            raise ColdError(f"{names.shown(f.name)} changed since it was checked: not repaired")
    verdict = tool.repair(work, store.local_path(f.parity.index), damaged)
    if verdict.status == "unrepairable":
        message = f"unrepairable: {describe(verdict)}; nothing replaced"
        return Outcome(f.name, "unrepairable", message)
    if verdict.status != "repaired":
        return Outcome(f.name, "failed", f"par2 did not repair it ({describe(verdict)})")
    return os.path.join(work, os.path.basename(f.name)), note


def _link_or_copy(source: str, target: str) -> None:
    try:
        os.link(source, target)
    except OSError as err:
        if err.errno not in _NO_LINKS:
            raise ColdError(f"cannot link {names.shown(source)}: {err.strerror}") from None
        try:
            shutil.copyfile(source, target, follow_symlinks=False)
        except OSError as err:
            why = err.strerror
            raise ColdError(f"cannot copy {names.shown(source)} to repair it: {why}") from None


def _rescue(source: str, target: str, expect: FileStamp | None) -> int:
    """Copy source to target with every byte that cannot be read as zero (a damaged block
    for par2 to rebuild), as ddrescue would: read in large pieces, a piece that fails again
    up to each sector boundary.  Returns how many bytes could not be read."""
    fd = entries.open_regular(source, expect)
    out = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    lost = 0
    try:
        size = os.fstat(fd).st_size
        for at in range(0, size, RESCUE_PIECE):
            data, missing = _read_around(fd, at, min(RESCUE_PIECE, size - at))
            os.pwrite(out, data, at)
            lost += missing
        os.ftruncate(out, size)
    finally:
        os.close(out)
        os.close(fd)
    return lost


def _read_around(fd: int, at: int, length: int) -> tuple[bytes, int]:
    """length bytes at offset at, and how many of them could not be read (zeros instead).
    A short read before the end is where a bad sector starts: the next read fails."""
    try:
        data = os.pread(fd, length, at)
        if len(data) == length:
            return data, 0
    except OSError as err:
        if err.errno != errno.EIO:
            raise
    out, lost, pos, end = bytearray(), 0, at, at + length
    while pos < end:
        want = min(SECTOR - pos % SECTOR, end - pos)  # up to the next sector boundary
        try:
            got = os.pread(fd, want, pos)
        except OSError as err:
            if err.errno != errno.EIO:
                raise
            got = None
        if not got:  # unreadable (or the file shrank: the proof will tell)
            got = bytes(want)
            lost += want
        out += got
        pos += len(got)
    return bytes(out), lost


def _prove(
    rebuilt: str,
    f: FileReport,
    sidecar: dict[str, object] | None,
    first: BeginHeader | None,
    damaged: str,
) -> None:
    """Raise ColdError unless the rebuilt file is the stream that was archived: a valid
    stream, the file its parity was made from, and the very stream the damaged file is (its
    first record, its size, and its sidecar's GUIDs, size and digest), not merely a stream
    with that name: parity copied from another archive rebuilds another stream."""
    assert f.parity is not None
    fd = entries.open_regular(rebuilt)
    try:
        report = verify_stream(fd)
        sha256, md5 = _digests(fd)
        rebuilt_first = _parse_first(compressed.read_stream(fd, 0, RECORD_SIZE))
        os.fsync(fd)
    finally:
        os.close(fd)
    shown = names.shown(f.name)
    if not report.valid:
        problem = report.problems[0] if report.problems else None
        what = f" at byte {problem.offset}: {problem.message}" if problem else ""
        raise ColdError(f"par2 rebuilt {shown}, but it is not a valid stream{what}: not replaced")
    if md5 != f.parity.md5:
        raise ColdError(f"par2 rebuilt {shown}, but not the file its parity was made from")
    wrong = _not_the_original(report, sha256, f, sidecar, first, rebuilt_first)
    if wrong is None and first is None and (sidecar is None or "sha256" not in sidecar):
        # nothing else names the stream: its last END record (toguid and the checksum of the
        # whole substream) must be the damaged file's, byte for byte
        at = report.substreams[-1].end_offset
        if at is None or _record(rebuilt, at) != _record(damaged, at):
            wrong = (
                "its first record is unreadable, it has no sidecar digest, and its last END "
                "record (GUID and checksum of the substream) is not the damaged file's, so "
                "nothing proves which stream it was"
            )
    if wrong:
        raise ColdError(
            f"par2 rebuilt {shown}, but not the stream it replaces: {wrong}; not replaced"
        )


def _not_the_original(
    report: StreamReport,
    sha256: str,
    f: FileReport,
    sidecar: dict[str, object] | None,
    first: BeginHeader | None,
    rebuilt_first: BeginHeader | None,
) -> str | None:
    """How the rebuilt stream differs from what is known of the damaged one, or None."""
    first_step, last_step = report.substreams[0], report.substreams[-1]
    actual: dict[str, object] = {
        "dataset": last_step.dataset,
        "from_guid": str(first_step.fromguid),
        "to_guid": str(last_step.toguid),
        "snapshots": [s.toname.partition("@")[2] for s in report.substreams],
        "bytes": report.size,
        "sha256": sha256,
    }
    if sidecar is not None:
        wrong = [k for k, v in actual.items() if k in sidecar and sidecar[k] != v]
        if wrong:
            return f"its {', '.join(wrong)} are not the sidecar's"
    if first is not None and first != rebuilt_first:
        return f"its first record is {_said(rebuilt_first)}, the damaged file's {_said(first)}"
    on_disk = f.identity.size if f.identity is not None else None
    truncated = any(p.kind == "truncated" for p in f.problems)
    size = report.size if report.file_bytes is None else report.file_bytes  # compressed: its own
    if on_disk is not None and not truncated and size != on_disk:
        return f"it holds {size:,} bytes, the damaged file {on_disk:,}"
    if on_disk is not None and truncated and size <= on_disk:
        return f"it holds {size:,} bytes, no more than the truncated file ({on_disk:,})"
    return None


def _record(path: str, at: int) -> bytes:
    """The 312-byte record at stream offset at (unreadable sectors of a rescued copy are
    zeros; a compressed file is decompressed up to it, and yields less where it fails)."""
    fd = entries.open_regular(path)
    try:
        return compressed.read_stream(fd, at, RECORD_SIZE)
    finally:
        os.close(fd)


def _said(h: BeginHeader | None) -> str:
    if h is None:
        return "unreadable"
    return f"{h.toname} (toguid {h.toguid}, fromguid {h.fromguid})"


def _first_intact(f: FileReport) -> bool:
    """Whether the check verified the damaged file's first record (the damage it found
    begins beyond it), so that the record can stand for the stream's identity."""
    starts = [p.damage_from for p in f.problems if p.damage_from is not None]
    return bool(starts) and min(starts) >= RECORD_SIZE


def _first_record(path: str, f: FileReport) -> BeginHeader | None:
    """The first BEGIN record of a (damaged) stream file, when it can be read and parsed and
    stand for the stream: damage is usually further in, and this record names the stream.
    A plain file's only when the check verified it (_first_intact).  A compressed file's as
    it decompresses, though its frame may be the damaged one and so not proven: it is only
    ever held against the rebuilt, proven stream's first record, and must match it byte for
    byte, which no damage does by chance (damage in it refuses the repair, never passes it)."""
    if f.compression is None and not _first_intact(f):
        return None
    try:
        fd = entries.open_regular(path)
    except (OSError, entries.Changed):
        return None
    try:
        return _parse_first(compressed.read_stream(fd, 0, RECORD_SIZE))
    except OSError:
        return None
    finally:
        os.close(fd)


def _parse_first(raw: bytes) -> BeginHeader | None:
    if len(raw) < RECORD_SIZE:
        return None
    for big in (False, True):
        h = parse_begin(raw, big)
        if h.magic == MAGIC:
            return h
    return None


def _digests(fd: int) -> tuple[str, bytes]:
    sha, md5 = hashlib.sha256(), hashlib.md5(usedforsecurity=False)
    at = 0
    while chunk := os.pread(fd, 1 << 20, at):
        sha.update(chunk)
        md5.update(chunk)
        at += len(chunk)
    return sha.hexdigest(), md5.digest()


def _replace(store: Store, f: FileReport, rebuilt: str) -> str:
    """NAME.damaged made a link of the damaged original, then the proven file renamed over
    NAME (where links are not supported: the original renamed away first)."""
    original = store.local_path(f.name)
    kept = f.name + DAMAGED
    keep = original + DAMAGED
    if os.path.lexists(keep):
        raise ColdError(
            f"{names.shown(kept)} exists: remove it first (`zverify cold repair "
            "--remove-damaged` removes the damaged originals of proven streams)"
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
        fsync_dir(os.path.dirname(original) or ".")
    except OSError as err:
        raise ColdError(
            f"replacing {names.shown(f.name)} failed: {err.strerror} (the damaged original is "
            f"{names.shown(kept)} if it exists)"
        ) from None
    return kept


@dataclass
class Removal:
    """What --remove-damaged decides for one NAME.damaged: remove it, or keep it and why."""

    name: str  # NAME.damaged
    remove: bool
    why: str


# problems a repair was run for: the damage it rebuilt, not a doubt about the rebuilt file
_DAMAGE = {"damaged", "truncated", "not-a-stream", "unreadable"}


def judge_damaged(report: ArchiveReport, outcomes: list[Outcome]) -> list[Removal]:
    """Each NAME.damaged, removed only with proof made now that NAME is its intact
    replacement: NAME holds the same stream (repaired and proven in this run, or read intact
    with no problem at all, its first record and size the damaged file's) under intact
    parity.  A NAME.damaged can be the only copy of a snapshot: anything less keeps it."""
    repaired = {o.name for o in outcomes if o.status == "repaired"}
    files = {f.name: f for f in report.files}
    named = {p.file for p in report.problems}  # orphan, duplicate, sidecar-mismatch ...
    found = []
    for kept in sorted(set(report.kept) | {o.kept for o in outcomes if o.kept}):
        f = files.get(kept[: -len(DAMAGED)])
        why = _not_replaced_by(report, f, kept, f is not None and f.name in repaired, named)
        found.append(Removal(kept, why is None, why or "its stream is intact and proven"))
    return found


def _not_replaced_by(
    report: ArchiveReport, f: FileReport | None, kept: str, repaired: bool, named: set[str]
) -> str | None:
    """Why f does not prove that kept (its NAME.damaged) may go, or None when it does."""
    if f is None:
        return f"{names.shown(kept[: -len(DAMAGED)])} is not here"
    doubts = [p.kind for p in f.problems if not (repaired and p.kind in _DAMAGE)]
    doubts += [p.kind for p in report.problems if p.file in (f.name, f.name + SIDECAR)]
    if doubts:
        return f"{names.shown(f.name)} is not proven ({', '.join(sorted(set(doubts)))})"
    if f.parity is None or not f.parity.usable or f.parity.problems:
        return f"{names.shown(f.name)} has no intact parity of its own"
    if repaired:
        return None  # the repair proved the rebuilt stream is the original's (_prove)
    if f.archived is None or f.identity is None:
        return f"{names.shown(f.name)} is not intact"
    return _same_stream(report.path(f.name), report.path(kept), f.identity.size)


def _same_stream(path: str, kept: str, size: int) -> str | None:
    """Why kept is not the stream at path (proven intact, size bytes in its file), or None.
    Its first record (snapshot, GUIDs, flags) must be the stream's, and its size the same
    or smaller (a truncated copy), as the repair's own proof has it (_not_the_original)."""
    try:
        theirs = _first_record_of(kept)
        ours = _first_record_of(path)
        held = os.lstat(kept).st_size
    except (OSError, entries.Changed) as err:
        why = err.strerror if isinstance(err, OSError) else str(err)
        return f"{names.shown(kept)} cannot be read ({why}): nothing proves which stream it is"
    if theirs is None or theirs != ours:
        return (
            f"its first record is {_said(theirs)}, {names.shown(os.path.basename(path))}'s "
            f"{_said(ours)}: another stream"
        )
    if held > size:
        return f"it holds {held:,} bytes, more than the intact stream's {size:,}: another stream"
    return None


def _first_record_of(path: str) -> BeginHeader | None:
    fd = entries.open_regular(path)
    try:
        return _parse_first(compressed.read_stream(fd, 0, RECORD_SIZE))
    finally:
        os.close(fd)


def drop_damaged(store: Store, judged: list[Removal]) -> list[str]:
    """Remove each NAME.damaged judge_damaged() proved may go.  Returns what was removed."""
    removed = []
    for r in judged:
        path = store.local_path(r.name)
        if not r.remove or not stat.S_ISREG(os.lstat(path).st_mode):
            continue
        os.unlink(path)
        removed.append(r.name)
    for directory in sorted({os.path.dirname(store.local_path(k)) or "." for k in removed}):
        fsync_dir(directory)
    return removed
