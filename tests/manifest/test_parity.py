"""`compare manifest(A) B` gives exactly the verdict of `compare A B`.

Every mutation of the compare suite is applied to a faithful copy of the rich tree (odd
names with a newline and invalid UTF-8, hardlink groups, a sparse file past 4 GiB, xattrs
and ACLs, a device, a FIFO, a socket); the four ways to compare, live or recorded on
either side, must agree on everything but the names of their inputs.
"""

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.compare.test_mutations import MUTATIONS, change_device
from tests.manifest.helpers import compare, verdict, write_manifest


@pytest.fixture(scope="module")
def acl_tree(rich_tree: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The rich tree plus POSIX ACLs (an access ACL on a file, a default ACL on a dir)."""
    root = tmp_path_factory.mktemp("acl") / "src"
    subprocess.run(["cp", "-a", str(rich_tree), str(root)], check=True)
    subprocess.run(["setfacl", "-m", "u:1234:r", str(root / "docs/readme.txt")], check=True)
    subprocess.run(["setfacl", "-d", "-m", "g:4321:rx", str(root / "empty-dir")], check=True)
    return root


@pytest.fixture(scope="module")
def acl_manifest(acl_tree: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_manifest(acl_tree, tmp_path_factory.mktemp("m") / "src.zvm")


@pytest.fixture
def copy(acl_tree: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "copy"
    subprocess.run(["cp", "-a", str(acl_tree), str(dst)], check=True)
    return dst


def _four_ways(src: Path, src_manifest: Path, dst: Path, tmp_path: Path) -> list[tuple]:
    dst_manifest = write_manifest(dst, tmp_path / "dst.zvm.zst")
    return [
        compare(src, dst),
        compare(src_manifest, dst),
        compare(src, dst_manifest),
        compare(src_manifest, dst_manifest),
    ]


def _assert_same_verdicts(results: list[tuple]) -> None:
    (code, live), *recorded = results
    for other_code, doc in recorded:
        assert other_code == code
        assert verdict(doc) == verdict(live)


def _remove_acl(d: Path) -> None:
    subprocess.run(["setfacl", "-b", str(d / "docs/readme.txt")], check=True)


def _add_acl(d: Path) -> None:
    subprocess.run(["setfacl", "-m", "u:99:rw", str(d / "bin/tool")], check=True)


EXTRA_MUTATIONS: dict[str, Callable[[Path], None]] = {
    "changed device numbers": change_device,
    "ACL removed": _remove_acl,
    "ACL added": _add_acl,
}
ALL = {name: mutate for name, (mutate, _) in MUTATIONS.items()} | EXTRA_MUTATIONS


def test_faithful_copy_is_identical_every_way(
    acl_tree: Path, acl_manifest: Path, copy: Path, tmp_path: Path
) -> None:
    results = _four_ways(acl_tree, acl_manifest, copy, tmp_path)
    _assert_same_verdicts(results)
    assert results[0][0] == 0


@pytest.mark.parametrize("name", list(ALL))
def test_mutation_gives_the_same_verdict(
    acl_tree: Path, acl_manifest: Path, copy: Path, tmp_path: Path, name: str
) -> None:
    ALL[name](copy)
    results = _four_ways(acl_tree, acl_manifest, copy, tmp_path)
    _assert_same_verdicts(results)
    assert results[0][0] == 1 and results[0][1]["differences"]


@pytest.mark.parametrize("profile", ["content", "rsync-a", "rsync-aH"])
def test_profiles_and_ignore_agree(
    acl_tree: Path, acl_manifest: Path, copy: Path, profile: str
) -> None:
    _add_acl(copy)
    MUTATIONS["split hardlink"][0](copy)
    MUTATIONS["touch"][0](copy)
    for extra in (("--profile", profile), ("--ignore", "mtime,xattr")):
        (code, live), (code_m, recorded) = (
            compare(acl_tree, copy, *extra),
            compare(acl_manifest, copy, *extra),
        )
        assert code_m == code
        assert verdict(recorded) == verdict(live)
