"""An archive in an S3 bucket (s3://BUCKET/PREFIX) behind the Store interface of
zverify.cold.store, so that check, send, restore, prune and clean prove a bucket's chains
exactly as a directory's: the same chain model, the same scanner reading every byte.

Keys are the object keys below PREFIX (the same file names as in a directory: sidecars beside
their streams).  PREFIX is one level, as a directory is: a common prefix below it (PREFIX/SUB/)
is an entry like a subdirectory, reported and never read, unless --recursive reads every level
(keys SUB/NAME); s3://BUCKET alone is the bucket's top level.  Configuration is boto3's, as
for every AWS tool: the environment, profiles, ~/.aws/config, AWS_ENDPOINT_URL or
--endpoint-url for S3-compatible servers.

What a bucket is not, and how that is made up for:
- no flock: a bucket has no lock two hosts could share.  A send never overwrites (its upload is
  completed with If-None-Match: *), every read is pinned to the object that was listed
  (If-Match on its ETag, and its version id in a versioned bucket), a deletion is of the very
  version that was proven (or refused), so two commands at once can fail but never lie.
- no .partial file: a send streams into a multipart upload, completed only once the stream
  validated and aborted otherwise.  An upload left by a killed send is listed as NAME.partial
  (a leftover once it has seen no part for IDLE_SECONDS; `cold clean --yes` aborts it).
- no fd: a read is a GET relayed into a pipe by a thread (the C scanner reads fds), resumed
  with ranged GETs after a dropped connection; finish_read() says whether it failed.
- no identity of inode and mtime: an object's is its ETag and version id, carried in the
  FileStamp's inode (a hash of them), with its size and modification time.

Long because: it is one class, S3Store, meeting every operation of the Store interface for a
bucket, each with its make-up for what a bucket lacks (above); split by method, one
interface's one implementation would be scattered.
"""

import contextlib
import datetime
import errno
import hashlib
import os
import stat
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from zverify.cold import names
from zverify.cold.entries import Changed, FileStamp
from zverify.cold.store.base import IN_FLIGHT, Entry, Frozen
from zverify.cold.store.s3api import (
    Listed,
    Location,
    checksum_error,
    code,
    errors,
    make_client,
    status,
    why,
)
from zverify.cold.store.s3io import Feed, Upload
from zverify.errors import ArchiveError, ColdError

IDLE_SECONDS = 3600  # an upload without a new part for this long is no running send's
IDLE_VARIABLE = "ZVERIFY_S3_UPLOAD_IDLE"  # seconds, instead (a send uploads parts far faster)
ARCHIVED = ("GLACIER", "DEEP_ARCHIVE")  # readable only after a RestoreObject ("thaw")


def idle_limit() -> float:
    """Seconds without a new part after which an unfinished upload is a leftover."""
    try:
        return float(os.environ.get(IDLE_VARIABLE, IDLE_SECONDS))
    except ValueError:
        return IDLE_SECONDS


class S3Store:
    """The Store of one bucket prefix (see the module's docstring)."""

    uses_local_files = False

    def __init__(
        self,
        url: str,
        endpoint_url: str | None = None,
        client: Any = None,
        storage_class: str | None = None,
        recursive: bool = False,
    ) -> None:
        """storage_class: what new streams are written as (sidecars stay STANDARD, so that
        --depth metadata can always read them); recursive: the keys below the prefix's
        level too (--recursive), as the directories below an archive directory."""
        self.location = Location.parse(url)
        self.recursive = recursive
        self.storage_class = storage_class
        self.places = [self.location.url]
        self.client = client if client is not None else make_client(endpoint_url)
        self._listed: dict[str, Listed] = {}
        self._older: dict[str, int] = {}  # key -> older versions listed under its latest
        self._deleted: set[str] = set()  # keys whose proven version delete() removed
        self._feeds: dict[int, Feed] = {}
        self.versioned = False

    # -- names ----------------------------------------------------------------------------

    @property
    def shown(self) -> str:
        return self.location.url

    @property
    def deletion(self) -> str:
        """A versioned bucket's deletion removes the proven version (a plain DELETE would
        only hide it behind a delete marker, still stored and billed)."""
        return "version-removed" if self.versioned else "deleted"

    def object_key(self, key: str) -> str:
        return self.location.prefix + key

    def place_of(self, key: str) -> str:
        return self.location.url

    @staticmethod
    def sibling(key: str, name: str) -> str:
        return key[: len(key) - len(os.path.basename(key))] + name

    def local_path(self, key: str) -> str:
        raise ColdError(
            f"{names.shown(key)} is in a bucket: parity and repair read local files only "
            "(copy the archive to a directory for them)"
        )

    directory_of = local_path

    # -- listing --------------------------------------------------------------------------

    def entries(self) -> list[Entry]:
        """The prefix's level, as a directory's entries: every object (its latest version),
        every "subdirectory" (a common prefix, an entry like a directory's subdirectory:
        check reports it, prune refuses) and every unfinished multipart upload (as
        NAME.partial), sorted by key.  With recursive, the objects and uploads below the
        prefix at any depth instead (keys SUB/NAME), as LocalStore walks subdirectories.
        Raises ArchiveError when the bucket cannot be listed."""
        loc = self.location
        try:
            self.versioned = self._versioning() in ("Enabled", "Suspended")
            listed, below = self._objects(self.versioned)
            uploads, below_uploads = self._uploads()
        except errors() as err:
            raise ArchiveError(f"cannot list {loc.url}: {why(err)}") from None
        self._listed = listed
        found = [Entry(key, loc.url, _stat(obj)) for key, obj in listed.items()]
        found += [
            Entry(key, loc.url, _folder_stat(loc.prefix + key)) for key in below | below_uploads
        ]
        found += uploads
        return sorted(found, key=lambda e: e.key)

    def _versioning(self) -> str:
        answer = self.client.get_bucket_versioning(Bucket=self.location.bucket)
        return str(answer.get("Status", ""))

    def _pages(self, listing: str) -> Iterator[dict[str, Any]]:
        """The pages of a listing of the prefix: its level only (Delimiter "/": what is
        below comes as common prefixes, spread over the pages), or with recursive every
        key below it."""
        level = {} if self.recursive else {"Delimiter": "/"}
        return self.client.get_paginator(listing).paginate(  # type: ignore[no-any-return]
            Bucket=self.location.bucket, Prefix=self.location.prefix, **level
        )

    def _subdirectories(self, page: dict[str, Any]) -> set[str]:
        """The common prefixes of a page as keys: SUB for PREFIX/SUB/ (a key of its own:
        "/" alone, for PREFIX//)."""
        start = len(self.location.prefix)
        return {p["Prefix"][start:-1] or "/" for p in page.get("CommonPrefixes", [])}

    def _objects(self, versioned: bool) -> tuple[dict[str, Listed], set[str]]:
        """Each key's object (in a versioned bucket its latest version, unless a delete
        marker hides it), but "folder" markers, which hold nothing; and the subdirectories.
        Remembers how many older versions each key keeps (left_behind())."""
        found: dict[str, Listed] = {}
        below: set[str] = set()
        older: dict[str, set[str]] = {}
        listing, field = (
            ("list_object_versions", "Versions") if versioned else ("list_objects_v2", "Contents")
        )
        for page in self._pages(listing):
            below |= self._subdirectories(page)
            for o in page.get(field, []):
                key = o["Key"][len(self.location.prefix) :]
                if not key or key.endswith("/"):
                    continue
                version = o.get("VersionId") if versioned else None
                if o.get("IsLatest", True):
                    found[key] = Listed(
                        o["ETag"], version, o["Size"], o["LastModified"], o.get("StorageClass", "")
                    )
                else:  # a set: a server may repeat a page's last version on the next page
                    older.setdefault(key, set()).add(str(version))
        self._older = {key: len(versions) for key, versions in older.items() if key in found}
        return found, below

    def _uploads(self) -> tuple[list[Entry], set[str]]:
        found, below = [], set()
        for page in self._pages("list_multipart_uploads"):
            below |= self._subdirectories(page)
            for u in page.get("Uploads", []):
                key = u["Key"][len(self.location.prefix) :] + names.PARTIAL
                st = _stat(Listed(u["UploadId"], None, 0, u["Initiated"], ""))
                found.append(Entry(key, self.location.url, st, upload=u["UploadId"]))
        return found, below

    def upload_state(self, entry: Entry) -> tuple[int, float, bool]:
        """(bytes uploaded, seconds since its last part, whether that makes it a leftover) of
        an unfinished upload."""
        assert entry.upload is not None
        key = self.object_key(entry.key[: -len(names.PARTIAL)])
        pages = self.client.get_paginator("list_parts").paginate(
            Bucket=self.location.bucket, Key=key, UploadId=entry.upload
        )
        size, last = 0, entry.st.st_mtime if entry.st else 0.0
        try:
            for page in pages:
                for p in page.get("Parts", []):
                    size += p["Size"]
                    last = max(last, p["LastModified"].timestamp())
        except errors() as err:
            raise OSError(errno.EIO, why(err)) from None
        idle = time.time() - last
        return size, idle, idle >= idle_limit()

    def abort_upload(self, entry: Entry) -> None:
        assert entry.upload is not None
        key = self.object_key(entry.key[: -len(names.PARTIAL)])
        try:
            self.client.abort_multipart_upload(
                Bucket=self.location.bucket, Key=key, UploadId=entry.upload
            )
        except errors() as err:
            reason = why(err)
            raise ColdError(f"aborting the upload of {names.shown(key)} failed: {reason}") from None

    # -- reading --------------------------------------------------------------------------

    def _pinned(self, key: str, expect: FileStamp | None) -> Listed:
        listed = self._listed.get(key)
        if listed is None:
            raise FileNotFoundError(errno.ENOENT, "not listed", key)
        if expect is not None and listed.identity != expect:
            raise Changed(f"{names.shown(key)} was replaced since it was checked: not read")
        return listed

    def _get(self, key: str, listed: Listed, start: int = 0, end: int | None = None) -> Any:
        """GET of the very object listed (its ETag, its version), from byte start (to end,
        not included)."""
        args = self._naming(key, listed) | {"IfMatch": listed.etag}
        if start or end is not None:
            args["Range"] = f"bytes={start}-{'' if end is None else end - 1}"
        try:
            return self.client.get_object(**args)["Body"]
        except errors() as err:
            if status(err) == 412 or code(err) == "PreconditionFailed":
                reason = "was replaced since it was listed: not read"
                raise Changed(f"{names.shown(key)} {reason}") from None
            if status(err) == 404:
                raise FileNotFoundError(errno.ENOENT, "gone since it was listed") from None
            if code(err) == "InvalidObjectState":
                reason = f"in {listed.storage_class or 'an archive class'}: thaw it first"
                raise OSError(errno.EIO, reason) from None
            raise OSError(errno.EIO, why(err)) from None

    def open_read(self, key: str, expect: FileStamp | None = None) -> int:
        """The read end of a pipe a thread fills with the object's bytes.  Raises OSError,
        Changed (the object is not the one listed)."""
        listed = self._pinned(key, expect)
        feed = Feed(lambda start: self._get(key, listed, start), listed.size)
        self._feeds[feed.fd] = feed
        return feed.fd

    def open_ranged(self, key: str, expect: FileStamp | None = None) -> int:
        raise OSError(errno.EOPNOTSUPP, "ranged reads of a bucket object are not supported")

    def finish_read(self, key: str, fd: int) -> FileStamp:
        """Close fd (of open_read, read to its end or not): the identity of what was read.
        Raises OSError when the object could not be read whole (the connection dropped more
        often than it could be resumed): the scanner saw a cut stream, not the object."""
        feed = self._feeds.pop(fd)
        os.close(fd)  # a feeding thread still writing gets EPIPE and stops
        feed.join()
        if feed.damaged is not None:
            raise DamagedAtRest(feed.damaged)
        if feed.error is not None:
            raise OSError(errno.EIO, feed.error)
        return self._listed[key].identity

    def read_small(self, key: str, expect: FileStamp | None, limit: int) -> bytes:
        """A small object whole (a sidecar).  Raises OSError, Changed."""
        listed = self._pinned(key, expect)
        if listed.size > limit:
            raise OSError(errno.EFBIG, f"{listed.size} bytes, more than a sidecar's {limit}")
        body = self._get(key, listed)
        try:
            return bytes(body.read())
        except errors() as err:
            raise OSError(errno.EIO, why(err)) from None

    def read_range(self, key: str, expect: FileStamp | None, offset: int, length: int) -> bytes:
        """length bytes from offset (fewer at the object's end) by a ranged GET of the very
        object listed.  Raises OSError (a short answer too), Changed, DamagedAtRest (a range
        that is the whole object is held to the checksum stored with it, and failed)."""
        listed = self._pinned(key, expect)
        end = min(listed.size, offset + length)
        if offset >= end:
            return b""
        body = self._get(key, listed, offset, end)
        try:
            data = bytes(body.read())
        except checksum_error() as err:  # a range of the whole object: checked like a GET
            said = f"the bytes served do not match the checksum stored: {err}"
            raise DamagedAtRest(said) from None
        except errors() as err:
            raise OSError(errno.EIO, why(err)) from None
        if len(data) != end - offset:
            raise OSError(errno.EIO, f"{len(data):,} bytes served of {end - offset:,} asked")
        return data

    # -- changing -------------------------------------------------------------------------

    def writer(self, key: str) -> Upload:
        """A new object key (never over an existing one), as a multipart upload of the
        store's storage class (a sidecar or a manifest, read without a restore: STANDARD)."""
        if self.head(key) is not None:
            raise ColdError(f"{names.shown(key)} already exists in {self.shown}: not overwritten")
        sidecar = key.endswith((names.SIDECAR, names.MANIFEST))
        kind = {"StorageClass": self.storage_class} if self.storage_class and not sidecar else {}
        return Upload(self.client, self.location.bucket, key, self.location.prefix, kind)

    def head(self, key: str, version: str | None = None) -> dict[str, Any] | None:
        args: dict[str, Any] = {"Bucket": self.location.bucket, "Key": self.object_key(key)}
        if version:
            args["VersionId"] = version
        try:
            return dict(self.client.head_object(**args))
        except errors() as err:
            if status(err) == 404:
                return None
            raise OSError(errno.EIO, why(err)) from None

    def hazards(self) -> list[tuple[str, str]]:
        """(kind, message) for each enabled lifecycle rule that expires objects of the prefix
        by age: age knows no chain, so it deletes a full while the incrementals that need it
        stay, and once sends stop it deletes everything.  A server without lifecycle rules
        (NotImplemented) has none; rules that cannot be read are "lifecycle-unknown" (not
        verified; prune is not blocked: it deletes only what it proves)."""
        try:
            answer = self.client.get_bucket_lifecycle_configuration(Bucket=self.location.bucket)
        except errors() as err:
            if code(err) in ("NoSuchLifecycleConfiguration", "NotImplemented"):
                return []
            reason = f"the bucket's lifecycle rules cannot be read ({why(err)})"
            return [
                ("lifecycle-unknown", f"{reason}: whether one expires the archive is not known")
            ]
        expiring = [self._expiring(rule) for rule in answer.get("Rules", [])]
        return [("lifecycle", message) for message in expiring if message]

    def _expiring(self, rule: dict[str, Any]) -> str | None:
        """Why rule can delete a current object of the prefix, or None."""
        expiration = rule.get("Expiration", {})
        when = expiration.get("Days") or expiration.get("Date")
        if rule.get("Status") != "Enabled" or not when:
            return None
        scope = rule.get("Filter", {})
        scope = scope.get("And", scope)
        prefix = scope.get("Prefix", rule.get("Prefix", ""))
        mine = self.location.prefix
        if not (mine.startswith(prefix) or prefix.startswith(mine)):
            return None
        after = f"after {when} days" if expiration.get("Days") else f"on {when:%Y-%m-%d}"
        return (
            f"bucket lifecycle rule {rule.get('ID', '(unnamed)')!r} expires objects under "
            f"{prefix or 'the whole bucket'!r} {after}: by age, blind to chains, it deletes a "
            "full while incrementals that need it stay (`cold prune` removes only what no "
            "kept chain needs)"
        )

    def frozen(self) -> list[Frozen]:
        """Every object listed (entries()) in an archive storage class, with its thaw state
        from HEAD's Restore header (16 HEADs in flight: a prefix may hold thousands).  Raises
        OSError."""
        archived = [(k, v) for k, v in sorted(self._listed.items()) if v.storage_class in ARCHIVED]

        def one(item: tuple[str, Listed]) -> Frozen:
            key, listed = item
            restore = str((self.head(key, listed.version) or {}).get("Restore") or "")
            state = (
                "frozen"
                if not restore
                else "thawing"
                if 'ongoing-request="true"' in restore
                else "thawed"
            )
            return Frozen(key, listed.size, listed.storage_class, state)

        with ThreadPoolExecutor(IN_FLIGHT) as pool:
            return list(pool.map(one, archived))

    def thaw(self, key: str, days: int, tier: str) -> None:
        """Ask for a readable copy of an archived object for days (RestoreObject).  Raises
        ColdError when the server refuses (one that cannot thaw says NotImplemented)."""
        listed = self._listed[key]
        args = self._naming(key, listed)
        request = {"Days": days, "GlacierJobParameters": {"Tier": tier}}
        try:
            self.client.restore_object(RestoreRequest=request, **args)
        except errors() as err:
            if code(err) == "RestoreAlreadyInProgress":
                return
            raise ColdError(f"thawing {names.shown(key)} failed: {why(err)}") from None

    def stored(self, key: str) -> dict[str, object]:
        """What HEAD says of the version listed: its stored CRC-32 and SHA-256, each named
        by its algorithm (either may be None; composite "...-N" for a multipart upload),
        storage class, version and lock.  Raises OSError."""
        listed = self._listed[key]
        args = self._naming(key, listed)
        try:
            head = self.client.head_object(ChecksumMode="ENABLED", **args)
        except errors() as err:
            raise OSError(errno.EIO, why(err)) from None
        until = head.get("ObjectLockRetainUntilDate")
        return {
            "checksum_crc32": head.get("ChecksumCRC32"),
            "checksum_sha256": head.get("ChecksumSHA256"),
            "storage_class": head.get("StorageClass") or listed.storage_class or "STANDARD",
            "version": listed.version,
            "retain_until": until.isoformat() if until else None,
            "legal_hold": head.get("ObjectLockLegalHoldStatus") == "ON",
        }

    def ensure_unchanged(self, key: str, expect: FileStamp | None) -> None:
        """Raises ColdError unless key is still the object that was proven (same ETag, size
        and version), OSError when it cannot be asked."""
        listed = self._listed.get(key)
        now = self.head(key)
        same = (
            listed is not None
            and expect is not None
            and listed.identity == expect
            and now is not None
            and now.get("ETag") == listed.etag
            and now.get("VersionId") in (None, listed.version)
            and now.get("ContentLength") == listed.size
        )
        if not same:
            raise ColdError(
                f"{names.shown(key)} is not the object that was verified any more (replaced or "
                "changed since): not deleted"
            )

    def retained_until(self, key: str) -> datetime.datetime | None:
        """The object lock's retain-until date of the version listed, when still ahead."""
        listed = self._listed.get(key)
        now = self.head(key, listed.version if listed else None)
        until = (now or {}).get("ObjectLockRetainUntilDate")
        held = (now or {}).get("ObjectLockLegalHoldStatus") == "ON"
        if held:
            return datetime.datetime.max.replace(tzinfo=datetime.UTC)
        if until is not None and until > datetime.datetime.now(datetime.UTC):
            return until  # type: ignore[no-any-return]
        return None

    def retain(self, key: str, mode: str, until: datetime.datetime) -> tuple[str, object]:
        """Extend the object lock of the version listed to until (never shorten it; a
        COMPLIANCE lock stays COMPLIANCE).  Returns (status, retain-until before): status
        kept when it already reaches until, extended otherwise.  Raises ColdError."""
        listed = self._listed[key]
        args = self._naming(key, listed)
        try:
            now = self.client.get_object_retention(**args).get("Retention") or {}
        except errors() as err:
            if code(err) != "NoSuchObjectLockConfiguration":
                raise ColdError(f"reading the lock of {names.shown(key)}: {why(err)}") from None
            now = {}
        before = now.get("RetainUntilDate")
        if before is not None and before >= until:
            return "kept", before
        mode = "COMPLIANCE" if now.get("Mode") == "COMPLIANCE" else mode
        try:
            self.client.put_object_retention(
                Retention={"Mode": mode, "RetainUntilDate": until}, **args
            )
        except errors() as err:
            raise ColdError(f"locking {names.shown(key)} failed: {why(err)}") from None
        return "extended", before

    def delete(self, key: str, expect: FileStamp) -> None:
        """Delete the very object version that was proven.  In a versioned bucket this
        removes that version (a delete without one would only hide it behind a delete marker,
        still stored and billed); an object lock that refuses is Locked, never worked around."""
        self.ensure_unchanged(key, expect)
        listed = self._listed[key]
        until = self.retained_until(key)
        if until is not None:
            raise Locked(key, until)
        self._delete_listed(key, listed)
        self._deleted.add(key)

    def left_behind(self, key: str) -> str | None:
        """What of key stays in the bucket once its proven version is deleted, in words, or
        None: in a versioned bucket its older versions, the newest of which becomes current
        (never read) unless a delete marker is newer.  Before the deletion, as listed; after
        it, as a HEAD finds the key now."""
        older = self._older.get(key, 0)
        if not older:
            return None
        stays = f"{older} older version(s) stay in the bucket (versioning)"
        if key not in self._deleted:
            return (
                f"{stays}: the newest becomes current, never read, unless a delete marker hides it"
            )
        try:
            now = self.head(key)
        except OSError as err:
            return f"{stays}; whether one is current now cannot be asked ({err.strerror})"
        if now is None:
            return f"{stays}, hidden behind a delete marker (still stored)"
        when = now.get("LastModified")
        of = f" of {when:%Y-%m-%d %H:%M}" if when else ""
        return (
            f"{stays}: version {now.get('VersionId')} ({now.get('ContentLength', 0):,} bytes{of}) "
            "is current now, never read: the next `zverify cold check` judges it"
        )

    def delete_aside(self, key: str) -> None:
        """A sidecar's or parity's object, when there is one."""
        listed = self._listed.get(key)
        if listed is not None:
            self._delete_listed(key, listed)

    def _delete_listed(self, key: str, listed: Listed) -> None:
        """DeleteObject of the version listed (raises OSError)."""
        try:
            self.client.delete_object(**self._naming(key, listed))
        except errors() as err:
            raise OSError(errno.EIO, why(err)) from None

    def _naming(self, key: str, listed: Listed | None) -> dict[str, Any]:
        """The arguments that name the very object listed: bucket, key and its version."""
        args: dict[str, Any] = {"Bucket": self.location.bucket, "Key": self.object_key(key)}
        return args | ({"VersionId": listed.version} if listed and listed.version else {})

    def ledger_path(self) -> None:
        """A bucket keeps no ledger of its own: a local file is given with --ledger."""
        return None

    def for_new_files(self) -> "S3Store":
        return self

    @property
    def bucket(self) -> "S3Store":
        """Every object-store operation (base.Bucket) is this store's own."""
        return self

    @contextlib.contextmanager
    def lock(self, how: str, wait: float = 0) -> Iterator[None]:
        """No lock: a bucket has none that two hosts share (the module's docstring says what
        stands in for it)."""
        yield


class DamagedAtRest(ColdError):
    """The bytes a GET served are not those the server stored a checksum of at upload."""


class Locked(ColdError):
    """An object lock (retention or legal hold) refuses the deletion of a version."""

    def __init__(self, key: str, until: datetime.datetime) -> None:
        self.key, self.until = key, until
        when = "under a legal hold" if until.year == 9999 else f"locked until {until:%Y-%m-%d}"
        super().__init__(f"{names.shown(key)} is {when}: not deleted")


def _folder_stat(prefix: str) -> os.stat_result:
    """A common prefix as an lstat() would describe a directory (its inode a hash of it)."""
    ino = int.from_bytes(hashlib.sha256(prefix.encode()).digest()[:8], "big") >> 1
    return os.stat_result((stat.S_IFDIR | 0o700, ino, 0, 1, 0, 0, 0, 0, 0, 0))


def _stat(listed: Listed) -> os.stat_result:
    """An object as an lstat() would describe a regular file: mode, size, modification time
    and, in the inode, its ETag and version (Listed.identity)."""
    i = listed.identity
    seconds = i.mtime_ns // 1_000_000_000
    return os.stat_result(
        (stat.S_IFREG | 0o600, i.ino, i.dev, 1, 0, 0, listed.size, seconds, seconds, seconds)
        + (i.mtime_ns / 1e9,) * 3
        + (i.mtime_ns,) * 3
    )
