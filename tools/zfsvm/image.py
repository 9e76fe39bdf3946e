"""Preflight checks and the cached, once-only build of the VM image and the guest's Python deps.

A build runs ``guest/build_image.sh`` in ``<cache>/<key>.build`` and renames the
result to ``<cache>/<key>`` only when it is complete, under an exclusive lock,
so a crashed or concurrent build never leaves a half image that looks usable.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

from tools.zfsvm import config
from tools.zfsvm.errors import HarnessError

IMAGE_FILES = ("rootfs.img", "vmlinuz", "initrd.img", "image.json")
HOST_TOOLS = {
    "qemu-system-x86_64": "qemu-system-x86",
    "debootstrap": "debootstrap",
    "mkfs.ext4": "e2fsprogs",
}


def log(msg: str) -> None:
    print(f"[zfsvm] {msg}", file=sys.stderr, flush=True)


def is_built(path: Path | None = None) -> bool:
    path = path or config.image_dir()
    return all((path / name).is_file() for name in IMAGE_FILES)


def openzfs_version(path: Path) -> str:
    """The zfsutils-linux package version a built image holds (its image.json)."""
    return str(json.loads((path / "image.json").read_text()).get("zfs", "unknown"))


def missing_tools(names) -> list[str]:
    return [n for n in names if shutil.which(n) is None]


def require_tools(names) -> None:
    missing = missing_tools(names)
    if missing:
        pkgs = " ".join(sorted({HOST_TOOLS[n] for n in missing}))
        raise HarnessError(
            f"missing {', '.join(missing)}: install with `apt-get install -y {pkgs}`"
        )


def require_root(what: str) -> None:
    if os.geteuid() != 0:
        raise HarnessError(f"{what} needs root (debootstrap, chroot, mounts): run it as root")


def require_free_space(path: Path, need: int = config.MIN_FREE_BYTES) -> None:
    path.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(path).free
    if free < need:
        raise HarnessError(
            f"{path} has {free / 1e9:.1f} GB free, the VM image build needs {need / 1e9:.0f} GB:"
            " free some space or point ZVERIFY_VM_CACHE at a larger filesystem"
        )


def require_mirror(url: str) -> None:
    release = f"{url}/dists/{config.SUITE}/Release"
    try:
        with urllib.request.urlopen(release, timeout=30) as resp:
            resp.read(64)
    except OSError as exc:
        raise HarnessError(
            f"Debian mirror unreachable ({release}: {exc}); "
            "check the network or set ZVERIFY_VM_MIRROR"
        ) from exc


@contextmanager
def build_lock(what: str = ""):
    """Exclusive lock on one thing in the cache, so two sessions never build it at once; one
    lock per image, so that waiting for one release never waits for another's build."""
    root = config.cache_root()
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f".lock{what and '-' + what}", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        yield


def _script_env(release: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        ZV_SUITE=config.SUITE,
        ZV_MIRROR=config.mirror(),
        ZV_BASE_PACKAGES=config.BASE_PACKAGES,
        ZV_KERNEL_PACKAGES=config.KERNEL_PACKAGES,
        ZV_ZFS_PACKAGES=config.zfs_packages(release),
        ZV_ZFS_SUITE=config.release_suite(release),
        ZV_INIT=str(config.INIT_SCRIPT),
        DEBIAN_FRONTEND="noninteractive",
    )
    return env


def _run_build_script(workdir: Path, outdir: Path, release: str) -> None:
    """Run the build script; progress lines go to stderr, everything to build.log."""
    logpath = workdir / "build.log"
    cmd = ["bash", str(config.BUILD_SCRIPT), str(workdir), str(outdir)]
    with open(logpath, "w", buffering=1) as logfh:
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=_script_env(release),
            text=True,
            errors="replace",
        )
        for line in proc.stdout:
            logfh.write(line)
            if line.startswith("[zvbuild"):
                sys.stderr.write(line)
        rc = proc.wait()
    if rc != 0:
        tail = "".join(logpath.read_text(errors="replace").splitlines(True)[-40:])
        raise HarnessError(f"image build failed (exit {rc}); last lines of {logpath}:\n{tail}")


def build_image(release: str = config.DEFAULT_RELEASE, force: bool = False) -> Path:
    """Build the release's image unless a complete one is cached; return its directory."""
    final = config.image_dir(release)
    if is_built(final) and not force:
        log(f"image cached: {final}")
        return final
    require_root("building the VM image")
    require_tools(HOST_TOOLS)
    require_free_space(config.cache_root())
    require_mirror(config.mirror())
    with build_lock(final.name):
        if is_built(final) and not force:
            return final
        return _build_locked(final, release)


def _build_locked(final: Path, release: str) -> Path:
    work = final.with_name(final.name + ".build")
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    out = work / "out"
    start = time.monotonic()
    log(f"building the OpenZFS {release} VM image {final.name} in {work} (8-15 min on 2 cores)")
    _run_build_script(work, out, release)
    shutil.copy2(work / "build.log", out / "build.log")
    if final.exists():
        shutil.rmtree(final)
    out.rename(final)
    shutil.rmtree(work, ignore_errors=True)
    log(f"image built in {time.monotonic() - start:.0f}s: {final}")
    return final


def ensure_pydeps() -> Path:
    """``pip install --target`` the guest's Python deps once; return the directory."""
    target = config.pydeps_dir()
    if (target / ".complete").exists():
        return target
    with build_lock():
        if (target / ".complete").exists():
            return target
        tmp = target.with_name(target.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        start = time.monotonic()
        log(f"pip install --target {target} {' '.join(config.pydeps())}")
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "-q",
                "--disable-pip-version-check",
                "--no-input",
                "--target",
                str(tmp),
                *config.pydeps(),
            ],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            raise HarnessError(
                f"pip install of the guest's Python deps failed:\n{proc.stderr[-3000:]}"
            )
        (tmp / ".complete").touch()
        shutil.rmtree(target, ignore_errors=True)
        tmp.rename(target)
        log(f"pydeps ready in {time.monotonic() - start:.0f}s")
    return target
