"""`compare --detect-moves`: a file only in SRC and one only in DST holding the same bytes
are one `moved` difference; nothing else is paired, and a move is still exit 1.  Run
through the installed console script."""

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.cli.console import needs_installed_command, zverify
from tests.treebuilder import write

pytestmark = needs_installed_command


@pytest.fixture
def moved(tmp_path: Path) -> tuple[Path, Path]:
    """Two files of one content both moved (a tie), one moved and then edited by one byte
    (not a move), an empty file moved (never paired), a directory moved whole (folded),
    and a file only in SRC whose content is nowhere in DST."""
    src, dst = tmp_path / "src", tmp_path / "dst"
    write(src / "a/same", b"shared\n")
    write(src / "b/same", b"shared\n")
    write(src / "edited", b"0123456789")
    write(src / "empty", b"")
    write(src / "dir/inside", b"inside\n")
    write(src / "gone", b"only here\n")
    write(src / "kept", b"kept\n")
    shutil.copytree(src, dst, symlinks=True)
    for old, new in (("a/same", "z-same2"), ("b/same", "a/c-same1"), ("empty", "empty2")):
        os.rename(dst / old, dst / new)
    os.rename(dst / "edited", dst / "edited2")
    write(dst / "edited2", b"0123456780")  # same size, one byte: content differs
    os.rename(dst / "dir", dst / "dir2")
    os.unlink(dst / "gone")
    for tree in (src, dst):  # only the files are the point here
        for root, dirs, _ in os.walk(tree):
            for d in [*dirs, ""]:
                os.utime(Path(root, d), (1, 1))
    return src, dst


def _compare(*args: str) -> tuple[int, dict[str, object], str]:
    done = zverify("compare", "--no-progress", "--json", *args)
    return done.returncode, json.loads(done.stdout), done.stderr


def test_only_exact_pairs_are_moves(moved: tuple[Path, Path]) -> None:
    src, dst = map(str, moved)
    code, doc, err = _compare("--detect-moves", src, dst)
    assert code == 1, err  # the trees are not the same
    found = [(d["path"], d["kind"], d.get("dst")) for d in doc["differences"]]  # type: ignore[attr-defined]
    # the tie: both 'shared' files went, both came; paired in path order
    assert ("a/same", "moved", "a/c-same1") in found and ("b/same", "moved", "z-same2") in found
    assert {(p, k) for p, k, _ in found if k in ("missing", "extra")} == {
        ("dir", "missing"),  # a directory: folded, its file not paired
        ("dir2", "extra"),
        ("edited", "missing"),  # one byte differs: never a move
        ("edited2", "extra"),
        ("empty", "missing"),  # empty files all look alike
        ("empty2", "extra"),
        ("gone", "missing"),
    }
    assert doc["counts"]["moved"] == 2  # type: ignore[index]

    # without the option: the same trees, every one of them missing + extra
    code, plain, _ = _compare(src, dst)
    assert code == 1 and "moved" not in plain["counts"]  # type: ignore[operator]
    assert plain["counts"]["missing"] == doc["counts"]["missing"] + 2  # type: ignore[index]


def test_text_and_lists_name_both_ends(moved: tuple[Path, Path], tmp_path: Path) -> None:
    src, dst = map(str, moved)
    lists = tmp_path / "L"
    done = zverify(
        "compare", "--no-progress", "--detect-moves", "--write-lists", str(lists), src, dst
    )
    assert done.returncode == 1, done.stderr
    assert "M moved    a/same  -> 'a/c-same1' (same size and digest)" in done.stdout.splitlines()
    assert (lists / "moved").read_bytes() == b"a/same\na/c-same1\nb/same\nz-same2\n"
    assert b"a/same" not in (lists / "missing").read_bytes()
    # fed back, the moved list brings both ends of each move back, paired again
    again = zverify(
        "compare", "--no-progress", "--json", "--detect-moves", "--files-from",
        str(lists / "moved"), src, dst,
    )  # fmt: skip
    kinds = {(d["path"], d["kind"]) for d in json.loads(again.stdout)["differences"]}
    assert kinds == {("a/same", "moved"), ("b/same", "moved")}, again.stderr
    without = zverify(
        "compare", "--no-progress", "-q", "--write-lists", str(tmp_path / "M"), src, dst
    )
    assert without.returncode == 1 and not (tmp_path / "M/moved").exists()


@pytest.mark.parametrize(
    ("option", "says"),
    [
        ("--quick", "--quick reads no content"),
        ("--ignore=content", "--ignore content reads no content"),
        ("--one-way", "not with extra ignored"),
        ("--ignore=missing", "not with missing ignored"),
    ],
)
def test_refused_where_digests_or_a_side_are_missing(
    moved: tuple[Path, Path], option: str, says: str
) -> None:
    done = zverify("compare", "--detect-moves", option, *map(str, moved))
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and says in done.stderr, done.stderr


def test_moved_is_not_a_kind_to_ignore(moved: tuple[Path, Path]) -> None:
    done = zverify("compare", "--ignore", "moved", *map(str, moved))
    assert done.returncode == 2 and "--detect-moves" in done.stderr, done.stderr


def test_a_manifest_side_pairs_as_a_tree(moved: tuple[Path, Path], tmp_path: Path) -> None:
    src, dst = moved
    manifest = tmp_path / "src.zvm"
    made = zverify("manifest", "--no-progress", str(src), "-o", str(manifest))
    assert made.returncode == 0, made.stderr
    _, live, _ = _compare("--detect-moves", str(src), str(dst))
    code, recorded, err = _compare("--detect-moves", str(manifest), str(dst))
    assert code == 1, err
    assert recorded["differences"] == live["differences"]
