"""Checkfiles for `sha256sum -c` and `b3sum -c`: the lowest common denominator.

One `<hex>  <name>` line per regular file, in GNU coreutils syntax: a name holding `\\`, a
newline or a carriage return is written with those escaped (`\\\\`, `\\n`, `\\r`) and the line
starts with `\\`.  Every other byte is written raw, so names stay byte-exact for sha256sum.
A top-level file named `-` is written `./-`: `-c` reads `-` as standard input.  Checkfiles
carry no directories, symlinks, special files, metadata, hardlinks, xattrs or holes, and
`-c` never sees extra files.

No regular file is ever left out: left out, `-c` would pass without it.  A file that could
not be read is written with a digest of zeros, so `-c` says FAILED for it (no content hashes
to all zeros).  b3sum (1.x) cannot check every name: it reads its checkfile as UTF-8,
refuses U+FFFD in a path (what its own lossy decoding makes) and knows only the `\\\\` and
`\\n` escapes.  Such a file is written as a line `b3sum -c` refuses (a name that is not
UTF-8: decoded lossily, with a digest of zeros), and uncheckable() names it, so that the
writer can list it and exit 2.
"""

from zverify.entry import Entry, Kind
from zverify.hashing import Algorithm

DROPPED = (
    "directories, symlinks, special files, modes, owners, times, hardlinks, xattrs, ACLs, "
    "holes; `-c` does not detect extra files"
)
FORMATS = {"sha256sum": Algorithm.SHA256, "b3sum": Algorithm.BLAKE3}


UNREADABLE = bytes(32)  # SHA-256 and BLAKE3 digests are both 32 bytes


def check_line(entry: Entry, fmt: str = "sha256sum") -> bytes | None:
    """The checkfile line for a regular file (with newline), else None."""
    if entry.kind != Kind.FILE:
        return None
    digest = entry.digest if entry.digest is not None else UNREADABLE
    name = b"./-" if entry.path == b"-" else entry.path
    if fmt == "b3sum" and not _utf8(name):
        # b3sum's own output for such a name; its -c refuses U+FFFD, and the zeros fail a
        # b3sum that would not (the lossy name may be another file's)
        name, digest = name.decode("utf-8", "replace").encode(), UNREADABLE
    if any(c in name for c in (b"\\", b"\n", b"\r")):
        name = name.replace(b"\\", b"\\\\").replace(b"\n", b"\\n").replace(b"\r", b"\\r")
        return b"\\" + digest.hex().encode() + b"  " + name + b"\n"
    return digest.hex().encode() + b"  " + name + b"\n"


def uncheckable(entry: Entry, fmt: str) -> str | None:
    """Why `FMT -c` cannot check this regular file by its checkfile line, or None."""
    if fmt != "b3sum" or entry.kind != Kind.FILE:
        return None
    if not _utf8(entry.path):
        return "not UTF-8"
    if "\ufffd".encode() in entry.path:
        return "holds U+FFFD"
    if b"\r" in entry.path:
        return "holds a carriage return"
    return None


def _utf8(name: bytes) -> bool:
    try:
        name.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
