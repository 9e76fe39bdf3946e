"""pytest-benchmark: send-stream verification and fletcher-4 throughput (bench/ only).

    pytest bench/test_stream_throughput.py --benchmark-only

The stream is synthesized once per session (valid records, 128 KiB WRITEs).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from zverify import _zvcore
from zverify.sendstream.validate import verify_stream

sys.path.insert(0, str(Path(__file__).parent))
from stream_vs_peers import synthesize

SIZE = 512 << 20


@pytest.fixture(scope="session")
def stream(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("streams") / "synthetic.zstream"
    synthesize(path, SIZE)
    path.read_bytes()  # hot cache, as the peers get it
    return path


def test_verify_stream(benchmark, stream: Path) -> None:
    report = benchmark.pedantic(verify_stream, args=(stream,), rounds=5, iterations=1)
    assert report.valid
    benchmark.extra_info["GB/s"] = stream.stat().st_size / benchmark.stats["min"] / 1e9


@pytest.mark.parametrize("size", [4 << 10, 256 << 10, 4 << 20])
def test_fletcher4(benchmark, size: int) -> None:
    data = bytes(range(256)) * (size // 256)
    benchmark(_zvcore.fletcher4, data)
    benchmark.extra_info["GB/s"] = size / benchmark.stats["min"] / 1e9
