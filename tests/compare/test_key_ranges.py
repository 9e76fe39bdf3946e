"""Walks over key ranges (WalkOptions.key_range, native zv_traverse.c): the pieces an MPI
compare is made of, held to the single walk without any MPI.

Cut both trees at any points in canonical order, join each range in C, and feed the
engine the ranges' pairs in order with their totals added up: the engine must find exactly
what it finds over the whole trees, differences, du totals and explanation alike.  The
trees and damage are test_join's (names that sort around '/', hard links, folds, sparse
files), and cut points fall anywhere: inside folded subtrees, between a directory and its
children, on paths that exist on one side only.
"""

import itertools
import os
import subprocess
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.compare.test_join import all_paths, build, damaged_copy, damages, trees
from zverify.compare.engine import EngineResult, compare_pair_batches
from zverify.compare.joined import JoinedWalks
from zverify.compare.march import Pair
from zverify.compare.policy import ComparePolicy
from zverify.compare.sizes import Settled
from zverify.mpi.plan import plan
from zverify.pathnames import sort_key
from zverify.walk import TreeWalk, WalkOptions


def join(
    src: bytes, dst: bytes, key_range: tuple[bytes, bytes | None] | None
) -> tuple[list[list[Pair]], Settled]:
    options = WalkOptions(threads=2, key_range=key_range)
    walks = [TreeWalk(src, options, "SRC"), TreeWalk(dst, options, "DST")]
    joined = JoinedWalks(walks[0], walks[1])
    try:
        return [b for b in joined.batches() if b], joined.settled()
    finally:
        for walk in walks:
            walk.close()


def by_ranges(src: bytes, dst: bytes, cuts: list[bytes]) -> EngineResult:
    bounds = [b"", *cuts]
    batches: list[list[Pair]] = []
    totals = []
    for lo, hi in zip(bounds, [*cuts, None], strict=True):
        pairs, settled = join(src, dst, (lo, hi))
        batches += pairs
        totals.append(settled)
    return compare_pair_batches(iter(batches), lambda: Settled.add_up(totals), ComparePolicy())


def whole(src: bytes, dst: bytes) -> EngineResult:
    batches, settled = join(src, dst, None)
    return compare_pair_batches(iter(batches), lambda: settled, ComparePolicy())


def summary(result: EngineResult) -> tuple[object, ...]:
    sides = [
        (t.counts, t.du_bytes, t.du_apparent_bytes, t.naive_bytes, t.naive_apparent_bytes)
        for t in (result.src_sizes, result.dst_sizes)
    ]
    return result.counts, result.differences, sides, vars(result.explanation)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(tree=trees, dst_damage=damages, picks=st.lists(st.integers(0, 10_000), max_size=5))
def test_ranges_add_up_to_the_whole(
    tmp_path: Path, tree: dict[bytes, tuple], dst_damage: list[tuple[str, int]], picks: list[int]
) -> None:
    src, dst = damaged_copy(tmp_path, tree, True, [], dst_damage)
    paths = sorted({os.path.relpath(p, root) for root in (src, dst) for p in all_paths(root)})
    cuts = sorted({paths[i % len(paths)] for i in picks} if paths else set(), key=sort_key)
    assert summary(by_ranges(src, dst, cuts)) == summary(whole(src, dst))


def test_a_walk_over_a_range_stats_nothing_outside_it(tmp_path: Path) -> None:
    """Only the range's entries are emitted, the directories leading to it as context only
    (never as results); the walk reads the listings it needs and nothing else."""
    src = bytes(tmp_path / "src")
    build(src, {b"a": ("dir", {b"x": ("file", b"1"), b"y": ("file", b"2")}), b"b": ("file", b"3")})
    subprocess.run(["cp", "-a", src, src + b"-copy"], check=True)
    with open(src + b"/a/y", "wb") as f:
        f.write(b"changed")
    pairs, settled = join(src, src + b"-copy", (b"a/y", b"b"))
    assert [(s.path if s else None) for batch in pairs for s, _ in batch] == [b"a/y"]
    assert settled.pairs == 0  # a/y differs; "", "a" and "b" belong to other ranges


def test_the_plan_covers_every_path_and_splits_a_big_directory(tmp_path: Path) -> None:
    root = tmp_path / "t"
    (root / "big").mkdir(parents=True)
    for i in range(20_000):
        (root / "big" / f"{i:05d}").touch()
    (root / "small").mkdir()
    ranges = plan(bytes(root), 4)
    assert ranges[0].lo == b"" and ranges[-1].hi is None
    for before, after in itertools.pairwise(ranges):
        assert before.hi == after.lo and sort_key(before.lo) < sort_key(after.lo)
    inside = [r for r in ranges if r.lo.startswith(b"big/")]
    assert len(inside) >= 16, [r.lo for r in ranges]
    weights = [r.weight for r in ranges]
    assert max(weights) < 3 * sum(weights) / len(weights), weights
