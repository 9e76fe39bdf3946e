"""The proof ledger: what was proven of which archive file, when, how and with what result.

An append-only JSON Lines file, one record per proof (LedgerRecord), kept in the archive's
directory (NAME, beside the lock files) or anywhere else (`--ledger PATH`: a read-only
archive, a bucket).  Each line carries `prev`, the SHA-256 of the previous line's bytes
(its newline included; 64 zeros on the first), so a line edited, reordered or removed in
the middle breaks the chain at the line after it.  Lines removed from the end break no
chain: the head file (HEAD, beside the ledger: {"lines": N, "last": SHA-256 of line N})
says how far the ledger surely goes; the ledger is never behind it.  A head without more
allows one line more (the line of an append killed before its head was replaced); a head
that also names an append ({"appending": {"lines": N + k, "last": SHA-256 of line N + k}})
allows that append.  An append, under the ledger's lock, appends and fsyncs its k lines,
then replaces the head with the new count; first, unless the head counts every line and
k is 1 (a scrub's append: the one line more is allowed already), it replaces the head with
one that counts every line and names the append.  So a SIGKILL at any point, however many
times in a row, leaves a ledger every reader accepts: an append that finds the head behind
(one line, or an append it names) brings it up to date before it appends.  Temporary heads
left by a kill (HEAD.PID.tmp) are removed by the next append, under the lock.

A torn last line (bytes after the last newline: an append killed mid-write) is reported
(`torn`) and is not a tampering: the head never counted it.  The next append cuts it off
before writing, under the ledger's lock: its proof is lost and is simply made again.

A record says which bytes it proved: the archive (archive_of() in zverify.cold.proof.record: the
directory's real path and filesystem id, or the bucket's URL), and the file as it was listed
before it was read (its filesystem's id, inode, modification and change times in ns; a bucket
object's ETag and version id).  A proof stands only for that file of that archive: a ledger
shared by two archives keeps each one's proofs apart (Ledger.open(path, archive)), and a
record without them (written before they were recorded) proves nothing any more.

A drill (`zverify cold drill`) records one line of its own: file `drill:DATASET@SNAPSHOT`
(no stream is named so: a drill never stands for a file's proof), method "drill", the bytes
received, the result (proven: the received tree equals the source; damaged: it does not, or
the archive could not restore it; problem: the drill could not finish), and a "drill" field
with the files received, the OpenZFS that received them and what the tree was compared with.

Long because: one file format with its proof (append under a lock, the head that survives
kills, a reader that checks every field of every line) is kept in one place, so that no
other module writes or parses a line.

Appends use O_APPEND and fsync, under an exclusive flock(2) of the ledger file itself (a
check and a scrub may record at once); a writer first reads what others appended since
and proves it too.  Every line and the head are read with zverify.boundedjson and checked
field by field: whatever they hold, a reader raises Tampered naming the file and line,
never crashes.  Anyone who can rewrite both files can forge a consistent ledger: the chain
shows damage and careless edits, not a determined forger (sign the head for that).
"""

import contextlib
import datetime
import errno
import fcntl
import hashlib
import json
import os
import stat
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any

from zverify import __version__, boundedjson
from zverify.cold import names
from zverify.cold.store.workdir import fsync_dir
from zverify.errors import ColdError

NAME = names.LEDGER
HEAD = ".zverify-ledger.head"
FILES = (NAME, HEAD)
GENESIS = "0" * 64
METHODS = ("send", "check", "scrub", "restore", "prune", "repair", "drill")
RESULTS = ("proven", "damaged", "unreadable", "problem")
_MAX_HEAD = 4096


@dataclass(frozen=True)
class DrillFacts:
    """What a drill did: the files it received, in order; the OpenZFS that received them
    (`zfs version`, one line); what the received tree was compared with; how many entries."""

    route: tuple[str, ...]
    openzfs: str
    against: str
    entries: int

    @classmethod
    def parsed(cls, doc: Any) -> "DrillFacts | None":
        """From a ledger line's "drill" field; None when it holds what no append writes."""
        if not isinstance(doc, dict) or set(doc) != set(cls.__dataclass_fields__):
            return None
        route, entries = doc["route"], doc["entries"]
        if not isinstance(route, list) or not all(isinstance(r, str) for r in route):
            return None
        if not (isinstance(doc["openzfs"], str) and isinstance(doc["against"], str)):
            return None
        if not _count(entries):
            return None
        return cls(tuple(route), doc["openzfs"], doc["against"], entries)


DRILL_PREFIX = "drill:"


class Tampered(ColdError):
    """The ledger is not what appends alone can leave (exit 2, naming the line)."""


@dataclass(frozen=True)
class LedgerRecord:
    file: str  # the archive's key of the file
    size: int  # bytes of the file as read (a compressed file's own)
    dataset: str | None
    from_guid: str | None  # decimal strings, as in every JSON of zverify
    to_guid: str | None
    digest: str | None  # check.stream_digest(): of an intact stream only
    method: str
    result: str  # proven, damaged, unreadable, problem (intact, and not restorable as is)
    time: str  # ISO 8601, UTC
    version: str = __version__
    prev: str = GENESIS
    # what the proof is of (see the module's docstring); None on lines written before they
    # were recorded, which prove nothing any more
    archive: str | None = None  # zverify.cold.proof.record.archive_of()
    dev: int | None = None  # the file as listed before it was read: st_dev, st_ino, ...
    ino: int | None = None  # (a bucket object's: 0, a hash of its ETag and version id, ...)
    mtime_ns: int | None = None
    ctime_ns: int | None = None  # (... and its LastModified for both times)
    # a drill's record (method "drill", file "drill:DATASET@SNAPSHOT": no stream is named
    # so, so a drill never stands for a file's proof): what it received and compared
    drill: "DrillFacts | None" = None

    @property
    def when(self) -> datetime.datetime:
        return datetime.datetime.fromisoformat(self.time)

    @property
    def stamp(self) -> tuple[int, int, int, int, int] | None:
        """(dev, ino, size, mtime_ns, ctime_ns) of the file proven; None when not recorded."""
        dev, ino, mtime_ns, ctime_ns = self.dev, self.ino, self.mtime_ns, self.ctime_ns
        if dev is None or ino is None or mtime_ns is None or ctime_ns is None:
            return None
        return (dev, ino, self.size, mtime_ns, ctime_ns)


_IDENTITY = ("archive", "dev", "ino", "mtime_ns", "ctime_ns")
_DRILLED = frozenset(LedgerRecord.__dataclass_fields__)  # a drill's line
_ALL = _DRILLED - {"drill"}  # every other line (written without the field)
_BEFORE_IDENTITY = _ALL - frozenset(_IDENTITY)  # a line written before they were recorded


def is_ledger_name(name: str) -> bool:
    """The default ledger, its head, and a head being replaced (left by a kill)."""
    return name in FILES or (name.startswith(HEAD + ".") and name.endswith(".tmp"))


def now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def default_path(directory: str) -> str:
    return os.path.join(directory, NAME)


def head_path(path: str) -> str:
    """The head file beside a ledger (NAME.head for a ledger called NAME.jsonl)."""
    base, ext = os.path.splitext(path)
    return (base if ext == ".jsonl" else path) + ".head"


class Ledger:
    """A ledger read and proven whole (open()); append() adds records to it.  With an
    archive, latest() and last_proven() are of that archive's records (and of lines that
    name none), and append() names it in each record."""

    def __init__(self, path: str, archive: str | None = None) -> None:
        self.path = path
        self.head = head_path(path)
        self.archive = archive
        self.records: list[LedgerRecord] = []
        self.hashes: list[str] = []  # SHA-256 of each whole line
        self.good = 0  # bytes up to the end of the last whole line
        self.torn = 0  # bytes after it (an append killed mid-line)
        self.was_torn = False  # a torn tail was found (and is cut off by the next append)
        self._swept = False  # temporary heads left by kills removed (once, by an append)

    @classmethod
    def open(cls, path: str, archive: str | None = None) -> "Ledger":
        """Read and prove the ledger at path (none there: an empty one), for the archive
        named (see Ledger).  Raises Tampered naming the line, ColdError when it cannot be
        read."""
        ledger = cls(path, archive)
        fd = _open_read(path)
        if fd is None:
            ledger._prove(b"")
            return ledger
        try:  # shared: an append (ledger, then head) is never seen half made
            _lock(fd, path, fcntl.LOCK_SH)
            ledger._prove(_read_fd(fd, path))
        finally:
            os.close(fd)
        return ledger

    @property
    def last(self) -> str:
        return self.hashes[-1] if self.hashes else GENESIS

    def latest(self) -> dict[str, LedgerRecord]:
        """Each file's last record (of this archive)."""
        return {r.file: r for r in self._of_archive()}

    def last_proven(self) -> dict[str, LedgerRecord]:
        """Each file's last record (of this archive) that proved it."""
        return {r.file: r for r in self._of_archive() if r.result == "proven"}

    def drills(self) -> dict[str, LedgerRecord]:
        """Each dataset's last drill (of this archive)."""
        return {r.dataset: r for r in self._of_archive() if r.method == "drill" and r.dataset}

    def _of_archive(self) -> list[LedgerRecord]:
        """Another archive's proofs are never this one's: a file of the same name there is
        another file.  A line naming no archive is kept (its result still says "read it
        first" when it failed); it proves nothing (no identity: see zverify.cold.proof.scrub)."""
        if self.archive is None:
            return self.records
        return [r for r in self.records if r.archive in (None, self.archive)]

    def summary(self) -> str:
        files = len(self.latest())
        line = f"ledger {self.path}: {len(self.records)} proofs of {files} files, chain intact"
        if self.torn:
            return line + "; a torn last line (an append killed mid-write): the next cuts it off"
        if self.was_torn:
            return line + "; its torn last line (an append killed mid-write) was cut off"
        return line

    def ensure_writable(self) -> None:
        """Create the ledger if need be: a run that cannot record is refused before it
        reads anything.  Raises ColdError (naming --ledger for a read-only archive)."""
        os.close(_open_append(self.path))

    def append(self, records: list[LedgerRecord]) -> None:
        """Add records (prev set here) under the ledger's lock: what others appended since
        it was read is proven first; a torn tail is cut off.  Raises ColdError, Tampered."""
        if not records:
            return
        fd = _open_append(self.path)
        try:
            _lock(fd, self.path, fcntl.LOCK_EX)
            self._catch_up(fd)
            if not self._swept:
                _sweep_temporary_heads(self.head)
                self._swept = True
            # as the head is now (a killed append may have left it behind, or naming an
            # append that was never made), for the lines proven so far
            current = _check_head(self.path, self.head, [GENESIS, *self.hashes])
            proven = {"lines": len(self.records), "last": self.last}
            lines = b""
            for r in records:
                mine = replace(r, prev=self.last, archive=r.archive or self.archive)
                line = _line(mine)
                lines += line
                self.records.append(mine)
                self.hashes.append(hashlib.sha256(line).hexdigest())
            if current != (proven["lines"], None) or len(records) > 1:
                # the head first counts every line proven and names this append: a kill
                # anywhere below leaves a ledger that every reader accepts, however many
                # times in a row.  (A head that counts every line already allows the one
                # line ahead a kill leaves: one append of one line, a scrub's, needs no
                # second head write.)
                appending = {"lines": len(self.records), "last": self.last}
                _write_head(self.head, proven | {"appending": appending})
            _io("writing", self.path, _write_all, fd, lines)
            _io("fsync of", self.path, os.fsync, fd)
            self.good += len(lines)
            _write_head(self.head, {"lines": len(self.records), "last": self.last})
        finally:
            os.close(fd)  # drops the lock

    def _catch_up(self, fd: int) -> None:
        """Under the lock: prove again what others appended since it was read (all of it:
        a rewrite under us is caught too), and cut off a torn tail (never counted by the
        head: see the module's docstring)."""
        if os.fstat(fd).st_size != self.good + self.torn:
            self.records, self.hashes = [], []
            self._prove(_read_fd(fd, self.path))
        if self.torn:
            _io("cutting the torn last line of", self.path, os.ftruncate, fd, self.good)
            self.torn = 0

    def _prove(self, data: bytes) -> None:
        """Every whole line of data in its chain, then the head; a tail without its newline
        is noted as torn."""
        end = data.rfind(b"\n") + 1
        self.good, self.torn = end, len(data) - end
        self.was_torn = self.was_torn or bool(self.torn)
        at = 0
        while at < end:
            nl = data.index(b"\n", at)
            line = data[at : nl + 1]
            self.records.append(_parse(self.path, len(self.records) + 1, line, self.last))
            self.hashes.append(hashlib.sha256(line).hexdigest())
            at = nl + 1
        _check_head(self.path, self.head, [GENESIS, *self.hashes])


def _line(r: LedgerRecord) -> bytes:
    doc = asdict(r)
    if r.drill is None:  # lines as they were before drills were recorded
        del doc["drill"]
    return (json.dumps(doc, separators=(",", ":"), ensure_ascii=True) + "\n").encode()


def _parse(path: str, number: int, line: bytes, prev: str) -> LedgerRecord:
    where = f"{path}: line {number}"
    try:
        doc = boundedjson.loads(line)
    except boundedjson.TooDeep:
        raise Tampered(f"{where}: JSON nested too deeply: not a ledger record (edited?)") from None
    except ValueError:  # UnicodeDecodeError too
        raise Tampered(f"{where}: not a JSON record (edited?)") from None
    if not isinstance(doc, dict) or set(doc) not in (_ALL, _BEFORE_IDENTITY, _DRILLED):
        raise Tampered(f"{where}: not a ledger record (fields edited?)")
    if doc["prev"] != prev:
        raise Tampered(
            f"{where}: its prev is not the hash of line {number - 1} (that line edited, or "
            "a line removed or moved here)"
        )
    if not _well_typed(doc):
        raise Tampered(f"{where}: a field holds what no append writes (edited?)")
    drilled = "drill" in doc
    facts = DrillFacts.parsed(doc.pop("drill")) if drilled else None
    if drilled != (doc["method"] == "drill") or (drilled and facts is None):
        raise Tampered(f"{where}: a drill's facts hold what no append writes (edited?)")
    record = LedgerRecord(**doc, drill=facts)
    if record.method not in METHODS or record.result not in RESULTS:
        raise Tampered(f"{where}: unknown method or result (edited?)")
    return record


_TEXT = ("file", "method", "result", "time", "version", "prev")
_TEXT_OR_NULL = ("dataset", "from_guid", "to_guid", "digest", "archive")
_COUNT_OR_NULL = ("dev", "ino", "mtime_ns", "ctime_ns")


def _well_typed(doc: dict[str, Any]) -> bool:
    """What an append writes: a consistent forgery of other types must not crash a reader
    (a time without its zone cannot be compared with now).  doc may lack the identity."""
    if not _count(doc["size"]):
        return False
    if not all(isinstance(doc[k], str) for k in _TEXT):
        return False
    if not all(doc.get(k) is None or isinstance(doc[k], str) for k in _TEXT_OR_NULL):
        return False
    if not all(doc.get(k) is None or _count(doc[k]) for k in _COUNT_OR_NULL):
        return False
    try:
        when = datetime.datetime.fromisoformat(doc["time"])
    except ValueError:
        return False
    return when.tzinfo is not None


def _count(value: Any) -> bool:
    """An int >= 0, as appends write them (not a float such as 1e400, not true)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _check_head(path: str, head: str, chain: list[str]) -> tuple[int, int | None]:
    """The ledger must hold every line its head counts, and no more than the append the
    head names (see the module's docstring).  chain: GENESIS, then the hash of each line.
    Returns what the head counts: (lines, the end of the append it names, or None)."""
    lines = len(chain) - 1
    try:
        data: bytes | None = _read_small(head)
    except FileNotFoundError:
        data = None
    if data is None:
        if lines > 1:
            raise Tampered(f"{head}: missing, while {path} has {lines} lines")
        return (0, None)
    (counted, hashed), appending = _parse_head(head, data)
    if counted > lines:
        raise Tampered(
            f"{path}: line {lines + 1}: missing (its head counts {counted} lines): lines "
            "were removed from its end"
        )
    if hashed != chain[counted]:
        raise Tampered(f"{path}: line {counted}: not the line its head ends at (edited?)")
    if appending is None:  # a head that names no append: one line ahead at most
        if counted < lines - 1:
            raise Tampered(
                f"{path}: line {counted + 2}: its head counts {counted} lines, and at most "
                "one line can be ahead of it (lines added by hand?)"
            )
        return (counted, None)
    upto, upto_hash = appending
    if lines > upto:
        raise Tampered(
            f"{path}: line {upto + 1}: its head counts {counted} lines and an append up to "
            f"line {upto}, no more (lines added by hand?)"
        )
    if lines == upto and chain[upto] != upto_hash:
        raise Tampered(f"{path}: line {upto}: not the line its head's append ends at (edited?)")
    return (counted, upto)


def _parse_head(head: str, data: bytes) -> tuple[tuple[int, str], tuple[int, str] | None]:
    """((lines, last), the append it names or None) of a head's bytes.  Raises Tampered."""
    try:
        doc = boundedjson.loads(data)
    except ValueError:  # nested too deeply too
        raise Tampered(
            f"{head}: not a ledger head (not JSON, or nested too deeply: edited?)"
        ) from None
    if not isinstance(doc, dict) or set(doc) not in (
        {"lines", "last"},
        {"lines", "last", "appending"},
    ):
        raise Tampered(f"{head}: not a ledger head (fields edited?)")
    counted = _mark(head, {"lines": doc["lines"], "last": doc["last"]})
    appending = None
    if "appending" in doc:
        appending = _mark(head, doc["appending"], "its append's ")
        if appending[0] <= counted[0]:
            raise Tampered(f"{head}: its append ends before its lines (edited?)")
    return counted, appending


def _mark(head: str, doc: Any, what: str = "") -> tuple[int, str]:
    """(lines, last) of {"lines": N, "last": SHA-256}.  Raises Tampered."""
    if not isinstance(doc, dict) or set(doc) != {"lines", "last"}:
        raise Tampered(f"{head}: {what}count and hash are not a ledger head's (edited?)")
    lines, last = doc["lines"], doc["last"]
    if not _count(lines):
        raise Tampered(f'{head}: {what}"lines" is not a count of lines (edited?)')
    if not isinstance(last, str) or len(last) != 64:
        raise Tampered(f'{head}: {what}"last" is not a SHA-256 (edited?)')
    return lines, last


def _write_head(head: str, doc: dict[str, Any]) -> None:
    """Replace the head atomically: a temporary file, fsync, rename, directory fsync."""
    tmp = f"{head}.{os.getpid()}.tmp"
    data = json.dumps(doc).encode() + b"\n"
    fd = _io("creating", tmp, os.open, tmp, _CREATE | os.O_TRUNC, 0o644)
    try:
        _io("writing", tmp, _write_all, fd, data)
        _io("fsync of", tmp, os.fsync, fd)
    finally:
        os.close(fd)
    _io("renaming into place", head, os.rename, tmp, head)
    _io("fsync of the directory of", head, fsync_dir, os.path.dirname(head) or ".")


def _sweep_temporary_heads(head: str) -> None:
    """Under the ledger's lock: remove HEAD.PID.tmp files, each a head a killed append was
    writing (no append is writing one now: they hold the lock)."""
    directory, base = os.path.split(head)
    try:
        names = os.listdir(directory or ".")
    except OSError:
        return  # nothing removed: they are only clutter, every command ignores them
    for name in names:
        pid = name[len(base) + 1 : -len(".tmp")]
        if name.startswith(base + ".") and name.endswith(".tmp") and pid.isdigit():
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(directory, name))


_CREATE = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC


def _open_append(path: str) -> int:
    fd: int = _io("opening", path, os.open, path, _CREATE | os.O_APPEND, 0o644)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ColdError(f"{path} is not a regular file: not a ledger")
    return fd


def _lock(fd: int, path: str, how: int) -> None:
    """Waiting: an append takes milliseconds."""
    try:
        fcntl.flock(fd, how)
    except OSError as err:
        raise ColdError(f"cannot lock {path}: {err.strerror}") from None


def _open_read(path: str) -> int | None:
    """The ledger, to read; None when there is none.  Never through a symlink."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as err:
        why = "a symlink" if err.errno == errno.ELOOP else err.strerror
        raise ColdError(f"cannot read the ledger {path}: {why}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ColdError(f"{path} is not a regular file: not a ledger")
    return fd


def _read_fd(fd: int, path: str) -> bytes:
    """The whole file open on fd, from its start (an O_APPEND fd too)."""
    chunks, at = [], 0
    while chunk := _io("reading", path, os.pread, fd, 1 << 20, at):
        chunks.append(chunk)
        at += len(chunk)
    return b"".join(chunks)


def _read_small(path: str) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        raise
    except OSError as err:
        raise ColdError(f"cannot read the ledger head {path}: {err.strerror}") from None
    try:
        return os.read(fd, _MAX_HEAD)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _io(doing: str, path: str, call: Callable[..., Any], *args: Any) -> Any:
    try:
        return call(*args)
    except OSError as err:
        if err.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
            raise ColdError(
                f"{doing} the ledger {path} failed: {err.strerror} (a read-only archive? "
                "--ledger PATH keeps it elsewhere)"
            ) from None
        raise ColdError(f"{doing} the ledger {path} failed: {err.strerror}") from None
