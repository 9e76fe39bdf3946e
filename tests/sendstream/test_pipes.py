"""A stream on a pipe (`zfs send | zstd | zverify stream verify -`): the first bytes are read
to tell a compression, then handed on (to the C scanner as its prefix, or ahead of the rest
to the decompressor), so a pipe is judged as the same bytes in a file are."""

from __future__ import annotations

import os
import shlex
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.cli.console import console_script
from zverify import _zvcore
from zverify.sendstream.report import StreamReport
from zverify.sendstream.validate import verify_stream

STREAMS = Path(__file__).parents[1] / "data" / "streams"
FULL = STREAMS / "full_fs_s1.zstream"
PACKAGE = STREAMS / "package_I_fs_s1_s3.zstream"


@contextmanager
def piped(data: bytes) -> Iterator[int]:
    """The read end of a pipe a thread writes data into (then closes)."""
    r, w = os.pipe()

    def feed() -> None:
        try:
            _write_all(w, data)
        except BrokenPipeError:
            pass
        finally:
            os.close(w)

    thread = threading.Thread(target=feed)
    thread.start()
    try:
        yield r
    finally:
        os.close(r)
        thread.join()


def _write_all(w: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(w, view) :]


def through_pipe(data: bytes) -> StreamReport:
    with piped(data) as r:
        return verify_stream(r)


def compress(tool: str, data: bytes) -> bytes:
    return subprocess.run([tool, "-q", "-c"], input=data, capture_output=True, check=True).stdout


@pytest.mark.parametrize("fixture", [FULL, PACKAGE])
def test_a_plain_stream_on_a_pipe_is_judged_as_in_its_file(fixture: Path) -> None:
    on_pipe, in_file = through_pipe(fixture.read_bytes()), verify_stream(fixture)
    assert on_pipe.valid and in_file.valid
    assert (on_pipe.size, on_pipe.records, on_pipe.kind) == (
        in_file.size,
        in_file.records,
        in_file.kind,
    )
    assert on_pipe.compression is None


@pytest.mark.parametrize("tool", ["zstd", "gzip", "xz", "lz4"])
def test_a_compressed_stream_on_a_pipe_is_decompressed(tool: str) -> None:
    packed = compress(tool, FULL.read_bytes())
    report = through_pipe(packed)
    assert report.valid and report.size == FULL.stat().st_size, report.problems
    assert report.compression == tool and report.file_bytes == len(packed)
    cut = through_pipe(packed[: len(packed) // 2])
    assert not cut.valid and cut.problems[0].code in ("truncated", "compression"), cut.problems


@pytest.mark.parametrize("size", [0, 1, 5, 6, 7, 311])
def test_less_than_a_record_on_a_pipe_is_never_ok(size: int) -> None:
    for data in (FULL.read_bytes()[:size], compress("zstd", FULL.read_bytes())[:size]):
        report = through_pipe(data)
        assert not report.valid and report.exit_code != 0, (size, report.problems)


def test_the_scanner_refuses_a_prefix_longer_than_its_buffer() -> None:
    with pytest.raises(ValueError, match="prefix"):
        _zvcore.StreamScanner(0, buffer_size=4096, prefix=b"\0" * 4097)


@pytest.mark.parametrize("tool", ["zstd", "gzip", "cat"])
def test_the_installed_command_reads_a_compressed_pipe(tool: str) -> None:
    feed = (
        f"{tool} -c {shlex.quote(str(FULL))}" if tool != "cat" else f"cat {shlex.quote(str(FULL))}"
    )
    done = subprocess.run(
        [
            "bash",
            "-o",
            "pipefail",
            "-c",
            f"{feed} | {shlex.quote(console_script())} stream verify -",
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0 and done.stdout.startswith("OK"), done.stdout + done.stderr
