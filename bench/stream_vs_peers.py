"""Throughput of `zverify stream verify` against `cat FILE > /dev/null` and `zstream dump`.

Run by hand (never collected by the test suite):

    python bench/stream_vs_peers.py [--size-gib 2] [--stream FILE] [--repeat 3]

Without --stream, a multi-GiB stream of valid records (correct per-record
checksums, 128 KiB WRITE payloads) is synthesized into a temporary file and
the output says so.  Every tool reads the same file in the same run after a
warm-up read (hot page cache); results are printed as seconds, GB/s and the
ratio to `cat`.  Peak RSS of the verifier is measured at two stream sizes to
show that memory does not grow with the stream.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# Run from a checkout: measure this tree's zverify, not an installed copy.
sys.path.insert(0, str(Path(__file__).resolve().parent))
from installed import installed_zverify

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from zverify import _zvcore  # noqa: E402

DRR = 312
MAGIC = 0x2F5BACBAC
FEATURES = (1 << 2) | (1 << 16) | (1 << 17) | (1 << 19)  # SA_SPILL, EMBED_DATA, LZ4, LARGE_BLOCKS


class _Writer:
    """Appends records with the running fletcher-4 the kernel would write."""

    def __init__(self, out: object) -> None:
        self.out = out
        self.state = (0, 0, 0, 0)

    def record(self, head: bytes, payload: bytes = b"", begin: bool = False) -> None:
        head = head.ljust(280 if not begin else DRR, b"\0")
        if begin:
            self.state = _zvcore.fletcher4(head)
            self.out.write(head)  # type: ignore[attr-defined]
        else:
            self.state = _zvcore.fletcher4(head, state=self.state)
            trailer = struct.pack("<4Q", *self.state)
            self.state = _zvcore.fletcher4(trailer, state=self.state)
            self.out.write(head + trailer)  # type: ignore[attr-defined]
        if payload:
            self.state = _zvcore.fletcher4(payload, state=self.state)
            self.out.write(payload)  # type: ignore[attr-defined]


def synthesize(path: Path, size: int, block: int = 128 << 10) -> None:
    """Write a valid full stream of about `size` bytes: one file object of `block`-sized WRITEs."""
    toguid = 0x1234_5678_9ABC_DEF0
    payload = os.urandom(block)
    with open(path, "wb", buffering=8 << 20) as out:
        w = _Writer(out)
        name = b"bench/ds@synthetic"
        begin = (
            struct.pack(
                "<IIQQQIIQQ", 0, 0, MAGIC, 1 | (FEATURES << 2), 1_700_000_000, 2, 0xC, toguid, 0
            )
            + name
        )
        w.record(begin, begin=True)
        w.record(struct.pack("<IIQIIIIBBBBIQ", 1, 0, 2, 19, 44, block, 0, 7, 15, 1, 0, 0, toguid))
        nblocks = max(1, size // (block + DRR))
        for i in range(nblocks):
            head = struct.pack("<IIQIIQQQBBB5x", 3, 0, 2, 19, 0, i * block, block, toguid, 7, 0, 0)
            w.record(head, payload)
        end_cksum = w.state
        w.record(struct.pack("<II4QQ", 5, 0, *end_cksum, toguid))


def _best(argv: list[str], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=REPO)
        best = min(best, time.perf_counter() - start)
    return best


def _best_in_process(path: Path, repeat: int) -> float:
    """The library call alone: the CLI's interpreter start-up and imports excluded."""
    from zverify.sendstream.validate import verify_stream

    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        assert verify_stream(path).valid
        best = min(best, time.perf_counter() - start)
    return best


def _peak_rss_kib(argv: list[str]) -> int | None:
    gnu_time = shutil.which("time") or ("/usr/bin/time" if Path("/usr/bin/time").exists() else None)
    if not gnu_time:
        return None
    out = subprocess.run([gnu_time, "-f", "%M", *argv], capture_output=True, text=True, cwd=REPO)
    try:
        return int(out.stderr.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None


ZVERIFY = Path("zverify")  # set in main()


def _tools(path: Path) -> dict[str, list[str]]:
    tools = {
        "cat > /dev/null": ["sh", "-c", 'cat "$0" > /dev/null', str(path)],
        # the installed console script (bench/installed.py): the whole command, as users run it
        "zverify stream verify": [str(ZVERIFY), "stream", "verify", "-q", str(path)],
    }
    zstream = shutil.which("zstream") or (
        "/usr/sbin/zstream" if Path("/usr/sbin/zstream").exists() else None
    )
    if zstream:
        tools["zstream dump"] = [zstream, "dump", str(path)]
    return tools


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--stream", type=Path, help="an existing stream file (default: synthesize)")
    ap.add_argument("--size-gib", type=float, default=2.0)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    global ZVERIFY
    ZVERIFY = installed_zverify(Path("/var/tmp/zverify-bench"))
    tmp = None
    path = args.stream
    if path is None:
        tmp = tempfile.TemporaryDirectory(prefix="zv-bench-")
        path = Path(tmp.name) / "synthetic.zstream"
        print(f"synthesizing a {args.size_gib:g} GiB stream (valid records, 128 KiB WRITEs) ...")
        synthesize(path, int(args.size_gib * (1 << 30)))
        small = Path(tmp.name) / "small.zstream"
        synthesize(small, 256 << 20)
    size = path.stat().st_size
    print(f"stream: {path} ({size / 1e9:.2f} GB){' [synthesized]' if tmp else ''}")
    subprocess.run(["cat", str(path)], stdout=subprocess.DEVNULL, check=True)  # warm the cache
    results = {name: _best(argv, args.repeat) for name, argv in _tools(path).items()}
    results["verify_stream() in-process"] = _best_in_process(path, args.repeat)
    base = results["cat > /dev/null"]
    print(f"{'tool':<24}{'best s':>9}{'GB/s':>8}{'vs cat':>9}   (best of {args.repeat}, hot cache)")
    for name, secs in results.items():
        print(f"{name:<24}{secs:>9.3f}{size / secs / 1e9:>8.2f}{base / secs:>8.2f}x")
    verify = _tools(path)["zverify stream verify"]
    big_rss = _peak_rss_kib(verify)
    if tmp:
        small_rss = _peak_rss_kib([*verify[:-1], str(small)])
        print(
            f"peak RSS of verify: {small_rss} KiB at 0.27 GB, {big_rss} KiB at {size / 1e9:.2f} GB"
        )
    else:
        print(f"peak RSS of verify: {big_rss} KiB")
    print(f"(this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss} KiB)")
    if tmp:
        tmp.cleanup()


if __name__ == "__main__":
    main()
