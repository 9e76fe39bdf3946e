"""Decode packed nvlists (NV_ENCODE_XDR and NV_ENCODE_NATIVE) into plain Python values.

Send streams carry nvlists in BEGIN payloads (the compound header is XDR; kernel-written
substream lists are NATIVE up to OpenZFS 2.4 and XDR after), and resume tokens carry a
NATIVE one.  The decoder is hardened the way libnvpair's is: every size is checked against
the bytes that remain, names must be NUL-terminated, nesting depth is capped, and any
inconsistency raises NvlistError with the byte offset where decoding failed.  No count or
length read from the input is trusted before the bytes it claims are known to be there,
and the work is linear in the input's size.

What is kept is chosen by a Keep spec (ALL by default): the whole list is always checked,
but a stream validator keeps only the few keys it reads, so a hostile 64 MiB list of
millions of pairs never becomes millions of Python objects (see KeepSpec).

Value mapping: flags (BOOLEAN) -> True, integers -> int, BOOLEAN_VALUE -> bool, strings
-> str (undecodable bytes kept with surrogateescape), BYTE_ARRAY/UINT8_ARRAY -> bytes,
other arrays -> list, NVLIST -> dict, NVLIST_ARRAY -> list of dict, DOUBLE -> float.
"""

from __future__ import annotations

import struct
from typing import TypeAlias, Union

NvValue: TypeAlias = "bool | int | float | str | bytes | list[NvValue] | dict[str, NvValue]"
NvDict: TypeAlias = "dict[str, NvValue]"

KeepSpec: TypeAlias = Union[str, "dict[str, KeepSpec]", None]
"""What to keep of a value: ALL of it; SCALAR: a bool, number or string (anything else is
checked and dropped); a dict: if the value is an nvlist, those of its keys ("*": any
other key) with their own spec, else dropped; None: check and drop."""
ALL = "all"
SCALAR = "scalar"

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


class NvlistLimitError(ValueError):
    """A packed nvlist with more values to keep than the caller's max_kept: not damage,
    but more than is decoded in bounded memory; `offset` is where the limit was hit."""

    def __init__(self, limit: int, offset: int) -> None:
        super().__init__(f"more than {limit} values to keep (nvlist byte {offset})")
        self.offset = offset


def unpack(data: bytes, keep: KeepSpec = ALL, max_kept: int | None = None) -> NvDict:
    """Decode a packed nvlist (either encoding, chosen by its 4-byte header); keep: what
    of it to return (every pair is checked whatever it says).  Raises NvlistError (damage)
    or, past max_kept values kept (pairs and array elements), NvlistLimitError."""
    if len(data) < 4:
        raise NvlistError("shorter than the 4-byte nvlist header", 0)
    spec: KeepSpec = keep if isinstance(keep, dict) else ALL if keep == ALL else {}
    reader: _Xdr | _Native
    if data[0] == ENCODE_XDR:
        reader = _Xdr(data)
    elif data[0] == ENCODE_NATIVE:
        reader = _Native(data, little=data[1] == 1)
    else:
        raise NvlistError(f"unknown nvlist encoding {data[0]}", 0)
    reader.budget = reader.limit = max_kept if max_kept is not None else -1
    return reader.top(spec)


def _member(spec: KeepSpec, name: str) -> KeepSpec:
    """The spec of pair `name` inside an nvlist kept with spec."""
    if spec == ALL:
        return ALL
    if isinstance(spec, dict):
        return spec.get(name, spec.get("*"))
    return None


def _inner(spec: KeepSpec) -> KeepSpec:
    """The spec a nested nvlist (or nvlist array element) is read with: None drops it."""
    return spec if spec == ALL or isinstance(spec, dict) else None


def _scalar_value(kind: int, raw: int | float) -> NvValue:
    return bool(raw) if kind == BOOLEAN_VALUE else raw


class _Reader:
    """Bounded cursor over the packed bytes."""

    def __init__(self, data: bytes, order: str) -> None:
        self.data = data
        self.view = memoryview(data)
        self.order = order
        self.pos = 4
        self.limit = self.budget = -1  # values still to keep (-1: no limit)

    def kept(self, n: int, at: int) -> None:
        """n more values are kept: within the budget, else NvlistLimitError."""
        if self.budget >= 0:
            self.budget -= n
            if self.budget < 0:
                raise NvlistLimitError(self.limit, at)

    def need(self, n: int, what: str) -> None:
        if n < 0 or self.pos + n > len(self.data):
            raise NvlistError(f"{what} runs past the end", self.pos)

    def unpack(self, fmt: str, what: str) -> tuple[int, ...]:
        size = struct.calcsize(self.order + fmt)
        self.need(size, what)
        vals = struct.unpack_from(self.order + fmt, self.data, self.pos)
        self.pos += size
        return vals

    def raw(self, n: int, what: str, keep: bool = True) -> bytes:
        self.need(n, what)
        out = self.data[self.pos : self.pos + n] if keep else b""
        self.pos += n
        return out


class _Xdr(_Reader):
    """NV_ENCODE_XDR: big-endian, 4-byte aligned, every list repeats version and nvflag."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data, ">")

    def top(self, spec: KeepSpec) -> NvDict:
        return self.nvlist(0, spec)

    def nvlist(self, depth: int, spec: KeepSpec) -> NvDict:
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
            member = _member(spec, name)
            value = self.value(kind, nelem, depth, member)
            if member is not None and value is not None:
                out[name] = value
                self.kept(1, start)
            if self.pos > start + encoded:
                raise NvlistError(f"pair {name!r} longer than its encoded size", start)
            self.pos = start + encoded

    def string(self, what: str, keep: bool = True) -> str:
        (n,) = self.unpack("I", what)
        text = self.raw(n, what, keep)
        self.raw(-n % 4, what, False)
        return text.decode("utf-8", "surrogateescape")

    def value(self, kind: int, nelem: int, depth: int, spec: KeepSpec) -> NvValue | None:
        """The value (None: dropped by spec, after checking it)."""
        if nelem < 0:
            raise NvlistError(f"negative element count {nelem}", self.pos)
        whole = spec == ALL
        scalar = whole or spec == SCALAR
        if kind == BOOLEAN:
            return True if scalar else None
        if kind in _SCALAR:
            code, size = _SCALAR[kind]
            fmt = code if size == 8 else "i" if code.islower() else "I"
            found = _scalar_value(kind, self.unpack(fmt, "value")[0])
            return found if scalar else None
        if kind == STRING:
            text = self.string("string value", scalar)
            return text if scalar else None
        if kind == BYTE_ARRAY:
            data = self.raw(nelem, "byte array", whole)
            self.raw(-nelem % 4, "byte array padding", False)
            return data if whole else None
        if kind in _ARRAY_OF:
            return self.array(_ARRAY_OF[kind], whole)
        if kind == STRING_ARRAY:
            if whole:
                self.kept(nelem, self.pos)
            texts: list[NvValue] = [
                self.string("string array", whole) for _ in self.bounded(nelem, 4)
            ]
            return texts if whole else None
        if kind == NVLIST:
            inner = _inner(spec)
            found_list = self.nvlist(depth + 1, inner)
            return found_list if inner is not None else None
        if kind == NVLIST_ARRAY:
            inner = _inner(spec if whole else None)
            if whole:
                self.kept(nelem, self.pos)
            lists: list[NvValue] = [self.nvlist(depth + 1, inner) for _ in self.bounded(nelem, 16)]
            return lists if whole else None
        raise NvlistError(f"unknown data type {kind}", self.pos)

    def bounded(self, count: int, min_size: int) -> range:
        # An element count that cannot fit in what remains is damage, not a reason to loop.
        self.need(count * min_size, "array")
        return range(count)

    def array(self, elem: int, keep: bool) -> NvValue | None:
        (count,) = self.unpack("I", "array count")
        code, size = _SCALAR[elem]
        width = 8 if size == 8 else 4
        self.need(count * width, "array")
        if not keep:
            self.pos += count * width
            return None
        self.kept(count, self.pos)
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

    def top(self, spec: KeepSpec) -> NvDict:
        self.unpack("iI", "nvlist version/flags")
        return self.pairs(0, spec)

    def pairs(self, depth: int, spec: KeepSpec) -> NvDict:
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
            member = _member(spec, name)
            value = self.value(kind, nelem, value_at, start + size, depth, member)
            if member is not None and value is not None:
                out[name] = value
                self.kept(1, start)

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

    def value(
        self, kind: int, nelem: int, at: int, end: int, depth: int, spec: KeepSpec
    ) -> NvValue | None:
        """The value in data[at:end] (None: dropped by spec, after checking it)."""
        self.pos = end
        whole = spec == ALL
        scalar = whole or spec == SCALAR
        if kind == BOOLEAN:
            return True if scalar else None
        if kind in _SCALAR:
            code, size = _SCALAR[kind]
            found = _scalar_value(kind, self.fixed(code, size, 1, at, end, True)[0])
            return found if scalar else None
        if kind == STRING:
            text = self.cstring(at, end, scalar)
            return text if scalar else None
        if kind in (BYTE_ARRAY, UINT8_ARRAY):
            self.fixed("B", 1, nelem, at, end, False)
            return self.data[at : at + nelem] if whole else None
        if kind in _ARRAY_OF:
            elem = _ARRAY_OF[kind]
            code, size = _SCALAR[elem]
            values = self.fixed(code, size, nelem, at, end, whole)
            return [_scalar_value(elem, v) for v in values] if whole else None
        if kind == STRING_ARRAY:
            if whole:
                self.kept(nelem, at)
            texts: list[NvValue] = list(self.strings(nelem, at, end, whole))
            return texts if whole else None
        if kind == NVLIST:
            inner = _inner(spec)
            found_list = self.pairs(depth + 1, inner)
            return found_list if inner is not None else None
        if kind == NVLIST_ARRAY:
            if nelem * 32 > end - at:
                raise NvlistError("nvlist array larger than its pair", at)
            inner = _inner(spec if whole else None)
            if whole:
                self.kept(nelem, at)
            lists: list[NvValue] = [self.pairs(depth + 1, inner) for _ in range(nelem)]
            return lists if whole else None
        raise NvlistError(f"unknown data type {kind}", at)

    def fixed(self, code: str, size: int, n: int, at: int, end: int, keep: bool) -> list[int]:
        if n * size > end - at:
            raise NvlistError("value larger than its pair", at)
        if not keep:
            return []
        self.kept(n - 1, at)  # the pair itself counts one
        return [v[0] for v in struct.iter_unpack(self.order + code, self.view[at : at + n * size])]

    def cstring(self, at: int, end: int, keep: bool) -> str:
        stop = self.data.find(b"\0", at, end)
        if stop < 0:
            raise NvlistError("string value not NUL-terminated", at)
        return self.data[at:stop].decode("utf-8", "surrogateescape") if keep else ""

    def strings(self, n: int, at: int, end: int, keep: bool) -> list[str]:
        if n * 8 > end - at:
            raise NvlistError("string array larger than its pair", at)
        out: list[str] = []
        pos = at + n * 8  # pointer slots first, then the strings
        for _ in range(n):
            stop = self.data.find(b"\0", pos, end)
            if stop < 0:
                raise NvlistError("string value not NUL-terminated", pos)
            if keep:
                out.append(self.data[pos:stop].decode("utf-8", "surrogateescape"))
            pos = stop + 1
        return out
