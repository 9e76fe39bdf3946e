"""`cold prune --keep-within AGE`: besides the newest chains, keep every chain without which
a snapshot made within AGE would no longer restore.  Generated streams whose creation times
are days before now: an old chain (a full 100 days ago, incrementals 95, 85 and 80 days ago),
a new full of the 80-day snapshot, and yesterday's incremental after it, which both chains
reach."""

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.cli.console import zverify
from tools.streamgen import StreamBuilder

DAY = 86400
GUID = 10**6
OLD = ["zv%2Ffs@s0.zfsfull", "zv%2Ffs@s0-@s1.zfsinc", "zv%2Ffs@s1-@s2.zfsinc"]
OLD += ["zv%2Ffs@s2-@s3.zfsinc"]


def _stream(snapshot: int, base: int | None, days_ago: float) -> bytes:
    """A plain substream (an object with one written block): prune's content proof digests
    every record, so no embedded block, which StreamBuilder writes undecompressable."""
    b = StreamBuilder()
    frm = 0 if base is None else GUID + base
    created = int(time.time() - days_ago * DAY)
    b.begin(f"zv/fs@s{snapshot}", GUID + snapshot, frm, created=created)
    b.object(1, otype=21)
    b.object(2)
    b.write(2, 0, bytes([snapshot]) * 512)
    b.end()
    return bytes(b.data)


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    root = tmp_path / "cold"
    root.mkdir()
    ages = {0: 100, 1: 95, 2: 85, 3: 80}
    for name, (snapshot, days_ago) in zip(OLD, ages.items(), strict=True):
        (root / name).write_bytes(_stream(snapshot, snapshot - 1 if snapshot else None, days_ago))
    (root / "zv%2Ffs@s3.zfsfull").write_bytes(_stream(3, None, 80))  # the new chain's full
    (root / "zv%2Ffs@s3-@s4.zfsinc").write_bytes(_stream(4, 3, 1))
    return root


def _prune(root: Path, *extra: str) -> dict[str, Any]:
    done = zverify("cold", "prune", "--json", *extra, str(root))
    assert done.returncode == 0, done.stdout + done.stderr
    (dataset,) = json.loads(done.stdout)["datasets"]
    return dataset


def test_a_snapshot_made_within_the_age_keeps_its_chain(archive: Path) -> None:
    dataset = _prune(archive, "--keep-within", "90d")  # @s2, 85 days old, is the old chain's
    assert dataset["remove"] == [] and sorted(dataset["keep"]) == [OLD[0], "zv%2Ffs@s3.zfsfull"]


def test_an_old_chain_whose_recent_snapshots_restore_without_it_goes(archive: Path) -> None:
    # @s3 (80 days) is the new full's too: only @s0..@s2 are the old chain's alone
    dataset = _prune(archive, "--keep-within", "84d")
    assert sorted(dataset["remove"]) == sorted(OLD)
    assert dataset == _prune(archive)  # as without the rule: the newest chain alone


def test_the_age_takes_the_units_of_every_option(archive: Path) -> None:
    done = zverify("cold", "prune", "--keep-within", "ninety", str(archive))
    assert done.returncode == 2 and "--keep-within 'ninety'" in done.stderr, done.stderr
    assert _prune(archive, "--keep-within", "2100h")["remove"] == []  # 87.5 days: @s2 in
