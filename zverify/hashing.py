"""Content digest algorithms: names users type, and how each is computed.

XXH3-128 (default) is computed entirely in the C core's worker threads.
BLAKE3 uses the PyPI `blake3` binding (it releases the GIL and can use
several threads on one large file); see walk.py.
"""

import enum


class Algorithm(enum.StrEnum):
    XXH3_128 = "xxh3-128"
    BLAKE3 = "blake3"


ALIASES = {"xxh3": Algorithm.XXH3_128, "xxh128": Algorithm.XXH3_128}


def parse_algorithm(name: str) -> Algorithm:
    """Accept 'xxh3-128', 'xxh3', 'xxh128' or 'blake3' (any case)."""
    key = name.strip().lower()
    if key in ALIASES:
        return ALIASES[key]
    try:
        return Algorithm(key)
    except ValueError:
        choices = ", ".join(a.value for a in Algorithm)
        raise ValueError(f"unknown hash algorithm {name!r} (choose from {choices})") from None
