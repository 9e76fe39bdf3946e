"""Each path where a failure or an oversight used to look like a verdict (issue "No false OK,
ever"), run through the installed console script: every test here failed before the fix."""

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.cli.console import console_script, zverify
from tests.treebuilder import write
from zverify.pathnames import restore

# scripts/asan.sh runs the tests in a scratch copy with an instrumented build; the installed
# console script runs the main checkout with its normal build: neither that copy nor that build.
pytestmark = pytest.mark.skipif(
    os.environ.get("ZVERIFY_SANITIZE") == "1",
    reason="sanitizer run: the installed `zverify` is the main checkout's normal build",
)


def same_times(src: Path, dst: Path, names: list[str]) -> None:
    for name in names:
        os.utime(dst / name, ns=(0, (src / name).lstat().st_mtime_ns), follow_symlinks=False)
    os.utime(dst, ns=(0, src.stat().st_mtime_ns))


def compare_json(*args: str) -> tuple[int, dict[str, object]]:
    done = zverify("compare", "--json", *args)
    return done.returncode, json.loads(done.stdout) if done.stdout else {}


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    write(src / "f", b"data\n")
    return src


@pytest.mark.parametrize("how", ["path", "trailing-slash", "symlink"])
def test_same_directory_twice_is_refused(tree: Path, how: str) -> None:
    other = {"path": str(tree), "trailing-slash": f"{tree}/", "symlink": str(tree) + "-link"}[how]
    if how == "symlink":
        os.symlink(tree, other)
    done = zverify("compare", "--no-progress", str(tree), other)
    assert done.returncode == 2 and done.stdout == ""
    assert "same directory" in done.stderr and len(done.stderr.splitlines()) == 1


@pytest.mark.skipif(os.geteuid() != 0, reason="bind mounts need root")
def test_bind_mount_of_src_is_refused(tree: Path, tmp_path: Path) -> None:
    mnt = tmp_path / "bind"
    mnt.mkdir()
    subprocess.run(["mount", "--bind", str(tree), str(mnt)], check=True)
    try:
        done = zverify("compare", "--no-progress", str(tree), str(mnt))
    finally:
        subprocess.run(["umount", str(mnt)], check=True)
    assert done.returncode == 2 and "same directory" in done.stderr


def test_dst_inside_src_is_said(tree: Path) -> None:
    write(tree / "copy" / "f", (tree / "f").read_bytes())
    code, doc = compare_json(str(tree), str(tree / "copy"))
    assert code == 1  # the copy misses itself: the verdict is right, and now explained
    assert doc["notes"] == ["DST lies inside SRC: its entries are also compared as part of SRC"]
    text = zverify("compare", "--no-progress", str(tree), str(tree / "copy")).stdout
    assert "note: DST lies inside SRC" in text


def test_hardlinked_symlinks_and_fifos_are_compared(tmp_path: Path) -> None:
    """rsync -aHn reports these (hL, hS); they used to pass as IDENTICAL."""
    src, dst = tmp_path / "src", tmp_path / "dst"
    src.mkdir()
    dst.mkdir()
    os.symlink("target", src / "l1")
    os.link(src / "l1", src / "l2", follow_symlinks=False)
    os.mkfifo(src / "p1")
    os.link(src / "p1", src / "p2")
    for name in ("l1", "l2"):
        os.symlink("target", dst / name)
    for name in ("p1", "p2"):
        os.mkfifo(dst / name)
    same_times(src, dst, ["l1", "l2", "p1", "p2"])
    code, doc = compare_json(str(src), str(dst))
    assert code == 1
    found = {(d["path"], d["kind"], tuple(d["members"])) for d in doc["differences"]}
    assert found == {("l1", "hardlink", ("l1", "l2")), ("p1", "hardlink", ("p1", "p2"))}
    # a faithful copy (cp -a keeps hardlinks of every type) is identical
    subprocess.run(["cp", "-a", str(src), str(tmp_path / "good")], check=True)
    assert zverify("compare", "--no-progress", str(src), str(tmp_path / "good")).returncode == 0


def test_non_utf8_hardlink_members_and_symlink_targets_round_trip(tmp_path: Path) -> None:
    src, dst = os.fsencode(tmp_path / "src"), os.fsencode(tmp_path / "dst")
    for root in (src, dst):
        os.mkdir(root)
    for root, target in ((src, b"t\xff"), (dst, b"t\\xff")):
        os.symlink(target, root + b"/link")
    with open(src + b"/h\xff", "wb") as f:
        f.write(b"x")
    os.link(src + b"/h\xff", src + b"/h\xfe")
    for name in (b"/h\xff", b"/h\xfe"):
        with open(dst + name, "wb") as f:
            f.write(b"x")
    code, doc = compare_json("--ignore", "mtime", os.fsdecode(src), os.fsdecode(dst))
    assert code == 1
    by_kind = {d["kind"]: d for d in doc["differences"]}  # type: ignore[union-attr, index]
    hard = by_kind["hardlink"]
    members = {restore(m, e) for m, e in zip(hard["members"], hard["members_escaped"], strict=True)}
    assert members == {b"h\xff", b"h\xfe"}
    link = by_kind["symlink"]
    assert restore(link["src"], link.get("src_escaped", False)) == b"t\xff"
    assert restore(link["dst"], link.get("dst_escaped", False)) == b"t\\xff"


def test_ignored_kinds_are_named_in_the_verdict(tree: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    write(other / "f", b"DATA\n")
    done = zverify("compare", "--no-progress", "--ignore", "content,mtime", str(tree), str(other))
    assert done.returncode == 0
    assert "IDENTICAL under profile full minus content, mtime" in done.stdout


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to set trusted.* and drop privileges")
def test_trusted_xattrs_invisible_without_cap_sys_admin_are_not_verified(tmp_path: Path) -> None:
    """Review 3, H5: profile full promises xattrs; a process that cannot see trusted.* has not
    shown them equal, so the run is INCOMPLETE (exit 2) until the user narrows the check."""
    src, dst = tmp_path / "src", tmp_path / "dst"
    write(src / "f", b"d\n")
    os.setxattr(src / "f", "trusted.overlay.opaque", b"y")
    subprocess.run(["rsync", "-a", f"{src}/", f"{dst}/"], check=True)  # drops xattrs
    same_times(src, dst, ["f"])
    as_root = zverify("compare", "--no-progress", str(src), str(dst))
    assert as_root.returncode == 1 and "trusted.overlay.opaque" in as_root.stdout
    # what a non-root user is: the kernel hides trusted.* from listxattr without the capability
    drop = ["setpriv", "--bounding-set", "-sys_admin", console_script(), "compare"]
    blind = subprocess.run([*drop, "--json", str(src), str(dst)], capture_output=True, text=True)
    doc = json.loads(blind.stdout)
    assert blind.returncode == 2 and doc["exit_code"] == 2 and doc["identical"] is False
    assert doc["unverifiable"] == ["trusted.* xattrs"] and doc["differences"] == []
    text = subprocess.run([*drop, "-q", str(src), str(dst)], capture_output=True, text=True)
    assert text.returncode == 2 and text.stdout.startswith("INCOMPLETE: 0 differences")
    assert "trusted.* xattrs not readable by this process: not compared" in text.stdout
    assert "--ignore xattr" in text.stdout  # the way out is named
    # narrowing the profile explicitly is the user's statement that xattrs do not matter
    for narrow in (["--ignore", "xattr"], ["--profile", "rsync-aH"]):
        done = subprocess.run([*drop, "-q", *narrow, str(src), str(dst)], capture_output=True)
        assert done.returncode == 0, (narrow, done.stdout)
    assert compare_json(str(src), str(dst))[1]["unverifiable"] == []  # root sees them all
    # root of a user namespace has CAP_SYS_ADMIN there only: the kernel still hides trusted.*
    userns = subprocess.run(
        ["unshare", "-r", console_script(), "compare", "-q", str(src), str(dst)],
        capture_output=True,
        text=True,
    )
    if "unshare failed" in userns.stderr:
        return  # no user namespaces here: nothing more to show
    assert userns.returncode == 2 and "not readable by this process" in userns.stdout, userns


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to set trusted.* and drop privileges")
def test_trusted_xattrs_unseen_by_a_manifest_writer_are_not_verified(tmp_path: Path) -> None:
    """A manifest written without CAP_SYS_ADMIN lacks trusted.*: comparing to it under
    profile full is not verified either, and a differing DST is never better than 2."""
    src = tmp_path / "src"
    write(src / "f", b"d\n")
    manifest = tmp_path / "m.zvm"
    drop = ["setpriv", "--bounding-set", "-sys_admin", console_script()]
    subprocess.run([*drop, "manifest", "-q", str(src), "-o", str(manifest)], check=True)
    done = zverify("compare", "-q", str(manifest), str(src))
    assert done.returncode == 2 and "when the manifest was written" in done.stdout
    assert zverify("compare", "-q", "--ignore", "xattr", str(manifest), str(src)).returncode == 0
    write(src / "f", b"changed\n")
    assert zverify("compare", "-q", str(manifest), str(src)).returncode == 2


def test_root_that_is_not_utf8_is_escaped_in_text_and_json(tree: Path, tmp_path: Path) -> None:
    raw = os.fsencode(tmp_path) + b"/copy\xff"
    subprocess.run([b"cp", b"-a", os.fsencode(tree), raw], check=True)
    other = os.fsdecode(raw)
    strict = {"PYTHONIOENCODING": "utf-8:strict"}
    text = zverify("compare", "--no-progress", str(tree), other, env=strict)
    assert text.returncode == 0 and "copy\\xff" in text.stdout
    done = subprocess.run(
        [console_script(), "compare", "--json", str(tree), other], capture_output=True
    )
    doc = json.loads(done.stdout.decode("utf-8"))  # strict: no raw 0xFF in the document
    assert doc["dst_escaped"] is True and restore(doc["dst"], True) == raw
