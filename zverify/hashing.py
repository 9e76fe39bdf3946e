"""Content digest algorithms: names users type, and how each is computed.

Every --hash (XXH3-128 by default, BLAKE3, SHA-256, SHA-512) is computed in the C core's
worker threads (SHA-2 through OpenSSL's libcrypto), and so are SHA-1 and MD5, which only
other tools' lists use (libcrypto too).  new_hasher serves the odd file hashed outside a
walk, e.g. a BagIt tag file, and cross-checks the C hashers in the tests.  SHA-256, SHA-512,
SHA-1 and MD5 exist so that checkfiles, mtree specs, BagIt bags and hashdeep lists written
by other tools can be verified; zverify's own manifests use XXH3-128 or BLAKE3.
"""

import enum
from typing import Protocol

from zverify.suggest import did_you_mean


class Algorithm(enum.StrEnum):
    XXH3_128 = "xxh3-128"
    BLAKE3 = "blake3"
    SHA256 = "sha256"
    SHA512 = "sha512"
    SHA1 = "sha1"
    MD5 = "md5"


ALIASES = {"xxh3": Algorithm.XXH3_128, "xxh128": Algorithm.XXH3_128}
DIGEST_SIZES = {
    Algorithm.XXH3_128: 16,
    Algorithm.BLAKE3: 32,
    Algorithm.SHA256: 32,
    Algorithm.SHA512: 64,
    Algorithm.SHA1: 20,
    Algorithm.MD5: 16,
}
MULTITHREADED_BLAKE3 = 1 << 24  # files this big let the binding use several threads


class Hasher(Protocol):
    def update(self, data: bytes | memoryview, /) -> object: ...
    def digest(self) -> bytes: ...


def new_hasher(algorithm: Algorithm, size: int) -> Hasher:
    """A fresh hasher for a file of `size` bytes (not for XXH3-128: that one is in C)."""
    # imported on first use: loading OpenSSL's hashlib and the blake3 binding costs ~10 ms of
    # start-up that the default (XXH3-128, in C) never needs
    if algorithm is Algorithm.BLAKE3:
        import blake3

        threads = blake3.blake3.AUTO if size > MULTITHREADED_BLAKE3 else 1
        return blake3.blake3(max_threads=threads)
    if algorithm is Algorithm.XXH3_128:
        raise ValueError("XXH3-128 is computed by the C core")
    import hashlib

    return hashlib.new(algorithm.value)


# What --hash offers; SHA-1 and MD5 are only ever used to check other tools' lists.
CHOICES = (Algorithm.XXH3_128, Algorithm.BLAKE3, Algorithm.SHA256, Algorithm.SHA512)


def parse_algorithm(name: str) -> Algorithm:
    """Accept 'xxh3-128', 'xxh3', 'xxh128', 'blake3', 'sha256' or 'sha512' (any case)."""
    key = name.strip().lower()
    if key in ALIASES:
        return ALIASES[key]
    if key not in CHOICES:
        choices = ", ".join(a.value for a in CHOICES)
        hint = did_you_mean(key, [*ALIASES, *(a.value for a in CHOICES)])
        raise ValueError(f"unknown hash algorithm {name!r}{hint} (choose from {choices})")
    return Algorithm(key)
