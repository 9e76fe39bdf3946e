"""The ZFS boundary without ZFS: absence is a typed error (or, for hints, None), never a crash."""

import sys
from pathlib import Path

import pytest

from zverify.errors import ZfsError
from zverify.zfs import command, lzc, ops


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


def _fake_zfs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, body: str) -> None:
    """A stand-in `zfs` (no ZFS runs here): a shell script with the given body."""
    fake = tmp_path / "zfs"
    fake.write_text(f"#!/bin/sh\n{body}\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))


def test_exists_tells_absent_from_could_not_ask(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _fake_zfs(
        monkeypatch, tmp_path, "echo \"cannot open '$5': dataset does not exist\" >&2; exit 1"
    )
    assert ops.exists("tank/nope") is False
    _fake_zfs(monkeypatch, tmp_path, 'echo "$5"')
    assert ops.exists("tank/here") is True
    _fake_zfs(monkeypatch, tmp_path, 'echo "internal error: Bad file descriptor" >&2; exit 1')
    with pytest.raises(ZfsError, match="Bad file descriptor"):
        ops.exists("tank/x")  # the hint API said None here: "not there"
    monkeypatch.setenv("PATH", str(tmp_path / "none"))
    with pytest.raises(ZfsError, match="not found on PATH"):
        ops.exists("tank/x")


def test_send_finish_checks_the_exit_status(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _fake_zfs(monkeypatch, tmp_path, 'echo "$@"; echo "cannot send: no space" >&2; exit 3')
    sending = ops.send(ops.SendArgs("tank/a@2", "tank/a#1", intermediate=True, flags=("-w",)))
    assert sending.stdout.read() == b"send -w -I tank/a#1 tank/a@2\n"
    with pytest.raises(ZfsError, match="no space") as caught:
        sending.finish()
    assert caught.value.returncode == 3 and caught.value.argv[:2] == ["zfs", "send"]
    _fake_zfs(monkeypatch, tmp_path, "printf stream")
    sending = ops.send(ops.SendArgs("tank/a@2"))
    assert sending.stdout.read() == b"stream"
    sending.finish()  # exit 0: no error


def test_send_size_reads_the_dry_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _fake_zfs(
        monkeypatch,
        tmp_path,
        'case "$*" in "send -nvP -c -i tank/a@1 tank/a@2") '
        'printf "incremental\\t1\\ttank/a@2\\t4242\\nsize\\t4242\\n";; *) exit 9;; esac',
    )
    assert ops.send_size(ops.SendArgs("tank/a@2", "tank/a@1", flags=("-c",))) == 4242
    _fake_zfs(monkeypatch, tmp_path, 'echo "nothing useful"')
    with pytest.raises(ZfsError, match="no size line"):
        ops.send_size(ops.SendArgs("tank/a@2"))
