"""check_cutover(): read both dataset trees through zverify.zfs, run the pure checks, read
the content if asked, and read the state again at the end: anything that moved while
zverify was looking makes the whole answer unverified."""

from collections.abc import Mapping
from dataclasses import dataclass, field

from zverify.cold.store import Store
from zverify.cutover import checks, content, continuity, poolstate
from zverify.cutover.checks import Pair, Written
from zverify.cutover.findings import Finding, Severity
from zverify.cutover.properties import COMPARED, compare_properties
from zverify.cutover.result import CutoverResult, DatasetResult
from zverify.cutover.snapshots import Common, compare_snapshots
from zverify.errors import UsageError, ZfsError
from zverify.progress import CompareHook
from zverify.zfs import inventory
from zverify.zfs import pool as zpool
from zverify.zfs.inventory import Dataset, Snap

# Read by the checks besides the compared properties.
STATE_PROPERTIES = ("type", "receive_resume_token", "keystatus", "encryptionroot", "mounted")


@dataclass(frozen=True)
class CutoverOptions:
    recursive: bool = False
    alone: bool = False  # --no-recursive: SRC alone, its descendants knowingly left out
    content: bool = False
    strict: bool = False  # an extra dataset on the destination fails
    all_snapshots: bool = False  # every source snapshot must be on the replica
    explain: bool = False  # list the paths written on the source (zfs diff)
    expect: Mapping[str, str] = field(default_factory=dict)
    threads: int | None = None
    # --cold: (label, store) of each archive whose next incremental must start on DST
    cold: tuple[tuple[str, Store], ...] = ()
    pool_state: bool = False  # DST's pool must show a clean scrub after the last receive
    live: bool = False  # DST is in service: its own writes and newer snapshots are expected


@dataclass
class _Side:
    root: str
    datasets: list[Dataset]
    snapshots: dict[str, list[Snap]]  # by dataset name, oldest first

    @classmethod
    def read(cls, root: str, recursive: bool) -> "_Side":
        return cls(
            root, inventory.datasets(root, recursive), inventory.snapshots_below(root, recursive)
        )


def check_cutover(
    src: str, dst: str, options: CutoverOptions, progress: CompareHook | None = None
) -> CutoverResult:
    """Raises ZfsError (exit 2) when either tree cannot be listed at all."""
    _refuse_overlap(src, dst, options.recursive)
    _flush(src, dst)
    sides = (_Side.read(src, options.recursive), _Side.read(dst, options.recursive))
    unchecked = [] if options.recursive else _unchecked_descendants(src, dst)
    pairs, tree_findings = checks.pair_datasets(
        sides[0].datasets, sides[1].datasets, (src, dst), options.strict
    )
    results = [_check_pair(p, sides, options, tree_findings, progress) for p in pairs]
    other = [f for f in tree_findings if f.dataset not in {p.src.name for p in pairs}]
    other += checks.unchecked_descendants(src, unchecked, options.alone)
    other += _recheck(sides, results, options.recursive)
    other += _moved_descendants(src, dst, unchecked, options.recursive)
    other += _cold_continuity(sides, options)
    other += _pool_state(dst, options)
    return CutoverResult(src, dst, options.recursive, options.content, results, other, unchecked)


def _pool_state(dst: str, options: CutoverOptions) -> list[Finding]:
    if not options.pool_state:
        return []
    try:
        events = zpool.history(dst.partition("/")[0])
        scan = zpool.scan_line(dst.partition("/")[0])
    except ZfsError as err:
        return [poolstate.unreadable(dst, str(err))]
    return poolstate.check_pool_state(dst, events, scan, options.strict)


def _cold_continuity(sides: tuple["_Side", "_Side"], options: CutoverOptions) -> list[Finding]:
    """--cold: each archive's next incremental must find its base on DST.  The whole trees
    are listed (snapshots and bookmarks) whatever -r says: an archive may be of any dataset
    below SRC."""
    if not options.cold:
        return []
    archives = continuity.read_archives(options.cold)
    tree = []
    for side in sides:
        held = {k: list(v) for k, v in inventory.snapshots_below(side.root, True).items()}
        for name, marks in inventory.bookmarks_below(side.root, True).items():
            held.setdefault(name, []).extend(marks)
        tree.append(held)
    return continuity.check_continuity(archives, (sides[0].root, sides[1].root), *tree)


def _unchecked_descendants(src: str, dst: str) -> list[str]:
    """SRC's descendants, which a check without -r does not look at (the replica itself and
    what lies below it excluded, when DST is inside SRC)."""
    return [
        name
        for name in inventory.descendants(src)
        if name != dst and not name.startswith(dst + "/")
    ]


def _moved_descendants(src: str, dst: str, before: list[str], recursive: bool) -> list[Finding]:
    """Without -r, the descendants are read again too: a dataset created during the check
    would otherwise go unmentioned by a verdict about SRC's whole tree."""
    if recursive:
        return []
    try:
        after = _unchecked_descendants(src, dst)
    except ZfsError as err:
        return [_moved(src, f"its descendants could not be listed again: {err}")]
    if after == before:
        return []
    return [_moved(src, "descendant datasets were created, destroyed or renamed")]


def _flush(*datasets: str) -> None:
    """Put every pending write of both pools on disk, so that written@ counts it.  A pool
    imported read-only has none, and is never asked to write anything (`zpool sync`
    waits for a transaction group a read-only pool does not run)."""
    for pool in sorted({name.partition("/")[0] for name in datasets}):
        if not inventory.read_only(pool):
            inventory.flush(pool)


def _refuse_overlap(src: str, dst: str, recursive: bool) -> None:
    if src == dst:
        raise UsageError(f"SRC and DST are the same dataset {src!r}: nothing to compare")
    inside = dst.startswith(src + "/") or src.startswith(dst + "/")
    if recursive and inside:
        raise UsageError(f"with -r, SRC {src!r} and DST {dst!r} must not contain each other")


def _check_pair(
    pair: Pair,
    sides: tuple[_Side, _Side],
    options: CutoverOptions,
    tree_findings: list[Finding],
    progress: CompareHook | None,
) -> DatasetResult:
    src, dst = pair.src, pair.dst
    result = DatasetResult(src.name, dst.name if dst else None, src.type)
    result.findings += [f for f in tree_findings if f.dataset == src.name]
    if dst is None or dst.type != src.type:
        return result
    src_snaps = sides[0].snapshots.get(src.name, [])
    dst_snaps = sides[1].snapshots.get(dst.name, [])
    found = result.findings
    found += checks.incomplete_receive(dst, src.name)
    snaps = compare_snapshots(src.name, src_snaps, dst_snaps, options.all_snapshots)
    found += snaps.findings
    result.latest_common, result.behind = snaps.latest_common, len(snaps.behind)
    written = _since_common(pair, result, options.explain, sides[1], dst_snaps)
    tops = (sides[0].datasets[0], sides[1].datasets[0])
    found += compare_properties(src, dst, tops, options.expect)
    found += checks.encryption(pair, (sides[0].root, sides[1].root), _key_problem(dst))
    found += checks.source_holds(src.name, src_snaps, _hold_tags(src.name, src_snaps))
    if options.content and result.latest_common is not None and written is not None:
        found += content.compare_content(
            pair, result.latest_common, written, options.threads, progress
        )
    if options.live:
        result.findings = checks.live_replica(result.findings)
    return result


def _since_common(
    pair: Pair, result: DatasetResult, explain: bool, dst_side: _Side, dst_snaps: list[Snap]
) -> tuple[Written, Written] | None:
    """What was written on each side since the latest common snapshot, into result (its
    findings too); None when there is no common snapshot or written@ cannot be read."""
    common = result.latest_common
    if common is None:
        return None
    written = _written(pair, common, explain)
    if isinstance(written, Finding):
        result.findings.append(written)
        return None
    result.src_written, result.dst_written = written[0].bytes, written[1].bytes
    result.findings += checks.source_written(pair.src.name, common, written[0])
    mounts = _mountpoints(pair, dst_side)
    newest = dst_snaps[-1] if dst_snaps else None
    if newest is not None and newest.createtxg > common.dst.createtxg:
        result.findings += _since_replica_newest(pair, common, newest.name, mounts)
    else:
        result.findings += checks.destination_written(pair.src.name, common, written[1], mounts)
    return written


def _since_replica_newest(
    pair: Pair, common: Common, newest: str, mounts: frozenset[str]
) -> list[Finding]:
    """The replica has snapshots newer than the common one (`diverged` says so): written@ of
    the common one counts what it received into them, so only what was written after its
    newest snapshot was changed on the replica, and only that is listed as such."""
    assert pair.dst is not None
    try:
        size = inventory.written_since(pair.dst.name, newest)
    except ZfsError as err:
        why = f"written@{newest} could not be read: {err}"
        return [Finding("unreadable", Severity.UNVERIFIED, pair.src.name, why)]
    w = Written(size, _changes(pair.dst, newest) if size else None)
    return checks.destination_written(pair.src.name, common, w, mounts, newest)


def _written(pair: Pair, common: Common, explain: bool) -> tuple[Written, Written] | Finding:
    assert pair.dst is not None
    try:
        src_bytes, dst_bytes = _written_bytes(pair.src.name, pair.dst.name, common)
    except ZfsError as err:
        return Finding(
            "unreadable", Severity.UNVERIFIED, pair.src.name, f"written@ could not be read: {err}"
        )
    src_asked = src_bytes and (explain or src_bytes <= checks.METADATA_ONLY_MAX)
    src_changes = _changes(pair.src, common.src.name) if src_asked else None
    dst_changes = _changes(pair.dst, common.dst.name) if dst_bytes else None
    written = Written(src_bytes, src_changes), Written(dst_bytes, dst_changes)
    if pair.src.type == "volume":
        return content.volume_bookkeeping(pair, common, written)
    return written


def _written_bytes(src: str, dst: str, common: Common) -> tuple[int, int]:
    """written@ of the latest common snapshot on each side (under each side's name)."""
    return (
        inventory.written_since(src, common.src.name),
        inventory.written_since(dst, common.dst.name),
    )


def _mountpoints(pair: Pair, dst_side: _Side) -> frozenset[str]:
    """The replica's own mount point and those of its mounted child datasets: directories
    that mounting (not a user) creates or touches."""
    assert pair.dst is not None
    children = [
        d.value("mountpoint")
        for d in dst_side.datasets
        if d.name.rpartition("/")[0] == pair.dst.name and d.value("mounted") == "yes"
    ]
    return frozenset([pair.dst.value("mountpoint"), *children])


def _changes(ds: Dataset, snapshot: str) -> list[str] | str:
    """The paths `zfs diff` lists, or why it could not."""
    if ds.type != "filesystem":
        return f"a {ds.type} has no paths to list"
    try:
        return inventory.changes_since(ds.name, snapshot)
    except ZfsError as err:
        return str(err)


def _key_problem(dst: Dataset) -> str | None:
    """None when dst's key is loaded or `zfs load-key -n` proves it would load."""
    if dst.value("encryption") in ("off", "-") or dst.value("keystatus") == "available":
        return None
    return inventory.key_not_proven(dst.value("encryptionroot"))


def _hold_tags(dataset: str, snaps: list[Snap]) -> dict[str, list[str]]:
    """Tags of the held snapshots, for the message only (the count is already known)."""
    tags = {}
    for s in snaps:
        if s.userrefs:
            try:
                tags[s.name] = inventory.holds(dataset, s.name)
            except ZfsError:
                tags[s.name] = []
    return tags


def _recheck(
    sides: tuple[_Side, _Side], results: list[DatasetResult], recursive: bool
) -> list[Finding]:
    """Read the datasets, snapshot lists and written@ values again: a check is only as good
    as the state it saw, and that state must still be the state now."""
    moved: list[Finding] = []
    try:
        _flush(sides[0].root, sides[1].root)
        for side in sides:
            again = _Side.read(side.root, recursive)
            moved += _moved_datasets(side, again)
            moved += _moved_snapshots(side, again)
        for r in results:
            moved += _moved_written(r)
    except ZfsError as err:
        moved.append(
            Finding(
                "changed-during-check",
                Severity.UNVERIFIED,
                sides[0].root,
                f"the state could not be read again at the end: {err}",
            )
        )
    return moved


def _moved_datasets(before: _Side, after: _Side) -> list[Finding]:
    old = {d.name: _checked_state(d) for d in before.datasets}
    new = {d.name: _checked_state(d) for d in after.datasets}
    what = "it appeared or disappeared, a receive started or ended, or a property changed"
    return [_moved(name, what) for name in _differing(old, new)]


def _checked_state(d: Dataset) -> list[tuple[str, str, str]]:
    """Everything the checks read from a dataset's properties (not space accounting, which
    moves by itself)."""
    names = [*COMPARED, *STATE_PROPERTIES, *(n for n in d.props if ":" in n)]
    return [(n, p.value, p.source) for n in names if (p := d.props.get(n)) is not None]


def _moved_snapshots(before: _Side, after: _Side) -> list[Finding]:
    def listed(side: _Side) -> dict[str, list[tuple[str, int]]]:
        return {ds: [(s.name, s.guid) for s in snaps] for ds, snaps in side.snapshots.items()}

    what = "snapshots were taken, destroyed or renamed"
    return [_moved(name, what) for name in _differing(listed(before), listed(after))]


def _differing(old: Mapping[str, object], new: Mapping[str, object]) -> list[str]:
    """The datasets whose state is not the same in old and new (or is in one only)."""
    return sorted(name for name in old.keys() | new.keys() if old.get(name) != new.get(name))


def _moved_written(r: DatasetResult) -> list[Finding]:
    if r.latest_common is None or r.dst is None or r.src_written is None:
        return []
    now = _written_bytes(r.src, r.dst, r.latest_common)
    if now == (r.src_written, r.dst_written):
        return []
    return [
        _moved(
            r.src,
            f"written@ went from {r.src_written:,}/{r.dst_written:,} to "
            f"{now[0]:,}/{now[1]:,} bytes (source/replica)",
        )
    ]


def _moved(dataset: str, what: str) -> Finding:
    return Finding(
        "changed-during-check",
        Severity.UNVERIFIED,
        dataset,
        f"{dataset} changed while it was checked: {what}",
    )
