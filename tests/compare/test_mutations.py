"""Every single-attribute change to a faithful copy is detected, with the right kind.

Each mutation is applied to a fresh `cp -a` copy of the rich tree; the parent
directory's mtime is put back afterwards so that the only difference is the
one the mutation meant to make.
"""

import os
import shutil
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.compare.helpers import assert_sizes_reconciled, kinds, zverify


@contextmanager
def parent_mtime_kept(path: Path) -> Iterator[None]:
    parent = path.parent
    st = parent.stat()
    yield
    os.utime(parent, ns=(st.st_atime_ns, st.st_mtime_ns))


def flip_byte(d: Path) -> None:
    f = d / "docs/deep/a/b/c/leaf.bin"
    data = bytearray(f.read_bytes())
    data[1000] ^= 0x01
    st = f.stat()
    f.write_bytes(bytes(data))
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))  # content only, same mtime


def truncate(d: Path) -> None:
    f = d / "bin/tool"
    st = f.stat()
    os.truncate(f, 100)
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))


def retarget(d: Path) -> None:
    link = d / "bin/rel-link"
    st = link.lstat()
    with parent_mtime_kept(link):
        link.unlink()
        os.symlink("../docs/elsewhere", link)
    os.utime(link, ns=(st.st_atime_ns, st.st_mtime_ns), follow_symlinks=False)


def split_hardlink(d: Path) -> None:
    f = d / "pair-b"
    st = f.stat()
    with parent_mtime_kept(f):
        data = f.read_bytes()
        f.unlink()
        f.write_bytes(data)
    os.chmod(f, st.st_mode)
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))


def join_hardlink(d: Path) -> None:
    f = d / "same-2"
    with parent_mtime_kept(f):
        f.unlink()
        os.link(d / "same-1", f)


def chmod(d: Path) -> None:
    os.chmod(d / "bin/tool", 0o700)


def chown(d: Path) -> None:
    os.chown(d / "xattr-file", 1234, 5678)


def chown_symlink(d: Path) -> None:
    os.chown(d / "abs-link", 4321, 4321, follow_symlinks=False)


def touch(d: Path) -> None:
    os.utime(d / "docs/readme.txt", ns=(0, 1_000_000_000))


def touch_dir(d: Path) -> None:
    os.utime(d / "empty-dir", ns=(0, 1_000_000_000))


def setfattr(d: Path) -> None:
    os.setxattr(d / "xattr-file", "user.origin", b"changed")


def add_xattr_to_dir(d: Path) -> None:
    os.setxattr(d / "empty-dir", "user.new", b"1")


def remove(d: Path) -> None:
    f = d / "docs/readme.txt"
    with parent_mtime_kept(f):
        f.unlink()


def remove_subtree(d: Path) -> None:
    with parent_mtime_kept(d / "docs/deep"):
        shutil.rmtree(d / "docs/deep")


def add(d: Path) -> None:
    with parent_mtime_kept(d / "docs/new"):
        (d / "docs/new").write_bytes(b"extra\n")


def swap_type(d: Path) -> None:
    f = d / "empty-file"
    with parent_mtime_kept(f):
        f.unlink()
        f.mkdir()


def swap_dir_for_file(d: Path) -> None:
    with parent_mtime_kept(d / "docs/deep"):
        shutil.rmtree(d / "docs/deep")
        (d / "docs/deep").write_bytes(b"")


def change_device(d: Path) -> None:
    f = d / "null-dev"
    with parent_mtime_kept(f):
        f.unlink()
        os.mknod(f, 0o600 | stat.S_IFCHR, os.makedev(1, 5))


MUTATIONS: dict[str, tuple[Callable[[Path], None], set[tuple[str, str]]]] = {
    "flipped byte": (flip_byte, {("docs/deep/a/b/c/leaf.bin", "content")}),
    "truncation": (truncate, {("bin/tool", "content")}),
    "retargeted symlink": (retarget, {("bin/rel-link", "symlink")}),
    "split hardlink": (split_hardlink, {("pair-a", "hardlink")}),
    "joined hardlink": (join_hardlink, {("same-1", "hardlink")}),
    "chmod": (chmod, {("bin/tool", "mode")}),
    "chown": (chown, {("xattr-file", "owner")}),
    "chown symlink": (chown_symlink, {("abs-link", "owner")}),
    "touch": (touch, {("docs/readme.txt", "mtime")}),
    "touch dir": (touch_dir, {("empty-dir", "mtime")}),
    "setfattr": (setfattr, {("xattr-file", "xattr")}),
    "xattr on dir": (add_xattr_to_dir, {("empty-dir", "xattr")}),
    "missing": (remove, {("docs/readme.txt", "missing")}),
    "missing subtree": (remove_subtree, {("docs/deep", "missing")}),
    "extra": (add, {("docs/new", "extra")}),
    "type swap": (swap_type, {("empty-file", "type")}),
    "dir became file": (swap_dir_for_file, {("docs/deep", "type")}),
}


@pytest.mark.parametrize("name", list(MUTATIONS))
def test_mutation_detected(rich_tree: Path, rich_copy: Path, name: str) -> None:
    mutate, expected = MUTATIONS[name]
    mutate(rich_copy)
    code, doc = zverify(str(rich_tree), str(rich_copy))
    assert kinds(doc) == expected
    assert code == 1 and doc["identical"] is False
    assert_sizes_reconciled(doc, rich_tree, rich_copy)


def test_changed_device_numbers(rich_tree: Path, rich_copy: Path) -> None:
    src_mtime = (rich_copy / "null-dev").stat().st_mtime_ns
    change_device(rich_copy)
    os.utime(rich_copy / "null-dev", ns=(0, src_mtime), follow_symlinks=False)
    code, doc = zverify(str(rich_tree), str(rich_copy))
    assert kinds(doc) == {("null-dev", "special")}
    assert next(d for d in doc["differences"])["dst"] == "1:5"
    assert code == 1


def test_missing_subtree_is_one_difference_counting_what_is_below(
    rich_tree: Path, rich_copy: Path
) -> None:
    remove_subtree(rich_copy)
    _code, doc = zverify(str(rich_tree), str(rich_copy))
    (diff,) = doc["differences"]
    below = sum(1 for _ in (rich_tree / "docs/deep").rglob("*"))
    assert diff["entries_below"] == below
    missing = next(r for r in doc["sizes"]["explanation"] if r["component"] == "missing")
    assert missing["apparent_bytes"] < 0


def test_faithful_copy_exits_zero(rich_tree: Path, rich_copy: Path) -> None:
    code, doc = zverify(str(rich_tree), str(rich_copy))
    assert (code, doc["identical"], doc["differences"]) == (0, True, [])


@pytest.mark.parametrize(
    ("profile", "mutation", "detected"),
    [
        ("content", chmod, False),
        ("content", touch, False),
        ("content", flip_byte, True),
        ("rsync-a", chmod, True),
        ("rsync-a", split_hardlink, False),
        ("rsync-aH", split_hardlink, True),
        ("rsync-aH", setfattr, False),
        ("full", setfattr, True),
    ],
)
def test_profiles_select_what_counts(
    rich_tree: Path, rich_copy: Path, profile: str, mutation: Callable[[Path], None], detected: bool
) -> None:
    mutation(rich_copy)
    code, doc = zverify("--profile", profile, str(rich_tree), str(rich_copy))
    assert bool(doc["differences"]) is detected
    assert code == (1 if detected else 0)


def test_ignore_and_mtime_window(rich_tree: Path, rich_copy: Path) -> None:
    f = rich_copy / "docs/readme.txt"
    st = f.stat()
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 1_500_000_000))  # 1.5 s later
    assert zverify(str(rich_tree), str(rich_copy))[0] == 1
    assert zverify("--mtime-window", "2", str(rich_tree), str(rich_copy))[0] == 0
    assert zverify("--mtime-window", "1", str(rich_tree), str(rich_copy))[0] == 1
    assert zverify("--ignore", "mtime", str(rich_tree), str(rich_copy))[0] == 0
