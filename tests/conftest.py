"""Shared fixtures: isolated environment, capability header, rich trees."""

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.treebuilder import build_rich_tree
from tools.zfsvm.backend import availability as zfs_availability

pytest_plugins = [
    "tests.cold.store.bucket_fixtures",  # s3server, s3env*: the real S3 server
    "tests.zfs.fixtures",  # zfs_host, zfs_pool, ...: real OpenZFS, for the zfs-marked tests
]


def _can_loop_mount() -> tuple[bool, str]:
    if os.geteuid() != 0:
        return False, "not root"
    if not Path("/dev/loop-control").exists():
        return False, "no /dev/loop-control"
    return True, "root with /dev/loop-control"


def pytest_report_header(config: pytest.Config) -> list[str]:
    loop_ok, loop_why = _can_loop_mount()
    tools = [
        t for t in ("rsync", "cp", "tar", "setfattr", "mkfs.xfs", "mkfs.btrfs") if shutil.which(t)
    ]
    return [
        f"zverify: uid={os.geteuid()} tools={','.join(tools)}",
        f"loop mounts: {'yes' if loop_ok else 'no'} ({loop_why})",
        zfs_availability().header(),
    ]


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Tests must not depend on the caller's locale, home or terminal."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    monkeypatch.delenv("COLUMNS", raising=False)


@pytest.fixture(scope="session")
def rich_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tricky tree, built once per session; tests must not modify it."""
    return build_rich_tree(tmp_path_factory.mktemp("rich") / "src")


@pytest.fixture
def rich_copy(rich_tree: Path, tmp_path: Path) -> Iterator[Path]:
    """A faithful copy (cp -a keeps hardlinks, xattrs, sparseness) to mutate."""
    dst = tmp_path / "copy"
    subprocess.run(["cp", "-a", str(rich_tree), str(dst)], check=True)
    yield dst


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(args), check=True, capture_output=True, text=True)
