"""Compressed send streams (`zfs send | zstd > f.zst`): recognised, decompressed, judged.

A file is recognised by its first bytes, never by its name: a send stream begins with a
BEGIN record, whose first bytes are none of these magics, so there is no ambiguity.

The C scanner reads an fd.  decompressing() gives it the read end of a pipe; a thread reads
the compressed file in 1 MiB chunks, decompresses and writes into the pipe: one pass, no
temporary file, memory bounded by a chunk of input and one of output (the libraries release
the GIL on large buffers, so the thread decompresses while the scanner checks), plus the
window the file was compressed with, which the decompressor must hold: 32 KiB for gzip, 900 KB
blocks for bzip2,
at most 4 MiB for lz4, the dictionary for xz (64 MiB for `xz -9`, up to 1.5 GiB by hand),
and for zstd 8 MiB at its default levels, 128 MiB for `--long`, up to 2 GiB for
`--long=31` (MAX_WINDOW: allocated as address space, touched as the stream grows).  A
machine that cannot allocate it gets no verdict (exit 2, "not verified"), never "damaged".

The compressed layer is judged as well: corrupt data, a bad frame or member checksum, a cut
file, garbage after the last frame make the file damaged even when the bytes that came out
form a whole valid stream.  So that such a stream is never passed on complete (the relay to
`zfs receive`), the last byte of output is held back until the whole file was read and
proven: on any failure the scanner sees the stream stop one byte short of the end of its
final END, and nothing of its last record is ever relayed.

Long because: each format's own framing (gzip and lz4 members, xz, zstd frames with their
skippable frames) is here beside the one pump and Layer they share, so that truncation and
damage are judged the same way for all; a further format would be the time to split it
into a package by format.
"""

from __future__ import annotations

import bz2
import contextlib
import fcntl
import os
import threading
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, Any, cast

CHUNK = 1 << 20
"""Bytes read from the compressed file at a time, and at most produced per decompress call."""

# Magic numbers (first bytes of the file) -> compression.  Skippable frames (0x184D2A50..5F,
# little-endian) are shared by zstd and lz4: detect_fd() looks past them to a real frame.
MAGICS: tuple[tuple[bytes, str], ...] = (
    (b"\x28\xb5\x2f\xfd", "zstd"),
    (b"\x1f\x8b", "gzip"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"\x04\x22\x4d\x18", "lz4"),
    (b"\x02\x21\x4c\x18", "lz4"),  # the legacy format (lz4 -l): recognised, not read
    (b"BZh", "bzip2"),  # OpenZFS's own test fixtures are kept so (recv_dedup.zsend.bz2)
)
SKIPPABLE_MASK = 0xFFFFFFF0
SKIPPABLE = 0x184D2A50
HEAD = 6
"""Bytes detect() needs."""
TOOLS = {"zstd": "zstd", "gzip": "gzip", "xz": "xz", "lz4": "lz4", "bzip2": "bzip2"}
"""The command-line tool that decompresses each (`TOOL -dc`), for restore scripts."""


def detect(head: bytes) -> str | None:
    """The compression whose magic the file begins with, or None (a plain stream, or not a
    stream at all: the scanner says which)."""
    for magic, name in MAGICS:
        if head.startswith(magic):
            return name
    if len(head) >= 4 and int.from_bytes(head[:4], "little") & SKIPPABLE_MASK == SKIPPABLE:
        return "zstd"
    return None


MAX_SKIPPED = 64
"""Skippable frames detect_fd() looks past to the first real frame: more is not a file
anyone wrote (and is read as zstd, whose frames are looked at one by one)."""


def detect_fd(fd: int) -> str | None:
    """detect() on the first bytes at fd's position, without moving it; None for an fd that
    cannot be read at an offset (a pipe: its bytes would be consumed).  Skippable frames
    are shared by zstd and lz4: the first real frame after them decides."""
    try:
        at = os.lseek(fd, 0, os.SEEK_CUR)
        head = os.pread(fd, 8, at)
        for _ in range(MAX_SKIPPED):
            if len(head) < 8 or int.from_bytes(head[:4], "little") & SKIPPABLE_MASK != SKIPPABLE:
                break
            at += 8 + int.from_bytes(head[4:8], "little")  # a skippable frame: past it
            after = os.pread(fd, 8, at)
            if detect(after) is None:
                break  # only skippable frames, or not a frame after them: zstd says which
            head = after
        return detect(head)
    except OSError:
        return None


def read_head(fd: int) -> bytes:
    """The first HEAD bytes of an input that cannot be read at an offset (a pipe: `zstd -c |
    zverify stream verify -`), read to tell its compression; fewer at its end.  They are
    handed on ahead of the rest (decompressing(head=...), the scanner's prefix).  Skippable
    frames at the start are not looked past here: read as zstd.  Raises OSError."""
    head = b""
    while len(head) < HEAD and (more := os.read(fd, HEAD - len(head))):
        head += more
    return head


@dataclass
class Layer:
    """What the decompressing thread found: sizes, and what went wrong in the compressed layer.

    problem: (kind, message) with kind "damaged" or "truncated" (the file is not intact),
    "unsupported" (recognised, not read: no verdict), "io" (a read error: no verdict) or
    "unverified" (the decompressor failed for want of memory or by a fault of its own: about
    this machine, not the data: no verdict)."""

    compression: str
    file_bytes: int = 0  # compressed bytes read
    stream_bytes: int = 0  # decompressed bytes produced
    problem: tuple[str, str] | None = None
    trusted: int | None = None  # stream offset from which the output is not proven
    finished: bool = False  # the whole file was read and proven


class _Bad(Exception):
    """The compressed layer is not intact (or not readable: kind says which)."""

    def __init__(self, kind: str, message: str, at: int | None = None) -> None:
        super().__init__(message)
        self.kind, self.at = kind, at


@contextlib.contextmanager
def decompressing(fd: int, compression: str, head: bytes = b"") -> Iterator[tuple[int, Layer]]:
    """(the read end of a pipe carrying the decompressed stream, the Layer filled in by the
    time the pipe ends).  head: the file's first bytes, already read from fd (read_head).
    Leaving early closes the pipe: the thread stops at its next write."""
    layer = Layer(compression)
    with _pipe_to_thread(lambda w: _pump(fd, w, layer, head), mine="read") as r:
        yield r, layer


@contextlib.contextmanager
def _pipe_to_thread(work: Callable[[int], None], mine: str) -> Iterator[int]:
    """A pipe whose one end (mine: "read" or "write") is the caller's and whose other end a
    thread runs work() on (work closes it).  Leaving closes the caller's end, then waits for
    the thread: a thread blocked on the pipe gets EOF or EPIPE and ends."""
    r, w = os.pipe()
    with contextlib.suppress(OSError, AttributeError):
        fcntl.fcntl(w, fcntl.F_SETPIPE_SZ, CHUNK)  # fewer wake-ups; the default is 64 KiB
    ours, theirs = (r, w) if mine == "read" else (w, r)
    thread = threading.Thread(target=work, args=(theirs,), daemon=True)
    thread.start()
    try:
        yield ours
    finally:
        os.close(ours)
        thread.join()


def _pump(fd: int, w: int, layer: Layer, head: bytes) -> None:
    out = _Output(w, layer)
    try:
        _decode(layer, _chunks(fd, layer, head), out)
        _write_all(w, out.held)  # the whole file was read and proven: the end may go on
        layer.finished = True
    except _Bad as bad:
        layer.problem = (bad.kind, f"compressed with {layer.compression}: {bad}")
        # without an offset of its own, the damage lies after the last whole member or
        # frame, which was proven: the stream is then not proven from its end on
        layer.trusted = layer.stream_bytes if bad.at is None else bad.at
    except BrokenPipeError:
        pass  # the scanner stopped reading: its verdict is made already
    except OSError as err:
        layer.problem = ("io", f"read error at compressed byte {layer.file_bytes}: {err.strerror}")
    except Exception as err:  # MemoryError, a library's own failure: about us
        # Whatever else stops the thread says nothing about the file: no verdict (exit 2),
        # and the scanner, which sees the stream stop short, must not call it damaged.
        layer.problem = ("unverified", f"compressed with {layer.compression}: {_unverified(err)}")
    finally:
        os.close(w)


def _unverified(err: BaseException) -> str:
    why = "not enough memory" if isinstance(err, MemoryError) else str(err) or type(err).__name__
    return f"not verified: {why}"


class _Output:
    """Decompressed bytes into the pipe as they come, all but the last byte (held back until
    the file is proven: see the module's docstring)."""

    def __init__(self, w: int, layer: Layer) -> None:
        self.w, self.layer, self.held = w, layer, b""

    def put(self, data: bytes | memoryview) -> None:
        if data:
            self.layer.stream_bytes += len(data)
            _write_all(self.w, self.held)
            _write_all(self.w, memoryview(data)[:-1])
            self.held = bytes(data[-1:])  # a copy: the library reuses its buffer


def read_stream(fd: int, at: int, length: int) -> bytes:
    """The stream's bytes [at, at + length) of the file at fd (read from its start: the fd's
    position moves), decompressed when it is compressed, as far as they come out: fewer
    where the file ends or its compressed layer fails.  Not proven (nothing is held back):
    for comparing with bytes that are, as `cold repair` does.  OSError for a plain file."""
    os.lseek(fd, 0, os.SEEK_SET)
    compression = detect_fd(fd)
    if compression is None:
        return os.pread(fd, length, at)
    sink = _Collect(at + length)
    layer = Layer(compression)
    with contextlib.suppress(_Bad, _Enough, OSError, MemoryError):
        _decode(layer, _growing(fd, layer), sink)
    return bytes(sink.got[at : at + length])


class _Enough(Exception):
    """read_stream() has the bytes it wants."""


class _Collect(_Output):
    def __init__(self, want: int) -> None:
        self.want, self.got = want, bytearray()

    def put(self, data: bytes | memoryview) -> None:
        self.got += data
        if len(self.got) >= self.want:
            raise _Enough


def _growing(fd: int, layer: Layer) -> Iterator[bytes]:
    """The file in pieces from 64 bytes doubling up to CHUNK: a library that fails on a
    piece gives nothing of it, so what lies before damage near the start comes out first."""
    size = 64
    while chunk := os.read(fd, size):
        layer.file_bytes += len(chunk)
        yield chunk
        size = min(size * 2, CHUNK)


def _write_all(w: int, data: bytes | memoryview) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(w, view) :]


def _chunks(fd: int, layer: Layer, head: bytes) -> Iterator[bytes]:
    if head:
        layer.file_bytes += len(head)
        yield head
    while chunk := os.read(fd, CHUNK):
        layer.file_bytes += len(chunk)
        yield chunk


def _decode(layer: Layer, chunks: Iterator[bytes], out: _Output) -> None:
    if layer.compression == "zstd":
        return _zstd(layer, chunks, out)
    return _members(layer, chunks, _MEMBER[layer.compression], out)


# -- gzip, xz, lz4: a decompressor object per member (stream, frame), one after the other ---


@dataclass(frozen=True)
class _Member:
    make: Callable[[], Any]  # a new decompressor for one member
    error: Callable[[], tuple[type[BaseException], ...]]  # what its damage raises
    tail: bool  # zlib: input not consumed is in unconsumed_tail (else kept inside)
    magic: bytes  # how each member begins
    padding: bool = False  # xz: zero bytes (a multiple of 4) may follow a stream
    skippable: bool = False  # lz4: skippable frames may come before, between and after


def _gzip() -> Any:
    return zlib.decompressobj(wbits=31)  # gzip header and CRC32/ISIZE trailer checked


def _xz() -> Any:
    import lzma

    return lzma.LZMADecompressor(format=lzma.FORMAT_XZ)


def _xz_errors() -> tuple[type[BaseException], ...]:
    import lzma

    return (lzma.LZMAError, EOFError)


def _lz4() -> Any:
    try:
        import lz4.frame
    except ImportError:
        raise _Bad("unsupported", "not verified (pip install lz4)") from None
    return lz4.frame.LZ4FrameDecompressor()


def _lz4_errors() -> tuple[type[BaseException], ...]:
    return (RuntimeError, EOFError)


def _bzip2() -> Any:
    return bz2.BZ2Decompressor()  # each block's CRC and the stream's combined CRC checked


def _bzip2_errors() -> tuple[type[BaseException], ...]:
    return (OSError, EOFError)  # OSError: "Invalid data stream"


_MEMBER = {
    "gzip": _Member(_gzip, lambda: (zlib.error,), tail=True, magic=MAGICS[1][0]),
    "xz": _Member(_xz, _xz_errors, tail=False, magic=MAGICS[2][0], padding=True),
    "lz4": _Member(_lz4, _lz4_errors, tail=False, magic=MAGICS[3][0], skippable=True),
    "bzip2": _Member(_bzip2, _bzip2_errors, tail=False, magic=MAGICS[5][0]),
}


def _members(layer: Layer, chunks: Iterator[bytes], kind: _Member, put: _Output) -> None:
    """Members one after the other (`cat a.gz b.gz`, `xz -T2`, several lz4 frames): each must
    end with its check, and nothing but another member may follow."""
    obj: Any = None
    start = (0, 0)  # (compressed, stream) offsets where the current member began
    zeros = 0  # xz stream padding seen since the last stream
    base = 0  # compressed offset of the chunk's first byte
    skip = _Skippable()
    for chunk in chunks:
        data = chunk
        while data or (obj is not None and not kind.tail and not obj.needs_input):
            if obj is None:
                if kind.padding:
                    stripped = data.lstrip(b"\0")
                    zeros += len(data) - len(stripped)
                    data = stripped
                    if not data:
                        break
                    if zeros % 4:
                        raise _Bad("damaged", _at(base + len(chunk) - len(data), "bad padding"))
                    zeros = 0
                if kind.skippable:
                    data = skip.past(data, base + len(chunk) - len(data))
                    if not data:
                        break
                start = (base + len(chunk) - len(data), layer.stream_bytes)
                _check_magic(data, kind.magic, start[0], UNITS[layer.compression])
                obj = kind.make()
            try:
                out = obj.decompress(data, CHUNK)
            except kind.error() as err:
                raise _damaged(err, start, UNITS[layer.compression]) from None
            put.put(out)
            if obj.eof:
                data, obj = obj.unused_data, None
            elif kind.tail:
                data = obj.unconsumed_tail
            else:
                data = b""
        base += len(chunk)
    if obj is not None:
        raise _truncated(base, start, UNITS[layer.compression])
    if skip.inside:
        raise _Bad("truncated", f"truncated: the file ends inside the skippable frame that "
                   f"starts at compressed byte {skip.start}")  # fmt: skip
    if zeros % 4:
        raise _Bad("damaged", _at(base - zeros, "bad padding after the last stream"))


class _Skippable:
    """lz4's skippable frames (magic 0x184D2A5?, a 4-byte size, that many bytes of anything),
    passed over across chunks.  Their first byte (0x5?) tells them from a frame (0x04)."""

    def __init__(self) -> None:
        self.head = b""  # the 8-byte header being gathered
        self.left = 0  # payload bytes still to pass over
        self.start = 0  # compressed offset of the frame

    @property
    def inside(self) -> bool:
        return bool(self.head or self.left)

    def past(self, data: bytes, offset: int) -> bytes:
        """data (at compressed offset) less the skippable frames at its start."""
        while data:
            if self.left:
                step = min(self.left, len(data))
                self.left -= step
                data, offset = data[step:], offset + step
                continue
            if not self.head:
                if data[0] & 0xF0 != SKIPPABLE & 0xFF:
                    return data
                self.start = offset
            step = 8 - len(self.head)
            self.head += data[:step]
            data, offset = data[step:], offset + step
            if len(self.head) < 8:
                break
            if int.from_bytes(self.head[:4], "little") & SKIPPABLE_MASK != SKIPPABLE:
                raise _Bad("damaged", _at(self.start, "not a frame"))
            self.left, self.head = int.from_bytes(self.head[4:], "little"), b""
        return b""


def _check_magic(data: bytes, magic: bytes, offset: int, unit: str) -> None:
    """What follows a member is another one, or the file is damaged (or, for lz4's legacy
    format, not read).  Checked on what the chunk holds of the magic: enough in practice."""
    if data.startswith(MAGICS[4][0]):
        raise _Bad("unsupported", "not verified (the lz4 legacy format, lz4 -l, is not read)")
    head = data[: len(magic)]
    if not magic.startswith(head):
        what = f"not a {unit} (data after the last one?)" if offset else f"not a {unit}"
        raise _Bad("damaged", _at(offset, what))


def _at(offset: int, what: str) -> str:
    return f"{what} at compressed byte {offset}"


UNITS = {"zstd": "frame", "gzip": "member", "xz": "stream", "lz4": "frame", "bzip2": "stream"}


def _ours(err: BaseException) -> bool:
    """Whether a decompressor's failure is about this machine's memory, not the data: the
    libraries say so only in words ("Allocation error : not enough memory", zstd's "Frame
    requires too much memory for decoding", lz4's "ERROR_allocation_failed")."""
    text = str(err).lower()
    return isinstance(err, MemoryError) or "memory" in text or "alloc" in text


def _damaged(err: BaseException, start: tuple[int, int], unit: str) -> _Bad:
    """(compressed, stream) offsets where the unit began: its check covers it all; or, for a
    failure that is about our resources (_ours), no verdict."""
    if _ours(err):
        return _Bad("unverified", _unverified(err))
    message = (
        f"damaged ({err}) in the {unit} that starts at compressed byte {start[0]}: the "
        f"stream is not proven from its byte {start[1]}"
    )
    return _Bad("damaged", message, start[1])


def _truncated(size: int, start: tuple[int, int], unit: str) -> _Bad:
    message = (
        f"truncated: the file ends ({size} bytes) inside the {unit} that starts at compressed "
        f"byte {start[0]}: the stream is not proven from its byte {start[1]}"
    )
    return _Bad("truncated", message, start[1])


# -- zstd: the frame structure walked here, the data decompressed by the library -----------


MAX_WINDOW = 1 << 31
"""The largest window a zstd frame may ask for (the format's limit, `zstd --long=31`); the
library refuses more than 128 MiB unless told.  A frame's window is allocated whole while it
is decompressed (virtual memory; what is touched grows with the stream, up to it)."""


def _zstd(layer: Layer, chunks: Iterator[bytes], out: _Output) -> None:
    """The library's stream writer decompresses across frames with bounded output but does
    not say whether the file ended inside a frame: _Frames walks the frame and block headers
    (cheap: a few per 128 KiB) to know where frames begin and end, and feeds the library one
    frame at a time."""
    import zstandard

    class _Sink:
        def write(self, data: bytes) -> int:
            out.put(data)
            return len(data)

    frames = _Frames(lambda: layer.stream_bytes)
    writer: Any = None
    start = (0, 0)
    for chunk in chunks:
        for piece, new_frame in frames.split(chunk):
            if new_frame:
                start = (frames.frame_start, layer.stream_bytes)
                sink = cast(IO[bytes], _Sink())  # only its write() is called
                writer = zstandard.ZstdDecompressor(max_window_size=MAX_WINDOW).stream_writer(
                    sink, write_size=CHUNK, write_return_read=True, closefd=False
                )
            try:
                writer.write(piece)  # its output goes to the pipe CHUNK bytes at a time
            except zstandard.ZstdError as err:
                raise _damaged(err, start, UNITS[layer.compression]) from None
    if frames.inside:
        raise _truncated(frames.offset, start, "frame")


def _dictionary(dict_id: int) -> str:
    return f"not verified (a frame needs dictionary {dict_id}, which is not at hand)"


class _Frames:
    """Where zstd frames (and skippable frames) begin and end, from their headers alone.

    Frame: magic, header descriptor, [window], [dictionary id], [content size], blocks (a
    3-byte header each: last flag, type, size; an RLE block holds 1 byte), [checksum]."""

    def __init__(self, stream_at: Callable[[], int]) -> None:
        self.offset = 0  # compressed bytes walked
        self.frame_start = 0
        self.stream_at = stream_at  # stream bytes out so far
        self.stream_start = 0  # ... when the frame began: damage in it is not proven from there
        self.dict_id = 0
        self.need = b""  # a header being gathered across chunks
        self.want = 4  # bytes of header still needed (0: skipping)
        self.state = "magic"
        self.skip = 0  # content bytes to pass over
        self.checksum = False
        self.inside = False
        self._dict_at = self._dict_len = 0

    def split(self, chunk: bytes) -> Iterator[tuple[bytes, bool]]:
        """chunk cut at frame starts: (piece, whether a frame starts with it)."""
        cut, first = 0, False
        pos = 0
        while pos < len(chunk):
            if self.skip:
                step = min(self.skip, len(chunk) - pos)
                self.skip -= step
                pos += step
                self.offset += step
                if not self.skip and self.state in ("skippable", "end"):
                    self._frame_done()
                continue
            if not self.inside and not self.need:
                if pos > cut:
                    yield chunk[cut:pos], first
                cut, first = pos, True
                self.frame_start = self.offset
                self.stream_start = self.stream_at()  # the previous frame is all out
                self.inside = True
            take = min(self.want - len(self.need), len(chunk) - pos)
            self.need += chunk[pos : pos + take]
            pos += take
            self.offset += take
            if len(self.need) == self.want:
                self._header(self.need)
        if pos > cut:
            yield chunk[cut:pos], first

    def _frame_done(self) -> None:
        self.state, self.want, self.need, self.inside = "magic", 4, b"", False

    def _header(self, head: bytes) -> None:
        """A complete header piece: decide what comes next."""
        self.need = b""
        if self.state == "magic":
            magic = int.from_bytes(head, "little")
            if magic & SKIPPABLE_MASK == SKIPPABLE:
                self.state, self.want = "skip-size", 4
            elif head == MAGICS[0][0]:
                self.state, self.want = "descriptor", 1
            else:
                at = self.offset - 4
                what = "not a zstd frame (data after the last frame?)"
                raise _Bad("damaged", _at(at, what), self.stream_start)
        elif self.state == "skip-size":
            self.state, self.skip = "skippable", int.from_bytes(head, "little")
            if not self.skip:
                self._frame_done()
        elif self.state == "descriptor":
            self._descriptor(head[0])
        elif self.state == "frame-header":
            ids = head[self._dict_at : self._dict_at + self._dict_len]
            self.dict_id = int.from_bytes(ids, "little")
            if self.dict_id:
                # here, as the header is parsed, not where the frame's first piece is handed
                # on: a header cut by a chunk's end is parsed only in the next chunk
                raise _Bad("unsupported", _dictionary(self.dict_id))
            self.state, self.want = "block", 3
        elif self.state == "block":
            self._block(int.from_bytes(head, "little"))
        elif self.state == "checksum":
            self._frame_done()

    def _descriptor(self, fhd: int) -> None:
        if fhd & 0x08:
            what = "reserved bit set in a zstd frame header"
            raise _Bad("damaged", _at(self.offset - 1, what), self.stream_start)
        single = bool(fhd & 0x20)
        self.checksum = bool(fhd & 0x04)
        self._dict_len = (0, 1, 2, 4)[fhd & 0x03]
        fcs = (1 if single else 0, 2, 4, 8)[fhd >> 6]
        self._dict_at = 0 if single else 1
        self.state, self.want = "frame-header", (0 if single else 1) + self._dict_len + fcs
        if not self.want:
            self.dict_id = 0
            self.state, self.want = "block", 3

    def _block(self, header: int) -> None:
        last, btype, size = header & 1, (header >> 1) & 3, header >> 3
        if btype == 3:
            what = "reserved zstd block type"
            raise _Bad("damaged", _at(self.offset - 3, what), self.stream_start)
        self.skip = 1 if btype == 1 else size
        if last:
            self.state, self.want = ("checksum", 4) if self.checksum else ("end", 4)
            if self.state == "end" and not self.skip:
                self._frame_done()
        else:
            self.state, self.want = "block", 3


# -- writing: `cold send --compress` ---------------------------------------------------------

SUFFIXES = {"zstd": ".zst", "gzip": ".gz", "xz": ".xz"}
LEVELS = {"zstd": range(1, 23), "gzip": range(1, 10), "xz": range(0, 10)}


def parse_compress(text: str) -> tuple[str, int | None]:
    """`zstd`, `zstd:19`, `gzip:9`, `xz:6` -> (compression, level or None for its default).
    Raises ValueError with a line for the user."""
    name, _, level = text.partition(":")
    if name not in LEVELS:
        raise ValueError(f"--compress {text!r}: one of {', '.join(LEVELS)} (optionally :LEVEL)")
    if not level:
        return name, None
    allowed = LEVELS[name]
    if not level.isdigit() or int(level) not in allowed:
        raise ValueError(f"--compress {text!r}: {name} levels are {allowed[0]}..{allowed[-1]}")
    return name, int(level)


@dataclass
class Packed:
    """What the compressing thread wrote, and the error that stopped it, if any."""

    compression: str
    file_bytes: int = 0
    error: str | None = None


@contextlib.contextmanager
def compressing(out: int, compression: str, level: int | None) -> Iterator[tuple[int, Packed]]:
    """(the write end of a pipe, Packed): what is written into the pipe is compressed into
    the fd out by a thread.  Leaving closes the pipe and waits until the compressed file is
    complete (its last frame ended).  A write error stops the thread, which closes the pipe's
    read end: whoever writes into it gets EPIPE and stops too (never blocks)."""
    packed = Packed(compression)
    with _pipe_to_thread(lambda r: _pack(r, out, packed, level), mine="write") as w:
        yield w, packed


def _pack(r: int, out: int, packed: Packed, level: int | None) -> None:
    try:
        obj = _compressor(packed.compression, level)
        while data := os.read(r, CHUNK):
            packed.file_bytes += _write_count(out, obj.compress(data))
        packed.file_bytes += _write_count(out, obj.flush())
    except OSError as err:
        packed.error = err.strerror or str(err)
    finally:
        os.close(r)


def _write_count(out: int, data: bytes) -> int:
    _write_all(out, data)
    return len(data)


def _compressor(compression: str, level: int | None) -> Any:
    """An object with compress(data) and flush() (which ends the file)."""
    if compression == "zstd":
        import zstandard

        # the content checksum is what lets a reader prove every frame
        options = zstandard.ZstdCompressor(level=level or 3, write_checksum=True)
        return options.compressobj()
    if compression == "gzip":
        return zlib.compressobj(6 if level is None else level, zlib.DEFLATED, 31)
    import lzma

    return lzma.LZMACompressor(lzma.FORMAT_XZ, lzma.CHECK_CRC64, 6 if level is None else level)
