"""Copies onto ext4, xfs, btrfs and tmpfs verify clean, and their sizes are explained."""

import subprocess
from pathlib import Path

from tests.cli import console
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


def test_manifests_of_a_real_rsync_copy_agree_with_the_live_compare(
    rich_tree: Path, mounted_fs: tuple[str, Path], tmp_path: Path
) -> None:
    """rsync -a without -H onto another filesystem: the hardlink groups come apart.  Two
    manifests, written on each side and compared offline, must give exactly the live verdict
    (and the du reconciliation), the filesystems recorded in the manifests included."""
    fstype, mnt = mounted_fs
    dst = mnt / "copy-rsync-a"
    subprocess.run(["rsync", "-a", "--sparse", f"{rich_tree}/", f"{dst}/"], check=True)
    src_manifest, dst_manifest = tmp_path / "src.zvm.zst", tmp_path / "dst.zvm"
    for tree, out in ((rich_tree, src_manifest), (dst, dst_manifest)):
        written = console.zverify("manifest", "-q", str(tree), "-o", str(out))
        assert written.returncode == 0, written.stderr
    live_code, live = zverify(str(rich_tree), str(dst))
    code, offline = zverify(str(src_manifest), str(dst_manifest))
    assert live_code == code == 1
    assert offline["differences"] == live["differences"]
    assert {d["kind"] for d in live["differences"]} >= {"hardlink"}
    assert offline["sizes"] == live["sizes"]
    assert offline["sizes"]["dst"]["filesystem"]["type"] == fstype
    subprocess.run(["rm", "-rf", str(dst)], check=True)
