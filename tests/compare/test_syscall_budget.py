"""The per-file system-call budget of a compare (docs/design/compare.md, "Cost per file").

What one more regular file costs is measured as a difference: the installed command compares
a copy of N small files and one of 2N, each under `strace -f -c`, and everything that does not
grow with the tree (start-up, the roots, the report) cancels out.  The counts are the
kernel's, not timings, so the budget holds on a loaded machine too; only futex calls depend on
how the threads meet, and for them the bound is loose (a hand-off per record cost ~3 a file).
"""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.cli.console import console_script, needs_installed_command

FILES = 1500
SIDES = 2


def _tree(root: Path, files: int) -> None:
    """`files` files of 1 KiB (below any read-ahead size) in one directory, and a cp -a copy."""
    src = root / "src"
    src.mkdir(parents=True)
    for i in range(files):
        (src / f"f{i:05}").write_bytes(os.urandom(1024))
    subprocess.run(["cp", "-a", str(src), str(root / "dst")], check=True)


def _syscalls(root: Path, args: list[str]) -> dict[str, int]:
    return _traced(root, args)[0]


def _traced(root: Path, args: list[str]) -> tuple[dict[str, int], dict[str, int]]:
    """System calls the command made, by name, and how many of them failed."""
    log = root / "strace.txt"
    subprocess.run(
        ["strace", "-f", "-c", "-o", str(log), console_script(), "compare", "--quiet", *args,
         str(root / "src"), str(root / "dst")],
        check=True, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    calls, errors = {}, {}
    for line in log.read_text().splitlines():
        fields = line.split()
        # "% time  seconds  usecs/call  calls  [errors]  syscall"
        name = fields[-1] if len(fields) >= 5 and fields[3].isdigit() else "total"
        if name.isidentifier() and name != "total":
            calls[name] = int(fields[3])
            errors[name] = int(fields[4]) if len(fields) == 6 else 0
    return calls, errors


# native/src/zv_walk.c: first reads that miss the page cache, within a window of opens,
# before the walker turns read-ahead on
MISSES_TO_PREFETCH = 2


def _hot(root: Path, args: list[str]) -> dict[str, int]:
    """The calls of a run on a hot cache, as the kernel itself reported it: fewer of the run's
    RWF_NOWAIT first reads (preadv2) failed with EAGAIN than it takes to turn read-ahead on.
    Pages the kernel evicted or held locked a moment (reclaim, compaction, after memory
    pressure) miss for real, and read-ahead is then right; such a run is measured again."""
    misses = []
    for _ in range(5):
        calls, errors = _traced(root, args)
        misses.append(errors.get("preadv2", 0))
        if misses[-1] < MISSES_TO_PREFETCH:
            return calls
    pytest.skip(f"{root}: the kernel answered {misses} first reads of 5 runs as not cached")


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    if shutil.which("strace") is None:
        pytest.skip("strace is not installed (scripts/setup.sh installs it)")
    small, large = tmp_path_factory.mktemp("n"), tmp_path_factory.mktemp("2n")
    _tree(small, FILES)
    _tree(large, 2 * FILES)
    return small, large


def per_file(trees: tuple[Path, Path], args: list[str]) -> dict[str, float]:
    """System calls per regular file and side, by name, on a hot cache."""
    small, large = (_hot(root, args) for root in trees)
    return {
        name: (large.get(name, 0) - small.get(name, 0)) / (FILES * SIDES)
        for name in set(small) | set(large)
    }


def _total(costs: dict[str, float]) -> float:
    return sum(n for name, n in costs.items() if name != "futex")


# (options, most system calls per file and side but futex, calls that must not appear)
BUDGETS = [
    pytest.param(["--profile", "full"], 6, ["fadvise64"], id="full"),
    pytest.param(["--profile", "content"], 5, ["flistxattr", "fadvise64"], id="content"),
    pytest.param(["--quick"], 3, ["openat", "close", "pread64"], id="quick"),
    pytest.param(["--quick", "--profile", "rsync-a"], 1, ["openat", "llistxattr"], id="rsync-a"),
]


@needs_installed_command
@pytest.mark.parametrize(("args", "budget", "absent"), BUDGETS)
def test_system_calls_per_file_within_budget(
    trees: tuple[Path, Path], args: list[str], budget: int, absent: list[str]
) -> None:
    costs = per_file(trees, args)
    shown = {name: round(n, 2) for name, n in sorted(costs.items()) if abs(n) >= 0.01}
    assert _total(costs) <= budget + 0.1, shown  # + directory listing, in 0.1s of a call
    for name in absent:
        assert costs.get(name, 0) < 0.01, shown
    # Records cross threads in batches: below the 2.6-4.3 futex calls a file that a hand-off
    # per record made under strace.  Loose, because waits depend on scheduling, and strace
    # slows every traced call, so threads wait for each other more than they do untraced
    # (0.1 a file by perf stat; up to 0.56 seen under strace in a loaded CI run).
    assert costs.get("futex", 0) < 1.5, shown


@needs_installed_command
def test_measurement_sees_a_call_per_file(trees: tuple[Path, Path]) -> None:
    """The difference method counts what a file costs: every file is stat'ed."""
    costs = per_file(trees, ["--profile", "full"])
    assert costs.get("newfstatat", 0) >= 0.99
    assert costs.get("openat", 0) >= 0.99


def _evict(root: Path) -> None:
    """Drop the trees' file data from the page cache (written back first)."""
    os.sync()
    for path in root.rglob("f*"):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


@needs_installed_command
def test_read_ahead_is_asked_for_files_not_in_the_cache(trees: tuple[Path, Path]) -> None:
    """What the hot budget leaves out comes back when it pays: files whose data is not
    cached are read ahead at open, so that many reads are in flight at once; on a hot cache,
    where a lone first read may still miss, it is never asked for."""
    large, opened = trees[1], 2 * FILES * SIDES
    _evict(large)
    cold = _syscalls(large, ["--profile", "full"])
    assert cold.get("fadvise64", 0) >= 0.75 * opened, cold
    hot = _hot(large, ["--profile", "full"])
    assert hot.get("fadvise64", 0) == 0, hot
