"""The native manifest format, version 1: one JSON object per line.

    {"zverify_manifest": 1, ...header...}
    {"p": "", "t": "dir", "mode": "0755", ...}          one line per entry, canonical order
    {"p": "bin/tool", "t": "file", ..., "hash": "…"}
    {"end": {...totals...}, "blake3": "…"}                digest of every byte above it

Paths, link targets and xattr names/values are escaped to printable ASCII
(pathnames.for_manifest), so a line is pure ASCII and its only JSON escapes are doubled
backslashes.  Hardlinks are a group number `hl` (the same on every member) and the link
count, never an inode number.  The full specification, with every key, is docs/manifest.md.

This module converts between one entry and one line; it does no I/O.
"""

import json
import os
import stat
from typing import Any

from zverify.entry import TYPE_BITS, Entry, Kind
from zverify.manifest.bounds import bad_name
from zverify.pathnames import for_manifest, from_manifest

FORMAT_KEY = "zverify_manifest"
VERSION = 1

KIND_NAMES: dict[int, str] = {kind: kind.label for kind in Kind}
KINDS_BY_NAME = {kind.label: kind for kind in Kind}
_FIELDS = Entry.__match_args__


class LineError(ValueError):
    """One line of a manifest is not what the format allows (the reader adds the line number)."""


def _quoted(data: bytes) -> str:
    text = for_manifest(data)
    return f'"{text.replace(chr(92), chr(92) * 2)}"' if "\\" in text else f'"{text}"'


def owner_fields(uid: int, gid: int, names: tuple[str, str] | None) -> str:
    """The owner part of an entry line; writers cache it per (uid, gid)."""
    text = f'"uid":{uid},"gid":{gid}'
    if names is not None:
        text += f',"user":{json.dumps(names[0])},"group":{json.dumps(names[1])}'
    return text


_type_and_mode_cache: dict[tuple[int, int], str] = {}


def _type_and_mode(kind: int, mode: int) -> str:
    key = (kind, mode)
    text = _type_and_mode_cache.get(key)
    if text is None:
        text = f'"t":"{KIND_NAMES[kind]}","mode":"{stat.S_IMODE(mode):04o}"'
        _type_and_mode_cache[key] = text
    return text


def entry_line(entry: Entry, group: int | None, owner: str) -> str:
    """The line for one walked entry (without its newline).

    group: the hardlink group number of an entry with nlink > 1, else None.
    owner: owner_fields() of the entry.  This runs once per entry of the tree: one
    f-string for what every entry has, then only the keys this entry needs.
    """
    kind = entry.kind
    line = (
        f'{{"p":{_quoted(entry.path)},{_type_and_mode(kind, entry.mode)},{owner},'
        f'"mtime":{entry.mtime_ns},"size":{entry.size},"alloc":{entry.alloc}'
    )
    if kind != Kind.DIR:
        line += f',"nlink":{entry.nlink}'
        if group is not None:
            line += f',"hl":{group}'
    if kind == Kind.FILE and entry.data_bytes != entry.size:
        line += f',"data":{entry.data_bytes}'
        if entry.extents is not None:
            line += ',"extents":[' + ",".join(f"[{a},{b}]" for a, b in entry.extents) + "]"
    if entry.digest is not None:
        line += f',"hash":"{entry.digest.hex()}"'
    if entry.link is not None:
        line += f',"link":{_quoted(entry.link)}'
    if kind == Kind.CHAR or kind == Kind.BLOCK:
        line += f',"rdev":[{os.major(entry.rdev)},{os.minor(entry.rdev)}]'
    if entry.xattrs is not None:
        line += (
            ',"xattrs":[' + ",".join(f"[{_quoted(n)},{_quoted(v)}]" for n, v in entry.xattrs) + "]"
        )
    if entry.error is not None:
        op, err, offset = entry.error
        line += f',"error":["{op}",{err},{offset}]'
    if entry.changed is not None:
        line += f',"changed":"{entry.changed}"'
    return line + "}"


_FIELD_ORDER = (
    "path", "kind", "mode", "uid", "gid", "nlink", "dev", "ino", "rdev", "size", "alloc",
    "mtime_ns", "ctime_ns", "data_bytes", "hole_bytes", "link", "xattrs", "digest", "error",
    "changed", "extents",
)  # fmt: skip
assert _FIELD_ORDER == _FIELDS, "Record fields changed: update parse_entry"
_modes: dict[str, int] = {}


def parse_entry(obj: Any, ordinal: int) -> Entry:
    """An Entry from one decoded entry line; raises LineError naming what is wrong.

    The entry's identity for hardlinks and du is (0, inode) with a synthetic inode: the
    group number for hardlinked entries (negated, so it can never equal an ordinal), the
    entry's ordinal otherwise.  Inode numbers never leave the host they belong to.
    Runs once per entry: the integers are checked in one pass, details only on failure.
    """
    if not isinstance(obj, dict):
        raise LineError("not a JSON object")
    try:
        kind = KINDS_BY_NAME[obj["t"]]
        numbers = (obj["uid"], obj["gid"], obj["mtime"], obj["size"], obj["alloc"])
        nlink = obj["nlink"] if kind != Kind.DIR else obj.get("nlink", 2)
    except (KeyError, TypeError) as err:
        raise LineError(f"missing or unknown value for {err}") from None
    if not all(type(n) is int for n in (*numbers, nlink)) or min(*numbers[:2], *numbers[3:]) < 0:
        raise LineError(_bad_number(obj))
    uid, gid, mtime, size, alloc = numbers
    group = obj.get("hl")
    if group is not None and (type(group) is not int or nlink < 2):
        raise LineError("'hl' needs an integer group and nlink > 1")
    data = size
    if kind == Kind.FILE and "data" in obj:
        data = _uint(obj, "data")
        if data > size:
            raise LineError("'data' exceeds 'size'")
    try:
        fields = (
            from_manifest(_text(obj, "p")),
            int(kind),
            TYPE_BITS[kind] | _mode(obj),
            uid,
            gid,
            nlink,
            0,
            -group if group is not None else ordinal,
            _rdev(obj, kind),
            size,
            alloc,
            mtime,
            0,
            data if kind == Kind.FILE else 0,
            size - data if kind == Kind.FILE else 0,
            _bytes_or_none(obj, "link"),
            _xattrs(obj),
            _digest(obj),
            _error(obj),
            _changed(obj),
            _extents(obj, data) if kind == Kind.FILE else None,
        )
    except KeyError as err:
        raise LineError(f"missing or unknown value for {err}") from None
    except (ValueError, TypeError) as err:  # TypeError: a value of the wrong JSON type
        raise LineError(str(err)) from None
    if kind == Kind.SYMLINK and fields[15] is None and fields[18] is None:
        raise LineError("a symlink without 'link'")
    why = bad_name(fields[0])
    if why is not None:
        raise LineError(why)
    return Entry(fields)


def _bad_number(obj: dict[str, Any]) -> str:
    for key in ("uid", "gid", "mtime", "size", "alloc", "nlink"):
        value = obj.get(key, 0)
        if type(value) is not int or (key not in ("mtime",) and value < 0):
            return f"{key!r} must be a non-negative integer"
    return "bad number"


def _text(obj: dict[str, Any], key: str) -> str:
    value = obj[key]
    if not isinstance(value, str):
        raise LineError(f"{key!r} must be a string")
    return value


def _int(obj: dict[str, Any], key: str, default: int | None = None) -> int:
    value = obj.get(key, default)
    if value is None:  # absent, or null
        raise LineError(f"missing or null value for {key!r}")
    if type(value) is not int:
        raise LineError(f"{key!r} must be an integer")
    return value


def _uint(obj: dict[str, Any], key: str, default: int | None = None) -> int:
    value = _int(obj, key, default)
    if value < 0:
        raise LineError(f"{key!r} must not be negative")
    return value


def _mode(obj: dict[str, Any]) -> int:
    text = obj["mode"]
    if type(text) is not str:
        raise LineError(f"'mode' must be octal permission bits, not {text!r}")
    bits = _modes.get(text)
    if bits is None:
        if not (
            isinstance(text, str) and 1 <= len(text) <= 4 and all(c in "01234567" for c in text)
        ):
            raise LineError(f"'mode' must be octal permission bits, not {text!r}")
        bits = _modes[text] = int(text, 8)
    return bits


def _rdev(obj: dict[str, Any], kind: Kind) -> int:
    if kind not in (Kind.CHAR, Kind.BLOCK):
        return 0
    pair = obj["rdev"]
    if not (isinstance(pair, list) and len(pair) == 2 and all(type(n) is int for n in pair)):
        raise LineError("'rdev' must be [major, minor]")
    return os.makedev(*pair)


def _bytes_or_none(obj: dict[str, Any], key: str) -> bytes | None:
    return from_manifest(_text(obj, key)) if key in obj else None


def _xattrs(obj: dict[str, Any]) -> tuple[tuple[bytes, bytes], ...] | None:
    pairs = obj.get("xattrs")
    if pairs is None:
        return None
    if pairs == []:
        return ()
    if not isinstance(pairs, list) or not all(
        isinstance(p, list) and len(p) == 2 and all(isinstance(s, str) for s in p) for p in pairs
    ):
        raise LineError("'xattrs' must be a list of [name, value] strings")
    decoded = tuple((from_manifest(n), from_manifest(v)) for n, v in pairs)
    if list(decoded) != sorted(decoded) or len({n for n, _ in decoded}) != len(decoded):
        raise LineError("'xattrs' must be sorted by name, each name once")
    return decoded


def _digest(obj: dict[str, Any]) -> bytes | None:
    if "hash" not in obj:
        return None
    text = _text(obj, "hash")
    if text != text.lower() or len(text) % 2:
        raise LineError("'hash' must be lower-case hex digits")
    return bytes.fromhex(text)


def _error(obj: dict[str, Any]) -> tuple[str, int, int] | None:
    if "error" not in obj:
        return None
    value = obj["error"]
    if not (
        isinstance(value, list)
        and len(value) == 3
        and isinstance(value[0], str)
        and all(type(n) is int for n in value[1:])
    ):
        raise LineError("'error' must be [operation, errno, offset]")
    return value[0], value[1], value[2]


def _extents(obj: dict[str, Any], data: int) -> tuple[tuple[int, int], ...] | None:
    """The data extents of a sparse file: sorted, disjoint, adding up to 'data'."""
    pairs = obj.get("extents")
    if pairs is None:
        return None
    if not isinstance(pairs, list) or not all(
        isinstance(p, list) and len(p) == 2 and all(type(n) is int for n in p) for p in pairs
    ):
        raise LineError("'extents' must be a list of [start, end] integers")
    end = 0
    for a, b in pairs:
        if not end <= a < b:
            raise LineError("'extents' must be sorted, disjoint and non-empty")
        end = b
    if sum(b - a for a, b in pairs) != data or end > obj["size"]:
        raise LineError("'extents' do not add up to 'data' within 'size'")
    return tuple((a, b) for a, b in pairs)


def _changed(obj: dict[str, Any]) -> str | None:
    value = obj.get("changed")
    if value not in (None, "replaced", "modified", "size-mismatch"):
        raise LineError("'changed' must be 'replaced', 'modified' or 'size-mismatch'")
    return value
