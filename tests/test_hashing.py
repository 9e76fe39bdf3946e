"""Every algorithm zverify knows is hashed by the C workers: a walk never hashes in Python,
which is what lets compare join two live trees in C and MPI ranks hash any --hash."""

import hashlib
from pathlib import Path

import pytest

from zverify import _zvcore
from zverify.hashing import DIGEST_SIZES, Algorithm
from zverify.walk import C_ALGORITHMS, TreeWalk, WalkOptions


def test_every_algorithm_has_a_c_hasher() -> None:
    assert set(C_ALGORITHMS) == set(Algorithm)
    assert len(set(C_ALGORITHMS.values())) == len(Algorithm)
    assert _zvcore.ALGO_NONE not in C_ALGORITHMS.values()


HASHLIB_KNOWS = [a for a in Algorithm if a.value in hashlib.algorithms_guaranteed]


@pytest.mark.parametrize("algorithm", HASHLIB_KNOWS)
def test_the_c_hasher_gives_hashlibs_digest(algorithm: Algorithm, tmp_path: Path) -> None:
    data = bytes(range(256)) * 4099
    (tmp_path / "f").write_bytes(data)
    walk = TreeWalk(str(tmp_path), WalkOptions(algorithm=algorithm, hash_content=True))
    try:
        (record,) = [e for e in walk if e.path == b"f"]
    finally:
        walk.close()
    assert record.digest == hashlib.new(algorithm.value, data).digest()
    assert len(record.digest) == DIGEST_SIZES[algorithm]
