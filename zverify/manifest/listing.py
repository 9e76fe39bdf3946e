"""A manifest in another tool's format, read whole: its entries and what it cannot tell.

Foreign formats (mtree specs, hashdeep lists, BagIt manifests) are neither sorted nor
self-checking and are usually small; they are parsed completely, sorted into canonical
order, and compared like any other side.  Every kind of difference a format cannot express
is listed with the reason, and compare refuses to check it rather than pass it unseen.
"""

from dataclasses import dataclass, field

from zverify.compare.policy import DiffKind
from zverify.entry import TYPE_BITS, Entry, Kind
from zverify.fsinfo import FsInfo
from zverify.hashing import Algorithm

NO_FILESYSTEM = FsInfo("unknown filesystem", "(not recorded)", "")
_ABSENT: dict[str, object] = {
    **{name: 0 for name in Entry.__match_args__},
    **{name: None for name in ("link", "xattrs", "digest", "error", "changed", "extents")},
}


def recorded_entry(
    path: bytes, kind: Kind, ino: int, permissions: int = 0, **fields: object
) -> Entry:
    """An entry of a foreign format: what it records, 0 or None for the rest; ino is the
    entry's identity within its listing (see format.parse_entry)."""
    values = {**_ABSENT, "path": path, "kind": int(kind), "ino": ino, "nlink": 1, **fields}
    values["mode"] = TYPE_BITS[kind] | permissions
    return Entry(values[name] for name in Entry.__match_args__)


@dataclass
class Listing:
    entries: list[Entry]  # canonical order
    algorithm: Algorithm | None  # of every file's digest; None when content is not recorded
    lacking: dict[DiffKind, str] = field(default_factory=dict)  # kind -> why not recorded
    files_only: bool = False  # lists regular files only, never directories
    sizes: bool = True  # False: files' sizes are not recorded (SIZE_NOT_RECORDED)
    summary: str = ""  # one line for the report's notes
    what: str = "a manifest"  # its format, for the report: "an mtree spec", "a checkfile"...
