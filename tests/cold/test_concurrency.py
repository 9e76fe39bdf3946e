"""Two real processes of the installed `zverify cold ...` on one archive (zverify.cold.store.lock).

A stand-in `zfs` (standin.py) holds a send or a receive at a gate, so that the first command
is in the middle of its work, holding its lock, while the second one runs: a second writer
is refused at once with one line naming the archive and the first command's pid (exit 2), or
waits with --wait; check and restore read beside a send; prune and clean never delete while
anybody reads, and nobody reads while they delete.
"""

import json
import os
import select
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.console import needs_installed_command
from tests.cold.standin import STREAMS, ZfsStandIn, end_group, finish, plain_env, run, start, valid
from zverify.cold.store import lock

pytestmark = needs_installed_command

FULL_S1 = "zv%2Ffs@s1.zfsfull"
INC_S1_S2 = "zv%2Ffs@s1-@s2.zfsinc"
# a prunable archive (as in test_prune.py): the old full goes, the -R package of @s2 stays
OLD_FULL, NEW_FULL, SHARED_INC = FULL_S1, "replicated-s2.zstream", "zv%2Ffs@s2-@s3.zfsinc"
PRUNABLE = {
    OLD_FULL: "full_fs_s1.zstream",
    INC_S1_S2: "incr_fs_s1_s2.zstream",
    SHARED_INC: "incr_empty_fs_s2_s3.zstream",
    NEW_FULL: "replicate_R_fs_s2.zstream",
}


@pytest.fixture
def zfs(tmp_path: Path) -> Iterator[ZfsStandIn]:
    standin = ZfsStandIn(tmp_path / "standin")
    standin.source("zv/fs", {"s1": "full_fs_s1.zstream", "s2": "incr_fs_s1_s2.zstream"})
    yield standin
    standin.release()  # nothing stays blocked at a gate after the test


def archive(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "cold"
    root.mkdir()
    for name, fixture in files.items():
        shutil.copy(STREAMS / fixture, root / name)
    return root


def listing(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.name not in lock.FILES)


def one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


def test_a_running_send_refuses_writers_and_lets_readers_read(
    tmp_path: Path, zfs: ZfsStandIn
) -> None:
    cold = archive(tmp_path, {FULL_S1: "full_fs_s1.zstream"})
    env = zfs.env()
    zfs.hold("send")
    first = start("cold", "send", "--no-progress", "--no-intermediate", "zv/fs", str(cold), env=env)
    try:
        zfs.wait_started("send")
        partial = cold / f"{INC_S1_S2}.partial"
        assert partial.exists()  # made before `zfs send` starts
        # writers: refused at once, one line naming the archive and the running send
        for args in (
            ["send", "--no-progress", "zv/fs", str(cold)],
            ["prune", "--yes", str(cold)],
            ["clean", "--yes", str(cold)],
        ):
            began = time.monotonic()
            done = run("cold", *args, env=env)
            assert done.returncode == 2, (args, done.stdout, done.stderr)
            line = one_line(done.stderr)
            assert f"archive {cold} is busy: pid {first.pid} (zverify cold send" in line, line
            assert "is writing to it; nothing was done (--wait SECONDS waits for it)" in line
            assert time.monotonic() - began < 10
        assert partial.exists()
        # readers: the archive as published; the send's file is in progress, not counted
        done = run("cold", "check", "--json", str(cold), env=env)
        assert done.returncode == 0, done.stdout + done.stderr
        doc = json.loads(done.stdout)
        valid("cold-check.schema.json", doc)
        (ds,) = doc["datasets"]
        assert [r["snapshot"] for r in ds["restorable"]] == ["s1"]
        (busy,) = [f for f in doc["files"] if f["kind"] == "partial"]
        assert busy["file"] == partial.name and busy["problems"] == []
        assert f"pid {first.pid}" in busy["in_progress"]
        text = run("cold", "check", str(cold), env=env)
        assert text.returncode == 0 and "1 file(s) of a send in progress not counted" in text.stdout
        plan = run("cold", "restore", "--dry-run", str(cold), "tank/r", env=env)
        assert plan.returncode == 0 and FULL_S1 in plan.stdout and INC_S1_S2 not in plan.stdout
        dry = run("cold", "clean", str(cold), env=env)
        assert dry.returncode == 0 and f"in progress {partial.name}" in dry.stdout, dry.stdout
        assert "0 leftover(s)" in dry.stdout
    finally:
        zfs.release()
        code, out, err = finish(first)
        end_group(first)
    assert code == 0, out + err
    assert listing(cold) == sorted([FULL_S1, INC_S1_S2, f"{INC_S1_S2}.json"])
    after = run("cold", "check", str(cold), env=env)
    assert after.returncode == 0 and "in progress" not in after.stdout


def test_wait_waits_for_the_writer_or_gives_up_saying_so(tmp_path: Path, zfs: ZfsStandIn) -> None:
    cold = archive(tmp_path, {FULL_S1: "full_fs_s1.zstream"})
    env = zfs.env()
    zfs.hold("send")
    first = start("cold", "send", "--no-progress", "--no-intermediate", "zv/fs", str(cold), env=env)
    try:
        zfs.wait_started("send")
        began = time.monotonic()
        gave_up = run("cold", "send", "--no-progress", "--wait", "1", "zv/fs", str(cold), env=env)
        assert 1 <= time.monotonic() - began < 10
        assert gave_up.returncode == 2
        waiting, refused = gave_up.stderr.strip().splitlines()
        assert waiting.startswith(f"zverify: waiting up to 1 s: archive {cold} is busy: pid ")
        assert refused.endswith("is writing to it; nothing was done"), refused
        second = start("cold", "send", "--no-progress", "--wait", "60", "zv/fs", str(cold), env=env)
        # it says it waits once it has found the lock taken: only then may the writer end
        assert second.stderr is not None
        said = select.select([second.stderr], [], [], 60)[0] and second.stderr.readline()
        assert said and said.startswith("zverify: waiting up to 60 s"), said
        assert second.poll() is None  # waiting
    finally:
        zfs.release()
        assert finish(first)[0] == 0
        end_group(first)
    code, out, err = finish(second)
    end_group(second)
    # it waited, then found the archive already holding @s2: nothing to send
    assert code == 0 and "nothing to send" in out, out + err


def test_prune_never_deletes_under_a_restore(tmp_path: Path, zfs: ZfsStandIn) -> None:
    cold = archive(tmp_path, PRUNABLE)
    env = zfs.env()
    zfs.hold("receive")
    restoring = start(
        "cold", "restore", "--no-progress", "--dataset", "zv/fs", str(cold), "tank/r", env=env
    )
    try:
        zfs.wait_started("receive")
        before = listing(cold)
        refused = run("cold", "prune", "--yes", str(cold), env=env)
        assert refused.returncode == 2, refused.stdout + refused.stderr
        line = one_line(refused.stderr)
        assert f"archive {cold} is being read by pid {restoring.pid} (zverify cold restore" in line
        assert line.endswith("nothing was deleted (--wait SECONDS waits for it)"), line
        assert listing(cold) == before
        # readers share: a check runs beside the restore, and so does a send (it only adds)
        assert run("cold", "check", "--no-progress", str(cold), env=env).returncode == 0
        # a prune that waits says so once, then deletes when the restore has finished
        waiting = start("cold", "prune", "--yes", "--wait", "60", str(cold), env=env)
        time.sleep(1)
        assert waiting.poll() is None and listing(cold) == before
    finally:
        zfs.release()
        code, out, err = finish(restoring)
        end_group(restoring)
    assert code == 0 and "restored tank/r@s3" in out, out + err
    code, out, err = finish(waiting)
    end_group(waiting)
    assert code == 0, out + err
    assert f"waiting up to 60 s: archive {cold} is being read by pid {restoring.pid}" in err
    assert OLD_FULL not in listing(cold) and NEW_FULL in listing(cold)


def test_nobody_reads_or_writes_while_a_prune_deletes(tmp_path: Path, zfs: ZfsStandIn) -> None:
    """prune --yes --trial-receive holds the archive exclusively from its proof to its last
    deletion; the stand-in receive of the trial keeps it there."""
    cold = archive(tmp_path, PRUNABLE)
    env = zfs.env()
    zfs.hold("receive")
    pruning = start("cold", "prune", "--yes", "--trial-receive", "tank/scratch", str(cold), env=env)
    try:
        zfs.wait_started("receive")
        for args in (
            ["check", str(cold)],
            ["scrub", str(cold)],
            ["restore", "--dry-run", "--dataset", "zv/fs", str(cold), "tank/r"],
            ["clean", str(cold)],
        ):
            done = run("cold", *args, env=env)
            assert done.returncode == 2, (args, done.stdout, done.stderr)
            line = one_line(done.stderr)
            assert f"archive {cold} is busy: pid {pruning.pid} (zverify cold prune" in line
            assert line.endswith(
                "is deleting from it; nothing was read (--wait SECONDS waits for it)"
            )
            assert done.stdout == ""
        sending = run("cold", "send", "--no-progress", "zv/fs", str(cold), env=env)
        assert sending.returncode == 2 and "is writing to it" in sending.stderr
    finally:
        zfs.release()
        code, out, err = finish(pruning)
        end_group(pruning)
    assert code == 0 and "deleted 2 file(s)" in out, out + err
    assert OLD_FULL not in listing(cold)


def test_a_killed_holder_leaves_no_lock_behind(tmp_path: Path, zfs: ZfsStandIn) -> None:
    cold = archive(tmp_path, {FULL_S1: "full_fs_s1.zstream"})
    env = zfs.env()
    zfs.hold("send")
    first = start("cold", "send", "--no-progress", "--no-intermediate", "zv/fs", str(cold), env=env)
    zfs.wait_started("send")
    first.kill()
    first.wait()
    end_group(first)
    partial = f"{INC_S1_S2}.partial"
    assert (cold / lock.WRITERS).exists()  # the kernel dropped the lock, the file stays
    done = run("cold", "check", "--json", str(cold), env=env)
    assert done.returncode == 1  # the leftover is a problem now, and named
    files = json.loads(done.stdout)["files"]
    assert [f["file"] for f in files] == [partial, FULL_S1]  # a lock file is no archive entry
    (left,) = [p for f in files for p in f["problems"]]
    assert left["file"] == partial and left["kind"] == "partial"
    assert "interrupted send" in left["message"]
    again = run("cold", "send", "--no-progress", "--no-intermediate", "zv/fs", str(cold), env=env)
    warning, refused = again.stderr.strip().splitlines()  # what check says, then why not
    assert again.returncode == 2 and warning.startswith(f"zverify: warning: partial {partial}")
    assert refused == f"zverify: {cold}/{partial} was left by an interrupted send: " + (
        f"`zverify cold clean --yes {cold}` removes it"
    )
    cleaned = run("cold", "clean", "--yes", str(cold), env=env)
    assert cleaned.returncode == 0 and f"removed {partial}" in cleaned.stdout
    zfs.release()
    assert (
        run(
            "cold", "send", "--no-progress", "--no-intermediate", "zv/fs", str(cold), env=env
        ).returncode
        == 0
    )
    assert run("cold", "check", "--no-progress", str(cold), env=env).returncode == 0


def test_lock_files_are_gone_after_each_command(tmp_path: Path, zfs: ZfsStandIn) -> None:
    cold = archive(tmp_path, {FULL_S1: "full_fs_s1.zstream"})
    env = zfs.env()
    for args in (
        ["check", str(cold)],
        ["send", "--no-progress", "--no-intermediate", "zv/fs", str(cold)],
        ["restore", "--dry-run", str(cold), "tank/r"],
        ["prune", "--yes", str(cold)],
        ["clean", "--yes", str(cold)],
    ):
        done = run("cold", *args, env=env)
        assert done.returncode == 0, (args, done.stdout, done.stderr)
        assert sorted(p.name for p in cold.iterdir()) == listing(cold), args


def test_a_read_only_archive_is_read_without_a_lock_and_never_written(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("mounting needs root")
    cold = tmp_path / "ro"
    cold.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(cold)], check=True)
    try:
        shutil.copy(STREAMS / "full_fs_s1.zstream", cold / FULL_S1)
        subprocess.run(["mount", "-o", "remount,ro", str(cold)], check=True)
        env = plain_env()
        checked = run("cold", "check", str(cold), env=env)
        assert checked.returncode == 0 and checked.stderr == "", checked.stderr
        plan = run("cold", "restore", "--dry-run", str(cold), "tank/r", env=env)
        assert plan.returncode == 0 and plan.stderr == ""
        for args in (["prune", "--yes", str(cold)], ["clean", "--yes", str(cold)]):
            done = run("cold", *args, env=env)
            assert done.returncode == 2 and done.stdout == ""
            assert one_line(done.stderr) == (
                f"zverify: cannot open the lock file {cold}/{lock.WRITERS}: Read-only file system"
            )
    finally:
        subprocess.run(["umount", str(cold)], check=True)


def test_a_scrub_beside_a_send_reads_what_is_there_and_both_record(
    tmp_path: Path, zfs: ZfsStandIn
) -> None:
    """A scrub is a reader: it runs beside a send (which only adds), never reads the send's
    .partial, and both append to one ledger whose chain stays intact."""
    cold = archive(tmp_path, {FULL_S1: "full_fs_s1.zstream"})
    env = zfs.env()
    assert run("cold", "scrub", str(cold), env=env).returncode == 0  # the archive's ledger
    zfs.hold("send")
    sending = start(
        "cold", "send", "--no-progress", "--no-intermediate", "zv/fs", str(cold), env=env
    )
    try:
        zfs.wait_started("send")
        scrubbed = run("cold", "scrub", "--json", str(cold), env=env)
        assert scrubbed.returncode == 0, scrubbed.stdout + scrubbed.stderr
        assert [f["file"] for f in json.loads(scrubbed.stdout)["files"]] == [FULL_S1]
    finally:
        zfs.release()
        code, out, err = finish(sending)
        end_group(sending)
    assert code == 0, out + err
    checked = run("cold", "check", str(cold), env=env)
    assert checked.returncode == 0 and "chain intact" in checked.stdout, checked.stdout
    records = [json.loads(x) for x in (cold / ".zverify-ledger.jsonl").read_text().splitlines()]
    assert {r["method"] for r in records} == {"scrub", "send", "check"}
    assert INC_S1_S2 in {r["file"] for r in records if r["method"] == "send"}
