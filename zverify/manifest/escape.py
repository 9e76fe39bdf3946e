"""Byte strings as printable ASCII, and back, losslessly.

Names, link targets and xattrs are arbitrary bytes.  In a manifest every byte from 0x20 to
0x7E is written as itself except `\\` and `"`; every other byte (and those two) becomes
`\\xHH`.  The text is therefore plain ASCII that needs no further JSON escaping but for its
backslashes, and it survives any tool that mangles non-UTF-8 or control bytes.
"""

import re

_NEEDS_ESCAPE = re.compile(rb"[^\x20\x21\x23-\x5b\x5d-\x7e]")
_ESCAPED = re.compile(r"\\x([0-9a-f]{2})")
_VALID = re.compile(r"(?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\x[0-9a-f]{2})*")


_SAFE = bytes(b for b in range(0x20, 0x7F) if b not in b'"\\')


def escape(data: bytes) -> str:
    """Printable ASCII, with \\xHH for every other byte and for `\\` and `"`."""
    if not data.translate(None, _SAFE):  # nothing but safe bytes: the common case, fast
        return data.decode("ascii")
    return _NEEDS_ESCAPE.sub(lambda m: b"\\x%02x" % m.group()[0], data).decode("ascii")


def unescape(text: str) -> bytes:
    """Inverse of escape(); raises ValueError on text escape() cannot have written."""
    if "\\" not in text and '"' not in text and text.isascii() and text.isprintable():
        return text.encode("ascii")
    if _VALID.fullmatch(text) is None:
        raise ValueError(f"not an escaped byte string: {text[:60]!r}")
    return _ESCAPED.sub(lambda m: chr(int(m.group(1), 16)), text).encode("latin-1")
