"""The C core alone: walk rate (entries/s) and hashing rate (MB/s).

Whole walks are timed with benchmark.pedantic (one walk = one round), so a
round includes starting and joining the worker threads, as a real compare
does.  The page cache is warm: the first round's time is discarded by a
warm-up round.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from zverify import _zvcore
from zverify.hashing import Algorithm
from zverify.walk import TreeWalk, WalkOptions

if TYPE_CHECKING:
    from conftest import Dataset

THREADS = [1, 2]


def _drain_c(root: bytes, algo: int, threads: int, xattrs: bool = False) -> int:
    n = 0
    for batch in _zvcore.Walker(root, algo=algo, threads=threads, xattrs=xattrs):
        n += len(batch)
    return n


def _drain_blake3(root: bytes, threads: int) -> int:
    walk = TreeWalk(root, WalkOptions(algorithm=Algorithm.BLAKE3, threads=threads, xattrs=False))
    try:
        return sum(1 for _ in walk)
    finally:
        walk.close()


@pytest.mark.parametrize("xattrs", [False, True], ids=["stat", "stat+xattrs"])
@pytest.mark.parametrize("threads", THREADS, ids=lambda t: f"{t}thr")
def test_walk_entries(  # type: ignore[no-untyped-def]
    benchmark, throughput, many_small: Dataset, threads: int, xattrs: bool
):
    """Metadata-only walk (ALGO_NONE): what a walk costs before any byte is read."""
    count = benchmark.pedantic(
        _drain_c,
        args=(many_small.broot, _zvcore.ALGO_NONE, threads, xattrs),
        rounds=5,
        warmup_rounds=1,
    )
    assert count == many_small.entries
    throughput(count, "entries/s")


@pytest.mark.parametrize("threads", THREADS, ids=lambda t: f"{t}thr")
@pytest.mark.parametrize("algo", ["xxh3-128", "blake3"])
def test_hash_throughput(  # type: ignore[no-untyped-def]
    benchmark, throughput, dataset: Dataset, algo: str, threads: int
):
    """Walk + hash every file: xxh3-128 entirely in C, blake3 via the Python facade."""
    if algo == "xxh3-128":
        run, args = _drain_c, (dataset.broot, _zvcore.ALGO_XXH3_128, threads)
    else:
        run, args = _drain_blake3, (dataset.broot, threads)
    count = benchmark.pedantic(run, args=args, rounds=3, warmup_rounds=1)
    assert count == dataset.entries
    throughput(dataset.file_bytes / 1e6, "MB/s")
    throughput(count, "entries/s")


@pytest.mark.parametrize("block_kib", [64, 256, 1024, 4096], ids=lambda k: f"{k}KiB")
def test_xxh3_block_size(  # type: ignore[no-untyped-def]
    benchmark, throughput, build_dataset, block_kib: int
):
    """XXH3-128 MB/s on large files, one worker, by pread block size (walk.py uses 1 MiB)."""
    data = build_dataset("few_large")

    def run() -> int:
        walker = _zvcore.Walker(
            data.broot, algo=_zvcore.ALGO_XXH3_128, threads=1, block_size=block_kib * 1024
        )
        return sum(len(batch) for batch in walker)

    count = benchmark.pedantic(run, rounds=3, warmup_rounds=1)
    assert count == data.entries
    throughput(data.file_bytes / 1e6, "MB/s")
