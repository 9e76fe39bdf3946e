"""Fuzz inputs and targets for the parsers of untrusted send-stream data: the C stream
scanner (through verify_stream and the report renderers), the nvlist decoder and the
resume-token parser.  Shared by the brief, seeded CI fuzz (tests/sendstream/test_fuzz.py,
also run under ASan/UBSan by scripts/asan.sh) and the long harness (bench/fuzz_parsers.py).

A target returns normally for any input; it raises only the parser's documented error
type for what that parser rejects (caught here), and AssertionError when an invariant
breaks.  Anything else escaping a target is a crash.

Inputs are seeds (real fixtures when present, synthetic streams otherwise, nvlists and
tokens made with tools/streamgen.py) put through byte-level mutations that aim at
what hostile input does: extreme integers in length/count fields, cuts, inserted and
deleted bytes, repeated slices (a record repeated), zero runs, splices between seeds.
"""

from __future__ import annotations

import json
import os
import struct
import zlib
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from tools.streamgen import DRR, StreamBuilder, fletcher4, native_nvlist, xdr_nvlist
from zverify import _zvcore
from zverify.report import stream as stream_report
from zverify.sendstream.nvlist import NvlistError, NvlistLimitError, unpack
from zverify.sendstream.token import TokenError, decode_token
from zverify.sendstream.validate import HEADER_KEEP, SUBSTREAM_KEEP, verify_stream

Mutation = tuple[str, int, int]

# The real fixture streams, read as data (tests/sendstream/conftest.py names them for the tests)
STREAMS = Path(__file__).resolve().parents[2] / "tests" / "data" / "streams"

# Values a hostile length, count or size field holds, as 4- and 8-byte words.
EXTREMES = [0, 1, 7, 8, 0x7F, 0xFF, 0x7FFF_FFFF, 0x8000_0000, 0xFFFF_FFFF, 1 << 32,
            1 << 40, (1 << 63) - 1, 1 << 63, (1 << 64) - 1, 312, 16 << 20, (16 << 20) + 1,
            256 << 20]  # fmt: skip


def mutation(max_len: int = 1 << 20) -> st.SearchStrategy[Mutation]:
    """(kind, position, argument); positions are taken modulo the input's length."""
    pos = st.integers(0, max_len)
    return st.one_of(
        st.tuples(st.just("flip"), pos, st.integers(1, 255)),
        st.tuples(st.just("word32"), pos, st.integers(0, 2 * len(EXTREMES) - 1)),
        st.tuples(st.just("word64"), pos, st.integers(0, 2 * len(EXTREMES) - 1)),
        st.tuples(st.just("cut"), pos, st.just(0)),
        st.tuples(st.just("insert"), pos, st.integers(1, 400)),
        st.tuples(st.just("zeros"), pos, st.integers(1, 4096)),
        st.tuples(st.just("delete"), pos, st.integers(1, 400)),
        st.tuples(st.just("repeat"), pos, st.integers(2, 64)),
        st.tuples(st.just("splice"), pos, st.integers(0, 1 << 16)),
    )


def apply(data: bytearray, m: Mutation, align: int, other: bytes) -> bytearray:
    """One mutation; `align`: word mutations and repeated slices fall on multiples of it
    (4 for nvlists, 8 for streams: fields are aligned), repeated slices are DRR long for
    streams (a record repeated)."""
    kind, pos, arg = m
    size = len(data)
    at = pos % (size + 1)
    if kind == "flip" and at < size:
        data[at] ^= arg
    elif kind in ("word32", "word64") and size >= 8:
        width = 4 if kind == "word32" else 8
        at = min(at - at % min(align, width), size - width)
        value = EXTREMES[arg % len(EXTREMES)] & ((1 << (8 * width)) - 1)
        order = "<" if arg < len(EXTREMES) else ">"
        struct.pack_into(order + ("I" if width == 4 else "Q"), data, at, value)
    elif kind == "cut":
        del data[at:]
    elif kind == "insert":
        data[at:at] = bytes((at + i * 37) & 0xFF for i in range(arg))
    elif kind == "zeros":
        data[at:at] = bytes(arg)
    elif kind == "delete":
        del data[at : at + arg]
    elif kind == "repeat":
        unit = DRR if align == 8 else 16
        at -= at % align
        data[at:at] = bytes(data[at : at + unit]) * (arg - 1)
    elif kind == "splice" and other:
        start = arg % len(other)
        data[at:] = other[start : start + max(1, size - at)]
    return data


def mutated(seeds: list[bytes], align: int, max_mutations: int = 4) -> st.SearchStrategy[bytes]:
    """A seed (or a mutated one): up to max_mutations mutations, splicing from seeds."""

    def build(args: tuple[int, int, list[Mutation]]) -> bytes:
        first, second, muts = args
        data = bytearray(seeds[first])
        for m in muts:
            data = apply(data, m, align, seeds[second])
        return bytes(data)

    index = st.integers(0, len(seeds) - 1)
    return st.tuples(index, index, st.lists(mutation(), max_size=max_mutations)).map(build)


# -- send streams ----------------------------------------------------------------------------


@cache
def stream_seeds() -> list[bytes]:
    """Real fixture streams (the smaller ones) and synthetic streams with nvlists."""
    seeds = []
    index = STREAMS / "index.json"
    real = json.loads(index.read_text())["streams"] if index.exists() else []
    for entry in sorted(real, key=lambda e: e["size"])[:6]:
        if entry["size"] <= 400_000:
            seeds.append((STREAMS / entry["file"]).read_bytes())
    b = StreamBuilder()
    b.substream("pool/fs@a", 0x1111)
    seeds.append(bytes(b.data))
    header = {
        "tosnap": "c",
        "fromsnap": "a",
        "fss": {"0x1a": {"name": "p/f", "snaps": {"a": 1, "b": 2, "c": 3}, "origin": 9}},
    }
    b = StreamBuilder()
    b.package_header(header, "p/f@c")
    keys = {"crypt_keydata": {"to_ivset_guid": 7, "from_ivset_guid": 6}, "resume_object": 3}
    b.substream("p/f@b", 2, 1, nwrites=1, payload=native_nvlist(keys))
    b.substream("p/f@c", 3, 2, nwrites=1, payload=native_nvlist({"resume_offset": 5}, False))
    b.final_end()
    seeds.append(bytes(b.data))
    b = StreamBuilder(big=True)
    b.substream("pool/be@a", 0x2222, nwrites=1)
    seeds.append(bytes(b.data))
    return seeds


def stream_inputs(max_mutations: int = 4) -> st.SearchStrategy[bytes]:
    return mutated(stream_seeds(), 8, max_mutations)


def run_stream(data: bytes) -> None:
    """verify_stream never raises; its report is consistent and renders (text and JSON)."""
    fd = os.memfd_create("fuzz-stream", os.MFD_CLOEXEC)
    try:
        os.write(fd, data)
        os.lseek(fd, 0, os.SEEK_SET)
        report = verify_stream(fd)
    finally:
        os.close(fd)
    assert report.readable, report.problems[:1]
    assert report.size <= len(data)
    if report.valid:
        assert report.size == len(data) and report.substreams
    for p in report.problems + report.warnings:
        assert 0 <= p.offset <= len(data), p
    assert len(report.problems) <= 100 and len(report.warnings) <= 100
    assert len(report.substreams) <= 250_000
    doc = json.loads(stream_report.info_json(report))
    assert doc["valid"] is report.valid
    json.loads(stream_report.verify_json([report]))
    stream_report.info_text(report)
    stream_report.verify_text([report])


# -- nvlists ---------------------------------------------------------------------------------

NV = {
    "tosnap": "s3",
    "fromsnap": "s1",
    "fss": {"0x1234": {"name": "zv/fs", "snaps": {"s1": 11, "s2": 22}, "origin": 5}},
    "raw": True,
    "resume_object": 3,
    "crypt_keydata": {"to_ivset_guid": 99, "from_ivset_guid": 98},
    "blob": b"\x01\x02\x03\x04\x05",
}


@cache
def nvlist_seeds() -> list[bytes]:
    text_only = {k: v for k, v in NV.items() if not isinstance(v, bytes)}
    return [
        xdr_nvlist(text_only),
        native_nvlist(NV, True),
        native_nvlist(NV, False),
        native_nvlist({"a": {"b": {"c": {"d": 1}}}}, True),
        xdr_nvlist({"a": {"b": {"c": "x" * 40}}}),
    ]


def nvlist_inputs(max_mutations: int = 4) -> st.SearchStrategy[bytes]:
    return st.one_of(
        mutated(nvlist_seeds(), 4, max_mutations),
        st.tuples(st.integers(0, 1), st.binary(max_size=600)).map(
            lambda t: bytes([t[0], 1, 0, 0]) + t[1]
        ),
    )


def run_nvlist(data: bytes) -> None:
    """unpack raises NvlistError (or, with max_kept, NvlistLimitError) and nothing else;
    what a Keep spec keeps is part of what the whole decode gives."""
    try:
        whole = unpack(data)
    except NvlistError:
        whole = None
    for keep, limit in ((HEADER_KEEP, 1000), (SUBSTREAM_KEEP, None), (HEADER_KEEP, 3)):
        try:
            kept = unpack(data, keep, limit)
        except (NvlistError, NvlistLimitError) as err:
            assert whole is None or isinstance(err, NvlistLimitError), err
            continue
        assert whole is not None, "a partial decode accepted what the whole decode refused"
        assert set(kept) <= set(whole)


# -- resume tokens ---------------------------------------------------------------------------


def token_of(packed: bytes, big: bool = False, level: int = 6) -> str:
    comp = zlib.compress(packed, level)
    return f"1-{fletcher4(comp, big=big)[0]:x}-{len(packed):x}-{comp.hex()}"


TOKEN_NV = {"object": 7, "offset": 131072, "toguid": 2**63 + 5, "toname": "p/f@s", "embedok": True}


def token_inputs(max_mutations: int = 4) -> st.SearchStrategy[str]:
    """Tokens around valid ones: the text mutated (fields, hex digits, lengths), or a mutated
    nvlist packed into a token with a correct checksum (so the decoder is reached)."""
    good = token_of(native_nvlist(TOKEN_NV))
    seeds = [native_nvlist(TOKEN_NV, True), native_nvlist(TOKEN_NV, False)]

    def text(args: tuple[int, int, str]) -> str:
        pos, cut, insert = args
        pos %= len(good) + 1
        return good[:pos] + insert + good[pos + cut % 8 :]

    packed = mutated(seeds, 4, max_mutations)
    return st.one_of(
        st.tuples(
            st.integers(0, 1 << 12), st.integers(0, 7), st.text("0123456789abcdef-xz", max_size=12)
        ).map(text),
        st.tuples(packed, st.booleans()).map(lambda t: token_of(t[0], t[1])),
        st.text(max_size=80),
    )


def run_token(token: str) -> None:
    """decode_token raises TokenError and nothing else; a decoded token renders."""
    try:
        tok = decode_token(token)
    except TokenError:
        return
    json.loads(stream_report.token_json(tok))
    stream_report.token_text(tok)


TARGETS: dict[str, tuple[Callable[..., st.SearchStrategy[Any]], Callable[[Any], None]]] = {
    "stream": (stream_inputs, run_stream),
    "nvlist": (nvlist_inputs, run_nvlist),
    "token": (token_inputs, run_token),
}


def fletcher_ok() -> bool:
    """The C checksum agrees with the plain one (a scanner sanity check for the harness)."""
    data = bytes(range(256)) * 3
    return _zvcore.fletcher4(data) == fletcher4(data)
