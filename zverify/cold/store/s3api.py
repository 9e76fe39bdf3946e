"""The S3 API as the bucket store uses it: boto3 (imported here, by no other module: the s3
extra, which a directory archive never loads), its errors in words, where an archive is
(s3://BUCKET/PREFIX) and an object as it was listed."""

import datetime
import hashlib
from dataclasses import dataclass
from typing import Any

from zverify.cold.entries import FileStamp
from zverify.cold.store.base import IN_FLIGHT
from zverify.errors import ArchiveError

try:  # the s3 extra
    import boto3
    import xxhash
    from botocore.config import Config
    from botocore.exceptions import BotoCoreError, ClientError, FlexibleChecksumError
except ImportError:
    boto3 = None

SCHEME = "s3://"


def is_url(text: str) -> bool:
    return text.startswith(SCHEME)


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
    def identity(self) -> FileStamp:
        pinned = hashlib.sha256(f"{self.etag}\0{self.version or ''}".encode()).digest()
        ns = int(self.modified.timestamp() * 1_000_000_000)
        return FileStamp(0, int.from_bytes(pinned[:8], "big") >> 1, self.size, ns)


def make_client(endpoint_url: str | None = None) -> Any:
    """A boto3 S3 client configured the AWS way (raises ArchiveError when boto3 is missing)."""
    if boto3 is None:
        raise ArchiveError(
            "s3:// archives need the s3 extra: pip install 'zverify[s3]' (boto3, xxhash)"
        )
    # a connection for each request the store may have in flight
    config = Config(retries={"max_attempts": 5, "mode": "standard"}, max_pool_connections=IN_FLIGHT)
    return boto3.client("s3", endpoint_url=endpoint_url, config=config)


def code(err: BaseException) -> str:
    response = getattr(err, "response", None) or {}
    return str(response.get("Error", {}).get("Code", ""))


def status(err: BaseException) -> int:
    response = getattr(err, "response", None) or {}
    return int(response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)


def why(err: BaseException) -> str:
    response = getattr(err, "response", None) or {}
    message = response.get("Error", {}).get("Message")
    said = code(err)
    return f"{said}: {message}" if said and message else said or str(err) or type(err).__name__


def errors() -> tuple[type[BaseException], ...]:
    """What boto3 raises for a failed request or a dropped connection."""
    return (ClientError, BotoCoreError, OSError)


def checksum_error() -> type[BaseException]:
    """What botocore raises when a body fails the checksum S3 stored with the object."""
    return FlexibleChecksumError  # type: ignore[no-any-return]


def new_xxh3() -> Any:
    """A fresh XXH3-128 hasher: S3's XXHASH128, `xxhsum -H2`."""
    return xxhash.xxh3_128()
