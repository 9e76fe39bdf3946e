"""A cold archive on a disk with bad sectors (faultfs.c: reads of a stream fail with EIO at a
chosen offset, as a failing device does): `cold check` says the stream cannot be read (exit 2,
never a verdict on it); par2 stops at the first read error, so `cold repair` copies what can
be read, rebuilds the rest from the parity and proves the result before it replaces anything.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.cli.console import zverify
from tests.faults.faultfs import FaultFS

STREAMS = Path(__file__).parents[1] / "data" / "streams"
FULL = "zv%2Ffs@s1.zfsfull"
FIXTURE = STREAMS / "full_fs_s1.zstream"


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    root = tmp_path / "backing"
    root.mkdir()
    shutil.copy(FIXTURE, root / FULL)
    made = zverify("cold", "parity", "--no-progress", "--parity", "10", str(root))
    assert made.returncode == 0, made.stdout + made.stderr
    return root


@pytest.mark.parametrize("offset", [300_000, 0, FIXTURE.stat().st_size - 10])
def test_unreadable_sectors_are_read_around_and_rebuilt(
    faultfs: FaultFS, archive: Path, offset: int
) -> None:
    with faultfs.mount(archive, f"read /{FULL} {offset} EIO") as mnt:
        checked = zverify("cold", "check", "--no-progress", "--json", str(mnt.path))
        assert checked.returncode == 2, checked.stdout + checked.stderr
        (stream,) = [f for f in json.loads(checked.stdout)["files"] if f["file"] == FULL]
        assert stream["problems"][0]["kind"] == "unreadable"
        assert stream["parity"]["repair"]["status"] == "unknown"  # par2 cannot read it either
        repaired = zverify("cold", "repair", "--no-progress", str(mnt.path))
        assert repaired.returncode == 0, repaired.stdout + repaired.stderr
        assert "bytes that could not be read were rebuilt" in repaired.stdout
        assert any(f.startswith(f"read /{FULL} ") for f in mnt.fired())
    assert (archive / FULL).read_bytes() == FIXTURE.read_bytes()
    assert (archive / f"{FULL}.damaged").read_bytes() == FIXTURE.read_bytes()  # as it was
    assert not list(archive.glob("*.partial"))
    assert zverify("cold", "check", "--no-progress", str(archive)).returncode == 0
