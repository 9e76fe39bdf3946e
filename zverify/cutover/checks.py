"""The cutover checks that are not about snapshots or properties: which datasets pair up,
what was written since the latest common snapshot, interrupted receives, encryption and
holds.  Pure: every input was read by gather.py."""

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from zverify.cutover.findings import Finding, Severity, listed
from zverify.cutover.snapshots import Common
from zverify.zfs.inventory import Dataset, Snap

SHOWN = 10  # changed paths listed in one finding
SHOWN_DESCENDANTS = 5  # dataset names listed in one finding


@dataclass(frozen=True)
class Pair:
    """A source dataset and its replica, both by full name; rel is the path below the tops
    ('' for the tops themselves)."""

    rel: str
    src: Dataset
    dst: Dataset | None


def relative(name: str, root: str) -> str:
    return "" if name == root else name[len(root) + 1 :]


def mapped(rel: str, root: str) -> str:
    return f"{root}/{rel}" if rel else root


def pair_datasets(
    src: Sequence[Dataset], dst: Sequence[Dataset], roots: tuple[str, str], strict: bool
) -> tuple[list[Pair], list[Finding]]:
    """Every source dataset with its replica (by path below the tops), and the findings about
    datasets missing on one side or of another type."""
    dst_by_rel = {relative(d.name, roots[1]): d for d in dst}
    pairs = [Pair(rel, s, dst_by_rel.get(rel)) for s in src for rel in [relative(s.name, roots[0])]]
    found = [_missing(p, roots[1]) for p in pairs if p.dst is None]
    found += [_type_mismatch(p) for p in pairs if p.dst is not None and p.dst.type != p.src.type]
    src_rels = {p.rel for p in pairs}
    severity = Severity.FAIL if strict else Severity.WARNING
    found += [
        Finding(
            "extra-dataset",
            severity,
            d.name,
            f"{d.name} ({d.type}) has no counterpart on the source {mapped(rel, roots[0])}",
        )
        for rel, d in dst_by_rel.items()
        if rel not in src_rels
    ]
    return pairs, found


def unchecked_descendants(src: str, names: Sequence[str], alone: bool) -> list[Finding]:
    """Without -r only SRC is checked, but the question asked before `zpool destroy` or
    `zfs destroy -r SRC` is about everything under it: descendants left out make it NOT
    READY, unless --no-recursive said that SRC alone is meant (then a note)."""
    if not names:
        return []
    shown = listed(list(names), SHOWN_DESCENDANTS, ", ")
    details = {"descendants": list(names[:SHOWN_DESCENDANTS]), "descendants_total": len(names)}
    if alone:
        message = f"{len(names)} descendant dataset(s) not checked (--no-recursive): {shown}"
        return [Finding("descendants-not-checked", Severity.NOTE, src, message, details)]
    message = (
        f"{len(names)} descendant dataset(s) not checked: {shown}; -r checks them, "
        f"--no-recursive checks {src} alone"
    )
    return [Finding("descendants-not-checked", Severity.FAIL, src, message, details)]


def _missing(p: Pair, dst_root: str) -> Finding:
    return Finding(
        "missing-dataset",
        Severity.FAIL,
        p.src.name,
        f"no replica: {mapped(p.rel, dst_root)} does not exist",
    )


def _type_mismatch(p: Pair) -> Finding:
    assert p.dst is not None
    return Finding(
        "type-mismatch",
        Severity.FAIL,
        p.src.name,
        f"{p.src.name} is a {p.src.type}, its replica {p.dst.name} a {p.dst.type}",
    )


def incomplete_receive(dst: Dataset, dataset: str) -> list[Finding]:
    """A receive -s that was interrupted leaves a resume token (on the dataset, or read from
    its hidden %recv child): the replica holds less than the stream that was sent."""
    token = dst.value("receive_resume_token")
    if token in ("-", ""):
        return []
    return [
        Finding(
            "incomplete-receive",
            Severity.FAIL,
            dataset,
            f"{dst.name} has an interrupted receive (receive_resume_token set): resume "
            "it, or abort it with `zfs receive -A`",
            {"token": token},
        )
    ]


# At most this many bytes of written@ can be OpenZFS's own bookkeeping rather than data,
# when nothing a user sees changed.  A pool import claims each dataset's intent log
# (zil_claim() in module/zfs/zil.c dirties every dataset whose ZIL header points to a log
# block, as any fsync, `sync` or zvol flush leaves it), and mounting or opening the volume
# replays and destroys it (zil_replay/zil_destroy): the objset block is rewritten, 1,024
# bytes (two ditto copies of one sector) at ashift 9, 8 KiB at ashift 12.  64 KiB leaves
# room for a few metadata blocks at ashift 12 and still bounds what is shrugged off.
METADATA_ONLY_MAX = 64 * 1024


@dataclass(frozen=True)
class Written:
    """What was written on one side since the latest common snapshot, what `zfs diff`
    says changed (None: not asked; a str: why it could not tell), and for a volume whether
    its bytes equal a device that holds the common snapshot (None: not compared; a str: why
    they could not be)."""

    bytes: int
    changes: list[str] | str | None = None
    same_bytes: bool | str | None = None

    @property
    def metadata_only(self) -> bool:
        """Written, but nothing a user wrote: small, and `zfs diff` lists no path (a
        filesystem) or the bytes are those of the common snapshot (a volume)."""
        unseen = self.changes == [] or self.same_bytes is True
        return 0 < self.bytes <= METADATA_ONLY_MAX and unseen


def source_written(dataset: str, common: Common, w: Written) -> list[Finding]:
    if w.bytes == 0:
        return []
    if w.metadata_only:
        return [_metadata_only("source-written", dataset, "source", common.src.name, w)]
    message = (
        f"{w.bytes:,} bytes written on the source since @{common.src.name}: the replica "
        "lacks them (stop the writers, snapshot, replicate again)"
    )
    if w.changes == []:
        message += "; `zfs diff` lists no changed path: metadata only, e.g. atime of reads"
    elif isinstance(w.same_bytes, str):
        message += f"; its bytes could not be compared: {w.same_bytes}"
    return [Finding("source-written", Severity.FAIL, dataset, message, _changes(w))]


def _metadata_only(kind: str, dataset: str, side: str, snapshot: str, w: Written) -> Finding:
    proof = "zfs diff empty" if w.changes == [] else "the volume's bytes equal @" + snapshot
    message = (
        f"metadata only (written@ {w.bytes:,} bytes on the {side} since @{snapshot}, "
        f"{proof}): OpenZFS's own bookkeeping, e.g. the intent-log claim of a pool import, "
        "not data"
    )
    return Finding(kind, Severity.WARNING, dataset, message, _changes(w))


def destination_written(
    dataset: str,
    common: Common,
    w: Written,
    mountpoints: frozenset[str] = frozenset(),
    newest: str | None = None,
) -> list[Finding]:
    """A replica written since the common snapshot is not that snapshot any more.  It is
    harmless when `zfs diff` lists no path (atime, a mount) or only mountpoints (its own root
    directory, and the directories its child datasets were mounted on): nothing a user
    wrote.  mountpoints: those directories, as `zfs diff` prints paths.  newest: the
    replica's newest snapshot when it is newer than the common one (a `diverged` finding):
    w was then measured from it, since what the replica received into it nobody wrote."""
    if w.bytes == 0:
        return []
    if w.same_bytes is True and w.metadata_only:
        return [_metadata_only("destination-modified", dataset, "replica", common.dst.name, w)]
    since = f"{w.bytes:,} bytes written on the replica since @{common.dst.name}"
    if newest is not None:
        since = (
            f"{w.bytes:,} bytes written on the replica since its newest snapshot @{newest} "
            f"(newer than the latest common @{common.dst.name})"
        )
    if isinstance(w.changes, list) and _only_mountpoints(w.changes, mountpoints):
        what = "mount points only" if w.changes else "no changed path"
        message = f"{since}, but `zfs diff` lists {what}: a side effect of mounting, no data"
        return [Finding("destination-modified", Severity.WARNING, dataset, message, _changes(w))]
    if isinstance(w.changes, str):
        message = f"{since}; what changed is unknown (`zfs diff`: {w.changes})"
        if isinstance(w.same_bytes, str):
            message += f"; its bytes could not be compared: {w.same_bytes}"
    else:
        changed = [c.replace("\t", " ") for c in w.changes or []]
        message = f"{since}, changing files: {listed(changed, SHOWN)}"
    return [Finding("destination-modified", Severity.FAIL, dataset, message, _changes(w))]


# what a replica already in service does after the final sync: written by its users, and
# snapshotted by their schedule.  Neither loses anything of the source.
_LIVE = frozenset({"destination-modified", "diverged"})


def live_replica(findings: list[Finding]) -> list[Finding]:
    """--live: DST took over after the final sync (the renamed-pool flow), so that it is
    newer than the source is expected (a warning, said); the source having what DST lacks
    (source-written, behind, missing snapshots) still fails."""
    return [
        replace(f, severity=Severity.WARNING, message=f"{f.message} (--live: in service since)")
        if f.kind in _LIVE and f.severity == Severity.FAIL
        else f
        for f in findings
    ]


def _only_mountpoints(changes: list[str], mountpoints: frozenset[str]) -> bool:
    """True when every `zfs diff -H` line (TYPE<TAB>PATH[<TAB>NEW PATH]) is about one of
    mountpoints (compared without a trailing slash)."""
    wanted = {m.rstrip("/") for m in mountpoints}
    for line in changes:
        paths = line.split("\t")[1:]
        if not paths or any(_unescaped(p).rstrip("/") not in wanted for p in paths):
            return False
    return True


def _unescaped(path: str) -> str:
    """`zfs diff` writes bytes outside printable ASCII (and space) as \\NNNN octal."""
    return re.sub(r"\\([0-7]{4})", lambda m: chr(int(m.group(1), 8)), path)


def _changes(w: Written) -> dict[str, object]:
    details: dict[str, object] = {"bytes": w.bytes}
    if isinstance(w.changes, list):
        details["changes"] = w.changes[:SHOWN]
        details["changes_total"] = len(w.changes)
    elif isinstance(w.changes, str):
        details["changes_unknown"] = w.changes
    if w.same_bytes is not None:
        details["same_bytes"] = w.same_bytes is True
    return details


def encryption(pair: Pair, roots: tuple[str, str], key_problem: str | None) -> list[Finding]:
    """An encrypted replica must open (its key loaded, or loadable: key_problem says why not)
    and keep the source's encryption roots, mapped into the replica's tree."""
    src, dst = pair.src, pair.dst
    assert dst is not None
    if src.value("encryption") in ("off", "-"):
        return []
    found = []
    if dst.value("keystatus") != "available" and key_problem is not None:
        found.append(
            Finding(
                "encryption",
                Severity.FAIL,
                src.name,
                f"the key of {dst.name} is not loaded and cannot be proven to "
                f"open it: {key_problem}",
            )
        )
    want = _expected_root(src.value("encryptionroot"), roots)
    got = dst.value("encryptionroot")
    if want is not None and got != want:
        found.append(
            Finding(
                "encryption",
                Severity.FAIL,
                src.name,
                f"encryption root of {dst.name} is {got}, expected {want} (as "
                f"{src.value('encryptionroot')} on the source): a key per "
                "dataset now, or another key",
                {"src": src.value("encryptionroot"), "dst": got, "expected": want},
            )
        )
    elif want is None and got.startswith(roots[1] + "/"):
        found.append(
            Finding(
                "encryption",
                Severity.FAIL,
                src.name,
                f"encryption root of {dst.name} is {got}, but the source's lies "
                "outside the replicated tree",
            )
        )
    return found


def _expected_root(root: str, roots: tuple[str, str]) -> str | None:
    """The replica of the source's encryption root, or None when it lies outside the tree."""
    if root == roots[0] or root.startswith(roots[0] + "/"):
        return mapped(relative(root, roots[0]), roots[1])
    return None


def source_holds(
    dataset: str, snaps: Sequence[Snap], tags: Mapping[str, list[str]]
) -> list[Finding]:
    held = [s for s in snaps if s.userrefs > 0]
    if not held:
        return []
    shown = [f"@{s.name} ({', '.join(tags.get(s.name, [])) or s.userrefs})" for s in held]
    message = (
        f"{len(held)} source snapshot(s) held: {listed(shown, 5)}; `zfs destroy` of them "
        "fails until `zfs release`"
    )
    return [
        Finding(
            "source-hold",
            Severity.WARNING,
            dataset,
            message,
            {"holds": {s.name: tags.get(s.name, []) for s in held}},
        )
    ]
