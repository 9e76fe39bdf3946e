"""compare_trees(): `zverify compare` on two trees, either of which may be a manifest.

Checks the roots (never the same directory), opens both sides (a manifest fixes the digest
algorithm and may not record everything the policy asks for: both are settled before any
walk starts), walks the live ones concurrently (each walk has its own C threads), feeds the
two canonical streams to the pure engine, and adds what only the sides can tell: which
filesystems hold them, and what could not be seen.
"""

import os
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from zverify.compare.engine import (
    DifferenceSink,
    EngineResult,
    compare_entries,
    compare_pair_batches,
)
from zverify.compare.joined import JoinedWalks
from zverify.compare.march import Pair
from zverify.compare.policy import PROFILES, ComparePolicy, DiffKind
from zverify.compare.result import CompareResult
from zverify.compare.sides import SIDES, Side, is_manifest_path
from zverify.entry import Entry, Kind
from zverify.errors import SameTreeError, UsageError
from zverify.filters import Filter
from zverify.hashing import Algorithm
from zverify.progress import CompareHook
from zverify.trees.open import live_side, manifest_side, remote_side
from zverify.trees.options import CompareOptions
from zverify.walk import TreeWalk, WalkOptions, default_threads

if TYPE_CHECKING:
    from zverify.mpi.session import Session

PROGRESS_EVERY = 512  # entries of one side between progress updates


def compare_trees(
    src: str,
    dst: str,
    options: CompareOptions | None = None,
    *,
    progress: CompareHook | None = None,
    sink: DifferenceSink | None = None,
    ranks: "Session | None" = None,
) -> CompareResult:
    """Compare two trees or manifests; raises RootError/SameTreeError/UsageError/ManifestError
    (exit 2) before anything is walked, ManifestError if a manifest proves damaged later.

    sink receives each difference as it is found (engine.py); without one the result
    collects them.  options.c_join=False pairs two live trees in Python too (the reference
    the tests hold the C join to); the result is the same either way.  ranks: an MPI job
    of more than one rank (zverify.mpi) whose other ranks walk both trees, which must then
    be live trees; the result is again the same."""
    options = options or CompareOptions()
    policy, algorithm = options.policy, options.algorithm
    paths = dict(zip(SIDES, (src, dst), strict=True))
    if src == "-" and dst == "-":
        raise UsageError("only one side can be read from standard input")
    manifests = [name for name, path in paths.items() if is_manifest_path(path)]
    if ranks is not None and manifests:
        raise UsageError(
            f"--mpi walks two live trees; {manifests[0]} {paths[manifests[0]]!r} is a "
            "manifest (compare it without --mpi)"
        )
    notes = _manifest_inside(paths, manifests) if manifests else _check_roots(src, dst)
    opened: dict[str, Side] = {}
    try:
        for name in manifests:
            opened[name] = manifest_side(name, paths[name], policy.needs_xattrs, algorithm)
        chosen = _agreed_algorithm(algorithm, list(opened.values()))
        _check_recorded(policy, list(opened.values()))
        narrowed = _agreed_filter(options.filter, list(opened.values()))
        walking = _walk_options(options, chosen, narrowed, list(opened.values()))
        for side in opened.values():
            side.apply_filter(narrowed)
        for name in SIDES:
            if name not in opened:
                opened[name] = (live_side if ranks is None else remote_side)(
                    name, paths[name], walking
                )
        s, d = opened["SRC"], opened["DST"]
        if s.files_only or d.files_only:
            for side in (s, d):
                side.entries = _without_directories(side.entries)
        if ranks is None:
            found = _compare_sides(s, d, policy, progress, options.c_join, sink)
        else:
            # imported only for --mpi: the CLI tells that an MPI job was started by
            # zverify.mpi.session being loaded (cli._end_mpi_job)
            from zverify.mpi.coordinator import compare_distributed

            found = compare_distributed(ranks, s, d, walking, options.threads, policy, sink)
        excluded = {"src": s.excluded(), "dst": d.excluded()}
        unlisted = narrowed.unseen()  # both sides met every entry they hold by now
    finally:
        for side in opened.values():
            side.close()
    return CompareResult(
        **vars(found),
        src_root=src,
        dst_root=dst,
        policy=policy,
        algorithm=chosen,
        src_fs=s.fs,
        dst_fs=d.fs,
        unverifiable=_unique(s.unverifiable + d.unverifiable),
        notes=notes + s.notes + d.notes,
        filter=narrowed,
        excluded=excluded,
        unlisted=unlisted,
    )


def _walk_options(
    options: CompareOptions, chosen: Algorithm, narrowed: Filter, manifests: list[Side]
) -> WalkOptions:
    """How the live sides are walked: as asked, narrowed by what a manifest recorded."""
    return WalkOptions(
        algorithm=chosen,
        threads=options.threads or default_threads(),
        hash_content=options.policy.reads_content,
        xattrs=options.policy.needs_xattrs,
        one_file_system=options.one_file_system or any(m.one_file_system for m in manifests),
        filter=narrowed,
    )


def _compare_sides(
    s: Side,
    d: Side,
    policy: ComparePolicy,
    progress: CompareHook | None,
    c_join: bool,
    sink: DifferenceSink | None,
) -> EngineResult:
    """Two live trees are joined in C; anything else (a manifest side) is paired in Python."""
    walks = s.entries, d.entries
    if c_join and all(isinstance(w, TreeWalk) for w in walks):
        joined = JoinedWalks(*walks, sizes_only=not policy.reads_content)  # type: ignore[arg-type]
        batches = _batches_reporting(joined.batches(), s, d, progress)
        return compare_pair_batches(batches, joined.settled, policy, sink=sink)
    return compare_entries(_reporting(s, d, progress), d.entries, policy, sink=sink)


def _batches_reporting(
    batches: Iterator[list[Pair]], s: Side, d: Side, progress: CompareHook | None
) -> Iterator[list[Pair]]:
    """The joined batches, calling progress with both sides' counters before each."""
    for batch in batches:
        if progress is not None:
            progress(s.progress(), d.progress())
        yield batch


def _agreed_algorithm(asked: Algorithm | None, manifests: list[Side]) -> Algorithm:
    """The digest both sides use: a manifest's, which --hash may only repeat."""
    fixed = {side.algorithm for side in manifests if side.algorithm is not None}
    if len(fixed) > 1:
        a, b = manifests
        raise UsageError(
            f"SRC manifest holds {a.algorithm} digests and DST manifest {b.algorithm}: "
            "their contents cannot be compared (write both with the same --hash)"
        )
    if fixed:
        (recorded,) = fixed
        if asked is not None and asked is not recorded:
            raise UsageError(
                f"--hash {asked} asked, but the manifest holds {recorded} digests "
                "(leave --hash out to use the manifest's)"
            )
        return recorded
    return asked or Algorithm.XXH3_128


def _agreed_filter(asked: Filter, manifests: list[Side]) -> Filter:
    """The filter both sides get: the one asked for, or the one a manifest was written with
    (then the live side must leave out the same, or everything it left out is "extra")."""
    recorded = {(s.filter.rules, s.filter.listed): s for s in manifests if s.filter}
    if len(recorded) > 1:
        raise UsageError("SRC and DST manifests were written with different filters")
    if not recorded:
        return asked
    (side,) = recorded.values()
    assert side.filter is not None
    if asked.active and (asked.rules, asked.listed) != (side.filter.rules, side.filter.listed):
        shown = "; ".join(side.filter.patterns()) or "a --files-from list"
        raise UsageError(
            f"{side.name} manifest {side.label!r} was written with filters ({shown}): "
            "give the same filters, or none to use them"
        )
    return side.filter


def _check_recorded(policy: ComparePolicy, sides: list[Side]) -> None:
    """Refuse to compare a kind a side cannot tell: its absence would pass for identical."""
    for side in sides:
        if policy.quick and policy.checks(DiffKind.CONTENT) and not side.sizes:
            raise UsageError(
                f"{side.name} {side.label!r} records no file sizes, which --quick compares "
                "in place of content: leave out --quick to compare its digests"
            )
        lacking = {k: why for k, why in side.lacking.items() if policy.checks(k)}
        if not lacking:
            continue
        by_reason: dict[str, list[str]] = {}
        for kind, why in sorted(lacking.items()):
            by_reason.setdefault(why, []).append(kind.value)
        reasons = "; ".join(f"{','.join(kinds)}: {why}" for why, kinds in by_reason.items())
        kinds = ",".join(sorted(k.value for k in lacking))
        hint = f"add --ignore {kinds}"
        fits = [name for name, kinds in PROFILES.items() if not kinds & set(side.lacking)]
        if fits:  # PROFILES go from fewest to most kinds: suggest the most thorough
            hint = f"use --profile {fits[-1]} or {hint}"
        raise UsageError(
            f"{side.name} {side.label!r} cannot tell {kinds} ({reasons}); "
            f"{hint} to compare what it records"
        )


def _without_directories(entries: Iterable[Entry]) -> Iterator[Entry]:
    return (e for e in entries if e.kind != Kind.DIR)


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _reporting(side: Side, other: Side, progress: CompareHook | None) -> Iterable[Entry]:
    """side's entries, calling progress with both sides' counters now and then."""
    if progress is None:
        return side.entries
    return _with_progress(side, other, progress)


def _with_progress(side: Side, other: Side, progress: CompareHook) -> Iterator[Entry]:
    for n, entry in enumerate(side.entries):
        if n % PROGRESS_EVERY == 0:
            progress(side.progress(), other.progress())
        yield entry


def _check_roots(src: str, dst: str) -> list[str]:
    """Refuse one directory under two names; note when one tree holds the other."""
    try:
        s, d = os.stat(src), os.stat(dst)
    except OSError:
        return []  # the walk reports an unreadable root, with the side it concerns
    if (s.st_dev, s.st_ino) == (d.st_dev, d.st_ino):
        raise SameTreeError(src, dst)
    notes = []
    if _inside(dst, s):
        notes.append("DST lies inside SRC: its entries are also compared as part of SRC")
    if _inside(src, d):
        notes.append("SRC lies inside DST: its entries are also compared as part of DST")
    return notes


def _manifest_inside(paths: dict[str, str], manifests: list[str]) -> list[str]:
    """Note a manifest kept in the tree it describes (`sha256sum * > SUMS`): it cannot list
    itself, so it is a file of that tree like any other, and says how to leave it out."""
    notes = []
    for name in manifests:
        (other,) = (n for n in SIDES if n != name)
        if paths[name] == "-" or other in manifests:
            continue
        try:
            inside = _inside(paths[name], os.stat(paths[other]))
        except OSError:
            continue  # the walk reports an unreadable root
        below = os.path.relpath(os.path.realpath(paths[name]), os.path.realpath(paths[other]))
        if inside and not below.startswith(".."):
            notes.append(
                f"{name} manifest is {other}'s {below!r}: compared as any {other} file "
                f"(--exclude /{below} leaves it out)"
            )
    return notes


def _inside(path: str, outer: os.stat_result) -> bool:
    """True when a proper ancestor of path is the directory outer: compared by identity,
    not by name, so a symlink or a bind mount of outer counts too."""
    here = os.path.realpath(path)
    while True:
        parent = os.path.dirname(here)
        if parent == here:
            return False
        here = parent
        try:
            st = os.stat(here)
        except OSError:
            return False
        if (st.st_dev, st.st_ino) == (outer.st_dev, outer.st_ino):
            return True
