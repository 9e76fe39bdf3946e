r"""Byte names (paths, link targets, xattrs): canonical order, and every way zverify spells
them.  The one module that turns a name into text, and text back into a name.

Names are never decoded or normalised internally.  Each consumer gets its own spelling:

| where it goes                     | function (inverse)         | spelling                    |
| --------------------------------- | -------------------------- | --------------------------- |
| JSON documents: `path` and its    | display (restore)          | valid UTF-8 as is, flag     |
| `path_escaped` flag (compare,     |                            | false; else `\` doubled,    |
| cold, cutover)                    |                            | bad bytes \xHH, flag true   |
| text output: reports, messages on | for_terminal, shown_paths  | plain UTF-8 as is; else as  |
| stderr (no flag travels with it)  | (none: for people)         | JSON's, and control bytes   |
|                                   |                            | and edge spaces \xHH too    |
| a report line holding any text    | one_line (none)            | control characters and      |
| (cold's report lines)             |                            | undecodable bytes \xHH      |
| zverify's manifests, and the      | for_manifest               | printable ASCII as is, but  |
| filter rules recorded in them     | (from_manifest)            | `\` and `"`: all else \xHH  |
| --write-lists, --files-from,      | none: raw bytes            | one name a line, or NUL-    |
| --exclude-from                    |                            | terminated with --from0     |

Other tools' syntaxes stay with the code that speaks them, since they are those tools'
grammar, not zverify's spelling: coreutils checkfiles (manifest/checkfile.py writes,
manifest/checksums.py reads), mtree's vis(3) (manifest/mtree.py), `zfs diff` octal
(cutover/checks.py), /proc mountinfo octal (fsinfo.py), dataset names in archive file names
(%XX, cold/names.py) and Prometheus label values (report/cold/scrub.py).
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


# The patterns of this module are text, compiled by re on first use and kept in its cache:
# compiled at import, they cost every run ~1 ms of start-up, mostly for names no run meets.
_CONTROL = r"[\x00-\x1f\x7f]"
_NEEDS_ESCAPE = r"[\x00-\x1f\x7f\\\udc80-\udcff]|^ | $"
_EDGE_SPACE = r"^ +| +$"


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
    if _plain_ascii(text) or not re.search(_NEEDS_ESCAPE, text):
        return text
    text = escape(path)
    text = re.sub(_CONTROL, _control_escape, text)
    return re.sub(_EDGE_SPACE, lambda m: m.group(0).replace(" ", "\\x20"), text)


def _plain_ascii(text: str) -> bool:
    """What _NEEDS_ESCAPE finds nothing in, for ASCII (printable: no control character): the
    common name, told without compiling a pattern."""
    return text.isascii() and text.isprintable() and "\\" not in text and text.strip(" ") == text


def one_line(text: str) -> str:
    r"""text with control characters and undecodable bytes (surrogate escapes) as \xHH: one
    line of a report whatever a message holds (a name in it is for_terminal's already;
    this is for the rest, e.g. a directory given in bytes that are not UTF-8)."""
    return re.sub(_LINE_BREAKING, _hex_escape, text)


_LINE_BREAKING = r"[\x00-\x1f\x7f\udc80-\udcff]"


def _hex_escape(match: re.Match[str]) -> str:
    char = ord(match.group(0))
    return f"\\x{char - 0xDC00 if char >= 0xDC80 else char:02x}"


# zverify's manifests: every byte but printable ASCII, `\` and `"` as \xHH, so that a line is
# plain ASCII needing no JSON escape but doubled backslashes, and survives any tool that
# mangles non-UTF-8 or control bytes.
_MANIFEST_SAFE = bytes(b for b in range(0x20, 0x7F) if b not in b'"\\')
_MANIFEST_UNSAFE = rb"[^\x20\x21\x23-\x5b\x5d-\x7e]"
_MANIFEST_ESCAPED = r"\\x([0-9a-f]{2})"
_MANIFEST_VALID = r"(?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\x[0-9a-f]{2})*"


def for_manifest(data: bytes) -> str:
    """Printable ASCII, with \\xHH for every other byte and for `\\` and `"`."""
    if not data.translate(None, _MANIFEST_SAFE):  # nothing but safe bytes: common and fast
        return data.decode("ascii")
    return re.sub(_MANIFEST_UNSAFE, lambda m: b"\\x%02x" % m.group()[0], data).decode("ascii")


def from_manifest(text: str) -> bytes:
    """Inverse of for_manifest(); raises ValueError on text it cannot have written."""
    if "\\" not in text and '"' not in text and text.isascii() and text.isprintable():
        return text.encode("ascii")
    if re.fullmatch(_MANIFEST_VALID, text) is None:
        raise ValueError(f"not an escaped byte string: {text[:60]!r}")
    return re.sub(_MANIFEST_ESCAPED, lambda m: chr(int(m.group(1), 16)), text).encode("latin-1")


def shown_paths(paths: Sequence[bytes], quoted: bool = False) -> str:
    """The first SHOWN_PATHS paths as for_terminal shows them ("." for the root), and how
    many more: a message about any number of paths stays one line."""
    names = [for_terminal(p) or "." for p in paths[:SHOWN_PATHS]]
    shown = ", ".join(f"'{n}'" if quoted else n for n in names)
    more = len(paths) - SHOWN_PATHS
    return shown + (f" and {more:,} more" if more > 0 else "")
