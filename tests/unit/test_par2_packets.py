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
