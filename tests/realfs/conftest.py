"""Loop-mounted ext4, xfs and btrfs images, and tmpfs, made by the tests.

Each filesystem is created once per session in a sparse image file and
unmounted at the end.  Where loop mounts are not permitted (not root, no
loop device, a container without CAP_SYS_ADMIN) the tests skip and say why.
"""

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

IMAGE_BYTES = 400 << 20  # xfs refuses filesystems under 300 MiB
MKFS = {
    "ext4": ["mkfs.ext4", "-q", "-F"],
    "xfs": ["mkfs.xfs", "-q", "-f"],
    "btrfs": ["mkfs.btrfs", "-q", "-f"],
}
FILESYSTEMS = [*MKFS, "tmpfs"]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(args), capture_output=True, text=True)


def _mount(fstype: str, base: Path) -> Path:
    mnt = base / f"mnt-{fstype}"
    mnt.mkdir()
    if fstype == "tmpfs":
        done = _run("mount", "-t", "tmpfs", "-o", "size=512m", "tmpfs", str(mnt))
    else:
        if shutil.which(MKFS[fstype][0]) is None:
            pytest.skip(f"{MKFS[fstype][0]} not installed (scripts/setup.sh installs it)")
        image = base / f"{fstype}.img"
        with open(image, "wb") as f:
            f.truncate(IMAGE_BYTES)
        made = _run(*MKFS[fstype], str(image))
        if made.returncode != 0:
            pytest.skip(f"cannot make {fstype}: {made.stderr.strip()}")
        done = _run("mount", "-o", "loop", str(image), str(mnt))
    if done.returncode != 0:
        pytest.skip(f"cannot mount {fstype} here: {done.stderr.strip()}")
    return mnt


@pytest.fixture(scope="session", params=FILESYSTEMS)
def mounted_fs(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Path]]:
    fstype: str = request.param
    mnt = _mount(fstype, tmp_path_factory.mktemp(f"fs-{fstype}"))
    try:
        yield fstype, mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)
