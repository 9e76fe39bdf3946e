"""NAME.manifest beside a stream (`cold send --manifest`, zverify.cold.contents): `cold check`
holds it to the sidecar that names it like any file of the archive, `cold prune` deletes it
with its stream, `cold clean` leaves it alone.  The streams are real `zfs send` fixtures and
the manifests real `zverify manifest` output; the send side runs on real OpenZFS in
tests/cold/test_drill_zfs.py."""

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.cli.console import zverify
from tests.cold.proof.test_check import (
    FIXTURE,
    FULL_S1,
    INC_S1_S2,
    STREAMS,
    check_without_dac,
    guid,
)

MANIFEST = f"{FULL_S1}.manifest"


def archive_with_manifest(tmp_path: Path, beside: str = FULL_S1, snapshot: str = "s1") -> Path:
    """FULL_S1 and INC_S1_S2, one of them (beside) with a manifest (of a small real tree) its
    sidecar names, as `cold send --manifest` leaves them."""
    root = tmp_path / "cold"
    root.mkdir()
    for name in (FULL_S1, INC_S1_S2):
        shutil.copy(STREAMS / FIXTURE[name], root / name)
    tree = tmp_path / "tree"
    (tree / "d").mkdir(parents=True)
    (tree / "d" / "f").write_bytes(b"content\n")
    made = zverify("manifest", "-q", str(tree), "-o", str(root / f"{beside}.manifest"))
    assert made.returncode == 0, made.stderr
    data = (root / f"{beside}.manifest").read_bytes()
    entry = {
        "file": f"{beside}.manifest",
        "bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "entries": 3,
        "algorithm": "xxh3-128",
        "snapshot": f"zv/fs@{snapshot}",
    }
    side = {"dataset": "zv/fs", "to_guid": guid(snapshot), "manifest": entry}
    (root / f"{beside}.json").write_text(json.dumps(side))
    return root


def check(root: Path) -> tuple[int, set[tuple[str, str]], dict[str, Any]]:
    done = zverify("cold", "check", "--json", str(root))
    doc = json.loads(done.stdout)
    found = {(p["file"], p["kind"]) for f in doc["files"] for p in f["problems"]}
    found |= {(p["file"], p["kind"]) for p in doc["problems"]}
    return done.returncode, found, doc


def test_an_intact_manifest_is_no_stream_and_no_problem(tmp_path: Path) -> None:
    root = archive_with_manifest(tmp_path)
    code, found, doc = check(root)
    assert code == 0 and found == set(), doc
    assert MANIFEST not in {f["file"] for f in doc["files"]}  # beside, never read as a stream


def test_a_changed_or_missing_manifest_is_a_finding_naming_its_stream(tmp_path: Path) -> None:
    root = archive_with_manifest(tmp_path)
    data = bytearray((root / MANIFEST).read_bytes())
    data[len(data) // 2] ^= 1
    (root / MANIFEST).write_bytes(bytes(data))
    code, found, doc = check(root)
    assert code == 1 and found == {(FULL_S1, "manifest-mismatch")}
    (full,) = [f for f in doc["files"] if f["file"] == FULL_S1]
    assert "is not the manifest its sidecar names" in full["problems"][0]["message"]
    assert {r["snapshot"] for d in doc["datasets"] for r in d["restorable"]} == {"s1", "s2"}
    (root / MANIFEST).unlink()
    code, found, _ = check(root)
    assert code == 1 and found == {(FULL_S1, "manifest-mismatch")}


def test_a_manifest_nobody_names_is_reported(tmp_path: Path) -> None:
    root = archive_with_manifest(tmp_path)
    shutil.copy(root / MANIFEST, root / f"{INC_S1_S2}.manifest")  # no sidecar names it
    shutil.copy(root / MANIFEST, root / "gone.zfsfull.manifest")  # its stream is not here
    code, found, doc = check(root)
    assert code == 1
    assert found == {
        (f"{INC_S1_S2}.manifest", "manifest-mismatch"),
        ("gone.zfsfull.manifest", "manifest-mismatch"),
    }
    messages = {p["file"]: p["message"] for p in doc["problems"]}
    assert "no sidecar names it" in messages[f"{INC_S1_S2}.manifest"]
    assert "is not here" in messages["gone.zfsfull.manifest"]


def test_an_unreadable_manifest_is_exit_2(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to drop CAP_DAC_OVERRIDE (a mode-0 file is readable by root)")
    root = archive_with_manifest(tmp_path)
    os.chmod(root / MANIFEST, 0)
    done = check_without_dac(root, "--json")
    doc = json.loads(done.stdout)
    found = {(p["file"], p["kind"]) for f in doc["files"] for p in f["problems"]}
    assert done.returncode == 2 and found == {(FULL_S1, "unreadable")}, done.stdout


def test_prune_deletes_the_manifest_with_its_stream_and_clean_keeps_it(tmp_path: Path) -> None:
    root = archive_with_manifest(tmp_path)
    kept = zverify("cold", "clean", "--yes", str(root))
    assert kept.returncode == 0 and (root / MANIFEST).exists(), kept.stdout
    # a new chain: the -R package of @s2 restores @s1 and @s2 alone
    shutil.copy(STREAMS / "replicate_R_fs_s2.zstream", root / "replicated-s2.zstream")
    done = zverify("cold", "prune", "--yes", "--json", str(root))
    assert done.returncode == 0, done.stdout + done.stderr
    left = sorted(os.listdir(root))
    assert MANIFEST not in left and f"{FULL_S1}.json" not in left and FULL_S1 not in left, left


def test_consolidate_carries_the_manifest_of_its_snapshot_to_the_new_full(
    tmp_path: Path,
) -> None:
    """The new full of @s2 holds the files the incremental to @s2 gave: the archive's
    manifest of @s2 is copied beside it (proven on the way), so pruning the old chain keeps
    the archive's proof of content."""
    root = archive_with_manifest(tmp_path, INC_S1_S2, "s2")
    done = zverify("cold", "consolidate", "--json", "--dataset", "zv/fs", str(root))
    assert done.returncode == 0, done.stderr
    new = json.loads(done.stdout)["file"]
    side = json.loads((root / f"{new}.json").read_text())
    assert side["manifest"]["file"] == f"{new}.manifest"
    same = (root / f"{new}.manifest").read_bytes() == (root / f"{INC_S1_S2}.manifest").read_bytes()
    assert same and side["manifest"]["snapshot"] == "zv/fs@s2"
    code, found, _ = check(root)
    assert code == 0 and found == set()


def test_a_check_reads_each_sidecar_once_for_the_stream_and_its_manifest(tmp_path: Path) -> None:
    """The sidecar check and the manifest check share one read of each sidecar: in a bucket
    every read is a GET, and two reads could also judge two different documents."""
    from zverify.cold.proof.check import check_archive
    from zverify.cold.store import LocalStore

    root = archive_with_manifest(tmp_path)
    (root / f"{INC_S1_S2}.json").write_text(json.dumps({"dataset": "zv/fs"}))
    reads: list[str] = []

    class Counting(LocalStore):
        def read_small(self, key: str, expect: Any, limit: int) -> bytes:
            reads.append(key)
            return super().read_small(key, expect, limit)

    report = check_archive(Counting([str(root)]))
    assert report.exit_code == 0, report.all_problems
    assert sorted(reads) == sorted([f"{FULL_S1}.json", f"{INC_S1_S2}.json"])
