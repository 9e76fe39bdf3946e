"""The C fletcher-4 against a plain one; nvlist decoding; resume tokens."""

from __future__ import annotations

import contextlib
import re
import struct
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tools.streamgen import fletcher4, native_nvlist, resume_token, xdr_nvlist
from zverify import _zvcore
from zverify.sendstream.nvlist import NvlistError, unpack
from zverify.sendstream.token import TokenError, decode_token


@pytest.mark.parametrize("n", [0, 1, 3, 4, 5, 127, 128, 511, 512, 513, 1024 + 4, 65536 * 2 + 9])
@pytest.mark.parametrize("big", [False, True])
def test_fletcher_matches_plain_at_boundaries(n: int, big: bool) -> None:
    data = bytes((i * 131 + 7) % 251 for i in range(n))
    assert _zvcore.fletcher4(data, big_endian=big) == fletcher4(data, big=big)
    ones = b"\xff" * n  # largest words: exercises the modular carries
    assert _zvcore.fletcher4(ones, big_endian=big) == fletcher4(ones, big=big)


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=3000), st.integers(0, 3000), st.booleans())
def test_fletcher_incremental_equals_plain(data: bytes, cut: int, big: bool) -> None:
    cut = min(cut, len(data)) // 4 * 4
    state = _zvcore.fletcher4(data[:cut], big_endian=big)
    assert _zvcore.fletcher4(data[cut:], state=state, big_endian=big) == fletcher4(data, big=big)


HEADER = {
    "tosnap": "s3",
    "fromsnap": "s1",
    "fss": {"0x1234": {"name": "zv/fs", "snaps": {"s1": 11, "s2": 22, "s3": 2**64 - 1}}},
    "raw": True,
}


def test_xdr_nvlist_round_trip() -> None:
    assert unpack(xdr_nvlist(HEADER)) == HEADER


@pytest.mark.parametrize("little", [True, False])
def test_native_nvlist_round_trip(little: bool) -> None:
    nv = {
        "resume_object": 5,
        "toname": "a@b",
        "embedok": True,
        "keys": b"\x01\x02\x03",
        "crypt_keydata": {"to_ivset_guid": 99, "inner": {"x": 1}},
    }
    assert unpack(native_nvlist(nv, little)) == nv


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400), st.integers(0, 1))
def test_nvlist_garbage_never_crashes(data: bytes, enc: int) -> None:
    with contextlib.suppress(NvlistError):
        unpack(bytes([enc, 1, 0, 0]) + data)


def test_nvlist_truncated_reports_offset() -> None:
    packed = xdr_nvlist(HEADER)
    for cut in range(4, len(packed) - 1, 7):
        with pytest.raises(NvlistError) as err:
            unpack(packed[:cut])
        assert 0 <= err.value.offset <= cut


TOKEN_NV = {
    "object": 7,
    "offset": 131072,
    "bytes": 150000,
    "toguid": 2**63 + 5,
    "toname": "zv/fs@s1",
    "embedok": True,
    "compressok": True,
}


@pytest.mark.parametrize("big", [False, True])
def test_token_decodes(big: bool) -> None:
    tok = decode_token(resume_token(TOKEN_NV, big=big))
    assert tok.nvlist == TOKEN_NV
    assert tok.checksum_order == ("big" if big else "little")
    assert tok.toname == "zv/fs@s1" and tok.number("toguid") == 2**63 + 5
    assert tok.flags() == ["compressok", "embedok"]


def test_token_damage_is_rejected() -> None:
    good = resume_token(TOKEN_NV)
    version, ck, length, payload = good.split("-")
    flipped = payload[:10] + ("0" if payload[10] != "0" else "1") + payload[11:]
    for bad in (
        f"{version}-{ck}-{length}-{flipped}",  # payload damage: checksum catches it
        f"{version}-{ck}-{length}-{payload[:-2]}",  # truncated
        f"2-{ck}-{length}-{payload}",  # unknown version
        "1-2-3",  # shape
        f"{version}-{ck}-{int(length, 16) + 1:x}-{payload}",  # wrong length claim
        f"{version}-{ck}-{2**62:x}-{payload}",  # absurd length claim
    ):
        with pytest.raises(TokenError):
            decode_token(bad)


def test_token_bomb_is_bounded() -> None:
    # A small token claiming a small length but inflating to much more must not be inflated.
    comp = zlib.compress(b"\0" * (50 << 20))
    ck = fletcher4(comp)[0]
    with pytest.raises(TokenError):
        decode_token(f"1-{ck:x}-{100:x}-{comp.hex()}")


def test_struct_sizes_match_format() -> None:
    assert struct.calcsize("<IIQQQIIQQ") + 256 == _zvcore.DRR_SIZE


@pytest.mark.parametrize(
    ("token", "named"),
    [
        ("1-zz-c8-789c", "field checksum (hex) is 'zz'"),
        ("x-1-c8-789c", "field version (decimal) is 'x'"),
        ("1-1-c8-78zz", "field payload (hex) is '78zz'"),
    ],
)
def test_malformed_token_names_the_field_not_python(token: str, named: str) -> None:
    """The message used to be int()'s own ("invalid literal for int() with base 16")."""
    with pytest.raises(TokenError, match=re.escape(named)):
        decode_token(token)
