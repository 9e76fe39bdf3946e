"""`zverify cutover --cold`: a cold archive's next incremental must still find its base on the
replica after a migration.  Real archives (the fixture streams of tests/cold, read by the
same engine as `cold check`), a stand-in zfs for the two trees (the VM replays the real
migration in test_migration_zfs.py)."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.cli.console import console_script, zverify
from tests.cli.test_schemas import validate
from tests.cold.proof.test_check import FIXTURE, FULL_S1, INC_S1_S2, STREAMS, guid
from tests.cutover.test_cli import FS, STATE, standin  # noqa: F401  (the fixture)

S1, S2 = int(guid("s1")), int(guid("s2"))


def archive(tmp_path: Path) -> Path:
    """zv/fs: a full of @s1 and @s1 -> @s2: the next incremental starts from @s2."""
    root = tmp_path / "cold"
    root.mkdir()
    for name in (FULL_S1, INC_S1_S2):
        shutil.copy(STREAMS / FIXTURE[name], root / name)
    return root


def state(src: list, dst: list, src_marks: tuple | list = (), dst_marks: tuple | list = ()) -> dict:
    """zv/fs migrated to nz/fs; snapshots [name, guid, txg, userrefs], bookmarks
    [name, guid, txg]."""
    return {
        "datasets": {"zv/fs": FS, "nz/fs": {**FS, "compression": ["lz4", "inherited from nz"]}},
        "snapshots": {"zv/fs": src, "nz/fs": dst},
        "bookmarks": {"zv/fs": list(src_marks), "nz/fs": list(dst_marks)},
        "written": {"zv/fs@s1": 0, "nz/fs@s1": 0, "zv/fs@s2": 0, "nz/fs@s2": 0},
    }


def cutover(tmp_path: Path, *extra: str):
    return zverify("cutover", "--json", "zv/fs", "nz/fs", "--cold", str(archive(tmp_path)), *extra)


def kinds(doc: dict) -> dict[str, dict]:
    return {f["kind"]: f for f in doc["findings"]}


def test_the_archives_base_on_the_replica_as_a_snapshot_is_ready(standin, tmp_path):  # noqa: F811
    standin(state([["s1", S1, 10, 0], ["s2", S2, 12, 0]], [["s1", S1, 4, 0], ["s2", S2, 5, 0]]))
    r = cutover(tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "cold-base-missing" not in r.stdout


def test_the_archives_base_on_the_replica_as_a_bookmark_is_ready(standin, tmp_path):  # noqa: F811
    standin(state([["s1", S1, 10, 0]], [["s1", S1, 4, 0]], [["s2", S2, 12]], [["s2", S2, 5]]))
    r = cutover(tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr


def test_a_base_send_r_dropped_is_not_ready_and_says_the_way_out(standin, tmp_path):  # noqa: F811
    """The source kept @s2 only as a bookmark (zverify's own, after `cold send`): `send -R`
    carried @s1 but not #s2, so the replica cannot take the archive's next incremental."""
    standin(state([["s1", S1, 10, 0]], [["s1", S1, 4, 0]], [["s2", S2, 12]]))
    r = cutover(tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    doc = json.loads(r.stdout)
    validate("cutover", doc)
    finding = kinds(doc)["cold-base-missing"]
    assert finding["dataset"] == "zv/fs" and finding["severity"] == "fail"
    assert finding["guid"] == str(S2) and finding["snapshot"] == "s2"
    assert finding["on_source"] == ["zv/fs#s2"]
    message = finding["message"]
    assert "16756" in message and "zv/fs#s2" in message and "--full" in message
    assert "consolidate" in message and "@s2" in message
    text = zverify("cutover", "zv/fs", "nz/fs", "--cold", str(tmp_path / "cold"))
    assert text.returncode == 1 and "cold-base-missing" in text.stdout


def test_a_base_on_neither_side_names_a_new_full(standin, tmp_path):  # noqa: F811
    standin(state([["s1", S1, 10, 0]], [["s1", S1, 4, 0]]))
    r = cutover(tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "on neither side" in kinds(json.loads(r.stdout))["cold-base-missing"]["message"]


def test_an_archive_that_cannot_be_read_is_exit_2(standin, tmp_path):  # noqa: F811
    standin(state([["s1", S1, 10, 0], ["s2", S2, 12, 0]], [["s1", S1, 4, 0], ["s2", S2, 5, 0]]))
    r = zverify("cutover", "zv/fs", "nz/fs", "--cold", str(tmp_path / "absent"))
    assert r.returncode == 2, r.stdout + r.stderr


def test_an_unreadable_stream_in_the_archive_is_exit_2_not_a_pass(standin, tmp_path):  # noqa: F811
    """Without @s2's stream the archive would seem to end at @s1, which the replica has."""
    if os.geteuid() != 0:
        pytest.skip("needs root to drop CAP_DAC_OVERRIDE (a mode-0 file is readable by root)")
    standin(state([["s1", S1, 10, 0], ["s2", S2, 12, 0]], [["s1", S1, 4, 0]], [], [["s2", S2, 5]]))
    root = archive(tmp_path)
    os.chmod(root / INC_S1_S2, 0)
    drop = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search"]
    r = subprocess.run(
        [*drop, console_script(), "cutover", "zv/fs", "nz/fs", "--cold", str(root)],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 2, r.stdout + r.stderr
    assert "cold-unread" in r.stdout and INC_S1_S2 in r.stdout


def test_a_damaged_stream_is_named_beside_the_base_the_intact_streams_give(standin, tmp_path):  # noqa: F811
    standin(state([["s1", S1, 10, 0]], [["s1", S1, 4, 0]], [["s2", S2, 12]]))
    root = archive(tmp_path)
    data = bytearray((root / INC_S1_S2).read_bytes())
    data[len(data) // 2] ^= 0xFF
    (root / INC_S1_S2).write_bytes(bytes(data))
    r = zverify("cutover", "--json", "zv/fs", "nz/fs", "--cold", str(root))
    found = kinds(json.loads(r.stdout))
    assert r.returncode == 0, r.stdout + r.stderr  # its newest intact snapshot @s1 is on DST
    assert found["cold-damaged"]["severity"] == "warning" and INC_S1_S2 in r.stdout


def test_an_archive_of_no_dataset_of_the_tree_is_not_a_pass(standin, tmp_path):  # noqa: F811
    """--cold given an archive that holds nothing of SRC's or DST's tree (another
    dataset's, its GUIDs on neither side): nothing was checked, so not READY but exit 2."""
    standin(STATE)  # p/a -> q/a, nothing of zv/fs
    r = zverify("cutover", "--json", "p/a", "q/a", "--cold", str(archive(tmp_path)))
    assert r.returncode == 2, r.stdout + r.stderr
    assert kinds(json.loads(r.stdout))["cold-unread"]["severity"] == "unverified"
