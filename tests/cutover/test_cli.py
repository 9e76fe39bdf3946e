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
    calls = ["get -H -o value readonly p", "sync p", "get -H -o value readonly q", "sync q"]
    assert (tmp_path / "zpool.log").read_text().split("\n") == calls * 2 + [""]


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


# adversarial-4 H1: after the literal pool swap, `cutover olddata data` without -r looked
# at the pool roots only and said READY, "complete", while children held unreplicated
# writes and one dataset existed on the old pool only.
SWAPPED = {
    "datasets": {
        "olddata": FS, "olddata/a": FS, "olddata/a/child": FS, "olddata/b": FS,
        "olddata/b/new": FS, "olddata/vol": {**FS, "type": ["volume", "-"]},
        "data": FS, "data/a": FS, "data/a/child": FS, "data/b": FS,
        "data/vol": {**FS, "type": ["volume", "-"]},
    },
    "snapshots": {"olddata": [["s1", 111, 10, 0]], "data": [["s1", 111, 4, 0]]},
    "written": {"olddata@s1": 0, "data@s1": 0},
}  # fmt: skip
CHILDREN = ["olddata/a", "olddata/a/child", "olddata/b", "olddata/b/new", "olddata/vol"]


def test_without_r_a_source_with_descendants_is_not_ready_and_names_them(standin):
    standin(SWAPPED)
    r = zverify("cutover", "olddata", "data")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "READY: the replica is complete" not in r.stdout
    finding = next(line for line in r.stdout.splitlines() if "descendants-not-checked" in line)
    assert "5 descendant dataset(s) not checked" in finding
    assert "olddata/a, olddata/a/child, olddata/b, olddata/b/new, olddata/vol" in finding
    assert "-r checks them, --no-recursive checks olddata alone" in finding
    assert (
        r.stdout.rstrip()
        .splitlines()[-1]
        .startswith("NOT READY: 1 reason(s) (descendants-not-checked 1;")
    )
    doc = json.loads(zverify("cutover", "--json", "olddata", "data").stdout)
    assert (doc["ready"], doc["scope"]) == (False, "dataset")
    assert doc["descendants_unchecked"] == CHILDREN
    [found] = doc["findings"]
    assert (found["kind"], found["severity"], found["descendants_total"]) == (
        "descendants-not-checked",
        "fail",
        5,
    )


def test_no_recursive_is_ready_for_the_source_alone_and_never_says_complete(standin):
    standin(SWAPPED)
    r = zverify("cutover", "--no-recursive", "olddata", "data")
    assert r.returncode == 0, r.stdout + r.stderr
    last = r.stdout.rstrip().splitlines()[-1]
    assert last.startswith("READY for olddata alone; 5 descendant dataset(s) not checked")
    assert "complete" not in r.stdout
    doc = json.loads(zverify("cutover", "--json", "--no-recursive", "olddata", "data").stdout)
    assert (doc["ready"], doc["scope"]) == (True, "dataset")
    assert doc["descendants_unchecked"] == CHILDREN
    assert [(f["kind"], f["severity"]) for f in doc["findings"]] == [
        ("descendants-not-checked", "note")
    ]


def test_a_dataset_with_children_below_the_pool_root_is_treated_the_same(standin):
    standin(
        {
            **SWAPPED,
            "snapshots": {"olddata/a": [["s1", 7, 10, 0]], "data/a": [["s1", 7, 4, 0]]},
            "written": {"olddata/a@s1": 0, "data/a@s1": 0},
        }
    )
    r = zverify("cutover", "--json", "olddata/a", "data/a")
    assert r.returncode == 1
    assert json.loads(r.stdout)["descendants_unchecked"] == ["olddata/a/child"]
    assert zverify("cutover", "--no-recursive", "olddata/a", "data/a").returncode == 0


def test_a_source_without_descendants_is_complete_without_r(standin):
    standin(SWAPPED)
    r = zverify("cutover", "--json", "olddata/b/new", "data/a/child")
    assert r.returncode == 1  # no common snapshot: but nothing about descendants
    doc = json.loads(r.stdout)
    assert (doc["scope"], doc["descendants_unchecked"]) == ("tree", [])
    assert "descendants-not-checked" not in {f["kind"] for f in doc["findings"]}


def test_a_replica_inside_the_source_is_not_one_of_its_unchecked_descendants(standin):
    state = {
        "datasets": {"p": FS, "p/copy": FS, "p/copy/x": FS},
        "snapshots": {"p": [["s1", 111, 10, 0]], "p/copy": [["s1", 111, 4, 0]]},
        "written": {"p@s1": 0, "p/copy@s1": 0},
    }
    standin(state)
    doc = json.loads(zverify("cutover", "--json", "p", "p/copy").stdout)
    assert doc["ready"] is True and doc["descendants_unchecked"] == []


def test_a_descendant_created_during_the_check_makes_it_unverified(standin):
    standin({**SWAPPED, "datasets_later": {"olddata/c": FS}})
    r = zverify("cutover", "--no-recursive", "olddata", "data")
    assert r.returncode == 2, r.stdout + r.stderr
    assert "descendant datasets were created, destroyed or renamed" in r.stdout


def test_r_and_no_recursive_together_are_a_usage_error(standin):
    standin(SWAPPED)
    r = zverify("cutover", "-r", "--no-recursive", "olddata", "data")
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr


def test_a_written_source_that_zfs_diff_finds_unchanged_is_metadata_only(standin):
    """adversarial-4 M2: after `zpool export`/`import`, written@ is 1,024 bytes and `zfs
    diff` lists nothing: OpenZFS's bookkeeping, a warning, not NOT READY."""
    standin({**STATE, "written": {"p/a@s1": 1024, "q/a@s1": 0}, "diff": {"p/a@s1": []}})
    r = zverify("cutover", "--json", "p/a", "q/a")
    assert r.returncode == 0, r.stdout + r.stderr
    [f] = json.loads(r.stdout)["findings"]
    assert (f["kind"], f["severity"], f["bytes"]) == ("source-written", "warning", 1024)
    assert f["message"].startswith("metadata only (written@ 1,024 bytes on the source")
    assert "zfs diff empty" in f["message"]


def test_a_small_write_that_zfs_diff_lists_is_not_ready(standin):
    standin({**STATE, "written": {"p/a@s1": 1024, "q/a@s1": 0}, "diff": {"p/a@s1": ["M\t/p/a/f"]}})
    r = zverify("cutover", "p/a", "q/a")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "source-written" in r.stdout and "1,024 bytes written on the source" in r.stdout


def test_files_the_replica_received_in_a_newer_snapshot_are_not_changes_on_it(standin):
    """adversarial-4 L5: the source destroyed its newest snapshot @s2 after replicating it;
    written@s1 on the replica counts what it received into @s2, which nobody wrote there:
    NOT READY by `diverged` alone, not `destination-modified` listing received files."""
    q = [["s1", 111, 4, 0], ["s2", 222, 6, 0]]
    diverged = {
        **STATE,
        "snapshots": {"p/a": [["s1", 111, 10, 0]], "q/a": q},
        "written": {"p/a@s1": 0, "q/a@s1": 14336, "q/a@s2": 0},
        "diff": {"q/a@s1": ["+\t/q/a/late-file"]},
    }
    standin(diverged)
    doc = json.loads(zverify("cutover", "--json", "p/a", "q/a").stdout)
    assert [(f["kind"], f["severity"]) for f in doc["findings"]] == [("diverged", "fail")]
    assert doc["datasets"][0]["dst_written"] == 14336


def test_a_write_after_the_replicas_newer_snapshot_is_measured_from_it(standin):
    standin(
        {
            **STATE,
            "snapshots": {"p/a": [["s1", 111, 10, 0]], "q/a": [["s1", 111, 4, 0], ["s2", 2, 6, 0]]},
            "written": {"p/a@s1": 0, "q/a@s1": 18432, "q/a@s2": 4096},
            "diff": {"q/a@s2": ["+\t/q/a/edited"]},
        }
    )
    r = zverify("cutover", "p/a", "q/a")
    assert r.returncode == 1
    [line] = [x for x in r.stdout.splitlines() if x.startswith("fail       destination")]
    assert "4,096 bytes written on the replica since its newest snapshot @s2" in line
    assert "(newer than the latest common @s1), changing files: + /q/a/edited" in line


def test_live_a_replica_newer_than_the_source_is_ready_and_a_source_ahead_is_not(standin):
    """--live (issue 46, the renamed-pool flow): the new pool took over after the final
    sync, so its users' writes and its own newer snapshots are warnings; the source having
    written since the common snapshot still fails."""
    live = {
        **STATE,
        "snapshots": {"p/a": [["s1", 111, 10, 0]], "q/a": [["s1", 111, 4, 0], ["s2", 2, 6, 0]]},
        "written": {"p/a@s1": 0, "q/a@s1": 18432, "q/a@s2": 4096},
        "diff": {"q/a@s2": ["+\t/q/a/edited"]},
    }
    standin(live)
    assert zverify("cutover", "p/a", "q/a").returncode == 1  # without --live: NOT READY
    r = zverify("cutover", "--live", "--json", "p/a", "q/a")
    assert r.returncode == 0, r.stdout + r.stderr
    kinds = {(f["kind"], f["severity"]) for f in json.loads(r.stdout)["findings"]}
    assert kinds == {("diverged", "warning"), ("destination-modified", "warning")}, kinds


def test_live_a_source_written_after_the_final_sync_is_not_ready(standin):
    standin(
        {
            **STATE,
            "snapshots": {"p/a": [["s1", 111, 10, 0]], "q/a": [["s1", 111, 4, 0]]},
            "written": {"p/a@s1": 8192, "q/a@s1": 4096},
            "diff": {"p/a@s1": ["M\t/p/a/late"], "q/a@s1": ["+\t/q/a/new"]},
        }
    )
    r = zverify("cutover", "--live", "p/a", "q/a")
    assert r.returncode == 1 and "source-written" in r.stdout, r.stdout
    assert "fail       destination" not in r.stdout
