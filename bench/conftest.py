"""Session-scoped datasets for the C-core benchmarks, and a throughput summary.

Run by hand, never by the test suite (pyproject's testpaths is `tests`):

    python -m pytest bench/ [--benchmark-only] [-k walk]

Datasets are generated once per session under pytest's temporary directory,
small enough that the whole file runs in a few minutes:

  many_small   20,000 files of 0-16 KiB in 200 directories (about 160 MiB)
  few_large    4 files of 64 MiB of incompressible data (256 MiB)

Every benchmark records what it processed (entries, bytes) in extra_info;
at the end of the session a table turns the median times into entries/s and
MB/s, the units the README quotes.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

MIB = 1 << 20


@dataclass(frozen=True)
class Dataset:
    name: str
    root: Path
    entries: int  # what a walk yields: the root itself and everything below it
    file_bytes: int  # sum of regular file sizes: what hashing reads

    @property
    def broot(self) -> bytes:
        return os.fsencode(self.root)


def _many_small(root: Path) -> Dataset:
    rng = random.Random(7)
    pool = os.urandom(32 * MIB)
    total = 0
    for d in range(200):
        sub = root / f"d{d // 20:02d}" / f"s{d % 20:02d}"
        sub.mkdir(parents=True)
        for i in range(100):
            size = rng.randint(0, 16 * 1024)
            start = rng.randrange(len(pool) - size)
            (sub / f"f{i:03d}").write_bytes(pool[start : start + size])
            total += size
    return Dataset("many_small", root, _count_entries(root), total)


def _few_large(root: Path) -> Dataset:
    root.mkdir()
    size = 64 * MIB
    for i in range(4):
        with open(root / f"big{i}", "wb") as fh:
            for _ in range(size // (8 * MIB)):
                fh.write(os.urandom(8 * MIB))
    return Dataset("few_large", root, _count_entries(root), 4 * size)


def _count_entries(root: Path) -> int:
    return 1 + sum(len(dirs) + len(files) for _, dirs, files in os.walk(root))


BUILDERS = {"many_small": _many_small, "few_large": _few_large}


@pytest.fixture(scope="session")
def build_dataset(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Dataset]:
    """Build each dataset at most once per session, on first use."""
    root = tmp_path_factory.mktemp("bench")
    built: dict[str, Dataset] = {}

    def get(name: str) -> Dataset:
        if name not in built:
            built[name] = BUILDERS[name](root / name)
        return built[name]

    return get


@pytest.fixture(scope="session", params=list(BUILDERS))
def dataset(request: pytest.FixtureRequest, build_dataset: Callable[[str], Dataset]) -> Dataset:
    return build_dataset(request.param)


@pytest.fixture(scope="session")
def many_small(build_dataset: Callable[[str], Dataset]) -> Dataset:
    return build_dataset("many_small")


_rows: list[tuple[str, str, float]] = []


@pytest.fixture
def throughput(request: pytest.FixtureRequest, benchmark):  # type: ignore[no-untyped-def]
    """Call after a benchmark: throughput(amount, unit) records amount/median."""

    def record(amount: float, unit: str) -> None:
        if benchmark.stats is None:  # --benchmark-disable or skip
            return
        median = benchmark.stats.stats.median
        benchmark.extra_info[unit] = amount / median
        _rows.append((request.node.name, unit, amount / median))

    return record


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _rows:
        return
    terminalreporter.section("zverify C core throughput (from median times)")
    for name, unit, value in _rows:
        terminalreporter.write_line(f"{name:60s} {value:14,.0f} {unit}")
