"""What any manifest may hold, whoever wrote it: bounded lines, and names inside the tree.

A manifest is input from elsewhere.  Its lines are read with a bound (a file of one 2 GB
"line", or a compressed bomb of zeros, never becomes one 2 GB string), and every name it
lists must be a relative path that stays inside the tree it describes: no absolute name,
no empty, `.` or `..` component, no NUL byte.  Such an entry is a bad manifest (exit 2
naming the line), never something looked up: nothing in zverify opens or stats a name read
from a manifest but BagIt tag files, which bagit.py opens below the bag without following
symlinks.
"""

import re
from collections.abc import Iterator
from typing import BinaryIO

MAX_HEADER_LINE = 64 << 20
"""Bytes in the header line of a native manifest (its --files-from list, escaped)."""
MAX_LINE = 16 << 20
"""Bytes in one entry line of a native manifest: a path, a link target, every xattr
(escaped: up to 4 bytes each) and up to 65,536 extents of one entry."""
NATIVE_START = b'{"zverify_manifest"'
"""How the header line of a native manifest starts (the only line allowed past
MAX_FOREIGN_LINE before the format is known)."""
MAX_FOREIGN_LINE = 1 << 20
"""Bytes in one (logical) line of an mtree spec, hashdeep list or BagIt tag file."""
MAX_FOREIGN_PATH = 64 << 10
"""Bytes in one name of a foreign manifest (read whole: names are kept in memory)."""
MAX_DEPTH = 4096
"""Directories an mtree spec's relative form may be inside at once."""

# An empty, `.` or `..` component (at the start, between slashes or at the end), or a NUL.
_BAD_NAME = re.compile(rb"(?:^|/)\.{0,2}(?:/|$)|\x00")


class LineTooLong(ValueError):
    """A line longer than the format allows; `line` is its number."""

    def __init__(self, line: int, limit: int) -> None:
        super().__init__(f"a line longer than {limit} bytes: not a manifest line")
        self.line = line


def bad_name(path: bytes) -> str | None:
    """Why path cannot name an entry below the tree's root, or None when it can (the root
    itself is b"")."""
    if not path or _BAD_NAME.search(path) is None:
        return None
    shown = path[:80].decode("utf-8", "backslashreplace")
    if b"\0" in path:
        return f"the name {shown!r} holds a NUL byte"
    if path.startswith(b"/"):
        return f"the name {shown!r} is absolute: names are relative to the tree's root"
    return f"the name {shown!r} has an empty, '.' or '..' component: it does not stay in the tree"


def bounded_lines(stream: BinaryIO, limit: int, first: int = 1) -> Iterator[tuple[int, bytes]]:
    """(line number from first, line with its newline) of stream; LineTooLong past limit."""
    readline = stream.readline
    number = first
    while raw := readline(limit + 1):
        if len(raw) > limit and not raw.endswith(b"\n"):
            raise LineTooLong(number, limit)
        yield number, raw
        number += 1
