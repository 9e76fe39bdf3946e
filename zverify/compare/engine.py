"""The pure comparison engine: two canonical-order entry streams in, differences out.

compare_entries() merge-joins any two streams of entries (live walks, a manifest, a
snapshot tree, an MPI rank's share) and applies the policy to every pair.  It does no I/O.
When a directory exists on one side only, has changed type, or could not be listed,
everything below it is folded into that one difference (counted, and its sizes accounted)
instead of being listed entry by entry.  What it means is specified in
docs/design/compare.md.
"""

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from zverify import _zvcore
from zverify.compare.diffs import Difference, diff_pair, same_entry
from zverify.compare.hardlinks import HardlinkTracker
from zverify.compare.march import Pair, march
from zverify.compare.policy import ComparePolicy, DiffKind
from zverify.compare.sizes import Explanation, Settled, SideTally
from zverify.entry import Entry, Kind
from zverify.identity import Identity, inode_identity
from zverify.pathnames import is_under, sort_key

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
# Errors that leave a directory's children unknown.
UNLISTED_OPS = frozenset({_zvcore.OP_LSTAT, _zvcore.OP_OPENDIR, _zvcore.OP_READDIR})


@dataclass
class _Fold:
    """A directory whose subtree is folded into one difference."""

    prefix: bytes
    difference: Difference | None  # None when the policy ignores that kind
    component: str  # where the folded entries' sizes are accounted


@dataclass
class EngineResult:
    """What the engine found: the differences (sorted) and both sides' size tallies."""

    differences: list[Difference]
    src_sizes: SideTally
    dst_sizes: SideTally
    explanation: Explanation


def compare_entries(
    src: Iterable[Entry],
    dst: Iterable[Entry],
    policy: ComparePolicy,
    identity: Identity = inode_identity,
) -> EngineResult:
    """Compare two canonical-order entry streams; raises march.OrderError on unsorted input."""
    state = _Comparison(policy, identity)
    for s, d in march(src, dst):
        state.visit(s, d)
    return EngineResult(state.finish(), state.src, state.dst, state.explanation)


def compare_pair_batches(
    batches: Iterable[list[Pair]],
    settled: Callable[[], Settled],
    policy: ComparePolicy,
    identity: Identity = inode_identity,
) -> EngineResult:
    """The same comparison, fed pairs already merge-joined (zverify.compare.joined): identical
    pairs were settled outside and arrive only as totals, read by settled() at the end."""
    state = _Comparison(policy, identity)
    for batch in batches:
        for s, d in batch:
            state.visit(s, d)
    state.add_settled(settled())
    return EngineResult(state.finish(), state.src, state.dst, state.explanation)


class _Comparison:
    def __init__(self, policy: ComparePolicy, identity: Identity) -> None:
        self.policy = policy
        self.sizes_only = not policy.reads_content
        self.differences: list[Difference] = []
        self.src = SideTally(identity)
        self.dst = SideTally(identity)
        self.explanation = Explanation()
        self.hardlinks = HardlinkTracker(identity)
        self.fold: _Fold | None = None

    def visit(self, s: Entry | None, d: Entry | None) -> None:
        if (
            s is not None
            and d is not None
            and self.fold is None
            and same_entry(s, d, self.sizes_only)
        ):
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

    def add_settled(self, settled: Settled) -> None:
        """Identical pairs settled outside: what _identical() would have added for them."""
        self.src.add_settled(settled.src)
        self.dst.add_settled(settled.dst)
        for component, (apparent, allocated) in settled.components.items():
            self.explanation.add(component, apparent, allocated)

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
