"""NAME.manifest beside a stream: what the snapshot it sends held, file by file.

`cold send --manifest` records, after the stream is proven, a zverify manifest of the snapshot
the stream ends at (walked from the snapshot itself: the recorder is given by the caller, so
that this package never imports the manifest engine), and names it in the stream's sidecar
with its size, its SHA-256 and its entry count.  Long after the source is gone, `cold drill`
compares a received snapshot with it: the archive proves its own content.

`cold check` holds each manifest against the sidecar that names it, as it holds every other
file of the archive: read whole, of the size and SHA-256 recorded.  A manifest that is not
there, or not those bytes, is `manifest-mismatch` (exit 1: the archive lost its proof of
content, while its streams may still restore); one that cannot be read is `unreadable`
(exit 2); a manifest that no sidecar names, or whose stream is not here, is reported too.
A restore never needs it, and `cold prune` deletes it with its stream.
"""

import contextlib
import hashlib
import os
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import BinaryIO

from zverify.cold import entries, names, sidecar
from zverify.cold.entries import FileStamp
from zverify.cold.store import Store, StoreWriter
from zverify.errors import ColdError

KEY = "manifest"  # the sidecar's entry naming it
MISMATCH = "manifest-mismatch"


@dataclass(frozen=True)
class Recorded:
    """What a recorder says of the manifest it wrote."""

    entries: int
    algorithm: str  # of its file digests: xxh3-128 or blake3
    root: str  # the tree it walked


# (dataset@snapshot, where to write) -> Recorded; raises ZverifyError when any entry of the
# snapshot could not be read (a manifest with holes proves nothing)
Recorder = Callable[[str, BinaryIO], Recorded]


def name_of(stream: str) -> str:
    return stream + names.MANIFEST


def stream_of(manifest: str) -> str:
    return manifest[: -len(names.MANIFEST)]


def record(store: Store, stream: str, snapshot: str, recorder: Recorder) -> dict[str, object]:
    """Write NAME.manifest of snapshot beside stream (an exclusive .partial renamed into
    place, never over anything) -> the sidecar's entry naming it.  Raises ColdError."""
    key = name_of(stream)
    try:
        w = store.writer(key)
    except FileExistsError:
        raise ColdError(f"{names.shown(key)}{names.PARTIAL} exists: `cold clean` removes a "
                        "leftover") from None  # fmt: skip
    try:
        out = _Hashing(w)
        recorded = recorder(snapshot, out)  # type: ignore[arg-type]
        w.sync()
        stored = w.stored_sha256()  # read back where the store can: what was kept, not sent
        if stored is not None and stored != out.sha256.hexdigest():
            raise ColdError(f"{names.shown(key)} read back is not what was written")
        size = w.stored_size()
        w.commit()
    except BaseException:
        w.discard()
        raise
    return {
        "file": os.path.basename(key),
        "bytes": size,
        "sha256": out.sha256.hexdigest(),
        "entries": recorded.entries,
        "algorithm": recorded.algorithm,
        "snapshot": snapshot,
        "root": recorded.root,
    }


class _Hashing:
    """The writer's fd as a binary file that hashes what it writes."""

    def __init__(self, w: StoreWriter) -> None:
        self.w = w
        self.sha256 = hashlib.sha256()

    def write(self, data: bytes) -> int:
        view = memoryview(data)
        while view:
            try:
                done = os.write(self.w.fd, view)
            except OSError as err:
                why = err.strerror or err
                raise ColdError(f"writing {names.shown(self.w.partial)} failed: {why}") from None
            view = view[done:]
        self.sha256.update(data)
        return len(data)

    def flush(self) -> None:
        pass


def check(
    store: Store,
    streams: list[tuple[str, bool]],
    sidecars: dict[str, FileStamp],
    manifests: dict[str, FileStamp],
    read: bool = True,
    known: Mapping[str, dict[str, object] | None] | None = None,
) -> Iterator[tuple[str, str, str]]:
    """(file, kind, message) of every doubt about the manifests: streams are (name, intact)
    of the files read as streams, sidecars and manifests the files listed beside them.
    read False (`check --depth metadata`): each manifest's listed size is held to its
    sidecar's, no byte of it read.  known: the manifest entry (named()) of each stream
    whose sidecar the caller already read, so that no sidecar is read twice (in a bucket,
    each read is a GET)."""
    here = {name for name, _ in streams}
    named: set[str] = set()
    known = known or {}
    for stream, intact in streams:
        entry = known[stream] if stream in known else _named(store, stream, sidecars)
        if entry is None:
            continue
        key = name_of(stream)
        named.add(key)
        if not intact:  # its stream's own problem says more; the manifest is still its
            continue
        problem = _verify(store, stream, entry, manifests.get(key), read)
        if problem is not None:
            yield stream, *problem
    for key in sorted(manifests.keys() - named):
        if stream_of(key) not in here:
            yield key, MISMATCH, f"its stream {names.shown(stream_of(key))} is not here"
        else:
            why = "no sidecar names it: what it says cannot be proven"
            yield key, MISMATCH, why


def _named(store: Store, stream: str, sidecars: dict[str, FileStamp]) -> dict[str, object] | None:
    """The manifest entry of the stream's sidecar, when it has one (a sidecar that cannot be
    read is reported by the sidecar's own check)."""
    key = stream + names.SIDECAR
    if key not in sidecars:
        return None
    return named(_sidecar(store, key, sidecars[key]))


def named(doc: object) -> dict[str, object] | None:
    """The manifest entry of a sidecar's document (what sidecar.load() made of it: a
    tuple when it could not be read), or None."""
    entry = doc.get(KEY) if isinstance(doc, dict) else None
    return entry if isinstance(entry, dict) else None


def _sidecar(store: Store, key: str, listed: FileStamp) -> dict[str, object] | None:
    doc = sidecar.load(key, lambda: store.read_small(key, listed, sidecar.MAX_BYTES))
    return doc if isinstance(doc, dict) else None


def _verify(
    store: Store, stream: str, entry: dict[str, object], listed: FileStamp | None, read: bool
) -> tuple[str, str] | None:
    key = name_of(stream)
    shown = names.shown(os.path.basename(key))
    if entry.get("file") != os.path.basename(key):
        return MISMATCH, f"its sidecar names the manifest {entry.get('file')!r}, not {shown}"
    if listed is None:
        return MISMATCH, f"its sidecar names the manifest {shown}, which is not here"
    if not read:
        if listed.size == entry.get("bytes"):
            return None
        return (
            MISMATCH,
            f"{shown} is listed with {listed.size:,} bytes, its sidecar {entry.get('bytes')}",
        )
    try:
        size, digest = _digest(store, key, listed)
    except entries.Changed as err:
        return "changed", f"{shown}: {err}"
    except OSError as err:
        return "unreadable", f"{shown} cannot be read: {err.strerror or err}"
    except ColdError as err:  # read whole, and not what the store holds a checksum of
        return MISMATCH, f"{shown}: {err}"
    if size != entry.get("bytes") or digest != entry.get("sha256"):
        return MISMATCH, (
            f"{shown} is not the manifest its sidecar names ({size:,} bytes, sha256 "
            f"{digest[:16]}…; the sidecar: {entry.get('bytes')} bytes, "
            f"{str(entry.get('sha256'))[:16]}…)"
        )
    return None


def _digest(
    store: Store, key: str, listed: FileStamp, write: Callable[[bytes], object] | None = None
) -> tuple[int, str]:
    """Size and SHA-256 of the file read whole, every byte also given to write() when one is.
    Raises OSError, entries.Changed (also when it changed while read), ColdError."""
    fd = store.open_read(key, listed)
    h, size = hashlib.sha256(), 0
    try:
        while chunk := os.read(fd, 1 << 20):
            if write is not None:
                write(chunk)
            h.update(chunk)
            size += len(chunk)
    except BaseException:
        with contextlib.suppress(OSError, ColdError):
            store.finish_read(key, fd)
        raise
    if store.finish_read(key, fd) != listed:
        raise entries.Changed("changed while it was read")
    return size, h.hexdigest()


def archived(
    store: Store, guid: int, snapshot: str, beside: Collection[str] | None = None
) -> tuple[str, dict[str, object], FileStamp] | None:
    """The manifest of the snapshot of this GUID and name (the part after @): (its key, the
    sidecar's entry, the file listed), or None when the archive keeps none.  beside: only a
    manifest beside one of these streams (a drill's: the last file of the route it received,
    which it proved ends at that GUID), since a sidecar's GUID is a claim until its stream is
    read.  The first of several, in key order."""
    listed = {e.key: e for e in store.entries() if e.st is not None and e.error is None}
    keys = (name_of(s) for s in beside) if beside is not None else sorted(listed)
    for key in (k for k in keys if k.endswith(names.MANIFEST) and k in listed):
        side = listed.get(stream_of(key) + names.SIDECAR)
        if side is None or side.st is None:
            continue
        doc = _sidecar(store, side.key, FileStamp.of(side.st))
        entry = doc.get(KEY) if doc is not None else None
        if (
            doc is not None
            and doc.get("to_guid") == str(guid)
            and isinstance(entry, dict)
            and entry.get("file") == os.path.basename(key)
            and str(entry.get("snapshot", "")).partition("@")[2] == snapshot
        ):
            st = listed[key].st
            assert st is not None
            return key, entry, FileStamp.of(st)
    return None


def copy_proven(
    store: Store, key: str, entry: dict[str, object], listed: FileStamp, to: str
) -> None:
    """The manifest copied to the new file `to`, proven on the way to be the bytes its sidecar
    names (size and SHA-256): what is compared is what was proven.  Raises ColdError, and
    then leaves no file at `to`."""
    try:
        with open(to, "xb") as out:
            try:
                _copy(store, key, entry, listed, out.write)
            except BaseException:
                os.unlink(to)
                raise
    except OSError as err:
        raise ColdError(f"writing {to} failed: {err.strerror or err}") from None


def carry(
    source: Store, into: Store, stream: str, guid: int, snapshot: str
) -> dict[str, object] | None:
    """The manifest source keeps of the snapshot of guid, copied (proven on the way) beside
    stream in into: a new full of the same snapshot (`cold consolidate`) holds the same files,
    and keeps its proof of content once prune removes the chain it was made from.  Returns
    the sidecar's entry, or None when source keeps no manifest of it.  Raises ColdError."""
    kept = archived(source, guid, snapshot)
    if kept is None:
        return None
    key, entry, listed = kept
    name = name_of(stream)
    try:
        w = into.writer(name)
    except FileExistsError:
        raise ColdError(f"{names.shown(name)}{names.PARTIAL} exists: `cold clean`") from None
    try:
        _copy(source, key, entry, listed, _Hashing(w).write)
        size = w.stored_size()
        w.commit()
    except BaseException:
        w.discard()
        raise
    return {**entry, "file": os.path.basename(name), "bytes": size}


def _copy(
    store: Store,
    key: str,
    entry: dict[str, object],
    listed: FileStamp,
    write: Callable[[bytes], object],
) -> None:
    """Every byte of key to write(), proven to be what the sidecar's entry names."""
    shown = names.shown(key)
    try:
        size, digest = _digest(store, key, listed, write)
    except entries.Changed as err:
        raise ColdError(f"{shown} cannot be read: {err}") from None
    except OSError as err:  # a bucket read that broke off more often than it resumed
        raise ColdError(f"reading {shown} failed: {err.strerror or err}") from None
    if size != entry.get("bytes") or digest != entry.get("sha256"):
        raise ColdError(f"{shown} is not the manifest its sidecar names: `cold check` says more")
