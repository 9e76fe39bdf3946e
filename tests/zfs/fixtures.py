"""Fixtures for tests that need real OpenZFS: the session's ZFS host, pools and datasets.

``zfs_host`` is one backend for the whole session (native /dev/zfs, or one VM
boot); tests skip, naming the reason, when neither is available, unless
``ZVERIFY_ZFS_REQUIRED=1`` (CI) turns that into a failure. Pools live on the
host's scratch devices, which are throwaway (VM disks or sparse files), and are
destroyed after use.

A test that must hold on every OpenZFS release the harness builds (2.1 from Debian 12,
2.3 from bookworm-backports) takes ``zfs_release_host`` instead: it runs once per release,
each on its own VM, booted on first use and kept for the session.  Those runs go last in
the session (``pytest_collection_modifyitems``), so that in CI the second image can still
be building while the first release's tests run.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import pytest

from tools.zfsvm import config, image
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
    return _zverify_in(zfs_host)


def _zverify_in(host) -> list[str]:
    argv = [*host.python, "-m", "zverify"]
    probe = host.run([*argv, "compare", "--help"], timeout=300)
    if probe.returncode != 0:
        pytest.fail(
            "`python -m zverify compare --help` failed on the ZFS host (is the C extension "
            "built in place: `pip install -e .`?):\n" + probe.stderr[-2000:]
        )
    return argv


# -- one host per OpenZFS release ----------------------------------------------------------


def _release_unavailable(release: str) -> str | None:
    """Why the release's VM cannot boot here, or None.  With ZVERIFY_ZFS_REQUIRED=1 (CI) or
    ZVERIFY_VM_AUTOBUILD=1 (scripts/test.sh) the image is built, or waited for (a build in
    progress holds the cache lock), rather than skipped."""
    if release not in config.releases_wanted():
        return f"OpenZFS {release} not in ZVERIFY_VM_RELEASES={','.join(config.releases_wanted())}"
    if image.is_built(config.image_dir(release)):
        return None
    if "1" in (os.environ.get("ZVERIFY_ZFS_REQUIRED"), os.environ.get("ZVERIFY_VM_AUTOBUILD")):
        try:
            image.build_image(release)
        except HarnessError as exc:
            return f"OpenZFS {release} VM image could not be built: {exc}"
        return None
    return (
        f"OpenZFS {release} VM image not built: run `python -m tools.zfsvm build --release"
        f" {release}`"
    )


class _ReleaseHosts:
    """The VM of each release, booted on first use; the default release is ``zfs_host``
    (asked for only when a test runs on it)."""

    def __init__(self, default_host: Callable[[], Any]) -> None:
        self.default_host = default_host
        self.booted: dict[str, Any] = {}

    def get(self, release: str):
        kind = availability().kind
        if release == config.DEFAULT_RELEASE or kind != "vm":
            return self._default(release, kind)
        if release not in self.booted:
            why = _release_unavailable(release)
            if why is not None:
                _unavailable(why)
            from tools.zfsvm.vm import ZfsVM

            start = time.monotonic()
            try:
                self.booted[release] = ZfsVM.boot(release=release)
            except HarnessError as exc:
                pytest.fail(f"could not boot the OpenZFS {release} VM: {exc}")
            print(f"\nOpenZFS {release} VM ready in {time.monotonic() - start:.1f}s")
        return self.booted[release]

    def _default(self, release: str, kind: str):
        if release != config.DEFAULT_RELEASE and kind == "native":
            pytest.skip(f"OpenZFS {release}: this session's ZFS is the host's own")
        return self.default_host()  # unavailable: zfs_host skips or fails, saying why

    def shutdown(self) -> None:
        for host in self.booted.values():
            host.shutdown()


def _unavailable(why: str) -> None:
    if os.environ.get("ZVERIFY_ZFS_REQUIRED") == "1":
        pytest.fail(f"real ZFS required (ZVERIFY_ZFS_REQUIRED=1) but {why}")
    pytest.skip(why)


@pytest.fixture(scope="session")
def zfs_release_hosts(request):
    hosts = _ReleaseHosts(lambda: request.getfixturevalue("zfs_host"))
    yield hosts
    hosts.shutdown()


@pytest.fixture(scope="module", params=list(config.RELEASES), ids=lambda r: f"openzfs-{r}")
def zfs_release_host(request, zfs_release_hosts):
    """The ZFS host of one OpenZFS release (``.release``, ``.openzfs``): a test taking it
    runs once per release the harness builds."""
    return zfs_release_hosts.get(request.param)


@pytest.fixture(scope="module")
def zverify_in_release_host(zfs_release_host):
    """``zverify_in_zfs_host`` for the release's host."""
    return _zverify_in(zfs_release_host)


@pytest.fixture(scope="module")
def zfs_release_pool(zfs_release_host):
    """A pool (``rtank``) shared by one module's tests on the release's host."""
    yield from _pool(zfs_release_host, 1, "rtank")


@pytest.fixture
def zfs_release_tank(zfs_release_host):
    """``zfs_pool`` (``tank``) on the release's host."""
    yield from _pool(zfs_release_host, 0, "tank")


FULL_RUN = os.environ.get("ZVERIFY_VM_FULL") == "1"


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Runs on a release other than the default go last, in their order: their VM boots
    once, and in CI its image may still be building while the others run.  Outside the
    full VM run (scripts/vm-full.sh) only the tests marked ``release_sample`` run there: CI
    has the time for a sample of each release's runs, not for all of them twice; and no test
    marked ``vm_full`` runs."""
    for item in items:
        if not FULL_RUN and item.get_closest_marker("vm_full") is not None:
            item.add_marker(
                pytest.mark.skip(reason="slow: scripts/vm-full.sh runs it (CI's time is spent)")
            )
        other = _release_of(item) not in (None, config.DEFAULT_RELEASE)
        if other and not FULL_RUN and item.get_closest_marker("release_sample") is None:
            item.add_marker(
                pytest.mark.skip(
                    reason=f"OpenZFS {_release_of(item)}: CI runs the release_sample tests on"
                    " this release; scripts/vm-full.sh runs them all"
                )
            )
    items.sort(key=lambda item: _release_of(item) not in (None, config.DEFAULT_RELEASE))


def _release_of(item: pytest.Item) -> str | None:
    callspec = getattr(item, "callspec", None)
    return callspec.params.get("zfs_release_host") if callspec is not None else None
