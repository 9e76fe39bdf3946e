"""--quick: rsync's quick check (size, mtime and metadata), reading no file data, with a
verdict that says so; --one-way and --modify-window, the names rsync/rclone users know."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.cli.console import console_script, needs_installed_command, zverify
from tests.treebuilder import write
from zverify.compare.policy import ComparePolicy
from zverify.trees.compare import compare_trees
from zverify.trees.options import CompareOptions

MIB = 1 << 20


@pytest.fixture
def big_copy(tmp_path: Path) -> tuple[Path, Path]:
    src, dst = tmp_path / "src", tmp_path / "dst"
    for i in range(4):
        write(src / f"f{i}", os.urandom(8 * MIB))
    subprocess.run(["cp", "-a", str(src), str(dst)], check=True)
    return src, dst


def _rchar() -> int:
    """Bytes this process (all its threads) got from read calls, page cache or not."""
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("no rchar in /proc/self/io")


def test_quick_reads_no_file_data(big_copy: tuple[Path, Path]) -> None:
    src, dst = big_copy
    before = _rchar()
    full = compare_trees(str(src), str(dst), CompareOptions(ComparePolicy.build()))
    read_full = _rchar() - before
    before = _rchar()
    quick = compare_trees(str(src), str(dst), CompareOptions(ComparePolicy.build(quick=True)))
    read_quick = _rchar() - before
    assert full.identical and quick.identical
    assert read_full >= 2 * 32 * MIB  # the measurement sees the reads when there are some
    assert read_quick < MIB


@needs_installed_command
def test_quick_makes_no_read_calls_in_the_installed_command(
    big_copy: tuple[Path, Path], tmp_path: Path
) -> None:
    if shutil.which("strace") is None:
        pytest.skip("strace is not installed (scripts/setup.sh installs it)")
    src, dst = big_copy
    counts = {}
    for mode in ("--quick", "--profile=full"):
        log = tmp_path / f"strace{mode}.log"
        subprocess.run(
            ["strace", "-f", "-qq", "-y", "-e", "trace=read,pread64,preadv,preadv2,mmap",
             "-o", str(log), console_script(), "compare", mode, str(src), str(dst)],
            check=True, stdout=subprocess.DEVNULL,
        )  # fmt: skip
        # -y names each call's file: count the reads and maps of the trees' files, not of
        # libraries (a cached large file is read once, mapped, and read again at its end)
        trees = (f"<{src}/", f"<{dst}/")
        counts[mode] = sum(
            1 for line in log.read_text().splitlines() if any(t in line for t in trees)
        )
    assert counts["--profile=full"] >= 2 * 4 * 3  # 4 files a tree
    assert counts["--quick"] == 0


@needs_installed_command
def test_quick_verdict_says_content_was_not_read(big_copy: tuple[Path, Path]) -> None:
    src, dst = big_copy
    same_size = bytearray((dst / "f0").read_bytes())
    same_size[0] ^= 0xFF
    stamp = (dst / "f0").stat().st_mtime_ns
    (dst / "f0").write_bytes(bytes(same_size))
    os.utime(dst / "f0", ns=(stamp, stamp))
    done = zverify("compare", "--quick", str(src), str(dst))
    assert done.returncode == 0  # what a quick check cannot see, by definition...
    assert "content not read" in done.stdout  # ...and the verdict says so
    doc = json.loads(zverify("compare", "--quick", "--json", str(src), str(dst)).stdout)
    assert doc["content_read"] is False
    assert zverify("compare", str(src), str(dst)).returncode == 1  # the full check does see it


@needs_installed_command
def test_quick_still_sees_sizes_and_mtimes(big_copy: tuple[Path, Path]) -> None:
    src, dst = big_copy
    with open(dst / "f1", "ab") as f:
        f.write(b"+")
    os.utime(dst / "f2", ns=(0, 10**9))
    doc = json.loads(zverify("compare", "--quick", "--json", str(src), str(dst)).stdout)
    found = {(d["path"], d["kind"]) for d in doc["differences"]}
    assert {("f1", "content"), ("f2", "mtime")} <= found
    assert doc["exit_code"] == 1


@needs_installed_command
def test_one_way_and_modify_window(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    write(src / "a", b"a")
    subprocess.run(["cp", "-a", str(src), str(dst)], check=True)
    write(dst / "only-in-dst", b"x")
    os.utime(dst, ns=(0, src.stat().st_mtime_ns))
    stamp = (src / "a").stat().st_mtime_ns
    os.utime(dst / "a", ns=(stamp, stamp + 10**9))  # one second later, as FAT rounds
    assert zverify("compare", str(src), str(dst)).returncode == 1
    done = zverify("compare", "--one-way", "--modify-window", "2", str(src), str(dst))
    assert done.returncode == 0, done.stdout
    assert "minus extra" in done.stdout
