"""SHA-256, SHA-512, SHA-1 and MD5 in the C workers (OpenSSL's libcrypto): hashlib's digests
at every length where they change regime (64- and 128-byte blocks and their padding limits,
the core's 128 KiB reads), on holes hashed as zeros, and with several threads."""

import hashlib
from pathlib import Path

import pytest

from tests.native.test_walker import by_path, walk
from tests.treebuilder import pattern, sparse, write
from zverify import _zvcore

ALGORITHMS = {
    "sha256": _zvcore.ALGO_SHA256,
    "sha512": _zvcore.ALGO_SHA512,
    "sha1": _zvcore.ALGO_SHA1,
    "md5": _zvcore.ALGO_MD5,
}
LENGTHS = sorted(
    {0, 1, 55, 56, 63, 64, 65, 111, 112, 127, 128, 129}
    | {(128 << 10) + d for d in (-1, 0, 1)}
    | {3 * (128 << 10) + 7, (1 << 20) + 12345}
)


@pytest.mark.parametrize("name", list(ALGORITHMS))
def test_walker_sha2_matches_hashlib(tmp_path: Path, name: str) -> None:
    for n in LENGTHS:
        write(tmp_path / f"f{n:08d}", pattern(n, n))
    records = by_path(walk(tmp_path, algo=ALGORITHMS[name], threads=3))
    for n in LENGTHS:
        rec = records[f"f{n:08d}".encode()]
        assert rec.digest == hashlib.new(name, pattern(n, n)).digest(), (name, n)


@pytest.mark.parametrize("name", list(ALGORITHMS))
def test_holes_are_hashed_as_zeros(tmp_path: Path, name: str) -> None:
    size, chunks = 3 << 20, {100_000: b"data in the middle", (2 << 20) + 5: b"and later"}
    sparse(tmp_path / "holey", size, chunks)
    content = bytearray(size)
    for offset, data in chunks.items():
        content[offset : offset + len(data)] = data
    rec = by_path(walk(tmp_path, algo=ALGORITHMS[name]))[b"holey"]
    assert rec.hole_bytes > 0  # the holes really were skipped, not read
    assert rec.digest == hashlib.new(name, bytes(content)).digest()
