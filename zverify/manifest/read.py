"""Read a native manifest back as the canonical entry stream the engine compares.

Nothing in a manifest is trusted until its trailer has been checked: the reader hashes
every line as it goes and, at the trailer, compares the digest and the entry count.  A
missing trailer (truncated), a wrong digest (edited or damaged), a line out of canonical
order, an unknown version or a malformed line raises ManifestError naming the line, which
ends the comparison with exit 2 whatever had been compared so far.
"""

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from zverify import boundedjson
from zverify.entry import Entry
from zverify.errors import ManifestError
from zverify.filters import Filter
from zverify.fsinfo import FsInfo
from zverify.hashing import DIGEST_SIZES, Algorithm, blake3_hasher
from zverify.manifest.bounds import MAX_HEADER_LINE, MAX_LINE, bad_name
from zverify.manifest.format import FORMAT_KEY, VERSION, LineError, parse_entry
from zverify.pathnames import from_manifest

HASH_EVERY = 2048  # lines hashed at once
HASH_BYTES = 1 << 20  # or as soon as this many bytes are pending


@dataclass(frozen=True)
class Header:
    algorithm: Algorithm
    root: bytes
    host: str
    created: str
    zverify: str
    filesystem: FsInfo
    xattrs: bool
    one_file_system: bool
    filter: Filter | None  # written with --exclude/--files-from: what it left out
    unverifiable: list[str] = field(default_factory=list)


class NativeManifest:
    """One manifest file: its header, then (once) its entries, checked against the trailer."""

    def __init__(self, path: str, stream: BinaryIO, first: bytes, keep_xattrs: bool) -> None:
        """stream: positioned after `first`, the header line (read by whoever sniffed it)."""
        self.path = path
        self._keep_xattrs = keep_xattrs
        self._stream = stream
        self._lineno = 1
        self._digest = blake3_hasher()
        self._pending: list[bytes] = [first]
        self._pending_bytes = len(first)
        self.header = self._parse_header(first)
        self.entries_read = 0
        self.trailer: dict[str, Any] | None = None

    def close(self) -> None:
        self._stream.close()

    def __iter__(self) -> Iterator[Entry]:
        digest_size = DIGEST_SIZES[self.header.algorithm]
        previous: bytes | None = None
        for raw in self._lines():
            obj = self._decode(raw)
            if "end" in obj:
                self._check_trailer(obj)
                return
            try:
                entry = parse_entry(obj, self.entries_read + 1)
            except LineError as err:
                raise self._error(str(err)) from None
            if not self._keep_xattrs and entry.xattrs is not None:
                entry = _without_xattrs(entry)
            if entry.digest is not None and len(entry.digest) != digest_size:
                raise self._error(f"digest length does not match {self.header.algorithm}")
            key = entry.path.replace(b"/", b"\0")
            if previous is None and entry.path != b"":
                raise self._error('the first entry must be the root (path "")')
            if previous is not None and key <= previous:
                raise self._error("entries out of canonical order (or repeated)")
            previous = key
            self.entries_read += 1
            yield entry
        raise ManifestError(
            self.path, None, f"truncated after line {self._lineno}: the trailer line is missing"
        )

    def bytes_read(self) -> int:
        try:
            return self._stream.tell()
        except (OSError, ValueError):
            return 0

    def _lines(self) -> Iterator[bytes]:
        readline = self._stream.readline
        try:
            while raw := readline(MAX_LINE + 1):
                self._lineno += 1
                if not raw.endswith(b"\n"):
                    if len(raw) > MAX_LINE:
                        raise self._error(f"a line longer than {MAX_LINE} bytes")
                    raise self._error("truncated: the last line has no newline")
                yield raw
        except OSError as err:
            raise self._error(f"read failed: {err.strerror or err}") from None
        except EOFError as err:  # gzip/zstd stream cut short
            raise self._error(f"truncated compressed stream: {err}") from None

    def _decode(self, raw: bytes) -> dict[str, Any]:
        try:
            obj = boundedjson.loads(raw.decode("ascii"))
        except boundedjson.TooDeep as err:  # [[[[... : no line zverify writes nests 4 deep
            raise self._error(str(err)) from None
        except ValueError:  # UnicodeDecodeError too
            raise self._error("not a line of ASCII JSON") from None
        if not isinstance(obj, dict):
            raise self._error("not a JSON object")
        if "end" not in obj:
            self._pending.append(raw)
            self._pending_bytes += len(raw)
            if len(self._pending) >= HASH_EVERY or self._pending_bytes >= HASH_BYTES:
                self._hash_pending()
        return obj

    def _hash_pending(self) -> None:
        self._digest.update(b"".join(self._pending))
        self._pending.clear()
        self._pending_bytes = 0

    def _check_trailer(self, obj: dict[str, Any]) -> None:
        self._hash_pending()
        if obj.get("blake3") != self._digest.hexdigest():
            raise self._error("digest mismatch: the manifest was changed or damaged")
        end = obj.get("end")
        if not isinstance(end, dict) or end.get("entries") != self.entries_read:
            raise self._error(
                f"trailer counts {end.get('entries') if isinstance(end, dict) else '?'} "
                f"entries, the manifest holds {self.entries_read}"
            )
        if self._stream.read(1):
            raise self._error("data after the trailer")
        self.trailer = obj

    def _parse_header(self, first: bytes) -> Header:
        if not first:
            raise self._error("empty file: not a manifest")
        if not first.endswith(b"\n"):
            if len(first) > MAX_HEADER_LINE:
                reason = f"not a zverify manifest (a first line over {MAX_HEADER_LINE} bytes)"
                raise self._error(reason)
            raise self._error("truncated: the header line has no newline")
        try:
            obj = boundedjson.loads(first.decode("ascii"))
        except ValueError:  # UnicodeDecodeError and boundedjson.TooDeep too
            raise self._error("not a zverify manifest (the first line is not JSON)") from None
        if not isinstance(obj, dict) or FORMAT_KEY not in obj:
            raise self._error(f"not a zverify manifest (no {FORMAT_KEY!r} in the header)")
        version = obj[FORMAT_KEY]
        if type(version) is not int or version != VERSION:  # true and 1.0 equal 1 in Python
            raise self._error(
                f"format version {version!r}; this zverify reads version {VERSION} only"
            )
        try:
            header = _header(obj)
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            # AttributeError: a value of the wrong JSON type (a list where text belongs)
            raise self._error(f"bad header: {err}") from None
        return header

    def _error(self, reason: str) -> ManifestError:
        return ManifestError(self.path, self._lineno, reason)


def _header(obj: dict[str, Any]) -> Header:
    fs = obj["filesystem"]
    return Header(
        algorithm=Algorithm(obj["algorithm"]),
        root=from_manifest(obj["root"]),
        host=str(obj["host"]),
        created=str(obj["created"]),
        zverify=str(obj["zverify"]),
        filesystem=FsInfo(str(fs["type"]), str(fs["source"]), str(fs["mountpoint"]), fs["zfs"]),
        xattrs=bool(obj["xattrs"]),
        one_file_system=bool(obj["one_file_system"]),
        filter=_filter(obj.get("filter")),
        unverifiable=[str(x) for x in obj["unverifiable"]],
    )


def _filter(raw: Any) -> Filter | None:
    """The header's filter; its --files-from paths must be names inside the tree (checked
    before the C filter compiles them)."""
    if raw is None:
        return None
    listed = raw.get("listed") if isinstance(raw, dict) else None
    for item in listed if isinstance(listed, list) else ():
        path = from_manifest(str(item))
        why = bad_name(path) if path else "an empty name"
        if why is not None:
            raise ValueError(f"its --files-from list: {why}")
    return Filter.from_json(raw, "manifest")


_XATTRS = Entry.__match_args__.index("xattrs")


def _without_xattrs(entry: Entry) -> Entry:
    fields = list(entry)
    fields[_XATTRS] = None
    return Entry(fields)


def root_label(header: Header) -> str:
    return f"{header.host}:{os.fsdecode(header.root)}"
