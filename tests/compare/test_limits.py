"""Resource limits and odd filesystems that used to turn a good copy into a false alarm or
a wrong verdict (issue 13): descriptor limits, dates past 2262, pseudo-files, mount points
under -x, a missing /proc.  Every test runs the installed `zverify` in a subprocess."""

import json
import os
import resource
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.cli.console import console_script, needs_installed_command, zverify
from tests.treebuilder import sparse

pytestmark = needs_installed_command

NS = 1_000_000_000


def limit_descriptors(n: int) -> Callable[[], None]:
    """preexec_fn: soft and hard RLIMIT_NOFILE both n, as `ulimit -n n` in bash sets them."""
    return lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))


def compare_json(*args: str, **kw: object) -> tuple[int, dict]:
    done = zverify("compare", "--json", *args, **kw)
    assert done.stdout, done.stderr
    return done.returncode, json.loads(done.stdout)


@contextmanager
def tmpfs(*dirs: Path) -> Iterator[None]:
    for d in dirs:
        d.mkdir(exist_ok=True)
        done = subprocess.run(["mount", "-t", "tmpfs", "tmpfs", str(d)], capture_output=True)
        if done.returncode != 0:
            pytest.skip(f"cannot mount tmpfs: {done.stderr.decode().strip()}")
    try:
        yield
    finally:
        for d in dirs:
            subprocess.run(["umount", "-l", str(d)], check=False)


# ---- descriptors ----


@pytest.fixture(scope="module")
def many_big_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """2,000 sparse 8 MiB files: listing runs far ahead of hashing, so a walk without a
    budget opened 64 files per thread and hit EMFILE under `ulimit -n 1024`."""
    base = tmp_path_factory.mktemp("fds")
    src, dst = base / "src", base / "dst"
    src.mkdir()
    for i in range(2000):
        sparse(src / f"f{i:04d}", 8 << 20, {})
    subprocess.run(["cp", "-a", "--sparse=always", f"{src}/.", str(dst)], check=True)
    os.utime(dst, ns=(0, src.stat().st_mtime_ns))
    return src, dst


@pytest.mark.parametrize(("nofile", "threads"), [(256, 8), (256, 64), (64, 32)])
def test_any_thread_count_fits_the_descriptor_limit(
    many_big_files: tuple[Path, Path], nofile: int, threads: int
) -> None:
    src, dst = many_big_files
    code, doc = compare_json(
        "--threads", str(threads), str(src), str(dst), preexec_fn=limit_descriptors(nofile)
    )
    assert (code, doc["counts"]) == (0, {}), doc["differences"][:3]


def make_deep(root: Path, depth: int) -> None:
    """depth levels of 100-byte names (deeper than PATH_MAX allows to name at once)."""
    root.mkdir()
    fd = os.open(root, os.O_RDONLY)
    try:
        for level in range(depth):
            name = f"{level:03d}" + "d" * 97
            os.mkdir(name, dir_fd=fd)
            next_fd = os.open(name, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = next_fd
        os.close(os.open("leaf", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
    finally:
        os.close(fd)


def test_deep_tree_under_a_small_descriptor_limit(tmp_path: Path) -> None:
    """150 levels with `ulimit -n 48`: directories past the budget are reopened on the way
    back up instead of failing with EMFILE."""
    src, dst = tmp_path / "src", tmp_path / "dst"
    make_deep(src, 150)
    make_deep(dst, 150)  # cp cannot copy it (File name too long)
    code, doc = compare_json(
        "--ignore", "mtime", str(src), str(dst), preexec_fn=limit_descriptors(48)
    )
    assert (code, doc["counts"]) == (0, {}), doc["differences"][:3]
    assert doc["total"] == 0


# ---- time ----


def test_mtimes_past_2262_neither_wrap_nor_misprint(tmp_path: Path) -> None:
    """tmpfs keeps 64-bit seconds: two mtimes exactly 2**64 ns apart used to be one int64
    of nanoseconds (IDENTICAL), and a date in 2584 printed as one in 2000."""
    src, dst = tmp_path / "src", tmp_path / "dst"
    with tmpfs(src, dst):
        for root in (src, dst):
            (root / "f").write_bytes(b"same\n")
        y2000 = 946_684_800 * NS
        os.utime(src / "f", ns=(y2000, y2000))
        os.utime(dst / "f", ns=(y2000, y2000 + 2**64))
        os.utime(dst, ns=(0, src.stat().st_mtime_ns))
        for hash_name in ("xxh3", "blake3"):
            code, doc = compare_json("--hash", hash_name, str(src), str(dst))
            assert code == 1 and doc["counts"] == {"mtime": 1}, doc
            (diff,) = doc["differences"]
            assert diff["src"] == "2000-01-01T00:00:00.000000000Z"
            assert diff["dst"] == "2584-07-20T23:34:33.709551616Z"  # as `stat -c %y` says


def test_far_future_dates_compare_equal_with_both_hashes(tmp_path: Path) -> None:
    """A copy dated 11476 (`cp -a` keeps it) is identical, whichever hash: BLAKE3 used to
    call it "replaced while being read" (a wrapped mtime against Python's exact one)."""
    src, dst = tmp_path / "src", tmp_path / "dst"
    with tmpfs(src, dst):
        (src / "f").write_bytes(b"x" * 5000)
        far = 299_999_999_999 * NS + 123
        os.utime(src / "f", ns=(far, far))
        subprocess.run(["cp", "-a", f"{src}/.", str(dst)], check=True)
        for hash_name in ("xxh3", "blake3", "sha256"):
            done = zverify("compare", "-q", "--hash", hash_name, str(src), str(dst))
            assert done.returncode == 0, (hash_name, done.stdout, done.stderr)
        os.utime(dst / "f", ns=(far, far + 1))
        code, doc = compare_json(str(src), str(dst))
        assert code == 1 and doc["differences"][0]["src"].startswith("11476-")


# ---- pseudo-files ----


@pytest.mark.parametrize("hash_name", ["xxh3", "blake3"])
def test_pseudo_files_are_not_verifiable_with_either_hash(tmp_path: Path, hash_name: str) -> None:
    """procfs says size 0 and has content: XXH3 read 0 bytes and called the pair identical
    to empty files, BLAKE3 read to EOF; now both read one byte past the size and say the
    content cannot be pinned down (exit 2)."""
    src = Path("/proc/sys/kernel")
    names = ["ostype", "osrelease"]
    if not all((src / n).exists() and (src / n).stat().st_size == 0 for n in names):
        pytest.skip("no procfs files of size 0 here")
    dst = tmp_path / "copy"
    dst.mkdir()
    for name in names:
        (dst / name).write_bytes(b"")  # what `cp -a` of a size-0 pseudo-file could give
    listing = tmp_path / "list"
    listing.write_text("\n".join(names) + "\n")
    code, doc = compare_json(
        "--profile", "content", "--hash", hash_name, "--files-from", str(listing),
        str(src), str(dst),
    )  # fmt: skip
    changed = {d["path"]: d["detail"] for d in doc["differences"] if d["kind"] == "changed"}
    assert code == 2 and set(changed) == set(names), doc
    assert all("pseudo-file" in detail for detail in changed.values())


def test_growing_past_its_size_is_not_taken_as_the_size(tmp_path: Path) -> None:
    """The probe byte must not fire on an ordinary file: sizes around the read block
    (128 KiB) compare identical."""
    src, dst = tmp_path / "src", tmp_path / "dst"
    src.mkdir()
    for size in (0, 1, 4095, 128 << 10, (128 << 10) + 1, 256 << 10):
        (src / f"s{size}").write_bytes(os.urandom(size))
    sparse(src / "hole-at-end", 1 << 20, {0: b"data"})
    subprocess.run(["cp", "-a", "--sparse=always", str(src), str(dst)], check=True)
    for hash_name in ("xxh3", "blake3"):
        done = zverify("compare", "-q", "--hash", hash_name, str(src), str(dst))
        assert done.returncode == 0, done.stdout


# ---- mount points and /proc ----


def test_mount_point_under_x_compares_its_xattrs(tmp_path: Path) -> None:
    """-x lists a mount point without entering it; its xattrs were never read, and the
    unread state showed as an empty `x xattr` difference on every mount point."""
    src, dst = tmp_path / "src", tmp_path / "dst"
    for root in (src, dst):
        (root / "mp").mkdir(parents=True)
        (root / "f").write_bytes(b"a\n")
    with tmpfs(src / "mp", dst / "mp"):
        for root in (src, dst):
            os.chmod(root / "mp", 0o755)
            os.utime(root / "mp", ns=(0, 10 * NS))
            os.utime(root / "f", ns=(0, 10 * NS))
            os.utime(root, ns=(0, 10 * NS))
        code, doc = compare_json("-x", str(src), str(dst))
        assert (code, doc["counts"]) == (0, {}), doc["differences"]
        os.setxattr(src / "mp", "trusted.zv", b"1")
        code, doc = compare_json("-x", str(src), str(dst))
        assert code == 1 and doc["counts"] == {"xattr": 1}, doc
        assert "trusted.zv" in doc["differences"][0]["detail"]


def test_without_proc_symlinks_and_fifos_are_still_compared(tmp_path: Path) -> None:
    """Their xattrs are read through /proc/self/fd; without /proc (chroot, initramfs) each
    became an error that hid its real difference.  Now the path from the root is used."""
    src, dst = tmp_path / "src", tmp_path / "dst"
    for root, target in ((src, "t1"), (dst, "t2")):
        root.mkdir()
        os.symlink(target, root / "link")
        os.mkfifo(root / "fifo")
        os.utime(root / "link", ns=(0, 10 * NS), follow_symlinks=False)
        os.utime(root / "fifo", ns=(0, 10 * NS))
        os.utime(root, ns=(0, 10 * NS))
    os.setxattr(src / "fifo", "trusted.zv", b"1", follow_symlinks=False)
    hide_proc = [
        "unshare",
        "-m",
        "--propagation",
        "private",
        "sh",
        "-c",
        'umount -l /proc && exec "$@"',
    ]
    done = subprocess.run(
        [*hide_proc, "sh", console_script(), "compare", "--json", str(src), str(dst)],
        capture_output=True,
        text=True,
    )
    if done.returncode not in (0, 1, 2) or not done.stdout:
        pytest.skip(f"cannot hide /proc here: {done.stderr.strip()}")
    doc = json.loads(done.stdout)
    assert done.returncode == 1 and doc["counts"] == {"symlink": 1, "xattr": 1}, doc
    assert doc["unverifiable"] == []  # root, told by capget(2) when /proc is gone
    drop = ["setpriv", "--bounding-set", "-sys_admin"]
    blind = subprocess.run(
        [*hide_proc, "sh", *drop, console_script(), "compare", "--json", str(src), str(dst)],
        capture_output=True,
        text=True,
    )
    assert blind.returncode == 2 and json.loads(blind.stdout)["unverifiable"] == [
        "trusted.* xattrs"
    ], blind.stderr
    # no mount table either: the filesystem type comes from statfs(2)
    expected = subprocess.run(["stat", "-f", "-c", "%T", str(src)], capture_output=True, text=True)
    fs_type = doc["sizes"]["src"]["filesystem"]["type"]
    assert fs_type != "unknown" and fs_type in expected.stdout.replace("ext2/ext3", "ext4")


def test_without_proc_quick_opens_files_to_read_their_xattrs(tmp_path: Path) -> None:
    """A walk that reads no content lists a file's xattrs by /proc/self/fd/N/name, through
    the directory's descriptor.  Without /proc the only path left starts at the root, and a
    rename above could point it at another file while the second stat, by descriptor, still
    saw this one: so there the file is opened and its xattrs read from the descriptor."""
    src, dst = tmp_path / "src", tmp_path / "dst"
    for root in (src, dst):
        (root / "d").mkdir(parents=True)
        (root / "d" / "f").write_bytes(b"same")
        os.utime(root / "d" / "f", ns=(0, 10 * NS))
        os.utime(root / "d", ns=(0, 10 * NS))
        os.utime(root, ns=(0, 10 * NS))
    os.setxattr(src / "d" / "f", "user.zv", b"1")
    log = tmp_path / "strace.log"
    hide_proc = ["unshare", "-m", "--propagation", "private", "sh", "-c",
                 'umount -l /proc && exec "$@"', "sh"]  # fmt: skip
    trace = ["strace", "-f", "-qq", "-e", "trace=openat", "-o", str(log)]
    done = subprocess.run(
        [*hide_proc, *trace, console_script(), "compare", "--quick", "--json", str(src), str(dst)],
        capture_output=True,
        text=True,
    )
    if done.returncode not in (0, 1, 2) or not done.stdout:
        pytest.skip(f"cannot hide /proc and trace here: {done.stderr.strip()}")
    doc = json.loads(done.stdout)
    assert done.returncode == 1 and doc["counts"] == {"xattr": 1}, doc
    opened = [line for line in log.read_text().splitlines() if '"f"' in line]
    assert len(opened) == 2, opened  # once a side, by name in its directory's descriptor
