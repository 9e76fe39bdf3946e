"""Record a live tree as a native manifest: one streaming pass of the C walk.

Memory is constant in the number of entries except for hardlinks: the group number of
each inode with nlink > 1 is remembered until the walk ends.  The trailer carries the
entry counts and a BLAKE3 digest of every byte before it, so a reader can tell a complete
manifest from a truncated or edited one.
"""

import datetime
import grp
import json
import os
import pwd
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import BinaryIO

from zverify import __version__, provenance
from zverify.compare.sizes import SideTally
from zverify.entry import Entry, Kind
from zverify.fsinfo import filesystem_of, unreadable_xattr_namespaces
from zverify.hashing import Algorithm, blake3_hasher
from zverify.manifest import checkfile, mtree
from zverify.manifest.format import FORMAT_KEY, VERSION, entry_line, owner_fields
from zverify.pathnames import for_manifest
from zverify.walk import TreeWalk, WalkOptions

ProgressHook = Callable[[int, int], None]  # (entries, bytes read) so far
BATCH_LINES = 2048  # lines hashed and written at once


@dataclass
class WriteSummary:
    entries: int = 0
    unreadable: list[bytes] = field(default_factory=list)  # errors and changed-while-read
    # entries written, but as lines the format's checker can only fail (see checkfile.py)
    uncheckable: list[bytes] = field(default_factory=list)
    uncheckable_why: dict[str, int] = field(default_factory=dict)  # reason: count
    dropped: str = ""  # attributes the format cannot express
    excluded: int = 0  # entries the filter left out (an excluded directory once)


def header(root: str, options: WalkOptions) -> dict[str, object]:
    fs = filesystem_of(root)
    return {
        FORMAT_KEY: VERSION,
        "zverify": __version__,
        "algorithm": options.algorithm.value,
        "root": for_manifest(os.fsencode(os.path.abspath(root))),
        "host": socket.gethostname(),
        "created": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        provenance.KEY: provenance.producer(finished=False),  # the trailer's finishes it
        "filesystem": {
            "type": fs.fstype,
            "source": fs.source,
            "mountpoint": fs.mountpoint,
            "zfs": fs.zfs,
        },
        "xattrs": options.xattrs,
        "one_file_system": options.one_file_system,
        "filter": options.filter.to_json() if options.filter.active else None,
        "unverifiable": unreadable_xattr_namespaces() if options.xattrs else [],
    }


class _Owners:
    """The owner part of entry lines, per (uid, gid): names are looked up once each."""

    def __init__(self) -> None:
        self._cache: dict[tuple[int, int], str] = {}

    def fields(self, entry: Entry) -> str:
        key = (entry.uid, entry.gid)
        found = self._cache.get(key)
        if found is None:
            names = (_user(entry.uid), _group(entry.gid))
            found = self._cache[key] = owner_fields(entry.uid, entry.gid, names)
        return found


def _user(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return ""


def _group(gid: int) -> str:
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return ""


class ManifestWriter:
    """Writes header, entry lines and trailer to a binary stream, hashing as it goes."""

    def __init__(self, out: BinaryIO) -> None:
        self._out = out
        self._digest = blake3_hasher()
        self._pending: list[str] = []
        self._groups: dict[tuple[int, int], int] = {}
        self._owners = _Owners()
        self._tally = SideTally()
        self.summary = WriteSummary()

    def write_header(self, fields: dict[str, object]) -> None:
        self._emit(json.dumps(fields, separators=(",", ":")))

    def add_batch(self, batch: list[Entry]) -> None:
        """Once per batch of the walk, not per entry: the loop below is the writer's cost."""
        pending, groups = self._pending, self._groups
        owners, tally_add = self._owners, self._tally.add
        for entry in batch:
            group = None
            if entry.nlink > 1 and entry.kind != Kind.DIR:
                group = groups.setdefault((entry.dev, entry.ino), len(groups) + 1)
            pending.append(entry_line(entry, group, owners.fields(entry)))
            tally_add(entry)
            if entry.error is not None or entry.changed is not None:
                self.summary.unreadable.append(entry.path)
        self.summary.entries += len(batch)
        if len(pending) >= BATCH_LINES:
            self._flush()

    def finish(self) -> None:
        tally = self._tally
        end = {
            "entries": self.summary.entries,
            "counts": dict(sorted(tally.counts.items())),
            "unreadable": len(self.summary.unreadable),
            "hardlink_groups": len(self._groups),
            "du_bytes": tally.du_bytes,
            "du_apparent_bytes": tally.du_apparent_bytes,
        }
        self._flush()
        trailer = {"end": end, "blake3": self._digest.hexdigest()}
        trailer[provenance.KEY] = provenance.producer()  # not hashed: written after the digest
        self._out.write(json.dumps(trailer, separators=(",", ":")).encode("ascii") + b"\n")

    def _emit(self, line: str) -> None:
        self._pending.append(line)
        self._flush()

    def _flush(self) -> None:
        if not self._pending:
            return
        data = ("\n".join(self._pending) + "\n").encode("ascii")
        self._pending.clear()
        self._digest.update(data)
        self._out.write(data)


class MtreeWriter:
    """A full-path BSD mtree spec (see mtree.py)."""

    def __init__(self, out: BinaryIO, root: str) -> None:
        self._out = out
        self.summary = WriteSummary(dropped=mtree.DROPPED)
        when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        self._out.write(b"#mtree\n")
        shown = for_manifest(os.fsencode(os.path.abspath(root)))
        self._out.write(f"# written by zverify {__version__} from {shown} at {when}\n".encode())

    def add_batch(self, batch: list[Entry]) -> None:
        for entry in batch:
            self.summary.entries += 1
            if entry.error is not None or entry.changed is not None:
                self.summary.unreadable.append(entry.path)
            self._out.write(mtree.spec_line(entry).encode("ascii") + b"\n")

    def finish(self) -> None:
        pass


class CheckfileWriter:
    """sha256sum / b3sum checkfiles (see checkfile.py)."""

    def __init__(self, out: BinaryIO, fmt: str) -> None:
        self._out = out
        self._fmt = fmt
        self.summary = WriteSummary(dropped=checkfile.DROPPED)

    def add_batch(self, batch: list[Entry]) -> None:
        for entry in batch:
            self._add(entry)

    def _add(self, entry: Entry) -> None:
        self.summary.entries += 1
        if entry.error is not None or entry.changed is not None:
            self.summary.unreadable.append(entry.path)
        line = checkfile.check_line(entry, self._fmt)
        if line is None:
            return
        why = checkfile.uncheckable(entry, self._fmt)
        if why is not None:
            self.summary.uncheckable.append(entry.path)
            self.summary.uncheckable_why[why] = self.summary.uncheckable_why.get(why, 0) + 1
        self._out.write(line)

    def finish(self) -> None:
        pass


def format_algorithm(fmt: str) -> Algorithm | None:
    """The digest an export format needs (None: the native format takes any)."""
    if fmt == "mtree":
        return Algorithm.SHA256
    return checkfile.FORMATS.get(fmt)


def write_manifest(
    root: str,
    out: BinaryIO,
    options: WalkOptions,
    progress: ProgressHook | None = None,
    fmt: str = "native",
) -> WriteSummary:
    """Walk root and write its manifest to out; raises RootError/WalkError (nothing valid
    is left behind: without its trailer a native manifest never verifies)."""
    # A native manifest's running digest is allocated before the walk, whose threads start
    # allocating at once: an allocation failure then either stops everything before a line is
    # written or comes from the walk, which the trailer-less output already answers for.
    native = ManifestWriter(out) if fmt == "native" else None
    walk = TreeWalk(root, options, "TREE")  # checks root before anything is written
    try:
        writer = _writer(fmt, out, root, options, native)
        for batch in walk.batches():
            writer.add_batch(batch)
            if progress is not None:
                progress(*walk.progress())
        writer.finish()
        writer.summary.excluded = walk.excluded()
    finally:
        walk.close()
    return writer.summary


def _writer(
    fmt: str, out: BinaryIO, root: str, options: WalkOptions, native: "ManifestWriter | None"
) -> "ManifestWriter | MtreeWriter | CheckfileWriter":
    if native is not None:
        native.write_header(header(root, options))
        return native
    if fmt == "mtree":
        return MtreeWriter(out, root)
    return CheckfileWriter(out, fmt)
