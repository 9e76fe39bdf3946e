"""`compare --write-lists` that mean, fed back, what they meant when written: to
`zverify compare --files-from` (only what differed is checked again) and to real rsync (the
lines docs/guide/compare.md gives repair the copy).  Run through the installed console script."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.cli.console import needs_installed_command, zverify
from tests.treebuilder import write

pytestmark = needs_installed_command

RSYNC = shutil.which("rsync")
OLD = 1_600_000_000


def _rsync(*args: str) -> None:
    if RSYNC is None:
        pytest.skip("rsync is not installed: the lists cannot be fed to it")
    subprocess.run([RSYNC, *args], check=True, capture_output=True)


@pytest.fixture
def damaged(tmp_path: Path) -> tuple[Path, Path]:
    """SRC and its rsync -a copy, then in the copy: three files changed (one appended, one
    rewritten, one rotted: same size and mtime), one directory's and the root's mtime
    set, a directory removed (which also moves its parent's mtime)."""
    src, dst = tmp_path / "src", tmp_path / "dst"
    for d in ("d1", "d1/sub", "d2", "d3", "gone"):
        for i in range(4):
            write(src / d / f"f{i}", f"{d} {i}\n".encode())
    for root, dirs, files in os.walk(src):
        for name in [*dirs, *files, ""]:
            os.utime(Path(root, name), (OLD, OLD))
    _rsync("-a", f"{src}/", f"{dst}/")
    with open(dst / "d1/f1", "ab") as f:
        f.write(b"appended")
    write(dst / "d2/f2", b"rewritten")
    rotted = dst / "d1/sub/f3"
    rotted.write_bytes(rotted.read_bytes().upper())
    os.utime(rotted, (OLD, OLD))  # rsync's quick check cannot see this one
    shutil.rmtree(dst / "gone")
    os.utime(dst / "d3", (OLD - 99, OLD - 99))
    os.utime(dst, (OLD + 99, OLD + 99))
    return src, dst


def _lists(src: Path, dst: Path, lists: Path) -> dict[str, list[str]]:
    done = zverify(
        "compare", "--no-progress", "-q", "--write-lists", str(lists), str(src), str(dst)
    )
    assert done.returncode == 1, done.stderr
    return {name: (lists / name).read_text().splitlines() for name in os.listdir(lists)}


def test_directory_metadata_does_not_stand_for_its_subtree(
    damaged: tuple[Path, Path], tmp_path: Path
) -> None:
    src, dst = damaged
    got = _lists(src, dst, tmp_path / "L")
    assert got == {
        "differ": ["d1/f1", "d1/sub/f3", "d2/f2"],
        "differ-dirs": [".", "d3"],  # the root's and d3's own mtimes (gone/ moved the root's)
        "missing": ["gone"],
        "extra": [],
        "error": [],
    }
    # fed back, `differ` has exactly its files compared again (and the directories on the
    # way to them), not the subtree of a directory whose mtime differed
    again = zverify(
        "compare", "--json", "--no-progress", "--files-from", str(tmp_path / "L/differ"),
        str(src), str(dst),
    )  # fmt: skip
    doc = json.loads(again.stdout)
    assert again.returncode == 1, again.stderr
    ancestors = {p.rsplit("/", n)[0] for p in got["differ"] for n in range(1, p.count("/") + 1)}
    ancestors.add(".")
    assert doc["sizes"]["src"]["counts"] == {"file": len(got["differ"]), "dir": len(ancestors)}
    files = {d["path"] for d in doc["differences"] if d["kind"] == "content"}
    assert files == set(got["differ"])


def test_lists_fed_to_rsync_repair_the_copy(damaged: tuple[Path, Path], tmp_path: Path) -> None:
    """docs/guide/compare.md's lines: missing and differ with -r (a listed directory is its subtree)
    and -I (a rotted file has the size and mtime of the good one), then differ-dirs with no
    -r (each directory itself: its attributes, not its content), last because writing into
    a directory moves its mtime."""
    src, dst = damaged
    lists = tmp_path / "L"
    _lists(src, dst, lists)
    for name in ("missing", "differ"):
        _rsync("-aHAX", "-r", "-I", f"--files-from={lists / name}", f"{src}/", f"{dst}/")
    _rsync("-aHAX", f"--files-from={lists / 'differ-dirs'}", f"{src}/", f"{dst}/")
    done = zverify("compare", "--no-progress", "-q", str(src), str(dst))
    assert done.returncode == 0, done.stdout + done.stderr


def test_differ_dirs_with_r_would_copy_the_whole_tree(
    damaged: tuple[Path, Path], tmp_path: Path
) -> None:
    """Why differ-dirs is its own list: with -r, the '.' in it is every file again (as
    `differ` was when it held '.').  Without -r rsync goes no deeper than the root's own
    entries ('.' is the one name rsync --dirs opens, one level)."""
    if RSYNC is None:
        pytest.skip("rsync is not installed: the lists cannot be fed to it")
    src, dst = damaged
    lists = tmp_path / "L"
    _lists(src, dst, lists)
    files_from = f"--files-from={lists / 'differ-dirs'}"
    itemized = {
        r: subprocess.run(
            [RSYNC, "-ain", *r, "--out-format=%n", files_from, f"{src}/", f"{dst}/"],
            capture_output=True, text=True, check=True,
        ).stdout.split()
        for r in ((), ("-r",))
    }  # fmt: skip
    below = {"d1/f1", "d2/f2", "gone/f0"}  # (the rotted file passes its quick check)
    assert {"./", "d3/"} <= set(itemized[()]) and not below & set(itemized[()])
    assert below <= set(itemized[("-r",)])
