"""Open any manifest zverify reads, recognised by its first line (zverify.trees.open makes
it one side of a compare).

{"zverify_manifest": ...    zverify's own format (read.py): everything is recorded
#mtree, /set, . type=dir    a BSD mtree spec (mtree.py): what its keywords record
%%%% HASHDEEP-1.0           a hashdeep known-file list (hashdeep.py): file contents
<hex>  name, MD5 (name) = a checkfile of sha256sum, b3sum, md5sum... (checksums.py): contents

A first line that is a comment (`#`) is mtree's, or a checkfile's: the first line that is
not a comment decides.
"""

import functools
import itertools
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import BinaryIO

from zverify.errors import ManifestError
from zverify.hashing import Algorithm
from zverify.manifest import bagit, checksums, hashdeep, mtree
from zverify.manifest.bounds import (
    MAX_FOREIGN_LINE,
    MAX_HEADER_LINE,
    NATIVE_START,
    LineTooLong,
    bounded_lines,
)
from zverify.manifest.files import open_input
from zverify.manifest.listing import Listing
from zverify.manifest.read import NativeManifest

MAX_LEADING_COMMENTS = 1000  # lines looked through for the first that is not a comment


def open_manifest(
    path: str, keep_xattrs: bool, asked: Algorithm | None = None
) -> Listing | NativeManifest:
    """asked: --hash, which tells the algorithm of a checkfile of 64-hex digests.  A foreign
    format is read whole (a Listing); zverify's own is read as it is iterated."""
    try:
        stream = open_input(path)
        first = stream.readline(MAX_FOREIGN_LINE + 1)
        if len(first) > MAX_FOREIGN_LINE and first.startswith(NATIVE_START):
            first += stream.readline(MAX_HEADER_LINE - len(first) + 1)  # a long files list
    except OSError as err:
        raise ManifestError(path, None, err.strerror or str(err)) from None
    except EOFError as err:
        raise ManifestError(path, 1, f"truncated compressed stream: {err}") from None
    try:
        if len(first) > MAX_FOREIGN_LINE and not first.startswith(NATIVE_START):
            reason = f"not a manifest: a first line longer than {MAX_FOREIGN_LINE} bytes"
            raise ManifestError(path, 1, reason)
        if first.startswith(b"%%%% HASHDEEP"):
            return _read(path, hashdeep.parse, first, stream, what="a hashdeep list")
        if bagit.looks_like_bag(first):
            parse_bag = functools.partial(bagit.parse, path)
            return _read(path, parse_bag, first, stream, what="a BagIt bag")
        ahead = _comments(path, first, stream)
        decisive = ahead[-1] if ahead else first
        if checksums.looks_like_checkfile(decisive):
            parse_sums = functools.partial(checksums.parse, path, asked)
            return _read(path, parse_sums, first, stream, ahead, "a checkfile")
        if mtree.looks_like_spec(first):
            return _read(path, mtree.parse, first, stream, ahead, "an mtree spec")
        return NativeManifest(path, stream, first, keep_xattrs)
    except BaseException:
        stream.close()
        raise


def _comments(path: str, first: bytes, stream: BinaryIO) -> list[bytes]:
    """The lines after a first comment line up to the first that is not one (bounded)."""
    ahead: list[bytes] = []
    if not first.startswith(b"#"):
        return ahead
    try:
        for _, raw in bounded_lines(stream, MAX_FOREIGN_LINE, 2):
            ahead.append(raw)
            comment = raw.startswith(b"#") or not raw.strip()
            if not comment or len(ahead) >= MAX_LEADING_COMMENTS:
                break
    except LineTooLong as err:
        raise ManifestError(path, err.line, str(err)) from None
    except (OSError, EOFError) as err:
        raise ManifestError(path, None, f"read failed: {err}") from None
    return ahead


def _read(
    path: str,
    parse: Callable[[bytes, Iterable[bytes]], Listing],
    first: bytes,
    stream: BinaryIO,
    ahead: list[bytes] | None = None,
    what: str = "a manifest",
) -> Listing:
    """A whole foreign manifest (ahead: lines after the first already read; what: its format,
    for the report); its errors become ManifestError naming the line."""
    ahead = ahead or []
    try:
        with stream:
            rest = (raw for _, raw in bounded_lines(stream, MAX_FOREIGN_LINE, 2 + len(ahead)))
            listing = parse(first, itertools.chain(ahead, rest))
    except LineTooLong as err:
        raise ManifestError(path, err.line, str(err)) from None
    except mtree.SpecError as err:
        raise ManifestError(path, err.line, str(err)) from None
    except bagit.BagError as err:
        raise ManifestError(path, None, f"the bag is damaged: {err}") from None
    except (OSError, EOFError) as err:
        raise ManifestError(path, None, f"read failed: {err}") from None
    return replace(listing, what=what)
