"""ComparePolicy: which kinds of difference count, validated once.

A profile names a set of checked attributes, from what `find | md5sum`
checks up to everything a faithful copy can preserve.  Directory sizes,
atimes and ctimes are never compared: no copy tool can preserve them.
"""

import enum
import math
from dataclasses import dataclass

from zverify.errors import UsageError
from zverify.suggest import did_you_mean


class DiffKind(enum.StrEnum):
    """Kinds of difference, with the exact names used in JSON."""

    MISSING = "missing"  # only in SRC
    EXTRA = "extra"  # only in DST
    TYPE = "type"
    CONTENT = "content"
    SYMLINK = "symlink"  # link target string differs (links are never followed)
    HARDLINK = "hardlink"  # the partition of paths into inodes differs
    MODE = "mode"
    OWNER = "owner"
    MTIME = "mtime"
    XATTR = "xattr"  # includes POSIX ACLs (system.posix_acl_*)
    SPECIAL = "special"  # device major/minor
    ERROR = "error"  # could not be read: never identical
    CHANGED = "changed"  # changed while being read
    MOVED = "moved"  # --detect-moves: only in SRC at one path, only in DST at another


# One-character codes, in the spirit of rsync --itemize-changes.
CODES = {
    DiffKind.MISSING: "-",
    DiffKind.EXTRA: "+",
    DiffKind.TYPE: "T",
    DiffKind.CONTENT: "C",
    DiffKind.SYMLINK: "L",
    DiffKind.HARDLINK: "H",
    DiffKind.MODE: "p",
    DiffKind.OWNER: "o",
    DiffKind.MTIME: "t",
    DiffKind.XATTR: "x",
    DiffKind.SPECIAL: "D",
    DiffKind.ERROR: "!",
    DiffKind.CHANGED: "~",
    DiffKind.MOVED: "M",
}

ALWAYS = frozenset(
    {
        DiffKind.MISSING,
        DiffKind.EXTRA,
        DiffKind.TYPE,
        DiffKind.CONTENT,
        DiffKind.SYMLINK,
        DiffKind.ERROR,
        DiffKind.CHANGED,
    }
)
# What SRC holds that DST may not: a difference of these kinds answers "may I delete SRC?"
# with no.  The rest (metadata, hard links, entries only in DST, moves) leave every byte and
# name of SRC's data in DST.
AT_RISK = frozenset(
    {
        DiffKind.MISSING,
        DiffKind.TYPE,
        DiffKind.CONTENT,
        DiffKind.SYMLINK,
        DiffKind.SPECIAL,
        DiffKind.ERROR,
        DiffKind.CHANGED,
    }
)
RSYNC_A = ALWAYS | {DiffKind.MODE, DiffKind.OWNER, DiffKind.MTIME, DiffKind.SPECIAL}
RSYNC_AH = RSYNC_A | {DiffKind.HARDLINK}
FULL = RSYNC_AH | {DiffKind.XATTR}

PROFILES: dict[str, frozenset[DiffKind]] = {
    "content": ALWAYS,
    "rsync-a": RSYNC_A,
    "rsync-aH": RSYNC_AH,
    "full": FULL,
}
MAX_MTIME_WINDOW = 86_400 * 366  # a year: beyond that, --ignore mtime says what is meant
NEVER_IGNORED = frozenset({DiffKind.ERROR, DiffKind.CHANGED})
# What --ignore accepts: a move is not an attribute (only --detect-moves finds one).
IGNORABLE = tuple(k for k in DiffKind if k not in NEVER_IGNORED and k is not DiffKind.MOVED)


@dataclass(frozen=True)
class ComparePolicy:
    profile: str = "full"
    checked: frozenset[DiffKind] = FULL
    mtime_window_ns: int = 0
    quick: bool = False  # --quick: no file is read; equal size (and mtime) stands for content
    detect_moves: bool = False  # pair missing and extra files of one content (moves.py)

    @classmethod
    def build(
        cls,
        profile: str = "full",
        ignore: str | None = None,
        mtime_window: float = 0.0,
        quick: bool = False,
        detect_moves: bool = False,
    ) -> "ComparePolicy":
        """Validate user input into a policy; raises UsageError naming the bad part."""
        if profile not in PROFILES:
            raise UsageError(
                f"unknown profile {profile!r}{did_you_mean(profile, PROFILES)} "
                f"(choose from {', '.join(PROFILES)})"
            )
        if not (math.isfinite(mtime_window) and 0 <= mtime_window <= MAX_MTIME_WINDOW):
            raise UsageError(
                f"--mtime-window must be a number of seconds from 0 to {MAX_MTIME_WINDOW:,}"
                " (use --ignore mtime to ignore mtimes)"
            )
        checked = PROFILES[profile] - _parse_ignore(ignore)
        found = cls(profile, checked, round(mtime_window * 1e9), quick, detect_moves)
        if detect_moves:
            found._check_moves()
        return found

    def _check_moves(self) -> None:
        """--detect-moves pairs a missing and an extra file by their digests: both kinds
        must be reported and the digests computed, or a pair would be guessed."""
        if not self.reads_content:
            why = "--quick" if self.quick else "--ignore content"
            raise UsageError(
                f"--detect-moves pairs files by content digest, and {why} reads no content"
            )
        for kind in (DiffKind.MISSING, DiffKind.EXTRA):
            if not self.checks(kind):
                raise UsageError(
                    f"--detect-moves pairs missing with extra files: not with {kind.value} "
                    "ignored (--ignore, --one-way)"
                )

    def checks(self, kind: DiffKind) -> bool:
        return kind in self.checked

    @property
    def reads_content(self) -> bool:
        """Whether file bytes are read: not for --quick, nor when content is not compared
        (--ignore content), where reading every byte would change nothing but the time."""
        return not self.quick and DiffKind.CONTENT in self.checked

    @property
    def needs_xattrs(self) -> bool:
        return DiffKind.XATTR in self.checked


def _parse_ignore(ignore: str | None) -> set[DiffKind]:
    kinds: set[DiffKind] = set()
    for name in filter(None, (part.strip() for part in (ignore or "").split(","))):
        try:
            kind = DiffKind(name)
        except ValueError:
            valid_names = [k.value for k in IGNORABLE]
            valid = ", ".join(valid_names)
            raise UsageError(
                f"--ignore: unknown attribute {name!r}{did_you_mean(name, valid_names)} "
                f"(choose from {valid})"
            ) from None
        if kind in NEVER_IGNORED:
            raise UsageError(f"--ignore: {name!r} cannot be ignored: it means 'not verified'")
        if kind == DiffKind.MOVED:
            raise UsageError("--ignore: 'moved' is found only with --detect-moves: leave it out")
        kinds.add(kind)
    return kinds
