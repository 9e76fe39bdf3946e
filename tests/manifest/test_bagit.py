"""BagIt bags made by bagit-python (the Library of Congress tool), checked through bagit.txt:
the bag's own consistency first (any failure exit 2), then its payload against a tree."""

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.manifest.helpers import compare, compare_fails
from tests.treebuilder import write

bagit = pytest.importorskip("bagit", reason="bagit-python not installed (pip install '.[test]')")


@pytest.fixture
def payload(tmp_path: Path) -> Path:
    root = tmp_path / "payload"
    write(root / "a.txt", b"hello\n")
    write(root / "sub/new\nline", b"encoded as %0A by the RFC\n")
    write(root / "sub/big.bin", bytes(range(256)) * 400)
    return root


@pytest.fixture
def bag(payload: Path, tmp_path: Path) -> Path:
    """A bag of a copy of the payload, with sha256 and sha512 manifests and tag manifests."""
    made = tmp_path / "bag"
    shutil.copytree(payload, made)
    bagit.make_bag(str(made), checksums=["sha256", "sha512"])
    return made


def test_a_valid_bag_verifies_against_its_payload_and_a_copy(bag: Path, payload: Path) -> None:
    code, doc = compare(bag / "bagit.txt", bag / "data", "--profile", "content")
    assert (code, doc["differences"]) == (0, [])
    assert doc["algorithm"] == "sha512"
    assert compare(bag / "bagit.txt", payload, "--profile", "content")[0] == 0


def test_what_a_bag_cannot_tell_is_refused(bag: Path) -> None:
    message = compare_fails(bag / "bagit.txt", bag / "data")
    assert "records payload digests only" in message and "--profile content" in message


def test_changed_missing_and_extra_payload(bag: Path, payload: Path) -> None:
    (payload / "a.txt").write_bytes(b"HELLO\n")
    (payload / "sub/big.bin").unlink()
    write(payload / "late", b"added")
    code, doc = compare(bag / "bagit.txt", payload, "--profile", "content")
    assert code == 1
    assert {(d["path"], d["kind"]) for d in doc["differences"]} == {
        ("a.txt", "content"),
        ("sub/big.bin", "missing"),
        ("late", "extra"),
    }


def _edit(path: Path, old: bytes, new: bytes) -> None:
    data = path.read_bytes()
    assert old in data
    path.write_bytes(data.replace(old, new, 1))


def test_an_edited_manifest_is_caught_by_the_tag_manifest(bag: Path) -> None:
    manifest = bag / "manifest-sha256.txt"
    _edit(manifest, b"data/a.txt", b"data/b.txt")
    message = compare_fails(bag / "bagit.txt", bag / "data", "--profile", "content")
    assert "the bag is damaged" in message and "manifest-sha256.txt does not match" in message


def test_manifests_that_disagree_are_not_complete(bag: Path) -> None:
    for tagmanifest in bag.glob("tagmanifest-*.txt"):
        tagmanifest.unlink()
    lines = (bag / "manifest-sha256.txt").read_bytes().splitlines(keepends=True)
    (bag / "manifest-sha256.txt").write_bytes(b"".join(lines[1:]))
    message = compare_fails(bag / "bagit.txt", bag / "data", "--profile", "content")
    assert "do not list the same files" in message


def test_payload_oxum_file_count_is_checked(bag: Path) -> None:
    for tagmanifest in bag.glob("tagmanifest-*.txt"):
        tagmanifest.unlink()
    info = bag / "bag-info.txt"
    text = info.read_text()
    oxum = next(line for line in text.splitlines() if line.startswith("Payload-Oxum"))
    octets = oxum.split(":")[1].strip().split(".")[0]
    info.write_text(text.replace(oxum, f"Payload-Oxum: {octets}.9"))
    assert "Payload-Oxum counts 9 files" in compare_fails(
        bag / "bagit.txt", bag / "data", "--profile", "content"
    )


def test_an_unencoded_percent_never_passes(tmp_path: Path) -> None:
    """bagit-python does not encode `%` (bagit-spec#46): a file named `p%25q` is listed as
    `data/p%25q`, which RFC 8493 reads as `p%q`.  zverify decodes as the RFC says, so the
    name shows as missing and extra: a difference, never an identical bag."""
    made = tmp_path / "pct"
    write(made / "p%25q", b"x")
    bagit.make_bag(str(made), checksums=["sha256"])
    code, doc = compare(made / "bagit.txt", made / "data", "--profile", "content")
    assert code == 1
    assert {(d["path"], d["kind"]) for d in doc["differences"]} == {
        ("p%q", "missing"),
        ("p%25q", "extra"),
    }


def test_bagit_python_agrees_that_the_bag_is_valid(bag: Path) -> None:
    done = subprocess.run(["bagit.py", "--validate", str(bag)], capture_output=True, text=True)
    if done.returncode == 127:
        pytest.skip("bagit.py script not on PATH")
    assert done.returncode == 0, done.stderr
