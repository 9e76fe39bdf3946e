"""Where the harness keeps things, what goes into the image, and the cache key derived from it.

Invariant: anything that changes the built image must be part of ``image_key()``,
so a changed recipe never reuses a stale image. The command agent is *not* part
of the image (it is copied to the control share at each boot), so editing it
needs no rebuild.
"""

from __future__ import annotations

import hashlib
import os
import pwd
import sys
import tomllib
from pathlib import Path

GUEST_DIR = Path(__file__).resolve().parent / "guest"
BUILD_SCRIPT = GUEST_DIR / "build_image.sh"
INIT_SCRIPT = GUEST_DIR / "zvinit.sh"
AGENT_SCRIPT = GUEST_DIR / "agent.py"
REPO_ROOT = Path(__file__).resolve().parents[2]

SUITE = "bookworm"
DEFAULT_MIRROR = "http://deb.debian.org/debian"

# Installed by debootstrap itself (small, from main).  zstd, xz-utils, lz4: archives compressed
# by hand (tests/cold/test_zfs_by_hand.py).  dmsetup: tests/faults/test_device_faults_zfs.py
# maps device-mapper `error` and `flakey` targets over a block of a scratch ext4 filesystem.
BASE_PACKAGES = (
    "kmod udev procps python3 rsync attr acl libxxhash0 coreutils findutils util-linux e2fsprogs"
    " dmsetup zstd xz-utils lz4"
)
# Kernel 6.1 with headers for dkms, plus the userland; zfs-dkms comes after so
# its postinst finds the headers.  sanoid (for syncoid, the replication tool the cutover
# tests migrate with) is installed with zfsutils-linux so that apt picks that for its
# "zfs-fuse | zfsutils-linux" dependency.
KERNEL_PACKAGES = (
    "linux-image-amd64 linux-headers-amd64 dkms build-essential zfsutils-linux python3-pyzfs sanoid"
)
ZFS_PACKAGES = "zfs-dkms"

# The OpenZFS releases the harness builds an image for, each named by the Debian suite its
# packages come from: Debian 12's own 2.1.11, and 2.3.x from bookworm-backports (what Proxmox
# VE 8 and TrueNAS SCALE users run is 2.2/2.3).  Both images share the bookworm kernel, so a
# difference between them is OpenZFS's, not Linux's.  A backports release upgrades the
# userland (zfsutils-linux, pyzfs) together with the module: a 2.1 `zfs` driving a 2.3 module
# would answer as neither.
DEFAULT_RELEASE = "2.1"
RELEASES = {"2.1": "", "2.3": "bookworm-backports"}
BACKPORTS_PACKAGES = "zfs-dkms zfsutils-linux python3-pyzfs"


def release_suite(release: str) -> str:
    """The suite the release's ZFS packages come from ('' = the base suite)."""
    if release not in RELEASES:
        known = ", ".join(RELEASES)
        raise ValueError(f"unknown OpenZFS release {release!r} (the harness builds {known})")
    return RELEASES[release]


def zfs_packages(release: str) -> str:
    return BACKPORTS_PACKAGES if release_suite(release) else ZFS_PACKAGES


def releases_wanted() -> tuple[str, ...]:
    """``$ZVERIFY_VM_RELEASES`` (comma-separated), default every release: what `build` makes
    and what the tests that name a release may boot."""
    raw = os.environ.get("ZVERIFY_VM_RELEASES", ",".join(RELEASES))
    wanted = tuple(r.strip() for r in raw.split(",") if r.strip())
    for release in wanted:
        release_suite(release)
    return wanted


# What zverify needs at run time in the guest, installed on the host with
# pip --target and shared read-only (guest and host are both CPython 3.11).
# zverify.cli imports click itself, and typer >= 0.2x no longer pulls it in.
PYDEPS_EXTRA = ("pytest", "click")


def pydeps() -> tuple[str, ...]:
    """The project's runtime dependencies from pyproject.toml (with the s3 extra: the cold
    tests on buckets run zverify in the guest; and parity: its tests make PAR2 files there),
    plus what tests run in the guest."""
    with open(REPO_ROOT / "pyproject.toml", "rb") as fh:
        project = tomllib.load(fh)["project"]
    extras = project["optional-dependencies"]
    return (*project["dependencies"], *extras["s3"], *extras["parity"], *PYDEPS_EXTRA)


MIN_FREE_BYTES = 5 * 1024**3


def cache_root() -> Path:
    """The cache directory: ``$ZVERIFY_VM_CACHE`` or ``~/.cache/zverify-vm``."""
    env = os.environ.get("ZVERIFY_VM_CACHE")
    # The account's home, not $HOME: the test suite points $HOME at a temp dir per test.
    return Path(env) if env else Path(pwd.getpwuid(os.geteuid()).pw_dir) / ".cache" / "zverify-vm"


def mirror() -> str:
    """The Debian mirror (``$ZVERIFY_VM_MIRROR``); not part of the key: same packages either way."""
    return os.environ.get("ZVERIFY_VM_MIRROR", DEFAULT_MIRROR).rstrip("/")


def _digest(parts: list[bytes]) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    return h.hexdigest()[:16]


def image_key(release: str = DEFAULT_RELEASE) -> str:
    """Hash of the build script, the init wrapper, the package lists and the suites."""
    text = [BUILD_SCRIPT.read_bytes(), INIT_SCRIPT.read_bytes()]
    pkgs = [BASE_PACKAGES, KERNEL_PACKAGES, zfs_packages(release), SUITE, release_suite(release)]
    return _digest(text + [p.encode() for p in pkgs])


def image_dir(release: str = DEFAULT_RELEASE) -> Path:
    """The image for the release's current recipe, or ``$ZVERIFY_VM_IMAGE`` (a built image
    dir; default release only) if set."""
    override = os.environ.get("ZVERIFY_VM_IMAGE")
    if override and release == DEFAULT_RELEASE:
        return Path(override)
    return cache_root() / image_key(release)


def pydeps_dir() -> Path:
    """``pip --target`` directory, keyed by the requirement list and the host's Python ABI."""
    abi = f"{sys.implementation.cache_tag}-{sys.platform}"
    return cache_root() / f"pydeps-{_digest([' '.join(pydeps()).encode(), abi.encode()])}"
