"""Sizes and durations as people type them, parsed the same way by every option that takes one.

A size is a number of bytes, optionally with a decimal point and a unit: K, M, G, T, P or
KiB ... PiB are powers of 1024 (as `zfs`, `du -h` and `df -h` print them), KB ... PB powers
of 1000 (as disk vendors and `df -H` do), B bytes: `200G`, `1.5TiB`, `200GB`, `4096`.
A duration is seconds, or numbers each with a unit s, m, h, d or w, summed: `90`, `30m`,
`1h30m`, `1.5d`.  An age (`--max-age`) is days as a plain number, or a duration.
Anything else is a UsageError naming the option, the text and what it takes; nan, infinity
and values below the option's minimum are refused (an infinite budget or age would make
nothing ever due again).
"""

import math
import re

from zverify.errors import UsageError

_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*(?:([KMGTP])(iB|B)?|(B))?", re.IGNORECASE)
_POWERS = "KMGTP"
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)\s*([smhdw]?)")
_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}

SIZE_HELP = "K, M, G, T (or KiB...: powers of 1024), KB, MB, GB, TB (powers of 1000)"
DURATION_HELP = "seconds, or with s, m, h, d, w: 90, 30m, 1h30m, 1.5d"


def size(text: str, option: str) -> int:
    """Bytes, above 0."""
    found = _SIZE.fullmatch(text.strip())
    if found is None:
        raise UsageError(f"{option} {text!r}: a number of bytes, optionally with {SIZE_HELP}")
    number, letter, suffix, _bytes = found.groups()
    base = 1000 if suffix is not None and suffix.upper() == "B" else 1024
    power = _POWERS.index(letter.upper()) + 1 if letter else 0
    value = int(float(number) * base**power)
    if value <= 0:
        raise UsageError(f"{option} {text!r}: a size above 0")
    return value


def duration(text: str, option: str, minimum: float = 0.0, inclusive: bool = False) -> float:
    """Seconds: above minimum (or at it, when inclusive), never infinite."""
    parts = _parts(text)
    if parts is None:
        raise UsageError(f"{option} {text!r}: {DURATION_HELP}")
    seconds = sum(float(n) * _SECONDS[unit.lower()] for n, unit in parts)
    _in_range(seconds, text, option, minimum, inclusive, "a duration")
    return seconds


def age(text: str, option: str) -> float:
    """Seconds, 0 or more: a plain number is days (--max-age DAYS), else a duration."""
    try:
        days = float(text)
    except ValueError:
        return duration(text, option, 0.0, inclusive=True)
    seconds = days * 86400
    _in_range(seconds, text, option, 0.0, True, "a number of days")
    return seconds


def _parts(text: str) -> list[tuple[str, str]] | None:
    """The (number, unit) pairs text is made of, or None when it is anything else; a
    unitless number only alone (`90`, never `1h30`)."""
    compact = text.strip()
    parts = [(m.group(1), m.group(2)) for m in _DURATION_PART.finditer(compact)]
    rebuilt = "".join(n + u for n, u in parts)
    if not parts or rebuilt != compact.replace(" ", ""):
        return None
    if len(parts) > 1 and any(unit == "" for _, unit in parts):
        return None
    return parts


def _in_range(
    value: float, text: str, option: str, minimum: float, inclusive: bool, what: str
) -> None:
    low_ok = value >= minimum if inclusive else value > minimum
    if not (low_ok and math.isfinite(value)):  # nan fails every comparison
        bound = f"{minimum:g} or more" if inclusive else f"above {minimum:g}"
        raise UsageError(f"{option} {text!r}: {what}, {bound}")
