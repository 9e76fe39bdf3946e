"""The record walk behind `cold check --depth sample` (zv_stream_walk, zverify.cold.proof.sample),
differentially: seeded random streams built by tools/streamgen.py (written apart from
zverify's parser, checksums by a plain-Python fletcher-4), walked in small windows from byte
0 and from random places, with and without a flipped byte.

What must hold, every case:
- a byte inside a range the walk calls proven is never the flipped one (no false OK);
- an intact stream never gets a problem, from any start (no false accusation);
- damage is placed: the flipped byte lies in the span the damaged checksum covers;
- a walk from byte 0 over the whole stream finds every flip in a checksummed byte.
"""

from __future__ import annotations

import itertools
import random

import pytest

from tools.streamgen import DRR, StreamBuilder, walk
from zverify.cold.proof import sample

CASES = 150


@pytest.fixture(autouse=True)
def small_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    """Windows far smaller than the streams: many windows, boundaries searched, records
    longer than a window (grown into)."""
    monkeypatch.setattr(sample, "WINDOW", 1024)
    monkeypatch.setattr(sample, "MAX_WINDOW", 64 << 10)


def random_stream(rng: random.Random, big: bool) -> bytes:
    b = StreamBuilder(big)
    for n in range(rng.randint(1, 3)):
        b.begin(f"pool/fs@s{n}", rng.getrandbits(62) | 1, rng.getrandbits(62) if n else 0)
        b.object(2, bonus=rng.randbytes(rng.randint(1, 60)))
        for i in range(rng.randint(1, 30)):
            kind = rng.random()
            if kind < 0.7:
                b.write(2, i << 14, rng.randbytes(rng.choice([512, 1024, 4096, 16384])))
            elif kind < 0.8:
                b.embedded(3, 0, rng.randbytes(rng.randint(1, 100)))
            elif kind < 0.9:
                b.free(2, i << 14, 4096)
            else:
                b.freeobjects(5, 3)
        b.end()
    return bytes(b.data)


def run(data: bytes, start: int, stop: int) -> sample.Sampled:
    return sample.prove_run("s", lambda at, n: data[at : at + n], len(data), start, stop)


def proven(got: sample.Sampled, byte: int) -> bool:
    return any(a <= byte < b for a, b in got.proven)


@pytest.mark.parametrize("big", [False, True])
def test_an_intact_stream_is_proven_whole_from_byte_0_and_never_accused(big: bool) -> None:
    rng = random.Random(f"intact-{big}")
    for _ in range(CASES // 3):
        data = random_stream(rng, big)
        whole = run(data, 0, len(data))
        assert not whole.problems
        assert sample.merged(whole.proven) == [(0, len(data))]
        assert whole.records == sum(r.type != 0 for r in walk(data))  # all but the BEGINs
        for _ in range(5):
            start = rng.randrange(len(data))
            part = run(data, start, min(len(data), start + rng.randint(1, 8192)))
            assert not part.problems, part.problems
            assert all(start <= a < b <= len(data) for a, b in part.proven)


@pytest.mark.parametrize("big", [False, True])
def test_a_flipped_byte_is_never_proven_found_from_byte_0_and_placed(big: bool) -> None:
    rng = random.Random(f"flip-{big}")
    for case in range(CASES):
        data = bytearray(random_stream(rng, big))
        byte = rng.randrange(len(data))
        data[byte] ^= 1 << rng.randrange(8)
        flipped = bytes(data)
        whole = run(flipped, 0, len(flipped))
        assert not proven(whole, byte), (case, byte, whole.proven)
        assert whole.problems, (case, byte)  # every byte of these streams is checksummed
        for p in whole.problems:
            assert p.kind in ("damaged", "truncated", "not-a-stream"), p
            if p.kind == "damaged" and p.damage_from is not None and p.offset is not None:
                assert p.damage_from <= byte < p.offset + DRR, (case, byte, p)
        for _ in range(5):
            start = rng.randrange(len(flipped))
            part = run(flipped, start, min(len(flipped), start + rng.randint(1, 8192)))
            assert not proven(part, byte), (case, byte, start, part.proven)
            for p in part.problems:
                assert p.kind in ("damaged", "unproven", "truncated"), p
                if p.kind == "damaged" and p.damage_from is not None and p.offset is not None:
                    assert p.damage_from <= byte < p.offset + DRR, (case, byte, start, p)


def test_runs_pick_the_share_asked_and_join_neighbours() -> None:
    rng = random.Random(7)
    size = 100 * sample.SLOT + 5
    picked = sample.runs(size, 10, rng)
    slots = sum(-(-(b - a) // sample.SLOT) for a, b in picked)
    assert slots == 11  # ceil(101 slots x 10%)
    assert all(b1 < a2 for (_a1, b1), (a2, _b2) in itertools.pairwise(picked))
    assert sample.runs(size, 100, rng) == [(0, size)]
    assert len(sample.runs(10, 0.001, rng)) == 1  # one slot at least


def test_records_of_a_stream_kept_inside_a_file_are_no_damage() -> None:
    """A stream stored as a file's data: a walk that starts from a boundary it found may
    follow the inner stream's records until a record of the outer stream cuts them; that is
    at most unproven (a full check tells), never damage."""
    rng = random.Random("nested")
    for _ in range(CASES // 10):
        inner = random_stream(rng, False)
        outer = StreamBuilder()
        outer.begin("pool/fs@s", 0x77, 0)
        outer.object(2)
        for i in range(0, len(inner), 4096):
            outer.write(2, i, inner[i : i + 4096].ljust(4096, b"\0"))
        outer.end()
        data = bytes(outer.data)
        assert not run(data, 0, len(data)).problems
        for _ in range(20):
            start = rng.randrange(len(data))
            part = run(data, start, min(len(data), start + rng.randint(1, 16384)))
            assert all(p.kind == "unproven" for p in part.problems), part.problems
