"""Fixtures for tests that need real OpenZFS: the session's ZFS host, pools and datasets.

``zfs_host`` is one backend for the whole session (native /dev/zfs, or one VM
boot); tests skip, naming the reason, when neither is available, unless
``ZVERIFY_ZFS_REQUIRED=1`` (CI) turns that into a failure. Pools live on the
host's scratch devices, which are throwaway (VM disks or sparse files), and are
destroyed after use.
"""

from __future__ import annotations

import os
import time

import pytest

from tools.zfsvm.backend import availability, open_host
from tools.zfsvm.errors import HarnessError
from tools.zfsvm.pools import Pool


@pytest.fixture(scope="session")
def zfs_host():
    """The session's ZFS backend, with ``.run(argv)`` → ``subprocess.CompletedProcess``."""
    avail = availability()
    if avail.kind == "unavailable":
        if os.environ.get("ZVERIFY_ZFS_REQUIRED") == "1":
            pytest.fail(
                f"real ZFS required (ZVERIFY_ZFS_REQUIRED=1) but unavailable: {avail.detail}"
            )
        pytest.skip(f"real ZFS unavailable: {avail.detail}")
    start = time.monotonic()
    try:
        host = open_host(avail)
    except HarnessError as exc:
        pytest.fail(f"could not start the ZFS backend ({avail.header()}): {exc}")
    print(f"\nzfs backend {host.kind} ({host.detail}) ready in {time.monotonic() - start:.1f}s")
    yield host
    host.shutdown()


def _pool(host, index: int, name: str):
    pool = Pool.create(host, host.scratch_devices[index], name)
    yield pool
    pool.destroy()


@pytest.fixture
def zfs_pool(zfs_host):
    """A fresh pool (``tank`` at /tank in the VM) on the first scratch device, destroyed after."""
    yield from _pool(zfs_host, 0, "tank")


@pytest.fixture(scope="module")
def zfs_module_pool(zfs_host):
    """A pool shared by one module's tests (``mtank``), on the second scratch device."""
    yield from _pool(zfs_host, 1, "mtank")


@pytest.fixture(scope="session")
def zverify_in_zfs_host(zfs_host):
    """argv prefix that runs zverify where ZFS is; fails clearly if zverify cannot start there."""
    argv = [*zfs_host.python, "-m", "zverify"]
    probe = zfs_host.run([*argv, "compare", "--help"], timeout=300)
    if probe.returncode != 0:
        pytest.fail(
            "`python -m zverify compare --help` failed on the ZFS host (is the C extension "
            "built in place: `pip install -e .`?):\n" + probe.stderr[-2000:]
        )
    return argv
