"""Copies made by real tools, with exact expected verdicts."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.compare.helpers import assert_sizes_reconciled, inode_groups, kinds, zverify


def copy(tool: list[str], src: Path, dst: Path) -> Path:
    subprocess.run([*tool, f"{src}/", f"{dst}/"], check=True, capture_output=True)
    return dst


def tar_copy(src: Path, dst: Path) -> Path:
    dst.mkdir()
    flags = ["--xattrs", "--xattrs-include=*", "--acls", "--numeric-owner"]
    pack = subprocess.Popen(
        ["tar", *flags, "-cSpf", "-", "-C", str(src), "."], stdout=subprocess.PIPE
    )
    subprocess.run(["tar", *flags, "-xpf", "-", "-C", str(dst)], stdin=pack.stdout, check=True)
    assert pack.wait() == 0
    return dst


@pytest.mark.parametrize("how", ["cp -a", "rsync -aHAX --sparse"])
def test_faithful_copies_are_identical(rich_tree: Path, tmp_path: Path, how: str) -> None:
    dst = tmp_path / "dst"
    if how == "cp -a":
        subprocess.run(["cp", "-a", str(rich_tree), str(dst)], check=True)
    else:
        copy(how.split(), rich_tree, dst)
    code, doc = zverify(str(rich_tree), str(dst))
    assert doc["differences"] == [] and doc["identical"] is True
    assert code == 0
    assert_sizes_reconciled(doc, rich_tree, dst)


def test_tar_copy_is_identical_except_the_socket_tar_skips(rich_tree: Path, tmp_path: Path) -> None:
    # GNU tar prints "socket ignored": the one thing it cannot archive.
    dst = tar_copy(rich_tree, tmp_path / "dst")
    code, doc = zverify(str(rich_tree), str(dst))
    assert kinds(doc) == {("sock", "missing")}
    assert code == 1
    assert_sizes_reconciled(doc, rich_tree, dst)


@pytest.fixture(scope="module")
def rsync_a_copy(rich_tree: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    # --sparse only so the 5 GiB sparse file does not fill the disk with zeros
    return copy(["rsync", "-a", "--sparse"], rich_tree, tmp_path_factory.mktemp("rsync") / "dst")


def test_rsync_a_breaks_exactly_the_hardlink_groups(rich_tree: Path, rsync_a_copy: Path) -> None:
    code, doc = zverify("--profile", "rsync-aH", str(rich_tree), str(rsync_a_copy))
    found = {frozenset(d["members"]) for d in doc["differences"] if d["kind"] == "hardlink"}
    assert found == inode_groups(rich_tree) and found
    assert {d["kind"] for d in doc["differences"]} == {"hardlink"}
    assert code == 1
    assert_sizes_reconciled(doc, rich_tree, rsync_a_copy)
    hardlinks = next(r for r in doc["sizes"]["explanation"] if r["component"] == "hardlinks")
    assert hardlinks["apparent_bytes"] > 0


def test_rsync_a_is_identical_under_its_own_profile(rich_tree: Path, rsync_a_copy: Path) -> None:
    code, doc = zverify("--profile", "rsync-a", str(rich_tree), str(rsync_a_copy))
    assert (code, doc["differences"]) == (0, [])


def test_rsync_a_without_x_loses_xattrs_under_full(rich_tree: Path, rsync_a_copy: Path) -> None:
    code, doc = zverify(str(rich_tree), str(rsync_a_copy))
    xattr_paths = {d["path"] for d in doc["differences"] if d["kind"] == "xattr"}
    assert xattr_paths == {"docs", "xattr-file"}
    assert code == 1


def test_filled_sparse_file_is_explained_as_holes(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    with open(src / "holey", "wb") as f:
        f.seek(64 << 20)
        f.write(b"end")
    dst = tmp_path / "dst"  # --sparse=never: every hole gets written as zeros
    subprocess.run(["cp", "-a", "--sparse=never", str(src), str(dst)], check=True)
    # written back before the walk and du stat it: with delayed allocation, a writeback
    # between the two stats can move the allocated size (dst's du differed once, in a loaded
    # sanitizer run; it passed alone, under the sanitizers too)
    os.sync()
    code, doc = zverify(str(src), str(dst))
    assert code == 0
    rows = {r["component"]: r for r in doc["sizes"]["explanation"]}
    assert rows["sparse"]["allocated_bytes"] >= 64 << 20
    assert_sizes_reconciled(doc, src, dst)


@pytest.mark.skipif(not Path("/usr/bin").is_dir(), reason="no /usr/bin on this machine")
def test_rsync_a_copy_of_usr_bin(tmp_path: Path) -> None:
    src = Path("/usr/bin")
    dst = copy(["rsync", "-a"], src, tmp_path / "bin")
    code, doc = zverify(str(src), str(dst))
    expected = inode_groups(src)
    found = {frozenset(d["members"]) for d in doc["differences"] if d["kind"] == "hardlink"}
    assert found == expected
    assert {d["kind"] for d in doc["differences"]} <= {"hardlink"}
    assert code == (1 if expected else 0)
    assert_sizes_reconciled(doc, src, dst)
    assert shutil.which("du")
