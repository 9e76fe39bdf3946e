"""Real block-device faults under a real filesystem: ext4 on a device-mapper table that is
linear everywhere but over one block, where an `error` target fails every I/O (or, for the
whole device, `flakey` swapped in after the mount: a disk that dies under a mounted tree).

Runs where the ZFS tests run (the project's VM: a Debian 6.1 kernel with dm modules, which
the host has not): ext4 is made on a loop file in the guest's /tmp, its blocks found with
debugfs, and `zverify compare` run against an intact copy.  The rule under test is the
project's one: an unreadable block ends in exit 2 naming the path (and, for file data, the
byte offset of the failing block), never in IDENTICAL or DIFFERENT.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

pytestmark = pytest.mark.zfs

WORK = "/tmp/zv-device-faults"
COPY = f"{WORK}/copy"  # the intact copy (tmpfs)
MNT = f"{WORK}/mnt"
BLOCK = 4096
SECTORS_PER_BLOCK = BLOCK // 512
FILE_BLOCK = 70  # logical block of file.bin made unreadable: not on a 128 KiB boundary
ENTRIES = 400  # in tree/dir: four 4 KiB directory blocks
VERDICTS = ("IDENTICAL", "DIFFERENT")

# Made once per module.  ^dir_index: linear directories, listed block by block, so an
# unreadable second block fails the listing after the first block's entries were returned.
SETUP = f"""
unavailable() {{ echo "unavailable: $*" >&2; exit 3; }}
for module in loop dm-mod dm-flakey; do  # the error target is part of dm-mod
    modprobe $module || unavailable "no $module module"
done
for tool in dmsetup losetup debugfs mkfs.ext4; do
    command -v $tool >/dev/null || unavailable "no $tool (dmsetup: tools/zfsvm/config.py)"
done
rm -rf {WORK}
mkdir -p {WORK}/fs {MNT}
truncate -s 64M {WORK}/disk.img
loop=$(losetup --find --show {WORK}/disk.img)
mkfs.ext4 -q -F -b {BLOCK} -O ^dir_index -E lazy_itable_init=0,lazy_journal_init=0 "$loop"
mount "$loop" {WORK}/fs
mkdir -p {WORK}/fs/tree/dir
head -c {4 << 20} /dev/urandom >{WORK}/fs/tree/file.bin
i=0
while [ $i -lt {ENTRIES} ]; do
    i=$((i + 1))
    echo $i >{WORK}/fs/tree/dir/an-entry-with-a-rather-long-name-$i
done
cp -a {WORK}/fs/tree {COPY}
umount {WORK}/fs
bmap() {{ debugfs -R "bmap $1 $2" "$loop" 2>/dev/null; }}
printf '{{"loop": "%s", "sectors": %d, "file_block": %d, "dir_blocks": [%d, %d]}}\\n' \\
    "$loop" "$(blockdev --getsz "$loop")" "$(bmap /tree/file.bin {FILE_BLOCK})" \\
    "$(bmap /tree/dir 0)" "$(bmap /tree/dir 1)"
"""


@dataclass(frozen=True)
class Scratch:
    loop: str
    sectors: int
    file_block: int  # physical block of file.bin's logical block FILE_BLOCK
    dir_blocks: list[int]  # physical blocks of tree/dir's first two directory blocks

    def table(self, *bad_blocks: int) -> str:
        """Linear over the whole loop device but an `error` target over each bad block."""
        lines, at = [], 0
        for block in sorted(bad_blocks):
            start = block * SECTORS_PER_BLOCK
            if start > at:
                lines.append(f"{at} {start - at} linear {self.loop} {at}")
            lines.append(f"{start} {SECTORS_PER_BLOCK} error")
            at = start + SECTORS_PER_BLOCK
        lines.append(f"{at} {self.sectors - at} linear {self.loop} {at}")
        return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def scratch(zfs_host) -> Iterator[Scratch]:
    made = zfs_host.run(["sh", "-ec", SETUP], timeout=600)
    if made.returncode == 3 and "unavailable: " in made.stderr:
        why = made.stderr.split("unavailable: ")[-1].strip()
        pytest.skip(f"device-mapper faults cannot be made on the ZFS host: {why}")
    assert made.returncode == 0, made.stderr[-3000:]
    doc = json.loads(made.stdout.strip().splitlines()[-1])
    yield Scratch(doc["loop"], doc["sectors"], doc["file_block"], doc["dir_blocks"])
    zfs_host.run(["sh", "-c", f"losetup -d {doc['loop']}; rm -rf {WORK}"], timeout=120)


@contextlib.contextmanager
def mapped(host, name: str, table: str) -> Iterator[str]:
    """The table as /dev/mapper/NAME, ext4 on it mounted read-only at MNT with every cache
    dropped (nothing may be served from memory); unmounted and removed after."""
    dev = f"/dev/mapper/{name}"
    up = host.run(
        [
            "sh",
            "-ec",
            f"dmsetup create {name} --noudevsync; dmsetup mknodes {name}; "
            f"mount -o ro {dev} {MNT}; sync; echo 3 >/proc/sys/vm/drop_caches",
        ],
        input=table,
        timeout=300,
    )
    try:
        assert up.returncode == 0, f"{table}\n{up.stderr[-2000:]}"
        yield dev
    finally:
        host.run(["sh", "-c", f"umount {MNT}; dmsetup remove {name}"], timeout=300)


@dataclass(frozen=True)
class Run:
    returncode: int
    stdout: str
    stderr: str

    def describe(self) -> str:
        out, err = self.stdout[-2000:], self.stderr[-2000:]
        return f"exit {self.returncode}\nstdout: {out}\nstderr: {err}"

    def line_naming(self, path: str) -> str:
        """The one line of stdout that names path as a field of its own."""
        lines = [ln for ln in self.stdout.splitlines() if path in ln.split()]
        assert len(lines) == 1, f"{path!r} named on {len(lines)} lines\n{self.describe()}"
        return lines[0]


def compare(host, zverify, *args: str) -> Run:
    done = host.run([*zverify, "compare", "--no-progress", *args], timeout=900)
    return Run(done.returncode, done.stdout, done.stderr)


def assert_exit_2(run: Run) -> None:
    assert run.returncode == 2, run.describe()
    assert not any(word in run.stdout for word in VERDICTS), run.describe()
    assert "Traceback" not in run.stderr, run.describe()


def test_the_linear_mapping_alone_is_identical(zfs_host, zverify_in_zfs_host, scratch):
    """The copy and the mapped filesystem agree: every exit 2 below is the bad block's."""
    with mapped(zfs_host, "zvdf-linear", scratch.table()):
        run = compare(zfs_host, zverify_in_zfs_host, COPY, f"{MNT}/tree")
    assert run.returncode == 0 and "IDENTICAL" in run.stdout, run.describe()
    assert f"{ENTRIES + 3} entries" in run.stdout, run.describe()


def test_an_unreadable_data_block_is_named_with_its_offset(zfs_host, zverify_in_zfs_host, scratch):
    """The blocks before the bad one read fine (a short read); the error is at the offset
    of the failing block itself, FILE_BLOCK * 4096, on either side, in either hash."""
    offset = FILE_BLOCK * BLOCK
    with mapped(zfs_host, "zvdf-file", scratch.table(scratch.file_block)):
        as_dst = compare(zfs_host, zverify_in_zfs_host, COPY, f"{MNT}/tree")
        as_src = compare(
            zfs_host,
            zverify_in_zfs_host,
            "--hash",
            "blake3",
            "--threads",
            "1",
            f"{MNT}/tree",
            COPY,
        )
    for run, side in ((as_dst, "DST"), (as_src, "SRC")):
        assert_exit_2(run)
        line = run.line_naming("file.bin")
        assert f"{side}: read at byte {offset}: Input/output error" in line, run.describe()
        print(line)


@pytest.mark.parametrize("index", [0, 1], ids=["first-block", "second-block"])
def test_an_unreadable_directory_block_is_named(zfs_host, zverify_in_zfs_host, scratch, index):
    """The directory's first block (the listing fails at its start) or its second (after
    the first block's entries were returned, as `ls` shows)."""
    with mapped(zfs_host, f"zvdf-dir{index}", scratch.table(scratch.dir_blocks[index])):
        ls = zfs_host.run(["sh", "-c", f"ls -f {MNT}/tree/dir | wc -l"], timeout=120)
        run = compare(zfs_host, zverify_in_zfs_host, COPY, f"{MNT}/tree")
    listed = int(ls.stdout.split()[0])
    assert "Input/output error" in ls.stderr, ls.stderr
    assert (listed == 0) if index == 0 else (0 < listed < ENTRIES), (index, listed)
    assert_exit_2(run)
    assert "DST: readdir: Input/output error" in run.line_naming("dir"), run.describe()
    assert not [ln for ln in run.stdout.splitlines() if "dir/an-entry" in ln], run.describe()
    print(f"ls listed {listed} entries; {run.line_naming('dir')}")


def test_a_disk_that_fails_under_a_mounted_tree(zfs_host, zverify_in_zfs_host, scratch):
    """Mounted on a linear table, then `flakey` with no up interval swapped in: every I/O
    fails from then on, and whatever is not cached cannot be read."""
    name = "zvdf-flakey"
    flakey = f"0 {scratch.sectors} flakey {scratch.loop} 0 0 1\n"
    with mapped(zfs_host, name, scratch.table()):
        swapped = zfs_host.run(
            [
                "sh",
                "-ec",
                f"dmsetup suspend {name}; dmsetup load {name}; dmsetup resume {name}; "
                f"dmsetup table {name}; echo 3 >/proc/sys/vm/drop_caches",
            ],
            input=flakey,
            timeout=300,
        )
        assert swapped.returncode == 0 and " flakey " in swapped.stdout, swapped.stderr
        at_root = compare(zfs_host, zverify_in_zfs_host, COPY, MNT)
        below = compare(zfs_host, zverify_in_zfs_host, COPY, f"{MNT}/tree")
    assert_exit_2(at_root)
    assert "DST: readdir: Input/output error" in at_root.line_naming("."), at_root.describe()
    print(at_root.line_naming("."))
    assert_exit_2(below)
    assert f"cannot read DST root '{MNT}/tree'" in below.stderr, below.describe()
    assert "Input/output error" in below.stderr, below.describe()
    print(below.stderr.strip())
