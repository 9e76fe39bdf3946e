"""Relative paths as bytes: canonical order and lossless display.

Names are never decoded or normalised internally.  For display (text and
JSON) a path that is valid UTF-8 is shown as is; one that is not gets its
bad bytes written as \\xHH and every backslash doubled, and is flagged as
escaped, so the original bytes can always be recovered.
"""

import re
from collections.abc import Sequence

SHOWN_PATHS = 10  # paths named in one line of a message; the rest are counted


def sort_key(path: bytes) -> bytes:
    """Key whose bytewise order is the walk's pre-order with sorted siblings.

    Plain bytewise order is not pre-order ("a-b" < "a/c" because '-' < '/');
    mapping '/' to NUL, which no name contains, makes it so.
    """
    return path.replace(b"/", b"\0")


def is_under(path: bytes, parent: bytes) -> bool:
    """True when path lies strictly inside directory parent (b"" = root)."""
    if parent == b"":
        return path != b""
    return path.startswith(parent) and path[len(parent) : len(parent) + 1] == b"/"


def display(path: bytes) -> tuple[str, bool]:
    """Return (text, escaped): the path for humans and JSON, losslessly."""
    try:
        return path.decode("utf-8"), False
    except UnicodeDecodeError:
        return escape(path), True


def escape(path: bytes) -> str:
    """Escape: backslash doubled, undecodable bytes as \\xHH, the rest as UTF-8."""
    text = path.decode("utf-8", errors="surrogateescape").replace("\\", "\\\\")
    return "".join(f"\\x{ord(c) - 0xDC00:02x}" if 0xDC80 <= ord(c) <= 0xDCFF else c for c in text)


def restore(text: str, escaped: bool) -> bytes:
    """Inverse of display()."""
    if not escaped:
        return text.encode("utf-8")
    out = bytearray()
    for token in re.finditer(r"\\\\|\\x([0-9a-f]{2})|[^\\]+", text):
        if token.group(0) == "\\\\":
            out += b"\\"
        elif token.group(1):
            out.append(int(token.group(1), 16))
        else:
            out += token.group(0).encode("utf-8")
    return bytes(out)


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_NEEDS_ESCAPE = re.compile(r"[\x00-\x1f\x7f\\\udc80-\udcff]|^ | $")
_EDGE_SPACE = re.compile(r"^ +| +$")


def _control_escape(match: re.Match[str]) -> str:
    char = match.group(0)
    return "\\n" if char == "\n" else f"\\x{ord(char):02x}"


def for_terminal(path: bytes) -> str:
    r"""One-line, unambiguous form for text output (no flag travels with it, unlike JSON).

    A plain UTF-8 name is shown as is.  Any other is shown escaped, so two different names
    never print alike: backslashes doubled, undecodable bytes and control characters as
    \xHH (a newline as \n), and a space at either end as \x20 (the columns are separated
    by spaces).  `a\\xff` is then a name with a backslash, `a\xff` one with the byte 0xFF.
    """
    text = path.decode("utf-8", errors="surrogateescape")
    if not _NEEDS_ESCAPE.search(text):
        return text
    text = escape(path)
    text = _CONTROL.sub(_control_escape, text)
    return _EDGE_SPACE.sub(lambda m: m.group(0).replace(" ", "\\x20"), text)


def shown_paths(paths: Sequence[bytes], quoted: bool = False) -> str:
    """The first SHOWN_PATHS paths as for_terminal shows them ("." for the root), and how
    many more: a message about any number of paths stays one line."""
    names = [for_terminal(p) or "." for p in paths[:SHOWN_PATHS]]
    shown = ", ".join(f"'{n}'" if quoted else n for n in names)
    more = len(paths) - SHOWN_PATHS
    return shown + (f" and {more:,} more" if more > 0 else "")
