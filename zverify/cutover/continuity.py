"""Cold continuity across a migration: every cold archive of SRC's tree must still be able to
take its next incremental from DST.  That incremental starts from the archive's newest
snapshot (by GUID), so DST must hold a snapshot or a bookmark with that GUID.  `zfs send -R`
never carries bookmarks (openzfs/zfs#16756, #13720): a base that SRC kept only as a bookmark
is lost by the move, and nothing else says so before `zpool destroy`."""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from zverify.cold.proof.check import ArchiveReport, check_archive
from zverify.cold.store import Store
from zverify.cutover.checks import mapped, relative
from zverify.cutover.findings import Finding, Severity, listed
from zverify.sendstream.chain import Restorable
from zverify.zfs.inventory import Snap

KIND = "cold-base-missing"


@dataclass(frozen=True)
class Archive:
    """One archive as given on the command line (its places, for messages) and its report."""

    label: str
    report: ArchiveReport


def read_archives(stores: Sequence[tuple[str, Store]]) -> list[Archive]:
    """Every byte of each archive read (`cold check`): a base read from a damaged or partial
    archive is no base.  Raises ArchiveError (exit 2) for a place that cannot be listed."""
    return [Archive(label, check_archive(store)) for label, store in stores]


def check_continuity(
    archives: Sequence[Archive],
    roots: tuple[str, str],
    src: Mapping[str, Sequence[Snap]],
    dst: Mapping[str, Sequence[Snap]],
) -> list[Finding]:
    """Findings for every archived dataset of SRC's tree whose next incremental has no base
    on DST.  src, dst: snapshots and bookmarks of every dataset of each tree, by name."""
    found: list[Finding] = []
    for archive in archives:
        found += _unread(archive)
        placed = {
            dataset: _relative_in_tree(dataset, plan.newest, roots, src)
            for dataset, plan in archive.report.plans.items()
        }
        if not any(rel is not None for rel in placed.values()):
            found.append(_outside(archive, sorted(placed), roots))
        for dataset, plan in sorted(archive.report.plans.items()):
            rel = placed[dataset]
            if rel is None or not plan.newest:
                continue
            src_name, dst_name = mapped(rel, roots[0]), mapped(rel, roots[1])
            on_dst = {s.guid for s in dst.get(dst_name, [])}
            if any(r.guid in on_dst for r in plan.newest):
                continue
            found.append(_missing(archive, dataset, src_name, dst_name, plan.newest, src))
    return found


def _outside(archive: Archive, datasets: list[str], roots: tuple[str, str]) -> Finding:
    """An archive given with --cold that holds nothing of the tree: checking nothing must
    not read as "its chain goes on"."""
    held = listed(datasets, 3) if datasets else "no restorable dataset"
    return Finding(
        "cold-unread",
        Severity.UNVERIFIED,
        archive.label,
        f"the cold archive holds no dataset of {roots[0]}'s or {roots[1]}'s tree ({held}), "
        "nor one whose newest snapshot is there: its continuity was not checked",
    )


def _unread(archive: Archive) -> list[Finding]:
    problems = [f"{p.file}: {p.message}" for p in archive.report.not_read]
    problems += [f"{f.name}: unreadable" for f in archive.report.files if not f.readable]
    if not problems:
        return _damaged(archive)
    return [
        Finding(
            "cold-unread",
            Severity.UNVERIFIED,
            archive.label,
            "the cold archive could not be read completely, so the base of its next "
            f"incremental is not known: {listed(problems, 3)}",
        )
    ]


def _damaged(archive: Archive) -> list[Finding]:
    """Damaged streams were read, and left out of the chains: the base comes from the intact
    ones (what `cold send` would extend), but the archive itself needs `cold check`."""
    problems = [f"{p.file}: {p.message}" for p in archive.report.all_problems]
    if not problems:
        return []
    message = (
        "the cold archive has problems (`zverify cold check` for all of them); its next "
        f"incremental's base is taken from the intact streams: {listed(problems, 3)}"
    )
    return [Finding("cold-damaged", Severity.WARNING, archive.label, message)]


def _relative_in_tree(
    dataset: str,
    newest: Sequence[Restorable],
    roots: tuple[str, str],
    src: Mapping[str, Sequence[Snap]],
) -> str | None:
    """Where the archived dataset lies in the migrated tree: by its name under SRC, or under
    DST (the archive was made before the pools were renamed: `data/home` is now
    `olddata/home` and `data/home` again), else the SRC dataset holding its newest GUID."""
    for root in roots:
        if dataset == root or dataset.startswith(root + "/"):
            return relative(dataset, root)
    guids = {r.guid for r in newest}
    for name, snaps in sorted(src.items()):
        if any(s.guid in guids for s in snaps):
            return relative(name, roots[0])
    return None


def _missing(
    archive: Archive,
    dataset: str,
    src_name: str,
    dst_name: str,
    newest: Sequence[Restorable],
    src: Mapping[str, Sequence[Snap]],
) -> Finding:
    base = newest[-1]
    on_src = [s for s in src.get(src_name, []) if s.guid in {r.guid for r in newest}]
    message = (
        f"cold archive {archive.label}: the next incremental of {dataset} starts from "
        f"@{base.snapshot} (guid {base.guid}), and {dst_name} has no snapshot or bookmark "
        "with that GUID"
    )
    if on_src and all(s.bookmark for s in on_src):
        message += (
            f"; {src_name} holds it only as the bookmark {on_src[0].full_name(src_name)}, "
            "which `zfs send -R` does not carry (openzfs/zfs#16756): before destroying "
            f"{src_name}, send the snapshot itself to {dst_name} and keep it there, or start "
            "a new chain (`zverify cold send --full`), or `zverify cold consolidate`"
        )
    elif on_src:
        message += (
            f"; {src_name} still has @{on_src[0].name}: send it to {dst_name} and keep it "
            "there before destroying the source, or start a new chain (`zverify cold send "
            "--full`)"
        )
    else:
        message += "; it is on neither side: only a new full (`zverify cold send --full`) goes on"
    details = {
        "archive": archive.label,
        "archived_dataset": dataset,
        "snapshot": base.snapshot,
        "guid": str(base.guid),
        "on_source": [s.full_name(src_name) for s in on_src],
    }
    return Finding(KIND, Severity.FAIL, src_name, message, details)
