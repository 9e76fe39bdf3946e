"""Content digest algorithms: names users type, and how each is computed.

Every --hash (XXH3-128 by default, BLAKE3, SHA-256, SHA-512) is computed in the C core's
worker threads, and so are SHA-1 and MD5 (SHA-2, SHA-1 and MD5 through OpenSSL's libcrypto).
BLAKE3 over bytes (a manifest's own digest) is the C core's BLAKE3 too, so there is one
BLAKE3 in zverify; the tests check it against the PyPI `blake3` package.  (A BagIt bag's
tag files, whose algorithms RFC 8493 leaves open, are hashed with hashlib in manifest/bagit.py.)
SHA-256, SHA-512, SHA-1 and MD5 exist so that checkfiles, mtree specs, BagIt bags and
hashdeep lists written by other tools can be verified; zverify's own manifests use
XXH3-128 or BLAKE3.
"""

import enum
import os
from typing import TYPE_CHECKING

from zverify.errors import UsageError
from zverify.suggest import did_you_mean

if TYPE_CHECKING:
    from zverify import _zvcore


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


def blake3_hasher() -> "_zvcore.Hasher":
    """BLAKE3 over bytes in memory, from the C core's own BLAKE3 (the one the walk uses)."""
    from zverify import _zvcore

    return _zvcore.Hasher(_zvcore.ALGO_BLAKE3)


XXH_VARIABLE = "ZVERIFY_XXH"
"""Which XXH3-128 build hashes (the C core reads it): auto (AVX2 when the CPU has it) or
baseline; both give the same digests, so it exists for tests and for measuring."""


def check_xxh_setting() -> None:
    """Refuse a ZVERIFY_XXH that names no build (UsageError, exit 2): an explicit request is
    a demand, and a typo (`baseine`) must not measure or test the other build unnoticed."""
    from zverify import _zvcore  # the core decides what it accepts: one reader of the variable

    if not _zvcore.xxh_setting_known():
        value = os.environ.get(XXH_VARIABLE, "")
        raise UsageError(
            f"{XXH_VARIABLE}={value!r} names no XXH3 build: set it to auto or baseline, or unset it"
        )


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
