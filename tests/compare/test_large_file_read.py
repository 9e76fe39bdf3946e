"""A large file is read with pread, block by block, hot or cold (native/src/zv_file.c); the
last block asks for a probe byte past the file's size.  The digests must be exactly the
file's bytes, checked by `b3sum -c` (the real tool, not our own arithmetic), hot and cold, and
a byte changed at each seam between blocks must be found.  A file cut short while it is
read: tests/faults (the LD_PRELOAD shim).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.cli.console import zverify
from tests.compare.helpers import drop_from_cache
from tests.compare.test_syscall_budget import _syscalls

BLOCK = 128 << 10  # zverify/walk.py READ_BLOCK
SIZE = 256 * BLOCK + 777  # 32 MiB of whole blocks, then a short one

# where a flipped byte lands: each side of the seam after the first block (read with
# preadv2 when the walk watches the cache), one in the middle, and the last block's ends
SEAMS = {
    "end of the first block": BLOCK - 1,
    "start of the second block": BLOCK,
    "end of a middle block": 128 * BLOCK - 1,
    "start of the next block": 128 * BLOCK,
    "last byte of the whole blocks": SIZE - 777 - 1,
    "first byte of the last block": SIZE - 777,
    "last byte": SIZE - 1,
}


@pytest.fixture(scope="module")
def data() -> bytes:
    return os.urandom(SIZE)


@pytest.mark.parametrize("cache", ["hot", "cold"])
def test_b3sum_accepts_the_digest_of_a_large_file(tmp_path: Path, data: bytes, cache: str) -> None:
    b3sum = shutil.which("b3sum")
    if b3sum is None:
        pytest.skip("b3sum not installed (scripts/setup.sh installs it)")
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "big").write_bytes(data)
    if cache == "cold":
        drop_from_cache(tree / "big")
    listing = tmp_path / "sums.b3"
    made = zverify("manifest", "-q", "--format", "b3sum", str(tree), "-o", str(listing))
    assert made.returncode == 0, made.stderr
    checked = subprocess.run([b3sum, "-c", str(listing)], cwd=tree, capture_output=True, text=True)
    assert checked.returncode == 0 and "big: OK" in checked.stdout, (checked.stdout, checked.stderr)


def test_an_exact_copy_of_a_large_file_is_identical(tmp_path: Path, data: bytes) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "big").write_bytes(data)
    subprocess.run(["cp", "-a", str(src), str(tmp_path / "dst")], check=True)
    done = zverify("compare", "--no-progress", str(src), str(tmp_path / "dst"))
    assert done.returncode == 0 and "IDENTICAL" in done.stdout, done.stdout + done.stderr


@pytest.mark.parametrize("where", SEAMS)
def test_a_byte_changed_at_each_seam_is_found(tmp_path: Path, data: bytes, where: str) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    changed = bytearray(data)
    changed[SEAMS[where]] ^= 0x20
    for tree, content in ((src, data), (dst, bytes(changed))):
        tree.mkdir()
        (tree / "big").write_bytes(content)
    done = zverify("compare", "--no-progress", "--profile", "content", str(src), str(dst))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "DIFFERENT: 1 difference (content 1)" in done.stdout, done.stdout


@pytest.mark.parametrize("cache", ["hot", "cold"])
def test_every_block_is_read_hot_or_cold(tmp_path: Path, data: bytes, cache: str) -> None:
    """What the digests above cannot show: how the bytes were got.  Each copy is read with a
    pread per block (the first may be a preadv2), cached or not: no block is hashed without
    a read the kernel answered."""
    if shutil.which("strace") is None:
        pytest.skip("strace is not installed (scripts/setup.sh installs it)")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "big").write_bytes(data)
    subprocess.run(["cp", "-a", str(tmp_path / "src"), str(tmp_path / "dst")], check=True)
    if cache == "cold":
        drop_from_cache(tmp_path / "src" / "big", tmp_path / "dst" / "big")
    calls = _syscalls(tmp_path, ["--no-progress"])
    blocks = SIZE // BLOCK + 1
    assert calls.get("pread64", 0) + calls.get("preadv2", 0) >= 2 * blocks, calls
