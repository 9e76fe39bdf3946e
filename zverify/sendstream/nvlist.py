"""Decode packed nvlists (NV_ENCODE_XDR and NV_ENCODE_NATIVE) into plain Python values.

Send streams carry nvlists in BEGIN payloads (the compound header is XDR; kernel-written
substream lists are NATIVE up to OpenZFS 2.4 and XDR after), and resume tokens carry a
NATIVE one.  The decoder is hardened the way libnvpair's is: every size is checked against
the bytes that remain, names must be NUL-terminated, nesting depth is capped, and any
inconsistency raises NvlistError with the byte offset where decoding failed.  It never
allocates more than the input's size.

Value mapping: flags (BOOLEAN) -> True, integers -> int, BOOLEAN_VALUE -> bool, strings
-> str (undecodable bytes kept with surrogateescape), BYTE_ARRAY/UINT8_ARRAY -> bytes,
other arrays -> list, NVLIST -> dict, NVLIST_ARRAY -> list of dict, DOUBLE -> float.
"""

from __future__ import annotations

import struct
from typing import TypeAlias

NvValue: TypeAlias = "bool | int | float | str | bytes | list[NvValue] | dict[str, NvValue]"
NvDict: TypeAlias = "dict[str, NvValue]"

ENCODE_NATIVE = 0
ENCODE_XDR = 1
MAX_DEPTH = 32

# data_type_t values (include/sys/nvpair.h)
BOOLEAN, BYTE, INT16, UINT16, INT32, UINT32, INT64, UINT64, STRING = range(1, 10)
BYTE_ARRAY, INT16_ARRAY, UINT16_ARRAY, INT32_ARRAY, UINT32_ARRAY = range(10, 15)
INT64_ARRAY, UINT64_ARRAY, STRING_ARRAY, HRTIME, NVLIST, NVLIST_ARRAY = range(15, 21)
BOOLEAN_VALUE, INT8, UINT8, BOOLEAN_ARRAY, INT8_ARRAY, UINT8_ARRAY, DOUBLE = range(21, 28)

# scalar type -> (struct code, native size); arrays map to their element type
_SCALAR = {
    BYTE: ("B", 1), INT8: ("b", 1), UINT8: ("B", 1), INT16: ("h", 2), UINT16: ("H", 2),
    INT32: ("i", 4), UINT32: ("I", 4), BOOLEAN_VALUE: ("i", 4), INT64: ("q", 8),
    UINT64: ("Q", 8), HRTIME: ("q", 8), DOUBLE: ("d", 8),
}  # fmt: skip
_ARRAY_OF = {
    INT8_ARRAY: INT8, UINT8_ARRAY: UINT8, INT16_ARRAY: INT16, UINT16_ARRAY: UINT16,
    INT32_ARRAY: INT32, UINT32_ARRAY: UINT32, INT64_ARRAY: INT64, UINT64_ARRAY: UINT64,
    BOOLEAN_ARRAY: BOOLEAN_VALUE,
}  # fmt: skip


class NvlistError(ValueError):
    """A packed nvlist that cannot be decoded; `offset` is where decoding stopped."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(f"{message} (nvlist byte {offset})")
        self.offset = offset


def unpack(data: bytes) -> NvDict:
    """Decode a packed nvlist (either encoding, chosen by its 4-byte header)."""
    if len(data) < 4:
        raise NvlistError("shorter than the 4-byte nvlist header", 0)
    if data[0] == ENCODE_XDR:
        return _Xdr(data).top()
    if data[0] == ENCODE_NATIVE:
        return _Native(data, little=data[1] == 1).top()
    raise NvlistError(f"unknown nvlist encoding {data[0]}", 0)


def _scalar_value(kind: int, raw: int | float) -> NvValue:
    return bool(raw) if kind == BOOLEAN_VALUE else raw


class _Reader:
    """Bounded cursor over the packed bytes."""

    def __init__(self, data: bytes, order: str) -> None:
        self.data = data
        self.order = order
        self.pos = 4

    def need(self, n: int, what: str) -> None:
        if n < 0 or self.pos + n > len(self.data):
            raise NvlistError(f"{what} runs past the end", self.pos)

    def unpack(self, fmt: str, what: str) -> tuple[int, ...]:
        size = struct.calcsize(self.order + fmt)
        self.need(size, what)
        vals = struct.unpack_from(self.order + fmt, self.data, self.pos)
        self.pos += size
        return vals

    def raw(self, n: int, what: str) -> bytes:
        self.need(n, what)
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out


class _Xdr(_Reader):
    """NV_ENCODE_XDR: big-endian, 4-byte aligned, every list repeats version and nvflag."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data, ">")

    def top(self) -> NvDict:
        return self.nvlist(0)

    def nvlist(self, depth: int) -> NvDict:
        if depth > MAX_DEPTH:
            raise NvlistError("nvlists nested too deeply", self.pos)
        self.unpack("iI", "nvlist version/flags")
        out: NvDict = {}
        while True:
            start = self.pos
            encoded, decoded = self.unpack("ii", "pair sizes")
            if encoded == 0 and decoded == 0:
                return out
            if encoded < 8 or start + encoded > len(self.data):
                raise NvlistError(f"impossible pair size {encoded}", start)
            name = self.string("pair name")
            kind, nelem = self.unpack("ii", "pair type")
            out[name] = self.value(kind, nelem, depth)
            if self.pos > start + encoded:
                raise NvlistError(f"pair {name!r} longer than its encoded size", start)
            self.pos = start + encoded

    def string(self, what: str) -> str:
        (n,) = self.unpack("I", what)
        text = self.raw(n, what)
        self.raw(-n % 4, what)
        return text.decode("utf-8", "surrogateescape")

    def value(self, kind: int, nelem: int, depth: int) -> NvValue:
        if nelem < 0:
            raise NvlistError(f"negative element count {nelem}", self.pos)
        if kind == BOOLEAN:
            return True
        if kind in _SCALAR:
            code, size = _SCALAR[kind]
            fmt = code if size == 8 else "i" if code.islower() else "I"
            return _scalar_value(kind, self.unpack(fmt, "value")[0])
        if kind == STRING:
            return self.string("string value")
        if kind == BYTE_ARRAY:
            data = self.raw(nelem, "byte array")
            self.raw(-nelem % 4, "byte array padding")
            return data
        if kind in _ARRAY_OF:
            return self.array(_ARRAY_OF[kind])
        if kind == STRING_ARRAY:
            return [self.string("string array") for _ in self.bounded(nelem, 4)]
        if kind == NVLIST:
            return self.nvlist(depth + 1)
        if kind == NVLIST_ARRAY:
            return [self.nvlist(depth + 1) for _ in self.bounded(nelem, 16)]
        raise NvlistError(f"unknown data type {kind}", self.pos)

    def bounded(self, count: int, min_size: int) -> range:
        # An element count that cannot fit in what remains is damage, not a reason to loop.
        self.need(count * min_size, "array")
        return range(count)

    def array(self, elem: int) -> NvValue:
        (count,) = self.unpack("I", "array count")
        code, size = _SCALAR[elem]
        width = 8 if size == 8 else 4
        self.need(count * width, "array")
        fmt = code if size == 8 else "i" if code.islower() else "I"
        vals = [v[0] for v in struct.iter_unpack(">" + fmt, self.raw(count * width, "array"))]
        if elem == UINT8:
            return bytes(v & 0xFF for v in vals)
        return [_scalar_value(elem, v) for v in vals]


def _align8(n: int) -> int:
    return (n + 7) & ~7


class _Native(_Reader):
    """NV_ENCODE_NATIVE: the in-memory nvpair images; embedded lists follow their pair."""

    def __init__(self, data: bytes, little: bool) -> None:
        super().__init__(data, "<" if little else ">")

    def top(self) -> NvDict:
        self.unpack("iI", "nvlist version/flags")
        return self.pairs(0)

    def pairs(self, depth: int) -> NvDict:
        if depth > MAX_DEPTH:
            raise NvlistError("nvlists nested too deeply", self.pos)
        out: NvDict = {}
        while True:
            start = self.pos
            (size,) = self.unpack("i", "pair size")
            if size == 0:
                return out
            self.pos = start
            name, kind, nelem, value_at = self.header(start, size)
            out[name] = self.value(kind, nelem, value_at, start + size, depth)

    def header(self, start: int, size: int) -> tuple[str, int, int, int]:
        if size < 16 or size % 8 or start + size > len(self.data):
            raise NvlistError(f"impossible pair size {size}", start)
        _, name_sz, _, nelem, kind = self.unpack("ihhii", "pair header")
        if name_sz < 1 or 16 + name_sz > size:
            raise NvlistError(f"impossible name size {name_sz}", start)
        name = self.data[start + 16 : start + 16 + name_sz]
        if name[-1] != 0:
            raise NvlistError("pair name not NUL-terminated", start)
        if nelem < 0:
            raise NvlistError(f"negative element count {nelem}", start)
        text = name[:-1].decode("utf-8", "surrogateescape")
        return text, kind, nelem, start + _align8(16 + name_sz)

    def value(self, kind: int, nelem: int, at: int, end: int, depth: int) -> NvValue:
        region = self.data[at:end]
        self.pos = end
        if kind == BOOLEAN:
            return True
        if kind in _SCALAR:
            code, size = _SCALAR[kind]
            return _scalar_value(kind, self.fixed(region, code, size, 1, at)[0])
        if kind == STRING:
            return self.cstring(region, at)
        if kind in (BYTE_ARRAY, UINT8_ARRAY):
            return bytes(self.fixed(region, "B", 1, nelem, at))
        if kind in _ARRAY_OF:
            elem = _ARRAY_OF[kind]
            code, size = _SCALAR[elem]
            return [_scalar_value(elem, v) for v in self.fixed(region, code, size, nelem, at)]
        if kind == STRING_ARRAY:
            return self.strings(region, nelem, at)
        if kind == NVLIST:
            return self.pairs(depth + 1)
        if kind == NVLIST_ARRAY:
            if nelem * 32 > len(region):
                raise NvlistError("nvlist array larger than its pair", at)
            return [self.pairs(depth + 1) for _ in range(nelem)]
        raise NvlistError(f"unknown data type {kind}", at)

    def fixed(self, region: bytes, code: str, size: int, n: int, at: int) -> list[int]:
        if n * size > len(region):
            raise NvlistError("value larger than its pair", at)
        return [v[0] for v in struct.iter_unpack(self.order + code, region[: n * size])]

    def cstring(self, region: bytes, at: int) -> str:
        end = region.find(b"\0")
        if end < 0:
            raise NvlistError("string value not NUL-terminated", at)
        return region[:end].decode("utf-8", "surrogateescape")

    def strings(self, region: bytes, n: int, at: int) -> list[NvValue]:
        if n * 8 > len(region):
            raise NvlistError("string array larger than its pair", at)
        out: list[NvValue] = []
        pos = n * 8  # pointer slots first, then the strings
        for _ in range(n):
            text = self.cstring(region[pos:], at + pos)
            out.append(text)
            pos += len(text.encode("utf-8", "surrogateescape")) + 1
        return out
