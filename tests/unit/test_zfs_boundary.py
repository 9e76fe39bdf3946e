"""The ZFS boundary without ZFS: absence is a typed error (or, for hints, None), never a crash."""

import sys
from pathlib import Path

import pytest

from zverify.errors import ZfsError
from zverify.zfs import command, lzc


def test_missing_zfs_command_raises_and_hints_are_none(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no zfs, no zpool
    with pytest.raises(ZfsError, match="not found on PATH") as caught:
        command.run("list", "-H")
    assert caught.value.argv == ["zfs", "list", "-H"] and caught.value.returncode is None
    with pytest.raises(ZfsError, match="`zpool status` failed"):
        command.run_zpool("status")
    assert command.optional("list") is None
    assert command.dataset_properties("tank/x") is None


def test_failing_zfs_command_carries_status_and_stderr(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake = tmp_path / "zfs"
    fake.write_text("#!/bin/sh\necho \"cannot open '$2': dataset does not exist\" >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ZfsError) as caught:
        command.run("list", "tank/nope")
    err = caught.value
    assert (err.returncode, err.stderr.strip()) == (
        1,
        "cannot open 'tank/nope': dataset does not exist",
    )
    assert "exit 1" in str(err) and "does not exist" in str(err)


def test_missing_pyzfs_is_a_typed_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "libzfs_core", None)  # import fails as if absent
    assert lzc.available() is False
    with pytest.raises(ZfsError, match="pyzfs unavailable"):
        lzc.call("lzc_exists", b"tank")
