"""CompareResult: what `zverify compare` found, ready for the verdict rule and the renderers."""

from dataclasses import dataclass, field

from zverify import exitcodes
from zverify.compare.engine import EngineResult
from zverify.compare.policy import ComparePolicy, DiffKind
from zverify.filters import Filter
from zverify.fsinfo import UNKNOWN_FS, FsInfo
from zverify.hashing import Algorithm

# Kinds meaning "not verified": they make the verdict INCOMPLETE (exit 2), never DIFFERENT.
UNVERIFIED_KINDS = frozenset({DiffKind.ERROR, DiffKind.CHANGED})


@dataclass
class CompareResult(EngineResult):
    """The engine's findings plus what only the caller knows: the roots, the policy, the
    filesystems, and what this process could not see."""

    src_root: str = ""
    dst_root: str = ""
    policy: ComparePolicy = field(default_factory=ComparePolicy)
    algorithm: Algorithm = Algorithm.XXH3_128
    src_fs: FsInfo = UNKNOWN_FS
    dst_fs: FsInfo = UNKNOWN_FS
    # what the policy asked for but this process could not see (e.g. "trusted.* xattrs")
    unverifiable: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # e.g. DST lies inside SRC
    filter: Filter = field(default_factory=Filter)  # what both sides left out...
    excluded: dict[str, int] = field(default_factory=dict)  # ...and how much: "src"/"dst"
    # --files-from paths found in neither tree: what the user asked for was not compared
    unlisted: list[bytes] = field(default_factory=list)

    # The verdict rests on counts, which the engine keeps whether or not it collected the
    # differences themselves (it does not when they were streamed to a sink).

    @property
    def identical(self) -> bool:
        """No difference, nothing the profile compares hidden from this process, and every
        --files-from path found."""
        return self.total == 0 and not self.unverifiable and not self.unlisted

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def unverified_count(self) -> int:
        """Entries that could not be read, or changed while being read: not verified."""
        return sum(self.counts[k.value] for k in UNVERIFIED_KINDS)

    @property
    def exit_code(self) -> int:
        # A namespace the profile compares but this process cannot see (trusted.* xattrs
        # without CAP_SYS_ADMIN) leaves the profile's promise unproven: not verified, like
        # an unreadable entry.  `--ignore xattr` or a narrower profile is the user's way out.
        # So does a --files-from path found in neither tree: nothing was compared for it.
        unverified = self.unverified_count > 0 or bool(self.unverifiable) or bool(self.unlisted)
        return exitcodes.verdict(unverified=unverified, different=self.total > 0)
