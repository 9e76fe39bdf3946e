"""The relay (verify_stream(relay_to=fd)): bytes go on only once verified, nothing after the
first problem.  This is what `cold restore` feeds `zfs receive` through, so that a record
damaged after the plan was checked never reaches the kernel.

Expected offsets come from streamgen.walk (an independent reader), never from the scanner.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tools.streamgen import WRITE, StreamBuilder, full_stream, package, walk
from zverify.sendstream.report import StreamReport
from zverify.sendstream.validate import verify_stream


def relay(tmp_path: Path, data: bytes, buffer_hint: str = "") -> tuple[StreamReport, bytes]:
    src, out = tmp_path / f"in{buffer_hint}", tmp_path / f"out{buffer_hint}"
    src.write_bytes(data)
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        report = verify_stream(src, relay_to=fd)
    finally:
        os.close(fd)
    return report, out.read_bytes()


def big_stream() -> bytes:
    """A full stream with writes larger than the scanner's read buffer."""
    b = StreamBuilder()
    b.begin("pool/fs@big", 0x4242, features=0x30004 | 1 << 19)  # LARGE_BLOCKS: 1 MiB writes
    b.object(1, otype=21)  # the master node (a ZAP; the writes are no ZAP's blocks)
    b.object(2)
    for i in range(6):
        b.write(2, i << 20, bytes([i + 1]) * (1 << 20))
    b.end()
    return bytes(b.data)


@pytest.mark.parametrize(
    "data",
    [
        full_stream(),
        full_stream(big=True),
        big_stream(),
        package([("p/f@a", 1, 0), ("p/f@b", 2, 1)]),
    ],
    ids=["full", "big-endian", "1MiB-writes", "package"],
)
def test_an_intact_stream_is_relayed_whole_and_unchanged(tmp_path: Path, data: bytes) -> None:
    report, out = relay(tmp_path, data)
    assert report.valid, report.problems
    assert report.relayed == len(data)
    assert out == data


def test_a_damaged_payload_never_goes_on(tmp_path: Path) -> None:
    data = bytearray(big_stream())
    writes = [r for r in walk(bytes(data)) if r.type == WRITE]
    damaged = writes[3]
    flip = damaged.offset + 312 + 1000
    data[flip] ^= 0x40
    report, out = relay(tmp_path, bytes(data))
    assert not report.valid
    assert report.relayed is not None
    assert report.relayed <= flip, "a byte of the damaged payload was passed on"
    # everything up to the damaged record went on unchanged: the relay is not just "nothing"
    assert report.relayed >= damaged.offset
    assert out == bytes(data[: report.relayed])


def test_a_truncated_stream_keeps_its_last_record_back(tmp_path: Path) -> None:
    data = big_stream()
    last_write = [r for r in walk(data) if r.type == WRITE][-1]
    cut = data[: last_write.offset + 312 + 4096]
    report, out = relay(tmp_path, cut)
    assert [p.code for p in report.problems] == ["truncated"]
    assert report.relayed is not None and report.relayed <= last_write.offset + 312
    assert out == cut[: report.relayed]


def test_trailing_data_stops_the_relay_before_the_second_stream(tmp_path: Path) -> None:
    """A judgement made in Python (a second stream after the END) stops the relay too."""
    first = full_stream()
    report, out = relay(tmp_path, first + full_stream())
    assert "trailing-data" in [p.code for p in report.problems]
    assert report.relayed is not None and report.relayed <= len(first)  # batched: maybe none
    assert out == first[: report.relayed]


def test_a_consumer_that_goes_away_is_an_io_error_never_damage(tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.write_bytes(big_stream())
    read_end, write_end = os.pipe()
    os.close(read_end)  # `zfs receive` died: every write now fails with EPIPE
    try:
        report = verify_stream(src, relay_to=write_end)
    finally:
        os.close(write_end)
    assert not report.readable and report.exit_code == 2
    assert report.problems[0].code == "relay"
    assert "could not pass the stream on" in report.problems[0].message
    assert report.relayed == 0


def test_without_relay_nothing_is_counted(tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.write_bytes(full_stream())
    assert verify_stream(src).relayed is None
