"""Copies onto ext4, xfs, btrfs and tmpfs verify clean, and their sizes are explained."""

import subprocess
from pathlib import Path

from tests.compare.helpers import assert_sizes_reconciled, zverify


def test_copy_onto_each_filesystem_is_identical_and_explained(
    rich_tree: Path, mounted_fs: tuple[str, Path]
) -> None:
    fstype, mnt = mounted_fs
    dst = mnt / "copy-cp"
    subprocess.run(["cp", "-a", str(rich_tree), str(dst)], check=True)
    code, doc = zverify(str(rich_tree), str(dst))
    assert doc["differences"] == [], doc["differences"]
    assert code == 0
    assert doc["sizes"]["dst"]["filesystem"]["type"] == fstype
    assert_sizes_reconciled(doc, rich_tree, dst)
    subprocess.run(["rm", "-rf", str(dst)], check=True)


def test_rsync_aHAX_onto_each_filesystem(rich_tree: Path, mounted_fs: tuple[str, Path]) -> None:
    _fstype, mnt = mounted_fs
    dst = mnt / "copy-rsync"
    subprocess.run(["rsync", "-aHAX", "--sparse", f"{rich_tree}/", f"{dst}/"], check=True)
    code, doc = zverify(str(rich_tree), str(dst))
    assert (code, doc["differences"]) == (0, [])
    assert_sizes_reconciled(doc, rich_tree, dst)
    # the same bytes take other space elsewhere: directories at least differ
    if doc["sizes"]["src"]["du_bytes"] != doc["sizes"]["dst"]["du_bytes"]:
        nonzero = [r for r in doc["sizes"]["explanation"] if r["allocated_bytes"]]
        assert nonzero and all(r["component"] != "unexplained" for r in nonzero)
    subprocess.run(["rm", "-rf", str(dst)], check=True)
