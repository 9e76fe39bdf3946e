"""Open manifest files for writing and reading, compressed by file name (.zst, .gz).

Writing goes to a temporary file beside the target, renamed into place only once the
manifest is complete: a crash or a failed walk never leaves a file that looks finished.
"""

import gzip
import io
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import BinaryIO

from zverify.manifest import STDIO


def compression_of(path: str) -> str | None:
    for suffix in ("zst", "gz"):
        if path.endswith("." + suffix):
            return suffix
    return None


@contextmanager
def atomic_output(path: str) -> Iterator[BinaryIO]:
    """A binary stream that becomes `path` only if the block finishes without an exception."""
    if path == STDIO:
        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
        return
    partial = f"{path}.partial-{os.getpid()}"
    raw = open(partial, "wb")  # noqa: SIM115 (closed below, on every path)
    try:
        with _compressing(raw, compression_of(path)) as out:
            yield out
        raw.flush()
        os.fsync(raw.fileno())
        raw.close()
        os.replace(partial, path)
    except BaseException:
        raw.close()
        os.unlink(partial)
        raise


@contextmanager
def _compressing(raw: BinaryIO, compression: str | None) -> Iterator[BinaryIO]:
    if compression == "zst":
        import zstandard  # only when used: every command loads this module

        with zstandard.ZstdCompressor(level=3).stream_writer(raw, closefd=False) as out:
            yield out
    elif compression == "gz":
        with gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=6) as out:
            yield out  # type: ignore[misc]
    else:
        yield raw


def open_input(path: str) -> BinaryIO:
    """The decompressed bytes of a manifest (stdin for '-'); raises OSError."""
    if path == STDIO:
        return sys.stdin.buffer
    compression = compression_of(path)
    if compression == "gz":
        return gzip.open(path, "rb")  # type: ignore[return-value]
    raw = open(path, "rb")  # noqa: SIM115 (the caller closes the returned stream)
    if compression == "zst":
        import zstandard

        reader = zstandard.ZstdDecompressor().stream_reader(raw, closefd=True)
        return io.BufferedReader(reader)
    return raw
