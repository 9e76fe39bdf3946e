"""The manifest `cold send --manifest` keeps beside a stream (zverify.cold.contents): the
snapshot sent, mounted read-only (the files `.zfs/snapshot/S` shows, whatever the dataset's
mountpoint or snapdir), recorded by the `zverify manifest` engine in its native format with
extended attributes.  A snapshot cannot change, so the manifest is of exactly what the stream
holds; an entry that could not be read leaves no manifest at all (a manifest with holes would
make every later drill exit 2)."""

from typing import BinaryIO

from zverify.cold.contents import Recorded
from zverify.errors import ColdError
from zverify.hashing import Algorithm
from zverify.manifest.write import write_manifest
from zverify.pathnames import shown_paths
from zverify.walk import WalkOptions
from zverify.zfs import command


def record_snapshot(snapshot: str, out: BinaryIO) -> Recorded:
    """Write the native manifest of snapshot (`pool/ds@name`) to out."""
    options = WalkOptions(algorithm=Algorithm.XXH3_128, xattrs=True, one_file_system=True)
    with command.mounted_snapshot(snapshot) as root:
        summary = write_manifest(root, out, options)
    if summary.unreadable:
        raise ColdError(
            f"{len(summary.unreadable):,} entries of {snapshot} could not be read: "
            f"{shown_paths(summary.unreadable)}"
        )
    return Recorded(summary.entries, options.algorithm.value, snapshot)
