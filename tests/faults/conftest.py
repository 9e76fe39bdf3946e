"""Fixtures for the fault-injection tests: the shim built with gcc, the installed console
script, and a small tree with an identical copy that passes every failure point."""

import os
import subprocess
from pathlib import Path

import pytest

from tests.cli.console import console_script
from tests.faults import faultfs as faultfs_module
from tests.faults.helpers import Harness, Trees, build_preload_shim
from tests.treebuilder import write

HERE = Path(__file__).parent


@pytest.fixture(scope="session")
def shim(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_preload_shim(HERE / "shim.c", tmp_path_factory.mktemp("shim") / "shim.so")


@pytest.fixture(scope="session")
def harness(shim: Path, tmp_path_factory: pytest.TempPathFactory) -> Harness:
    # the installed script, checked to run this checkout (an absent one is a setup error)
    return Harness(console_script(), shim, tmp_path_factory.mktemp("fault-logs"))


def _set_trusted(path: Path) -> bool:
    try:
        os.setxattr(path, "trusted.zverify", b"t", follow_symlinks=False)
    except OSError:
        return False
    return True


def _has_trusted(path: Path) -> bool:
    try:
        return os.getxattr(path, "trusted.zverify", follow_symlinks=False) == b"t"
    except OSError:
        return False


@pytest.fixture(scope="session")
def trees(tmp_path_factory: pytest.TempPathFactory) -> Trees:
    """Dirs, six files (one of several read blocks), a symlink, a FIFO, xattrs on a file
    and on a directory; and `cp -a` of it."""
    root = tmp_path_factory.mktemp("fault-trees")
    src = root / "src"
    write(src / "a" / "h", b"h\n")
    write(src / "a" / "b" / "g", bytes(range(256)) * 1200)  # > 2 blocks of 128 KiB
    write(src / "c" / "i", b"i\n")
    write(src / "e", b"")
    write(src / "f", b"with an xattr\n")
    write(src / "z", b"last\n")
    try:
        os.setxattr(src / "f", "user.origin", b"fault tests")
        os.setxattr(src / "c", "user.dir", b"1")
    except OSError as err:
        pytest.skip(f"no user.* xattrs on {root}: {err.strerror}")
    os.symlink("f", src / "link")
    os.mkfifo(src / "fifo")
    special = _set_trusted(src / "link") and _set_trusted(src / "fifo")
    dst = root / "dst"
    subprocess.run(["cp", "-a", str(src), str(dst)], check=True)
    kept = special and _has_trusted(dst / "link") and _has_trusted(dst / "fifo")
    return Trees(src, dst, kept)


@pytest.fixture(scope="session")
def faultfs(tmp_path_factory: pytest.TempPathFactory) -> faultfs_module.FaultFS:
    """faultfs.c built and shown to mount here (tests/faults/faultfs.py); a skip naming the
    reason where FUSE, gcc or libfuse3-dev is missing or a mount is refused."""
    work = tmp_path_factory.mktemp("faultfs")
    try:
        binary = faultfs_module.build(work)
        return faultfs_module.probe(binary, work)
    except faultfs_module.Unavailable as why:
        print(f"\nskipping the FUSE device-fault tests: {why}")
        pytest.skip(f"FUSE fault filesystem unavailable: {why}")
