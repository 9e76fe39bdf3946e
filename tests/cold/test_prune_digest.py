"""`zverify cold prune` proves content, not only integrity: a chain superseded by a newer
full is deleted only when every snapshot it restores that the kept files restore too gives
the same logical state digest both ways (issue 44, deliverable 4).

Archives of real OpenZFS 2.1.11 streams (tests/data/streams); the newer full is made by
`zverify cold consolidate` or is a real `zfs send -R` package.  A full re-signed after one
payload byte was changed is intact to every checksum and GUID (the proof prune made before)
and must now be refused, naming the object.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.cli.console import zverify
from tests.cold.test_consolidate import NAME_S2, _tamper_first_write
from tests.cold.test_prune import FIXTURE, NEW_FULL, OLD_FULL, OLD_INC, SHARED_INC, STREAMS


def archive(tmp_path: Path, *files: str) -> Path:
    root = tmp_path / "cold"
    root.mkdir()
    for name in files:
        shutil.copy(STREAMS / FIXTURE[name], root / name)
    return root


def prune(root: Path, *extra: str) -> tuple[int, dict, str]:
    done = zverify("cold", "prune", "--json", *extra, str(root))
    doc = json.loads(done.stdout) if done.stdout else {}
    (ds,) = [d for d in doc.get("datasets", []) if d["dataset"] == "zv/fs"] or [{}]
    return done.returncode, ds, done.stderr


def test_consolidated_full_lets_prune_delete_the_old_chain(tmp_path: Path) -> None:
    root = archive(tmp_path, OLD_FULL, OLD_INC, SHARED_INC)
    done = zverify("cold", "consolidate", "--snapshot", "s2", str(root))
    assert done.returncode == 0, done.stderr
    code, ds, err = prune(root, "--yes")
    assert code == 0, (ds, err)
    assert not (root / OLD_FULL).exists() and not (root / OLD_INC).exists()
    assert (root / NAME_S2).exists() and (root / SHARED_INC).exists()
    check = zverify("cold", "check", "--json", str(root))
    assert check.returncode == 0, check.stdout
    (zv,) = json.loads(check.stdout)["datasets"]
    assert {r["snapshot"] for r in zv["restorable"]} == {"s2", "s3"}


def test_a_real_R_package_proves_the_old_chain_equal(tmp_path: Path) -> None:
    """A real `zfs send -R` of @s2 supersedes full@s1 + inc: @s1 and @s2 by both routes
    give one digest each (real OpenZFS fulls against a real chain), so prune deletes."""
    root = archive(tmp_path, OLD_FULL, OLD_INC, SHARED_INC, NEW_FULL)
    code, ds, err = prune(root, "--yes")
    assert code == 0, (ds, err)
    assert not (root / OLD_FULL).exists() and (root / NEW_FULL).exists()


@pytest.mark.parametrize("yes", [False, True])
def test_a_tampered_new_full_is_refused_and_nothing_deleted(tmp_path: Path, yes: bool) -> None:
    """The consolidated full of @s2 with one payload byte changed and every checksum
    re-signed: `cold check` calls it intact (as prune did before), the digests differ."""
    root = archive(tmp_path, OLD_FULL, OLD_INC, SHARED_INC)
    assert zverify("cold", "consolidate", "--snapshot", "s2", str(root)).returncode == 0
    _tamper_first_write(root / NAME_S2)
    assert zverify("cold", "check", str(root)).returncode == 0
    before = sorted(p.name for p in root.iterdir())
    code, ds, err = prune(root, *(["--yes"] if yes else []))
    assert code == 1, (ds, err)
    assert "different content" in ds["refused"] and "object" in ds["refused"]
    assert "s2" in ds["refused"]
    assert sorted(p.name for p in root.iterdir()) == before
