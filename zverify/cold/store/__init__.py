"""Where an archive's files are (the interface and its promises: base.py): a directory or
several on this host (local.py, with the readers'/writers' lock, lock.py, and the work
directories of parity and repair, workdir.py), or a bucket's prefix (s3.py over s3io.py and
s3api.py, which alone imports boto3).  open_store() chooses one from the places given, as
a command line gives them; a command then asks the store what it can do (uses_local_files,
ledger_path(), for_new_files(), bucket), never which kind it is.  tests/cold/store/ holds
every store to the same contract."""

from zverify.cold.store.base import (
    IN_FLIGHT,
    Bucket,
    Entry,
    Frozen,
    Store,
    StoreWriter,
    Unsynced,
    bucket_of,
)
from zverify.cold.store.local import LocalStore, Writer, create_exclusive, refuse_existing
from zverify.errors import UsageError

S3_SCHEME = "s3://"


def open_store(
    places: list[str],
    recursive: bool = False,
    endpoint_url: str | None = None,
    storage_class: str | None = None,
) -> Store:
    """The store of the places: directories, or one s3:// URL (a bucket's prefix).  Raises
    UsageError for a URL beside anything else or a storage class without a bucket,
    ArchiveError naming a place that cannot be read."""
    urls = [p for p in places if p.startswith(S3_SCHEME)]
    if not urls:
        if storage_class is not None:
            raise UsageError("--storage-class is for s3:// archives")
        return LocalStore(places, recursive)
    if len(places) > 1:
        raise UsageError("an s3:// archive is given alone: one URL, no directories beside it")
    # here, not at the top: boto3 costs ~0.3 s of start-up, which a directory never pays
    from zverify.cold.store.s3 import S3Store

    return S3Store(urls[0], endpoint_url, storage_class=storage_class, recursive=recursive)


__all__ = [
    "IN_FLIGHT",
    "Bucket",
    "Entry",
    "Frozen",
    "LocalStore",
    "Store",
    "StoreWriter",
    "Unsynced",
    "Writer",
    "bucket_of",
    "create_exclusive",
    "open_store",
    "refuse_existing",
]
