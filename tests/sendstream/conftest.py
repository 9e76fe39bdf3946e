"""Shared fixtures for the send-stream tests: write bytes to a file and verify them."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from zverify.sendstream.report import StreamReport
from zverify.sendstream.validate import verify_stream

STREAMS = Path(__file__).resolve().parents[1] / "data" / "streams"
INDEX = STREAMS / "index.json"


def real_entries() -> list[dict]:
    return json.loads(INDEX.read_text())["streams"] if INDEX.exists() else []


@pytest.fixture
def check(tmp_path: Path) -> Callable[[bytes], StreamReport]:
    counter = iter(range(1_000_000))

    def run(data: bytes) -> StreamReport:
        path = tmp_path / f"s{next(counter)}.zstream"
        path.write_bytes(data)
        return verify_stream(path)

    return run
