"""Chains of stream files, planned from GUIDs alone: which snapshots an archive can restore.

Pure: no I/O.  Each archived file is described by the substreams it holds (dataset, from
GUID, to GUID, to name).  Per dataset, a file can be received once the snapshot its first
substream starts from is there (GUID 0: nothing needed, a full); receiving it brings every
snapshot its substreams end at.  restorable() searches from "nothing" over the files,
cheapest first (fewest bytes), so each restorable snapshot comes with the shortest list of
files that rebuilds it.  Names are never trusted: two files connect only by GUID.
"""

import heapq
from collections import defaultdict
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Step:
    """One substream of a file: from_guid -> to_guid (from_guid 0 for a full)."""

    dataset: str
    from_guid: int
    to_guid: int
    snapshot: str  # the part after '@'
    creation_time: int = 0


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


@dataclass(frozen=True)
class Restorable:
    """A snapshot the archive can rebuild, and the files to receive, in order."""

    dataset: str
    snapshot: str
    guid: int
    creation_time: int
    files: tuple[str, ...]
    bytes: int
    depth: int = 0  # snapshots received on the way: orders snapshots made in one second

    @property
    def order(self) -> tuple[int, int]:
        """Sort key, oldest first: creation time, then position in the chain."""
        return (self.creation_time, self.depth)


@dataclass
class DatasetPlan:
    dataset: str
    restorable: list[Restorable] = field(default_factory=list)
    orphans: list[tuple[str, int]] = field(default_factory=list)  # (file, missing base GUID)
    duplicates: list[tuple[str, str]] = field(default_factory=list)  # (file, same as file)


def plan(files: list[ArchivedFile]) -> dict[str, DatasetPlan]:
    """Per dataset: restorable snapshots (oldest first), orphans and duplicates."""
    datasets = sorted({d for f in files for d in f.datasets})
    return {d: _plan_dataset(d, files) for d in datasets}


def _plan_dataset(dataset: str, files: list[ArchivedFile]) -> DatasetPlan:
    result = DatasetPlan(dataset)
    unique = _without_duplicates(dataset, files, result)
    reached = _cheapest_paths(dataset, unique)
    for f in unique:
        start = f.steps_of(dataset)[0].from_guid
        if start not in reached:
            result.orphans.append((f.name, start))
    result.restorable = sorted(
        (r for guid, r in reached.items() if guid != 0), key=lambda r: r.order
    )
    return result


def _without_duplicates(
    dataset: str, files: list[ArchivedFile], result: DatasetPlan
) -> list[ArchivedFile]:
    """Files holding exactly the same steps as an earlier one (by name) are duplicates."""
    seen: dict[tuple[tuple[int, int], ...], str] = {}
    unique = []
    for f in sorted(files, key=lambda f: f.name):
        steps = f.steps_of(dataset)
        if not steps:
            continue
        key = tuple((s.from_guid, s.to_guid) for s in steps)
        if key in seen:
            result.duplicates.append((f.name, seen[key]))
            continue
        seen[key] = f.name
        unique.append(f)
    return unique


def _cheapest_paths(dataset: str, files: list[ArchivedFile]) -> dict[int, Restorable]:
    """Dijkstra from GUID 0 ("nothing received") over files weighted by their size."""
    by_start: dict[int, list[ArchivedFile]] = defaultdict(list)
    for f in files:
        by_start[f.steps_of(dataset)[0].from_guid].append(f)
    start = Restorable(dataset, "", 0, 0, (), 0)
    best: dict[int, Restorable] = {}
    queue: list[tuple[int, int, int, Restorable]] = [(0, 0, 0, start)]
    counter = 0  # tie-breaker: heapq must never compare Restorable objects
    while queue:
        cost, _, guid, here = heapq.heappop(queue)
        if guid in best:
            continue
        best[guid] = here
        for f in by_start.get(guid, []):
            files_needed = (*here.files, f.name)
            for k, step in enumerate(f.steps_of(dataset), 1):
                counter += 1
                there = Restorable(
                    dataset, step.snapshot, step.to_guid, step.creation_time,
                    files_needed, cost + f.size, here.depth + k,
                )  # fmt: skip
                heapq.heappush(queue, (cost + f.size, counter, step.to_guid, there))
    return best


@dataclass(frozen=True)
class Chain:
    """A full and every file that can be received after it, and the bytes they take."""

    dataset: str
    full: str
    files: tuple[str, ...]
    bytes: int


def chains(dataset: str, files: list[ArchivedFile]) -> list[Chain]:
    """One chain per full file of dataset: the files reachable from it by GUID."""
    mine = [f for f in files if f.steps_of(dataset)]
    by_start: dict[int, list[ArchivedFile]] = defaultdict(list)
    for f in mine:
        by_start[f.steps_of(dataset)[0].from_guid].append(f)
    found = []
    for full in sorted(by_start.get(0, []), key=lambda f: f.name):
        members = _reachable(dataset, full, by_start)
        size = sum(f.size for f in members)
        names = tuple(sorted(f.name for f in members))
        found.append(Chain(dataset, full.name, names, size))
    return found


def _reachable(
    dataset: str, first: ArchivedFile, by_start: dict[int, list[ArchivedFile]]
) -> list[ArchivedFile]:
    seen = {first.name: first}
    todo = [first]
    while todo:
        f = todo.pop()
        for step in f.steps_of(dataset):
            for nxt in by_start.get(step.to_guid, []):
                if nxt.name not in seen:
                    seen[nxt.name] = nxt
                    todo.append(nxt)
    return list(seen.values())
