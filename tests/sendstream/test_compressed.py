"""Compressed send streams (`zfs send | zstd > f.zst`, gzip, xz, lz4) through the installed
`zverify stream verify`: recognised by magic, validated through streaming decompression,
damage in the compressed layer found even when what came out is a whole valid stream.

The files are made by the real zstd/gzip/xz/lz4 programs from real `zfs send` fixtures
(tests/data/streams), as users make them."""

import json
import os
import random
import resource
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.cli.console import zverify
from zverify.sendstream.compressed import CHUNK, detect
from zverify.sendstream.validate import verify_stream

STREAMS = Path(__file__).parents[1] / "data" / "streams"
FULL = STREAMS / "full_fs_s1.zstream"
SCHEMA_DIR = Path(__file__).parents[2] / "zverify" / "schemas"
SCHEMA = json.loads((SCHEMA_DIR / "stream-verify.schema.json").read_text())
TOOLS = {"zstd": ["zstd", "-q", "-c"], "gzip": ["gzip", "-c"], "xz": ["xz", "-c"]}
TOOLS["lz4"] = ["lz4", "-q", "-c"]
TOOLS["bzip2"] = ["bzip2", "-c"]  # how OpenZFS keeps its own test streams (recv_dedup)
SUFFIX = {"zstd": ".zst", "gzip": ".gz", "xz": ".xz", "lz4": ".lz4", "bzip2": ".bz2"}


def need(tool: str) -> None:
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} is not installed: the file cannot be made as users make it")


def compress(data: bytes, how: str, *extra: str) -> bytes:
    need(how)
    return subprocess.run([*TOOLS[how], *extra], input=data, capture_output=True, check=True).stdout


def verify(path: Path) -> tuple[int, dict[str, Any]]:
    done = zverify("stream", "verify", "--json", str(path))
    doc = json.loads(done.stdout)
    jsonschema.validate(doc, SCHEMA)
    (one,) = doc["files"]
    return done.returncode, one


def memory_limit(mib: int) -> Callable[[], None]:
    """A preexec_fn: the child's address space capped (ulimit -v), as on a small machine."""
    return lambda: resource.setrlimit(resource.RLIMIT_AS, (mib << 20, mib << 20))


def limited(path: Path, mib: int) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    done = zverify("stream", "verify", "--json", str(path), preexec_fn=memory_limit(mib))
    assert "Traceback" not in done.stderr, done.stderr
    doc = json.loads(done.stdout)
    jsonschema.validate(doc, SCHEMA)
    return done, doc["files"][0]


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("how", sorted(TOOLS))
def test_each_compression_verifies_clean(tmp_path: Path, how: str) -> None:
    plain = FULL.read_bytes()
    packed = compress(plain, how)
    # no suffix: the magic decides, never the name
    code, doc = verify(write(tmp_path, "stream", packed))
    assert code == 0, doc
    assert doc["compression"] == how
    assert (doc["bytes"], doc["file_bytes"]) == (len(plain), len(packed))


@pytest.mark.parametrize("how", sorted(TOOLS))
def test_several_frames_or_members_are_one_stream(tmp_path: Path, how: str) -> None:
    """`cat a.zst b.zst` (also what `zstd -T2`, pigz and `xz -T2` write)."""
    plain = FULL.read_bytes()
    cut = len(plain) // 3
    packed = compress(plain[:cut], how) + compress(plain[cut:], how)
    code, doc = verify(write(tmp_path, "s" + SUFFIX[how], packed))
    assert code == 0, doc
    assert doc["bytes"] == len(plain)


@pytest.mark.parametrize("how", sorted(TOOLS))
def test_a_flipped_byte_in_the_compressed_data_is_found(tmp_path: Path, how: str) -> None:
    packed = bytearray(compress(FULL.read_bytes(), how))
    at = len(packed) // 2
    packed[at] ^= 0x40
    path = write(tmp_path, "s" + SUFFIX[how], bytes(packed))
    code, doc = verify(path)
    assert code == 1, doc
    assert doc["problems"][0]["code"] in ("compression", "checksum"), doc
    text = zverify("stream", "verify", "-q", str(path))
    assert text.returncode == 1
    assert path.name in text.stdout


@pytest.mark.parametrize("how", sorted(TOOLS))
def test_truncation_anywhere_is_never_ok(tmp_path: Path, how: str) -> None:
    packed = compress(FULL.read_bytes(), how)
    rng = random.Random(29)
    cuts = {1, 2, 3, 4, len(packed) - 1, len(packed) - 4, len(packed) - 8}
    cuts |= {rng.randrange(1, len(packed)) for _ in range(12)}
    for cut in sorted(cuts):
        code, doc = verify(write(tmp_path, f"cut{cut}", packed[:cut]))
        assert code in (1, 2), (cut, doc)
        assert not doc["valid"]


def test_a_cut_checksum_fails_though_the_stream_came_out_whole(tmp_path: Path) -> None:
    """zstd's content checksum (the last 4 bytes) cut off: every stream byte decompresses,
    and yet the file is not intact."""
    packed = compress(FULL.read_bytes(), "zstd")
    code, doc = verify(write(tmp_path, "s.zst", packed[:-4]))
    assert code == 1
    first = doc["problems"][0]
    assert first["code"] == "truncated"
    assert "zstd" in first["message"] and "compressed byte" in first["message"]


def test_a_wrong_content_checksum_fails(tmp_path: Path) -> None:
    packed = bytearray(compress(FULL.read_bytes(), "zstd"))
    packed[-2] ^= 1
    code, doc = verify(write(tmp_path, "s.zst", bytes(packed)))
    assert code == 1
    assert "checksum" in doc["problems"][0]["message"]


def test_a_wrong_gzip_crc_fails(tmp_path: Path) -> None:
    packed = bytearray(compress(FULL.read_bytes(), "gzip"))
    packed[-6] ^= 1  # CRC32 is the trailer's first 4 bytes, ISIZE the last 4
    code, doc = verify(write(tmp_path, "s.gz", bytes(packed)))
    assert code == 1
    assert "incorrect data check" in doc["problems"][0]["message"]


@pytest.mark.parametrize("how", sorted(TOOLS))
def test_garbage_after_the_last_frame_fails(tmp_path: Path, how: str) -> None:
    packed = compress(FULL.read_bytes(), how) + b"garbage after the end"
    code, doc = verify(write(tmp_path, "s" + SUFFIX[how], packed))
    assert code == 1, doc
    assert how in doc["problems"][0]["message"]


@pytest.mark.parametrize("at", [0, CHUNK - 2, CHUNK - 5])
def test_a_zstd_dictionary_frame_is_not_verified(tmp_path: Path, at: int) -> None:
    """Wherever the frame starts: at CHUNK - 2 its magic, at CHUNK - 5 the rest of its
    header is read only with the next chunk of the file (a skippable frame fills the gap)."""
    import zstandard

    samples = [bytes([i % 7]) * 100 + bytes(range(i % 50)) for i in range(200)]
    dictionary = zstandard.train_dictionary(1024, samples)
    packed = zstandard.ZstdCompressor(dict_data=dictionary).compress(FULL.read_bytes())
    pad = b"\x50\x2a\x4d\x18" + (at - 8).to_bytes(4, "little") + bytes(at - 8) if at else b""
    code, doc = verify(write(tmp_path, "s.zst", pad + packed))
    assert code == 2, doc
    assert "compressed with zstd: not verified" in doc["problems"][0]["message"]


def test_the_lz4_legacy_format_is_not_verified(tmp_path: Path) -> None:
    code, doc = verify(write(tmp_path, "s.lz4", compress(FULL.read_bytes(), "lz4", "-l")))
    assert code == 2
    assert "compressed with lz4: not verified" in doc["problems"][0]["message"]


def test_lz4_without_its_binding_is_not_verified(tmp_path: Path) -> None:
    """A stand-in package named lz4 that fails to import, first on PYTHONPATH: what a
    machine without python-lz4 sees (exit 2, never damaged)."""
    path = write(tmp_path, "s.lz4", compress(FULL.read_bytes(), "lz4"))
    shim = tmp_path / "shim" / "lz4"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text("raise ImportError('no lz4 here')\n")
    env = {**os.environ, "PYTHONPATH": str(shim.parent)}
    done = zverify("stream", "verify", "-q", str(path), env=env)
    assert done.returncode == 2, done.stdout
    assert "pip install lz4" in done.stdout


def test_magic_decides() -> None:
    assert detect(FULL.read_bytes()[:6]) is None
    assert detect(b"\x28\xb5\x2f\xfd\x00\x00") == "zstd"
    assert detect(b"\x5a\x2a\x4d\x18\x00\x00") == "zstd"  # a skippable frame
    assert detect(b"\x1f\x8b\x08\x00") == "gzip"
    assert detect(b"\xfd7zXZ\x00") == "xz"
    assert detect(b"\x04\x22\x4d\x18") == "lz4"


def test_the_relay_never_passes_on_a_stream_whose_checksum_fails(tmp_path: Path) -> None:
    """What `cold restore` feeds `zfs receive`: the stream bytes only as far as proven.  The
    frame's checksum fails after every stream byte came out, and still the END record (and
    the last record it verifies) never reaches the pipe: receive cannot finish."""
    plain = FULL.read_bytes()
    packed = bytearray(compress(plain, "zstd"))
    packed[-1] ^= 1
    path = write(tmp_path, "s.zst", bytes(packed))
    got, report = _relay(path)
    assert not report.valid
    assert report.relayed == len(got) < len(plain) - 312
    assert plain.startswith(got)
    # and the same file intact goes through whole
    path.write_bytes(compress(plain, "zstd"))
    got, report = _relay(path)
    assert report.valid and got == plain


def _relay(path: Path) -> tuple[bytes, Any]:
    r, w = os.pipe()
    out = tmp = path.with_suffix(".relayed")
    with open(tmp, "wb") as sink:
        import threading

        def drain() -> None:
            while chunk := os.read(r, 1 << 16):
                sink.write(chunk)

        t = threading.Thread(target=drain)
        t.start()
        try:
            report = verify_stream(path, relay_to=w)
        finally:
            os.close(w)
            t.join()
            os.close(r)
    return out.read_bytes(), report


def test_stream_info_names_the_compression(tmp_path: Path) -> None:
    path = write(tmp_path, "s.xz", compress(FULL.read_bytes(), "xz"))
    done = zverify("stream", "info", "--json", str(path))
    assert done.returncode == 0, done.stdout
    doc = json.loads(done.stdout)
    info = json.loads((SCHEMA_DIR / "stream-info.schema.json").read_text())
    jsonschema.validate(doc, info)
    assert (doc["compression"], doc["file_bytes"]) == ("xz", path.stat().st_size)
    assert doc["bytes"] == FULL.stat().st_size


def test_xz_stream_padding_is_allowed_only_in_fours(tmp_path: Path) -> None:
    """xz lets zero bytes, a multiple of 4, follow a stream (`xz -t` accepts them)."""
    packed = compress(FULL.read_bytes(), "xz")
    assert verify(write(tmp_path, "pad4.xz", packed + bytes(8)))[0] == 0
    code, doc = verify(write(tmp_path, "pad3.xz", packed + bytes(3)))
    assert code == 1 and "padding" in doc["problems"][0]["message"]


def test_zstd_skippable_frames_are_passed_over(tmp_path: Path) -> None:
    """Skippable frames (metadata some tools add, e.g. seekable-zstd's index) carry no stream
    bytes; the zstd program skips them too."""
    skippable = b"\x5e\x2a\x4d\x18" + (5).to_bytes(4, "little") + b"index"
    packed = skippable + compress(FULL.read_bytes(), "zstd") + skippable
    code, doc = verify(write(tmp_path, "s.zst", packed))
    assert code == 0, doc
    assert doc["bytes"] == FULL.stat().st_size


def test_no_memory_for_the_decompressor_is_no_verdict(tmp_path: Path) -> None:
    """An xz file made with a 1.5 GiB dictionary needs that much to decompress: with 1000 MiB
    of address space the library cannot allocate it.  The file is intact: exit 2, not
    verified, never damaged (and no traceback from the decompressing thread)."""
    path = write(tmp_path, "big-dict.xz", compress(FULL.read_bytes(), "xz", "--lzma2=dict=1536MiB"))
    assert verify(path)[0] == 0  # the dictionary is allocated, only a little of it touched
    done, doc = limited(path, 1000)
    assert done.returncode == 2, doc
    assert not doc["readable"]
    assert doc["problems"][0]["message"].startswith("compressed with xz: not verified"), doc


def test_zstd_long_windows_up_to_the_format_limit_verify(tmp_path: Path) -> None:
    """`zfs send | zstd --long=31`: a 2 GiB window, which the library refuses by default;
    with less address space than that it is no verdict, never damaged."""
    for log in (28, 31):
        path = write(
            tmp_path, f"long{log}.zst", compress(FULL.read_bytes(), "zstd", f"--long={log}")
        )
        code, doc = verify(path)
        assert code == 0, doc
        assert doc["bytes"] == FULL.stat().st_size
    done, doc = limited(path, 1500)
    assert done.returncode == 2, doc
    message = doc["problems"][0]["message"]
    assert message.startswith("compressed with zstd: not verified"), message
    assert doc["problems"][0]["code"] == "unverified"


def _skippable(size: int) -> bytes:
    return b"\x5e\x2a\x4d\x18" + size.to_bytes(4, "little") + b"m" * size


def test_lz4_skippable_frames_are_passed_over(tmp_path: Path) -> None:
    """lz4 shares zstd's skippable frames: before the first frame (the first real frame,
    not the skippable one, says lz4), between frames and after the last; `lz4 -t` accepts
    them.  A file cut inside one is truncated."""
    plain = FULL.read_bytes()
    packed = _skippable(5) + compress(plain[:1000], "lz4") + _skippable(3) + _skippable(0)
    packed += compress(plain[1000:], "lz4") + _skippable(7)
    path = write(tmp_path, "s.lz4", packed)
    assert subprocess.run(["lz4", "-t", "-q", str(path)]).returncode == 0
    code, doc = verify(path)
    assert code == 0, doc
    assert (doc["compression"], doc["bytes"]) == ("lz4", len(plain))
    code, doc = verify(write(tmp_path, "cut.lz4", packed[:-3]))
    assert code == 1, doc
    assert doc["problems"][0]["code"] == "truncated"
    assert "skippable frame" in doc["problems"][0]["message"]


def test_damage_after_the_whole_stream_is_placed_at_its_end(tmp_path: Path) -> None:
    """A damaged empty frame after a whole one: every stream byte was proven by its frame,
    so the problem's offset and its message both name the stream's end (not the byte held
    back from the scanner until the file is proven)."""
    plain = FULL.read_bytes()
    empty = bytearray(compress(b"", "zstd"))
    empty[-1] ^= 1  # its content checksum
    code, doc = verify(write(tmp_path, "s.zst", compress(plain, "zstd") + bytes(empty)))
    assert code == 1, doc
    first = doc["problems"][0]
    assert first["offset"] == len(plain), first
    assert first["message"].endswith(f"the stream is not proven from its byte {len(plain)}")
