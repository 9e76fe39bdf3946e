"""An archive in an S3 bucket (s3://BUCKET/PREFIX) behind the Store interface of
zverify.cold.store, so that check, send, restore, prune and clean prove a bucket's chains
exactly as a directory's: the same chain model, the same scanner reading every byte.

Keys are the object keys below PREFIX (the same file names as in a directory: sidecars beside
their streams).  Configuration is boto3's, as for every AWS tool: the environment, profiles,
~/.aws/config, AWS_ENDPOINT_URL or --endpoint-url for S3-compatible servers.

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
  Identity's inode (a hash of them), with its size and modification time.
"""

import base64
import contextlib
import datetime
import errno
import hashlib
import os
import queue
import stat
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from zverify.cold import names
from zverify.cold.entries import Changed, Identity
from zverify.cold.store import Entry, Frozen
from zverify.errors import ArchiveError, ColdError

try:  # the s3 extra: only this module imports it, and only `cold` with an s3:// URL this
    import boto3
    import xxhash
    from botocore.config import Config
    from botocore.exceptions import BotoCoreError, ClientError, FlexibleChecksumError
except ImportError:
    boto3 = None

SCHEME = "s3://"
IDLE_SECONDS = 3600  # an upload without a new part for this long is no running send's
IDLE_VARIABLE = "ZVERIFY_S3_UPLOAD_IDLE"  # seconds, instead (a send uploads parts far faster)
RESUMES = 5  # ranged GETs in a row that read nothing, before a read is given up
FIRST_PART = 8 << 20  # parts grow: 8 MiB x 1000, 16 MiB x 1000, ... reach S3's 5 TiB object
MAX_PART = 5 << 30
CHUNK = 1 << 20


def idle_limit() -> float:
    """Seconds without a new part after which an unfinished upload is a leftover."""
    try:
        return float(os.environ.get(IDLE_VARIABLE, IDLE_SECONDS))
    except ValueError:
        return IDLE_SECONDS


def is_url(text: str) -> bool:
    return text.startswith(SCHEME)


def part_size(number: int) -> int:
    """The size of part number (1-based) of a stream of unknown length: doubled every 1000
    parts, so that 10,000 parts hold 7.9 TiB (S3 allows 5 TiB) while a stream of a few GiB
    never holds more than 8 MiB in memory."""
    return min(MAX_PART, FIRST_PART << ((number - 1) // 1000))


@dataclass(frozen=True)
class Location:
    bucket: str
    prefix: str  # "" or ending in "/"

    @classmethod
    def parse(cls, url: str) -> "Location":
        rest = url[len(SCHEME) :]
        bucket, _, prefix = rest.partition("/")
        if not bucket:
            raise ArchiveError(f"{url!r} names no bucket: give s3://BUCKET[/PREFIX]")
        prefix = prefix.strip("/")
        return cls(bucket, prefix + "/" if prefix else "")

    @property
    def url(self) -> str:
        return f"{SCHEME}{self.bucket}/{self.prefix}"


@dataclass(frozen=True)
class Listed:
    """One object as listed: what a read or a deletion must find again."""

    etag: str
    version: str | None
    size: int
    modified: datetime.datetime
    storage_class: str

    @property
    def identity(self) -> Identity:
        pinned = hashlib.sha256(f"{self.etag}\0{self.version or ''}".encode()).digest()
        ns = int(self.modified.timestamp() * 1_000_000_000)
        return Identity(0, int.from_bytes(pinned[:8], "big") >> 1, self.size, ns)


def make_client(endpoint_url: str | None = None) -> Any:
    """A boto3 S3 client configured the AWS way (raises ArchiveError when boto3 is missing)."""
    if boto3 is None:
        raise ArchiveError(
            "s3:// archives need the s3 extra: pip install 'zverify[s3]' (boto3, xxhash)"
        )
    # enough connections for --depth metadata's concurrent requests (metadata.CONCURRENT)
    config = Config(retries={"max_attempts": 5, "mode": "standard"}, max_pool_connections=16)
    return boto3.client("s3", endpoint_url=endpoint_url, config=config)


def _code(err: BaseException) -> str:
    response = getattr(err, "response", None) or {}
    return str(response.get("Error", {}).get("Code", ""))


def _status(err: BaseException) -> int:
    response = getattr(err, "response", None) or {}
    return int(response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)


def _why(err: BaseException) -> str:
    response = getattr(err, "response", None) or {}
    message = response.get("Error", {}).get("Message")
    code = _code(err)
    return f"{code}: {message}" if code and message else code or str(err) or type(err).__name__


def _errors() -> tuple[type[BaseException], ...]:
    """What boto3 raises for a failed request or a dropped connection."""
    return (ClientError, BotoCoreError, OSError)


ARCHIVED = ("GLACIER", "DEEP_ARCHIVE")  # readable only after a RestoreObject ("thaw")


def _checksum_error() -> type[BaseException]:
    """What botocore raises when a body fails the checksum S3 stored with the object."""
    return FlexibleChecksumError  # type: ignore[no-any-return]


class S3Store:
    """The Store of one bucket prefix (see the module's docstring)."""

    recursive = False
    uses_local_files = False

    def __init__(
        self,
        url: str,
        endpoint_url: str | None = None,
        client: Any = None,
        storage_class: str | None = None,
    ) -> None:
        """storage_class: what new streams are written as (sidecars stay STANDARD, so that
        --depth metadata can always read them)."""
        self.location = Location.parse(url)
        self.storage_class = storage_class
        self.places = [self.location.url]
        self.client = client if client is not None else make_client(endpoint_url)
        self._listed: dict[str, Listed] = {}
        self._feeds: dict[int, _Feed] = {}
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
        """Every object below the prefix (its latest version) and every unfinished multipart
        upload (as NAME.partial), sorted by key.  Raises ArchiveError when the bucket cannot
        be listed."""
        loc = self.location
        try:
            self.versioned = self._versioning() in ("Enabled", "Suspended")
            listed = self._objects(self.versioned)
            uploads = self._uploads()
        except _errors() as err:
            raise ArchiveError(f"cannot list {loc.url}: {_why(err)}") from None
        self._listed = listed
        found = [Entry(key, loc.url, _stat(obj)) for key, obj in listed.items()]
        found += uploads
        return sorted(found, key=lambda e: e.key)

    def _versioning(self) -> str:
        answer = self.client.get_bucket_versioning(Bucket=self.location.bucket)
        return str(answer.get("Status", ""))

    def _objects(self, versioned: bool) -> dict[str, Listed]:
        """Each key's object (in a versioned bucket its latest version, unless a delete
        marker hides it), but "folder" markers, which hold nothing."""
        found: dict[str, Listed] = {}
        listing, field = (
            ("list_object_versions", "Versions") if versioned else ("list_objects_v2", "Contents")
        )
        pages = self.client.get_paginator(listing).paginate(
            Bucket=self.location.bucket, Prefix=self.location.prefix
        )
        for page in pages:
            for o in page.get(field, []):
                key = o["Key"][len(self.location.prefix) :]
                if key and not key.endswith("/") and o.get("IsLatest", True):
                    version = o.get("VersionId") if versioned else None
                    found[key] = Listed(
                        o["ETag"], version, o["Size"], o["LastModified"], o.get("StorageClass", "")
                    )
        return found

    def _uploads(self) -> list[Entry]:
        found = []
        pages = self.client.get_paginator("list_multipart_uploads").paginate(
            Bucket=self.location.bucket, Prefix=self.location.prefix
        )
        for page in pages:
            for u in page.get("Uploads", []):
                key = u["Key"][len(self.location.prefix) :] + names.PARTIAL
                st = _stat(Listed(u["UploadId"], None, 0, u["Initiated"], ""))
                found.append(Entry(key, self.location.url, st, upload=u["UploadId"]))
        return found

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
        except _errors() as err:
            raise OSError(errno.EIO, _why(err)) from None
        idle = time.time() - last
        return size, idle, idle >= idle_limit()

    def abort_upload(self, entry: Entry) -> None:
        assert entry.upload is not None
        key = self.object_key(entry.key[: -len(names.PARTIAL)])
        try:
            self.client.abort_multipart_upload(
                Bucket=self.location.bucket, Key=key, UploadId=entry.upload
            )
        except _errors() as err:
            why = _why(err)
            raise ColdError(f"aborting the upload of {names.shown(key)} failed: {why}") from None

    # -- reading --------------------------------------------------------------------------

    def _pinned(self, key: str, expect: Identity | None) -> Listed:
        listed = self._listed.get(key)
        if listed is None:
            raise FileNotFoundError(errno.ENOENT, "not listed", key)
        if expect is not None and listed.identity != expect:
            raise Changed(f"{names.shown(key)} was replaced since it was checked: not read")
        return listed

    def _get(self, key: str, listed: Listed, start: int = 0) -> Any:
        """GET of the very object listed (its ETag, its version), from byte start."""
        args: dict[str, Any] = {"Bucket": self.location.bucket, "Key": self.object_key(key)}
        args["IfMatch"] = listed.etag
        if listed.version:
            args["VersionId"] = listed.version
        if start:
            args["Range"] = f"bytes={start}-"
        try:
            return self.client.get_object(**args)["Body"]
        except _errors() as err:
            if _status(err) == 412 or _code(err) == "PreconditionFailed":
                why = "was replaced since it was listed: not read"
                raise Changed(f"{names.shown(key)} {why}") from None
            if _status(err) == 404:
                raise FileNotFoundError(errno.ENOENT, "gone since it was listed") from None
            if _code(err) == "InvalidObjectState":
                why = f"in {listed.storage_class or 'an archive class'}: thaw it first"
                raise OSError(errno.EIO, why) from None
            raise OSError(errno.EIO, _why(err)) from None

    def open_read(self, key: str, expect: Identity | None = None) -> int:
        """The read end of a pipe a thread fills with the object's bytes.  Raises OSError,
        Changed (the object is not the one listed)."""
        listed = self._pinned(key, expect)
        body = self._get(key, listed)
        feed = _Feed(self, key, listed, body)
        self._feeds[feed.fd] = feed
        return feed.fd

    def open_ranged(self, key: str, expect: Identity | None = None) -> int:
        raise OSError(errno.EOPNOTSUPP, "ranged reads of a bucket object are not supported")

    def finish_read(self, key: str, fd: int) -> Identity:
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
        return feed.listed.identity

    def read_small(self, key: str, expect: Identity | None, limit: int) -> bytes:
        """A small object whole (a sidecar).  Raises OSError, Changed."""
        listed = self._pinned(key, expect)
        if listed.size > limit:
            raise OSError(errno.EFBIG, f"{listed.size} bytes, more than a sidecar's {limit}")
        body = self._get(key, listed)
        try:
            return bytes(body.read())
        except _errors() as err:
            raise OSError(errno.EIO, _why(err)) from None

    # -- changing -------------------------------------------------------------------------

    def writer(self, key: str) -> "S3Writer":
        return S3Writer(self, key)

    def head(self, key: str, version: str | None = None) -> dict[str, Any] | None:
        args: dict[str, Any] = {"Bucket": self.location.bucket, "Key": self.object_key(key)}
        if version:
            args["VersionId"] = version
        try:
            return dict(self.client.head_object(**args))
        except _errors() as err:
            if _status(err) == 404:
                return None
            raise OSError(errno.EIO, _why(err)) from None

    def hazards(self) -> list[tuple[str, str]]:
        """(kind, message) for each enabled lifecycle rule that expires objects of the prefix
        by age: age knows no chain, so it deletes a full while the incrementals that need it
        stay, and once sends stop it deletes everything.  A server without lifecycle rules
        (NotImplemented) has none; rules that cannot be read are "lifecycle-unknown" (not
        verified; prune is not blocked: it deletes only what it proves)."""
        try:
            answer = self.client.get_bucket_lifecycle_configuration(Bucket=self.location.bucket)
        except _errors() as err:
            if _code(err) in ("NoSuchLifecycleConfiguration", "NotImplemented"):
                return []
            why = f"the bucket's lifecycle rules cannot be read ({_why(err)})"
            return [("lifecycle-unknown", f"{why}: whether one expires the archive is not known")]
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
        from HEAD's Restore header.  Raises OSError."""
        found = []
        for key, listed in sorted(self._listed.items()):
            if listed.storage_class not in ARCHIVED:
                continue
            restore = str((self.head(key, listed.version) or {}).get("Restore") or "")
            state = (
                "frozen"
                if not restore
                else "thawing"
                if 'ongoing-request="true"' in restore
                else "thawed"
            )
            found.append(Frozen(key, listed.size, listed.storage_class, state))
        return found

    def thaw(self, key: str, days: int, tier: str) -> None:
        """Ask for a readable copy of an archived object for days (RestoreObject).  Raises
        ColdError when the server refuses (one that cannot thaw says NotImplemented)."""
        listed = self._listed[key]
        args: dict[str, Any] = {"Bucket": self.location.bucket, "Key": self.object_key(key)}
        args |= {"VersionId": listed.version} if listed.version else {}
        request = {"Days": days, "GlacierJobParameters": {"Tier": tier}}
        try:
            self.client.restore_object(RestoreRequest=request, **args)
        except _errors() as err:
            if _code(err) == "RestoreAlreadyInProgress":
                return
            raise ColdError(f"thawing {names.shown(key)} failed: {_why(err)}") from None

    def stored(self, key: str) -> dict[str, object]:
        """What HEAD says of the version listed: its stored SHA-256 (composite for a
        multipart upload), storage class, version and lock.  Raises OSError."""
        listed = self._listed[key]
        args: dict[str, Any] = {"Bucket": self.location.bucket, "Key": self.object_key(key)}
        args |= {"VersionId": listed.version} if listed.version else {}
        try:
            head = self.client.head_object(ChecksumMode="ENABLED", **args)
        except _errors() as err:
            raise OSError(errno.EIO, _why(err)) from None
        until = head.get("ObjectLockRetainUntilDate")
        return {
            "checksum_sha256": head.get("ChecksumSHA256"),
            "storage_class": head.get("StorageClass") or listed.storage_class or "STANDARD",
            "version": listed.version,
            "retain_until": until.isoformat() if until else None,
            "legal_hold": head.get("ObjectLockLegalHoldStatus") == "ON",
        }

    def ensure_unchanged(self, key: str, expect: Identity | None) -> None:
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
        args: dict[str, Any] = {"Bucket": self.location.bucket, "Key": self.object_key(key)}
        args |= {"VersionId": listed.version} if listed.version else {}
        try:
            now = self.client.get_object_retention(**args).get("Retention") or {}
        except _errors() as err:
            if _code(err) != "NoSuchObjectLockConfiguration":
                raise ColdError(f"reading the lock of {names.shown(key)}: {_why(err)}") from None
            now = {}
        before = now.get("RetainUntilDate")
        if before is not None and before >= until:
            return "kept", before
        mode = "COMPLIANCE" if now.get("Mode") == "COMPLIANCE" else mode
        try:
            self.client.put_object_retention(
                Retention={"Mode": mode, "RetainUntilDate": until}, **args
            )
        except _errors() as err:
            raise ColdError(f"locking {names.shown(key)} failed: {_why(err)}") from None
        return "extended", before

    def delete(self, key: str, expect: Identity) -> None:
        """Delete the very object version that was proven.  In a versioned bucket this
        removes that version (a delete without one would only hide it behind a delete marker,
        still stored and billed); an object lock that refuses is Locked, never worked around."""
        self.ensure_unchanged(key, expect)
        listed = self._listed[key]
        until = self.retained_until(key)
        if until is not None:
            raise Locked(key, until)
        args: dict[str, Any] = {"Bucket": self.location.bucket, "Key": self.object_key(key)}
        if listed.version:
            args["VersionId"] = listed.version
        try:
            self.client.delete_object(**args)
        except _errors() as err:
            raise OSError(errno.EIO, _why(err)) from None

    def delete_aside(self, key: str) -> None:
        """A sidecar's or parity's object, when there is one."""
        listed = self._listed.get(key)
        if listed is None:
            return
        args: dict[str, Any] = {"Bucket": self.location.bucket, "Key": self.object_key(key)}
        if listed.version:
            args["VersionId"] = listed.version
        try:
            self.client.delete_object(**args)
        except _errors() as err:
            raise OSError(errno.EIO, _why(err)) from None

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


class _Feed:
    """A thread copying an object's body into a pipe; a dropped connection resumes with a
    ranged GET of the same version from the byte it stopped at, for as long as each gets
    further (RESUMES in a row that read nothing end it)."""

    def __init__(self, store: S3Store, key: str, listed: Listed, body: Any) -> None:
        self.store, self.key, self.listed = store, key, listed
        self.error: str | None = None
        self.damaged: str | None = None  # the body failed the checksum stored with it
        r, self._w = os.pipe()
        self.fd = r
        self._thread = threading.Thread(target=self._run, args=(body,), daemon=True)
        self._thread.start()

    def join(self) -> None:
        self._thread.join()

    def _run(self, body: Any) -> None:
        done, resumed, at = 0, 0, 0
        try:
            while True:
                try:
                    while chunk := body.read(CHUNK):
                        _write_all(self._w, chunk)
                        done += len(chunk)
                    if done == self.listed.size:
                        return
                    why = f"the object ended at byte {done} of {self.listed.size}"
                except BrokenPipeError:
                    return  # the reader stopped (a bad record): nothing more is wanted
                except _checksum_error() as err:  # read whole, and not what was stored
                    self.damaged = "the bytes served do not match the checksum the server "
                    self.damaged += f"stored at upload ({err}): changed at rest"
                    return
                except _errors() as err:
                    why = f"{_why(err)} at byte {done}"
                resumed, at = (0 if done > at else resumed), done
                if resumed == RESUMES:
                    self.error = f"{why}, after {RESUMES} resumed reads that read nothing"
                    return
                resumed += 1
                time.sleep(min(2**resumed / 4, 4))
                try:
                    body = self.store._get(self.key, self.listed, done)
                except (OSError, Changed) as err:
                    self.error = f"{why}; resuming: {err}"
                    return
        except BaseException as err:  # never leave the reader waiting without a reason
            self.error = f"{type(err).__name__}: {err}"
        finally:
            os.close(self._w)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class S3Writer:
    """A new object written as a multipart upload fed through a pipe (fd): parts are sent as
    they fill, each with its SHA-256 (a part corrupted on the way is refused by the server);
    commit() completes the upload (never over an existing object) and proves that the object
    stored is every byte written; discard() aborts it, leaving nothing that counts."""

    def __init__(self, store: S3Store, key: str) -> None:
        self.store, self.key = store, key
        self.partial = f"{store.location.url}{key} (upload)"
        self.final = key
        self._bucket, self._object = store.location.bucket, store.object_key(key)
        if store.head(key) is not None:
            raise ColdError(f"{names.shown(key)} already exists in {store.shown}: not overwritten")
        try:
            kind = (
                {}
                if key.endswith(names.SIDECAR) or not store.storage_class
                else {"StorageClass": store.storage_class}
            )
            self._upload = store.client.create_multipart_upload(
                Bucket=self._bucket, Key=self._object, ChecksumAlgorithm="SHA256", **kind
            )["UploadId"]
        except _errors() as err:
            raise ColdError(f"cannot start the upload of {names.shown(key)}: {_why(err)}") from None
        r, self.fd = os.pipe()
        self._parts: list[dict[str, Any]] = []
        self._digest = hashlib.sha256()
        self._xxh = xxhash.xxh3_128()
        self.size = 0
        self.error: str | None = None
        self._queue: queue.Queue[tuple[int, bytes] | None] = queue.Queue(maxsize=1)
        self._reader = threading.Thread(target=self._read, args=(r,), daemon=True)
        self._sender = threading.Thread(target=self._send, daemon=True)
        self._reader.start()
        self._sender.start()
        self._done = False

    # the reader fills parts from the pipe while the sender uploads the previous one
    def _read(self, r: int) -> None:
        number = 1
        try:
            while True:
                part = _read_part(r, part_size(number))
                if part is None:
                    return
                self._digest.update(part)
                self._xxh.update(part)
                self.size += len(part)
                self._queue.put((number, part))
                number += 1
                if self.error is not None:
                    return
        except OSError as err:
            self.error = f"reading the stream: {err.strerror}"
        finally:
            os.close(r)  # a writer still writing gets EPIPE: the relay stops and says so
            self._queue.put(None)

    def _send(self) -> None:
        """Upload each part the reader queues; after a failure only drain the queue (the
        reader sees the error and stops), so that neither thread ever waits for the other."""
        while (item := self._queue.get()) is not None:
            if self.error is not None:
                continue
            try:
                self._parts.append(self._upload_part(*item))
            except BaseException as err:
                why = _why(err) if isinstance(err, _errors()) else f"{type(err).__name__}: {err}"
                self.error = f"uploading part {item[0]}: {why}"

    def _upload_part(self, number: int, part: bytes) -> dict[str, Any]:
        checksum = base64.b64encode(hashlib.sha256(part).digest()).decode()
        answer = self.store.client.upload_part(
            Bucket=self._bucket,
            Key=self._object,
            UploadId=self._upload,
            PartNumber=number,
            Body=part,
            ChecksumSHA256=checksum,
        )
        return {"PartNumber": number, "ETag": answer["ETag"], "ChecksumSHA256": checksum}

    def sync(self) -> None:
        """Every byte written is uploaded (the pipe closed, the threads done); raises
        ColdError when an upload failed."""
        if self._done:
            return
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        self._reader.join()
        self._sender.join()
        self._done = True
        if self.error is not None:
            raise ColdError(f"uploading {names.shown(self.key)} failed: {self.error}")

    def stored_size(self) -> int:
        self.sync()
        return self.size

    def stored_sha256(self) -> str:
        self.sync()
        return self._digest.hexdigest()

    def sidecar_digests(self) -> dict[str, str]:
        """The composite SHA-256 the bucket reports of the object (--depth metadata holds it
        to the sidecar) and the stream's XXH3-128: S3's XXHASH128 of it, `xxhsum -H2`."""
        return {"s3_checksum_sha256": self.composite(), "xxh3_128": self._xxh.hexdigest()}

    def composite(self) -> str:
        """S3's composite SHA-256 of the parts: what the stored object must report."""
        joined = b"".join(base64.b64decode(p["ChecksumSHA256"]) for p in self._parts)
        return base64.b64encode(hashlib.sha256(joined).digest()).decode() + f"-{len(self._parts)}"

    def commit(self) -> None:
        """Complete the upload (If-None-Match: never over an object that appeared meanwhile)
        and prove the stored object holds what was written: its size and the composite of
        the part checksums the server verified on receipt."""
        self.sync()
        client = self.store.client
        try:
            if not self._parts:  # an empty object: S3 wants one part at least
                self._parts.append(self._upload_part(1, b""))
            done = client.complete_multipart_upload(
                Bucket=self._bucket,
                Key=self._object,
                UploadId=self._upload,
                MultipartUpload={"Parts": self._parts},
                IfNoneMatch="*",
            )
        except _errors() as err:
            why = _why(err)
            raise ColdError(f"completing the upload of {names.shown(self.key)}: {why}") from None
        self._upload = ""
        wrong = self._stored_wrongly(done.get("VersionId"))
        if wrong is not None:
            try:
                version = {"VersionId": done["VersionId"]} if done.get("VersionId") else {}
                version = {} if version.get("VersionId") == "null" else version
                client.delete_object(Bucket=self._bucket, Key=self._object, **version)
            except _errors() as err:
                raise ColdError(f"{wrong}, and deleting it failed: {_why(err)}") from None
            raise ColdError(f"{wrong}: deleted")

    def _stored_wrongly(self, version: str | None) -> str | None:
        """What is wrong with the object just completed, as HEAD tells: its size, or the
        composite of its part checksums (what the server verified on receipt); None when
        it is what was sent.  One that cannot be asked is not proven: said so."""
        args: dict[str, Any] = {"Bucket": self._bucket, "Key": self._object}
        args |= {"VersionId": version} if version and version != "null" else {}
        try:
            try:
                stored = self.store.client.head_object(ChecksumMode="ENABLED", **args)
            except ClientError as err:
                if _status(err) != 400:
                    raise
                # a server that knows no checksum mode: the size, and the part checksums it
                # verified on receipt (a bad part is BadDigest), are what there is
                stored = self.store.client.head_object(**args)
        except _errors() as err:
            return f"{names.shown(self.key)} was uploaded but cannot be asked ({_why(err)})"
        said = stored.get("ChecksumSHA256")
        # AWS writes a composite as DIGEST-PARTS; some servers leave out the -PARTS
        if said and said.partition("-")[0] == self.composite().partition("-")[0]:
            said = self.composite()
        if stored.get("ContentLength") != self.size or (said and said != self.composite()):
            return (
                f"{names.shown(self.key)} as stored ({stored.get('ContentLength')} bytes, "
                f"SHA-256 {said}) is not what was sent ({self.size} bytes, {self.composite()})"
            )
        return None

    def discard(self) -> str | None:
        """Abort the upload unless completed; what is left behind, in words, when it cannot."""
        with contextlib.suppress(ColdError):
            self.sync()
        if not self._upload:
            return None
        try:
            self.store.client.abort_multipart_upload(
                Bucket=self._bucket, Key=self._object, UploadId=self._upload
            )
        except _errors() as err:
            return (
                f"the upload of {names.shown(self.key)} could not be aborted ({_why(err)}): "
                "no command counts it as a stream; `zverify cold clean --yes` aborts it"
            )
        self._upload = ""
        return None


def _read_part(fd: int, size: int) -> bytes | None:
    """size bytes from the pipe, fewer at its end; None at its end."""
    buf = bytearray()
    while len(buf) < size:
        chunk = os.read(fd, min(CHUNK, size - len(buf)))
        if not chunk:
            break
        buf += chunk
    return bytes(buf) if buf else None
