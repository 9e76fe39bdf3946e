"""Run compare through the root handler and look at its JSON document."""

import json
import os
import subprocess
from pathlib import Path
from typing import Any

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


def drop_from_cache(*paths: Path) -> None:
    """Write the files back and evict their pages, so that their next read misses the page
    cache (the core then asks for read-ahead as it opens them)."""
    os.sync()
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
