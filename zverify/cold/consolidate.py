"""`cold consolidate` and `cold digest`: a full stream of a snapshot made from the archive
alone, and the logical state digest of a snapshot per route that restores it.

consolidate_route() writes NAME@S.zfsfull from the route the chain model plans for S (the
fewest bytes from a full, as `cold restore` receives it; zverify.sendstream.chain):

1. the archive is read completely (`cold check`): only intact files are planned;
2. each substream of the route (a `-I` package holds several: one read position each) is
   opened by the archive's store (a directory, a bucket, a compressed file decompressed as
   it is read) as a RecordReader, and the chain-state engine (chainstate.merge) yields the
   records a full of S carries;
3. one pass writes them (synthesize.FullWriter) into NAME@S.zfsfull.partial through the
   C scanner's relay, so the file is validated as written, while the same records feed the
   chain's digest (digest.state_digest);
4. the written file is read back as a one-substream route: its digest must equal the
   chain's, else nothing is renamed, the partial is removed and the result is exit 1 naming
   the first object and offset that differ (digest.state_pieces);
5. the file is renamed into place (never over an existing one), then its sidecar NAME.json
   written: "synthetic", with the source files, their END-checksum digests and the state
   digest.

A route the engine cannot merge (raw, redacted, dedup, resume, mixed byte order or
large-block state, a clone) is Refused: exit 2 with the file, field and offset.

Long because: the two commands and prune's proof of content share one way of opening a
route's substreams from any store and one way of comparing two routes; kept together so the
three proofs cannot drift apart.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from zverify import __version__, exitcodes, provenance
from zverify.cold import contents, names, restore
from zverify.cold.entries import FileStamp
from zverify.cold.proof.check import ArchiveReport, Problem, check_archive
from zverify.cold.store import LocalStore, Store, StoreWriter, Unsynced
from zverify.errors import ColdError, UnrestorableError, ZverifyError
from zverify.sendstream import compressed
from zverify.sendstream.chain import ArchivedFile, Chain, Restorable, chains, plan
from zverify.sendstream.chainstate import StateRecord, merge
from zverify.sendstream.digest import first_difference as pieces_difference
from zverify.sendstream.digest import place, state_digest, state_pieces
from zverify.sendstream.format import RECORD_SIZE, HeaderType, RecordType
from zverify.sendstream.records import BufferedSource, RecordReader, Refused
from zverify.sendstream.report import StreamReport
from zverify.sendstream.synthesize import FullSummary, FullWriter, route_features
from zverify.sendstream.validate import seekable, verify_stream

SYNTHETIC = "zverify cold consolidate"


@dataclass(frozen=True)
class Link:
    """One substream of a route: the file it is in, its index there, the snapshot it ends."""

    file: str
    index: int
    snapshot: str
    guid: int


@dataclass(frozen=True)
class Route:
    """The substreams that rebuild a snapshot, oldest (the full) first."""

    dataset: str
    snapshot: str
    guid: int
    files: tuple[str, ...]
    links: tuple[Link, ...]
    bytes: int


@dataclass
class Consolidated:
    """What `cold consolidate` did (or would do: dry_run)."""

    route: Route
    name: str  # the new file's key
    into: str  # the place it is written in
    dry_run: bool = False
    chain_digest: str | None = None
    full_digest: str | None = None
    written: FullSummary | None = None
    sha256: str | None = None
    differs: str | None = None  # the first difference, in words, when the digests differ
    note: str | None = None  # what went wrong after the rename (the sidecar)

    @property
    def exit_code(self) -> int:
        return exitcodes.verdict(unverified=False, different=self.differs is not None)


@dataclass
class Digested:
    """The digest of a snapshot per route that restores it."""

    dataset: str
    snapshot: str
    guid: int
    routes: list[tuple[Route, str]] = field(default_factory=list)
    differs: str | None = None  # the first difference between two routes, in words

    @property
    def exit_code(self) -> int:
        return exitcodes.verdict(unverified=False, different=self.differs is not None)


# -- routes ---------------------------------------------------------------------------------


def route_of(report: ArchiveReport, snapshot: str | None) -> Route:
    """The route `cold restore` would receive for snapshot (default: the newest restorable),
    cut at the snapshot's own substream.  Raises ColdError, UnrestorableError."""
    try:
        chosen = restore.plan_restore(report, "", snapshot)
    except UnrestorableError as err:  # no route: nothing to merge, a refusal (exit 2)
        raise ColdError(str(err)) from None
    return _route(report, chosen.snapshot)


def _route(report: ArchiveReport, r: Restorable) -> Route:
    archived = {f.name: f for f in report.chained}
    links: list[Link] = []
    for name in r.files:
        f = archived.get(name)
        if f is None:
            raise ColdError(f"internal error: the route of @{r.snapshot} plans {names.shown(name)}")
        links += _links_of(f, r)
    if not links or links[-1].guid != r.guid:
        raise ColdError(f"internal error: the route of @{r.snapshot} does not end at it")
    size = sum(archived[n].size for n in r.files)
    return Route(r.dataset, r.snapshot, r.guid, tuple(r.files), tuple(links), size)


def _links_of(f: ArchivedFile, r: Restorable) -> list[Link]:
    """The substreams of f that are of r's dataset, up to r's snapshot.  A clone substream
    (of a `-R` package) is refused: its origin's state would have to be merged too."""
    out = []
    for i, step in enumerate(f.steps):
        if step.dataset != r.dataset:
            continue
        if step.clone:
            raise Refused(
                f"{names.shown(f.name)} substream {i + 1}: {step.dataset}@{step.snapshot} is a "
                "clone stream (DRR_FLAG_CLONE): consolidate merges no origin's state"
            )
        out.append(Link(f.name, i, step.snapshot, step.to_guid))
        if step.to_guid == r.guid:
            break
    return out


def routes_to(report: ArchiveReport, snapshot: str | None) -> list[Route]:
    """One route per chain (a full and the files after it) that restores snapshot, each
    the fewest bytes within its chain; the cheapest overall first."""
    first = route_of(report, snapshot)
    found = [first]
    archived = report.chained
    for chain in chains(first.dataset, archived):
        mine = [f for f in archived if f.name in chain.files]
        planned = plan(mine).get(first.dataset)
        reached = [r for r in planned.restorable if r.guid == first.guid] if planned else []
        if reached and reached[0].files not in [r.files for r in found]:
            found.append(_route(report, reached[0]))
    return found


# -- reading a route ----------------------------------------------------------------------


class _Input:
    """The decoded bytes of one archive file from a position: read(n) short only at the
    end; skip(n) seeks when the file can, reads past otherwise; peek(n) reads ahead."""

    def __init__(
        self, stack: contextlib.ExitStack, store: Store, key: str, expect: FileStamp | None
    ):
        self.name = names.shown(key)
        try:
            fd = store.open_read(key, expect)
        except OSError as err:
            raise ColdError(f"cannot open {self.name}: {err.strerror or err}") from None
        stack.callback(_finish, store, key, fd)
        self._fd, can_seek = fd, seekable(fd)
        head = b""
        kind = compressed.detect_fd(fd) if can_seek else None
        if not can_seek:
            head = compressed.read_head(fd)
            kind = compressed.detect(head)
        if kind is not None:
            self._fd, _layer = stack.enter_context(compressed.decompressing(fd, kind, head))
            # the check proved the compressed layer; a read that ends short is Refused
            head, can_seek = b"", False
        source = BufferedSource(self._read, self._seek if can_seek else None, head)
        self.read, self.skip, self.peek = source.read, source.skip, source.peek
        # A reader seeks past payloads only where the file can seek; elsewhere it reads past
        # them itself, and so names the very byte where a cut input ends.
        self.payload_skip = source.skip if can_seek else None

    def _read(self, n: int) -> bytes:
        try:
            return os.read(self._fd, n)
        except OSError as err:
            raise ColdError(f"reading {self.name} failed: {err.strerror or err}") from None

    def _seek(self, n: int) -> None:
        os.lseek(self._fd, n, os.SEEK_CUR)


def _finish(store: Store, key: str, fd: int) -> None:
    with contextlib.suppress(OSError, ZverifyError):
        store.finish_read(key, fd)


def _reader(src: _Input, name: str, start: int, big_endian: bool | None) -> RecordReader:
    return RecordReader(
        src.read, name=name, start=start, big_endian=big_endian, skip=src.payload_skip
    )


def open_route(
    stack: contextlib.ExitStack, report: ArchiveReport, route: Route
) -> list[RecordReader]:
    """A RecordReader per link of route, oldest first, each positioned at its substream.
    A package's substream offsets are found once per file (one pass over its headers; a
    file that cannot seek is read past), then each reader seeks (or reads) to its own."""
    store = report.store or LocalStore([report.directory])
    expect = {f.name: f.identity for f in report.files}
    packages = {f.name for f in report.files if f.kind == "intermediate"}
    offsets: dict[str, list[int]] = {}
    readers: list[RecordReader] = []
    big: bool | None = None
    for link in route.links:
        where = f"{names.shown(link.file)} substream {link.index + 1} (@{link.snapshot})"
        start = 0
        if link.file in packages:
            if link.file not in offsets:
                offsets[link.file] = _substream_offsets(store, link.file, expect.get(link.file))
            found = offsets[link.file]
            if link.index >= len(found):
                raise Refused(f"{where}: the package ends before this substream")
            start = found[link.index]
        src = _Input(stack, store, link.file, expect.get(link.file))
        src.skip(start)
        reader = _reader(src, where, start, big)
        big = reader.big_endian
        readers.append(reader)
    return readers


def _substream_offsets(store: Store, key: str, expect: FileStamp | None) -> list[int]:
    """Where each substream of a package begins: past its compound header, one after
    another until the package's final END."""
    with contextlib.ExitStack() as stack:
        src = _Input(stack, store, key, expect)
        header = _reader(src, f"{names.shown(key)} package header", 0, None)
        if header.begin.header_type != HeaderType.COMPOUNDSTREAM:
            raise Refused(f"{names.shown(key)}: byte 0: a package without its header BEGIN")
        _drain(header)
        at, big, found = header.where(), header.big_endian, []
        while len(head := src.peek(RECORD_SIZE)) == RECORD_SIZE:
            if int.from_bytes(head[:4], "big" if big else "little") == RecordType.END:
                break
            found.append(at)
            sub = _reader(src, f"{names.shown(key)} substream {len(found)}", at, big)
            _drain(sub)
            at = sub.where()
        return found


def _drain(reader: RecordReader) -> None:
    while reader.next() is not None:
        pass


# -- digests --------------------------------------------------------------------------------


def route_digest(report: ArchiveReport, route: Route) -> str:
    """The logical state digest of route's snapshot (one pass over the route)."""
    with contextlib.ExitStack() as stack:
        readers = open_route(stack, report, route)
        return state_digest(merge(readers), readers[0].big_endian)


def first_difference(
    left: Callable[[contextlib.ExitStack], list[RecordReader]],
    right: Callable[[contextlib.ExitStack], list[RecordReader]],
    what: tuple[str, str],
) -> str:
    """Where the states of two routes (each opened by a callable) first differ, in words:
    `object 7 offset 131072`, an object's attributes or bonus buffer, its spill block
    (digest.state_pieces: one more pass over both, made only once the digests differ)."""
    with contextlib.ExitStack() as stack:
        a, b = left(stack), right(stack)
        found = pieces_difference(
            state_pieces(merge(a), a[0].big_endian), state_pieces(merge(b), b[0].big_endian)
        )
    if found is None:
        return f"the digests differ, yet no piece of {what[0]} and {what[1]} does"
    return f"{place(*found)} differs"


def digest_snapshot(report: ArchiveReport, snapshot: str | None) -> Digested:
    """The digest of snapshot per route that restores it; the first difference when two
    routes disagree."""
    routes = routes_to(report, snapshot)
    first = routes[0]
    result = Digested(first.dataset, first.snapshot, first.guid)
    for route in routes:
        result.routes.append((route, route_digest(report, route)))
    base_route, base = result.routes[0]
    for other, digest in result.routes[1:]:
        if digest != base:
            result.differs = first_difference(
                _opener(report, base_route),
                _opener(report, other),
                (_shown_route(base_route), _shown_route(other)),
            )
            break
    return result


def digest_newest(report: ArchiveReport) -> None:
    """`cold check --digest`: the digest of each dataset's newest restorable snapshot over
    every route that restores it, into report.digests.  A digest that cannot be made (a raw
    chain, a file not read) is an unproven problem (exit 2); routes that restore different
    content are a problem of the archive (exit 1), with the first difference."""
    for dataset, found in report.plans.items():
        if not found.restorable:
            continue
        where = found.restorable[-1].files[-1]
        try:
            digested = digest_snapshot(dataclasses.replace(report, plans={dataset: found}), None)
        except ZverifyError as err:
            why = f"{dataset}: no digest of the newest snapshot: {err}"
            report.problems.append(Problem(where, "unproven", why, dataset=dataset))
            continue
        digest = digested.routes[0][1]
        agree = sum(d == digest for _, d in digested.routes)
        report.digests[dataset] = (digested.snapshot, digested.guid, digest, agree)
        if digested.differs:
            why = f"@{digested.snapshot}: two routes restore different content: {digested.differs}"
            report.problems.append(Problem(where, "content-differs", why, dataset=dataset))


def _opener(
    report: ArchiveReport, route: Route
) -> Callable[[contextlib.ExitStack], list[RecordReader]]:
    return lambda stack: open_route(stack, report, route)


def _shown_route(route: Route) -> str:
    return "the route " + " + ".join(names.shown(f) for f in route.files)


# -- prune's proof of content ------------------------------------------------------------------


def content_refusal(
    report: ArchiveReport, dataset: str, removed: list[Chain], going: set[str]
) -> str | None:
    """Why the files going may not be deleted for their content, or None: for each snapshot
    an old chain restores through files that all go, and that the files staying restore too
    (same GUID), the digest by the old route must equal the digest by the route that stays
    (a snapshot reached through a file that stays follows from the ones compared: the same
    incrementals on the same state).  Raises Refused, ZverifyError when a route cannot be
    merged (the caller refuses then: content not proven)."""
    archived = report.chained
    after = plan([f for f in archived if f.name not in going]).get(dataset)
    kept = {r.guid: r for r in after.restorable} if after else {}
    for chain in removed:
        old = plan([f for f in archived if f.name in chain.files]).get(dataset)
        for r in old.restorable if old else []:
            stays = kept.get(r.guid)
            if stays is None or not set(r.files) <= going:
                continue
            a, b = _route(report, r), _route(report, stays)
            if route_digest(report, a) == route_digest(report, b):
                continue
            first = first_difference(
                _opener(report, a), _opener(report, b), (_shown_route(a), _shown_route(b))
            )
            return (
                f"{dataset}@{r.snapshot} (guid {r.guid}): {_shown_route(a)} and "
                f"{_shown_route(b).removeprefix('the ')}, which stays, restore different "
                f"content ({first}): nothing is deleted"
            )
    return None


# -- consolidate ------------------------------------------------------------------------------


def full_name(route: Route) -> str:
    """NAME@S.zfsfull, NAME as the route's full is named (`setname`), else the dataset."""
    claimed = names.parse(os.path.basename(route.files[0]))
    prefix = names.encode_dataset(route.dataset)
    if claimed is not None and names.names_dataset(claimed.dataset, route.dataset):
        prefix = names.encode_dataset(claimed.dataset)
    return f"{prefix}@{route.snapshot}{names.FULL}"


def plan_consolidate(report: ArchiveReport, snapshot: str | None, into: Store) -> Consolidated:
    route = route_of(report, snapshot)
    if len(route.links) == 1 and report_kind(report, route.files[0]) == "full":
        raise ColdError(
            f"@{route.snapshot} is restored from the full {names.shown(route.files[0])} "
            "alone: nothing to consolidate"
        )
    name = full_name(route)
    if isinstance(into, LocalStore) and os.path.lexists(into.local_path(name)):
        raise ColdError(
            f"{names.shown(name)} already exists in {into.shown}: refusing to overwrite it"
        )
    return Consolidated(route, name, into.shown, dry_run=True)


def report_kind(report: ArchiveReport, name: str) -> str:
    return next((f.kind for f in report.files if f.name == name), "unknown")


def consolidate_route(
    report: ArchiveReport, planned: Consolidated, into: Store, argv: list[str]
) -> Consolidated:
    """Write, validate, prove and rename planned's full (see the module's docstring)."""
    if not isinstance(into, LocalStore):
        raise ColdError(
            "--into s3://: a consolidated full is read back from its file before it is kept; "
            "write it into a directory (then copy it to the bucket)"
        )
    result = Consolidated(planned.route, planned.name, planned.into)
    try:
        w = into.writer(planned.name)
    except FileExistsError:
        raise ColdError(
            f"{names.shown(planned.name)}.partial exists: `zverify cold clean`"
        ) from None
    try:
        scanned = _write_validated(report, result, w)
        _check_scan(scanned, result, w)
        result.full_digest = _digest_of_file(w.fd, w.partial)
        if result.full_digest != result.chain_digest:
            result.differs = first_difference(
                _opener(report, result.route),
                lambda s: [_file_reader(s, w.fd, w.partial)],
                (_shown_route(result.route), f"the new {names.shown(planned.name)}"),
            )
            w.discard()
            return result
        result.sha256 = w.stored_sha256()
        w.commit()
    except Unsynced as err:  # in place but maybe not durable: not a success (as cold send)
        written = f"wrote {names.shown(planned.name)} (its digest proven)"
        raise ColdError(f"{written}, but {err}") from None
    except BaseException:
        w.discard()
        raise
    manifest, unkept = _carry_manifest(report, into, result)
    result.note = _write_sidecar(into, report, result, argv, manifest)
    result.note = "; ".join(n for n in (unkept, result.note) if n) or None
    return result


def _carry_manifest(
    report: ArchiveReport, into: Store, result: Consolidated
) -> tuple[dict[str, object] | None, str | None]:
    """The archive's manifest of the snapshot (cold.contents), beside the new full: (the
    sidecar's entry, what went wrong in words)."""
    assert report.store is not None and result.route is not None
    try:
        route = result.route
        return contents.carry(report.store, into, result.name, route.guid, route.snapshot), None
    except ColdError as err:
        return None, f"the manifest of its snapshot was not carried over: {err}"


def _write_validated(report: ArchiveReport, result: Consolidated, w: StoreWriter) -> StreamReport:
    """One pass: merge -> writer -> pipe -> the scanner (relaying into the file), the chain's
    digest taken from the same records."""
    r, wpipe = os.pipe()
    with contextlib.suppress(OSError):  # best effort: Linux lets a user have 1 MiB
        # the writer's 1 MiB pieces go in whole while the scanner drains the last one on
        # the other core; at the default 64 KiB the two threads took turns
        fcntl.fcntl(wpipe, fcntl.F_SETPIPE_SZ, 1 << 20)
    scanned: list[StreamReport] = []

    def scan() -> None:
        try:
            scanned.append(verify_stream(r, relay_to=w.fd, decompress=False))
        finally:
            os.close(r)

    thread = threading.Thread(target=scan, daemon=True)
    thread.start()
    open_ends = [wpipe]

    def end_scan() -> None:
        """Close the writer's end once (the scanner sees the end), wait for the verdict."""
        while open_ends:
            os.close(open_ends.pop())
        thread.join()

    try:
        with contextlib.ExitStack() as stack:
            readers = open_route(stack, report, result.route)
            big = readers[0].big_endian
            features = route_features((x.begin.features, x.begin.flags) for x in readers)
            writer = FullWriter(_pipe_writer(wpipe), readers[-1].begin_header, features, big)

            def written(records: Iterable[StateRecord]) -> Iterator[StateRecord]:
                for rec in records:
                    writer.add(rec)
                    yield rec

            result.chain_digest = state_digest(written(merge(readers)), big)
            result.written = writer.finish()
    except _ScanStopped:
        end_scan()
        first = scanned[0].problems[0] if scanned and scanned[0].problems else None
        why = f" at byte {first.offset}: {first.message}" if first else ""
        raise ColdError(
            f"the full being written to {names.shown(w.partial)} is not valid{why}; nothing kept"
        ) from None
    finally:
        end_scan()
    if not scanned:
        raise ColdError(f"the scanner of {names.shown(w.partial)} stopped without a verdict")
    return scanned[0]


class _ScanStopped(Exception):
    """The scanner stopped reading what the writer writes: it found a problem."""


def _pipe_writer(fd: int) -> Callable[[bytes | bytearray], None]:
    def write(data: bytes | bytearray) -> None:
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(fd, view) :]
        except BrokenPipeError:
            raise _ScanStopped from None

    return write


def _check_scan(scanned: StreamReport, result: Consolidated, w: StoreWriter) -> None:
    """The scanner's verdict on what was written: one intact full of the route's snapshot,
    every byte of it in the file."""
    shown = names.shown(w.partial)
    if not scanned.valid:
        first = scanned.problems[0] if scanned.problems else None
        where = f" at byte {first.offset}: {first.message}" if first else ""
        raise ColdError(f"the full written to {shown} is not valid{where}; nothing kept")
    subs = scanned.substreams
    if len(subs) != 1 or subs[0].fromguid != 0 or subs[0].toguid != result.route.guid:
        raise ColdError(f"{shown} is not one full stream of guid {result.route.guid}; nothing kept")
    w.sync()
    if scanned.relayed != scanned.size or w.stored_size() != scanned.size:
        raise ColdError(f"{shown} holds {w.stored_size()} bytes, the stream {scanned.size}")


def _file_reader(stack: contextlib.ExitStack, fd: int, partial: str) -> RecordReader:
    """The file being written, read from its start by pread (its fd stays where it is)."""
    at = [0]

    def read(n: int) -> bytes:
        data = os.pread(fd, n, at[0])
        at[0] += len(data)
        return data

    def skip(n: int) -> None:
        at[0] += n

    source = BufferedSource(read, skip)
    name = names.shown(os.path.basename(partial))
    return RecordReader(source.read, name=name, skip=source.skip)


def _digest_of_file(fd: int, partial: str) -> str:
    with contextlib.ExitStack() as stack:
        reader = _file_reader(stack, fd, partial)
        return state_digest(merge([reader]), reader.big_endian)


def sidecar_document(
    report: ArchiveReport, result: Consolidated, argv: list[str]
) -> dict[str, object]:
    """The new full's NAME.json: what `cold check` holds against the stream (dataset, GUIDs,
    bytes, kind, snapshots) and that it is synthetic: its sources and digests."""
    route, written = result.route, result.written
    assert written is not None
    digests = {f.name: f.digest for f in report.files}
    dataset = written.toname.partition("@")[0]
    return {
        "dataset": dataset,
        "from_snapshot": None,
        "from_guid": "0",
        "to_snapshot": route.snapshot,
        "to_guid": str(route.guid),
        "snapshots": [route.snapshot],
        "kind": "full",
        "bytes": written.bytes,
        "sha256": result.sha256,
        "synthetic": {
            "by": SYNTHETIC,
            "state_digest": result.full_digest,
            "sources": [
                {"file": names.for_json(f)[0], "digest": digests.get(f)} for f in route.files
            ],
            "substreams": [
                {
                    "file": names.for_json(link.file)[0],
                    "index": link.index,
                    "snapshot": link.snapshot,
                    "guid": str(link.guid),
                }
                for link in route.links
            ],
        },
        "command": ["zverify", *argv],
        "created": int(time.time()),
        "zverify_version": __version__,
        provenance.KEY: provenance.producer(),
    }


def _write_sidecar(
    into: Store,
    report: ArchiveReport,
    result: Consolidated,
    argv: list[str],
    manifest: dict[str, object] | None = None,
) -> str | None:
    """NAME.json by an exclusive .partial and a rename; what went wrong, or None (a sidecar
    is never needed to restore: its failure keeps the proven full)."""
    doc = sidecar_document(report, result, argv)
    doc |= {contents.KEY: manifest} if manifest is not None else {}
    data = (json.dumps(doc, indent=2) + "\n").encode()
    w: StoreWriter | None = None
    try:
        w = into.writer(result.name + names.SIDECAR)
        view = memoryview(data)
        while view:
            view = view[os.write(w.fd, view) :]
        w.commit()
    except (OSError, ColdError, FileExistsError) as err:
        left = w.discard() if w is not None else None
        why = err.strerror if isinstance(err, OSError) and err.strerror else err
        return f"its sidecar was not written: {why}{f'; {left}' if left else ''}"
    return None


# -- the operations ---------------------------------------------------------------------------


def consolidate(
    store: Store,
    into: Store,
    dataset: str | None,
    snapshot: str | None,
    dry_run: bool,
    wait: float,
    argv: list[str],
    progress: Callable[[str, int], None] | None = None,
) -> Consolidated:
    """Read the archive, plan the route, and (unless dry_run) write and prove the full,
    holding the archive's lock (a writer's: no prune deletes a source meanwhile)."""
    how = "read" if dry_run else "write"
    with contextlib.ExitStack() as locks:
        locks.enter_context(store.lock(how, wait))
        if into.places != store.places:
            locks.enter_context(into.lock(how, wait))
        report = check_archive(store, dataset, progress)
        planned = plan_consolidate(report, snapshot, into)
        if dry_run:
            return planned
        return consolidate_route(report, planned, into, argv)


def digest(
    store: Store,
    dataset: str | None,
    snapshot: str | None,
    wait: float,
    progress: Callable[[str, int], None] | None = None,
) -> Digested:
    with store.lock("read", wait):
        report = check_archive(store, dataset, progress)
        return digest_snapshot(report, snapshot)
