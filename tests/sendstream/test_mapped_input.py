"""A regular file is mapped window by window (8 MiB) rather than read(): the verdict, the
offsets and the spans must be those of the same bytes read from a pipe, a record header
may straddle two windows, and a file cut short under the scan (SIGBUS on the pages past its
new end) is "not verified" (exit 2) at the offset where its bytes stopped, never a crash."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.cli.console import zverify
from tests.sendstream.test_pipes import through_pipe
from tools.streamgen import M64, StreamBuilder, fletcher4, walk
from zverify import _zvcore
from zverify.sendstream.validate import verify_stream

WINDOW = 8 << 20  # zv_stream.c MAP_WINDOW
BLOCK = 128 << 10


def _fold(state: tuple[int, ...], blk: tuple[int, ...], n: int) -> tuple[int, ...]:
    """fletcher-4 of n more words, from the sums blk of those words started at zero: the
    running state is an affine function of the state before (a + sum, b + n*a + ...)."""
    a, b, c, d = state
    t2, t3 = n * (n + 1) // 2, n * (n + 1) * (n + 2) // 6
    return (
        (a + blk[0]) & M64,
        (b + n * a + blk[1]) & M64,
        (c + n * b + t2 * a + blk[2]) & M64,
        (d + n * c + t2 * b + t3 * a + blk[3]) & M64,
    )


class _SamePayload(StreamBuilder):
    """StreamBuilder whose WRITEs all carry one payload, folded in with _fold: a stream of
    several windows costs one plain-Python fletcher-4 of 128 KiB, not one of 20 MiB."""

    def __init__(self) -> None:
        super().__init__()
        self.payload = bytes((i * 31 + (i >> 9)) & 0xFF for i in range(BLOCK))
        self.blk = fletcher4(self.payload)

    def _emit(self, head: bytes, payload: bytes = b"", is_begin: bool = False) -> None:
        if payload is not self.payload:
            return super()._emit(head, payload, is_begin)
        super()._emit(head)
        self.state = _fold(self.state, self.blk, len(payload) // 4)
        self.data += payload


def big_stream(nwrites: int = 170) -> bytes:
    b = _SamePayload()
    b.begin("pool/fs@big", 0x5151, 0)
    b.object(1, otype=21)  # the master node: a full filesystem declares it
    b.object(2)
    for i in range(nwrites):
        b.write(2, i * BLOCK, b.payload)
    b.end()
    return bytes(b.data)


@pytest.fixture(scope="module")
def stream() -> bytes:
    data = big_stream()
    assert len(data) > 2 * WINDOW
    # the builder's shortcut is checked against the scanner's own arithmetic, end to end
    assert fletcher4(data[: 2 * DRR_]) == _zvcore.fletcher4(data[: 2 * DRR_])
    return data


DRR_ = _zvcore.DRR_SIZE


def _as_file_and_pipe(path: Path) -> tuple[dict, dict, int, int]:
    as_file = zverify("stream", "verify", "--json", str(path))
    with open(path, "rb") as stdin:
        as_pipe = zverify("stream", "verify", "--json", "-", stdin=stdin)
    assert "Traceback" not in as_file.stderr + as_pipe.stderr
    file_doc, pipe_doc = json.loads(as_file.stdout), json.loads(as_pipe.stdout)
    return file_doc["files"][0], pipe_doc["files"][0], as_file.returncode, as_pipe.returncode


def _same_but_source(a: dict, b: dict) -> None:
    a, b = dict(a), dict(b)
    a.pop("file"), b.pop("file")
    assert a == b


def test_a_file_of_several_windows_is_judged_as_its_pipe(tmp_path: Path, stream: bytes) -> None:
    recs = walk(stream)
    straddling = [r.offset for r in recs if r.offset // WINDOW != (r.offset + DRR_ - 1) // WINDOW]
    payload_across = [r for r in recs if r.offset + DRR_ < WINDOW < r.end]
    assert straddling or payload_across  # the windows' seam falls inside a record
    path = tmp_path / "big.zstream"
    path.write_bytes(stream)
    mapped, piped, rc_file, rc_pipe = _as_file_and_pipe(path)
    assert (rc_file, rc_pipe) == (0, 0), mapped
    assert mapped["valid"] and mapped["bytes"] == len(stream), mapped
    _same_but_source(mapped, piped)


@pytest.mark.parametrize("where", ["second window", "across the seam"])
def test_damage_past_the_first_window_is_found_at_its_offset(
    tmp_path: Path, stream: bytes, where: str
) -> None:
    recs = walk(stream)
    if where == "across the seam":
        bad = WINDOW + 1  # first byte of the second window: in a payload or header
        hit = next(r for r in recs if r.offset <= bad < r.end)
    else:
        hit = next(r for r in recs if r.offset > WINDOW + BLOCK)
        bad = hit.offset + DRR_ + 4096  # inside its payload
    after = next(r for r in recs if r.offset > hit.offset)
    damaged = bytearray(stream)
    damaged[bad] ^= 0x40
    path = tmp_path / "bad.zstream"
    path.write_bytes(damaged)
    mapped, piped, rc_file, rc_pipe = _as_file_and_pipe(path)
    assert (rc_file, rc_pipe) == (1, 1), mapped
    # the first trailer after the flipped byte tells, whatever record held it
    first = mapped["problems"][0]
    checked_at = hit.offset if bad < hit.offset + 280 else after.offset
    assert (first["code"], first["offset"]) == ("checksum", checked_at), mapped["problems"]
    _same_but_source(mapped, piped)


def test_windows_in_process_match_a_pipe(tmp_path: Path, stream: bytes) -> None:
    """The library call (what the sanitizer run can test: it has no console script) on a file
    damaged in its second window and at the seam, against the same bytes from a pipe."""
    damaged = bytearray(stream)
    for at in (WINDOW - 100, WINDOW + 5, 2 * WINDOW + 999):
        damaged[at] ^= 1
    path = tmp_path / "bad.zstream"
    path.write_bytes(damaged)
    mapped, piped = verify_stream(path), through_pipe(bytes(damaged))
    assert mapped.exit_code == piped.exit_code == 1
    assert len(mapped.problems) >= 2 and mapped.problems == piped.problems
    assert mapped.size == piped.size == len(stream)


def test_a_file_cut_short_while_mapped_is_not_verified(tmp_path: Path, stream: bytes) -> None:
    """The file loses its tail after the first window was mapped: the pages past its new end
    raise SIGBUS, which the scanner turns into a read error at that offset (read() on the
    same file would have seen a shorter stream, "truncated": a verdict on bytes that changed).
    In process, through verify_stream's progress hook: a separate process cannot be cut at a
    known point of its scan."""
    path = tmp_path / "cut.zstream"
    path.write_bytes(stream)
    cut = 1 << 20

    def shorten(_nbytes: int) -> None:
        if path.stat().st_size > cut:  # at the first event, the BEGIN: its window is mapped
            os.truncate(path, cut)

    report = verify_stream(path, progress=shorten)
    assert path.stat().st_size == cut
    assert not report.readable and report.exit_code == 2, report.problems
    (problem,) = report.problems
    assert problem.code == "io" and "cut short" in problem.message, problem
    assert problem.offset == cut, problem


def test_another_sigbus_handler_makes_the_scanner_read(tmp_path: Path, stream: bytes) -> None:
    """A SIGBUS handler installed after the scanner's (faulthandler here) would see a mapped
    page's fault first: the scanner then read()s, and the same cut is a shorter stream, not a
    crash.  In a child process: faulthandler's handler must not stay in this one."""
    path = tmp_path / "cut.zstream"
    path.write_bytes(stream)
    script = textwrap.dedent(
        """
        import faulthandler, os, sys
        from zverify.sendstream.validate import verify_stream
        path, cut = sys.argv[1], 1 << 20
        assert verify_stream(path).valid  # maps: the scanner's handler is installed
        faulthandler.enable()  # takes SIGBUS over
        def shorten(_n):
            if os.stat(path).st_size > cut:
                os.truncate(path, cut)
        report = verify_stream(path, progress=shorten)
        print(report.exit_code, report.problems[0].code, report.problems[0].offset)
        """
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONFAULTHANDLER"}
    done = subprocess.run(
        [sys.executable, "-c", script, str(path)], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr
    code, kind, offset = done.stdout.split()
    assert (code, kind) == ("1", "truncated"), done.stdout
    assert int(offset) < 1 << 20
