"""BagIt bags (RFC 8493), read as a side of compare through their `bagit.txt`.

    zverify compare --profile content BAG/bagit.txt BAG/data       is the bag valid?
    zverify compare --profile content BAG/bagit.txt /restore/data  is this the bag's payload?

The bag's own files are checked before any payload is compared, each failure exit 2:
bagit.txt (version, UTF-8), every payload manifest listing the same files (RFC 8493
§3 "complete"), each tag manifest's digests of the tag files, and the file count of
Payload-Oxum.  The strongest manifest (sha512, sha256, sha1, md5) gives the digests the
payload is compared with.  Paths are UTF-8 under `data/`, with `%0A`, `%0D` and `%25`
decoded as the RFC requires (most tools do not encode `%`: their bags then show the name
as missing and extra, never as identical).  A manifest records no sizes, modes, owners,
times or hardlinks, and no directories.

The tag files a tag manifest names are the only names from a manifest zverify ever opens:
each is opened below the bag one directory at a time without following a symlink, and
must be a regular file (`../x`, `/etc/passwd`, `link/etc/passwd` with `link -> /`, a FIFO
are errors naming the line); the bag's own manifests and bag-info.txt too.
"""

import errno
import itertools
import os
import re
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path

from zverify.compare.policy import DiffKind
from zverify.entry import SIZE_NOT_RECORDED, Kind
from zverify.hashing import DIGEST_SIZES, Algorithm, new_hasher
from zverify.manifest.bounds import (
    MAX_FOREIGN_LINE,
    MAX_FOREIGN_PATH,
    LineTooLong,
    bad_name,
    bounded_lines,
)
from zverify.manifest.listing import Listing, recorded_entry
from zverify.manifest.mtree import SpecError
from zverify.pathnames import sort_key

ALGORITHMS = {"sha512": Algorithm.SHA512, "sha256": Algorithm.SHA256,
              "sha1": Algorithm.SHA1, "md5": Algorithm.MD5}  # fmt: skip
LACKING = {
    kind: "a BagIt manifest records payload digests only"
    for kind in (DiffKind.MODE, DiffKind.OWNER, DiffKind.MTIME, DiffKind.HARDLINK, DiffKind.XATTR)
}
_PERCENT = re.compile(r"%(0[aAdD]|25)")
MAX_DECLARATION_LINES = 100  # bagit.txt: two lines
READ_BLOCK = 1 << 20


class BagError(ValueError):
    """The bag itself is broken: names the file and the line."""

    def __init__(self, name: str, line: int | None, reason: str) -> None:
        where = f"{name} line {line}" if line else name
        super().__init__(f"{where}: {reason}")


def looks_like_bag(first: bytes) -> bool:
    return first.startswith(b"BagIt-Version:")


def parse(bagit_txt: str, first: bytes, rest: Iterable[bytes]) -> Listing:
    """The payload of the bag whose bagit.txt this is; raises SpecError/BagError."""
    lines = itertools.islice(itertools.chain([first], rest), MAX_DECLARATION_LINES)
    declaration = dict(_fields(lines))
    if next(iter(rest), None) is not None:
        raise BagError("bagit.txt", None, f"more than {MAX_DECLARATION_LINES} lines")
    if declaration.get("Tag-File-Character-Encoding", "").upper() not in ("UTF-8", "UTF8"):
        raise SpecError(2, "Tag-File-Character-Encoding must be UTF-8")
    bag = Path(bagit_txt).parent
    manifests = sorted(bag.glob("manifest-*.txt"))
    names = {m: _algorithm_name(m) for m in manifests}
    usable = {m: ALGORITHMS[name] for m, name in names.items() if name in ALGORITHMS}
    if not usable:
        raise BagError(str(bag), None, "no manifest-sha512/sha256/sha1/md5.txt")
    _check_tag_manifests(bag)
    listed = {m: _read_manifest(m, a) for m, a in usable.items()}
    paths = {frozenset(entries) for entries in listed.values()}
    if len(paths) > 1:
        raise BagError(str(bag), None, "the payload manifests do not list the same files")
    chosen = min(usable, key=lambda m: list(ALGORITHMS).index(names[m]))  # strongest first
    digests = listed[chosen]
    _check_oxum(bag, len(digests))
    entries = [
        recorded_entry(p, Kind.FILE, n, size=SIZE_NOT_RECORDED, digest=digests[p])
        for n, p in enumerate(sorted(digests, key=sort_key), 1)
    ]
    skipped = [m.name for m in manifests if m not in usable]
    fetch = os.path.lexists(bag / "fetch.txt")  # lstat: a symlink is not followed
    summary = (
        f"{len(entries):,} payload files, {usable[chosen]} digests from {chosen.name}, "
        f"no sizes (its du counts 0)"
        + (f"; not checked: {', '.join(skipped)} (algorithm not supported)" if skipped else "")
        + ("; fetch.txt lists files to be fetched" if fetch else "")
    )
    return Listing(entries, usable[chosen], dict(LACKING), files_only=True, summary=summary)


def _algorithm_name(path: Path) -> str:
    return path.name.split("-", 1)[1].removesuffix(".txt")


def _fields(lines: Iterable[bytes]) -> Iterable[tuple[str, str]]:
    for raw in lines:
        key, sep, value = raw.decode("utf-8", "replace").partition(":")
        if sep:
            yield key.strip(), value.strip()


def _open_in_bag(bag: Path, name: str, manifest: str, line: int | None) -> int:
    """An fd of the regular file `name` below the bag, reached one directory at a time
    without following a symlink; BagError naming manifest and line otherwise."""
    encoded = name.encode("utf-8", "surrogateescape")
    why = bad_name(encoded) if encoded else "an empty name"
    if why is None and len(encoded) > MAX_FOREIGN_PATH:
        why = "a name too long"
    if why is not None:
        raise BagError(manifest, line, why)
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


def _bag_lines(bag: Path, name: str) -> Iterator[tuple[int, bytes]]:
    """(line number, line) of the bag's own file `name`, each line bounded."""
    fd = _open_in_bag(bag, name, name, None)
    with os.fdopen(fd, "rb") as f:
        try:
            yield from bounded_lines(f, MAX_FOREIGN_LINE)
        except LineTooLong as err:
            raise BagError(name, err.line, str(err)) from None
        except OSError as err:
            raise BagError(name, None, err.strerror or str(err)) from None


def _manifest_lines(path: Path) -> Iterable[tuple[int, str, str]]:
    """(line number, checksum, decoded path) of a manifest file."""
    for number, raw in _bag_lines(path.parent, path.name):
        raw = raw.rstrip(b"\r\n")
        if not raw.strip():
            continue
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise BagError(path.name, number, "not UTF-8") from None
        parts = line.split(None, 1)
        if len(parts) != 2:
            raise BagError(path.name, number, "not 'checksum filepath'")
        checksum, name = parts[0].lower(), parts[1].strip()
        yield number, checksum, _PERCENT.sub(lambda m: chr(int(m.group(1), 16)), name)


def _read_manifest(path: Path, algorithm: Algorithm) -> dict[bytes, bytes]:
    found: dict[bytes, bytes] = {}
    for number, checksum, name in _manifest_lines(path):
        if not name.startswith("data/"):
            raise BagError(path.name, number, f"{name!r} is not under data/")
        digest = _digest(path.name, number, checksum, algorithm)
        key = name.removeprefix("data/").encode("utf-8")
        if key in found or not key:
            raise BagError(path.name, number, f"{name!r} listed twice")
        why = bad_name(key) or (len(key) > MAX_FOREIGN_PATH and "a name too long")
        if why:
            raise BagError(path.name, number, why)
        found[key] = digest
    return found


def _digest(name: str, number: int, checksum: str, algorithm: Algorithm) -> bytes:
    try:
        digest = bytes.fromhex(checksum)
    except ValueError:
        raise BagError(name, number, "the checksum is not hex") from None
    if len(digest) != DIGEST_SIZES[algorithm]:
        raise BagError(name, number, f"not a {algorithm} checksum")
    return digest


def _check_tag_manifests(bag: Path) -> None:
    """Tag manifests protect the payload manifests: any mismatch means they were changed."""
    for tagmanifest in sorted(bag.glob("tagmanifest-*.txt")):
        algorithm = ALGORITHMS.get(_algorithm_name(tagmanifest))
        if algorithm is None:
            continue
        for number, checksum, name in _manifest_lines(tagmanifest):
            expected = _digest(tagmanifest.name, number, checksum, algorithm)
            if name == "data" or name.startswith("data/"):
                raise BagError(tagmanifest.name, number, f"{name!r} is payload, not a tag file")
            fd = _open_in_bag(bag, name, tagmanifest.name, number)
            try:
                hasher = new_hasher(algorithm, os.fstat(fd).st_size)
                while block := os.read(fd, READ_BLOCK):
                    hasher.update(block)
                actual = hasher.digest()
            except OSError as err:
                raise BagError(tagmanifest.name, number, f"{name}: {err.strerror}") from None
            finally:
                os.close(fd)
            if actual != expected:
                raise BagError(tagmanifest.name, number, f"{name} does not match its checksum")


def _check_oxum(bag: Path, files: int) -> None:
    info = bag / "bag-info.txt"
    if not os.path.lexists(info):
        return
    found = (
        v for k, v in _fields(raw for _, raw in _bag_lines(bag, info.name)) if k == "Payload-Oxum"
    )
    oxum = next(found, None)
    if oxum is None:
        return
    octets, _, count = oxum.partition(".")
    if not (octets.isdigit() and count.isdigit()):
        raise BagError(info.name, None, f"Payload-Oxum {oxum!r} is not octets.count")
    if int(count) != files:
        raise BagError(info.name, None, f"Payload-Oxum counts {count} files, the manifest {files}")
