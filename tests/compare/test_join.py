"""The C join (compare.joined, native/src/zv_join.c) against the Python reference.

compare_trees(..., CompareOptions(c_join=False)) pairs the two walks in Python (march.py)
and judges every pair in the engine; the default settles identical pairs in C.  On generated
trees and generated damage to their copies, both must give the same result, byte for byte, in JSON
and in text.  The trees mix what changes the join's decisions: hard links (handed up),
sparse files filled in the copy (settled, with a du explanation), directories that grew
(settled: a directory's size is never compared), type changes and missing directories
(everything below is handed up for the engine's fold), and names that sort around '/'.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.cli.producer import timeless
from zverify.compare.joined import JoinedWalks
from zverify.report import compare_json as json_report
from zverify.report import compare_text as text_report
from zverify.trees.compare import compare_trees
from zverify.trees.options import CompareOptions
from zverify.walk import TreeWalk, WalkOptions

# Names whose order is tricky: '-', ' ' and '.' sort before '/', so "a-b" comes between
# "a" and "a/x" bytewise but after "a/x" in canonical order; plus invalid UTF-8.
NAMES = [b"a", b"a-b", b"a b", b"a.b", b"ab", b"b", b"\xff", b"z"]

entries = st.recursive(
    st.one_of(
        st.tuples(st.just("file"), st.binary(max_size=64)),
        st.tuples(st.just("sparse"), st.integers(1, 4)),
        st.tuples(st.just("link"), st.sampled_from([b"a", b"../b", b"/nowhere"])),
    ),
    lambda children: st.tuples(st.just("dir"), st.dictionaries(st.sampled_from(NAMES), children)),
    max_leaves=12,
)
trees = st.dictionaries(st.sampled_from(NAMES), entries, min_size=1)
NO_DAC_OVERRIDE = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search"]
DAMAGE = ["delete", "rewrite", "chmod", "touch", "xattr", "retype", "grow_dir", "fill", "link"]
damages = st.lists(st.tuples(st.sampled_from(DAMAGE), st.integers(0, 1000)), max_size=4)


def build(root: bytes, tree: dict[bytes, tuple]) -> None:
    os.mkdir(root)
    for name, (kind, value) in tree.items():
        path = os.path.join(root, name)
        if kind == "file":
            with open(path, "wb") as f:
                f.write(value)
        elif kind == "sparse":
            with open(path, "wb") as f:
                f.seek(value << 16)
                f.write(b"tail")
        elif kind == "link":
            os.symlink(value, path)
        else:
            build(path, value)


def all_paths(root: bytes) -> list[bytes]:
    found = []
    for top, dirs, files in os.walk(root):
        found += [os.path.join(top, n) for n in sorted(dirs) + sorted(files)]
    return sorted(found)


def damage(root: bytes, what: str, pick: int) -> None:
    paths = all_paths(root)
    if not paths:
        return
    path = paths[pick % len(paths)]
    is_dir = os.path.isdir(path) and not os.path.islink(path)
    if what == "delete":
        shutil.rmtree(path) if is_dir else os.unlink(path)
    elif what == "rewrite" and os.path.isfile(path) and not os.path.islink(path):
        with open(path, "r+b") as f:
            first = f.read(1)
            f.seek(0)
            f.write(bytes([(first[0] + 1) % 256]) if first else b"!")
    elif what == "chmod" and not os.path.islink(path):
        os.chmod(path, 0o700 if is_dir else 0o600)
    elif what == "touch":
        os.utime(path, ns=(0, 1_000_000_000 * pick), follow_symlinks=False)
    elif what == "xattr" and not os.path.islink(path):
        os.setxattr(path, b"user.zverify", str(pick).encode())
    elif what == "retype":
        shutil.rmtree(path) if is_dir else os.unlink(path)
        if is_dir:
            open(path, "wb").close()
        else:
            os.mkdir(path)
    elif what == "grow_dir" and is_dir:  # an ext4 directory does not shrink back
        names = [os.path.join(path, b"%03d" % i + b"-" * 60) for i in range(200)]
        for name in names:
            open(name, "wb").close()
        for name in names:
            os.unlink(name)
    elif what == "fill" and os.path.isfile(path) and not os.path.islink(path):
        filled = path + b".filled"
        subprocess.run(["cp", "-a", "--sparse=never", path, filled], check=True)
        os.replace(filled, path)
    elif what == "link" and os.path.isfile(path) and not os.path.lexists(path + b"-hl"):
        os.link(path, path + b"-hl")


def damaged_copy(
    tmp_path: Path,
    tree: dict[bytes, tuple],
    hardlink: bool,
    src_damage: list[tuple[str, int]],
    dst_damage: list[tuple[str, int]],
) -> tuple[bytes, bytes]:
    """tree built as SRC (with a hard link to its first file if asked), `cp -a` of it as
    DST, then each side damaged; in a new directory under tmp_path (hypothesis reuses it)."""
    work = bytes(tmp_path) + b"/%d" % len(os.listdir(tmp_path))
    os.mkdir(work)
    src, dst = work + b"/src", work + b"/dst"
    build(src, tree)
    if hardlink:
        files = [p for p in all_paths(src) if os.path.isfile(p) and not os.path.islink(p)]
        if files:
            os.link(files[0], src + b"/hardlink")
    subprocess.run(["cp", "-a", src, dst], check=True)
    for what, pick in src_damage:
        damage(src, what, pick)
    for what, pick in dst_damage:
        damage(dst, what, pick)
    return src, dst


def both_ways(src: bytes, dst: bytes) -> list[str]:
    outputs = []
    for c_join in (True, False):
        result = compare_trees(os.fsdecode(src), os.fsdecode(dst), CompareOptions(c_join=c_join))
        rendered = json_report.render_compare(result) + text_report.render_compare(result)
        outputs.append(timeless(rendered))
    return outputs


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(tree=trees, src_damage=damages, dst_damage=damages, hardlink=st.booleans())
def test_c_join_gives_the_python_result(
    tmp_path: Path,
    tree: dict[bytes, tuple],
    src_damage: list[tuple[str, int]],
    dst_damage: list[tuple[str, int]],
    hardlink: bool,
) -> None:
    src, dst = damaged_copy(tmp_path, tree, hardlink, src_damage, dst_damage)
    fast, reference = both_ways(src, dst)
    assert timeless(fast) == timeless(reference)


def test_identical_copy_is_settled_in_c_with_the_same_totals(tmp_path: Path) -> None:
    """The common case: every pair identical, hard links and sparse files included."""
    src, dst = bytes(tmp_path / "src"), bytes(tmp_path / "dst")
    build(src, {b"d": ("dir", {n: ("file", n * 100) for n in NAMES}), b"s": ("sparse", 3)})
    os.link(src + b"/d/a", src + b"/d/a-link")
    subprocess.run(["cp", "-a", src, dst], check=True)
    fast, reference = both_ways(src, dst)
    assert timeless(fast) == timeless(reference)
    assert '"identical": true' in fast
    walks = [TreeWalk(root, WalkOptions()) for root in (src, dst)]
    joined = JoinedWalks(*walks)
    handed_up = [pair for batch in joined.batches() for pair in batch]
    for walk in walks:
        walk.close()
    # only the two hard-linked paths need the engine; everything else was settled in C
    assert sorted(s.path for s, _ in handed_up) == [b"d/a", b"d/a-link"]
    assert joined.settled().pairs == len(all_paths(src)) + 1 - 2  # + the root


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to drop its permission bypass")
def test_unreadable_subtree_folds_the_same_way(tmp_path: Path) -> None:
    """A directory that cannot be listed on one side (and a file that cannot be read): the
    engine folds the directory's subtree; both paths must report the same errors."""
    src, dst = bytes(tmp_path / "src"), bytes(tmp_path / "dst")
    subtree = {b"x": ("file", b"1"), b"y": ("dir", {b"z": ("file", b"2")}), b"w": ("file", b"3")}
    build(src, {b"d": ("dir", subtree), b"e": ("file", b"4")})
    subprocess.run(["cp", "-a", src, dst], check=True)
    os.chmod(dst + b"/d/y", 0)
    os.chmod(src + b"/d/w", 0)
    code = (
        "import sys\n"
        "from zverify.trees.compare import compare_trees\n"
        "from zverify.trees.options import CompareOptions\n"
        "from zverify.report import compare_json as j\n"
        "for c in (True, False):\n"
        "    result = compare_trees(sys.argv[1], sys.argv[2], CompareOptions(c_join=c))\n"
        "    print(j.render_compare(result), end='\\x1e')\n"
    )
    repo = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        # root without the capabilities that bypass file permissions
        [*NO_DAC_OVERRIDE, sys.executable, "-c", code, os.fsdecode(src), os.fsdecode(dst)],
        capture_output=True,
        text=True,
        cwd=repo,
        env={**os.environ, "PYTHONPATH": str(repo)},
    )
    os.chmod(dst + b"/d/y", 0o755)
    assert done.returncode == 0, done.stderr
    fast, reference, _ = done.stdout.split("\x1e")
    assert timeless(fast) == timeless(reference)
    assert "DST: opendir: Permission denied" in fast and "SRC: open: Permission denied" in fast
    assert '"entries_below": 1' in fast  # the fold of d/y
