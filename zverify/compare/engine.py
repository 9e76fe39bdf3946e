"""compare_trees(): the library entry point of `zverify compare`.

Walks SRC and DST concurrently (each walk has its own C threads), merge-joins
the two canonical streams, and applies the policy to every pair.  When a
directory exists on one side only, has changed type, or could not be listed,
everything below it is folded into that one difference (counted, and its
sizes accounted) instead of being listed entry by entry.
"""

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from zverify import exitcodes
from zverify.compare.diffs import Difference, diff_pair, same_entry
from zverify.compare.hardlinks import HardlinkTracker
from zverify.compare.march import march
from zverify.compare.policy import ComparePolicy, DiffKind
from zverify.compare.sizes import Explanation, SideTally
from zverify.entry import Entry, Kind
from zverify.fsinfo import FsInfo, filesystem_of
from zverify.hashing import Algorithm
from zverify.pathnames import is_under, sort_key
from zverify.walk import TreeWalk, WalkOptions, default_threads

# Kinds meaning the two entries do not hold the same payload.
PAYLOAD_KINDS = frozenset(
    {
        DiffKind.TYPE,
        DiffKind.CONTENT,
        DiffKind.SYMLINK,
        DiffKind.SPECIAL,
        DiffKind.ERROR,
        DiffKind.CHANGED,
    }
)
UNLISTED_OPS = frozenset({"lstat", "opendir", "readdir"})
ProgressHook = Callable[[int, int], None]  # (entries, bytes) so far, both trees


@dataclass
class CompareResult:
    src_root: str
    dst_root: str
    policy: ComparePolicy
    algorithm: Algorithm
    differences: list[Difference]
    src_sizes: SideTally
    dst_sizes: SideTally
    explanation: Explanation
    src_fs: FsInfo
    dst_fs: FsInfo

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
    def exit_code(self) -> int:
        if self.errors:
            return exitcodes.TROUBLE
        return exitcodes.IDENTICAL if self.identical else exitcodes.DIFFERENT


@dataclass
class _Fold:
    """A directory whose subtree is folded into one difference."""

    prefix: bytes
    difference: Difference | None  # None when the policy ignores that kind
    component: str  # where the folded entries' sizes are accounted


@dataclass
class _Comparison:
    policy: ComparePolicy
    differences: list[Difference] = field(default_factory=list)
    src: SideTally = field(default_factory=SideTally)
    dst: SideTally = field(default_factory=SideTally)
    explanation: Explanation = field(default_factory=Explanation)
    hardlinks: HardlinkTracker = field(default_factory=HardlinkTracker)
    fold: _Fold | None = None

    def visit(self, s: Entry | None, d: Entry | None) -> None:
        if s is not None and d is not None and self.fold is None and same_entry(s, d):
            self._identical(s, d)
            return
        if s is not None:
            self.src.add(s)
        if d is not None:
            self.dst.add(d)
        path = (s or d).path  # type: ignore[union-attr]
        if self.fold is not None and is_under(path, self.fold.prefix):
            self._absorb(s, d)
            return
        self.fold = None
        if s is None or d is None:
            self._one_sided(s, d)
        else:
            self._both(s, d)

    def _identical(self, s: Entry, d: Entry) -> None:
        """The common case, kept short: only sizes and hardlinks to note."""
        self.src.add(s)
        self.dst.add(d)
        if s.nlink > 1 or d.nlink > 1:
            self.hardlinks.add_pair(s, d)
        if s.alloc != d.alloc or s.data_bytes != d.data_bytes or s.size != d.size:
            self.explanation.add_pair(s, d, same_payload=True)

    def _absorb(self, s: Entry | None, d: Entry | None) -> None:
        assert self.fold is not None
        if self.fold.difference is not None:
            self.fold.difference.entries_below += 1
        for entry, sign in ((s, -1), (d, +1)):
            if entry is not None:
                self.explanation.add_only(self.fold.component, entry, sign)

    def _one_sided(self, s: Entry | None, d: Entry | None) -> None:
        entry, kind, sign = (s, DiffKind.MISSING, -1) if s else (d, DiffKind.EXTRA, +1)
        assert entry is not None
        self.explanation.add_only(kind.value, entry, sign)
        where = "SRC" if s else "DST"
        diff = Difference(entry.path, kind, f"{Kind(entry.kind).label} only in {where}")
        recorded = self._record([diff])
        if entry.kind == Kind.DIR:
            self.fold = _Fold(entry.path, recorded[0] if recorded else None, kind.value)

    def _both(self, s: Entry, d: Entry) -> None:
        found = diff_pair(s, d, self.policy)
        same_payload = not any(x.kind in PAYLOAD_KINDS for x in found)
        self.explanation.add_pair(s, d, same_payload)
        if same_payload:
            self.hardlinks.add_pair(s, d)
        recorded = self._record(found)
        if _subtree_incomparable(s, d):
            self.fold = _Fold(s.path, recorded[0] if recorded else None, "content")

    def _record(self, found: list[Difference]) -> list[Difference]:
        kept = [x for x in found if self.policy.checks(x.kind)]
        self.differences.extend(kept)
        return kept

    def finish(self) -> list[Difference]:
        self.explanation.finish(self.src, self.dst)
        if self.policy.checks(DiffKind.HARDLINK):
            self.differences.extend(self.hardlinks.differences())
        order = {kind: i for i, kind in enumerate(DiffKind)}
        return sorted(self.differences, key=lambda x: (sort_key(x.path), order[x.kind]))


def _subtree_incomparable(s: Entry, d: Entry) -> bool:
    """A directory on one side whose children cannot be paired: a type
    change, or a directory that could not be listed or was replaced."""
    if Kind.DIR not in (s.kind, d.kind):
        return False
    if s.kind != d.kind:
        return True
    return any(
        e.changed == "replaced" or (e.error is not None and e.error[0] in UNLISTED_OPS)
        for e in (s, d)
    )


def compare_trees(
    src: str,
    dst: str,
    policy: ComparePolicy | None = None,
    algorithm: Algorithm = Algorithm.XXH3_128,
    threads: int | None = None,
    one_file_system: bool = False,
    progress: ProgressHook | None = None,
) -> CompareResult:
    """Compare two trees; raises RootError if either root cannot be walked."""
    policy = policy or ComparePolicy()
    options = WalkOptions(
        algorithm=algorithm,
        threads=threads or default_threads(),
        xattrs=policy.needs_xattrs,
        one_file_system=one_file_system,
    )
    state = _Comparison(policy)
    src_walk = TreeWalk(src, options, "SRC")
    try:
        dst_walk = TreeWalk(dst, options, "DST")
    except BaseException:
        src_walk.close()
        raise
    try:
        for n, (s, d) in enumerate(march(src_walk, dst_walk)):
            state.visit(s, d)
            if progress is not None and n % 512 == 0:
                progress(*_sum_progress(src_walk, dst_walk))
    finally:
        src_walk.close()
        dst_walk.close()
    differences = state.finish()
    return CompareResult(
        src,
        dst,
        policy,
        algorithm,
        differences,
        state.src,
        state.dst,
        state.explanation,
        filesystem_of(src),
        filesystem_of(dst),
    )


def _sum_progress(a: TreeWalk, b: TreeWalk) -> tuple[int, int]:
    (ea, ba), (eb, bb) = a.progress(), b.progress()
    return ea + eb, ba + bb
