"""zverify.par2.packets on real PAR2 files (made by the par2 program zverify runs) and on
hostile ones: damage anywhere is counted, never raised, never mistaken for recovery data."""

from __future__ import annotations

import hashlib
import os
import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zverify.par2 import packets, tool


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bytes]:
    """A 200 KB file with 10% parity: (the .vol file, its bytes)."""
    root = tmp_path_factory.mktemp("par2")
    (root / "data").write_bytes(os.urandom(200_000))
    out = root / "out"
    out.mkdir()
    tool.create(str(root), str(root / "data"), str(out / "data.par2"), 10)
    (volume,) = out.glob("data.vol*.par2")
    return volume, volume.read_bytes()


def scan_bytes(tmp_path: Path, data: bytes) -> packets.Scan:
    path = tmp_path / "x.par2"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        return packets.scan([("x.par2", fd)])
    finally:
        os.close(fd)


def test_an_intact_file_describes_what_it_protects(
    tmp_path: Path, made: tuple[Path, bytes]
) -> None:
    volume, data = made
    found = scan_bytes(tmp_path, data)
    expected = int(volume.name.split("+")[1].split(".")[0])  # data.vol000+N.par2
    assert found.damaged_bytes == 0 and found.first_damage is None
    assert found.recovery_blocks == expected
    (described,) = found.described.values()
    assert described.name == b"data" and described.length == 200_000
    assert found.source_blocks(described.length) * found.recovery_blocks > 0


def test_garbage_is_all_damage_and_protects_nothing(tmp_path: Path) -> None:
    found = scan_bytes(tmp_path, os.urandom(50_000))
    assert found.damaged_bytes == 50_000 and found.recovery_blocks == 0
    assert found.slice_size is None and not found.described


def test_a_header_claiming_more_than_the_file_is_damage(tmp_path: Path) -> None:
    header = packets.HEADER.pack(packets.MAGIC, 1 << 40, bytes(16), bytes(16), packets.MAIN)
    found = scan_bytes(tmp_path, header + bytes(100))
    assert found.damaged_bytes == len(header) + 100 and found.slice_size is None


def test_a_truncated_file_keeps_every_whole_packet(
    tmp_path: Path, made: tuple[Path, bytes]
) -> None:
    _, data = made
    whole = scan_bytes(tmp_path, data).recovery_blocks
    half = scan_bytes(tmp_path, data[: len(data) // 2])
    assert 0 < half.recovery_blocks < whole
    assert half.damaged_bytes < len(data) // 2  # only the cut packet is lost


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.tuples(st.integers(min_value=0), st.integers(0, 255)), min_size=1, max_size=8))
def test_flipped_bytes_never_add_recovery_data(
    tmp_path: Path, made: tuple[Path, bytes], flips: list[tuple[int, int]]
) -> None:
    _, data = made
    whole = scan_bytes(tmp_path, data).recovery_blocks
    damaged = bytearray(data)
    for at, value in flips:
        damaged[at % len(damaged)] = value
    found = scan_bytes(tmp_path, bytes(damaged))
    assert found.recovery_blocks <= whole
    if bytes(damaged) != data:
        assert found.damaged_bytes > 0 or found.recovery_blocks == whole


def test_a_recovery_packet_of_another_set_does_not_count(
    tmp_path: Path, made: tuple[Path, bytes]
) -> None:
    _, data = made
    at = data.find(packets.RECOVERY_SLICE) - 48  # the packet's header starts 48 bytes earlier
    (length,) = struct.unpack_from("<Q", data, at + 8)
    other = bytearray(data[at : at + length])
    other[32:48] = bytes(16)  # another recovery set ID; the packet MD5 made right again
    other[16:32] = hashlib.md5(bytes(other[32:]), usedforsecurity=False).digest()
    found = scan_bytes(tmp_path, data + bytes(other))
    assert found.other_sets == 1
    assert found.recovery_blocks == scan_bytes(tmp_path, data).recovery_blocks


# -- work: the bytes hashed stay linear in the file's size (finding M2 of adversarial-3) ----

REAL_MD5 = hashlib.md5  # packets.hashlib is this same module: patched below


class CountingMd5:
    """hashlib.md5, counting what it is fed (the real digest: nothing else changes)."""

    fed = 0

    def __init__(self, data: bytes = b"", **kw: bool) -> None:
        self._h = REAL_MD5(**kw)
        self.update(data)

    def update(self, data: bytes) -> None:
        CountingMd5.fed += len(data)
        self._h.update(data)

    def digest(self) -> bytes:
        return self._h.digest()


def claiming_the_rest(size: int, every: int = 64) -> bytes:
    """A header every `every` bytes, each claiming the rest of the file, none intact."""
    out = bytearray()
    while len(out) < size:
        out += packets.HEADER.pack(packets.MAGIC, size - len(out), bytes(16), bytes(16), bytes(16))
        out += bytes(every - packets.HEADER.size)
    return bytes(out[:size])


def budget(size: int) -> int:
    per_byte, extra = packets.HASH_BUDGET
    return per_byte * size + extra


def test_headers_claiming_the_rest_of_the_file_are_hashed_in_linear_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    size = 1 << 20  # quadratic: size**2 / 128 = 8 GiB of MD5
    data = claiming_the_rest(size)
    CountingMd5.fed = 0
    read = [0]
    real_pread = os.pread

    def pread(fd: int, n: int, at: int) -> bytes:
        read[0] += n
        return real_pread(fd, n, at)

    monkeypatch.setattr(packets.hashlib, "md5", CountingMd5)
    monkeypatch.setattr(packets.os, "pread", pread)
    found = scan_bytes(tmp_path, data)
    work = CountingMd5.fed
    monkeypatch.undo()
    assert work <= budget(size), f"{work:,} bytes hashed for a file of {size:,}"
    # the search for the next magic after each of the 16384 headers: 1 MiB reads each were
    # 8 GiB of copying; reads that grow from 4 KiB stay a small multiple of the size
    assert read[0] <= 2 * budget(size) + 4096 * (size // 64), f"{read[0]:,} bytes read"
    assert found.damaged_bytes == size and found.recovery_blocks == 0


def test_a_corrupted_length_costs_the_real_packets_nothing(
    tmp_path: Path, made: tuple[Path, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The damage a real file gets: one header's length made to claim the rest of the file
    (hashed once in vain) loses that packet only, and the whole file is hashed about twice."""
    _, data = made
    whole = scan_bytes(tmp_path, data).recovery_blocks
    at = data.find(packets.RECOVERY_SLICE) - 48
    damaged = bytearray(data)
    struct.pack_into("<Q", damaged, at + 8, len(data) - at)
    CountingMd5.fed = 0
    monkeypatch.setattr(packets.hashlib, "md5", CountingMd5)
    found = scan_bytes(tmp_path, bytes(damaged))
    work = CountingMd5.fed
    monkeypatch.undo()
    assert found.recovery_blocks == whole - 1 and found.first_damage == ("x.par2", at)
    assert work <= 2 * len(data)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(
        st.tuples(st.sampled_from(["packet", "hostile", "garbage"]), st.integers(1, 40)),
        min_size=1,
        max_size=12,
    )
)
def test_any_mix_of_packets_and_hostile_headers_is_linear_work(
    tmp_path: Path,
    made: tuple[Path, bytes],
    monkeypatch: pytest.MonkeyPatch,
    parts: list[tuple[str, int]],
) -> None:
    """Fuzz for time: real packets, runs of headers claiming the rest of the file and garbage,
    in any order: the MD5 work never passes the budget, and without hostile headers every
    real packet still counts."""
    _, data = made
    pieces = []
    for kind, count in parts:
        if kind == "packet":
            pieces.append(data)
        elif kind == "hostile":
            pieces.append(bytes(64 * count))  # headers filled in below, once the size is known
        else:
            pieces.append(os.urandom(count * 97))
    blob = bytearray(b"".join(pieces))
    start = 0
    for (kind, _), piece in zip(parts, pieces, strict=True):
        if kind == "hostile":
            for at in range(start, start + len(piece), 64):
                rest = (len(blob) - at) // 4 * 4
                header = packets.HEADER.pack(packets.MAGIC, rest, bytes(16), bytes(16), bytes(16))
                blob[at : at + 64] = header
        start += len(piece)
    CountingMd5.fed = 0
    monkeypatch.setattr(packets.hashlib, "md5", CountingMd5)
    found = scan_bytes(tmp_path, bytes(blob))
    work = CountingMd5.fed
    monkeypatch.undo()
    assert work <= budget(len(blob))
    if all(kind != "hostile" for kind, _ in parts):
        has_packets = any(kind == "packet" for kind, _ in parts)
        expected = scan_bytes(tmp_path, data).recovery_blocks if has_packets else 0
        assert found.recovery_blocks == expected
