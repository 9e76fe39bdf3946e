"""Run compare through the root handler and look at its JSON document."""

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.cli.console import zverify_in_process


def zverify(*args: str) -> tuple[int, dict[str, Any]]:
    """Exit code and document of `zverify compare --json ARGS`, in-process (tests/cli/console.py
    says why: these run on the instrumented C core under scripts/asan.sh)."""
    done = zverify_in_process("compare", "--json", *args)
    assert done.stdout, done.stderr
    return done.returncode, json.loads(done.stdout)


def kinds(doc: dict[str, Any]) -> set[tuple[str, str]]:
    return {(d["path"], d["kind"]) for d in doc["differences"]}


def du(path: Path, apparent: bool = False) -> int:
    args = ["du", "-s", "-B1", *(["--apparent-size"] if apparent else []), str(path)]
    return int(subprocess.run(args, check=True, capture_output=True, text=True).stdout.split()[0])


def assert_sizes_reconciled(doc: dict[str, Any], src: Path, dst: Path) -> None:
    """du on both sides, and the explanation adds up to the difference exactly."""
    sizes = doc["sizes"]
    assert sizes["src"]["du_bytes"] == du(src)
    assert sizes["dst"]["du_bytes"] == du(dst)
    assert sizes["src"]["du_apparent_bytes"] == du(src, apparent=True)
    assert sizes["dst"]["du_apparent_bytes"] == du(dst, apparent=True)
    for column, total in (("apparent_bytes", "du_apparent_bytes"), ("allocated_bytes", "du_bytes")):
        parts = sum(row[column] for row in sizes["explanation"])
        assert parts == sizes["dst"][total] - sizes["src"][total]


def inode_groups(root: Path) -> set[frozenset[str]]:
    """Hardlink groups of regular files under root, by lstat, independently of zverify."""
    groups: dict[tuple[int, int], set[str]] = {}
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            full = Path(dirpath, name)
            st = full.lstat()
            if full.is_file() and not full.is_symlink() and st.st_nlink > 1:
                rel = os.fsdecode(full.relative_to(root))
                groups.setdefault((st.st_dev, st.st_ino), set()).add(rel)
    return {frozenset(g) for g in groups.values() if len(g) > 1}


def skip_unless_cache_hits_tell(directory: Path) -> None:
    """Skip, saying why, where a read cannot tell a page-cache hit (RWF_NOWAIT refused, as
    on tmpfs and FUSE): there the core reads every file with pread and never maps one, so a
    test of the mapped read would pass without running it."""
    probe = directory / ".nowait-probe"
    probe.write_bytes(b"x" * 4096)
    fd = os.open(probe, os.O_RDONLY)
    try:
        os.preadv(fd, [bytearray(4096)], 0, os.RWF_NOWAIT)
    except OSError as err:
        pytest.skip(f"{directory}: RWF_NOWAIT reads refused ({err.strerror}): no file is mapped")
    finally:
        os.close(fd)
        probe.unlink()


def drop_from_cache(*paths: Path) -> None:
    """Write the files back and evict their pages, so that their next read misses the page
    cache: the core then reads them with pread, block by block, and never maps them."""
    os.sync()
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
