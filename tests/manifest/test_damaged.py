"""A damaged manifest never verifies: truncated, reordered, edited, of another version or
not a manifest at all, it ends the comparison with exit 2 and one line naming the line."""

import gzip
import json
from collections.abc import Callable
from pathlib import Path

import pytest
import zstandard

from tests.manifest.helpers import compare, compare_fails, write_manifest


@pytest.fixture(scope="module")
def good(rich_tree: Path, tmp_path_factory: pytest.TempPathFactory) -> bytes:
    out = write_manifest(rich_tree, tmp_path_factory.mktemp("good") / "m.zvm")
    return out.read_bytes()


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


def _edit_entry(data: bytes) -> bytes:
    """Change one recorded size, keeping the line valid JSON."""
    lines = _lines(data)
    i = next(n for n, line in enumerate(lines) if b'"p":"bin/tool"' in line)
    entry = json.loads(lines[i])
    entry["size"] += 1
    lines[i] = json.dumps(entry, separators=(",", ":")).encode() + b"\n"
    return b"".join(lines)


def _swap(data: bytes) -> bytes:
    lines = _lines(data)
    lines[3], lines[4] = lines[4], lines[3]
    return b"".join(lines)


def _drop_entry(data: bytes) -> bytes:
    lines = _lines(data)
    del lines[5]
    return b"".join(lines)


def _version(data: bytes) -> bytes:
    return data.replace(b'{"zverify_manifest":1,', b'{"zverify_manifest":2,', 1)


# mutation -> (line the message names, what it says)
DAMAGE: dict[str, tuple[Callable[[bytes], bytes], str]] = {
    "cut at a line end": (lambda d: b"".join(_lines(d)[:10]), "truncated after line 10"),
    "cut mid-line": (lambda d: d[: len(b"".join(_lines(d)[:7])) + 9], "line 8: truncated"),
    "trailer removed": (lambda d: b"".join(_lines(d)[:-1]), "the trailer line is missing"),
    "entry edited": (_edit_entry, "digest mismatch"),
    "entry dropped": (_drop_entry, "digest mismatch"),
    "lines swapped": (_swap, "line 5: entries out of canonical order"),
    "line repeated": (
        lambda d: d.replace(_lines(d)[6], _lines(d)[6] * 2, 1),
        "line 8: entries out",
    ),
    "other version": (_version, "line 1: format version 2"),
    # review 3, L5: JSON true and 1.0 equal 1 in Python, and were read as version 1
    "version true": (
        lambda d: d.replace(b'"zverify_manifest":1,', b'"zverify_manifest":true,', 1),
        "format version True",
    ),
    "version 1.0": (
        lambda d: d.replace(b'"zverify_manifest":1,', b'"zverify_manifest":1.0,', 1),
        "format version 1.0",
    ),
    "not JSON": (lambda d: b"path size\n" + d, "line 1: not a zverify manifest"),
    "empty": (lambda d: b"", "line 1: empty file"),
    "non-ASCII byte": (lambda d: d.replace(b"readme.txt", b"readme\xff.txt", 1), "ASCII JSON"),
    "bad escape": (lambda d: d.replace(b"readme.txt", b"readme\\\\q.txt", 1), "escaped byte"),
    "data after trailer": (lambda d: d + d.splitlines(keepends=True)[1], "after the trailer"),
}


@pytest.mark.parametrize("name", list(DAMAGE))
def test_damage_exits_2_naming_the_line(
    good: bytes, rich_tree: Path, tmp_path: Path, name: str
) -> None:
    damage, expected = DAMAGE[name]
    bad = tmp_path / "bad.zvm"
    bad.write_bytes(damage(good))
    assert expected in compare_fails(bad, rich_tree)
    assert expected in compare_fails(rich_tree, bad)


def test_the_undamaged_manifest_verifies(good: bytes, rich_tree: Path, tmp_path: Path) -> None:
    """The control: the same bytes, written back, compare identical."""
    (tmp_path / "m.zvm").write_bytes(good)
    assert compare(tmp_path / "m.zvm", rich_tree)[0] == 0


@pytest.mark.parametrize("suffix", ["zst", "gz"])
def test_truncated_compressed_manifest_exits_2(
    good: bytes, rich_tree: Path, tmp_path: Path, suffix: str
) -> None:
    packed = zstandard.ZstdCompressor().compress(good) if suffix == "zst" else gzip.compress(good)
    whole, cut = tmp_path / f"whole.zvm.{suffix}", tmp_path / f"cut.zvm.{suffix}"
    whole.write_bytes(packed)
    cut.write_bytes(packed[: len(packed) // 2])
    assert compare(whole, rich_tree)[0] == 0
    assert "manifest" in compare_fails(cut, rich_tree)


def test_manifest_from_stdin(good: bytes, rich_tree: Path) -> None:
    from tests.manifest.helpers import run

    done = run("compare", "--no-progress", "-", str(rich_tree), stdin=good)
    assert done.returncode == 0 and b"IDENTICAL" in done.stdout
    done = run("compare", "--no-progress", "-", str(rich_tree), stdin=good[:-20])
    assert done.returncode == 2 and b"manifest -: line" in done.stderr


def test_two_manifests_with_different_digests_are_refused(
    good: bytes, rich_tree: Path, tmp_path: Path
) -> None:
    (tmp_path / "x.zvm").write_bytes(good)
    b3 = write_manifest(rich_tree, tmp_path / "b.zvm", "--hash", "blake3")
    assert compare(b3, rich_tree)[0] == 0
    assert "cannot be compared" in compare_fails(tmp_path / "x.zvm", b3)
    assert "leave --hash out" in compare_fails(b3, rich_tree, "--hash", "xxh3")
