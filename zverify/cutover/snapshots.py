"""Snapshots of one dataset and its replica, matched by GUID (names can be renamed, and the
same name can hold other data): the latest common one, what the replica lacks, and what
only the replica has.  Pure."""

from collections.abc import Sequence
from dataclasses import dataclass, field

from zverify.cutover.findings import Finding, Severity, listed
from zverify.zfs.inventory import Snap

SHOWN = 5  # snapshot names listed in one finding


@dataclass(frozen=True)
class Common:
    """One snapshot present on both sides (same GUID), under each side's name."""

    src: Snap
    dst: Snap


@dataclass
class SnapshotState:
    latest_common: Common | None
    behind: list[Snap]  # source snapshots newer than the latest common one
    findings: list[Finding] = field(default_factory=list)


def compare_snapshots(
    dataset: str, src: Sequence[Snap], dst: Sequence[Snap], require_all: bool
) -> SnapshotState:
    """src and dst oldest first (by createtxg)."""
    dst_by_guid = {s.guid: s for s in dst}
    common = [Common(s, dst_by_guid[s.guid]) for s in src if s.guid in dst_by_guid]
    latest = common[-1] if common else None
    behind = [s for s in src if latest is not None and s.createtxg > latest.src.createtxg]
    state = SnapshotState(latest, behind)
    found = state.findings
    found += _name_clashes(dataset, src, dst)
    if not src:
        found.append(
            _fail(
                "no-snapshot",
                dataset,
                "the source has no snapshot: nothing can prove what the replica holds",
            )
        )
        return state
    if latest is None:
        found.append(_no_common(dataset, dst))
        return state
    if behind:
        found.append(_behind(dataset, latest, behind))
    found += _destination_only(dataset, src, dst, latest)
    found += _missing_older(dataset, src, dst_by_guid, latest, require_all)
    return state


def _name_clashes(dataset: str, src: Sequence[Snap], dst: Sequence[Snap]) -> list[Finding]:
    dst_by_name = {s.name: s for s in dst}
    return [
        _fail(
            "guid-mismatch",
            dataset,
            f"@{s.name} has guid {s.guid} on the source but {d.guid} on the destination: "
            "the same name holds other data",
            snapshot=s.name,
            src_guid=str(s.guid),
            dst_guid=str(d.guid),
        )
        for s in src
        if (d := dst_by_name.get(s.name)) is not None and d.guid != s.guid
    ]


def _no_common(dataset: str, dst: Sequence[Snap]) -> Finding:
    if not dst:
        why = "the destination has no snapshot at all (an empty or placeholder dataset?)"
    else:
        why = f"none of the destination's {len(dst)} snapshot(s) has a source snapshot's guid"
    return _fail("no-common-snapshot", dataset, f"no common snapshot: {why}")


def _behind(dataset: str, latest: Common, behind: list[Snap]) -> Finding:
    names = [s.name for s in behind]
    return _fail(
        "behind",
        dataset,
        f"{len(behind)} source snapshot(s) newer than the latest common @{latest.src.name} "
        f"are not on the replica: {_listed(names)}",
        snapshots=names,
    )


def _destination_only(
    dataset: str, src: Sequence[Snap], dst: Sequence[Snap], latest: Common
) -> list[Finding]:
    src_guids = {s.guid for s in src}
    only = [d for d in dst if d.guid not in src_guids]
    newer = [d.name for d in only if d.createtxg > latest.dst.createtxg]
    older = [d.name for d in only if d.createtxg <= latest.dst.createtxg]
    found = []
    if newer:
        found.append(
            _fail(
                "diverged",
                dataset,
                f"the destination has {len(newer)} snapshot(s) newer than the latest common "
                f"@{latest.src.name} that the source lacks: {_listed(newer)}",
                snapshots=newer,
            )
        )
    if older:
        found.append(
            Finding(
                "destination-only",
                Severity.WARNING,
                dataset,
                f"{len(older)} older snapshot(s) only on the destination: {_listed(older)}",
                {"snapshots": older},
            )
        )
    return found


def _missing_older(
    dataset: str,
    src: Sequence[Snap],
    dst_by_guid: dict[int, Snap],
    latest: Common,
    require_all: bool,
) -> list[Finding]:
    missing = [
        s.name for s in src if s.guid not in dst_by_guid and s.createtxg < latest.src.createtxg
    ]
    if not missing:
        return []
    severity = Severity.FAIL if require_all else Severity.WARNING
    message = (
        f"{len(missing)} source snapshot(s) older than the latest common @{latest.src.name} "
        f"are not on the replica: {_listed(missing)}"
    )
    return [Finding("missing-snapshot", severity, dataset, message, {"snapshots": missing})]


def _listed(names: list[str]) -> str:
    return listed([f"@{n}" for n in names], SHOWN, ", ")


def _fail(kind: str, dataset: str, message: str, **details: object) -> Finding:
    return Finding(kind, Severity.FAIL, dataset, message, details)
