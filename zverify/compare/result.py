"""CompareResult: what `zverify compare` found, ready for the verdict rule and the renderers."""

from collections import Counter
from dataclasses import dataclass, field

from zverify import exitcodes
from zverify.compare.diffs import Difference
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

    @property
    def identical(self) -> bool:
        return not self.differences

    @property
    def counts(self) -> Counter[str]:
        return Counter(d.kind.value for d in self.differences)

    @property
    def errors(self) -> list[Difference]:
        return [d for d in self.differences if d.kind is DiffKind.ERROR]

    @property
    def unverified(self) -> list[Difference]:
        """Entries that could not be read, or changed while being read: not verified."""
        return [d for d in self.differences if d.kind in UNVERIFIED_KINDS]

    @property
    def exit_code(self) -> int:
        return exitcodes.verdict(unverified=bool(self.unverified), different=not self.identical)
