"""`zverify cutover` as scripts run it (the installed console script), against a stand-in
zfs for what real ZFS cannot do on demand: vanish, fail, or change during the check."""

import json
import sys
from pathlib import Path

import pytest

from tests.cli.console import zverify
from tests.cold import fakezfs

STANDIN = Path(__file__).with_name("standin_zfs.py")
FS = {"type": ["filesystem", "-"], "compression": ["lz4", "inherited from p"],
      "mounted": ["yes", "-"], "receive_resume_token": ["-", "default"]}  # fmt: skip
STATE = {
    "datasets": {"p/a": FS, "q/a": {**FS, "compression": ["lz4", "inherited from q"]}},
    "snapshots": {"p/a": [["s1", 111, 10, 0]], "q/a": [["s1", 111, 4, 0]]},
    "written": {"p/a@s1": 0, "q/a@s1": 0},
}


@pytest.fixture
def standin(tmp_path, monkeypatch):
    def install(state: dict) -> None:
        path = tmp_path / "state.json"
        path.write_text(json.dumps(state))
        monkeypatch.setenv("ZV_STANDIN_STATE", str(path))
        fakezfs.install(monkeypatch, tmp_path, f'exec {sys.executable} {STANDIN} "$@"\n')
        zpool = tmp_path / "bin" / "zpool"
        zpool.write_text(f'#!/bin/sh\necho "$*" >> {tmp_path}/zpool.log\n')
        zpool.chmod(0o755)

    return install


def test_a_replica_with_the_latest_snapshot_and_nothing_written_is_ready(standin):
    standin(STATE)
    r = zverify("cutover", "--json", "p/a", "q/a")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["ready"] is True
    assert doc["datasets"][0]["latest_common"] == {"name": "s1", "guid": "111", "dst_name": "s1"}


def test_both_pools_are_synced_before_written_is_read_and_again_at_the_end(standin, tmp_path):
    """written@ counts synced data only: a write of a moment ago must not pass for none."""
    standin(STATE)
    assert zverify("cutover", "p/a", "q/a").returncode == 0
    assert (tmp_path / "zpool.log").read_text().split("\n") == ["sync p", "sync q"] * 2 + [""]


def test_a_snapshot_taken_during_the_check_makes_it_unverified(standin):
    standin({**STATE, "snapshot_later": {"p/a": [["s1", 111, 10, 0], ["s2", 222, 12, 0]]}})
    r = zverify("cutover", "p/a", "q/a")
    assert r.returncode == 2, r.stdout + r.stderr
    assert "changed-during-check" in r.stdout and "UNVERIFIED" in r.stdout


def test_a_written_source_is_not_ready_and_says_how_much(standin):
    standin({**STATE, "written": {"p/a@s1": 4096, "q/a@s1": 0}})
    r = zverify("cutover", "p/a", "q/a")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "source-written" in r.stdout and "4,096 bytes" in r.stdout
    assert r.stdout.rstrip().splitlines()[-1].startswith("NOT READY: 1 reason(s)")


def test_a_dataset_zfs_cannot_list_is_exit_2_in_one_line(standin):
    standin(STATE)
    r = zverify("cutover", "p/nope", "q/a")
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr.count("\n") == 1 and "p/nope" in r.stderr


def test_without_zfs_installed_it_is_exit_2(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    r = zverify("cutover", "p/a", "q/a")
    assert r.returncode == 2 and "not found on PATH" in r.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("p/a", "p/a"),
        ("-r", "p", "p/copy"),
        ("--expect", "compression", "p/a", "q/a"),
        ("--snapshots", "some", "p/a", "q/a"),
    ],
)
def test_usage_errors_are_exit_2_in_one_line(standin, args):
    standin(STATE)
    r = zverify("cutover", *args)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
