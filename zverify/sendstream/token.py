"""Decode a `receive_resume_token`: `<version>-<fletcher4 hex>-<packed length hex>-<zlib hex>`.

The token is what `zfs get receive_resume_token` prints for a partially received dataset
and what `zfs send -t` consumes.  Its checksum is word `a` of fletcher-4 over the
*compressed* bytes, in the byte order of the machine that made it (we accept either and
say which); the payload is a zlib stream of a NATIVE-encoded packed nvlist whose length
the token states.  Decompression is bounded by that length, so a hostile token cannot
make us allocate more than it claims (and the claim itself is capped).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from zverify import _zvcore
from zverify.sendstream.nvlist import NvDict, NvlistError, NvlistLimitError, unpack

T = TypeVar("T")

MAX_PACKED = 1 << 20
"""Far above any real token (a few hundred bytes), far below anything dangerous."""
MAX_VALUES = 10_000
"""Values decoded from its nvlist (a real token has about ten)."""
MAX_TOKEN = 4 * MAX_PACKED
"""Characters of a token: its hex payload is compressed, hence shorter than MAX_PACKED."""

SUPPORTED_VERSION = 1


class TokenError(ValueError):
    """A token that is malformed, fails its checksum or does not decode."""


@dataclass(frozen=True, slots=True)
class ResumeToken:
    """What a resume token says: where to resume which send, with which flags."""

    version: int
    checksum_order: str  # "little" or "big": byte order the checksum was computed in
    nvlist: NvDict = field(repr=False)

    @property
    def toname(self) -> str | None:
        value = self.nvlist.get("toname")
        return value if isinstance(value, str) else None

    def number(self, key: str) -> int | None:
        value = self.nvlist.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def flags(self) -> list[str]:
        """The boolean flags present (largeblockok, embedok, compressok, rawok, savedok...)."""
        return sorted(k for k, v in self.nvlist.items() if v is True)


def _fields(token: str) -> tuple[int, int, int, bytes]:
    if len(token) > MAX_TOKEN:
        raise TokenError(f"a resume token of {len(token)} characters (limit {MAX_TOKEN})")
    parts = token.strip().split("-")
    if len(parts) != 4:
        raise TokenError("a resume token has four '-'-separated fields")
    version = _field("version (decimal)", parts[0], _decimal)
    checksum = _field("checksum (hex)", parts[1], _hex)
    length = _field("length (hex)", parts[2], _hex)
    compressed = _field("payload (hex)", parts[3], bytes.fromhex)
    return version, checksum, length, compressed


def _field(name: str, text: str, parse: Callable[[str], T]) -> T:
    """One field, or one line naming it (not Python's message about int())."""
    try:
        return parse(text)
    except ValueError:
        raise TokenError(f"malformed resume token: field {name} is {text[:40]!r}") from None


def _decimal(text: str) -> int:
    if not text.isascii() or not text.isdigit():
        raise ValueError(text)
    return int(text, 10)


def _hex(text: str) -> int:
    if not text or not all(c in "0123456789abcdefABCDEF" for c in text):
        raise ValueError(text)
    return int(text, 16)


def _checksum_order(compressed: bytes, expected: int) -> str:
    for order in ("little", "big"):
        a = _zvcore.fletcher4(compressed, big_endian=order == "big")[0]
        if a == expected:
            return order
    raise TokenError("resume token checksum mismatch (token damaged or truncated)")


def decode_token(token: str) -> ResumeToken:
    """Parse, checksum-verify, decompress and decode a resume token."""
    version, checksum, length, compressed = _fields(token)
    if version != SUPPORTED_VERSION:
        raise TokenError(f"unsupported resume token version {version}")
    order = _checksum_order(compressed, checksum)
    if not 0 < length <= MAX_PACKED:
        raise TokenError(f"impossible packed nvlist length {length}")
    inflater = zlib.decompressobj()
    try:
        packed = inflater.decompress(compressed, length + 1)
    except zlib.error as err:
        raise TokenError(f"resume token payload does not decompress: {err}") from None
    if len(packed) != length or not inflater.eof:
        raise TokenError(f"resume token payload is not {length} bytes once decompressed")
    try:
        nvlist = unpack(packed, max_kept=MAX_VALUES)
    except (NvlistError, NvlistLimitError) as err:
        raise TokenError(f"resume token nvlist: {err}") from None
    return ResumeToken(version=version, checksum_order=order, nvlist=nvlist)
