"""Size accounting: what `du` prints for each tree, and why the totals differ.

SideTally adds up each tree exactly as GNU du does for one operand: every
entry's st_blocks*512 (or st_size with --apparent-size), each inode with
nlink > 1 counted once (directories are never deduplicated by du), plus the
naive per-path sums that ignore hardlinks.

Explanation splits DST - SRC into named components.  Each is computed from
the same per-entry numbers that make up the totals, so the components add
up exactly (the `unexplained` remainder is the check, and it is 0 unless
something here is wrong):

  du = naive - hardlink_savings, so
  du(DST) - du(SRC) = only-in-DST - only-in-SRC + sum over common paths of
                      (dst - src) - (savings(DST) - savings(SRC))
"""

from collections import Counter
from collections.abc import Hashable
from dataclasses import dataclass, field

from zverify.entry import Entry, Kind, known_size
from zverify.identity import Identity, inode_identity

# (entries by kind, du, du apparent, naive, naive apparent) of entries without hardlinks
SettledTally = tuple[tuple[int, ...], int, int, int, int]


@dataclass(frozen=True)
class Settled:
    """Identical pairs settled outside the engine (zv_join.c): their sizes, nothing else."""

    src: SettledTally
    dst: SettledTally
    components: dict[str, tuple[int, int]]  # du explanation: (apparent, allocated) deltas
    pairs: int

    @classmethod
    def add_up(cls, parts: list["Settled"]) -> "Settled":
        """The totals of several joins whose walks together cover each tree once (the key
        ranges of an MPI compare): what one join over the whole trees would have settled."""
        components: dict[str, tuple[int, int]] = {}
        for part in parts:
            for name, (apparent, allocated) in part.components.items():
                a, b = components.get(name, (0, 0))
                components[name] = (a + apparent, b + allocated)
        src = _add_tallies([p.src for p in parts])
        dst = _add_tallies([p.dst for p in parts])
        return cls(src, dst, components, sum(p.pairs for p in parts))


def _add_tallies(tallies: list[SettledTally]) -> SettledTally:
    kinds = [0] * (max(Kind) + 1)
    sums = [0, 0, 0, 0]
    for by_kind, *sizes in tallies:
        kinds = [a + b for a, b in zip(kinds, by_kind, strict=True)]
        sums = [a + b for a, b in zip(sums, sizes, strict=True)]
    return tuple(kinds), sums[0], sums[1], sums[2], sums[3]


class SideTally:
    def __init__(self, identity: Identity = inode_identity) -> None:
        self.du_bytes = 0
        self.du_apparent_bytes = 0
        self.naive_bytes = 0
        self.naive_apparent_bytes = 0
        self._by_kind = [0] * (max(Kind) + 1)
        self._identity = identity
        self._seen: set[Hashable] = set()

    @property
    def counts(self) -> dict[str, int]:
        """Entries by kind label, e.g. {"dir": 1, "file": 725}."""
        return {Kind(k).label: n for k, n in enumerate(self._by_kind) if n}

    def add(self, entry: Entry) -> None:
        # called for every entry of both trees: plain ints, no enum lookups
        self._by_kind[entry.kind] += 1
        size = entry.size if entry.size >= 0 else 0  # SIZE_NOT_RECORDED counts as 0
        self.naive_bytes += entry.alloc
        self.naive_apparent_bytes += size
        if entry.nlink > 1 and entry.kind != Kind.DIR:
            key = self._identity(entry)
            if key in self._seen:
                return
            self._seen.add(key)
        self.du_bytes += entry.alloc
        self.du_apparent_bytes += size

    def add_settled(self, settled: "SettledTally") -> None:
        """Add entries tallied elsewhere (the C join) exactly as add() would have."""
        by_kind, du, du_apparent, naive, naive_apparent = settled
        for kind, count in enumerate(by_kind):
            self._by_kind[kind] += count
        self.du_bytes += du
        self.du_apparent_bytes += du_apparent
        self.naive_bytes += naive
        self.naive_apparent_bytes += naive_apparent

    @property
    def hardlink_savings(self) -> tuple[int, int]:
        """(apparent, allocated) bytes du does not count twice."""
        return (
            self.naive_apparent_bytes - self.du_apparent_bytes,
            self.naive_bytes - self.du_bytes,
        )


# Components in the order they are shown, with their human labels.
COMPONENTS = {
    "hardlinks": "hardlinks broken or joined",
    "sparse": "sparse holes filled or punched",
    "allocation": "compression and block allocation",
    "directories": "directory sizes (filesystem-specific)",
    "content": "content that differs (or could not be read)",
    "missing": "entries only in SRC",
    "extra": "entries only in DST",
    "unexplained": "unexplained",
}


@dataclass
class Explanation:
    """(apparent, allocated) byte deltas per component, DST - SRC."""

    apparent: Counter[str] = field(default_factory=Counter)
    allocated: Counter[str] = field(default_factory=Counter)

    def add(self, component: str, apparent: int, allocated: int) -> None:
        self.apparent[component] += apparent
        self.allocated[component] += allocated

    def add_only(self, component: str, entry: Entry, sign: int) -> None:
        self.add(component, sign * known_size(entry), sign * entry.alloc)

    def add_pair(self, src: Entry, dst: Entry, same_payload: bool) -> None:
        """A path in both trees; same_payload: same type and same bytes/target."""
        d_apparent, d_alloc = known_size(dst) - known_size(src), dst.alloc - src.alloc
        if not same_payload:
            self.add("content", d_apparent, d_alloc)
        elif src.kind == Kind.DIR:
            self.add("directories", d_apparent, d_alloc)
        else:
            sparse = _sparse_share(src, dst, d_alloc)
            self.add("sparse", 0, sparse)
            self.add("allocation", d_apparent, d_alloc - sparse)

    def finish(self, src: SideTally, dst: SideTally) -> None:
        """Add the hardlink component and the unexplained remainder."""
        (s_app, s_alloc), (d_app, d_alloc) = src.hardlink_savings, dst.hardlink_savings
        self.add("hardlinks", s_app - d_app, s_alloc - d_alloc)
        want_app = dst.du_apparent_bytes - src.du_apparent_bytes
        want_alloc = dst.du_bytes - src.du_bytes
        self.add(
            "unexplained",
            want_app - sum(self.apparent.values()),
            want_alloc - sum(self.allocated.values()),
        )

    def rows(self) -> list[dict[str, str | int]]:
        return [
            {
                "component": name,
                "label": label,
                "apparent_bytes": self.apparent[name],
                "allocated_bytes": self.allocated[name],
            }
            for name, label in COMPONENTS.items()
        ]


def _sparse_share(src: Entry, dst: Entry, d_alloc: int) -> int:
    """The part of a file's allocation change explained by data extents
    (holes filled or punched), never more than the change itself."""
    if src.kind != Kind.FILE or min(src.size, dst.size) < 0:  # a size not recorded
        return 0
    d_data = dst.data_bytes - src.data_bytes
    if d_data == 0 or (d_data > 0) != (d_alloc > 0) or d_alloc == 0:
        return 0
    return d_data if abs(d_data) < abs(d_alloc) else d_alloc
