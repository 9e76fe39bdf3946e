"""Checkfiles for `sha256sum -c` and `b3sum -c`: the lowest common denominator.

One `<hex>  <name>` line per regular file, in GNU coreutils syntax: a name holding `\\`, a
newline or a carriage return is written with those escaped (`\\\\`, `\\n`, `\\r`) and the line
starts with `\\`.  Every other byte is written raw, so names stay byte-exact for sha256sum.
b3sum only checks UTF-8 names: a name that is not valid UTF-8 cannot be in its checkfile,
and the writer says which were left out.  Checkfiles carry no directories, symlinks,
special files, metadata, hardlinks, xattrs or holes, and `-c` never sees extra files.

A regular file that could not be read is written with a digest of zeros, never left out:
left out, `sha256sum -c` would pass without it; with zeros it says FAILED for that file
(no content hashes to all zeros), and the writer has already said which files those are.
"""

from zverify.entry import Entry, Kind
from zverify.hashing import Algorithm

DROPPED = (
    "directories, symlinks, special files, modes, owners, times, hardlinks, xattrs, ACLs, "
    "holes; `-c` does not detect extra files"
)
FORMATS = {"sha256sum": Algorithm.SHA256, "b3sum": Algorithm.BLAKE3}


UNREADABLE = bytes(32)  # SHA-256 and BLAKE3 digests are both 32 bytes


def check_line(entry: Entry) -> bytes | None:
    """The checkfile line for a regular file (with newline), else None."""
    if entry.kind != Kind.FILE:
        return None
    digest = entry.digest if entry.digest is not None else UNREADABLE
    name = entry.path
    if any(c in name for c in (b"\\", b"\n", b"\r")):
        name = name.replace(b"\\", b"\\\\").replace(b"\n", b"\\n").replace(b"\r", b"\\r")
        return b"\\" + digest.hex().encode() + b"  " + name + b"\n"
    return digest.hex().encode() + b"  " + name + b"\n"


def utf8(name: bytes) -> bool:
    try:
        name.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
