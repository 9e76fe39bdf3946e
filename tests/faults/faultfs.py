"""Build and mount faultfs.c: a FUSE filesystem that mirrors a directory and fails chosen
reads, listings, xattr reads, writes, flushes and fsyncs like a failing device.

    with faultfs.mount(backing, "read /data/big 5242880 EIO") as mnt:
        run zverify on mnt.path; mnt.fired() says which faults were injected

The faults of a mount are given when it is mounted (`OP GLOB [N] ERRNO`, see faultfs.c) and
stay for its life.  The filesystem runs in the foreground as a child process of the test
run; unmounting ends it, and one that does not end is killed by its own pid.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

SOURCE = Path(__file__).with_name("faultfs.c")
CFLAGS = ["-O2", "-Wall", "-Wextra", "-Werror"]
MOUNT_TIMEOUT = 10.0  # seconds for the mount to appear, and for the daemon to end after it


class Unavailable(Exception):
    """FUSE cannot be used here (no /dev/fuse, no compiler, no libfuse3-dev, mount refused):
    the reason, for a skip."""


def fuse_flags() -> tuple[list[str], list[str]]:
    """Compiler and linker flags for libfuse3, from pkg-config or the Debian paths."""
    pkg = shutil.which("pkg-config")
    if pkg:
        cflags = subprocess.run([pkg, "--cflags", "fuse3"], capture_output=True, text=True)
        libs = subprocess.run([pkg, "--libs", "fuse3"], capture_output=True, text=True)
        if cflags.returncode == 0 and libs.returncode == 0:
            return cflags.stdout.split(), libs.stdout.split()
    if Path("/usr/include/fuse3/fuse.h").exists():
        return ["-I/usr/include/fuse3"], ["-lfuse3", "-lpthread"]
    raise Unavailable("libfuse3-dev is not installed (scripts/setup.sh installs it)")


def build(out_dir: Path) -> Path:
    """Compile faultfs.c into out_dir; Unavailable when it cannot be built here, an
    AssertionError when it does not build cleanly (a bug in the source, not a skip)."""
    if not Path("/dev/fuse").exists():
        raise Unavailable("/dev/fuse is missing: no FUSE in this kernel or container")
    gcc = shutil.which("gcc")
    if gcc is None:
        raise Unavailable("gcc not found: cannot build the FUSE fault filesystem")
    cflags, libs = fuse_flags()
    out = out_dir / "faultfs"
    built = subprocess.run(
        [gcc, *CFLAGS, *cflags, "-o", str(out), str(SOURCE), *libs],
        capture_output=True,
        text=True,
        check=False,
    )
    assert built.returncode == 0, f"faultfs.c does not build cleanly:\n{built.stderr}"
    return out


def mounted(path: Path) -> bool:
    """Whether a FUSE mount sits at path (mountinfo, not a stat that would ask the mount)."""
    target = str(path).replace(" ", "\\040")
    with open("/proc/self/mountinfo") as info:
        return any(
            line.split()[4] == target and " - fuse" in line for line in info.read().splitlines()
        )


@dataclass
class Mount:
    path: Path
    log: Path

    def fired(self) -> list[str]:
        """'OP PATH N ERRNO' for each fault injected so far."""
        if not self.log.exists():
            return []
        return [line.removeprefix("fired ") for line in self.log.read_text().splitlines()]


@dataclass
class FaultFS:
    binary: Path
    work: Path  # mount points, logs and the daemon's output
    _ids: Iterator[int] = field(default_factory=itertools.count)

    @contextlib.contextmanager
    def mount(self, backing: Path, *faults: str) -> Iterator[Mount]:
        n = next(self._ids)
        where = self.work / f"m{n}"
        where.mkdir()
        mnt = Mount(where / "mnt", where / "fired.log")
        mnt.path.mkdir()
        argv = [str(self.binary), "--log", str(mnt.log)]
        for fault in faults:
            argv += ["--fault", fault]
        argv += [str(backing), str(mnt.path)]
        # the daemon is no subject of any test: keep sanitizer runtimes out of it
        env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
        with open(where / "daemon.out", "wb") as out:
            daemon = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env)
        try:
            self._wait_mounted(daemon, mnt.path, where / "daemon.out")
            yield mnt
        finally:
            self._unmount(daemon, mnt.path)

    @staticmethod
    def _wait_mounted(daemon: subprocess.Popen[bytes], path: Path, output: Path) -> None:
        deadline = time.monotonic() + MOUNT_TIMEOUT
        while not mounted(path):
            if daemon.poll() is not None:
                said = output.read_text(errors="replace").strip()
                raise Unavailable(f"faultfs could not mount (exit {daemon.returncode}): {said}")
            if time.monotonic() > deadline:
                raise Unavailable(f"faultfs did not mount within {MOUNT_TIMEOUT:.0f} s")
            time.sleep(0.01)

    @staticmethod
    def _unmount(daemon: subprocess.Popen[bytes], path: Path) -> None:
        if mounted(path):
            tool = shutil.which("fusermount3")
            argv = [tool, "-u", "-z", str(path)] if tool else ["umount", "-l", str(path)]
            subprocess.run(argv, capture_output=True, check=False)
        try:
            daemon.wait(timeout=MOUNT_TIMEOUT)
        except subprocess.TimeoutExpired:
            daemon.kill()  # our own child, by its pid
            daemon.wait()
            raise AssertionError(f"faultfs at {path} did not end when unmounted") from None


def probe(binary: Path, work: Path) -> FaultFS:
    """A FaultFS after one mount of an empty directory succeeded: Unavailable if the kernel
    or the container refuses FUSE mounts."""
    fs = FaultFS(binary, work)
    empty = work / "probe-backing"
    empty.mkdir()
    (empty / "x").write_bytes(b"x")
    with fs.mount(empty) as mnt:
        if (mnt.path / "x").read_bytes() != b"x":
            raise Unavailable("faultfs mounted, but does not show its backing directory")
    return fs
