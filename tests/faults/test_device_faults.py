"""Real device faults, seen through the kernel: SRC or DST is a FUSE mount (faultfs.c) that
fails a read at a chosen byte, a directory listing part-way, an xattr read, or a write, a
flush or an fsync, as a failing disk or network filesystem does.

The installed `zverify` runs in a subprocess against the mount and an intact `cp -a` copy.
The contract is the project's one rule: what could not be read ends in exit 2, naming the
path (and, for a read, the byte offset), never in IDENTICAL or DIFFERENT.  Each test also
checks, from the filesystem's own log, that its fault was injected: a fault that never fired
would pass vacuously.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.cli import console
from tests.cli.console import needs_installed_command
from tests.cold import fakezfs
from tests.faults.faultfs import FaultFS, Mount
from tests.faults.helpers import verdict

pytestmark = needs_installed_command

RUN_TIMEOUT = 120  # seconds: a compare of 16 MiB and 5,000 entries that takes longer hung
MiB = 1 << 20
BIG = "data/big.bin"  # 16 MiB
BIG_SIZE = 16 * MiB
MIDDLE = 5 * MiB
MANY = "many"  # 5,000 entries
MANY_COUNT = 5000
STREAMS = Path(__file__).parents[1] / "data" / "streams"


@dataclass(frozen=True)
class Tree:
    """The backing directory that faultfs mirrors, and an intact copy of it."""

    backing: Path
    copy: Path


@dataclass(frozen=True)
class Result:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    fired: list[str]

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    def describe(self) -> str:
        return (
            f"`zverify {' '.join(self.argv)}`: exit {self.returncode}, faults fired "
            f"{self.fired[:3]}\n  stdout: {self.stdout[-1500:]!r}\n  stderr: "
            f"{self.stderr[-1500:]!r}"
        )

    def lines_naming(self, path: str) -> list[str]:
        """Output lines that name path as a field of their own (`! error  PATH  ...`)."""
        return [line for line in self.output.splitlines() if path in line.split()]


def zverify(mnt: Mount, *args: str, env: dict[str, str] | None = None) -> Result:
    """The installed console script, from outside the checkout; never left to hang."""
    try:
        done = console.zverify(*args, env=env, timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"`zverify {' '.join(args)}` hung on a faulty mount ({RUN_TIMEOUT} s)")
    return Result(list(args), done.returncode, done.stdout, done.stderr, mnt.fired())


def assert_exit_2(run: Result) -> None:
    """Exit 2, no verdict word anywhere on stdout, no traceback."""
    assert run.returncode == 2, run.describe()
    assert verdict(run.stdout) is None, run.describe()
    assert "Traceback" not in run.stderr, run.describe()


def assert_fired(run: Result, op: str, path: str) -> None:
    assert any(f.split()[:2] == [op, path] for f in run.fired), run.describe()


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Tree:
    """16 MiB of random bytes, a directory of 5,000 files, a few small files, user xattrs on
    a file and on a directory; and `cp -a` of it all."""
    root = tmp_path_factory.mktemp("device-faults")
    src = root / "backing"
    (src / "data").mkdir(parents=True)
    (src / BIG).write_bytes(random.Random(13).randbytes(BIG_SIZE))
    (src / "data" / "small").write_bytes(b"small\n")
    many = src / MANY
    many.mkdir()
    for i in range(MANY_COUNT):
        (many / f"e{i:05d}").write_bytes(b"%d\n" % i)
    (src / "meta").mkdir()
    (src / "meta" / "tagged").write_bytes(b"with an xattr\n")
    try:
        os.setxattr(src / "meta" / "tagged", "user.origin", b"device faults")
        os.setxattr(src / "meta", "user.dir", b"1")
    except OSError as err:
        pytest.skip(f"no user.* xattrs on {root}: {err.strerror}")
    copy = root / "copy"
    subprocess.run(["cp", "-a", str(src), str(copy)], check=True)
    return Tree(src, copy)


def sides(mnt: Mount, tree: Tree, side: str) -> tuple[str, str]:
    """(SRC, DST) with the faulty mount on the side named."""
    return (str(mnt.path), str(tree.copy)) if side == "SRC" else (str(tree.copy), str(mnt.path))


def compare_args(*options: str | None) -> list[str]:
    return ["compare", "--no-progress", *(o for o in options if o is not None)]


# -- the filesystem alone changes nothing ------------------------------------------------


@pytest.mark.parametrize("hash_name", ["xxh3", "blake3"])
def test_faultfs_without_faults_is_identical(faultfs: FaultFS, tree: Tree, hash_name: str) -> None:
    """Every exit 2 below is the fault's doing only if the mount itself compares IDENTICAL."""
    with faultfs.mount(tree.backing) as mnt:
        for src, dst in (sides(mnt, tree, "SRC"), sides(mnt, tree, "DST")):
            run = zverify(mnt, *compare_args("--hash", hash_name), src, dst)
            assert run.returncode == 0 and "IDENTICAL" in run.stdout, run.describe()
            assert "5,007 entries" in run.stdout, run.describe()  # the mount lists them all


# -- reads ------------------------------------------------------------------------------


@pytest.mark.parametrize("threads", [None, "1"], ids=["threads-default", "threads-1"])
@pytest.mark.parametrize("hash_name", ["xxh3", "blake3"])
@pytest.mark.parametrize("side", ["SRC", "DST"])
def test_read_error_in_the_middle_of_a_large_file(
    faultfs: FaultFS, tree: Tree, side: str, hash_name: str, threads: str | None
) -> None:
    with faultfs.mount(tree.backing, f"read /{BIG} {MIDDLE} EIO") as mnt:
        options = ["--hash", hash_name, *(["--threads", threads] if threads else [])]
        run = zverify(mnt, *compare_args(*options), *sides(mnt, tree, side))
    assert_fired(run, "read", f"/{BIG}")
    assert_exit_2(run)
    (line,) = run.lines_naming(BIG)
    assert f"{side}: read at byte {MIDDLE}: Input/output error" in line, run.describe()
    assert "INCOMPLETE" in run.stdout, run.describe()


@pytest.mark.parametrize(
    "offset",
    [0, 4096, MIDDLE + 12345, BIG_SIZE - 1],
    ids=["first-byte", "second-page", "unaligned", "last-byte"],
)
def test_read_error_names_the_exact_offset(faultfs: FaultFS, tree: Tree, offset: int) -> None:
    """The bytes before the bad one read fine (a short read, as over a bad block): the error
    is where the first read that cannot return anything starts, at the bad byte itself."""
    with faultfs.mount(tree.backing, f"read /{BIG} {offset} EIO") as mnt:
        run = zverify(mnt, *compare_args(), *sides(mnt, tree, "SRC"))
    assert_fired(run, "read", f"/{BIG}")
    assert_exit_2(run)
    (line,) = run.lines_naming(BIG)
    assert f"SRC: read at byte {offset}: Input/output error" in line, run.describe()


def test_read_error_in_json(faultfs: FaultFS, tree: Tree) -> None:
    with faultfs.mount(tree.backing, f"read /{BIG} {MIDDLE} EIO") as mnt:
        run = zverify(mnt, "compare", "--json", *sides(mnt, tree, "DST"))
    assert_fired(run, "read", f"/{BIG}")
    assert run.returncode == 2, run.describe()
    doc = json.loads(run.stdout)
    assert doc["identical"] is False, run.describe()
    (error,) = doc["differences"]
    assert error["path"] == BIG and error["kind"] == "error", error
    assert error["detail"] == f"DST: read at byte {MIDDLE}: Input/output error", error


def test_read_errors_on_both_sides_are_both_named(faultfs: FaultFS, tree: Tree) -> None:
    with (
        faultfs.mount(tree.backing, f"read /{BIG} {MIDDLE} EIO") as src,
        faultfs.mount(tree.backing, "read /data/small 0 EIO") as dst,
    ):
        run = zverify(src, *compare_args(), str(src.path), str(dst.path))
        fired_dst = dst.fired()
    assert_fired(run, "read", f"/{BIG}")
    assert any(f.startswith("read /data/small ") for f in fired_dst), fired_dst
    assert_exit_2(run)
    assert f"SRC: read at byte {MIDDLE}" in run.lines_naming(BIG)[0], run.describe()
    assert "DST: read at byte 0" in run.lines_naming("data/small")[0], run.describe()


@pytest.mark.parametrize(
    ("fault", "path", "message"),
    [
        (f"read /{BIG} {MIDDLE} EBADMSG", BIG, f"read at byte {MIDDLE}: Bad message"),
        (f"readdir /{MANY} 100 EUCLEAN", MANY, "readdir: Structure needs cleaning"),
    ],
    ids=["read-EBADMSG", "readdir-EUCLEAN"],
)
def test_checksum_and_corruption_errors_are_errors_too(
    faultfs: FaultFS, tree: Tree, fault: str, path: str, message: str
) -> None:
    """What ext4, XFS and btrfs return for a block whose checksum fails (EBADMSG) or for a
    corrupt structure (EUCLEAN): an error like EIO, not an entry that is merely different."""
    with faultfs.mount(tree.backing, fault) as mnt:
        run = zverify(mnt, *compare_args(), *sides(mnt, tree, "DST"))
    assert_fired(run, fault.split()[0], f"/{path}")
    assert_exit_2(run)
    (line,) = run.lines_naming(path)
    assert f"DST: {message}" in line, run.describe()


def test_thousands_of_unreadable_files_are_each_named(faultfs: FaultFS, tree: Tree) -> None:
    """Every file of the 5,000 fails its first read (the probe of st_size, for these small
    files): one error each, all threads busy with failures, and no hang."""
    with faultfs.mount(tree.backing, f"read /{MANY}/* 0 EIO") as mnt:
        run = zverify(mnt, "compare", "--json", *sides(mnt, tree, "SRC"))
    assert_fired(run, "read", f"/{MANY}/e00000")
    assert run.returncode == 2, run.describe()
    doc = json.loads(run.stdout)
    errors = {d["path"] for d in doc["differences"] if d["kind"] == "error"}
    assert errors == {f"{MANY}/e{i:05d}" for i in range(MANY_COUNT)}, run.describe()
    assert doc["identical"] is False and len(doc["differences"]) == MANY_COUNT


# -- directory listings ---------------------------------------------------------------------


@pytest.mark.parametrize("after", [0, 2500], ids=["at-start", "part-way"])
@pytest.mark.parametrize("side", ["SRC", "DST"])
def test_listing_error_names_the_directory(
    faultfs: FaultFS, tree: Tree, side: str, after: int
) -> None:
    """A listing that fails after some entries were returned: the directory is an error,
    and what it would have listed is never reported missing or extra."""
    with faultfs.mount(tree.backing, f"readdir /{MANY} {after} EIO") as mnt:
        run = zverify(mnt, *compare_args(), *sides(mnt, tree, side))
    assert_fired(run, "readdir", f"/{MANY}")
    if after:  # the fault fired where it was meant to: after entries were handed out
        assert any(f.split()[2] == str(after) for f in run.fired), run.fired
    assert_exit_2(run)
    (line,) = run.lines_naming(MANY)
    assert f"{side}: readdir: Input/output error" in line, run.describe()
    below = [ln for ln in run.stdout.splitlines() if f"{MANY}/e" in ln]
    assert below == [], run.describe()


def test_listing_error_at_the_root(faultfs: FaultFS, tree: Tree) -> None:
    with faultfs.mount(tree.backing, "readdir / 2 EIO") as mnt:
        run = zverify(mnt, *compare_args("--threads", "1"), *sides(mnt, tree, "SRC"))
    assert_fired(run, "readdir", "/")
    assert_exit_2(run)
    assert "readdir: Input/output error" in run.output, run.describe()


# -- xattrs -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("op", "path"),
    [("getxattr", "meta/tagged"), ("listxattr", "meta/tagged"), ("listxattr", "meta")],
)
@pytest.mark.parametrize("side", ["SRC", "DST"])
def test_xattr_error_names_the_entry(
    faultfs: FaultFS, tree: Tree, side: str, op: str, path: str
) -> None:
    with faultfs.mount(tree.backing, f"{op} /{path} EIO") as mnt:
        run = zverify(mnt, *compare_args(), *sides(mnt, tree, side))
    assert_fired(run, op, f"/{path}")
    assert_exit_2(run)
    (line,) = run.lines_naming(path)
    assert f"{side}: xattr: Input/output error" in line, run.describe()


# -- manifests ------------------------------------------------------------------------------


def test_manifest_of_a_tree_with_a_read_error(faultfs: FaultFS, tree: Tree, tmp_path: Path) -> None:
    """`zverify manifest` records the error (exit 2, naming the path); comparing against the
    manifest then fails again, with the offset, and so does verifying a good manifest
    against the faulty tree."""
    out, good = tmp_path / "faulty.zvm", tmp_path / "good.zvm"
    with faultfs.mount(tree.backing, f"read /{BIG} {MIDDLE} EIO") as mnt:
        made = zverify(mnt, "manifest", "-q", str(mnt.path), "-o", str(out))
        assert_fired(made, "read", f"/{BIG}")
        assert_exit_2(made)
        assert "could not be read" in made.stderr and BIG in made.stderr, made.describe()
        assert out.exists(), made.describe()

        against = zverify(mnt, *compare_args(), str(out), str(tree.copy))
        assert_exit_2(against)
        (line,) = against.lines_naming(BIG)
        assert f"SRC: read at byte {MIDDLE}: Input/output error" in line, against.describe()

        recorded = zverify(mnt, "manifest", "-q", str(tree.copy), "-o", str(good))
        assert recorded.returncode == 0, recorded.describe()
        verified = zverify(mnt, *compare_args(), str(good), str(mnt.path))
    assert_exit_2(verified)
    (line,) = verified.lines_naming(BIG)
    assert f"DST: read at byte {MIDDLE}: Input/output error" in line, verified.describe()


@pytest.mark.parametrize(("fmt", "checker"), [("sha256sum", "sha256sum"), ("b3sum", "b3sum")])
def test_checkfile_export_makes_the_unreadable_file_fail_its_check(
    faultfs: FaultFS, tree: Tree, tmp_path: Path, fmt: str, checker: str
) -> None:
    """A checkfile cannot record an error: the file used to be left out, and a later
    `sha256sum -c` on the copy passed without it.  Written with a digest of zeros, it FAILS."""
    if shutil.which(checker) is None:
        pytest.skip(f"{checker} is not installed")
    out = tmp_path / f"faulty.{fmt}"
    with faultfs.mount(tree.backing, f"read /{BIG} {MIDDLE} EIO") as mnt:
        made = zverify(mnt, "manifest", "-q", "--format", fmt, str(mnt.path), "-o", str(out))
    assert_fired(made, "read", f"/{BIG}")
    assert_exit_2(made)
    lines = out.read_bytes().splitlines()
    (poisoned,) = [line for line in lines if line.endswith(b"  " + BIG.encode())]
    assert poisoned.startswith(b"0" * 64), poisoned
    checked = subprocess.run([checker, "-c", str(out)], cwd=tree.copy, capture_output=True)
    assert checked.returncode != 0
    assert f"{BIG}: FAILED".encode() in checked.stdout, checked.stdout[-500:]


def test_manifest_of_a_tree_with_a_listing_error(
    faultfs: FaultFS, tree: Tree, tmp_path: Path
) -> None:
    out = tmp_path / "faulty.zvm"
    with faultfs.mount(tree.backing, f"readdir /{MANY} 2500 EIO") as mnt:
        made = zverify(mnt, "manifest", "-q", "--threads", "1", str(mnt.path), "-o", str(out))
    assert_fired(made, "readdir", f"/{MANY}")
    assert_exit_2(made)
    assert MANY in made.stderr, made.describe()
    against = zverify(mnt, *compare_args(), str(out), str(tree.copy))
    assert_exit_2(against)
    (line,) = against.lines_naming(MANY)
    assert "SRC: readdir: Input/output error" in line, against.describe()


# -- send streams -----------------------------------------------------------------------------


@pytest.mark.parametrize("offset", [262144, 300001], ids=["aligned", "unaligned"])
def test_stream_verify_of_an_unreadable_file(faultfs: FaultFS, tmp_path: Path, offset: int) -> None:
    backing = tmp_path / "streams"
    backing.mkdir()
    shutil.copy(STREAMS / "full_fs_s1.zstream", backing / "s1.zstream")
    with faultfs.mount(backing, f"read /s1.zstream {offset} EIO") as mnt:
        stream = str(mnt.path / "s1.zstream")
        run = zverify(mnt, "stream", "verify", "-q", stream)
        as_json = zverify(mnt, "stream", "verify", "--json", stream)
    assert_fired(run, "read", "/s1.zstream")
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.describe()
    assert run.stdout.startswith(f"UNREADABLE {stream}:"), run.describe()
    assert f"offset {offset} " in run.stdout, run.describe()
    assert "Input/output error" in run.stdout, run.describe()
    assert as_json.returncode == 2, as_json.describe()
    (file,) = json.loads(as_json.stdout)["files"]
    assert file["readable"] is False and file["valid"] is False, file
    assert [(p["code"], p["offset"]) for p in file["problems"]] == [("io", offset)], file


# -- cold send into a failing archive directory ---------------------------------------------

S1_GUID = 4034521428903744376  # zv/fs@s1 of tests/data/streams (index.json)
STREAM = "zv%2Ffs@s1.zfsfull"
PARTIAL = f"{STREAM}.partial"


@pytest.fixture
def cold_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    """The environment of a `cold send` subprocess: a stand-in `zfs` (tests/cold/fakezfs.py)
    that lists zv/fs@s1 and sends the real fixture stream, and a stand-in pyzfs module for
    the bookmark that follows a successful send."""
    with pytest.MonkeyPatch.context() as mp:
        fakezfs.install(
            mp,
            tmp_path,
            'case "$1" in\n'
            f"list) printf 'zv/fs@s1\\t{S1_GUID}\\t10\\n' ;;\n"
            "version) echo zfs-2.1.11 ;;\n"
            f"send) cat '{STREAMS / 'full_fs_s1.zstream'}' ;;\n"
            '*) echo "stand-in zfs: unexpected $*" >&2; exit 1 ;;\nesac\n',
        )
        pyzfs = tmp_path / "pyzfs"
        pyzfs.mkdir()
        (pyzfs / "libzfs_core.py").write_text(
            "def lzc_exists(name):\n    return False\n\n\n"
            "def lzc_bookmark(bookmarks):\n    return None\n"
        )
        yield {"PATH": os.environ["PATH"], "PYTHONPATH": str(pyzfs)}


def cold_streams(mnt: Mount, archive: Path) -> list[str]:
    """The files `cold check` counts in archive (read through the mount, faults and all)."""
    run = zverify(mnt, "cold", "check", "--json", str(archive))
    assert run.returncode in (0, 1), run.describe()
    return [f["file"] for f in json.loads(run.stdout)["files"]]


@dataclass(frozen=True)
class Sent:
    run: Result
    counted: list[str]  # the files `cold check` counts in the archive afterwards
    left: list[str]  # what the backing directory holds afterwards (but the archive's locks)


def send_into(faultfs: FaultFS, tmp_path: Path, env: dict[str, str], *faults: str) -> Sent:
    """`zverify cold send zv/fs ARCHIVE` into an archive directory on a faultfs mount."""
    backing = tmp_path / "backing"
    (backing / "cold").mkdir(parents=True)
    with faultfs.mount(backing, *faults) as mnt:
        archive = mnt.path / "cold"
        run = zverify(mnt, "cold", "send", "-q", "zv/fs", str(archive), env=env)
        counted = cold_streams(mnt, archive)
    left = [p.name for p in (backing / "cold").iterdir()]
    return Sent(run, counted, sorted(n for n in left if not is_lock(n)))


def is_lock(name: str) -> bool:
    """The archive's lock files (`.zverify-readers.lock`): empty, never taken for streams."""
    return name.startswith(".") and name.endswith(".lock")


def test_cold_send_into_faultfs_without_faults_archives(
    faultfs: FaultFS, tmp_path: Path, cold_env: dict[str, str]
) -> None:
    """The stand-ins and the mount are enough for a send to succeed: the failures below are
    the faults' doing."""
    sent = send_into(faultfs, tmp_path, cold_env)
    assert sent.run.returncode == 0, sent.run.describe()
    assert sent.counted == [STREAM], sent
    assert sent.left == [STREAM, f"{STREAM}.json"], sent


@pytest.mark.parametrize(
    ("fault", "error"),
    [
        (f"write /cold/{PARTIAL} 100000 EIO", "Input/output error"),
        (f"write /cold/{PARTIAL} 100000 ENOSPC", "No space left on device"),
        (f"write /cold/{PARTIAL} 0 EIO", "Input/output error"),
        (f"fsync /cold/{PARTIAL} EIO", "Input/output error"),
        (f"flush /cold/{PARTIAL} EIO", "Input/output error"),  # close(2) fails
        (f"open /cold/{PARTIAL} EIO", "Input/output error"),
    ],
    ids=["write-EIO", "write-ENOSPC", "first-write-EIO", "fsync-EIO", "close-EIO", "create-EIO"],
)
def test_cold_send_that_cannot_write_leaves_no_stream(
    faultfs: FaultFS, tmp_path: Path, cold_env: dict[str, str], fault: str, error: str
) -> None:
    sent = send_into(faultfs, tmp_path, cold_env, fault)
    run = sent.run
    assert_fired(run, fault.split()[0], f"/cold/{PARTIAL}")
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.describe()
    assert PARTIAL in run.stderr and error in run.stderr, run.describe()
    assert "archived" not in run.output, run.describe()
    # nothing `cold check` counts as a stream, nothing left in the directory at all
    assert sent.counted == [] and sent.left == [], sent


@pytest.mark.parametrize(
    ("fault", "said"),
    [
        ("fsyncdir /cold EIO", "fsync of the directory"),
        (f"fsync /cold/{STREAM}.json.partial EIO", "sidecar"),
        (f"write /cold/{STREAM}.json.partial 0 ENOSPC", "sidecar"),
    ],
    ids=["directory-fsync-EIO", "sidecar-fsync-EIO", "sidecar-write-ENOSPC"],
)
def test_cold_send_failing_after_the_stream_is_in_place(
    faultfs: FaultFS, tmp_path: Path, cold_env: dict[str, str], fault: str, said: str
) -> None:
    """The stream was written, fsynced, proven and renamed into place; then the directory's
    fsync (the entry may not be durable) or the sidecar failed.  Exit 2 says so; what stays
    is the complete stream, which `cold check` reads as intact, and never a .partial."""
    sent = send_into(faultfs, tmp_path, cold_env, fault)
    run = sent.run
    op, path = fault.split()[:2]
    assert_fired(run, op, path)
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.describe()
    assert said in run.stderr and "archived" in run.stderr, run.describe()
    assert sent.counted == [STREAM], sent
    assert STREAM in sent.left and not [n for n in sent.left if n.endswith(".partial")], sent
