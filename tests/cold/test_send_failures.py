"""`cold send` when writing or sending fails: nothing that looks like a stream is left.

A stand-in `zfs` on PATH replays a real fixture stream and then fails, or sends a stream
other than the one planned: failure injection at the command boundary (the real sends are
in tests/cold/test_zfs_send.py)."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.cold import fakezfs
from tests.cold.standin import ZfsStandIn, run
from zverify.cold.plan import SendPlan
from zverify.cold.proof import ledger
from zverify.cold.send import send_to_archive
from zverify.cold.store import LocalStore
from zverify.errors import ColdError
from zverify.zfs.inventory import Snap

STREAMS = Path(__file__).parents[1] / "data" / "streams"
S1_GUID = 4034521428903744376


def fake_zfs(
    mp: pytest.MonkeyPatch, tmp_path: Path, fixture: str, exit_code: int, head: int | None = None
) -> None:
    """A `zfs` that writes (part of) a real stream to stdout, then exits with exit_code."""
    cat = f"head -c {head} '{STREAMS / fixture}'" if head else f"cat '{STREAMS / fixture}'"
    fakezfs.install(mp, tmp_path, f"{cat}\necho 'zfs: simulated failure' >&2\nexit {exit_code}\n")


def plan_full_s1() -> SendPlan:
    return SendPlan(Snap("s1", S1_GUID, 10), None, None, False, "test")


def archive_dir(tmp_path: Path) -> Path:
    out = tmp_path / "cold"
    out.mkdir()
    return out


def test_zfs_send_failing_midway_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_zfs(monkeypatch, tmp_path, "full_fs_s1.zstream", 1, head=200_000)
    cold = archive_dir(tmp_path)
    with pytest.raises(ColdError, match="simulated failure"):
        send_to_archive("zv/fs", LocalStore([str(cold)]), plan_full_s1(), [])
    assert list(cold.iterdir()) == []


def test_a_stream_other_than_planned_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_zfs(
        monkeypatch, tmp_path, "raw_w_enc_s1.zstream", 0
    )  # a valid stream, of another snapshot
    cold = archive_dir(tmp_path)
    with pytest.raises(ColdError, match="not 0 to 4034521428903744376 as planned"):
        send_to_archive("zv/fs", LocalStore([str(cold)]), plan_full_s1(), [])
    assert list(cold.iterdir()) == []


def test_a_damaged_stream_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = bytearray((STREAMS / "full_fs_s1.zstream").read_bytes())
    data[len(data) // 2] ^= 1
    (tmp_path / "bad.zstream").write_bytes(bytes(data))
    fake_zfs(monkeypatch, tmp_path, str(tmp_path / "bad.zstream"), 0)
    cold = archive_dir(tmp_path)
    with pytest.raises(ColdError, match="not valid"):
        send_to_archive("zv/fs", LocalStore([str(cold)]), plan_full_s1(), [])
    assert list(cold.iterdir()) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tiny tmpfs needs root")
def test_a_full_archive_filesystem_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_zfs(monkeypatch, tmp_path, "full_fs_s1.zstream", 0)  # ~590 kB into a 64 kB filesystem
    cold = archive_dir(tmp_path)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(cold)], check=True)
    try:
        with pytest.raises(ColdError, match="No space left on device"):
            send_to_archive("zv/fs", LocalStore([str(cold)]), plan_full_s1(), [])
        assert list(cold.iterdir()) == []
    finally:
        subprocess.run(["umount", str(cold)], check=True)


def test_an_existing_partial_is_never_overwritten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_zfs(monkeypatch, tmp_path, "full_fs_s1.zstream", 0)
    cold = archive_dir(tmp_path)
    (cold / "zv%2Ffs@s1.zfsfull.partial").write_bytes(b"another run")
    with pytest.raises(ColdError, match="left by an interrupted send"):
        send_to_archive("zv/fs", LocalStore([str(cold)]), plan_full_s1(), [])
    assert (cold / "zv%2Ffs@s1.zfsfull.partial").read_bytes() == b"another run"


def test_a_send_records_what_it_read_and_the_file_it_wrote_as_check_would(
    tmp_path: Path,
) -> None:
    """With a ledger, send records the archive it read whole and its own proof of the new
    file; a check after it records the same stream (no `replaced` for a scrub to find)."""
    standin = ZfsStandIn(tmp_path / "standin")
    standin.source("zv/fs", {"s1": "full_fs_s1.zstream", "s2": "incr_fs_s1_s2.zstream"})
    env, cold = standin.env(), tmp_path / "cold"
    cold.mkdir()
    shutil.copy(STREAMS / "full_fs_s1.zstream", cold / "zv%2Ffs@s1.zfsfull")
    assert run("cold", "scrub", str(cold), env=env).returncode == 0  # the archive's ledger
    sent = run("cold", "send", "--no-progress", "--no-intermediate", "zv/fs", str(cold), env=env)
    assert sent.returncode == 0, sent.stdout + sent.stderr
    assert run("cold", "check", str(cold), env=env).returncode == 0
    records = [json.loads(x) for x in (cold / ledger.NAME).read_text().splitlines()]
    new = "zv%2Ffs@s1-@s2.zfsinc"
    by_send = [(r["file"], r["result"]) for r in records if r["method"] == "send"]
    assert by_send == [("zv%2Ffs@s1.zfsfull", "proven"), (new, "proven")]
    sent_proof, checked = (
        next(r for r in records if r["file"] == new and r["method"] == m) for m in ("send", "check")
    )
    same = ("size", "dataset", "from_guid", "to_guid", "digest")
    assert {k: sent_proof[k] for k in same} == {k: checked[k] for k in same}
    assert sent_proof["digest"] is not None
