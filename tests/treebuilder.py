"""Build the tricky trees the tests compare: every feature a copy can lose.

build_rich_tree() makes, under one root: nested dirs, empty file and dir,
a three-path hardlink group and a two-path one, relative/absolute/dangling
symlinks and a symlink loop, a symlink to a directory, sparse files (one of
5 GiB apparent size), a FIFO, a unix socket, a character device, user
xattrs on a file and a dir, and names with a newline and with invalid UTF-8.
"""

import os
import socket
import stat
import time
from pathlib import Path

GIB = 1 << 30


def write(path: Path, data: bytes, mode: int = 0o644) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    path.chmod(mode)
    return path


def sparse(path: Path, size: int, chunks: dict[int, bytes]) -> Path:
    """A file of apparent size `size` with data only at the given offsets."""
    with open(path, "wb") as f:
        for offset, data in chunks.items():
            f.seek(offset)
            f.write(data)
        f.truncate(size)
    return path


def pattern(n: int, seed: int = 0) -> bytes:
    """Deterministic non-repeating-looking bytes (a prime-cycle pattern)."""
    return bytes((i * 7 + seed) % 251 for i in range(n))


def build_rich_tree(root: Path, big_sparse: bool = True) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    write(root / "docs/readme.txt", b"hello\n")
    write(root / "docs/deep/a/b/c/leaf.bin", pattern(70_000, 3))
    write(root / "bin/tool", pattern(200_000, 1), 0o755)
    write(root / "bin/setuid", b"#!/bin/sh\n", 0o4755)
    write(root / "empty-file", b"")
    (root / "empty-dir").mkdir()
    (root / "sticky").mkdir(mode=0o1777)
    (root / "sticky").chmod(0o1777)
    write(root / "links/one", pattern(5000, 9))
    os.link(root / "links/one", root / "links/two")
    os.link(root / "links/one", root / "bin/three")
    write(root / "same-1", b"same bytes, separate inodes\n")
    write(root / "same-2", b"same bytes, separate inodes\n")
    for name in ("same-1", "same-2"):  # equal in every attribute, so they can be joined
        os.utime(root / name, ns=(1_600_000_000_000_000_000, 1_600_000_000_000_000_000))
    write(root / "pair-a", b"pair\n")
    os.link(root / "pair-a", root / "pair-b")
    os.symlink("../docs/readme.txt", root / "bin/rel-link")
    os.symlink("/etc/hostname", root / "abs-link")
    os.symlink("does/not/exist", root / "dangling")
    os.symlink("loop-b", root / "loop-a")
    os.symlink("loop-a", root / "loop-b")
    os.symlink("docs", root / "dir-link")
    sparse(root / "sparse-small", 1 << 20, {0: b"head", (1 << 20) - 4: b"tail"})
    if big_sparse:
        sparse(root / "sparse-5g", 5 * GIB, {4 * GIB + 12345: b"beyond 4 GiB"})
    os.mkfifo(root / "fifo")
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(os.fsdecode(root / "sock"))
    os.mknod(root / "null-dev", 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    write(root / "xattr-file", b"with attributes\n")
    os.setxattr(root / "xattr-file", "user.origin", b"tests")
    os.setxattr(root / "xattr-file", "user.empty", b"")
    os.setxattr(root / "docs", "user.dir-tag", b"d")
    write(root / "odd/new\nline", b"newline in name\n")
    write(Path(os.fsdecode(bytes(root / "odd") + b"/bad-\xff-utf8")), b"latin1\n")
    write(root / "odd/a-b", b"sorts before a/ bytewise\n")
    write(root / "odd/a/b", b"inside a\n")
    past_the_second(root)
    return root


def past_the_second(root: Path) -> None:
    """Wait until the clock has left the second of the newest mtime below root.  rsync 3.5
    (Debian 12's since 2026) leaves a directory, symlink or special file alone when its new
    mtime agrees with the source's to the second: a copy made within the second a tree was
    built keeps sub-second mtime differences (real ones, which zverify reports)."""
    newest = max(
        os.lstat(os.path.join(d, n)).st_mtime_ns
        for d, dirs, files in os.walk(root)
        for n in [*dirs, *files, "."]
    )
    while time.time_ns() // 10**9 <= newest // 10**9:
        time.sleep(0.05)
