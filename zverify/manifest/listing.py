"""A manifest in another tool's format, read whole: its entries and what it cannot tell.

Foreign formats (mtree specs, hashdeep lists, BagIt manifests) are neither sorted nor
self-checking and are usually small; they are parsed completely, sorted into canonical
order, and compared like any other side.  Every kind of difference a format cannot express
is listed with the reason, and compare refuses to check it rather than pass it unseen.
"""

from dataclasses import dataclass, field

from zverify.compare.policy import DiffKind
from zverify.entry import Entry
from zverify.fsinfo import FsInfo
from zverify.hashing import Algorithm

NO_FILESYSTEM = FsInfo("unknown filesystem", "(not recorded)", "")


@dataclass
class Listing:
    entries: list[Entry]  # canonical order
    algorithm: Algorithm | None  # of every file's digest; None when content is not recorded
    lacking: dict[DiffKind, str] = field(default_factory=dict)  # kind -> why not recorded
    files_only: bool = False  # lists regular files only, never directories
    summary: str = ""  # one line for the report's notes
