"""`cold restore` planning, verification and its sh script, on the host (no ZFS needed until
the receives, which tests/cold/test_zfs_send.py runs for real)."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.cli.console import zverify
from tests.cold import fakezfs
from zverify.cold.proof.check import check_archive
from zverify.cold.restore import plan_restore, receive_file, verify_files
from zverify.cold.store import LocalStore
from zverify.errors import ColdError, UnrestorableError, ZfsError

STREAMS = Path(__file__).parents[1] / "data" / "streams"
FILES = {
    "zv%2Ffs@s1.zfsfull": "full_fs_s1.zstream",
    "zv%2Ffs@s1-@s2.zfsinc": "incr_fs_s1_s2.zstream",
    "zv%2Ffs@s2-@s3.zfsinc": "incr_empty_fs_s2_s3.zstream",
}


@pytest.fixture
def cold(tmp_path: Path) -> Path:
    root = tmp_path / "cold"
    root.mkdir()
    for name, fixture in FILES.items():
        shutil.copy(STREAMS / fixture, root / name)
    return root


def test_default_is_the_newest_and_a_guid_selects_too(cold: Path) -> None:
    report = check_archive(LocalStore([str(cold)]))
    newest = plan_restore(report, "tank/r", None)
    assert newest.snapshot.snapshot == "s3" and newest.files == tuple(FILES)
    by_guid = plan_restore(report, "tank/r", "8984490087068245054")
    assert by_guid.snapshot.snapshot == "s2" and len(by_guid.files) == 2
    with pytest.raises(UnrestorableError, match="@s9 cannot be restored"):
        plan_restore(report, "tank/r", "s9")


def test_a_file_damaged_after_planning_is_refused_before_any_receive(cold: Path) -> None:
    report = check_archive(LocalStore([str(cold)]))
    plan = plan_restore(report, "tank/r", None)
    last = cold / "zv%2Ffs@s1-@s2.zfsinc"
    data = bytearray(last.read_bytes())
    data[len(data) // 2] ^= 1
    last.write_bytes(bytes(data))
    with pytest.raises(UnrestorableError, match="is damaged at byte"):
        verify_files(plan, report)


def test_several_datasets_need_dataset(cold: Path) -> None:
    shutil.copy(STREAMS / "raw_w_enc_s1.zstream", cold / "zv%2Fenc@s1.zfsfull")
    with pytest.raises(ColdError, match="--dataset"):
        plan_restore(check_archive(LocalStore([str(cold)])), "tank/r", None)
    plan = plan_restore(check_archive(LocalStore([str(cold)]), "zv/enc"), "tank/r", None)
    assert plan.files == ("zv%2Fenc@s1.zfsfull",)


def test_script_receives_in_order_and_quotes(cold: Path, tmp_path: Path) -> None:
    out = tmp_path / "restore.sh"
    done = zverify("cold", "restore", "--script", str(out), str(cold), "tank/new set")
    assert done.returncode == 0, done.stderr
    lines = out.read_text().splitlines()
    receives = [line for line in lines if line.startswith("zfs receive")]
    assert [r.rsplit("/", 1)[1].rstrip("'") for r in receives] == list(FILES)
    assert all("'tank/new set'" in r for r in receives)
    assert subprocess.run(["sh", "-n", str(out)]).returncode == 0  # valid sh


def fake_receive(mp: pytest.MonkeyPatch, tmp_path: Path, exit_code: int = 0) -> Path:
    """A `zfs` whose receive stores what it was fed: fault injection at the command boundary
    (the real receives are in tests/cold/test_zfs_send.py)."""
    got = tmp_path / "received"
    fakezfs.install(mp, tmp_path, f"cat > '{got}'\nexit {exit_code}\n")
    return got


def test_an_intact_file_goes_to_receive_whole(
    cold: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    got = fake_receive(monkeypatch, tmp_path)
    path = cold / "zv%2Ffs@s1-@s2.zfsinc"
    receive_file(str(path), "tank/r")
    assert got.read_bytes() == path.read_bytes()


def test_a_file_changed_since_checking_is_stopped_before_its_bad_record(
    cold: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    got = fake_receive(monkeypatch, tmp_path)
    path = cold / "zv%2Ffs@s1.zfsfull"
    data = bytearray(path.read_bytes())
    flip = len(data) // 2
    data[flip] ^= 0x10
    path.write_bytes(bytes(data))
    with pytest.raises(UnrestorableError, match=r"changed since it was checked at byte \d+"):
        receive_file(str(path), "tank/r", ["earlier.zfsfull"])
    fed = got.read_bytes() if got.exists() else b""  # killed before it even opened it
    assert len(fed) <= flip, "the receive saw the damaged byte"  # (relayed in 1 MiB batches)
    assert fed == bytes(data[: len(fed)])


def test_a_failing_receive_is_an_error_with_its_message(
    cold: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_receive(monkeypatch, tmp_path, exit_code=1)
    with pytest.raises(ZfsError, match="receive"):
        receive_file(str(cold / "zv%2Ffs@s1.zfsfull"), "tank/r")


def test_a_restore_records_what_it_read_in_the_ledger_and_a_dry_run_nothing(
    cold: Path, tmp_path: Path
) -> None:
    scrubbed = zverify("cold", "scrub", str(cold))  # the archive gets its ledger
    assert scrubbed.returncode == 0, scrubbed.stderr
    ledger = cold / ".zverify-ledger.jsonl"
    before = ledger.read_text().splitlines()
    dry = zverify("cold", "restore", "-n", str(cold), "tank/r")
    assert dry.returncode == 0, dry.stderr
    assert ledger.read_text().splitlines() == before  # -n writes nothing at all
    script = tmp_path / "receive.sh"
    done = zverify("cold", "restore", "--script", str(script), str(cold), "tank/r")
    assert done.returncode == 0, done.stderr
    added = [json.loads(line) for line in ledger.read_text().splitlines()[len(before) :]]
    assert sorted(r["file"] for r in added) == sorted(FILES)
    assert {(r["method"], r["result"]) for r in added} == {("restore", "proven")}
