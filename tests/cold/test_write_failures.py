"""The installed `zverify cold send` (and prune, clean) when the archive's filesystem fills up
or fails: exit 2 with one line naming the file and the error, and never a file that any
command (check, restore, prune) counts as a stream.

ENOSPC comes from real small filesystems (a tmpfs, a loop-mounted ext4: root needed); EIO
from coldshim.c (LD_PRELOAD) at each call that publishes a file: a write, the fsync, the
close, the rename, the directory's fsync; and at the unlink of prune and clean.
"""

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.cli.console import needs_installed_command
from tests.cold.standin import STREAMS, ZfsStandIn, run
from zverify.cold.store import lock

pytestmark = needs_installed_command
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="mounting a filesystem needs root")

FULL_S1 = "zv%2Ffs@s1.zfsfull"
INC = "zv%2Ffs@s1-@s2.zfsinc"
INC_BYTES = (STREAMS / "incr_fs_s1_s2.zstream").stat().st_size
PAGE = 4096


@pytest.fixture
def zfs(tmp_path: Path) -> ZfsStandIn:
    standin = ZfsStandIn(tmp_path / "standin")
    standin.source("zv/fs", {"s1": "full_fs_s1.zstream", "s2": "incr_fs_s1_s2.zstream"})
    return standin


def seed(cold: Path) -> Path:
    cold.mkdir()
    shutil.copy(STREAMS / "full_fs_s1.zstream", cold / FULL_S1)
    return cold


def send(zfs: ZfsStandIn, cold: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return run(
        "cold", "send", "--no-progress", "--no-intermediate", "zv/fs", str(cold), env=zfs.env(**env)
    )


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("zverify: "), done.stderr
    return lines[0]


def entries(cold: Path) -> list[str]:
    return sorted(p.name for p in cold.iterdir() if p.name not in lock.FILES)


def assert_archive_holds(zfs: ZfsStandIn, cold: Path, snapshots: list[str]) -> None:
    """No leftover, and check, restore and prune all see exactly these snapshots."""
    assert not [n for n in entries(cold) if n.endswith(".partial")], entries(cold)
    env = zfs.env()
    checked = run("cold", "check", "--json", str(cold), env=env)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    (ds,) = json.loads(checked.stdout)["datasets"]
    assert [r["snapshot"] for r in ds["restorable"]] == snapshots
    plan = run("cold", "restore", "--dry-run", str(cold), "tank/r", env=env)
    assert plan.returncode == 0 and f"zv/fs@{snapshots[-1]} " in plan.stdout, plan.stdout
    pruned = run("cold", "prune", "--json", str(cold), env=env)
    assert pruned.returncode == 0, pruned.stdout + pruned.stderr
    assert all(d["remove"] == [] for d in json.loads(pruned.stdout)["datasets"])


@contextmanager
def small_filesystem(where: Path, kind: str) -> Iterator[Path]:
    """A 1 MiB tmpfs or a 2 MiB ext4 (no blocks reserved for root) mounted at where."""
    where.mkdir()
    if kind == "tmpfs":
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(where)], check=True)
    else:
        image = where.with_suffix(".img")
        subprocess.run(["truncate", "-s", "2M", str(image)], check=True)
        subprocess.run(["mkfs.ext4", "-q", "-F", "-m", "0", str(image)], check=True)
        subprocess.run(["mount", "-o", "loop", str(image), str(where)], check=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=True)


def leave_free(mount: Path, free: int) -> None:
    """Fill the filesystem (outside the archive) until free bytes are left."""
    st = os.statvfs(mount)
    have = st.f_bavail * st.f_frsize
    assert have > free, f"only {have} bytes free on {mount}"
    with open(mount / "filler", "wb") as f:
        f.write(b"\0" * (have - free))
        f.flush()
        os.fsync(f.fileno())
    st = os.statvfs(mount)
    assert st.f_bavail * st.f_frsize == free


@needs_root
@pytest.mark.parametrize("kind", ["tmpfs", "ext4"])
def test_a_full_filesystem_fails_the_send_and_leaves_no_stream(
    tmp_path: Path, zfs: ZfsStandIn, kind: str
) -> None:
    with small_filesystem(tmp_path / "small", kind) as mount:
        cold = seed(mount / "cold")
        leave_free(mount, 16 * PAGE)  # the incremental needs 38 pages
        line = one_line(send(zfs, cold))
        assert re.fullmatch(
            rf"zverify: writing {re.escape(str(cold / INC))}\.partial failed: could not pass "
            r"the stream on after \d+ verified bytes: No space left on device",
            line,
        ), line
        assert entries(cold) == [FULL_S1]
        assert_archive_holds(zfs, cold, ["s1"])
        (mount / "filler").unlink()  # space again: the same send succeeds
        assert send(zfs, cold).returncode == 0
        assert_archive_holds(zfs, cold, ["s1", "s2"])


@needs_root
def test_a_full_filesystem_after_the_stream_costs_only_its_sidecar(
    tmp_path: Path, zfs: ZfsStandIn
) -> None:
    with small_filesystem(tmp_path / "small", "tmpfs") as mount:
        cold = seed(mount / "cold")
        leave_free(mount, -(-INC_BYTES // PAGE) * PAGE)  # the stream fits, its sidecar not
        line = one_line(send(zfs, cold))
        assert line == (
            f"zverify: archived {INC} ({INC_BYTES:,} bytes, proven) and kept by "
            f"zv/fs#zverify-s2, but its sidecar was not written: writing {cold / INC}.json"
            ".partial failed: No space left on device"
        )
        assert entries(cold) == [INC, FULL_S1]  # the stream is whole: it counts
        assert_archive_holds(zfs, cold, ["s1", "s2"])


@pytest.mark.parametrize(
    ("op", "doing"),
    [
        ("write", "writing"),
        ("fsync", "fsync of"),
        ("close", "closing"),
        ("rename", "renaming into place"),
    ],
)
def test_an_io_error_before_the_rename_leaves_no_stream(
    tmp_path: Path, zfs: ZfsStandIn, coldshim: Path, op: str, doing: str
) -> None:
    cold = seed(tmp_path / "cold")
    done = send(zfs, cold, LD_PRELOAD=str(coldshim), ZVCOLD_FAIL=f"{op}:{INC}.partial")
    line = one_line(done)
    assert line.startswith(f"zverify: {doing} {cold / INC}.partial failed: "), line
    assert line.endswith("Input/output error"), line
    assert entries(cold) == [FULL_S1]
    assert_archive_holds(zfs, cold, ["s1"])


@pytest.mark.parametrize(
    ("fail", "says"),
    [
        ("fsync:/cold$", ", but the fsync of the directory {cold} failed: Input/output error"),
        (
            "fsync:.json.partial",
            " and kept by zv/fs#zverify-s2, but its sidecar was not written: fsync of "
            "{cold}/" + INC + ".json.partial failed: Input/output error",
        ),
        (
            "write:.json.partial",
            " and kept by zv/fs#zverify-s2, but its sidecar was not written: writing "
            "{cold}/" + INC + ".json.partial failed: Input/output error",
        ),
    ],
)
def test_an_io_error_after_the_rename_says_the_stream_is_archived(
    tmp_path: Path, zfs: ZfsStandIn, coldshim: Path, fail: str, says: str
) -> None:
    cold = seed(tmp_path / "cold")
    line = one_line(send(zfs, cold, LD_PRELOAD=str(coldshim), ZVCOLD_FAIL=fail))
    assert line == f"zverify: archived {INC} ({INC_BYTES:,} bytes, proven)" + says.format(cold=cold)
    assert INC in entries(cold)  # complete and fsynced: it is a stream, and check says so
    assert_archive_holds(zfs, cold, ["s1", "s2"])


def test_a_failing_unlink_stops_prune_and_clean_saying_what_went(
    tmp_path: Path, zfs: ZfsStandIn, coldshim: Path
) -> None:
    cold = tmp_path / "cold"
    cold.mkdir()
    files = {
        "zv%2Ffs@s1.zfsfull": "full_fs_s1.zstream",  # the old chain's full: it goes
        INC: "incr_fs_s1_s2.zstream",
        "replicated-s2.zstream": "replicate_R_fs_s2.zstream",
    }
    for name, fixture in files.items():
        shutil.copy(STREAMS / fixture, cold / name)
        (cold / f"{name}.json").write_text("{}\n")
    env = zfs.env(LD_PRELOAD=str(coldshim), ZVCOLD_FAIL=f"unlink:{FULL_S1}$")
    line = one_line(run("cold", "prune", "--yes", "--no-progress", str(cold), env=env))
    assert line == (
        f"zverify: deleting {FULL_S1} failed: Input/output error; nothing after it was deleted"
        f" (deleted so far: {INC})"  # the old chain's incremental goes first
    )
    assert FULL_S1 in entries(cold) and f"{FULL_S1}.json" not in entries(cold)  # sidecar first
    assert run("cold", "check", "--no-progress", str(cold), env=zfs.env()).returncode == 0
    assert run("cold", "prune", "--yes", "--no-progress", str(cold), env=zfs.env()).returncode == 0
    assert FULL_S1 not in entries(cold)

    (cold / "x.zfsfull.partial").write_bytes(b"left by a killed send")
    env = zfs.env(LD_PRELOAD=str(coldshim), ZVCOLD_FAIL="unlink:x.zfsfull.partial")
    line = one_line(run("cold", "clean", "--yes", str(cold), env=env))
    assert line == "zverify: removing x.zfsfull.partial failed: Input/output error"
    assert "x.zfsfull.partial" in entries(cold)
