"""Where an archive's files are: the few operations every cold command needs of its storage,
behind one small interface, so that another kind of storage (an object store) plugs in
without touching the chain model or the commands.

An archive is one or several *places*.  Each entry has a *key*: its name, unique across the
places, which reports show and the chain model (zverify.sendstream.chain) is keyed by.  With
one place a key is the path relative to it (`tank%2Fdata@1.zfsfull`, or `tank/data@1.zfsfull`
with --recursive); with several it is the place as given joined with that path
(`/disk2/cold/tank%2Fdata@1-@2.zfsinc`), a path people can paste.  A sidecar, the parity and
the `.damaged` original of a stream are keys in the stream's own directory (same prefix).

The operations (Store):
  entries()                 every entry, lstat()ed, never followed (zverify.cold.entries)
  open_read(key, expect)    an fd for a sequential read (the C scanner reads fds)
  open_ranged(key, expect)  an fd for ranged reads (pread: parity and repair read ranges)
  finish_read(key, fd)      close a read's fd: the identity of what was read, or OSError
  read_small(key, expect)   a small file whole (a sidecar)
  writer(key)               write NAME.partial, then fsync + rename + directory fsync
  delete(key, expect)       unlink only the very file that was proven
  delete_aside(key)         a sidecar or parity file of a stream being deleted
  lock(how, wait)           readers'/writers' flock in every place (zverify.cold.store.lock)
  local_path(key)           a real path, for tools that need one (par2): local places only
  ledger_path()             the archive's own proof ledger (a bucket keeps none: --ledger)
  for_new_files()           the store a new file goes into (a directory archive's first place)
  bucket                    what only an object store does (storage classes and thaws, object
                            lock, versions, stored checksums, multipart uploads, lifecycle
                            rules): a Bucket, or None for a directory

LocalStore (local.py) is the local implementation: one directory, or a set of directories;
S3Store (s3.py) a bucket's prefix; open_store() (the package's) chooses one from the places.  The
proofs (a stream validated while written, a plan re-made after a deletion) stay with the
commands: a store moves bytes and names, it decides nothing.
"""

import contextlib
import datetime
import os
from dataclasses import dataclass
from typing import Protocol

from zverify.cold.entries import FileStamp
from zverify.errors import ColdError

# Requests a store may have in flight at once when asking after many objects (HEADs, ranged
# GETs, restores): a bucket's client pools this many connections (boto3's default is 10).
IN_FLIGHT = 16


@dataclass(frozen=True)
class Entry:
    """One entry of a place, as lstat() saw it (st None: it could not be, see error)."""

    key: str
    place: str
    st: os.stat_result | None
    error: OSError | None = None
    owner: int = 0  # uid of the place's owner: its files are this archive's own (doubts())
    upload: str | None = None  # in a bucket: the id of an unfinished multipart upload

    @property
    def name(self) -> str:
        """The entry's own file name (its last path component)."""
        return os.path.basename(self.key)


@dataclass(frozen=True)
class Frozen:
    """An object of an archive storage class, and how far its thaw is."""

    key: str
    bytes: int
    storage_class: str
    state: str  # frozen (no thaw asked), thawing, thawed (readable until its expiry)


class Store(Protocol):
    """The archive operations the cold commands use (see the module's docstring)."""

    places: list[str]
    recursive: bool
    uses_local_files: bool  # par2, flock and a restore --script need paths on this host

    @property
    def shown(self) -> str: ...
    @property
    def deletion(self) -> str: ...  # how a file goes: unlinked, deleted, version-removed
    def entries(self) -> list[Entry]: ...
    def open_read(self, key: str, expect: FileStamp | None = None) -> int: ...
    def open_ranged(self, key: str, expect: FileStamp | None = None) -> int: ...
    def finish_read(self, key: str, fd: int) -> FileStamp: ...
    def read_small(self, key: str, expect: FileStamp | None, limit: int) -> bytes: ...
    def read_range(self, key: str, expect: FileStamp | None, offset: int, length: int) -> bytes: ...
    def writer(self, key: str) -> "StoreWriter": ...
    def delete(self, key: str, expect: FileStamp) -> None: ...
    def delete_aside(self, key: str) -> None: ...
    def ensure_unchanged(self, key: str, expect: FileStamp | None) -> None: ...
    def lock(self, how: str, wait: float = 0) -> "contextlib.AbstractContextManager[None]": ...
    def local_path(self, key: str) -> str: ...
    def place_of(self, key: str) -> str: ...
    def directory_of(self, key: str) -> str: ...
    def sibling(self, key: str, name: str) -> str: ...
    # what a command asks instead of which kind of store it has:
    def ledger_path(self) -> str | None: ...  # the archive's own ledger file; None: keeps none
    def for_new_files(self) -> "Store": ...  # where a send or consolidate writes its file
    @property
    def bucket(self) -> "Bucket | None": ...  # what only an object store does; None: a directory


class Bucket(Protocol):
    """What only an object store does, asked of Store.bucket: a directory has none of it, so
    a command that finds None knows there is nothing to thaw, lock, look up or abort (rather
    than calling stubs that answer "nothing")."""

    def left_behind(self, key: str) -> str | None: ...  # what stays once deleted (versions)
    def retained_until(self, key: str) -> "datetime.datetime | None": ...  # object lock
    def retain(self, key: str, mode: str, until: datetime.datetime) -> tuple[str, object]: ...
    def stored(self, key: str) -> dict[str, object]: ...  # checksum, class, version: HEAD
    def hazards(self) -> list[tuple[str, str]]: ...  # lifecycle rules that delete or move
    def frozen(self) -> list[Frozen]: ...  # objects of an archive storage class
    def thaw(self, key: str, days: int, tier: str) -> None: ...
    def upload_state(self, entry: Entry) -> tuple[int, float, bool]: ...  # multipart uploads
    def abort_upload(self, entry: Entry) -> None: ...


class StoreWriter(Protocol):
    """A new file being written (see Writer): fd takes the bytes, commit() keeps them."""

    fd: int
    partial: str  # what it is called while written, for messages

    def sync(self) -> None: ...
    def stored_size(self) -> int: ...
    def stored_sha256(self) -> str | None: ...  # None: not computed (a bucket's)
    def sidecar_digests(self) -> dict[str, str]: ...
    def commit(self) -> None: ...
    def discard(self) -> str | None: ...


def bucket_of(store: Store) -> Bucket:
    """store's object-store operations, for a step only a bucket reaches (an upload it
    listed, a depth or a thaw the command line allows for s3:// only).  Raises ColdError
    naming the place when a directory gets there: a refusal, never a silent "nothing"."""
    if store.bucket is None:
        raise ColdError(f"{store.shown} is a directory, not a bucket: nothing of this kind here")
    return store.bucket


class Unsynced(ColdError):
    """A change was made but its directory could not be synced: it may not survive a crash."""
