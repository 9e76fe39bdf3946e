"""LocalStore: an archive in one directory or several ("places") on this host, and Writer,
the exclusive NAME.partial renamed into place that every new file of such an archive is
written through (the interface they implement: base.py)."""

import contextlib
import hashlib
import os
import stat
from collections.abc import Callable, Iterator
from typing import Any

from zverify.cold import entries, names
from zverify.cold.entries import FileStamp
from zverify.cold.store import lock
from zverify.cold.store.base import Entry, Unsynced
from zverify.cold.store.workdir import fsync_dir
from zverify.errors import ArchiveError, ColdError


class LocalStore:
    """One directory or several ("places") on this host; with recursive, the directories
    below them too (a symlinked directory is never followed: it is an entry like any other
    that is not a regular file)."""

    uses_local_files = True
    deletion = "unlinked"
    bucket = None  # no storage classes, object lock, versions or uploads: see base.Bucket

    def __init__(self, places: list[str], recursive: bool = False) -> None:
        """Raises ArchiveError when a place is not a directory that can be read, or is given
        twice (the same directory, or with --recursive one inside another)."""
        if not places:
            raise ArchiveError("no archive directory given")
        self.places = list(places)
        self.recursive = recursive
        self._ids: dict[tuple[int, int], str] = {}
        for place in self.places:
            st = _place_stat(place)
            seen = self._ids.get((st.st_dev, st.st_ino))
            if seen is not None:
                raise ArchiveError(f"archive {place!r} is {seen!r} again: give each place once")
            self._ids[(st.st_dev, st.st_ino)] = place
        if recursive:
            _refuse_nested(self.places)

    # -- names ----------------------------------------------------------------------------

    def ledger_path(self) -> str:
        """The proof ledger lives in the first place (zverify.cold.proof.ledger)."""
        return os.path.join(self.places[0], names.LEDGER)

    def for_new_files(self) -> "LocalStore":
        """A send writes into the first place; the others are read (`--also`)."""
        return self if len(self.places) == 1 else LocalStore(self.places[:1], self.recursive)

    def key(self, place: str, relative: str) -> str:
        return relative if len(self.places) == 1 else os.path.join(place, relative)

    def local_path(self, key: str) -> str:
        """The file's path on this host (for par2 and other tools that take paths; an object
        store has none).  With several places the key is that path already."""
        return os.path.join(self.places[0], key) if len(self.places) == 1 else key

    def place_of(self, key: str) -> str:
        if len(self.places) == 1:
            return self.places[0]
        # the longest place the key starts with (places are never nested when recursive,
        # and without recursion the rest is one name)
        found = [p for p in self.places if key.startswith(os.path.join(p, ""))]
        return max(found, key=len) if found else self.places[0]

    def directory_of(self, key: str) -> str:
        """The directory a key is in, on this host: its sidecar, parity and work directory
        are made there, and it is what is fsynced after a change."""
        return os.path.dirname(self.local_path(key)) or "."

    @staticmethod
    def sibling(key: str, name: str) -> str:
        """The key of name in the same directory as key (NAME.json beside NAME)."""
        return key[: len(key) - len(os.path.basename(key))] + name

    @property
    def shown(self) -> str:
        """The places, for one line of text."""
        return ", ".join(self.places)

    # -- listing --------------------------------------------------------------------------

    def entries(self) -> list[Entry]:
        """Every entry of every place, sorted by key.  Raises ArchiveError when a place
        itself cannot be listed (a subdirectory that cannot be is an entry with error)."""
        found: list[Entry] = []
        walked = {ids: os.path.join(place, "") for ids, place in self._ids.items()}
        for place in self.places:
            try:
                owner = os.stat(place).st_uid
                found += self._walk(place, "", owner, walked)
            except OSError as err:
                raise ArchiveError(f"cannot read archive {place!r}: {err.strerror}") from None
        return sorted(found, key=lambda e: e.key)

    def _walk(
        self, place: str, below: str, owner: int, walked: dict[tuple[int, int], str]
    ) -> list[Entry]:
        """The entries of place/below; raises OSError when it cannot be listed, ArchiveError
        when a directory below is one walked already (a bind mount: its files would count
        twice, as copies that are one file)."""
        with os.scandir(os.path.join(place, below) if below else place) as it:
            listed = sorted(e.name for e in it)
        out: list[Entry] = []
        for name in listed:
            relative = os.path.join(below, name) if below else name
            key = self.key(place, relative)
            try:
                st = os.lstat(os.path.join(place, relative))
            except OSError as err:
                out.append(Entry(key, place, None, err, owner))
                continue
            # a work directory of a parity or repair run is an entry, never entered
            work = name.endswith(names.WORK_DIRS)
            if not (self.recursive and stat.S_ISDIR(st.st_mode)) or work:
                out.append(Entry(key, place, st, None, owner))
                continue
            path = os.path.join(place, relative, "")
            again = walked.setdefault((st.st_dev, st.st_ino), path)
            if again != path:
                raise ArchiveError(
                    f"archive directory {path!r} is {again!r} again (a bind mount?): "
                    "each directory is read once"
                )
            try:
                out += self._walk(place, relative, owner, walked)
            except OSError as err:
                out.append(Entry(key, place, st, err, owner))
        return out

    # -- reading --------------------------------------------------------------------------

    def open_read(self, key: str, expect: FileStamp | None = None) -> int:
        """An fd of the regular file of key (never a symlink, a FIFO, another file than
        expect).  Raises OSError or entries.Changed."""
        return entries.open_regular(self.local_path(key), expect)

    def open_ranged(self, key: str, expect: FileStamp | None = None) -> int:
        """The same, read with pread() (a local fd is both; an object store's is not)."""
        return entries.open_regular(self.local_path(key), expect)

    def finish_read(self, key: str, fd: int) -> FileStamp:
        """Close fd (of open_read), returning the identity of the file it read as it is now
        (a change while it was read shows in its size or modification time)."""
        try:
            return FileStamp.of(os.fstat(fd))
        finally:
            os.close(fd)

    def read_small(self, key: str, expect: FileStamp | None, limit: int) -> bytes:
        """Up to limit bytes of the regular file of key.  Raises OSError, entries.Changed
        (also when the file was rewritten in place since expect: what was read is not it)."""
        fd = entries.open_regular(self.local_path(key), expect)
        try:
            data = os.read(fd, limit)
            if expect is not None and not expect.unchanged(os.fstat(fd)):
                raise entries.Changed(f"{names.shown(key)} changed since it was listed: not read")
            return data
        finally:
            os.close(fd)

    def read_range(self, key: str, expect: FileStamp | None, offset: int, length: int) -> bytes:
        """length bytes from offset (fewer at the file's end).  Raises OSError, Changed."""
        fd = entries.open_regular(self.local_path(key), expect)
        try:
            chunks = []
            while length > 0 and (chunk := os.pread(fd, length, offset)):
                chunks.append(chunk)
                offset, length = offset + len(chunk), length - len(chunk)
            return b"".join(chunks)
        finally:
            os.close(fd)

    # -- changing -------------------------------------------------------------------------

    def writer(self, key: str) -> "Writer":
        """A new NAME.partial (exclusive, flock()ed: `cold check` tells it from a leftover),
        renamed to NAME by Writer.commit(), removed by Writer.discard()."""
        return Writer(self.local_path(key))

    def delete(self, key: str, expect: FileStamp) -> None:
        """Unlink key only when it is still the very regular file that was proven (inode,
        size and modification time), then fsync its directory.  Raises ColdError when it is
        not, OSError when the unlink fails, Unsynced when it is gone but the fsync failed."""
        self.ensure_unchanged(key, expect)
        os.unlink(self.local_path(key))
        directory = self.directory_of(key)
        try:
            fsync_dir(directory)
        except OSError as err:
            raise Unsynced(f"the fsync of {directory} failed: {err.strerror}") from None

    def delete_aside(self, key: str) -> None:
        """A plain file only: anything else under a sidecar's or parity's name is reported
        by check, never deleted."""
        path = self.local_path(key)
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return
        if stat.S_ISREG(st.st_mode) and st.st_nlink == 1:
            os.unlink(path)

    def ensure_unchanged(self, key: str, expect: FileStamp | None) -> None:
        """Raises ColdError unless key is still the very regular file that was proven
        (expect None: it never was), OSError when it cannot be looked at."""
        st = os.lstat(self.local_path(key))
        if expect is None or not stat.S_ISREG(st.st_mode) or not expect.unchanged(st):
            raise ColdError(
                f"{names.shown(key)} is not the file that was verified any more (replaced or "
                "changed since): not deleted"
            )

    @contextlib.contextmanager
    def lock(self, how: str, wait: float = 0) -> Iterator[None]:
        """The locks of every place (zverify.cold.store.lock), taken in one fixed order (by device
        and inode) so that two commands on overlapping places never wait for each other
        crosswise.  how: "read", "write" or "delete"."""
        with contextlib.ExitStack() as stack:
            for _id, place in sorted(self._ids.items()):
                if how == "read":
                    stack.enter_context(lock.reading(place, wait))
                else:
                    stack.enter_context(lock.writing(place, wait, deleting=how == "delete"))
            yield


class Writer:
    """NAME.partial being written; commit() makes it NAME atomically and durably, discard()
    removes it (call one of them, whatever happens: the caller says what is left)."""

    def __init__(self, final: str) -> None:
        """Raises FileExistsError when NAME.partial exists (a running or interrupted write:
        the caller tells which), ColdError when it cannot be created or locked."""
        self.final = final
        self.partial = final + names.PARTIAL
        self.fd, mine = create_exclusive(self.partial)
        self._mine: FileStamp | None = mine
        self._synced = False

    def sync(self) -> None:
        """fsync the data (before it is read back for a digest, or committed)."""
        _io("fsync of", self.partial, os.fsync, self.fd)
        self._synced = True

    def stored_size(self) -> int:
        return int(_io("stat of", self.partial, os.fstat, self.fd).st_size)

    def sidecar_digests(self) -> dict[str, str]:
        """What the sidecar records besides the SHA-256: nothing more, on a filesystem."""
        return {}

    def stored_sha256(self) -> str:
        """Read back from the file itself: the digest is of what was stored, not sent."""
        h = hashlib.sha256()
        at = 0
        while chunk := _io("reading back", self.partial, os.pread, self.fd, 1 << 20, at):
            h.update(chunk)
            at += len(chunk)
        return h.hexdigest()

    def commit(self) -> None:
        """fsync (unless done), close (NFS reports write errors there), rename into place
        (never over an existing entry), fsync the directory.  Raises ColdError naming the
        step, Unsynced when only the directory's fsync failed (the file is in place)."""
        if not self._synced:
            self.sync()
        closing, self.fd = self.fd, -1
        _io("closing", self.partial, os.close, closing)
        refuse_existing(self.final)
        _io("renaming into place", self.partial, os.rename, self.partial, self.final)
        self._mine = None
        directory = os.path.dirname(self.final) or "."
        try:
            fsync_dir(directory)
        except OSError as err:
            why = err.strerror or err
            raise Unsynced(
                f"the fsync of the directory {names.shown(directory)} failed: {why}"
            ) from None

    def discard(self) -> str | None:
        """Close and remove this writer's .partial unless committed; what is left behind, in
        words, when it cannot be removed (never a file that is not the one created here)."""
        if self.fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = -1
        mine, self._mine = self._mine, None
        if mine is None:
            return None
        try:
            if not mine.same_file(os.lstat(self.partial)):
                return None
            os.unlink(self.partial)
        except FileNotFoundError:
            return None
        except OSError as err:
            return (
                f"{names.shown(self.partial)} could not be removed ({err.strerror}): no "
                "command counts it as a stream; `zverify cold clean --yes` removes it"
            )
        return None


def create_exclusive(path: str) -> tuple[int, FileStamp]:
    """path, new (never an existing file, never through a symlink), flock()ed as a send's
    .partial is (zverify.cold.store.lock).  Raises FileExistsError, ColdError."""
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o600)
    except FileExistsError:
        raise
    except OSError as err:
        raise ColdError(f"cannot create {names.shown(path)}: {err.strerror}") from None
    try:
        lock.hold_partial(fd)
        return fd, FileStamp.of(os.fstat(fd))
    except OSError as err:
        os.close(fd)
        os.unlink(path)
        raise ColdError(f"cannot lock {names.shown(path)}: {err.strerror}") from None


def refuse_existing(final: str) -> None:
    if os.path.lexists(final):
        name, where = names.shown(os.path.basename(final)), os.path.dirname(final) or "."
        raise ColdError(f"{name} already exists in {where}: refusing to overwrite it")


def _io(doing: str, path: str, call: Callable[..., Any], *args: Any) -> Any:
    """call(*args); an OSError becomes one line naming what was done to which file."""
    try:
        return call(*args)
    except OSError as err:
        raise ColdError(f"{doing} {names.shown(path)} failed: {err.strerror or err}") from None


def _place_stat(place: str) -> os.stat_result:
    """A place is a directory, reached through a symlink only if the user typed one."""
    try:
        st = os.stat(place)
    except OSError as err:
        raise ArchiveError(f"cannot read archive {place!r}: {err.strerror}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise ArchiveError(f"cannot read archive {place!r}: not a directory")
    return st


def _refuse_nested(places: list[str]) -> None:
    """With --recursive a place inside another would be read twice: refused."""
    real = {p: os.path.join(os.path.realpath(p), "") for p in places}
    for inner in places:
        for outer in places:
            if inner != outer and real[inner].startswith(real[outer]):
                raise ArchiveError(
                    f"archive {inner!r} is inside {outer!r}, which --recursive reads already"
                )
