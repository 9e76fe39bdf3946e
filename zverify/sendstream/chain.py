"""The chains of an archive as OpenZFS receives them: what the files restore, in which order
the streams put the snapshots, and which files nothing can receive.

Pure: no I/O (docs/design/cold.md).  A restore receives whole files, one after another, into
one new dataset tree (zverify.cold.restore).  The model follows it exactly:

* the state of a restore is, per dataset received so far, its Tip (zverify.sendstream.rules),
  and where the first file landed (the top dataset of every later file must be that one or
  below it, so that each file has a place under the target);
* a file can be received when every substream in it is accepted in turn: a full only for a
  dataset not there yet, an incremental only from that dataset's tip and with the flags the
  tip demands (-w, -L), a clone only from an origin an earlier substream of the same file
  brought (a `-R` package sends the origin first); a `-R` package therefore needs every
  dataset it carries in place;
* receiving it brings every snapshot it holds.

plan() searches from nothing, fewest bytes first, so each restorable snapshot comes with the
cheapest list of files that rebuilds it.  Names are never trusted: files connect only by
GUID, and a dataset renamed between its streams is one chain (lineages(): the caller joins
the names before planning, as `zfs receive` ignores an incremental's dataset name).

The order of snapshots comes from the streams alone: an incremental from A to B says that A
is older than B, whatever the clocks said.  Two snapshots no stream connects have no order
(two fulls made apart, a fork after a rollback): both can be "newest".  Creation times follow
the wall clock: shown, never ordered by (prune's --keep-within reads them only to keep more).
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from zverify.errors import ZverifyError
from zverify.sendstream import rules
from zverify.sendstream.route import Route
from zverify.sendstream.rules import Tip

MAX_STATES = 200_000
"""Restore states explored per dataset.  Real archives have about one per file; an archive
that needs more is not judged (exit 2), never judged on part of its routes."""


class TooManyRoutes(ZverifyError):
    """The archive has more ways to be received than the planner explores."""


class LoopedHistory(ZverifyError):
    """Streams that order a snapshot before itself: no real history does."""


@dataclass(frozen=True)
class Step:
    """One substream of a file: from_guid -> to_guid (from_guid 0 for a full), and the send
    flags that decide what it can follow (zverify.sendstream.rules)."""

    dataset: str
    from_guid: int
    to_guid: int
    snapshot: str  # the part after '@'
    creation_time: int = 0  # shown to people; never orders anything
    raw: bool = False  # feature RAW: `zfs send -w` of an encrypted dataset
    large_blocks: bool = False  # feature LARGE_BLOCKS: -L (or -w) with blocks > 128 KiB
    resuming: bool = False  # feature RESUMING: `zfs send -t`
    unsupported: str = ""  # why no restore can receive it (dedup, redacted...)
    clone: bool = False  # DRR_FLAG_CLONE: from_guid is the origin, another dataset's snapshot

    @property
    def key(self) -> tuple[object, ...]:
        return (self.dataset, self.from_guid, self.to_guid, self.raw, self.large_blocks,
                self.resuming, self.unsupported, self.clone)  # fmt: skip


@dataclass(frozen=True)
class ArchivedFile:
    name: str  # relative to the archive directory
    size: int
    steps: tuple[Step, ...]

    def steps_of(self, dataset: str) -> list[Step]:
        return [s for s in self.steps if s.dataset == dataset]

    @property
    def datasets(self) -> list[str]:
        return sorted({s.dataset for s in self.steps})

    @property
    def top(self) -> str:
        """The dataset a receive of this file puts at its target (a -R package's top)."""
        return min(self.datasets, key=len)

    @property
    def resuming(self) -> bool:
        return any(s.resuming for s in self.steps)


@dataclass(frozen=True)
class Restorable:
    """A snapshot the archive can rebuild, and the files to receive, in order."""

    dataset: str
    snapshot: str
    guid: int
    creation_time: int
    files: Sequence[str]  # a Route when planned; a tuple is the same route
    bytes: int
    tip: Tip | None = None  # the dataset after those files: what a next incremental must match


class Order:
    """The order of one dataset's snapshots that the streams prove: A is older than B when a
    chain of incrementals leads from A to B.  Linear in the edges.  Streams that lead from a
    snapshot back to itself are not one dataset's history (only forged streams do): raises
    LoopedHistory, and nothing is judged."""

    def __init__(
        self, edges: Iterable[tuple[int, int]], when: dict[int, int] | None = None
    ) -> None:
        self._next: dict[int, set[int]] = defaultdict(set)
        self._prev: dict[int, set[int]] = defaultdict(set)
        for a, b in edges:
            self._next[a].add(b)
            self._prev[b].add(a)
        self._rank = self._topological(when or {})

    def _topological(self, when: dict[int, int]) -> dict[int, int]:
        """Each snapshot's place in one order that respects every edge (Kahn; between
        snapshots the edges leave unordered, the earlier creation time first: for people
        reading a list, never for a decision)."""
        nodes = set(self._next) | set(self._prev) | set(when)
        waiting = {g: len(self._prev.get(g, ())) for g in nodes}
        ready = [(when.get(g, 0), g) for g, n in waiting.items() if n == 0]
        heapq.heapify(ready)
        rank: dict[int, int] = {}
        while ready:
            _, g = heapq.heappop(ready)
            rank[g] = len(rank)
            for h in self._next.get(g, ()):
                waiting[h] -= 1
                if waiting[h] == 0:
                    heapq.heappush(ready, (when.get(h, 0), h))
        if len(rank) != len(nodes):
            looped = sorted(nodes - rank.keys())[:3]
            raise LoopedHistory(
                "the streams lead from snapshot guid "
                f"{' and '.join(map(str, looped))} back to itself: they are not one dataset's "
                "history (forged or mixed-up streams); the archive is not judged"
            )
        return rank

    def older(self, a: int, b: int) -> bool:
        """a is proven older than b."""
        return a in self.older_than_any({b})

    def older_than_any(self, targets: set[int]) -> set[int]:
        """Every snapshot proven older than at least one of targets."""
        found: set[int] = set()
        todo = [p for t in targets for p in self._prev.get(t, ())]
        while todo:
            g = todo.pop()
            if g not in found:
                found.add(g)
                todo.extend(self._prev.get(g, ()))
        return found

    def sort_key(self, guid: int) -> int:
        """A key that puts older snapshots first."""
        return self._rank.get(guid, 0)


@dataclass
class DatasetPlan:
    dataset: str
    restorable: list[Restorable] = field(default_factory=list)  # oldest first
    newest: list[Restorable] = field(default_factory=list)  # no restorable snapshot follows
    # (file, missing base GUID, the dataset whose substream starts from it: this one, or for a
    # full of this one inside a package, the package's first)
    orphans: list[tuple[str, int, str]] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)  # (file, why receive refuses)
    duplicates: list[tuple[str, str]] = field(default_factory=list)  # (file, same as file)
    order: Order = field(default_factory=lambda: Order(()))
    was: tuple[str, ...] = ()  # the other names its chain's streams carry (lineages())


def plan(files: list[ArchivedFile]) -> dict[str, DatasetPlan]:
    """Per dataset: restorable snapshots, the newest ones, and the files no route receives.
    Raises TooManyRoutes."""
    datasets = sorted({d for f in files for d in f.datasets})
    unique, duplicates = _without_duplicates(files)
    return {d: _plan_dataset(d, files, unique, duplicates) for d in datasets}


def _plan_dataset(
    dataset: str,
    files: list[ArchivedFile],
    unique: list[ArchivedFile],
    duplicates: list[tuple[ArchivedFile, str]],
) -> DatasetPlan:
    mine = [f for f in unique if f.steps_of(dataset)]
    result = DatasetPlan(dataset, order=order_of(dataset, files))
    result.duplicates = [(f.name, other) for f, other in duplicates if f.steps_of(dataset)]
    reached, used, refusals = _search(dataset, _with_mates(mine, unique))
    for f in mine:
        if f.name in used or f.resuming:  # a resume stream is said once, by the archive check
            continue
        if f.name in refusals:
            result.refused.append((f.name, refusals[f.name]))
        else:
            result.orphans.append(_orphan(dataset, f))
    result.restorable = _oldest_first(list(reached.values()), result.order)
    followed = result.order.older_than_any({r.guid for r in result.restorable})
    result.newest = [r for r in result.restorable if r.guid not in followed]
    return result


def _with_mates(mine: list[ArchivedFile], files: list[ArchivedFile]) -> list[ArchivedFile]:
    """mine, and the files that carry a dataset one of mine carries: a package needs every
    dataset it carries in place, which files that do not carry this one may bring (a child
    created since an `-R -I` package's base, whose parent came in an earlier package)."""
    mates = {d for f in mine for d in f.datasets}
    return [f for f in files if mates.intersection(f.datasets)]


def _orphan(dataset: str, f: ArchivedFile) -> tuple[str, int, str]:
    """What f lacks for dataset: its own first substream's base, or where that is a full or a
    clone inside a package, the base the package starts from."""
    own = f.steps_of(dataset)[0]
    first = own if own.from_guid and not own.clone else f.steps[0]
    return f.name, first.from_guid, first.dataset


def order_of(dataset: str, files: list[ArchivedFile]) -> Order:
    """The order every intact stream of the archive proves, receivable or not: an
    incremental says which snapshot came first even where it cannot be received."""
    steps = [s for f in files for s in f.steps_of(dataset)]
    edges = [(s.from_guid, s.to_guid) for s in steps if s.from_guid]
    return Order(edges, {s.to_guid: s.creation_time for s in steps})


def _oldest_first(found: list[Restorable], order: Order) -> list[Restorable]:
    """The streams' order (between snapshots it leaves unordered, creation time first)."""
    return sorted(found, key=lambda r: (order.sort_key(r.guid), r.creation_time, r.guid))


def _without_duplicates(
    files: list[ArchivedFile],
) -> tuple[list[ArchivedFile], list[tuple[ArchivedFile, str]]]:
    """Files holding exactly the same substreams, flags included, as an earlier one (by name)
    are duplicates: they add nothing to any route."""
    seen: dict[tuple[tuple[object, ...], ...], str] = {}
    unique, duplicates = [], []
    for f in sorted(files, key=lambda f: f.name):
        key = tuple(s.key for s in f.steps)
        if key in seen:
            duplicates.append((f, seen[key]))
        else:
            seen[key] = f.name
            unique.append(f)
    return unique, duplicates


# -- the search -------------------------------------------------------------------------------

_State = tuple[frozenset[tuple[str, Tip]], str]  # (tip of every dataset received, top)


def receive(state: _State | None, f: ArchivedFile) -> _State | str:
    """The state after receiving f, or why a restore at state cannot receive it."""
    tips, top = state if state is not None else (frozenset(), f.top)
    if f.top != top and not f.top.startswith(top + "/"):
        return f"its top dataset {f.top} has no place under {top}, where the restore began"
    now = dict(tips)
    here = {t.guid: d for d, t in tips}  # snapshots on the target: guid -> their dataset
    for i, step in enumerate(f.steps):
        tip = now.get(step.dataset)
        if step.clone and tip is None:
            origin = now.get(here.get(step.from_guid, "")) if _brought(f, i) else None
            parent = now.get(step.dataset.rpartition("/")[0])
            why = rules.refuses_clone(origin, parent, step)
            tip = origin
        else:
            why = rules.refuses_start(step) if tip is None else rules.refuses_after(tip, step)
        if why is not None:
            return f"{step.dataset}@{step.snapshot}: {why}"
        now[step.dataset] = rules.after(tip, step, step.to_guid)
        here[step.to_guid] = step.dataset
    return frozenset(now.items()), top


def _brought(f: ArchivedFile, i: int) -> bool:
    """The origin of f's clone substream i is a snapshot an earlier substream of the same
    file starts from or ends at (a `-R` package sends a clone's origin first).  A clone
    stream on its own is not planned: `zfs receive` would look for its origin by GUID
    anywhere in the pool."""
    origin = f.steps[i].from_guid
    return any(origin in (s.from_guid, s.to_guid) for s in f.steps[:i] if not s.clone)


def _search(
    dataset: str, files: list[ArchivedFile]
) -> tuple[dict[int, Restorable], set[str], dict[str, str]]:
    """Dijkstra from "nothing received" over the files of dataset and their mates, weighted by
    size.
    Returns the cheapest route to every snapshot, the files some route receives, and for the
    others that were tried where their first substream's base was in place, why not."""
    best: dict[int, Restorable] = {}
    used: set[str] = set()
    refusals: dict[str, str] = {}
    done: set[_State] = set()
    following = _Candidates(files)
    queue: list[tuple[int, int, _State | None, Route | None]] = [(0, 0, None, None)]
    counter = 0  # tie-breaker: heapq must never compare states
    while queue:
        cost, _, state, route = heapq.heappop(queue)
        if state is not None:
            if state in done:
                continue
            _count(done, state, dataset)
        for f in following(state):
            after = receive(state, f)
            if isinstance(after, str):
                refusals.setdefault(f.name, after)
                continue
            used.add(f.name)
            files_needed, tip = Route(route, f.name), dict(after[0]).get(dataset)
            for step in f.steps_of(dataset):
                old = best.get(step.to_guid)
                if old is None or cost + f.size < old.bytes:
                    best[step.to_guid] = Restorable(
                        dataset, step.snapshot, step.to_guid, step.creation_time,
                        files_needed, cost + f.size, tip,
                    )  # fmt: skip
            counter += 1
            heapq.heappush(queue, (cost + f.size, counter, after, files_needed))
    return best, used, refusals


class _Candidates:
    """The files whose first substream finds its base in place at a state (the others
    cannot be received there: a full or a clone needs its dataset absent, an incremental its
    base as the tip)."""

    def __init__(self, files: list[ArchivedFile]) -> None:
        self._by_base: dict[tuple[str, int], list[ArchivedFile]] = defaultdict(list)
        for f in files:
            first = f.steps[0]
            self._by_base[(first.dataset, first.from_guid)].append(f)
        # a full, or a clone (refused on its own: rules.CLONE_WITHOUT_ORIGIN, said as such)
        self._new = [f for f in files if f.steps[0].from_guid == 0 or f.steps[0].clone]

    def __call__(self, state: _State | None) -> list[ArchivedFile]:
        tips = dict(state[0]) if state is not None else {}
        found = [f for f in self._new if f.steps[0].dataset not in tips]
        for dataset, tip in sorted(tips.items(), key=lambda t: t[0]):
            found += self._by_base.get((dataset, tip.guid), [])
        return found


def _count(seen: set[_State], state: _State, dataset: str) -> None:
    if len(seen) >= MAX_STATES:
        raise TooManyRoutes(
            f"{dataset}: the archive's files can be received in more than {MAX_STATES:,} "
            "ways: not planned, nothing judged restorable"
        )
    seen.add(state)


# -- chains (for prune) -------------------------------------------------------------------------


@dataclass(frozen=True)
class Chain:
    """A file that starts a dataset (a full) and every file a restore can receive after it."""

    dataset: str
    full: str
    files: tuple[str, ...]
    bytes: int
    start: int = 0  # the GUID of the newest snapshot of dataset the first file brings


def chains(dataset: str, files: list[ArchivedFile]) -> list[Chain]:
    """One chain per file that can start a restore of dataset."""
    unique, _ = _without_duplicates(files)
    mine = [f for f in unique if f.steps_of(dataset)]
    by_name = {f.name: f for f in mine}
    found = []
    for first in sorted(mine, key=lambda f: f.name):
        state = receive(None, first)
        if isinstance(state, str):
            continue
        members = _reachable(dataset, state, mine) | {first.name}
        names = tuple(sorted(members))
        start = first.steps_of(dataset)[-1].to_guid  # a -R full brings several at once
        found.append(Chain(dataset, first.name, names, sum(by_name[n].size for n in names), start))
    return found


def _reachable(dataset: str, start: _State, files: list[ArchivedFile]) -> set[str]:
    """Every file some sequence of receives from start takes."""
    following = _Candidates(files)
    seen: set[_State] = {start}
    todo, used = [start], set()
    while todo:
        state = todo.pop()
        for f in following(state):
            after = receive(state, f)
            if isinstance(after, str):
                continue
            used.add(f.name)
            if after not in seen:
                _count(seen, after, dataset)
                todo.append(after)
    return used


# -- one chain under several names (renames) ----------------------------------------------------


def lineages(files: list[ArchivedFile]) -> dict[str, str]:
    """Each dataset name of files -> the name its chain goes by.  `zfs receive` never reads an
    incremental's dataset name, only its fromguid (dmu_recv_begin_check): a dataset renamed
    (`zfs rename`, a pool imported under another name) continues its chain under the new name,
    with the same snapshot GUIDs.  So names whose streams share a snapshot GUID (one ends where
    another starts or ends; a clone's origin does not count) are one chain, named by the name
    of its newest snapshot (by the streams' order; ties by name).  A package must keep its
    layout under the chains' names (each dataset at the same path below its top, which is
    where a restore receives it): names that would break it are left apart."""
    groups = _sharing_guids(files)
    apart: set[str] = set()
    while True:
        names = _named(files, groups, apart)
        broken = _broken_layouts(files, names)
        if not broken:
            return names
        apart |= broken


def as_lineages(files: list[ArchivedFile], names: dict[str, str]) -> list[ArchivedFile]:
    """files with each substream's dataset under the name its chain goes by (lineages())."""
    return [_renamed(f, names) for f in files]


def _renamed(f: ArchivedFile, names: dict[str, str]) -> ArchivedFile:
    if all(names.get(s.dataset, s.dataset) == s.dataset for s in f.steps):
        return f
    steps = tuple(replace(s, dataset=names.get(s.dataset, s.dataset)) for s in f.steps)
    return ArchivedFile(f.name, f.size, steps)


def _sharing_guids(files: list[ArchivedFile]) -> list[set[str]]:
    """The names connected by shared snapshot GUIDs (union-find over names)."""
    parent: dict[str, str] = {}

    def root(n: str) -> str:
        parent.setdefault(n, n)
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    first: dict[int, str] = {}  # a snapshot GUID -> the first name seen with it
    for s in (s for f in files for s in f.steps):
        root(s.dataset)
        own = [s.to_guid] + ([s.from_guid] if s.from_guid and not s.clone else [])
        for g in own:
            parent[root(s.dataset)] = root(first.setdefault(g, s.dataset))
    groups: dict[str, set[str]] = defaultdict(set)
    for n in list(parent):
        groups[root(n)].add(n)
    return [g for g in groups.values() if len(g) > 1]


def _named(files: list[ArchivedFile], groups: list[set[str]], apart: set[str]) -> dict[str, str]:
    names: dict[str, str] = {}
    for group in groups:
        together = group - apart
        if len(together) < 2:
            continue
        steps = [s for f in files for s in f.steps if s.dataset in together]
        order = Order(
            [(s.from_guid, s.to_guid) for s in steps if s.from_guid and not s.clone],
            {s.to_guid: s.creation_time for s in steps},
        )
        newest = max(steps, key=lambda s: (order.sort_key(s.to_guid), s.dataset))
        names.update({n: newest.dataset for n in together})
    return names


def _broken_layouts(files: list[ArchivedFile], names: dict[str, str]) -> set[str]:
    """The names of chains that would move a package's dataset from its place below the
    package's top."""
    broken: set[str] = set()
    for f in files:
        top = f.top
        for d in f.datasets:
            if names.get(d, d) != names.get(top, top) + d[len(top) :]:
                broken |= {n for n in (d, top) if n in names}
    return broken
