"""hashdeep / md5deep known-file lists (`hashdeep -r DIR > list`), read as a side of compare.

    %%%% HASHDEEP-1.0
    %%%% size,md5,sha256,filename
    ## Invoked from: /srv
    12,5d41…,2cf2…,/srv/data/a,b.txt        the name is everything after the last digest

A list records regular files' sizes and digests only (hashdeep follows symlinks and lists
what they point to), so it can tell content, missing and extra files, nothing else.
Absolute names are taken relative to their common directory, which the report names.
Nothing in the format escapes a newline in a name: such a list cannot be read exactly, and
a line that does not parse ends the comparison with exit 2.
"""

import os
from collections.abc import Iterable

from zverify.compare.policy import DiffKind
from zverify.entry import Entry, Kind
from zverify.hashing import DIGEST_SIZES, Algorithm
from zverify.manifest.bounds import MAX_FOREIGN_PATH, bad_name
from zverify.manifest.listing import Listing, recorded_entry
from zverify.manifest.mtree import SpecError
from zverify.pathnames import sort_key

_ALGORITHMS = {"sha256": Algorithm.SHA256, "sha1": Algorithm.SHA1, "md5": Algorithm.MD5}
Row = tuple[int, int, dict[str, str], bytes]  # line number, size, digests, name
LACKING = {
    kind: "a hashdeep list records file sizes and digests only"
    for kind in (DiffKind.MODE, DiffKind.OWNER, DiffKind.MTIME, DiffKind.HARDLINK, DiffKind.XATTR)
}


def parse(first: bytes, lines: Iterable[bytes]) -> Listing:
    """raises SpecError naming the line."""
    if first.strip() != b"%%%% HASHDEEP-1.0":
        raise SpecError(1, "unknown hashdeep version line")
    columns: list[str] | None = None
    rows: list[Row] = []
    for number, raw in enumerate(lines, 2):
        line = raw.rstrip(b"\r\n")
        if line.startswith(b"%%%% "):
            found = line[5:].decode("ascii", "replace").split(",")
            if columns is not None and found != columns:
                raise SpecError(number, "a second %%%% column line, with other columns")
            columns = found
            if columns[0] != "size" or columns[-1] != "filename":
                raise SpecError(number, "the column line must be size,...,filename")
        elif line.startswith(b"##") or not line:
            continue
        elif columns is None:
            raise SpecError(number, "a file line before the %%%% column line")
        else:
            fields = line.split(b",", len(columns) - 1)
            if len(fields) != len(columns) or not fields[0].isdigit() or len(fields[0]) > 20:
                raise SpecError(number, "not size,digests...,filename")
            if not all(f.isascii() for f in fields[:-1]):
                raise SpecError(number, "a size or digest that is not ASCII")
            digests = {
                c: f.decode("ascii") for c, f in zip(columns[1:-1], fields[1:-1], strict=True)
            }
            rows.append((number, int(fields[0]), digests, fields[-1]))
    if columns is None:
        raise SpecError(1, "no %%%% column line")
    algorithm = next((a for c, a in _ALGORITHMS.items() if c in columns), None)
    return _listing(rows, algorithm)


def _listing(rows: list[Row], algorithm: Algorithm | None) -> Listing:
    names = [name.removeprefix(b"./") for _, _, _, name in rows]
    absolute = bool(names) and all(n.startswith(b"/") for n in names)
    root = os.path.commonpath([os.path.dirname(n) for n in names]) if absolute else b""
    entries: dict[bytes, Entry] = {}
    for (number, size, digests, _), name in zip(rows, names, strict=True):
        path = name[len(root) :].lstrip(b"/") if root else name
        if not path or path in entries:
            raise SpecError(number, f"{os.fsdecode(name)!r} is listed twice or is the root")
        why = bad_name(path) or (len(path) > MAX_FOREIGN_PATH and "a name too long")
        if why:
            raise SpecError(number, why)
        digest = None
        if algorithm is not None:
            try:
                digest = bytes.fromhex(digests[algorithm.value])
            except ValueError:
                raise SpecError(number, f"bad {algorithm} digest") from None
            if len(digest) != DIGEST_SIZES[algorithm]:
                raise SpecError(number, f"{algorithm} digest of the wrong length")
        entries[path] = recorded_entry(
            path, Kind.FILE, len(entries) + 1, size=size, data_bytes=size, digest=digest
        )
    lacking = dict(LACKING)
    if algorithm is None:
        lacking[DiffKind.CONTENT] = "the list has no sha256, sha1 or md5 column"
    where = f"names relative to {os.fsdecode(root)!r}" if root else "relative names"
    summary = f"{len(entries):,} files, {algorithm or 'no usable'} digests, {where}"
    ordered = [entries[p] for p in sorted(entries, key=sort_key)]
    return Listing(ordered, algorithm, lacking, files_only=True, summary=summary)
