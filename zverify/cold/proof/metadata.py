"""`cold check --depth metadata`: what a bucket's listing and each object's HEAD say, held
against the sidecar `cold send` wrote beside the stream.  No byte of a stream is read: sizes,
stored checksums, storage classes, versions and locks are compared and reported, but neither
a stream's content nor its chain is proven, and the verdict says so.

A stream with no sidecar is `unproven` (exit 2): at this depth nothing says what it holds.  A
size or a stored checksum other than its sidecar's is `damaged` (exit 1): the object is not the
one that was sent.  A server that keeps no checksum leaves only the size compared, and each
file's `stored` facts say which were.
"""

import stat
from concurrent.futures import ThreadPoolExecutor

from zverify.cold import contents, names
from zverify.cold import sidecar as sidecar_file
from zverify.cold.entries import FileStamp
from zverify.cold.names import MANIFEST, SIDECAR
from zverify.cold.proof.check import (
    ArchiveReport,
    FileReport,
    Problem,
    beside_streams,
    hazards,
    upload_report,
)
from zverify.cold.sidecar import MAX_BYTES
from zverify.cold.store import IN_FLIGHT, Entry, Store, bucket_of

DEPTH = "metadata"
# the algorithms of the composite a bucket send records in its sidecar (s3_checksum_ALG) and
# HEAD reports (stored()'s checksum_ALG): CRC-32 since parts carry it, SHA-256 before
CHECKSUMS = {"crc32": "CRC-32", "sha256": "SHA-256"}


def check_metadata(store: Store, dataset: str | None = None) -> ArchiveReport:
    """Every object of the store described by its listing, its HEAD and its sidecar (raises
    ArchiveError when the store cannot be listed)."""
    listed = store.entries()
    sidecars = {e.key: e for e in listed if e.key.endswith(SIDECAR)}
    named: dict[str, dict[str, object] | None] = {}  # each sidecar's manifest entry, as read

    def one(entry: Entry) -> FileReport:
        if entry.upload is not None:
            return upload_report(store, entry)
        if entry.st is not None and stat.S_ISDIR(entry.st.st_mode):  # a common prefix
            why = "a directory: not read, not followed"
            return FileReport(
                entry.key, "unknown", problems=[Problem(entry.key, "not-a-stream", why)]
            )
        return _described(store, entry, sidecars.get(entry.key + SIDECAR), named)

    # two requests an object (HEAD, the sidecar's GET), each a round trip: a few at a time
    with ThreadPoolExecutor(IN_FLIGHT) as pool:
        wanted = [e for e in listed if e.upload is not None or not beside_streams(e)]
        files = list(pool.map(one, wanted))
    streams = {f.name for f in files}
    stray = [
        Problem(
            key, "sidecar-mismatch", f"its stream {names.shown(key[: -len(SIDECAR)])} is not here"
        )
        for key in sorted(sidecars)
        if key[: -len(SIDECAR)] not in streams
    ]
    stray += _manifests(store, files, listed, named)
    if dataset is not None:
        files = [f for f in files if (f.stored or {}).get("dataset") in (None, dataset)]
    stray += [Problem(store.shown, kind, message) for kind, message in hazards(store)]
    report = ArchiveReport(store.shown, files, {}, {}, stray, [], None, store, store.places)
    report.depth = DEPTH
    return report


def _manifests(
    store: Store,
    files: list[FileReport],
    listed: list[Entry],
    named: dict[str, dict[str, object] | None],
) -> list[Problem]:
    """The manifests beside the streams (zverify.cold.contents), by their listed sizes: one a
    sidecar names and the listing lacks is known without reading a byte, nor any sidecar
    read again (named: each stream's manifest entry, as _described() read its sidecar)."""
    stamps = {
        e.key: FileStamp.of(e.st)
        for e in listed
        if e.st is not None and e.key.endswith((SIDECAR, MANIFEST))
    }
    sidecars = {k: s for k, s in stamps.items() if k.endswith(SIDECAR)}
    manifests = {k: s for k, s in stamps.items() if k.endswith(MANIFEST)}
    by_name = {f.name: f for f in files}
    streams = [(f.name, f.readable) for f in files if f.kind != "partial"]
    stray = []
    found = contents.check(store, streams, sidecars, manifests, read=False, known=named)
    for name, kind, message in found:
        if name in by_name:
            by_name[name].problems.append(Problem(name, kind, message))
        else:
            stray.append(Problem(name, kind, message))
    return stray


def _described(
    store: Store,
    entry: Entry,
    sidecar: Entry | None,
    named: dict[str, dict[str, object] | None],
) -> FileReport:
    assert entry.st is not None
    name, size = entry.key, entry.st.st_size
    found = FileReport(name, "unknown", size, place=entry.place, identity=FileStamp.of(entry.st))
    try:
        found.stored = bucket_of(store).stored(name)
    except OSError as err:
        found.problems.append(Problem(name, "unreadable", f"cannot be asked: {err.strerror}"))
        found.readable = False
        return found
    if sidecar is None or sidecar.st is None:
        why = "no sidecar: at --depth metadata nothing says what it holds (a full check reads it)"
        found.problems.append(Problem(name, "unproven", why))
        return found
    key, listed = sidecar.key, FileStamp.of(sidecar.st)
    doc = sidecar_file.load(key, lambda: store.read_small(key, listed, MAX_BYTES))
    named[name] = contents.named(doc)  # one key per thread: no lock needed
    if isinstance(doc, tuple):  # a sidecar unreadable, or not a sidecar
        found.problems.append(Problem(sidecar.key, *doc))
        return found
    found.problems += _against(name, size, found.stored, doc)
    found.kind = str(doc.get("kind", "unknown"))
    found.stored |= {k: doc[k] for k in ("dataset", "from_guid", "to_guid") if k in doc}
    return found


def _against(
    name: str, size: int, stored: dict[str, object], doc: dict[str, object]
) -> list[Problem]:
    """How the object disagrees with its sidecar: its size, its stored checksum (of each
    algorithm both the sidecar and the server name)."""
    found = []
    want = doc.get("file_bytes", doc.get("bytes"))
    if want != size:
        found.append(Problem(name, "damaged", f"holds {size:,} bytes, its sidecar says {want}"))
    compared = ["size"]
    for algorithm, shown in CHECKSUMS.items():
        said, kept = doc.get(f"s3_checksum_{algorithm}"), stored.get(f"checksum_{algorithm}")
        if not (said and kept):
            continue
        compared.append(f"checksum_{algorithm}")
        if said != kept:
            message = f"the server's {shown} of it is {kept}, its sidecar says {said}"
            found.append(Problem(name, "damaged", message + ": not what was sent"))
    stored["compared"] = compared
    return found
