"""Where an archive's files are (the interface and its promises: base.py): a directory or
several on this host (local.py, with the readers'/writers' lock, lock.py, and the work
directories of parity and repair, workdir.py), or a bucket's prefix (s3.py over s3io.py and
s3api.py, which alone imports boto3).  tests/cold/store/ holds every store to the same
contract."""

from zverify.cold.store.base import IN_FLIGHT, Entry, Frozen, Store, StoreWriter, Unsynced
from zverify.cold.store.local import LocalStore, Writer, create_exclusive, refuse_existing

__all__ = [
    "IN_FLIGHT",
    "Entry",
    "Frozen",
    "LocalStore",
    "Store",
    "StoreWriter",
    "Unsynced",
    "Writer",
    "create_exclusive",
    "refuse_existing",
]
