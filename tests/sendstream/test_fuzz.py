"""Mutated streams never crash, hang or grow memory: every input gets a report.  Also a
brief, seeded fuzz of the scanner, the nvlist decoder and resume tokens (the long one is
bench/fuzz_parsers.py); scripts/asan.sh runs these under ASan/UBSan."""

from __future__ import annotations

import resource
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.sendstream.conftest import STREAMS, real_entries
from tools.fuzzing.sendstream import (
    nvlist_inputs,
    run_nvlist,
    run_stream,
    run_token,
    stream_inputs,
    token_inputs,
)
from tools.streamgen import package
from zverify.sendstream.validate import verify_stream


def _base() -> bytes:
    # The smallest real stream with data records (not a bare BEGIN+END) when fixtures
    # exist, else a synthetic package.
    real = sorted(
        (e["size"], e["file"])
        for e in real_entries()
        if e["kind"] != "truncated" and e["size"] > 4096
    )
    if real:
        return (STREAMS / real[0][1]).read_bytes()
    return package([("p/f@b", 2, 1), ("p/f@c", 3, 2)], {"tosnap": "c", "fromsnap": "a"})


BASE = _base()

mutation = st.one_of(
    st.tuples(st.just("flip"), st.integers(0, len(BASE) - 1), st.integers(1, 255)),
    st.tuples(st.just("cut"), st.integers(0, len(BASE)), st.just(0)),
    st.tuples(st.just("insert"), st.integers(0, len(BASE)), st.integers(1, 400)),
    st.tuples(st.just("delete"), st.integers(0, len(BASE)), st.integers(1, 400)),
)


def _apply(data: bytearray, m: tuple[str, int, int]) -> bytearray:
    kind, pos, arg = m
    pos = min(pos, len(data))
    if kind == "flip" and pos < len(data):
        data[pos] ^= arg
    elif kind == "cut":
        del data[pos:]
    elif kind == "insert":
        data[pos:pos] = bytes((pos + i * 37) & 0xFF for i in range(arg))
    elif kind == "delete":
        del data[pos : pos + arg]
    return data


@settings(
    max_examples=200, deadline=5000, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(mutation, min_size=1, max_size=4))
def test_mutations_get_a_report(tmp_path: Path, muts: list[tuple[str, int, int]]) -> None:
    data = bytearray(BASE)
    for m in muts:
        data = _apply(data, m)
    path = tmp_path / "m.zstream"
    path.write_bytes(bytes(data))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    report = verify_stream(path)
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert report.readable
    assert report.size <= len(data)
    if bytes(data) != BASE and any(p.code == "checksum" for p in report.problems):
        assert not report.valid
    for p in report.problems:
        assert 0 <= p.offset <= len(data)
    assert grown_kib < 64 << 10  # a hostile length never turns into a big allocation


def brief(examples: int) -> settings:
    """Seeded (derandomize): the same inputs on every run, so CI failures reproduce."""
    return settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


@brief(150)
@given(stream_inputs())
def test_scanner_fuzz(data: bytes) -> None:
    run_stream(data)


@brief(400)
@given(nvlist_inputs())
def test_nvlist_fuzz(data: bytes) -> None:
    run_nvlist(data)


@brief(300)
@given(token_inputs())
def test_token_fuzz(token: str) -> None:
    run_token(token)
