"""A file whose first block is in the page cache is hashed through mapped windows (16 MiB,
native/src/zv_file.c), all but its last block, which is read with the probe byte past its
size; a cold file is read with pread.  Both must hash exactly the file's bytes: the digests
are checked by `b3sum -c` (the real tool, not our own arithmetic), hot and cold, and a byte
changed at each seam (first block / first window, between windows, last window / last
block) must be found.  A file cut short under a mapping: tests/faults (the LD_PRELOAD shim).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.cli.console import zverify
from tests.compare.helpers import drop_from_cache, skip_unless_cache_hits_tell
from tests.compare.test_syscall_budget import _syscalls

BLOCK = 128 << 10  # zverify/walk.py READ_BLOCK
WINDOW = 16 << 20  # zv_file.c MAP_WINDOW
SIZE = 2 * WINDOW + 3 * BLOCK + 777  # three windows, the last one short, then a short block

# where a flipped byte lands: the last byte pread reads before mapping begins, the first
# mapped byte, each side of the seam between two windows, the last mapped byte, and the
# first and last bytes of the final pread block
SEAMS = {
    "end of the first block": BLOCK - 1,
    "first mapped byte": BLOCK,
    "end of a window": BLOCK + WINDOW - 1,
    "start of the next window": BLOCK + WINDOW,
    "last mapped byte": SIZE - 777 - 1,
    "first byte of the last block": SIZE - 777,
    "last byte": SIZE - 1,
}


@pytest.fixture(scope="module")
def data() -> bytes:
    return os.urandom(SIZE)


@pytest.mark.parametrize("cache", ["hot", "cold"])
def test_b3sum_accepts_the_digest_of_a_file_of_several_windows(
    tmp_path: Path, data: bytes, cache: str
) -> None:
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


def test_an_exact_copy_of_several_windows_is_identical(tmp_path: Path, data: bytes) -> None:
    skip_unless_cache_hits_tell(tmp_path)
    src = tmp_path / "src"
    src.mkdir()
    (src / "big").write_bytes(data)
    subprocess.run(["cp", "-a", str(src), str(tmp_path / "dst")], check=True)
    done = zverify("compare", "--no-progress", str(src), str(tmp_path / "dst"))
    assert done.returncode == 0 and "IDENTICAL" in done.stdout, done.stdout + done.stderr


@pytest.mark.parametrize("where", SEAMS)
def test_a_byte_changed_at_each_seam_is_found(tmp_path: Path, data: bytes, where: str) -> None:
    skip_unless_cache_hits_tell(tmp_path)
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
def test_a_cached_file_is_mapped_and_a_cold_one_read(
    tmp_path: Path, data: bytes, cache: str
) -> None:
    """What the digests above cannot show: which path hashed the file.  Hot, each copy is
    read with one preadv2 (the first block, from the cache) and one pread (the last block),
    beside the few of the dynamic loader; cold, with a pread per block."""
    if shutil.which("strace") is None:
        pytest.skip("strace is not installed (scripts/setup.sh installs it)")
    skip_unless_cache_hits_tell(tmp_path)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "big").write_bytes(data)
    subprocess.run(["cp", "-a", str(tmp_path / "src"), str(tmp_path / "dst")], check=True)
    if cache == "cold":
        drop_from_cache(tmp_path / "src" / "big", tmp_path / "dst" / "big")
    calls = _syscalls(tmp_path, ["--no-progress"])
    blocks = SIZE // BLOCK
    if cache == "hot":
        assert calls.get("pread64", 0) <= 2 + 8, calls  # not a pread per block: mapped
    else:
        assert calls.get("pread64", 0) >= 2 * (blocks - 1), calls
