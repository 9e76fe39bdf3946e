"""Checkfiles (sha256sum, sha512sum, sha1sum, md5sum, b3sum, xxh128sum), read as a side of compare.

    SUMS=SHA256SUMS; zverify compare --profile content $SUMS DST    as `cd DST && sha256sum -c`

Lines are read the way coreutils 9 reads them (md5sum.c), which b3sum 1.x's format is a
subset of:

    <hex>  name            text mode      <hex> *name       binary mode (the same bytes)
    <hex> name             the one-space ("BSD reversed") form; not mixed with the above
    SHA256 (name) = <hex>  the --tag (BSD) form; `SHA2-256(name)= <hex>` (openssl) too
    \\<any of the above>    the name is escaped: \\\\, \\n and \\r, no other escape

A line starting with `#` and an empty line are skipped; a trailing carriage return is
dropped, except in a b3sum list (b3sum writes a CR in a name raw, and keeps it when
checking) unless every line ends in one (CRLF text).  Any other line is an error naming
it (never a line skipped, which `-c` only warns about), and so is a last line without its
line end: the tools end every line, and a list cut inside its last name would otherwise
pass for a list naming another file.

The algorithm: the tag, else the digest's length (32 hex md5, 40 sha1, 128 sha512); 64 hex
is sha256 or blake3 and 32 also xxh128sum's XXH3-128: then --hash, else the file's name
(SHA256SUMS, x.sha256, B3SUMS, x.b3, XXH128SUMS...), else exit 2 naming --hash.

Names are relative to the other side's root, as `-c` takes them relative to the current
directory (not the checkfile's); a leading `./` is dropped; absolute names are taken
relative to their common directory, which the report names.  A checkfile records digests
of regular files only: no directories, sizes, metadata or hardlinks (refused per profile);
an extra file on the other side is found by walking that side, as for a hashdeep list.
"""

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass

from zverify.compare.policy import DiffKind
from zverify.entry import SIZE_NOT_RECORDED, Kind
from zverify.hashing import DIGEST_SIZES, Algorithm
from zverify.manifest.bounds import MAX_FOREIGN_PATH, bad_name
from zverify.manifest.listing import Listing, recorded_entry
from zverify.manifest.mtree import SpecError
from zverify.pathnames import sort_key

LACKING = {
    kind: "a checkfile records file digests only"
    for kind in (DiffKind.MODE, DiffKind.OWNER, DiffKind.MTIME, DiffKind.HARDLINK, DiffKind.XATTR)
}
TAGS = {
    b"MD5": Algorithm.MD5,
    b"SHA1": Algorithm.SHA1,
    b"SHA256": Algorithm.SHA256,
    b"SHA512": Algorithm.SHA512,
    b"SHA2-256": Algorithm.SHA256,  # openssl 3 dgst
    b"SHA2-512": Algorithm.SHA512,
    b"BLAKE3": Algorithm.BLAKE3,
    b"XXH128": Algorithm.XXH3_128,  # xxhsum --tag: the same canonical digest as zverify's
}
# What a digest's length leaves open, the usual meaning first.
BY_LENGTH = {
    32: (Algorithm.MD5, Algorithm.XXH3_128),
    40: (Algorithm.SHA1,),
    64: (Algorithm.SHA256, Algorithm.BLAKE3),
    128: (Algorithm.SHA512,),
}
# Words of a file name that tell the algorithm (lowercased; compression suffix removed).
_NAME_HINTS = [
    (re.compile(r"sha-?2?-?256"), Algorithm.SHA256),
    (re.compile(r"sha-?2?-?512"), Algorithm.SHA512),
    (re.compile(r"sha-?1(?!\d)"), Algorithm.SHA1),
    (re.compile(r"md5"), Algorithm.MD5),
    (re.compile(r"blake3|(?<![a-z0-9])b3(?:sums?)?(?![a-z0-9])"), Algorithm.BLAKE3),
    (re.compile(r"xxh(?:3|128)"), Algorithm.XXH3_128),
]
# b2sum writes 128 hex digits as sha512sum does: its name keeps its lines from being hashed
# with SHA-512 and reported as all different
_BLAKE2 = re.compile(r"blake2|(?<![a-z0-9])b2(?:sums?)?(?![a-z0-9])")
_GNU = re.compile(rb"([0-9A-Fa-f]+)[ \t]")
_TAGGED = re.compile(rb"([A-Za-z][A-Za-z0-9-]*) ?\((.*)\)[ \t]*=[ \t]*([0-9A-Fa-f]+)")
_UNESCAPE = {b"\\": b"\\", b"n": b"\n", b"r": b"\r"}


@dataclass
class _Line:
    number: int
    digest: bytes  # hex, as written
    name: bytes  # unescaped, as written (./ and absolute names are settled later)
    tag: Algorithm | None
    cr: bool  # ended in a carriage return, dropped
    one_space: bool | None  # the `<hex> name` form; None: the --tag form

    @property
    def gnu(self) -> bool:
        return self.one_space is not None


def looks_like_checkfile(line: bytes) -> bool:
    """A checksum line in any form read here (a tag zverify cannot hash included, so that
    the error names it)."""
    text = line.rstrip(b"\r\n").lstrip(b" \t").removeprefix(b"\\")
    gnu = _GNU.match(text)
    if gnu is not None and len(gnu.group(1)) in BY_LENGTH:
        return True
    return _TAGGED.fullmatch(text) is not None


def parse(path: str, asked: Algorithm | None, first: bytes, rest: Iterable[bytes]) -> Listing:
    """All files of a checkfile, sorted; raises SpecError naming the line.  path gives the
    name hints ('-' none); asked is --hash, which settles a 64-hex list."""
    lines = _lines(first, rest)
    if not lines:
        raise SpecError(1, "no checksum line")
    algorithm, told = _algorithm(lines, path, asked)
    crlf = all(line.cr for line in lines)
    for line in lines:
        if line.cr and line.gnu and algorithm is Algorithm.BLAKE3 and not crlf:
            line.name += b"\r"  # b3sum writes a CR in a name raw, and -c keeps it
        if algorithm is Algorithm.BLAKE3 and "\ufffd".encode() in line.name:
            raise SpecError(
                line.number,
                "a name holding U+FFFD: b3sum writes it for bytes that are not UTF-8 (the "
                "real name is lost; `b3sum -c` refuses it too)",
            )
    return _listing(lines, algorithm, told)


def _lines(first: bytes, rest: Iterable[bytes]) -> list[_Line]:
    found: list[_Line] = []
    reversed_form: bool | None = None  # coreutils: one form per file, set by its first line
    for number, raw in enumerate([first, *rest], 1):
        text = raw.removesuffix(b"\n")
        if text == raw:  # the tools end every line: a list cut short looks like this
            raise SpecError(number, "the last line has no line end: a truncated checkfile?")
        if text.startswith(b"#") or not text:
            continue
        cr = text.endswith(b"\r")
        line = _line(number, text.removesuffix(b"\r"), cr)
        if line.one_space is not None:
            if reversed_form is not None and line.one_space != reversed_form:
                raise SpecError(
                    number, "one- and two-space lines in one file (coreutils refuses the mix)"
                )
            reversed_form = line.one_space
        found.append(line)
    return found


def _line(number: int, text: bytes, cr: bool) -> _Line:
    """One line without its line end."""
    text = text.lstrip(b" \t")
    escaped = text.startswith(b"\\")
    text = text.removeprefix(b"\\")
    gnu = _GNU.match(text)
    one_space: bool | None = None
    if gnu is not None and len(gnu.group(1)) in BY_LENGTH:
        rest = text[gnu.end() :]
        one_space = len(rest) == 1 or rest[:1] not in (b" ", b"*")
        name = rest if one_space else rest[1:]  # the mode character (` ` or `*`) dropped
        digest, tag = gnu.group(1), None
    elif (tagged := _TAGGED.fullmatch(text)) is not None:
        tag = TAGS.get(tagged.group(1).upper())  # coreutils wants upper case: no other meaning
        if tag is None:
            shown = tagged.group(1).decode("ascii")
            raise SpecError(number, f"{shown} digests: an algorithm zverify cannot hash")
        name, digest = tagged.group(2), tagged.group(3)
    else:
        raise SpecError(number, "not a checksum line (`HASH  name` or `ALGO (name) = HASH`)")
    if not name:
        raise SpecError(number, "a checksum line without a name")
    if escaped:
        name = _unescape(number, name)
    return _Line(number, digest, name, tag, cr, one_space)


def _unescape(number: int, name: bytes) -> bytes:
    """coreutils' filename_unescape: \\\\, \\n and \\r only."""
    out = bytearray()
    parts = iter(re.split(rb"(\\.?)", name, flags=re.DOTALL))
    for part in parts:
        if not part.startswith(b"\\"):
            out += part
        elif part[1:] in _UNESCAPE:
            out += _UNESCAPE[part[1:]]
        else:
            what = "ends in a lone \\" if part == b"\\" else f"holds the unknown escape {part!r}"
            raise SpecError(number, f"the escaped name {what} (only \\\\, \\n and \\r)")
    return bytes(out)


def _algorithm(lines: list[_Line], path: str, asked: Algorithm | None) -> tuple[Algorithm, str]:
    """The one algorithm of every line, and what told it."""
    possible: tuple[Algorithm, ...] | None = None
    for line in lines:
        fits = (line.tag,) if line.tag is not None else BY_LENGTH.get(len(line.digest), ())
        fits = tuple(a for a in fits if 2 * DIGEST_SIZES[a] == len(line.digest))
        narrowed = fits if possible is None else tuple(a for a in possible if a in fits)
        if not narrowed:
            raise SpecError(line.number, _mismatch(line, possible))
        possible = narrowed
    assert possible is not None
    tagged = any(line.tag is not None for line in lines)
    if len(possible) == 1 and not tagged and possible[0] is Algorithm.SHA512 and asked is None:
        base = os.path.basename(path).lower()
        if _BLAKE2.search(base) and not any(w.search(base) for w, _ in _NAME_HINTS):
            raise SpecError(
                lines[0].number,
                "the file's name says BLAKE2 (b2sum), an algorithm zverify cannot hash "
                "(--hash sha512 reads it as sha512sum's)",
            )
    if len(possible) == 1:
        return possible[0], "its tags" if tagged else "the digests' length"
    if asked in possible:
        return asked, "--hash"
    hinted = [a for a in _hinted(path) if a in possible]
    if len(hinted) == 1:
        return hinted[0], "the file's name"
    if possible[0] is Algorithm.MD5:
        return Algorithm.MD5, "the digests' length"  # md5sum's, by far the commoner
    choices = " or ".join(f"--hash {a}" for a in possible)
    raise SpecError(
        lines[0].number,
        f"{len(lines[0].digest)} hex digits are {' or '.join(possible)} digests and the "
        f"file's name does not tell which: give {choices}",
    )


def _mismatch(line: _Line, possible: tuple[Algorithm, ...] | None) -> str:
    if line.tag is not None:
        if 2 * DIGEST_SIZES[line.tag] != len(line.digest):
            return f"a {line.tag} digest of {len(line.digest)} hex digits"
        return f"a {line.tag} line among {'/'.join(possible or ())} lines"
    if possible is None:
        return f"a digest of {len(line.digest)} hex digits"
    return f"a digest of {len(line.digest)} hex digits among {'/'.join(possible)} lines"


def _hinted(path: str) -> list[Algorithm]:
    """The algorithms a checkfile's name mentions (B3SUMS, x.sha256, SHA256SUMS.gz...)."""
    base = os.path.basename(path).lower().removesuffix(".gz").removesuffix(".zst")
    return [algorithm for word, algorithm in _NAME_HINTS if word.search(base)]


def _listing(lines: list[_Line], algorithm: Algorithm, told: str) -> Listing:
    names = [_relative(line.name) for line in lines]
    absolute = all(n.startswith(b"/") for n in names)
    root = os.path.commonpath([os.path.dirname(n) for n in names]) if absolute else b""
    seen: dict[bytes, _Line] = {}
    for line, name in zip(lines, names, strict=True):
        path = name[len(root) :].lstrip(b"/") if root else name
        why = bad_name(path) or (len(path) > MAX_FOREIGN_PATH and "a name too long") or None
        if why or not path:
            raise SpecError(line.number, why or f"{os.fsdecode(line.name)!r} names the root")
        if path in seen:
            shown = path[:80].decode("utf-8", "backslashreplace")
            raise SpecError(
                line.number, f"{shown!r} is listed twice (lines {seen[path].number} and here)"
            )
        seen[path] = line
    digests = {path: bytes.fromhex(line.digest.decode("ascii")) for path, line in seen.items()}
    entries = [
        recorded_entry(p, Kind.FILE, n, size=SIZE_NOT_RECORDED, digest=digests[p])
        for n, p in enumerate(sorted(seen, key=sort_key), 1)
    ]
    where = f"names relative to {os.fsdecode(root)!r}" if root else "relative names"
    summary = (
        f"{len(entries):,} files, {algorithm} digests (told by {told}), {where}, "
        "no sizes (its du counts 0)"
    )
    return Listing(entries, algorithm, dict(LACKING), files_only=True, sizes=False, summary=summary)


def _relative(name: bytes) -> bytes:
    while name.startswith(b"./"):
        name = name[2:].lstrip(b"/")
    return name
