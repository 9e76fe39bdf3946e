"""One meaning per flag across every cold command (issue 29, deliverable 4), through the
installed console script: -q prints the verdict line only, -n/--dry-run writes and deletes
nothing, --yes acts and contradicts -n, --json validates against its schema, and repair's
old `--yes` still removes the damaged originals, with a deprecation line.  `zfs` is the
stand-in of tests/cold/standin.py (no ZFS runs here); everything else is real: fixture
streams, par2, the files."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.cold.standin import STREAMS, ZfsStandIn, plain_env, run, valid
from zverify.cold.store import lock

FULL = "zv%2Ffs@s1.zfsfull"
INC = "zv%2Ffs@s1-@s2.zfsinc"
FIXTURE = {FULL: "full_fs_s1.zstream", INC: "incr_fs_s1_s2.zstream"}


def archive(tmp_path: Path, parity: bool = False) -> Path:
    root = tmp_path / "cold"
    root.mkdir()
    for name, fixture in FIXTURE.items():
        shutil.copy(STREAMS / fixture, root / name)
    if parity:
        done = run("cold", "parity", "--no-progress", str(root), env=plain_env())
        assert done.returncode == 0, done.stdout + done.stderr
    return root


def state(root: Path) -> dict[str, tuple[int, int, bytes]]:
    """Every entry but the lock files: size, mtime and the first bytes (what a write or a
    delete would change)."""
    found = {}
    for name in sorted(os.listdir(root)):
        if name in lock.FILES:
            continue
        st = (root / name).lstat()
        head = (root / name).read_bytes()[:4096] if (root / name).is_file() else b""
        found[name] = (st.st_size, st.st_mtime_ns, head)
    return found


def damage(path: Path, at: int = 1000) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 1
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(
    ("command", "expect"),
    [
        (["check"], 0),
        (["prune"], 0),
        (["clean"], 0),
        (["parity", "-n"], 0),
        (["repair"], 0),
    ],
)
def test_quiet_is_the_verdict_line_only(tmp_path: Path, command: list[str], expect: int) -> None:
    root = archive(tmp_path)
    full = run("cold", *command, "--no-progress", str(root), env=plain_env())
    quiet = run("cold", *command, "-q", str(root), env=plain_env())
    assert (full.returncode, quiet.returncode) == (expect, expect), quiet.stderr
    assert len(quiet.stdout.splitlines()) == 1, quiet.stdout
    assert quiet.stdout == full.stdout.splitlines(keepends=True)[-1]  # the same verdict
    assert quiet.stderr == ""


def test_quiet_verdict_of_a_damaged_archive(tmp_path: Path) -> None:
    root = archive(tmp_path)
    damage(root / INC)
    done = run("cold", "check", "-q", str(root), env=plain_env())
    assert done.returncode == 1 and done.stdout.startswith("PROBLEMS: 1 in files (damaged 1)")
    assert len(done.stdout.splitlines()) == 1


def test_dry_runs_write_and_delete_nothing(tmp_path: Path) -> None:
    root = archive(tmp_path, parity=True)
    damage(root / FULL)
    (root / f"{INC}.partial").write_bytes(b"left by a killed send")
    (root / "zv%2Ffs@s0.zfsfull.par2").write_bytes(b"parity of nothing here")
    before = state(root)
    for command in (
        ["parity", "-n"],
        ["repair", "-n"],
        ["repair", "--dry-run", "--remove-damaged"],
        ["prune", "-n"],
        ["clean", "-n"],
        ["clean"],
    ):
        done = run("cold", *command, "--no-progress", str(root), env=plain_env())
        assert done.returncode in (0, 1), done.stdout + done.stderr
        assert state(root) == before, command
    repair = run("cold", "repair", "-n", "--json", str(root), env=plain_env())
    valid("cold-repair.schema.json", json.loads(repair.stdout))
    assert json.loads(repair.stdout)["repairs"][0]["status"] == "repairable"
    parity = run("cold", "parity", "-n", "--json", str(root), env=plain_env())
    doc = json.loads(parity.stdout)
    valid("cold-parity.schema.json", doc)
    assert parity.returncode == 1 and {s["status"] for s in doc["streams"]} == {"left", "kept"}


@pytest.mark.parametrize("command", ["prune", "clean"])
def test_yes_and_dry_run_contradict(tmp_path: Path, command: str) -> None:
    root = archive(tmp_path)
    (root / f"{INC}.partial").write_bytes(b"left by a killed send")
    before = state(root)
    done = run("cold", command, "--yes", "-n", str(root), env=plain_env())
    assert done.returncode == 2 and done.stdout == ""
    assert len(done.stderr.splitlines()) == 1 and "--dry-run" in done.stderr
    assert "Traceback" not in done.stderr and state(root) == before


def test_repair_yes_is_deprecated_but_still_removes_the_damaged(tmp_path: Path) -> None:
    root = archive(tmp_path, parity=True)
    damage(root / FULL)
    first = run("cold", "repair", "--no-progress", str(root), env=plain_env())
    assert first.returncode == 0 and (root / f"{FULL}.damaged").exists(), first.stdout
    done = run("cold", "repair", "--yes", "--no-progress", str(root), env=plain_env())
    assert done.returncode == 0, done.stdout + done.stderr
    assert not (root / f"{FULL}.damaged").exists()
    assert "deprecated" in done.stderr and "--remove-damaged" in done.stderr


def test_restore_json_and_dry_run(tmp_path: Path) -> None:
    zfs = ZfsStandIn(tmp_path / "standin")
    root = archive(tmp_path)
    before = state(root)
    done = run("cold", "restore", "-n", "--json", str(root), "tank/r", env=zfs.env())
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    valid("cold-restore.schema.json", doc)
    assert doc["files"] == [FULL, INC] and doc["restored"] is None and doc["dry_run"] is True
    assert not (zfs.state / "received").exists() and state(root) == before
    done = run("cold", "restore", "--json", "--no-progress", str(root), "tank/r", env=zfs.env())
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    valid("cold-restore.schema.json", doc)
    assert doc["restored"] == "tank/r@s2" and doc["snapshot"]["name"] == "s2"
    quiet = run("cold", "restore", "-q", str(root), "tank/q", env=zfs.env())
    assert quiet.returncode == 0 and quiet.stdout.startswith("restored tank/q@s2 (guid")
    assert len(quiet.stdout.splitlines()) == 1


def test_send_dry_run_plans_with_the_estimate(tmp_path: Path) -> None:
    zfs = ZfsStandIn(tmp_path / "standin")
    zfs.source("zv/fs", {"s1": "full_fs_s1.zstream", "s2": "incr_fs_s1_s2.zstream"})
    root = tmp_path / "cold"
    root.mkdir()
    done = run("cold", "send", "-n", "--json", "zv/fs", str(root), env=zfs.env())
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    valid("cold-send.schema.json", doc)
    assert doc["dry_run"] is True and doc["sent"] is None
    ((planned),) = doc["planned"]
    fixture = (STREAMS / "incr_fs_s1_s2.zstream", STREAMS / "full_fs_s1.zstream")
    assert planned["estimated_bytes"] in {p.stat().st_size for p in fixture}
    assert planned["command"][:2] == ["zfs", "send"] and "-nvP" not in planned["command"]
    assert set(os.listdir(root)) <= set(lock.FILES)  # nothing written
    assert not (zfs.state / "started-send").exists()  # and nothing sent
    assert (zfs.state / "dry-runs").read_text().startswith("send -nvP")
    text = run("cold", "send", "-n", "zv/fs", str(root), env=zfs.env())
    assert text.returncode == 0 and text.stdout.splitlines()[-1].startswith("dry run: nothing sent")
    quiet = run("cold", "send", "-n", "-q", "zv/fs", str(root), env=zfs.env())
    assert quiet.returncode == 0 and quiet.stdout == text.stdout.splitlines(keepends=True)[-1]


def test_clean_says_when_there_is_nothing_to_remove(tmp_path: Path) -> None:
    root = archive(tmp_path)
    done = run("cold", "clean", "-q", "--yes", str(root), env=plain_env())
    assert (done.returncode, done.stdout) == (0, "nothing to remove\n")
    (root / f"{INC}.partial").write_bytes(b"left by a killed send")
    done = run("cold", "clean", "-q", "--yes", str(root), env=plain_env())
    assert (done.returncode, done.stdout) == (0, "removed 1 leftover(s)\n")
