"""BLAKE3 in the C workers: the packaged official sources give the `blake3` package's digests.

The walker's BLAKE3 is compiled from Debian's librust-blake3-dev (native/blake3_sources.py);
these tests hold it to the PyPI binding (the Rust crate) at every length where the algorithm
changes regime (64-byte blocks, 1 KiB chunks, the SIMD batch widths of 4, 8 and 16 chunks,
the core's 128 KiB reads), on holes hashed as zeros, and for each SIMD kernel.
"""

import platform
import subprocess
import sys
from pathlib import Path

import blake3
import pytest

from tests.native.test_walker import by_path, walk
from tests.treebuilder import pattern, sparse, write
from zverify import _zvcore

REPO = Path(__file__).resolve().parents[2]
CHUNK = 1024
LENGTHS = sorted(
    {0, 1, 63, 64, 65}
    | {k * CHUNK + d for k in (1, 2, 3, 4, 5, 8, 9, 16, 17, 31, 32, 33) for d in (-1, 0, 1)}
    | {(128 << 10) + d for d in (-1, 0, 1)}
    | {3 * (128 << 10) + 7, (1 << 20) + 12345}
)
KERNELS = ("portable", "sse2", "sse41", "avx2", "avx512")


def test_walker_blake3_matches_the_blake3_package(tmp_path: Path) -> None:
    for n in LENGTHS:
        write(tmp_path / f"f{n:08d}", pattern(n, n))
    records = by_path(walk(tmp_path, algo=_zvcore.ALGO_BLAKE3, threads=3))
    for n in LENGTHS:
        rec = records[f"f{n:08d}".encode()]
        assert rec.digest == blake3.blake3(pattern(n, n)).digest(), n


def test_holes_are_hashed_as_zeros(tmp_path: Path) -> None:
    size, chunks = 3 << 20, {100_000: b"data in the middle", (2 << 20) + 5: b"and later"}
    sparse(tmp_path / "holey", size, chunks)
    content = bytearray(size)
    for offset, data in chunks.items():
        content[offset : offset + len(data)] = data
    rec = by_path(walk(tmp_path, algo=_zvcore.ALGO_BLAKE3))[b"holey"]
    assert rec.hole_bytes > 0  # the holes really were skipped, not read
    assert rec.digest == blake3.blake3(bytes(content)).digest()


def _kernels_up_to(kernel: str) -> tuple[list[str], list[str]]:
    """(kernels kept, -D flags disabling the rest): `kernel` becomes the best one the
    dispatcher can choose (it keeps the lesser ones as its fallbacks)."""
    simd = list(KERNELS[1:])
    keep = simd[: simd.index(kernel) + 1] if kernel in simd else []
    return keep, [f"-DBLAKE3_NO_{k.upper()}" for k in simd if k not in keep]


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the SIMD kernels built are x86-64")
@pytest.mark.parametrize("kernel", KERNELS)
def test_every_simd_kernel_matches_the_blake3_package(kernel: str, tmp_path: Path) -> None:
    wanted = {"sse41": "sse4_1", "avx2": "avx2", "avx512": "avx512f", "sse2": "sse2"}.get(kernel)
    if wanted and wanted not in Path("/proc/cpuinfo").read_text():
        pytest.skip(f"this CPU cannot run the {kernel} kernel")
    located = subprocess.run(
        [sys.executable, str(REPO / "native/blake3_sources.py")], capture_output=True, text=True
    )
    assert located.returncode == 0, located.stderr
    args = located.stdout.split()
    include = [a for a in args if a.startswith("-I")]
    sources = [a for a in args if not a.startswith("-")]
    keep, disable = _kernels_up_to(kernel)
    sources = [s for s in sources if not s.endswith(".S") or any(f"_{k}_" in s for k in keep)]
    driver = tmp_path / "b3file"
    source = str(REPO / "tests/native/b3file.c")
    build = subprocess.run(
        ["gcc", "-O2", *include, *disable, source, *sources, "-o", str(driver)],
        capture_output=True,
        text=True,
    )
    assert build.returncode == 0, build.stderr
    files = [write(tmp_path / f"f{n:08d}", pattern(n, n + 3)) for n in LENGTHS]
    out = subprocess.run([str(driver), *map(str, files)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    got = dict(reversed(line.split("  ", 1)) for line in out.stdout.splitlines())
    for n, path in zip(LENGTHS, files, strict=True):
        assert got[str(path)] == blake3.blake3(pattern(n, n + 3)).hexdigest(), (kernel, n)


def test_hasher_over_bytes_matches_the_blake3_package() -> None:
    """_zvcore.Hasher (a manifest's own digest) is the same BLAKE3, fed in pieces of every
    size, with the GIL held (small pieces) and released (large ones), read mid-way."""
    data = pattern(3 * (128 << 10) + 7, 5)
    hasher = _zvcore.Hasher(_zvcore.ALGO_BLAKE3)
    fed = 0
    for step in (1, 63, 4095, 4096, 70000, len(data)):
        piece = memoryview(data)[fed : fed + step]
        hasher.update(piece)
        fed += len(piece)
        assert hasher.hexdigest() == blake3.blake3(data[:fed]).hexdigest(), fed
    assert fed == len(data)
    assert hasher.digest() == blake3.blake3(data).digest()


def test_hasher_takes_only_what_it_can_go_on_after() -> None:
    """SHA-2 over bytes is hashlib's (libcrypto's finish would end the digest)."""
    with pytest.raises(ValueError, match="ALGO_BLAKE3"):
        _zvcore.Hasher(_zvcore.ALGO_SHA256)
