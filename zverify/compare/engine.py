"""The pure comparison engine: two canonical-order entry streams in, differences out.

compare_entries() merge-joins any two streams of entries (live walks, a manifest, a
snapshot tree, an MPI rank's share) and applies the policy to every pair.  It does no I/O.
When a directory exists on one side only, has changed type, or could not be listed,
everything below it is folded into that one difference (counted, and its sizes accounted)
instead of being listed entry by entry.  What it means is specified in
docs/design/compare.md.

Differences go to a sink as they are found, in canonical path order (a folded directory's
when its subtree ends, hardlink differences after the walk: only then are the groups
whole), so memory does not grow with their number.  Without a sink they are collected.
"""

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from zverify import _zvcore
from zverify.compare.diffs import Difference, diff_pair, same_entry
from zverify.compare.hardlinks import HardlinkTracker
from zverify.compare.march import Pair, march
from zverify.compare.moves import MovePairing
from zverify.compare.policy import ComparePolicy, DiffKind
from zverify.compare.sizes import Explanation, Settled, SideTally
from zverify.entry import Entry, Kind
from zverify.identity import Identity, inode_identity
from zverify.pathnames import is_under

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
    held: list[Difference]  # the directory's own, sent when the subtree ends
    component: str  # where the folded entries' sizes are accounted


DifferenceSink = Callable[[Difference], None]


@dataclass
class EngineResult:
    """What the engine found: how many differences of each kind (always), the differences
    themselves (only when no sink took them) and both sides' size tallies."""

    counts: Counter[str]
    src_sizes: SideTally
    dst_sizes: SideTally
    explanation: Explanation
    differences: list[Difference] = field(default_factory=list)


def compare_entries(
    src: Iterable[Entry],
    dst: Iterable[Entry],
    policy: ComparePolicy,
    identity: Identity = inode_identity,
    sink: DifferenceSink | None = None,
) -> EngineResult:
    """Compare two canonical-order entry streams; raises march.OrderError on unsorted input."""
    state = _Comparison(policy, identity, sink)
    for s, d in march(src, dst):
        state.visit(s, d)
    return state.finish()


def compare_pair_batches(
    batches: Iterable[list[Pair]],
    settled: Callable[[], Settled],
    policy: ComparePolicy,
    identity: Identity = inode_identity,
    sink: DifferenceSink | None = None,
) -> EngineResult:
    """The same comparison, fed pairs already merge-joined (zverify.compare.joined): identical
    pairs were settled outside and arrive only as totals, read by settled() at the end."""
    state = _Comparison(policy, identity, sink)
    for batch in batches:
        for s, d in batch:
            state.visit(s, d)
    state.add_settled(settled())
    return state.finish()


class _Comparison:
    def __init__(
        self, policy: ComparePolicy, identity: Identity, sink: DifferenceSink | None
    ) -> None:
        self.policy = policy
        self.sizes_only = not policy.reads_content
        self.collected: list[Difference] = []
        self.sink = sink or self.collected.append
        self.counts: Counter[str] = Counter()
        self.src = SideTally(identity)
        self.dst = SideTally(identity)
        self.explanation = Explanation()
        self.hardlinks = HardlinkTracker(identity)
        self.fold: _Fold | None = None
        self.moves = MovePairing() if policy.detect_moves else None

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
        self._end_fold()
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
        if self.fold.held:  # empty when the policy ignores that kind
            self.fold.held[0].entries_below += 1
        for entry, sign in ((s, -1), (d, +1)):
            if entry is not None:
                self.explanation.add_only(self.fold.component, entry, sign)

    def _one_sided(self, s: Entry | None, d: Entry | None) -> None:
        entry, kind, sign = (s, DiffKind.MISSING, -1) if s else (d, DiffKind.EXTRA, +1)
        assert entry is not None
        self.explanation.add_only(kind.value, entry, sign)
        where = "SRC" if s else "DST"
        diff = Difference(entry.path, kind, f"{Kind(entry.kind).label} only in {where}")
        if entry.kind == Kind.DIR:
            self._start_fold(entry.path, [diff], kind.value)
        elif self.moves is None or not self.moves.hold(diff, entry):
            self._record([diff])

    def _both(self, s: Entry, d: Entry) -> None:
        found = diff_pair(s, d, self.policy)
        same_payload = not any(x.kind in PAYLOAD_KINDS for x in found)
        self.explanation.add_pair(s, d, same_payload)
        if same_payload:
            self.hardlinks.add_pair(s, d)
        if _subtree_incomparable(s, d):
            self._start_fold(s.path, found, "content")
        else:
            self._record(found)

    def _start_fold(self, prefix: bytes, found: list[Difference], component: str) -> None:
        """The directory's differences wait for its subtree to end: the first counts what
        is below."""
        self.fold = _Fold(prefix, self._kept(found), component)

    def _end_fold(self) -> None:
        if self.fold is not None:
            self._emit(self.fold.held)
        self.fold = None

    def _kept(self, found: list[Difference]) -> list[Difference]:
        return [x for x in found if self.policy.checks(x.kind)]

    def _record(self, found: list[Difference]) -> None:
        self._emit(self._kept(found))

    def _emit(self, kept: list[Difference]) -> None:
        for x in kept:
            self.counts[x.kind.value] += 1
            self.sink(x)

    def finish(self) -> EngineResult:
        self._end_fold()
        if self.moves is not None:
            self._emit(self.moves.resolve())  # checked: the policy refuses moves without both
        self.explanation.finish(self.src, self.dst)
        if self.policy.checks(DiffKind.HARDLINK):
            self._emit(self.hardlinks.differences())
        return EngineResult(self.counts, self.src, self.dst, self.explanation, self.collected)


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
