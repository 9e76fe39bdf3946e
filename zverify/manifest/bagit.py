"""BagIt bags (RFC 8493), read as a side of compare through their `bagit.txt`.

    zverify compare --profile content BAG/bagit.txt BAG/data       is the bag valid?
    zverify compare --profile content BAG/bagit.txt /restore/data  is this the bag's payload?

The bag's own files are checked before any payload is compared, each failure exit 2:
bagit.txt (version, encoding), every payload manifest listing the same files (RFC 8493 §3
"complete"), every tag manifest's digests of the tag files, fetch.txt naming payload files
only, and, against the bag's own payload under data/, every payload manifest but the one
compare uses and both numbers of Payload-Oxum.  The strongest manifest compare can hash
(sha512, sha256, sha1, md5) gives the digests the other side is compared with: against
BAG/data, every payload manifest has then been checked.  A manifest whose algorithm cannot
be computed here is exit 2, never skipped.

Tag files are text in the bag's Tag-File-Character-Encoding (any Python text codec), with
lines ending in LF, CR or CRLF; tags are `Label: value` (from BagIt 1.0 exactly one space
or tab after the colon), continued on lines that start with whitespace.  Paths are under
`data/` (a leading `./` is accepted, as bagit-python does), with `%0A`, `%0D` and `%25`
decoded as the RFC requires (most tools do not encode `%`: their bags then show the name
as missing and extra, never as identical).  A manifest records no sizes, modes, owners,
times or hardlinks, and no directories.

Every file zverify opens from a name in a manifest (tag files, and the payload files the
weaker manifests are checked against) is opened below the bag one directory at a time
without following a symlink, and must be a regular file (`../x`, `/etc/passwd`,
`link/etc/passwd` with `link -> /`, a FIFO are errors naming the line); the bag's own
manifests and bag-info.txt too.
"""

import codecs
import errno
import hashlib
import itertools
import os
import re
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from zverify.compare.policy import DiffKind
from zverify.entry import SIZE_NOT_RECORDED, Kind
from zverify.hashing import Algorithm
from zverify.manifest.bounds import MAX_FOREIGN_LINE, MAX_FOREIGN_PATH, bad_name
from zverify.manifest.listing import Listing, recorded_entry
from zverify.manifest.mtree import SpecError
from zverify.pathnames import sort_key

# What compare can hash on the other side, strongest first.
ALGORITHMS = {"sha512": Algorithm.SHA512, "sha256": Algorithm.SHA256,
              "sha1": Algorithm.SHA1, "md5": Algorithm.MD5}  # fmt: skip
# Every manifest name checked (hashlib's names): RFC 8493 §2.4 names an algorithm by its
# lowercased name without non-alphanumerics (sha3256), and bagit-python by hashlib's
# (sha3_256, blake2b), so both are read.
HASHLIB = {
    **{name: name for name in ("md5", "sha1", "sha224", "sha256", "sha384", "sha512")},
    **{f"sha3{bits}": f"sha3_{bits}" for bits in (224, 256, 384, 512)},
    **{f"sha3_{bits}": f"sha3_{bits}" for bits in (224, 256, 384, 512)},
    "blake2b": "blake2b",
    "blake2s": "blake2s",
}
LACKING = {
    kind: "a BagIt manifest records payload digests only"
    for kind in (DiffKind.MODE, DiffKind.OWNER, DiffKind.MTIME, DiffKind.HARDLINK, DiffKind.XATTR)
}
_PERCENT = re.compile(r"%(0[aAdD]|25)")
_BREAK = re.compile(r"\r\n|\r|\n")  # RFC 8493: a line ends with LF, CR or CRLF
_MANIFEST_LINE = re.compile(r"([^ \t]+)[ \t]+(.+)")
_FETCH_LINE = re.compile(r"([^ \t]+)[ \t]+([^ \t]+)[ \t]+(.+)")
MAX_DECLARATION_LINES = 100  # bagit.txt: two lines
READ_BLOCK = 1 << 20


class BagError(ValueError):
    """The bag itself is broken: names the file and the line."""

    def __init__(self, name: str, line: int | None, reason: str) -> None:
        where = f"{name} line {line}" if line else name
        super().__init__(f"{where}: {reason}")


@dataclass(frozen=True)
class _Manifest:
    name: str  # manifest-ALG.txt
    algorithm: str  # hashlib's name
    digests: dict[bytes, bytes]  # payload path below data/ -> digest


def looks_like_bag(first: bytes) -> bool:
    return first.startswith(b"BagIt-Version:")


def parse(bagit_txt: str, first: bytes, rest: Iterable[bytes]) -> Listing:
    """The payload of the bag whose bagit.txt this is; raises SpecError/BagError."""
    lines = list(itertools.islice(itertools.chain([first], rest), MAX_DECLARATION_LINES))
    if next(iter(rest), None) is not None:
        raise BagError("bagit.txt", None, f"more than {MAX_DECLARATION_LINES} lines")
    strict, encoding = _declaration(b"".join(lines))
    bag = Path(bagit_txt).parent
    _check_tag_manifests(bag, encoding)
    manifests = [_read_manifest(bag, m.name, encoding) for m in sorted(bag.glob("manifest-*.txt"))]
    comparable = [m for m in manifests if m.algorithm in ALGORITHMS]
    if not comparable:
        found = ", ".join(m.name for m in manifests) or "none"
        raise BagError(str(bag), None, f"no payload manifest in sha512/sha256/sha1/md5 ({found})")
    if len({frozenset(m.digests) for m in manifests}) > 1:
        raise BagError(str(bag), None, "the payload manifests do not list the same files")
    chosen = min(comparable, key=lambda m: list(ALGORITHMS).index(m.algorithm))
    fetched = _check_fetch(bag, encoding, chosen.digests)
    oxum = _oxum(bag, encoding, strict)
    others = [m for m in manifests if m is not chosen]
    if others or oxum is not None:
        _check_payload(bag, chosen.digests, others, oxum)
    algorithm = ALGORITHMS[chosen.algorithm]
    entries = [
        recorded_entry(p, Kind.FILE, n, size=SIZE_NOT_RECORDED, digest=chosen.digests[p])
        for n, p in enumerate(sorted(chosen.digests, key=sort_key), 1)
    ]
    checked = [m.name for m in others] + (["Payload-Oxum"] if oxum is not None else [])
    summary = (
        f"{len(entries):,} payload files, {algorithm} digests from {chosen.name}, "
        "no sizes (its du counts 0)"
        + (f"; {', '.join(checked)} checked against the bag's own data/" if checked else "")
        + (f"; fetch.txt lists {fetched:,} files to be fetched" if fetched else "")
    )
    return Listing(entries, algorithm, dict(LACKING), files_only=True, sizes=False, summary=summary)


def _declaration(data: bytes) -> tuple[bool, str]:
    """(BagIt 1.0 or later, the tag files' encoding) from bagit.txt."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise BagError("bagit.txt", None, "not UTF-8") from None
    tags = dict(_tag_values(_tags("bagit.txt", enumerate(_BREAK.split(text), 1), False)))
    version = re.fullmatch(r"([0-9]{1,9})\.([0-9]{1,9})", tags.get("BagIt-Version", ""))
    if version is None:
        raise BagError("bagit.txt", 1, "no 'BagIt-Version: M.N'")
    encoding = tags.get("Tag-File-Character-Encoding", "")
    try:
        codecs.lookup(encoding)
        "".encode(encoding)  # base64 and the like are codecs, not text encodings
    except (LookupError, ValueError):  # ValueError: a NUL in the name
        raise SpecError(2, f"Tag-File-Character-Encoding {encoding!r}: no such encoding") from None
    return (int(version[1]), int(version[2])) >= (1, 0), encoding


def _algorithm_name(path: Path | str) -> str:
    return Path(path).name.split("-", 1)[1].removesuffix(".txt")


def _hashlib_name(manifest: str) -> str:
    name = HASHLIB.get(_algorithm_name(manifest))
    if name is None or name not in hashlib.algorithms_available:
        known = ", ".join(sorted(HASHLIB))
        raise BagError(manifest, None, f"an algorithm zverify cannot compute (it reads {known})")
    return name


def _open_in_bag(bag: Path, name: str, manifest: str, line: int | None) -> int:
    """An fd of the regular file `name` below the bag, reached one directory at a time
    without following a symlink; BagError naming manifest and line otherwise."""
    encoded = _name_bytes(name, manifest, line)
    *dirs, last = encoded.split(b"/")
    nofollow = os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        dir_fd = os.open(bag, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as err:
        raise BagError(manifest, line, f"{bag}: {err.strerror}") from None
    try:
        for part in dirs:
            next_fd = os.open(part, os.O_RDONLY | os.O_DIRECTORY | nofollow, dir_fd=dir_fd)
            os.close(dir_fd)
            dir_fd = next_fd
        fd = os.open(last, os.O_RDONLY | os.O_NONBLOCK | nofollow, dir_fd=dir_fd)
    except OSError as err:
        reason = err.strerror or str(err)
        if err.errno in (errno.ELOOP, errno.ENOTDIR):
            reason = "a symlink (or not a directory) on the way: not followed out of the bag"
        raise BagError(manifest, line, f"{name}: {reason}") from None
    finally:
        os.close(dir_fd)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise BagError(manifest, line, f"{name}: not a regular file")
    return fd


def _text_lines(bag: Path, name: str, encoding: str) -> Iterator[tuple[int, str]]:
    """(line number, line without its end) of the bag's own text file `name`, decoded from
    the bag's encoding as it is read; lines end with LF, CR or CRLF and are bounded."""
    fd = _open_in_bag(bag, name, name, None)
    decoder = codecs.getincrementaldecoder(encoding)("strict")
    number, pending = 0, ""
    with os.fdopen(fd, "rb") as f:
        while True:
            try:
                block = f.read(1 << 16)
                text = pending + decoder.decode(block, final=not block)
            except OSError as err:
                raise BagError(name, None, err.strerror or str(err)) from None
            except ValueError:  # UnicodeError, and whatever else a text codec raises
                raise BagError(name, number + 1, f"not {encoding}") from None
            hold = "\r" if block and text.endswith("\r") else ""  # maybe CR of a CRLF
            *lines, pending = _BREAK.split(text[: len(text) - len(hold)])
            pending += hold
            if len(pending) > MAX_FOREIGN_LINE:
                raise BagError(name, number + len(lines) + 1, "a line too long: not a tag file")
            for line in lines if block else [*lines, pending]:
                number += 1
                yield number, line.removeprefix("\ufeff") if number == 1 else line
            if not block:
                return


def _tags(
    name: str, lines: Iterable[tuple[int, str]], strict: bool
) -> Iterator[tuple[int, str, str]]:
    """(line, label, value) of a tag file (RFC 8493 §2.2.2).  `Label: value`: from BagIt 1.0
    exactly one space or tab after the colon and none around the label, before it any
    whitespace around the colon.  A line that starts with whitespace continues the value
    (its indentation is not part of it); blank lines are skipped."""
    tag: tuple[int, str, list[str]] | None = None  # the value's parts: joined once, at the end
    for number, line in lines:
        if not line.strip(" \t"):
            continue
        if line[0] in " \t":
            if tag is None:
                raise BagError(name, number, "a continuation line with no tag before it")
            tag[2].append(line.lstrip(" \t"))
            continue
        label, colon, value = line.partition(":")
        if strict and colon and label == label.strip(" \t") and value[:1] in ("", " ", "\t"):
            value = value[1:]
        elif not strict and colon and label.strip(" \t"):
            label, value = label.strip(" \t"), value.lstrip(" \t")
        else:
            raise BagError(name, number, "not 'Label: value'")
        if tag is not None:
            yield tag[0], tag[1], "\n".join(tag[2])
        tag = (number, label, [value])
    if tag is not None:
        yield tag[0], tag[1], "\n".join(tag[2])


def _tag_values(tags: Iterable[tuple[int, str, str]]) -> Iterator[tuple[str, str]]:
    """(label, value) with the value's surrounding whitespace dropped; the first of a label
    wins (as dict() of this keeps the last, reversed)."""
    return reversed([(label, value.strip()) for _, label, value in tags])


def _payload_name(name: str, path: str, number: int) -> bytes:
    """The path below data/ of a payload file as a manifest or fetch.txt writes it."""
    path = path.removeprefix("./")
    if not path.startswith("data/"):
        raise BagError(name, number, f"{path!r} is not under data/")
    return _name_bytes(path.removeprefix("data/"), name, number)


def _name_bytes(name: str, manifest: str, line: int | None) -> bytes:
    """A relative name below the bag or its data/ as bytes (UTF-8, as names are on disk);
    BagError naming manifest and line when it cannot be one."""
    try:
        encoded = name.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a lone surrogate, which some codecs decode to
        raise BagError(manifest, line, f"{name!r} is no file name") from None
    why = bad_name(encoded) if encoded else "an empty name"
    if why is None and len(encoded) > MAX_FOREIGN_PATH:
        why = "a name too long"
    if why is not None:
        raise BagError(manifest, line, why)
    return encoded


def _manifest_lines(bag: Path, name: str, encoding: str) -> Iterator[tuple[int, str, str]]:
    """(line number, checksum, decoded path) of a manifest file."""
    for number, line in _text_lines(bag, name, encoding):
        if not line.strip():
            continue
        found = _MANIFEST_LINE.fullmatch(line.strip())
        if found is None:
            raise BagError(name, number, "not 'checksum filepath'")
        checksum, path = found[1].lower(), found[2].strip()
        yield number, checksum, _PERCENT.sub(lambda m: chr(int(m.group(1), 16)), path)


def _read_manifest(bag: Path, name: str, encoding: str) -> _Manifest:
    algorithm = _hashlib_name(name)
    size = hashlib.new(algorithm).digest_size
    found: dict[bytes, bytes] = {}
    for number, checksum, path in _manifest_lines(bag, name, encoding):
        key = _payload_name(name, path, number)
        if key in found:
            raise BagError(name, number, f"{path!r} listed twice")
        found[key] = _digest(name, number, checksum, size)
    return _Manifest(name, algorithm, found)


def _digest(name: str, number: int, checksum: str, size: int) -> bytes:
    try:
        digest = bytes.fromhex(checksum)
    except ValueError:
        raise BagError(name, number, "the checksum is not hex") from None
    if len(digest) != size:
        raise BagError(name, number, f"not a {_algorithm_name(name)} checksum")
    return digest


def _hash_fd(
    fd: int, algorithms: list[str], name: str, where: tuple[str, int | None]
) -> list[bytes]:
    """The digests of everything fd reads, one per algorithm, in one pass; closes fd."""
    hashers = [hashlib.new(a) for a in algorithms]
    try:
        while block := os.read(fd, READ_BLOCK):
            for h in hashers:
                h.update(block)
    except OSError as err:
        raise BagError(where[0], where[1], f"{name}: {err.strerror}") from None
    finally:
        os.close(fd)
    return [h.digest() for h in hashers]


def _check_tag_manifests(bag: Path, encoding: str) -> None:
    """Tag manifests protect the payload manifests: any mismatch means they were changed."""
    for tagmanifest in sorted(t.name for t in bag.glob("tagmanifest-*.txt")):
        algorithm = _hashlib_name(tagmanifest)
        size = hashlib.new(algorithm).digest_size
        for number, checksum, name in _manifest_lines(bag, tagmanifest, encoding):
            expected = _digest(tagmanifest, number, checksum, size)
            name = name.removeprefix("./")
            if name == "data" or name.startswith("data/"):
                raise BagError(tagmanifest, number, f"{name!r} is payload, not a tag file")
            fd = _open_in_bag(bag, name, tagmanifest, number)
            (actual,) = _hash_fd(fd, [algorithm], name, (tagmanifest, number))
            if actual != expected:
                raise BagError(tagmanifest, number, f"{name} does not match its checksum")


def _check_fetch(bag: Path, encoding: str, payload: dict[bytes, bytes]) -> int:
    """How many files fetch.txt lists: each must be a payload file of the manifests (RFC
    8493 §2.2.3), never a tag file or a path out of the bag."""
    if not os.path.lexists(bag / "fetch.txt"):  # lstat: a symlink is opened (and refused)
        return 0
    count = 0
    for number, line in _text_lines(bag, "fetch.txt", encoding):
        if not line.strip():
            continue
        found = _FETCH_LINE.fullmatch(line.strip())
        if found is None or not (found[2].isdigit() or found[2] == "-"):
            raise BagError("fetch.txt", number, "not 'url length filepath'")
        path = _PERCENT.sub(lambda m: chr(int(m.group(1), 16)), found[3].strip())
        if _payload_name("fetch.txt", path, number) not in payload:
            raise BagError("fetch.txt", number, f"{path!r} is in no payload manifest")
        count += 1
    return count


def _oxum(bag: Path, encoding: str, strict: bool) -> tuple[int, int] | None:
    """Payload-Oxum of bag-info.txt as (octets, files), or None when there is none."""
    if not os.path.lexists(bag / "bag-info.txt"):
        return None
    tags = _tags("bag-info.txt", _text_lines(bag, "bag-info.txt", encoding), strict)
    oxum = dict(_tag_values(tags)).get("Payload-Oxum")
    if oxum is None:
        return None
    found = re.fullmatch(r"([0-9]{1,30})\.([0-9]{1,30})", oxum)  # int() refuses 4300 digits
    if found is None:
        raise BagError("bag-info.txt", None, f"Payload-Oxum {oxum[:60]!r} is not octets.count")
    return int(found[1]), int(found[2])


def _check_payload(
    bag: Path, payload: dict[bytes, bytes], others: list[_Manifest], oxum: tuple[int, int] | None
) -> None:
    """Every manifest but the one compare uses, and Payload-Oxum, against the bag's own
    payload: one read of each file for all their algorithms (none at all for Oxum alone)."""
    if oxum is not None and oxum[1] != len(payload):
        reason = f"Payload-Oxum counts {oxum[1]} files, the manifests {len(payload)}"
        raise BagError("bag-info.txt", None, reason)
    needing = [m.name for m in others] + (["Payload-Oxum"] if oxum is not None else [])
    algorithms = [m.algorithm for m in others]
    octets = 0
    for key in sorted(payload, key=sort_key):
        name = "data/" + key.decode("utf-8", "surrogateescape")
        fd = _open_in_bag(bag, name, f"{' and '.join(needing)} (checked against data/)", None)
        octets += os.fstat(fd).st_size
        if not others:
            os.close(fd)
            continue
        digests = _hash_fd(fd, algorithms, name, (needing[0], None))
        for manifest, actual in zip(others, digests, strict=True):
            if actual != manifest.digests[key]:
                raise BagError(manifest.name, None, f"{name} does not match its checksum")
    if oxum is not None and oxum[0] != octets:
        reason = f"Payload-Oxum counts {oxum[0]:,} octets, the payload holds {octets:,}"
        raise BagError("bag-info.txt", None, reason)
